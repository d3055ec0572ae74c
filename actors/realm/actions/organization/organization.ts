/**
 * The organization's own lifecycle, as the directory actor asks for it:
 * deactivation and reactivation (Zulip's do_deactivate_realm /
 * do_reactivate_realm), and a demo organization's conversion to a
 * permanent one under a new subdomain (Zulip's PATCH /realm `string_id`).
 * Nothing is deleted; a deactivated realm refuses authentication
 * (REALM_DEACTIVATED) and its clients are told to log out.
 */
import { z } from 'zod';
import { ApiError, adminRequired, badRequest, unauthorized } from '../../../../lib/errors.ts';
import { isAdmin, Role } from '../../../model.ts';
import { actingUser } from '../../rules/access.ts';
import { T } from '../../../../storage/tables.ts';
import { toRealm } from '../../../events/delivery.ts';
import { defineAction } from '../../../runtime/action.ts';
import { activeUsers } from '../../rules/access.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();

/** Zulip's MIN_DEACTIVATED_REALM_DELETION_DAYS (and no maximum, its default). */
export const MIN_DEACTIVATED_REALM_DELETION_DAYS = 14;

/**
 * Sets whether the organization is deactivated (asked by the directory
 * actor). Idempotent. The server reactivates and deactivates; an owner may
 * deactivate (POST /realm/deactivate, Zulip's `deactivate_realm`), with
 * `deletion_delay_days` of at least MIN_DEACTIVATED_REALM_DELETION_DAYS
 * (FL 332) or none (the data is kept until the operator deletes it).
 */
export const setRealmDeactivated = action({
  type: 'setRealmDeactivated',
  fields: z.object({ deactivated: z.boolean(), deletionDelayDays: z.number().int().nullable().default(null) }),
  check(state, msg) {
    if (!state.meta) throw unauthorized('No such organization');
    if (msg.caller.userId !== null) {
      const user = actingUser(state, msg.caller);
      if (!msg.deactivated) throw unauthorized('Only the server reactivates an organization');
      if (user.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner', 400);
    }
    if (msg.deletionDelayDays !== null && msg.deletionDelayDays < MIN_DEACTIVATED_REALM_DELETION_DAYS) {
      throw badRequest(`Data deletion time must be at least ${MIN_DEACTIVATED_REALM_DELETION_DAYS} days in the future.`);
    }
    const deletionAllowedAfter = msg.deactivated && msg.deletionDelayDays !== null ? Math.floor(Date.now() / 1000) + msg.deletionDelayDays * 86_400 : null;
    return { deactivated: msg.deactivated, deletionAllowedAfter, changed: state.meta.deactivated !== msg.deactivated };
  },
  apply(state, plan, tx) {
    if (plan.changed) {
      state.meta = { ...state.meta!, deactivated: plan.deactivated, deletionAllowedAfter: plan.deletionAllowedAfter };
      tx.write(T.realms.at(state.realmId).put(state.meta));
    }
    return { changed: plan.changed };
  },
  // O(users) once per deactivation: every client of the organization hears it.
  events: (state, plan) => (plan.changed && plan.deactivated ? [toRealm(state.realmId, { type: 'realm', op: 'deactivated', realm_id: state.realmId })] : []),
});

/**
 * A demo organization's owner makes it permanent under a new subdomain
 * (Zulip's PATCH /realm `string_id`, FL 104: owners only, demo
 * organizations only; `do_change_realm_subdomain` clears the scheduled
 * deletion). Asked by the directory actor, which owns subdomains: first with
 * `dryRun` (who may, before it checks the subdomain, so the errors come in
 * Zulip's order), then for real, after which it records the new subdomain.
 * `current` is the directory's subdomain for the realm: a realm that already
 * took `subdomain` while the directory did not (a crash between the two
 * commits) accepts the retry, so the directory catches up.
 */
export const convertDemoOrganization = action({
  type: 'convertDemoOrganization',
  fields: z.object({ subdomain: z.string(), current: z.string(), dryRun: z.boolean() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    // PATCH /realm is for administrators (Zulip's require_realm_admin); string_id for owners.
    if (!isAdmin(user)) throw adminRequired();
    if (user.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner', 400);
    const meta = state.meta!;
    const retry = meta.demoOrganizationScheduledDeletionDate === null && meta.stringId === msg.subdomain && msg.subdomain !== msg.current;
    if (meta.demoOrganizationScheduledDeletionDate === null && !retry) throw badRequest('Must be a demo organization.');
    return { write: !msg.dryRun && !retry, subdomain: msg.subdomain };
  },
  apply(state, plan, tx) {
    if (plan.write) {
      state.meta = { ...state.meta!, stringId: plan.subdomain, demoOrganizationScheduledDeletionDate: null };
      tx.write(T.realms.at(state.realmId).put(state.meta));
    }
    return {};
  },
});
