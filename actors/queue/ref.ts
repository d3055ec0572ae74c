/** How callers reach a user's event queues: the queue actor of the user's shard. */
import { userPlacement } from '../subjects.ts';
import { actorRef } from '../runtime/registry.ts';
import type { queueHandlers } from './actor.ts';

/** The queue actor is per shard; the ID addressed is the user's, for placement. */
export const queueActorId = (realmId: number, userId: number): string => `${realmId}:${userId}`;
export const queueRef = actorRef<typeof queueHandlers>('queue', (id) => {
  const [realm, user] = id.split(':').map(Number) as [number, number];
  return userPlacement(realm, user);
});
