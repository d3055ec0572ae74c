/**
 * Personal settings (PATCH /settings and its aliases /settings/display and
 * /settings/notifications), administrators' changes to other users'
 * settings (`target_users`, FL 444) and the organization's defaults for new
 * users (PATCH /realm/user_settings_defaults). The realm owns every user's
 * settings: see `actors/user/settings.ts` for the table they are checked
 * against.
 */
import { consentEvent } from '../organization/realm_export.ts';
import { z } from 'zod';
import { adminRequired, badRequest } from '../../../../lib/errors.ts';
import { newConfirmationKey } from '../../../../lib/secrets.ts';
import { T, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toRealm, toUsers, toUsersIf } from '../../../events/delivery.ts';
import { isAdmin } from '../../../model.ts';
import { defineAction, type Tx } from '../../../runtime/action.ts';
import {
  DEFAULT_USER_SETTINGS,
  DEFAULTS_SETTING_NAMES,
  EMOJISET_CHOICES,
  LANGUAGES,
  LEGACY_DISPLAY_SETTINGS,
  LEGACY_NOTIFICATION_SETTINGS,
  NOTIFICATION_SOUNDS,
  SETTING_NAMES,
  settingError,
  type SettingValue,
  USER_SETTINGS,
} from '../../../user/settings.ts';
import { actingUser } from '../../rules/access.ts';
import { userAudience, userUpdate } from '../../rules/people.ts';
import { userAvatarUrl } from '../../../format.ts';
import { apiEmail, canSeeDeliveryEmail, EmailVisibility, emailVisibility } from '../../rules/emails.ts';
import { noteAccountAddresses } from '../../state/account_index.ts';
import type { RealmState } from '../../state/state.ts';
import { checkFullName, checkUniqueName } from './users.ts';
import { groupMembersRecursive, usableGroup } from '../../rules/groups.ts';

const action = defineAction<RealmState>();

/** Every setting's value for a user (the `user_settings` register object). */
export function settingsOf(state: Readonly<RealmState>, userId: number): Record<string, SettingValue> {
  const out: Record<string, SettingValue> = {};
  for (const k of SETTING_NAMES) out[k] = state.setting(userId, k, DEFAULT_USER_SETTINGS[k]!);
  return out;
}

/**
 * The top-level settings of POST /register for a client without
 * `user_settings_object`: `update_display_settings` gives the display ones
 * (with the time zone and the emoji sets), `update_global_notifications` the
 * notification ones (with the sounds).
 */
export function legacySettingsOf(state: Readonly<RealmState>, userId: number, kind: 'update_display_settings' | 'update_global_notifications'): Record<string, unknown> {
  const names = kind === 'update_display_settings' ? LEGACY_DISPLAY_SETTINGS : LEGACY_NOTIFICATION_SETTINGS;
  const out: Record<string, unknown> = Object.fromEntries(names.map((k) => [k, state.setting(userId, k, DEFAULT_USER_SETTINGS[k]!)]));
  if (kind === 'update_display_settings') {
    out.emojiset_choices = SETTING_CHOICES.emojiset_choices;
    out.timezone = state.setting(userId, 'timezone', DEFAULT_USER_SETTINGS.timezone!);
  } else out.available_notification_sounds = SETTING_CHOICES.available_notification_sounds;
  return out;
}

/** The choices Zulip's register adds to `user_settings` and `realm_user_settings_defaults`. */
export const SETTING_CHOICES = {
  emojiset_choices: EMOJISET_CHOICES,
  available_notification_sounds: NOTIFICATION_SOUNDS.filter((s) => s !== 'none'),
} as const;

/** The organization's defaults for new users (the `realm_user_settings_defaults` register object). */
export function userDefaultsOf(state: Readonly<RealmState>): Record<string, SettingValue> {
  return Object.fromEntries(DEFAULTS_SETTING_NAMES.map((k) => [k, state.userDefaults[k] ?? DEFAULT_USER_SETTINGS[k]!]));
}

const Changes = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));

