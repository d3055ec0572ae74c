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
