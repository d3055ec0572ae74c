/**
 * Email address visibility (Zulip's `email_address_visibility` user
 * setting; `zerver/lib/users.py`): who may see a user's real address.
 *
 * A user whose address is visible to everyone is known by it in the API
 * (`email`, `sender_email`, presence keys); anyone else by a made-up address,
 * `user<id>@<the organization's host>` (Zulip's `get_display_email_address`),
 * with the real one only in `delivery_email`, and only for the viewers the
 * setting allows (and the user). Bots' addresses are always visible.
 */
import { realmUrl } from '../../../lib/hosts.ts';
import type { UserRecord } from '../../../storage/tables.ts';
import { Role } from '../../model.ts';
import type { RealmState } from '../state/state.ts';

export const EmailVisibility = { EVERYONE: 1, MEMBERS: 2, ADMINS: 3, NOBODY: 4, MODERATORS: 5 } as const;

/** The domain of made-up addresses: the organization's host when it can end an address, else a reserved one (Zulip's `get_fake_email_domain`). */
export function fakeEmailDomain(state: Readonly<RealmState>): string {
  const host = new URL(realmUrl(state.siteUrl, state.meta?.stringId ?? '')).hostname.toLowerCase();
  return /^([a-z0-9-]+\.)+[a-z]{2,}$/.test(host) ? host : 'parley.invalid';
}

export function emailVisibility(state: Readonly<RealmState>, u: UserRecord): number {
  return u.isBot ? EmailVisibility.EVERYONE : Number(state.setting(u.id, 'email_address_visibility', EmailVisibility.EVERYONE));
}

/** The address the API knows `u` by: the real one when everyone may see it, else `user<id>@<domain>`. */
export function apiEmail(state: Readonly<RealmState>, u: UserRecord, visibility = emailVisibility(state, u)): string {
  return visibility === EmailVisibility.EVERYONE ? u.email : `user${u.id}@${fakeEmailDomain(state)}`;
}

/** Whether `viewer` may see the real address of a user whose setting is `visibility` (Zulip's `can_access_delivery_email`). */
export function canSeeDeliveryEmail(viewer: { id: number; role: number }, targetId: number, visibility: number): boolean {
  if (viewer.id === targetId) return true;
  switch (visibility) {
    case EmailVisibility.EVERYONE:
      return true;
    case EmailVisibility.MEMBERS:
      return viewer.role !== Role.GUEST;
    case EmailVisibility.MODERATORS:
      return viewer.role <= Role.MODERATOR;
    case EmailVisibility.ADMINS:
      return viewer.role <= Role.ADMIN;
    default:
      return false;
  }
}

/** `email` and `delivery_email` of `u` as `viewer` (null: nobody in particular) gets them. */
export function shownEmails(state: Readonly<RealmState>, u: UserRecord, viewer: { id: number; role: number } | null): { email: string; deliveryEmail: string | null } {
  const visibility = emailVisibility(state, u);
  return { email: apiEmail(state, u, visibility), deliveryEmail: viewer && canSeeDeliveryEmail(viewer, u.id, visibility) ? u.email : null };
}

/**
 * The user an address names in the API (Zulip's `get_user` by API email):
 * the made-up address of a hidden one, or the real address of a visible one.
 * With `viewer`, also a hidden user's real address when the viewer may see
 * it (GET /users/{email}, FL 302's rule).
 */
export function userByApiEmail(state: Readonly<RealmState>, email: string, viewer?: { id: number; role: number }): UserRecord | undefined {
  const e = email.trim().toLowerCase();
  const made = /^user(\d+)@(.+)$/.exec(e);
  if (made && made[2] === fakeEmailDomain(state)) {
    const u = state.person(Number(made[1]));
    if (u && emailVisibility(state, u) !== EmailVisibility.EVERYONE) return u;
  }
  const u = state.usersByEmail.get(e);
  if (!u) return undefined;
  const visibility = emailVisibility(state, u);
  if (visibility === EmailVisibility.EVERYONE || (viewer && canSeeDeliveryEmail(viewer, u.id, visibility))) return u;
  return undefined;
}
