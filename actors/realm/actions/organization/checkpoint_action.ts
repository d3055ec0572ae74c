/**
 * The server's own change that carries a checkpoint's parts when the realm is
 * idle (`checkpoint.ts`: parts go with the commits of changes; this one
 * writes nothing else). Only the server calls it: the realm actor itself.
 */
import { z } from 'zod';
import { unauthorized } from '../../../../lib/errors.ts';
import { defineAction } from '../../../runtime/action.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();

export const writeCheckpoint = action({
  type: 'writeCheckpoint',
  fields: z.object({}),
  check(_state, msg) {
    if (msg.caller.userId !== null) throw unauthorized('Only the server may do this');
    return null;
  },
  apply: () => ({}),
});
