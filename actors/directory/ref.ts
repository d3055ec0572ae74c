/** How callers reach the directory actor: one per deployment, the organizations and which host serves each. */
import { actorRef } from '../runtime/registry.ts';
import type { directoryHandlers } from './actor.ts';

export const directoryRef = actorRef<typeof directoryHandlers>('directory', () => 'directory');
/** The one directory actor's ID. */
export const DIRECTORY_ID = '0';
/** The caller of every directory message: the server itself, on behalf of no organization. */
export const SERVER_CALLER = { realmId: 0, userId: null } as const;