/** Checks requested values; throws the first error Zulip would give. */
function checkValues(changes: Record<string, SettingValue>, forDefaults: boolean): void {
  for (const [k, v] of Object.entries(changes)) {
    const def = USER_SETTINGS[k];
    if (!def || (forDefaults ? !def.d : !def.s)) throw badRequest(`Unknown setting ${k}`);
    const err = settingError(k, v, forDefaults);
    if (err) throw badRequest(err, { var_name: k });
  }
}

/** One user's setting change: the write of their settings row (or record, for timezone) and what they edited. */
export function writeSetting(state: RealmState, tx: Tx, userId: number, name: string, value: SettingValue, byThemselves: boolean): void {
  if (name === 'timezone') {
    const next = { ...state.users.get(userId)!, timezone: value as string };
    state.indexUser(next);
    tx.write(T.users.at(state.realmId, userId).put(next));
  } else {
    const row = { ...(state.settings.get(userId) ?? {}), [name]: value };
    state.settings.set(userId, row);
    tx.write(T.userSettings.at(state.realmId, userId).put(row));
  }
  if (byThemselves) {
    const edited = state.settingsEdited.get(userId) ?? new Set<string>();
    if (!edited.has(name)) {
      edited.add(name);
      state.settingsEdited.set(userId, edited);
      tx.write(T.userSettingsEdited.at(state.realmId, userId).put([...edited]));
    }
  }
}

/**
 * The events of one user's setting change: `user_settings` to the user; a
 * time zone also to everyone who sees them. The legacy
 * `update_display_settings` and `update_global_notifications` events are sent
 * to no client (Zulip's FL 439): a client without `user_settings_object`
 * applies `user_settings` events to the top-level settings its register gave.
 */
export function settingEvents(state: Readonly<RealmState>, userId: number, name: string, value: SettingValue): Delivery[] {
  const languageName = name === 'default_language' ? { language_name: LANGUAGES[value as string]! } : {};
  const out: Delivery[] = [toUsers(state.realmId, [userId], { type: 'user_settings', op: 'update', property: name, value, ...languageName })];
  if (name === 'timezone') {
    const u = state.users.get(userId)!;
    out.push(userUpdate(state, userId, { user_id: userId, email: apiEmail(state, u), timezone: value as string }));
  }
  return out;
}

/**
 * After a user's `email_address_visibility` changed from `old` (Zulip's
 * do_change_user_setting): `delivery_email` to each user who gains or loses
 * sight of the real address, and the new API address to everyone who sees
 * the user when it changes (to or from visible to everyone).
 */
export function emailVisibilityEvents(state: Readonly<RealmState>, userId: number, old: number): Delivery[] {
  const u = state.users.get(userId)!;
  const now = emailVisibility(state, u);
  const audience = userAudience(state, userId);
  const gain = audience.filter((id) => !canSeeDeliveryEmail(state.users.get(id)!, userId, old) && canSeeDeliveryEmail(state.users.get(id)!, userId, now));
  const lose = audience.filter((id) => canSeeDeliveryEmail(state.users.get(id)!, userId, old) && !canSeeDeliveryEmail(state.users.get(id)!, userId, now));
  const out: Delivery[] = [];
  if (gain.length) out.push(toUsers(state.realmId, gain, { type: 'realm_user', op: 'update', person: { user_id: userId, delivery_email: u.email } }));
  if (lose.length) out.push(toUsers(state.realmId, lose, { type: 'realm_user', op: 'update', person: { user_id: userId, delivery_email: null } }));
  if (apiEmail(state, u, old) !== apiEmail(state, u, now)) {
    out.push(toUsers(state.realmId, audience, { type: 'realm_user', op: 'update', person: { user_id: userId, new_email: apiEmail(state, u, now) } }));
    // The avatar as clients now get it (Zulip's notify_avatar_url_change): a client that computes
    // avatars itself can do so only from a real address, so it gets the URL while the address is hidden.
    const avatar = { user_id: userId, avatar_source: u.avatarSource, avatar_url_medium: userAvatarUrl(u, false, true)!, avatar_version: 1 };
    out.push(toUsersIf(state.realmId, audience, { type: 'realm_user', op: 'update', person: { ...avatar, avatar_url: userAvatarUrl(u, false) } }, { name: 'client_extavatar', value: false }));
    out.push(toUsersIf(state.realmId, audience, { type: 'realm_user', op: 'update', person: { ...avatar, avatar_url: userAvatarUrl(u, now === EmailVisibility.EVERYONE) } }, { name: 'client_extavatar', value: true }));
  }
  return out;
}

