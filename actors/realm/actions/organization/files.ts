/**
 * What the file pages ask the realm before they reach a user actor without
 * credentials: whether a temporary file URL's user is an active member, so
 * that a forged token naming any ID never makes an actor load for a user
 * who does not exist.
 */
import { z } from 'zod';
import { defineQuery } from '../../../runtime/action.ts';
import type { RealmState } from '../../state/state.ts';

const query = defineQuery<RealmState>();

export const isActiveUser = query({
  type: 'isActiveUser',
  fields: z.object({ userId: z.number().int() }),
  run(state, msg) {
    return { active: state.users.get(msg.userId)?.isActive === true };
  },
});
