/**
 * Who is acting and what they may see: the rules every realm handler shares.
 */
import { badRequest, unauthorized } from '../../lib/errors.ts';
import type { ChannelRecord, UserRecord } from '../../storage/tables.ts';
import { isGuest, Role } from '../model.ts';
import type { Caller } from '../runtime/action.ts';
import type { RealmState } from './state.ts';

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
  const found = asId !== null ? state.person(asId) : state.usersByEmail.get(String(p).trim().toLowerCase());
  const user = found?.isSystemBot && !opts.systemBots ? undefined : found;
  if (!user || !user.isActive) throw badRequest(asId !== null ? `Invalid user ID ${asId}` : `No such user: '${p}'`);
  return user;
}

/** Whether the user may see the channel exists (public, or private and subscribed or administering it). */
export function canAccess(state: Readonly<RealmState>, c: ChannelRecord, user: UserRecord): boolean {
  if (!c.inviteOnly) return !isGuest(user) || state.isSubscribed(c.id, user.id);
  return state.isSubscribed(c.id, user.id) || state.can(c.groups.can_administer_channel_group, user);
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
 * it; a private one: its subscribers, the organization's administrators and
 * the members of its administration group (Zulip's `can_access_stream_user_ids`).
 */
export function channelAudience(state: Readonly<RealmState>, c: ChannelRecord): number[] {
  const out = new Set<number>(state.activeSubscribers(c.id));
  for (const u of state.users.values()) {
    if (!u.isActive) continue;
    if (c.inviteOnly ? u.role <= Role.ADMIN || state.can(c.groups.can_administer_channel_group, u) : u.role !== Role.GUEST) out.add(u.id);
  }
  return [...out];
}
