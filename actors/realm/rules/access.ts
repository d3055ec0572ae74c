/**
 * Who is acting and what they may see: the rules every realm handler shares.
 */
import { badRequest, unauthorized } from '../../../lib/errors.ts';
import type { ChannelRecord, GroupSettingValue, UserRecord } from '../../../storage/tables.ts';
import { GROUP_ID, isGuest, Role, SYSTEM_GROUPS } from '../../model.ts';
import type { Caller } from '../../runtime/action.ts';
import { type Delivery, toChannelSubscribers, toRealm, toUsers } from '../../events/delivery.ts';
import type { ClientEventBody } from '../../events/schema.ts';
import type { RealmState } from '../state/state.ts';
import { userByApiEmail } from './emails.ts';

/** The acting user: active, of this realm. */
export function actingUser(state: Readonly<RealmState>, caller: Caller): UserRecord {
  const user = caller.userId === null ? undefined : state.users.get(caller.userId);
  if (!user || !user.isActive) throw unauthorized('Account is deactivated');
  return user;
}

/**
 * Finds a user by ID or API email; unknown or deactivated users are a 400.
 * System bots are found only with `systemBots` (direct messages may be sent
 * to them, as in Zulip; they are never subscribed or otherwise administered).
 */
export function resolvePerson(state: Readonly<RealmState>, p: string | number, opts: { systemBots?: boolean } = {}): UserRecord {
  const asId = typeof p === 'number' ? p : /^\d+$/.test(p) ? Number(p) : null;
  // An address as the API knows the user (a hidden address's made-up one), as Zulip's get_user.
  const found = asId !== null ? state.person(asId) : userByApiEmail(state, String(p));
  const user = found?.isSystemBot && !opts.systemBots ? undefined : found;
  if (!user || !user.isActive) throw badRequest(asId !== null ? `Invalid user ID ${asId}` : `No such user: '${p}'`);
  return user;
}

/** Whether the user may see the channel exists (public, or private and subscribed or administering it). */
export function canAccess(state: Readonly<RealmState>, c: ChannelRecord, user: UserRecord): boolean {
  if (!c.inviteOnly) return !isGuest(user) || state.isSubscribed(c.id, user.id);
  return state.isSubscribed(c.id, user.id) || state.can(c.groups.can_administer_channel_group, user);
}

/**
 * Whether the user reads a private channel through its permission groups
 * without being subscribed (Zulip's `has_content_access`, FL 354): a
 * non-guest member of its `can_add_subscribers_group` or
 * `can_subscribe_group`. `can_administer_channel_group` gives metadata
 * access only. O(the two groups' nesting), not O(the organization's groups).
 */
export function contentAccessByGroups(state: Readonly<RealmState>, c: ChannelRecord, user: UserRecord): boolean {
  return c.inviteOnly && !isGuest(user) && (state.can(c.groups.can_add_subscribers_group, user) || state.can(c.groups.can_subscribe_group, user));
}

/**
 * Whether the user reads all of a channel's history without a subscription
 * of theirs deciding it: a channel whose history is shared with its
 * subscribers, public and visible to them, or private and open to them by
 * its groups (`contentAccessByGroups`). A private channel's protected
 * history is read only by who received it (`sourcesFor`).
 */
export function readsSharedHistory(state: Readonly<RealmState>, c: ChannelRecord, user: UserRecord): boolean {
  if (!c.historyPublicToSubscribers) return false;
  return c.inviteOnly ? state.isSubscribed(c.id, user.id) || contentAccessByGroups(state, c, user) : canAccess(state, c, user);
}

/** Active users who are not guests: those who see every public channel. */
export function activeNonGuests(state: Readonly<RealmState>): number[] {
  const out: number[] = [];
  for (const u of state.users.values()) if (u.isActive && u.role !== Role.GUEST) out.push(u.id);
  return out;
}

/** Every active user. */
export function activeUsers(state: Readonly<RealmState>): number[] {
  const out: number[] = [];
  for (const u of state.users.values()) if (u.isActive) out.push(u.id);
  return out;
}

