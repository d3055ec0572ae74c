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
import { ApiError, badRequest } from '../../lib/errors.ts';
import { newApiKey, sha256Hex } from '../../lib/secrets.ts';
import { T } from '../../storage/tables.ts';
import { defineAction, defineQuery } from '../runtime/action.ts';
import { actingUser } from './access.ts';
import { userUpdate } from './people.ts';
import type { RealmState } from './state.ts';
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
  fields: z.object({ userId: z.number().int(), passwordHash: z.string() }),
  check(state, msg) {
    if (msg.caller.userId !== null) throw badRequest('Only the server issues API keys');
    const u = state.users.get(msg.userId);
    if (!u || u.passwordHash !== msg.passwordHash) throw authenticationFailed();
    if (!u.isActive) throw userDeactivated();
    return { userId: u.id, key: newApiKey(), firstLogin: !u.loggedIn };
  },
  apply(state, p, tx) {
    const u = state.users.get(p.userId)!;
    const now = Date.now();
    const apiKeys = [...u.apiKeys, { hash: sha256Hex(p.key), created: Math.floor(now / 1000) }].slice(-MAX_API_KEYS);
    // FL 475: an API-created user's date_joined becomes their first login.
    const next = { ...u, apiKeys, ...(p.firstLogin ? { loggedIn: true, dateJoined: new Date(now).toISOString() } : {}) };
    state.indexUser(next);
    tx.write(T.users.at(state.realmId, u.id).put(next));
    return { api_key: p.key, email: u.email, user_id: u.id };
  },
  events(state, p) {
    if (!p.firstLogin) return [];
    const u = state.users.get(p.userId)!;
    return [userUpdate(state, u.id, { user_id: u.id, date_joined: u.dateJoined })];
  },
});

/** POST /users/me/api_key/regenerate: a new key; every older key stops working. */
export const regenerateApiKey = action({
  type: 'regenerateApiKey',
  fields: z.object({}),
  check(state, msg) {
    return { userId: actingUser(state, msg.caller).id, key: newApiKey() };
  },
  apply(state, p, tx) {
    const u = state.users.get(p.userId)!;
    const next = { ...u, apiKeys: [{ hash: sha256Hex(p.key), created: Math.floor(Date.now() / 1000) }] };
    state.indexUser(next);
    tx.write(T.users.at(state.realmId, u.id).put(next));
    return { api_key: p.key, revoked: [u.id] };
  },
});