export const TargetUsers = z.object({ user_ids: z.array(z.number().int()).default([]), group_ids: z.array(z.number().int()).default([]), skip_if_already_edited: z.boolean() });

interface SettingsPlan {
  /** (user, setting, value) triples that change something, in order. */
  changes: Array<{ userId: number; name: string; value: SettingValue; old: SettingValue }>;
  byThemselves: boolean;
  fullName: string | null;
  userId: number;
  password: string | null;
  pendingEmail: { email: string; key: string } | null;
}

export const updateSettings = action({
  type: 'updateSettings',
  fields: z.object({
    changes: Changes,
    targetUsers: TargetUsers.nullable(),
    fullName: z.string().nullable(),
    email: z.string().nullable(),
    /** A new password's hash, with the hash the old password was verified against (the gateway checked it). */
    password: z.object({ verifiedAgainst: z.string(), newHash: z.string() }).nullable(),
  }),
  check(state, msg): SettingsPlan {
    const actor = actingUser(state, msg.caller);
    if (actor.isBot) throw badRequest('This endpoint does not accept bot requests.');
    const none = { fullName: null, password: null, pendingEmail: null, userId: actor.id };
    if (msg.targetUsers) {
      if (!isAdmin(actor)) throw adminRequired();
      if (msg.email !== null || msg.password !== null || 'timezone' in msg.changes) throw badRequest('Cannot change this setting for other users.');
      for (const k of Object.keys(msg.changes)) if (USER_SETTINGS[k]?.personal) throw badRequest('Cannot change this setting for other users.');
      checkValues(msg.changes, false);
      const t = msg.targetUsers;
      if (t.user_ids.length === 0 && t.group_ids.length === 0) throw badRequest('Either user_ids or group_ids must be provided.');
      const ids = new Set<number>();
      for (const id of t.user_ids) {
        if (!state.users.has(id)) throw badRequest(`Invalid user ID: ${id}`);
        ids.add(id);
      }
      for (const g of t.group_ids) {
        if (!usableGroup(state, g, true)) throw badRequest(`Invalid user group ID: ${g}`);
        for (const id of groupMembersRecursive(state, g)) ids.add(id);
      }
      // Settings do not apply to bots; deactivated users are included, for when they come back.
      const users = [...ids].map((id) => state.users.get(id)!).filter((u) => !u.isBot);
      const changes: SettingsPlan['changes'] = [];
      for (const [name, value] of Object.entries(msg.changes)) {
        for (const u of users) {
          if (t.skip_if_already_edited && state.settingsEdited.get(u.id)?.has(name)) continue;
          const old = state.setting(u.id, name, DEFAULT_USER_SETTINGS[name]!);
          if (old !== value) changes.push({ userId: u.id, name, value, old });
        }
      }
      return { ...none, changes, byThemselves: false };
    }
    checkValues(msg.changes, false);
    if (msg.password && actor.passwordHash !== msg.password.verifiedAgainst) throw badRequest('Wrong password!');
    let pendingEmail: SettingsPlan['pendingEmail'] = null;
    if (msg.email !== null && msg.email.trim() !== actor.email) {
      const email = msg.email.trim();
      const holder = state.usersByEmail.get(email.toLowerCase());
      if (holder && holder.id !== actor.id) throw badRequest(`Email '${email}' already in use`);
      pendingEmail = { email, key: newConfirmationKey() };
    }
    let fullName: string | null = null;
    if (msg.fullName !== null && msg.fullName !== actor.fullName) {
      fullName = checkFullName(msg.fullName);
      checkUniqueName(state, fullName, actor.id);
      if (fullName === actor.fullName) fullName = null;
    }
    const changes = Object.entries(msg.changes)
      .map(([name, value]) => ({ userId: actor.id, name, value, old: state.setting(actor.id, name, DEFAULT_USER_SETTINGS[name]!) }))
      .filter((c) => c.old !== c.value);
    return { changes, byThemselves: true, fullName, userId: actor.id, password: msg.password?.newHash ?? null, pendingEmail };
  },
  apply(state, p, tx) {
    if (p.password !== null || p.pendingEmail !== null || p.fullName !== null) {
      const u = state.users.get(p.userId)!;
      const next: UserRecord = { ...u, passwordHash: p.password ?? u.passwordHash, pendingEmail: p.pendingEmail ?? u.pendingEmail, fullName: p.fullName ?? u.fullName };
      state.indexUser(next);
      tx.write(T.users.at(state.realmId, u.id).put(next));
    }
    for (const c of p.changes) writeSetting(state, tx, c.userId, c.name, c.value, p.byThemselves);
    // For the gateway, not the client: whose stored drafts go now that they are no
    // longer synchronized, and the confirmation link to mail to a new address.
    return {
      draftsOff: p.changes.filter((c) => c.name === 'enable_drafts_synchronization' && c.value === false).map((c) => c.userId),
      confirmEmail: p.pendingEmail,
    };
  },
  events(state, p) {
    const out: Delivery[] = [];
    if (p.fullName !== null) out.push(userUpdate(state, p.userId, { user_id: p.userId, full_name: p.fullName }));
    for (const c of p.changes) {
      out.push(...settingEvents(state, c.userId, c.name, c.value));
      if (c.name === 'email_address_visibility') out.push(...emailVisibilityEvents(state, c.userId, Number(c.old)));
      if (c.name === 'allow_private_data_export') out.push(consentEvent(state, c.userId, c.value === true));
    }
    return out;
  },
});