/**
 * Who learns of a channel's existence and membership: everyone who can see
 * its metadata. A public channel: every member and the guests subscribed to
 * it (O(users)); a private one: its subscribers, the organization's
 * administrators and the members of its administration group (Zulip's
 * `can_access_stream_user_ids`), found from the staff and the group's
 * members: O(subscribers + staff + the group's members), unless the group
 * names a role wider than the moderators (then O(users), as everyone in it is).
 */
export function channelAudience(state: Readonly<RealmState>, c: ChannelRecord): number[] {
  const out = new Set<number>(state.activeSubscribers(c.id));
  if (c.inviteOnly) {
    for (const id of state.activeStaffIds) if (state.users.get(id)!.role <= Role.ADMIN) out.add(id);
    const administrators = settingMembers(state, c.groups.can_administer_channel_group);
    if (administrators) {
      for (const id of administrators) out.add(id);
      return [...out];
    }
  }
  for (const u of state.users.values()) {
    if (!u.isActive) continue;
    if (c.inviteOnly ? u.role <= Role.ADMIN || state.can(c.groups.can_administer_channel_group, u) : u.role !== Role.GUEST) out.add(u.id);
  }
  return [...out];
}

/**
 * The active users a group-setting value names (`RealmState.can` holds for
 * exactly them), from its groups' members and the staff: O(those members);
 * null when it names a role group wider than the moderators (members,
 * everyone), whose members take a walk of every user.
 */
function settingMembers(state: Readonly<RealmState>, value: GroupSettingValue): Set<number> | null {
  const out = new Set<number>();
  const seen = new Set<number>();
  const addActive = (ids: Iterable<number>) => {
    for (const id of ids) if (state.users.get(id)?.isActive) out.add(id);
  };
  // False: a role group wider than the staff.
  const addGroup = (groupId: number): boolean => {
    const system = SYSTEM_GROUPS.find((g) => g.id === groupId);
    if (system) {
      if (system.maxRole > Role.MODERATOR) return false;
      for (const id of state.activeStaffIds) if (state.users.get(id)!.role <= system.maxRole) out.add(id);
      return true;
    }
    const g = state.groups.get(groupId);
    if (!g || g.deactivated || seen.has(groupId)) return true;
    seen.add(groupId);
    addActive(g.members);
    return g.subgroups.every(addGroup);
  };
  if (typeof value === 'number') return addGroup(value) ? out : null;
  addActive(value.direct_members);
  return value.direct_subgroups.every(addGroup) ? out : null;
}

// ---- which users a user may see (`can_access_all_users_group`) ---------------

/**
 * Whether the organization limits which users some of its members see
 * (Zulip's `user_access_restricted_in_realm`): `can_access_all_users_group`
 * is `role:members` rather than `role:everyone`, so guests see only the
 * users they share a channel or a direct-message conversation with, and bots.
 */
export function accessRestricted(state: Readonly<RealmState>): boolean {
  const v = state.org.settings.groups.can_access_all_users_group;
  return v !== undefined && v !== GROUP_ID['role:everyone'];
}

/** Whether `viewer` sees every user of the organization (Zulip's `check_user_can_access_all_users`). */
export function seesEveryone(state: Readonly<RealmState>, viewer: UserRecord): boolean {
  if (!isGuest(viewer) || !accessRestricted(state)) return true;
  return state.can(state.org.settings.groups.can_access_all_users_group!, viewer);
}

/**
 * The users a restricted viewer sees (Zulip's `get_accessible_user_ids`, plus
 * bots): themselves, every bot, everyone subscribed to a channel they are
 * subscribed to, and everyone in a direct-message conversation with them.
 * Subscriptions count while they are active, whether or not their user is
 * deactivated: deactivating a user changes nobody's access to them.
 */
export function accessibleUsers(state: Readonly<RealmState>, viewer: UserRecord): Set<number> {
  const out = new Set<number>([viewer.id]);
  for (const u of state.users.values()) if (u.isBot) out.add(u.id);
  for (const subs of state.subs.values()) {
    if (!subs.get(viewer.id)?.active) continue;
    for (const s of subs.values()) if (s.active) out.add(s.userId);
  }
  // A conversation may include a system bot (Welcome Bot): those are not realm users (cross_realm_bots).
  for (const key of state.dmsByUser.get(viewer.id) ?? []) for (const id of state.dms.get(key)!.userIds) if (state.users.has(id)) out.add(id);
  return out;
}

