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
    /** `avatar_url`: only for a user whose avatar this server makes (a Jdenticon), given to every client. */
    users: z.record(z.string(), z.object({ email: z.string(), full_name: z.string(), avatar_url: z.string().optional() }).strict()),
    channels: z.record(z.string(), z.string()),
    /** The organization's message_edit_history_visibility_policy (FL 358): what of `edit_history` is shown. */
    editHistory: z.enum(['all', 'moves', 'none']).optional(),
  })
  .strict();
export type Directory = z.infer<typeof Directory>;

/**
 * Set by the publishing node in a cluster, unique per delivery: a shard's new
 * owner skips those its previous owner already applied to the queues it
 * handed over (`actors/runtime/handoff.ts`). Absent in process.
 */
const DeliveryId = z.string().optional();

export const Delivery = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('message'),
      realmId: Id,
      /**
       * A direct message's recipients (who get it with their flags). Null for a
       * channel message: it goes once to every node with queues of the realm,
       * and each queue shard finds the channel's subscribers among its own
       * queues (`actors/queue/subscribers.ts`), so its sender's realm never
       * touches the list.
       */
      userIds: z.array(Id).nullable(),
      /** A public-channel message: also for queues registered with all_public_streams. */
      allPublic: z.boolean(),
      message: StoredMessage,
      names: Directory,
      /**
       * Recipients who may not see the sender (a restricted guest, a sender not
       * subscribed to the channel): they get it from "Unknown user" (Zulip's
       * `user_ids_without_access_to_sender`).
       */
      hiddenSenderFor: z.array(Id).optional(),
      localEcho: z.object({ senderId: Id, queueId: z.string(), localId: z.string() }).strict().nullable(),
      id: DeliveryId,
    })
    .strict(),
  z
    .object({
      kind: z.literal('event'),
      realmId: Id,
      userIds: z.array(Id),
      event: ClientEventBody,
      /** Only for queues whose client declared this capability with this value (absent: every queue). */
      capability: z.object({ name: z.string(), value: z.boolean() }).strict().optional(),
      id: DeliveryId,
    })
    .strict(),
  /**
   * An event for every queue of the realm (everyone who may see the change),
   * on the realm's broadcast subject as a channel message is: each queue
   * shard expands it to its own queues of the realm, so its size does not
   * grow with the organization.
   */
  z
    .object({
      kind: z.literal('realm'),
      realmId: Id,
      /** Users whose queues do not get it (e.g. restricted guests, the users the event is about). */
      except: z.array(Id),
      /**
       * Only for the queues of this channel's subscribers (an event about one
       * of its messages): each queue shard finds them in its subscriber index
       * (`actors/queue/subscribers.ts`), as for a channel message.
       */
      channelId: Id.optional(),
      /**
       * With `channelId`: users who get it too, subscribed or not (the deleter
       * of a message, a private channel's administrators); each queue shard
       * gives it to their queues it holds, once per queue.
       */
      also: z.array(Id).optional(),
      event: ClientEventBody,
      capability: z.object({ name: z.string(), value: z.boolean() }).strict().optional(),
      id: DeliveryId,
    })
    .strict(),
]);
export type Delivery = z.infer<typeof Delivery>;

/** An event for a list of users. */
export const toUsers = (realmId: number, userIds: number[], event: ClientEventBody): Delivery => ({ kind: 'event', realmId, userIds, event });

/** An event only for the queues of clients that declared `capability` (`client_capabilities`) as `value`. */
export const toUsersIf = (realmId: number, userIds: number[], event: ClientEventBody, capability: { name: string; value: boolean }): Delivery => ({ kind: 'event', realmId, userIds, event, capability });

/** An event for every queue of the realm but those of `except` (only those with `capability`, when given). */
export const toRealm = (realmId: number, event: ClientEventBody, opts: { except?: number[]; capability?: { name: string; value: boolean } } = {}): Delivery => ({
  kind: 'realm',
  realmId,
  except: opts.except ?? [],
  event,
  ...(opts.capability ? { capability: opts.capability } : {}),
});

/**
 * An event for a channel's active subscribers (about one of its messages:
 * reactions, deletions), and the users of `also`: one delivery on the realm's
 * broadcast subject, expanded by the queue shards to their own queues of the
 * channel's subscribers (and of `also`), so the realm neither lists the
 * subscribers nor the node places each of them (O(also) here).
 */
export const toChannelSubscribers = (realmId: number, channelId: number, event: ClientEventBody, also: number[] = []): Delivery => ({ kind: 'realm', realmId, except: [], channelId, ...(also.length ? { also } : {}), event });

/**
 * An event in one form for queues of clients with `capability` and another
 * (or none) for the others: two deliveries, each filtered by the capability.
 */
export const withCapability = (realmId: number, userIds: number[], capability: 'include_deactivated_groups' | 'user_list_incomplete', event: ClientEventBody, otherwise: ClientEventBody | null): Delivery[] => [
  toUsersIf(realmId, userIds, event, { name: capability, value: true }),
  ...(otherwise ? [toUsersIf(realmId, userIds, otherwise, { name: capability, value: false })] : []),
];

/** `withCapability` for every queue of the realm (but those of `except`): realm-wide deliveries, whose size does not grow with the organization. */
export const withCapabilityToRealm = (realmId: number, capability: 'include_deactivated_groups' | 'user_list_incomplete', event: ClientEventBody, otherwise: ClientEventBody | null, except: number[] = []): Delivery[] => [
  toRealm(realmId, event, { except, capability: { name: capability, value: true } }),
  ...(otherwise ? [toRealm(realmId, otherwise, { except, capability: { name: capability, value: false } })] : []),
];

/** A channel message: expanded where the queues are, not by its sender's realm. */
export type ChannelMessage = Extract<Delivery, { kind: 'message' }> & { userIds: null };
export const isChannelMessage = (d: Delivery): d is ChannelMessage => d.kind === 'message' && d.userIds === null;

/** Whether a delivery goes on its realm's broadcast subject, to every node holding queues: a channel message, a realm-wide event. */
export const isRealmWide = (d: Delivery): boolean => d.kind === 'realm' || isChannelMessage(d);

/** The placement keys of a delivery's recipients (where their queues live); none for a realm-wide one (`isRealmWide`). */
export function deliveryPlacements(d: Delivery): string[] {
  return d.kind === 'realm' || d.userIds === null ? [] : d.userIds.map((id) => userPlacement(d.realmId, id));
}