/** Internal: confirms a pending email change by the key its link carries. */
export const confirmEmailChange = action({
  type: 'confirmEmailChange',
  fields: z.object({ key: z.string() }),
  check(state, msg) {
    if (msg.caller.userId !== null) throw badRequest('Only the server confirms email changes');
    const u = [...state.users.values()].find((x) => x.pendingEmail?.key === msg.key);
    if (!u || !u.isActive) throw badRequest('Invalid or expired confirmation link.');
    const email = u.pendingEmail!.email;
    const holder = state.usersByEmail.get(email.toLowerCase());
    if (holder && holder.id !== u.id) throw badRequest(`Email '${email}' already in use`);
    return { userId: u.id, email };
  },
  apply(state, p, tx) {
    const next = { ...state.users.get(p.userId)!, email: p.email, pendingEmail: null };
    state.indexUser(next);
    tx.write(T.users.at(state.realmId, p.userId).put(next));
    noteAccountAddresses(tx, [p.userId]);
    return { revoked: [p.userId], email: p.email };
  },
  // The real address to those who may see it; the new API address only when it is the real one (Zulip's do_change_user_delivery_email).
  events(state, p) {
    const u = state.users.get(p.userId)!;
    const visibility = emailVisibility(state, u);
    const audience = userAudience(state, p.userId);
    const out = [toUsers(state.realmId, audience.filter((id) => canSeeDeliveryEmail(state.users.get(id)!, p.userId, visibility)), { type: 'realm_user', op: 'update', person: { user_id: p.userId, delivery_email: p.email } })];
    if (visibility === EmailVisibility.EVERYONE) out.push(userUpdate(state, p.userId, { user_id: p.userId, new_email: p.email }));
    return out;
  },
});

/** PATCH /realm/user_settings_defaults: administrators; changes only users created later. */
export const updateUserDefaults = action({
  type: 'updateUserDefaults',
  fields: z.object({ changes: Changes }),
  check(state, msg) {
    const actor = actingUser(state, msg.caller);
    if (!isAdmin(actor)) throw adminRequired();
    checkValues(msg.changes, true);
    const current = userDefaultsOf(state);
    return Object.entries(msg.changes).filter(([k, v]) => current[k] !== v);
  },
  apply(state, changes, tx) {
    if (changes.length === 0) return {};
    state.userDefaults = { ...state.userDefaults, ...Object.fromEntries(changes) };
    tx.write(T.realmUserDefaults.at(state.realmId).put(state.userDefaults));
    return {};
  },
  events(state, changes) {
    return changes.map(([property, value]) => toRealm(state.realmId, { type: 'realm_user_settings_defaults', op: 'update', property, value }));
  },
});