/**
 * Whether `viewer` may see `target` (Zulip's `check_can_access_user`): the
 * same answer as `accessibleUsers(viewer).has(target)`, found by looking
 * for a channel or a conversation they share (O(channels + viewer's
 * conversations), not O(subscriptions)).
 */
export function canSeeUser(state: Readonly<RealmState>, viewer: UserRecord, target: UserRecord): boolean {
  if (target.isBot || target.id === viewer.id || seesEveryone(state, viewer)) return true;
  for (const subs of state.subs.values()) if (subs.get(viewer.id)?.active && subs.get(target.id)?.active) return true;
  for (const key of state.dmsByUser.get(viewer.id) ?? []) if (state.dms.get(key)!.userIds.includes(target.id)) return true;
  return false;
}

/** Active guests who do not see every user (none while the organization lets everyone see everyone): O(guests). */
export function restrictedGuests(state: Readonly<RealmState>): UserRecord[] {
  if (!accessRestricted(state)) return [];
  const out: UserRecord[] = [];
  for (const id of state.activeGuestIds) {
    const g = state.users.get(id)!;
    if (!seesEveryone(state, g)) out.push(g);
  }
  return out;
}

/**
 * An event for a channel's audience (`channelAudience`) but `except`. A
 * public channel's audience is everyone but the guests not subscribed to
 * it: one realm-wide delivery whose size is O(guests + except), not
 * O(users). A private channel's is listed (O(its audience) to find: `channelAudience`).
 */
export function toChannelAudience(state: Readonly<RealmState>, c: ChannelRecord, event: ClientEventBody, except: Iterable<number> = []): Delivery {
  if (c.inviteOnly) {
    const left = new Set(except);
    return toUsers(state.realmId, channelAudience(state, c).filter((id) => !left.has(id)), event);
  }
  const out = [...except];
  for (const id of state.activeGuestIds) if (!state.isSubscribed(c.id, id)) out.push(id);
  return toRealm(state.realmId, event, { except: out });
}

/**
 * An event for a channel's audience (`channelAudience`) as the queue shards
 * find it, so the realm does not list the subscribers: a public channel's, a
 * realm-wide delivery but the guests not subscribed (O(guests), as
 * `toChannelAudience`); a private channel's, one for its subscribers (each
 * queue shard's index) and its administrators: the organization's and the
 * members of its administration group (O(staff + that group's members)).
 * A group wider than the moderators names too many to list: then listed as
 * `toChannelAudience` does (O(users), as before).
 */
export function toChannelViewers(state: Readonly<RealmState>, c: ChannelRecord, event: ClientEventBody): Delivery {
  if (!c.inviteOnly) return toChannelAudience(state, c, event);
  const administrators = settingMembers(state, c.groups.can_administer_channel_group);
  if (!administrators) return toChannelAudience(state, c, event);
  for (const id of state.activeStaffIds) if (state.users.get(id)!.role <= Role.ADMIN) administrators.add(id);
  return toChannelSubscribers(state.realmId, c.id, event, [...administrators]);
}

/**
 * Each restricted viewer's accessible users: active users who do not see
 * everyone -> whom they see. Empty while the organization lets everyone see
 * everyone. Taken before and after a change, it tells who gained or lost
 * sight of whom (`accessChangeEvents` in `people.ts`).
 */
export function restrictedViews(state: Readonly<RealmState>): Map<number, Set<number>> {
  const out = new Map<number, Set<number>>();
  if (!accessRestricted(state)) return out;
  for (const u of state.users.values()) if (u.isActive && !seesEveryone(state, u)) out.set(u.id, accessibleUsers(state, u));
  return out;
}

/** Active users who may see `target` (Zulip's `get_user_ids_who_can_access_user`): who hears about changes to them. */
export function usersWhoSee(state: Readonly<RealmState>, target: UserRecord): number[] {
  if (target.isBot || !accessRestricted(state)) return activeUsers(state);
  const out: number[] = [];
  for (const u of state.users.values()) if (u.isActive && canSeeUser(state, u, target)) out.push(u.id);
  return out;
}
