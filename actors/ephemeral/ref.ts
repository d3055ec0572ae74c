/**
 * How callers reach the ephemeral actor (typing and presence). It is per
 * shard and keeps nothing in the store. Typing is addressed by the sender
 * (`<realm>:<user>`, the user's shard, next to their event queues); a realm's
 * presence by the realm (`<realm>`, the shard of `presence:<realm>`), so one
 * place holds everyone's presence and a ping never fans out.
 */
import { userPlacement } from '../subjects.ts';
import { actorRef } from '../runtime/registry.ts';
import type { ephemeralHandlers } from './actor.ts';

export const typingActorId = (realmId: number, userId: number): string => `${realmId}:${userId}`;
export const presenceActorId = (realmId: number): string => String(realmId);
export const ephemeralRef = actorRef<typeof ephemeralHandlers>('ephemeral', (id) => {
  const [realm, user] = id.split(':').map(Number) as [number, number | undefined];
  return user === undefined ? `presence:${realm}` : userPlacement(realm, user);
});

/**
 * What `updatePresence` with `sharedAnswer` answers when the ping's answer is
 * the one everyone who sees everyone gets this second: the presence version
 * (`presence_last_update_id`) after the ping's write. The caller takes the
 * answer from `pingAnswer`, at most once a second and version (the gateway's
 * `PerSecond`), so the ~670 KB at 10,000 users does not cross the bus once per
 * ping, and an answer always shows the caller's own change.
 */
export const sharedPresenceAnswer = (updateId: number): string => `{"shared_answer":${updateId}}`;

/** The version in a `sharedPresenceAnswer`, or null for an answer of its own. */
export function sharedPresenceVersion(text: string): number | null {
  const m = /^\{"shared_answer":(\d+)\}$/.exec(text);
  return m ? Number(m[1]) : null;
}
