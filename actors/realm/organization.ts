/**
 * The organization's own lifecycle, as the directory actor asks for it:
 * deactivation and reactivation (Zulip's do_deactivate_realm /
 * do_reactivate_realm). Nothing is deleted; a deactivated realm refuses
 * authentication (REALM_DEACTIVATED) and its clients are told to log out.
 */
import { z } from 'zod';
import { unauthorized } from '../../lib/errors.ts';
import { T } from '../../storage/tables.ts';
import { toUsers } from '../events/delivery.ts';
import { defineAction } from '../runtime/action.ts';
import { activeUsers } from './access.ts';
import type { RealmState } from './state.ts';

const action = defineAction<RealmState>();

/** Internal (only the server, for the directory actor): sets whether the organization is deactivated. Idempotent. */
export const setRealmDeactivated = action({
  type: 'setRealmDeactivated',
  fields: z.object({ deactivated: z.boolean() }),
  check(state, msg) {
    if (msg.caller.userId !== null) throw unauthorized('Only the server deactivates an organization');
    if (!state.meta) throw unauthorized('No such organization');
    return { deactivated: msg.deactivated, changed: state.meta.deactivated !== msg.deactivated };
  },
  apply(state, plan, tx) {
    if (plan.changed) {
      state.meta = { ...state.meta!, deactivated: plan.deactivated };
      tx.write(T.realms.at(state.realmId).put(state.meta));
    }
    return { changed: plan.changed };
  },
  // O(users) once per deactivation: every client of the organization hears it.
  events: (state, plan) => (plan.changed && plan.deactivated ? [toUsers(state.realmId, activeUsers(state), { type: 'realm', op: 'deactivated', realm_id: state.realmId })] : []),
});
