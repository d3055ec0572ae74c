/**
 * API keys: POST /fetch_api_key (email and password, the way zulip-terminal
 * and the mobile apps log in) and POST /users/me/api_key/regenerate.
 *
 * Only a SHA-256 of each key is stored, so a key cannot be handed out twice:
 * each login issues a new key (at most MAX_API_KEYS per user, the oldest
 * retired first), and regenerating retires every key but the new one. The
 * gateway checks the password against the hash `passwordCheck` returns, off
 * the mailbox; `issueApiKey` then refuses if the hash changed meanwhile.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { newApiKey, sha256Hex } from '../../../../lib/secrets.ts';
import { T } from '../../../../storage/tables.ts';
import { type Delivery, toUsers } from '../../../events/delivery.ts';
import { defineAction, defineQuery, type Tx } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { noteLogin } from '../notifications/login_email.ts';
import { userUpdate } from '../../rules/people.ts';
import type { RealmState } from '../../state/state.ts';
import { MAX_API_KEYS } from './users.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const authenticationFailed = (): ApiError => new ApiError('AUTHENTICATION_FAILED', 'Your username or password is incorrect', 401);
export const userDeactivated = (): ApiError => new ApiError('USER_DEACTIVATED', 'Account is deactivated', 401);

/** Internal (server caller only): the password hash to check a login against. */
export const passwordCheck = query({
  type: 'passwordCheck',
  fields: z.object({ email: z.string() }),
  run(state, msg) {
    if (msg.caller.userId !== null) throw badRequest('Only the server checks passwords');
    const u = state.usersByEmail.get(msg.email.trim().toLowerCase());
    return u ? { userId: u.id, passwordHash: u.passwordHash } : { userId: null, passwordHash: null };
  },
});

/** Internal (server caller only): issues a new API key to a user whose password the gateway verified. */
export const issueApiKey = action({
  type: 'issueApiKey',
  fields: z.object({ userId: z.number().int(), passwordHash: z.string(), userAgent: z.string().max(2000).default(''), ip: z.string().max(100).default('') }),
  check(state, msg) {
    if (msg.caller.userId !== null) throw badRequest('Only the server issues API keys');
    const u = state.users.get(msg.userId);
    if (!u || u.passwordHash !== msg.passwordHash) throw authenticationFailed();
    if (!u.isActive) throw userDeactivated();
    return { ...loginPlan(state, u.id), device: { userAgent: msg.userAgent, ip: msg.ip } };
  },
  apply(state, p, tx) {
    // Zulip mails a login through POST /fetch_api_key too (process_api_key_fetch_authenticate_result).
    noteLogin(state, p.userId, p.device, tx);
    return grantKey(state, p, tx);
  },
  events: (state, p) => loginEvents(state, p),
});

/** A login's plan: the user, the new key (made in `check`), and whether it is their first login. */
export interface Login {
  userId: number;
  key: string;
  firstLogin: boolean;
}

/** A login that passed its check (password or token): the user gets a new key, kept as its hash only. */
export function loginPlan(state: Readonly<RealmState>, userId: number): Login {
  const u = state.users.get(userId)!;
  return { userId, key: newApiKey(), firstLogin: !u.loggedIn };
}

/** Adds a login's key to the user (the oldest beyond MAX_API_KEYS retired). */
export function grantKey(state: RealmState, p: Login, tx: Tx) {
  const u = state.users.get(p.userId)!;
  const now = Date.now();
  const apiKeys = [...u.apiKeys, { hash: sha256Hex(p.key), created: Math.floor(now / 1000) }].slice(-MAX_API_KEYS);
  // FL 475: an API-created user's date_joined becomes their first login.
  const next = { ...u, apiKeys, ...(p.firstLogin ? { loggedIn: true, dateJoined: new Date(now).toISOString() } : {}) };
  state.indexUser(next);
  tx.write(T.users.at(state.realmId, u.id).put(next));
  return { api_key: p.key, email: u.email, user_id: u.id };
}

export function loginEvents(state: Readonly<RealmState>, p: Login): Delivery[] {
  if (!p.firstLogin) return [];
  const u = state.users.get(p.userId)!;
  return [userUpdate(state, u.id, { user_id: u.id, date_joined: u.dateJoined })];
}

/** Makes `key` the user's only API key (every older one stops working); returns the user. */
export function replaceKeys(state: RealmState, tx: Tx, userId: number, key: string) {
  const u = state.users.get(userId)!;
  const next = { ...u, apiKeys: [{ hash: sha256Hex(key), created: Math.floor(Date.now() / 1000) }] };
  state.indexUser(next);
  tx.write(T.users.at(state.realmId, u.id).put(next));
  return next;
}

/**
 * POST /users/me/api_key/regenerate: a new key; every older key stops working.
 * Since FL 492 the user's E2EE push registrations go too (client devices, each
 * with its `device` remove event), so no encrypted notification reaches a
 * device that was logged out.
 */
export const regenerateApiKey = action({
  type: 'regenerateApiKey',
  fields: z.object({}),
  check(state, msg) {
    const userId = actingUser(state, msg.caller).id;
    return {
      userId,
      key: newApiKey(),
      devices: [...(state.clientDevices.get(userId)?.keys() ?? [])],
    };
  },
  apply(state, p, tx) {
    replaceKeys(state, tx, p.userId, p.key);
    for (const deviceId of p.devices) {
      state.forgetClientDevice(p.userId, deviceId);
      tx.write(T.clientDevices.at(state.realmId, p.userId, deviceId).delete());
    }
    return { api_key: p.key, revoked: [p.userId] };
  },
  events: (state, p) => p.devices.map((deviceId) => toUsers(state.realmId, [p.userId], { type: 'device', op: 'remove', device_id: deviceId })),
});
