/** How callers reach a user actor: one per user, placed with the user's event queues. */
import { userPlacement } from '../subjects.ts';
import { actorRef } from '../runtime/registry.ts';
import type { userHandlers } from './actor.ts';

export const userActorId = (realmId: number, userId: number): string => `${realmId}:${userId}`;
export const userRef = actorRef<typeof userHandlers>('user', (id) => {
  const [realm, user] = id.split(':').map(Number) as [number, number];
  return userPlacement(realm, user);
});
