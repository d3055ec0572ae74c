/**
 * What the deployment's operator does to an organization from the command
 * line (`npx parley users ...`), beyond what the API lets its owner do:
 * find the owner the CLI acts as, reset a user's API key, set a password.
 * (`users billing-admin`, which set Zulip's `is_billing_admin`, is retired:
 * Zulip 12 has no such flag, FL 363.)
 * Only the server calls these (the CLI over the bus); a user never can.
 */
import { z } from 'zod';
import { badRequest, unauthorized } from '../../../../lib/errors.ts';
import { hashPassword, newApiKey } from '../../../../lib/secrets.ts';
import { replaceKeys } from './api_keys.ts';
import { T } from '../../../../storage/tables.ts';
import { Role } from '../../../model.ts';
import { type Caller, defineAction, defineQuery } from '../../../runtime/action.ts';
import { toRealm } from '../../../events/delivery.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

function serverOnly(caller: Caller): void {
  if (caller.userId !== null) throw unauthorized('Only the server may do this');
}

function target(state: Readonly<RealmState>, userId: number) {
  const u = state.users.get(userId);
  if (!u) throw badRequest(`No user with ID ${userId}`);
  return u;
}

/**
 * The organization's longest-standing active human owner: the CLI acts as
 * them for what the API already offers owners (listing, roles,
 * deactivation), so the realm's own rules and events apply unchanged.
 * O(users) once per CLI command.
 */
export const operatorIdentity = query({
  type: 'operatorIdentity',
  fields: z.object({}),
  run(state, msg) {
    serverOnly(msg.caller);
    if (!state.meta) throw badRequest('No such organization');
    let owner: number | null = null;
    for (const u of state.users.values()) if (u.isActive && !u.isBot && u.role === Role.OWNER && (owner === null || u.id < owner)) owner = u.id;
    if (owner === null) throw badRequest('The organization has no active owner');
    return { userId: owner, name: state.meta.name, subdomain: state.meta.stringId };
  },
});

/** A new API key for a user; every older key stops working (the CLI announces the revocation to the gateways). */
export const resetApiKey = action({
  type: 'resetApiKey',
  fields: z.object({ userId: z.number().int() }),
  check(state, msg) {
    serverOnly(msg.caller);
    return { userId: target(state, msg.userId).id, key: newApiKey() };
  },
  apply(state, p, tx) {
    const u = replaceKeys(state, tx, p.userId, p.key);
    return { api_key: p.key, email: u.email, user_id: u.id, revoked: [u.id] };
  },
});

/** Sets a user's password (hashed here, before the check; the plain text is never stored or logged). */
export const setPassword = action({
  type: 'setPassword',
  fields: z.object({ userId: z.number().int(), password: z.string().min(1).max(1000) }),
  prepare: (_state, msg) => hashPassword(msg.password),
  check(state, msg, passwordHash: string) {
    serverOnly(msg.caller);
    return { userId: target(state, msg.userId).id, passwordHash };
  },
  apply(state, p, tx) {
    const next = { ...state.users.get(p.userId)!, passwordHash: p.passwordHash };
    state.indexUser(next);
    tx.write(T.users.at(state.realmId, p.userId).put(next));
    return { user_id: p.userId };
  },
});

/**
 * Asks every web client of the organization to reload its code (Zulip's
 * `web_reload_client` event, FL 240: after a deploy, Tornado sends it to
 * the queues it loaded; here the operator decides when, `parley
 * reload-clients`). Changes nothing: one event to every queue of the realm,
 * expanded where the queues are (O(1) here). `immediate`: reload now rather
 * than spread over minutes.
 */
export const reloadClients = action({
  type: 'reloadClients',
  fields: z.object({ immediate: z.boolean() }),
  check(state, msg) {
    serverOnly(msg.caller);
    if (!state.meta) throw badRequest('No such organization');
    return { immediate: msg.immediate };
  },
  apply: () => ({}),
  events: (state, p) => [toRealm(state.realmId, { type: 'web_reload_client', immediate: p.immediate })],
});
