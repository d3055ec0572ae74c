/**
 * What actors publish for the queue actors: a `Delivery`, sent once the change
 * it reports is durable, to the shards of its recipients. Message deliveries
 * carry the stored message and the names it is formatted with (resolved at
 * send time, so a rename shows in later events); each queue formats it for
 * its own options. Other deliveries carry the client event itself.
 */
import { z } from 'zod';
import { StoredMessage } from '../../storage/tables.ts';
import { userPlacement } from '../subjects.ts';
import { ClientEventBody } from './schema.ts';

const Id = z.number().int();

/** The names a message is formatted with: of its sender, its participants and its channel. */
export const Directory = z
  .object({
    realmStr: z.string(),
    users: z.record(z.string(), z.object({ email: z.string(), full_name: z.string() }).strict()),
    channels: z.record(z.string(), z.string()),
  })
  .strict();
export type Directory = z.infer<typeof Directory>;

export const Delivery = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('message'),
      realmId: Id,
      /** The recipients (who get the message with their flags). */
      userIds: z.array(Id),
      /** A public-channel message: also for queues registered with all_public_streams. */
      allPublic: z.boolean(),
      message: StoredMessage,
      names: Directory,
      localEcho: z.object({ senderId: Id, queueId: z.string(), localId: z.string() }).strict().nullable(),
    })
    .strict(),
  z.object({ kind: z.literal('event'), realmId: Id, userIds: z.array(Id), event: ClientEventBody }).strict(),
  /** An event whose form depends on a client capability: queues that declared it get `event`, the others `otherwise` (or nothing). */
  z
    .object({
      kind: z.literal('capability'),
      realmId: Id,
      userIds: z.array(Id),
      capability: z.enum(['include_deactivated_groups']),
      event: ClientEventBody,
      otherwise: ClientEventBody.nullable(),
    })
    .strict(),
]);
export type Delivery = z.infer<typeof Delivery>;

/** An event for a list of users. */
export const toUsers = (realmId: number, userIds: number[], event: ClientEventBody): Delivery => ({ kind: 'event', realmId, userIds, event });

/** An event for a list of users, in one form for queues with `capability` and another (or none) for the rest. */
export const withCapability = (realmId: number, userIds: number[], capability: 'include_deactivated_groups', event: ClientEventBody, otherwise: ClientEventBody | null): Delivery => ({
  kind: 'capability',
  realmId,
  userIds,
  capability,
  event,
  otherwise,
});

/** The placement keys of a delivery's recipients (where their queues live). */
export function deliveryPlacements(d: Delivery): string[] {
  return d.userIds.map((id) => userPlacement(d.realmId, id));
}
