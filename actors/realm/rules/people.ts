/**
 * What the people handlers share: user objects as each viewer gets them
 * (with custom profile data when asked), who hears about a user, and the
 * events that follow a user's membership of the role (system) groups.
 */
import type { UserRecord } from '../../../storage/tables.ts';
import { type Delivery, toRealm, toUsers, toUsersIf } from '../../events/delivery.ts';
import type { ClientEventBody, UserObject } from '../../events/schema.ts';
import { formatUser, inaccessibleUser, UNKNOWN_USER_NAME } from '../../format.ts';
import { GROUP_ID, Role } from '../../model.ts';
import { accessibleUsers, activeUsers, canSeeUser, restrictedGuests, restrictedViews, seesEveryone, usersWhoSee } from './access.ts';
import { renderDescription } from './markdown.ts';
import { apiEmail, canSeeDeliveryEmail, EmailVisibility, emailVisibility, shownEmails } from './emails.ts';
import type { RealmState } from '../state/state.ts';

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

/** A user object as `viewer` gets it (addresses by `email_address_visibility`), with `profile_data` when the caller asked for custom profile fields. */
export function userObject(state: Readonly<RealmState>, u: UserRecord, viewer: UserRecord, opts: { extavatar: boolean; profile?: boolean }): UserObject {
  const base = formatUser(u, opts.extavatar, shownEmails(state, u, viewer));
  return opts.profile ? { ...base, profile_data: profileDataOf(state, u) } : base;
}

/**
 * Who learns of changes to a user: every active user who may see them
 * (`can_access_all_users_group`), plus the user.
 */
export function userAudience(state: Readonly<RealmState>, userId: number): number[] {
  const out = usersWhoSee(state, state.users.get(userId)!);
  return out.includes(userId) ? out : [...out, userId];
}

/**
 * The user objects `viewer` gets of `users` (`realm_users`, GET /users): the
 * ones they may see, and, in place of the others, the "Unknown user"
 * placeholder unless the client copes with an incomplete list
 * (`user_list_incomplete`, and always for GET /users since Zulip's FL 437).
 */
export function usersFor(state: Readonly<RealmState>, viewer: UserRecord, users: Iterable<UserRecord>, opts: { extavatar: boolean; profile: boolean; incomplete: boolean }): UserObject[] {
  const seen = seesEveryone(state, viewer) ? null : accessibleUsers(state, viewer);
  const out: UserObject[] = [];
  for (const u of users) {
    if (seen === null || seen.has(u.id)) out.push(userObject(state, u, viewer, opts));
    else if (!opts.incomplete) out.push(inaccessibleUser(u.id));
  }
  return out;
}

/**
 * A new user's `realm_user` add: the user for everyone who may see them;
 * the "Unknown user" placeholder for the others, except clients with
 * `user_list_incomplete` (Zulip's `notify_created_user`). One realm-wide
 * delivery; only the restricted guests who may not see the user are
 * listed (O(guests × channels) in an organization that restricts them),
 * and, when the user's address is not for everyone, those who may or may
 * not see it (O(guests) or O(moderators and administrators)).
 */
export function realmUserAdd(state: Readonly<RealmState>, u: UserRecord): Delivery[] {
  const hidden = u.isBot ? [] : restrictedGuests(state).filter((g) => !canSeeUser(state, g, u)).map((g) => g.id);
  // Two versions of the user, as Zulip's notify_created_user: with the real address for those who may see it.
  const visibility = emailVisibility(state, u);
  const person = formatUser(u, false, { email: apiEmail(state, u, visibility), deliveryEmail: u.email });
  const profile = { profile_data: profileDataOf(state, u) };
  const full: ClientEventBody = { type: 'realm_user', op: 'add', person: { ...person, ...profile } };
  const masked: ClientEventBody = { type: 'realm_user', op: 'add', person: { ...person, delivery_email: null, ...profile } };
  const out: Delivery[] = [];
  if (visibility === EmailVisibility.EVERYONE) out.push(toRealm(state.realmId, full, { except: hidden }));
  else if (visibility === EmailVisibility.MEMBERS) {
    // Everyone but guests sees the address: the guests who see the user are listed.
    const left = new Set(hidden);
    const guests = [...state.activeGuestIds].filter((id) => !left.has(id));
    out.push(toRealm(state.realmId, full, { except: [...hidden, ...guests] }));
    if (guests.length) out.push(toUsers(state.realmId, guests, masked));
  } else {
    // Only moderators or administrators may see it: they are listed (O(staff)).
    const withAddress = [...state.activeStaffIds].filter((id) => canSeeDeliveryEmail(state.users.get(id)!, u.id, visibility));
    out.push(toRealm(state.realmId, masked, { except: [...hidden, ...withAddress] }));
    if (withAddress.length) out.push(toUsers(state.realmId, withAddress, full));
  }
  if (hidden.length) out.push(toUsersIf(state.realmId, hidden, { type: 'realm_user', op: 'add', person: inaccessibleUser(u.id) }, { name: 'user_list_incomplete', value: false }));
  return out;
}

/**
 * After a change that may change who sees whom (subscriptions, a first
 * direct message, a role, the organization's setting), given each
 * restricted viewer's view before it (`restrictedViews`): a `realm_user`
 * add with the user's data for each user a viewer now sees, and a remove
 * for each one they no longer see (Zulip's
 * `send_user_creation_events_on_adding_subscriptions` and
 * `send_user_remove_events_on_removing_subscriptions`). A viewer missing
 * from a view saw everyone.
 */
export function accessChangeEvents(state: Readonly<RealmState>, before: ReadonlyMap<number, Set<number>>): Delivery[] {
  const after = restrictedViews(state);
  if (before.size === 0 && after.size === 0) return [];
  const everyone = new Set(state.users.keys());
  const out: Delivery[] = [];
  for (const viewerId of new Set([...before.keys(), ...after.keys()])) {
    if (!state.users.get(viewerId)?.isActive) continue;
    const was = before.get(viewerId) ?? everyone;
    const now = after.get(viewerId) ?? everyone;
    for (const id of now) {
      if (!was.has(id)) out.push(toUsers(state.realmId, [viewerId], { type: 'realm_user', op: 'add', person: userObject(state, state.users.get(id)!, state.users.get(viewerId)!, { extavatar: false, profile: true }) }));
    }
    for (const id of was) if (!now.has(id)) out.push(toUsers(state.realmId, [viewerId], { type: 'realm_user', op: 'remove', person: { user_id: id, full_name: UNKNOWN_USER_NAME } }));
  }
  return out;
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
  const out: Delivery[] = [];
  for (const g of before.filter((x) => !after.includes(x))) out.push(toRealm(state.realmId, { type: 'user_group', op: 'remove_members', group_id: g, user_ids: [userId] }));
  for (const g of after.filter((x) => !before.includes(x))) out.push(toRealm(state.realmId, { type: 'user_group', op: 'add_members', group_id: g, user_ids: [userId] }));
  return out;
}

/** Zulip's `silent_mention_syntax_for_user`: names the user without notifying them. */
export const silentMention = (u: UserRecord): string => `@_**${u.fullName}|${u.id}**`;
