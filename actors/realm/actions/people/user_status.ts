/**
 * Status: POST /users/me/status (only what is passed changes), GET
 * /users/{user_id}/status, POST /users/{user_id}/status (administrators), the
 * `user_status` register object and events.
 * The legacy `away` is the negation of the `presence_enabled` setting
 * (FL 148): setting it changes that setting.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { EXTRA_EMOJI_NAME, unicodeEmojiCode, unicodeEmojiMatches } from '../../../../lib/emoji.ts';
import { T, type UserRecord, type UserStatus } from '../../../../storage/tables.ts';
import { type Delivery, toUsers } from '../../../events/delivery.ts';
import { isAdmin } from '../../../model.ts';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';
import { accessibleUsers, actingUser, canSeeUser, seesEveryone } from '../../rules/access.ts';
import { userAudience } from '../../rules/people.ts';
import type { RealmState } from '../../state/state.ts';
import { settingEvents } from './settings.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const MAX_STATUS_TEXT = 60;

type StatusObject = { away?: true; status_text?: string; emoji_name?: string; emoji_code?: string; reaction_type?: string };

const presenceEnabled = (state: Readonly<RealmState>, userId: number): boolean => state.setting(userId, 'presence_enabled', DEFAULT_USER_SETTINGS.presence_enabled!) === true;

/** A user's status as the API shows it: only what is set. */
export function statusObject(state: Readonly<RealmState>, u: UserRecord): StatusObject {
  const out: StatusObject = {};
  if (!presenceEnabled(state, u.id)) out.away = true;
  if (u.status.text) out.status_text = u.status.text;
  if (u.status.emojiName) Object.assign(out, { emoji_name: u.status.emojiName, emoji_code: u.status.emojiCode, reaction_type: u.status.reactionType });
  return out;
}

/** The `user_status` register object: users with something set, by user ID (deactivated users keep theirs, as no event removes it). */
export function statusesOf(state: Readonly<RealmState>, viewer: UserRecord): Record<string, StatusObject> {
  const out: Record<string, StatusObject> = {};
  const seen = seesEveryone(state, viewer) ? null : accessibleUsers(state, viewer);
  for (const u of state.users.values()) {
    if (seen && !seen.has(u.id)) continue;
    const s = statusObject(state, u);
    if (Object.keys(s).length) out[String(u.id)] = s;
  }
  return out;
}

/** Custom emoji of the realm by code (none exist yet: uploads and custom emoji come with messaging). */
function customEmoji(_state: Readonly<RealmState>, _code: string): { name: string } | undefined {
  return undefined;
}

/** Resolves and checks the emoji of a status; returns name, code and type as stored. */
function checkEmoji(state: Readonly<RealmState>, name: string, code: string | null, type: string | null): Pick<UserStatus, 'emojiName' | 'emojiCode' | 'reactionType'> {
  if (name === '') return { emojiName: '', emojiCode: '', reactionType: '' };
  if (code === null || type === null) {
    // The name alone: a Unicode emoji, or the extra emoji.
    const unicode = unicodeEmojiCode(name);
    if (unicode !== undefined) return { emojiName: name, emojiCode: unicode, reactionType: 'unicode_emoji' };
    if (name === EXTRA_EMOJI_NAME) return { emojiName: name, emojiCode: name, reactionType: 'service_extra_emoji' };
    throw badRequest(`Emoji '${name}' does not exist`);
  }
  switch (type) {
    case 'unicode_emoji':
      if (!unicodeEmojiMatches(name, code)) throw badRequest('Invalid emoji name.');
      return { emojiName: name, emojiCode: code, reactionType: type };
    case 'realm_emoji': {
      const custom = customEmoji(state, code);
      if (!custom) throw badRequest('Invalid custom emoji.');
      if (custom.name !== name) throw badRequest('Invalid custom emoji name.');
      return { emojiName: name, emojiCode: code, reactionType: type };
    }
    case 'service_extra_emoji':
      if (name !== EXTRA_EMOJI_NAME || code !== EXTRA_EMOJI_NAME) throw badRequest('Invalid emoji name.');
      return { emojiName: name, emojiCode: code, reactionType: type };
    default:
      throw badRequest('Invalid emoji type.');
  }
}

