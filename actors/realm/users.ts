/** Members: authentication, listing and creation (POST /users). */
import { randomBytes, scryptSync } from 'node:crypto';
import { ApiError, adminRequired, badRequest, unauthorized } from '../../lib/errors.ts';
import { formatUser } from '../format.ts';
import { Role, type UserRecord } from '../model.ts';
import type { Caller } from '../protocol.ts';
import type { ActorContext } from '../runtime/context.ts';
import { Parked } from '../runtime/mailbox.ts';
import type { RealmState } from './state.ts';

const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A 32-character API key from a CSPRNG. */
export function newApiKey(): string {
  const bytes = randomBytes(32);
  let key = '';
  for (const b of bytes) key += KEY_ALPHABET[b % KEY_ALPHABET.length];
  return key;
}

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export function authenticate(state: RealmState, email: string, apiKey: string): Caller {
  const user = state.usersByKey.get(apiKey);
  if (!user || user.email.toLowerCase() !== email.trim().toLowerCase()) throw unauthorized('Invalid API key');
  if (!user.isActive) throw unauthorized('Account is deactivated');
  return { realmId: state.realmId, userId: user.id, email: user.email, role: user.role, isBot: user.isBot };
}

export function requireUser(state: RealmState, userId: number): UserRecord {
  const user = state.users.get(userId);
  if (!user || !user.isActive) throw unauthorized('Account is deactivated');
  return user;
}

export function listUsers(state: RealmState, userIds: number[] | null, clientExtavatar: boolean): { members: unknown[] } {
  let users = [...state.users.values()];
  if (userIds) {
    for (const id of userIds) if (!state.users.has(id)) throw badRequest(`Invalid user ID: ${id}`);
    const wanted = new Set(userIds);
    users = users.filter((u) => wanted.has(u.id));
  }
  return { members: users.map((u) => formatUser(u, clientExtavatar)) };
}

export interface NewUser {
  email: string;
  fullName: string;
  role: number;
  isBot?: boolean;
  botOwnerId?: number | null;
  canCreateUsers?: boolean;
  password?: string | null;
}

/** Builds a user record and the writes that persist it. */
export function buildUser(state: RealmState, n: NewUser) {
  const { id, op } = state.takeObjectId();
  const user: UserRecord = {
    id,
    email: n.email,
    fullName: n.fullName,
    role: n.role,
    isBot: n.isBot ?? false,
    botType: n.isBot ? 1 : null,
    botOwnerId: n.botOwnerId ?? null,
    isActive: true,
    apiKey: newApiKey(),
    passwordHash: n.password ? hashPassword(n.password) : null,
    dateJoined: new Date().toISOString(),
    timezone: '',
    canCreateUsers: n.canCreateUsers ?? false,
  };
  return { user, ops: [op, { op: 'put' as const, table: 'users' as const, pk: state.pk, ck: id, value: user }] };
}

/** POST /users: administrators holding `can_create_users` only. */
export function createUser(
  state: RealmState,
  ctx: ActorContext,
  actorId: number,
  email: string,
  password: string,
  fullName: string,
): Parked<{ user_id: number }> {
  const actor = requireUser(state, actorId);
  if (actor.role > Role.ADMIN) throw adminRequired();
  if (!actor.canCreateUsers) throw new ApiError('BAD_REQUEST', 'User not authorized to create users', 400);
  const name = fullName.trim();
  if (!name) throw badRequest('Name too short!');
  if (name.length > 100) throw badRequest('Name too long!');
  if (state.usersByEmail.has(email.toLowerCase())) throw badRequest(`Email '${email}' already in use`);
  const { user, ops } = buildUser(state, { email, fullName: name, role: Role.MEMBER, password });
  state.indexUser(user);
  return new Parked(
    ctx.journal.append(ops).then(() => {
      const everyone = [...state.users.values()].filter((u) => u.isActive).map((u) => u.id);
      ctx.publish({ kind: 'event', realmId: state.realmId, userIds: everyone, event: { type: 'realm_user', op: 'add', person: formatUser(user, false) } });
      return { user_id: user.id };
    }),
  );
}
