/** How callers reach a realm actor: one per organization, its ID the realm's. */
import { actorRef } from '../runtime/registry.ts';
import type { realmHandlers } from './handlers.ts';

export const realmRef = actorRef<typeof realmHandlers>('realm', (id) => `realm:${id}`);
export const realmActorId = (realmId: number): string => String(realmId);
