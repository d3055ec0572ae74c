/**
 * What the people handlers share: user objects as each viewer gets them
 * (with custom profile data when asked), who hears about a user, and the
 * events that follow a user's membership of the role (system) groups.
 */
import type { UserRecord } from '../../storage/tables.ts';
import { type Delivery, toUsers } from '../events/delivery.ts';
import type { ClientEventBody, UserObject } from '../events/schema.ts';
import { formatUser } from '../format.ts';
import { GROUP_ID, Role } from '../model.ts';
import { activeUsers } from './access.ts';
import { renderDescription } from './markdown.ts';
import type { RealmState } from './state.ts';

/** Custom profile field types whose values are rendered as Markdown (short and long text). */
export const RENDERED_FIELD_TYPES = new Set([1, 2]);

/** A user's custom profile data as the API shows it: field ID -> {value, rendered_value?}. */
export function profileDataOf(state: Readonly<RealmState>, u: UserRecord): NonNullable<UserObject['profile_data']> {
  const out: NonNullable<UserObject['profile_data']> = {};
  for (const [id, raw] of Object.entries(u.profileData)) {
    const field = state.profileFields.get(Number(id));
    if (!field) continue;
    const value = typeof raw === 'string' ? raw : JSON.stringify(raw);
    out[id] = RENDERED_FIELD_TYPES.has(field.fieldType) ? { value, rendered_value: renderDescription(value) } : { value };
  }
  return out;
}

/** A user object, with `profile_data` when the caller asked for custom profile fields. */
export function userObject(state: Readonly<RealmState>, u: UserRecord, opts: { extavatar: boolean; profile?: boolean }): UserObject {
  const base = formatUser(u, opts.extavatar);
  return opts.profile ? { ...base, profile_data: profileDataOf(state, u) } : base;
}

/**
 * Who learns of changes to a user: everyone active (organizations here let
 * every member, guests included, see every user), plus the user.
 */
export function userAudience(state: Readonly<RealmState>, userId: number): number[] {
  const out = activeUsers(state);
  return out.includes(userId) ? out : [...out, userId];
}

/** A `realm_user` update event about one user, for everyone who sees them. */
export function userUpdate(state: Readonly<RealmState>, userId: number, person: Extract<ClientEventBody, { type: 'realm_user'; op: 'update' }>['person']): Delivery {
  return toUsers(state.realmId, userAudience(state, userId), { type: 'realm_user', op: 'update', person });
}

/**
 * The system groups a role makes a user a direct member of (Zulip's
 * structure: each role group has the stricter role's group as subgroup;
 * members are also full members, as the waiting period is zero).
 */
export function roleGroups(role: number): number[] {
  switch (role) {
    case Role.OWNER:
      return [GROUP_ID['role:owners']];
    case Role.ADMIN:
      return [GROUP_ID['role:administrators']];
    case Role.MODERATOR:
      return [GROUP_ID['role:moderators']];
    case Role.MEMBER:
      return [GROUP_ID['role:fullmembers'], GROUP_ID['role:members']];
    default:
      return [GROUP_ID['role:everyone']];
  }
}

/** The direct subgroup of each system group (the nobody group has none). */
export const SYSTEM_SUBGROUPS: Readonly<Record<number, number[]>> = {
  [GROUP_ID['role:internet']]: [GROUP_ID['role:everyone']],
  [GROUP_ID['role:everyone']]: [GROUP_ID['role:members']],
  [GROUP_ID['role:members']]: [GROUP_ID['role:fullmembers']],
  [GROUP_ID['role:fullmembers']]: [GROUP_ID['role:moderators']],
  [GROUP_ID['role:moderators']]: [GROUP_ID['role:administrators']],
  [GROUP_ID['role:administrators']]: [GROUP_ID['role:owners']],
  [GROUP_ID['role:owners']]: [],
  [GROUP_ID['role:nobody']]: [],
};

/** The user_group member events a role change causes, for every active user. */
export function roleGroupEvents(state: Readonly<RealmState>, userId: number, oldRole: number, newRole: number): Delivery[] {
  const before = roleGroups(oldRole);
  const after = roleGroups(newRole);
  const audience = activeUsers(state);
  const out: Delivery[] = [];
  for (const g of before.filter((x) => !after.includes(x))) out.push(toUsers(state.realmId, audience, { type: 'user_group', op: 'remove_members', group_id: g, user_ids: [userId] }));
  for (const g of after.filter((x) => !before.includes(x))) out.push(toUsers(state.realmId, audience, { type: 'user_group', op: 'add_members', group_id: g, user_ids: [userId] }));
  return out;
}