interface StatusPlan {
  userId: number;
  status: UserStatus;
  away: boolean | null;
  /** What the event carries: only what was passed. */
  event: Omit<StatusObject, 'away'> & { away?: boolean };
}

/** The user an administrator sets the status of (Zulip's `access_user_by_id(for_admin=True)`, bots included). */
function statusTarget(state: Readonly<RealmState>, acting: UserRecord, userId: number): UserRecord {
  if (!isAdmin(acting)) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
  const target = state.users.get(userId);
  if (!target || target.isSystemBot) throw badRequest('No such user');
  if (!target.isActive) throw badRequest('User is deactivated');
  return target;
}

export const updateStatus = action({
  type: 'updateStatus',
  fields: z.object({
    statusText: z.string().nullable(),
    away: z.boolean().nullable(),
    emojiName: z.string().nullable(),
    emojiCode: z.string().nullable(),
    reactionType: z.string().nullable(),
    /** POST /users/{user_id}/status (FL 407): an administrator sets another user's status (without `away`). */
    userId: z.number().int().optional(),
  }),
  check(state, msg): StatusPlan {
    const acting = actingUser(state, msg.caller);
    const user = msg.userId === undefined ? acting : statusTarget(state, acting, msg.userId);
    const text = msg.statusText?.trim() ?? null;
    if (msg.away === null && text === null && msg.emojiName === null && msg.emojiCode === null && msg.reactionType === null) throw badRequest('Client did not pass any new values.');
    if (text !== null && [...text].length > MAX_STATUS_TEXT) throw badRequest(`status_text is too long (limit: ${MAX_STATUS_TEXT} characters).`);
    if (msg.emojiName === null && (msg.emojiCode !== null || msg.reactionType !== null)) throw badRequest('Client must pass emoji_name if they pass either emoji_code or reaction_type.');
    const status = { ...user.status };
    const event: StatusPlan['event'] = {};
    if (text !== null) {
      status.text = text;
      event.status_text = text;
    }
    if (msg.emojiName !== null) {
      Object.assign(status, checkEmoji(state, msg.emojiName, msg.emojiCode, msg.reactionType));
      Object.assign(event, { emoji_name: status.emojiName, emoji_code: status.emojiCode, reaction_type: status.reactionType || 'unicode_emoji' });
    }
    if (msg.away !== null) event.away = msg.away;
    return { userId: user.id, status, away: msg.away, event };
  },
  apply(state, p, tx) {
    const u = state.users.get(p.userId)!;
    const next = { ...u, status: p.status };
    state.indexUser(next);
    tx.write(T.users.at(state.realmId, u.id).put(next));
    if (p.away !== null && presenceEnabled(state, u.id) === p.away) {
      // `away` is the negation of presence_enabled, which the user has now set themselves.
      const row = { ...(state.settings.get(u.id) ?? {}), presence_enabled: !p.away };
      state.settings.set(u.id, row);
      tx.write(T.userSettings.at(state.realmId, u.id).put(row));
      const edited = new Set(state.settingsEdited.get(u.id) ?? []).add('presence_enabled');
      state.settingsEdited.set(u.id, edited);
      tx.write(T.userSettingsEdited.at(state.realmId, u.id).put([...edited]));
      return { presenceChanged: true };
    }
    return { presenceChanged: false };
  },
  events(state, p, reply) {
    const out: Delivery[] = [];
    if (reply.presenceChanged) out.push(...settingEvents(state, p.userId, 'presence_enabled', !p.away));
    out.push(toUsers(state.realmId, userAudience(state, p.userId), { type: 'user_status', user_id: p.userId, ...p.event }));
    return out;
  },
});

export const getStatus = query({
  type: 'getStatus',
  fields: z.object({ userId: z.number().int() }),
  run(state, msg) {
    const viewer = actingUser(state, msg.caller);
    const u = state.users.get(msg.userId);
    if (!u) throw badRequest('No such user');
    // Zulip's access_user_by_id(for_admin=False): reading a user needs seeing them (can_access_all_users_group).
    if (!canSeeUser(state, viewer, u)) throw badRequest('Insufficient permission');
    return { status: statusObject(state, u) };
  },
});
