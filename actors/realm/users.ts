/** Members: authentication, listing, creation (POST /users) and the realm's first users. */
import { randomBytes, scryptSync } from 'node:crypto';
import { z } from 'zod';
import { adminRequired, badRequest, unauthorized } from '../../lib/errors.ts';
import { T, type UserRecord } from '../../storage/tables.ts';
import { toUsers } from '../events/delivery.ts';
import { formatUser } from '../format.ts';
import { isAdmin, Role } from '../model.ts';
import { defineAction, defineQuery, type Tx } from '../runtime/action.ts';
import { actingUser, activeUsers } from './access.ts';
import type { RealmState } from './state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

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

/** What an authenticated request knows of its caller. */
export interface Authenticated {
  realmId: number;
  userId: number;
  email: string;
  role: number;
  isBot: boolean;
}

export const authenticate = query({
  type: 'authenticate',
  fields: z.object({ email: z.string(), apiKey: z.string() }),
  run(state, msg): Authenticated {
    const user = state.usersByKey.get(msg.apiKey);
    if (!user || user.email.toLowerCase() !== msg.email.trim().toLowerCase()) throw unauthorized('Invalid API key');
    if (!user.isActive) throw unauthorized('Account is deactivated');
    return { realmId: state.realmId, userId: user.id, email: user.email, role: user.role, isBot: user.isBot };
  },
});

export const listUsers = query({
  type: 'listUsers',
  fields: z.object({ userIds: z.array(z.number().int()).nullable(), clientExtavatar: z.boolean() }),
  run(state, msg) {
    actingUser(state, msg.caller);
    let users = [...state.users.values()];
    if (msg.userIds) {
      for (const id of msg.userIds) if (!state.users.has(id)) throw badRequest(`Invalid user ID: ${id}`);
      const wanted = new Set(msg.userIds);
      users = users.filter((u) => wanted.has(u.id));
    }
    return { members: users.map((u) => formatUser(u, msg.clientExtavatar)) };
  },
});

interface NewUser {
  email: string;
  fullName: string;
  role: number;
  isBot?: boolean;
  botOwnerId?: number | null;
  canCreateUsers?: boolean;
  /** Already hashed (hashing is slow: it happens in `check`, never in `apply`). */
  passwordHash: string | null;
}

/** Creates a user record in memory and its write. */
function addUser(state: RealmState, tx: Tx, n: NewUser): UserRecord {
  const id = state.take('user', tx);
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
    passwordHash: n.passwordHash,
    dateJoined: new Date().toISOString(),
    timezone: '',
    canCreateUsers: n.canCreateUsers ?? false,
  };
  state.indexUser(user);
  tx.write(T.users.at(state.realmId, id).put(user));
  return user;
}

/** POST /users: administrators holding `can_create_users` only. */
export const createUser = action({
  type: 'createUser',
  fields: z.object({ email: z.string(), password: z.string(), fullName: z.string() }),
  check(state, msg) {
    const actor = actingUser(state, msg.caller);
    if (!isAdmin(actor)) throw adminRequired();
    if (!actor.canCreateUsers) throw badRequest('User not authorized to create users');
    const fullName = msg.fullName.trim();
    if (!fullName) throw badRequest('Name too short!');
    if (fullName.length > 100) throw badRequest('Name too long!');
    if (state.usersByEmail.has(msg.email.toLowerCase())) throw badRequest(`Email '${msg.email}' already in use`);
    return { email: msg.email, fullName, role: Role.MEMBER, passwordHash: hashPassword(msg.password) } satisfies NewUser;
  },
  apply(state, plan, tx) {
    return { user_id: addUser(state, tx, plan).id };
  },
  events(state, _plan, reply) {
    return [toUsers(state.realmId, activeUsers(state), { type: 'realm_user', op: 'add', person: formatUser(state.users.get(reply.user_id)!, false) })];
  },
});

const BootstrapUser = z.object({
  email: z.string(),
  fullName: z.string(),
  role: z.number().int(),
  isBot: z.boolean().optional(),
  canCreateUsers: z.boolean().optional(),
  password: z.string().optional(),
});

/** Internal (the gateway never sends it): creates the realm with its first users if it does not exist yet. */
export const bootstrap = action({
  type: 'bootstrap',
  fields: z.object({ name: z.string(), users: z.array(BootstrapUser) }),
  check(state, msg) {
    if (msg.caller.userId !== null) throw unauthorized('Only the server bootstraps a realm');
    if (state.meta) return { create: null, emails: msg.users.map((u) => u.email) };
    const users = msg.users.map((u) => ({ ...u, passwordHash: u.password ? hashPassword(u.password) : null }));
    return { create: { name: msg.name, users }, emails: msg.users.map((u) => u.email) };
  },
  apply(state, plan, tx) {
    if (plan.create) {
      const meta = { name: plan.create.name, stringId: '', dateCreated: Math.floor(Date.now() / 1000), topicsPolicy: 'allow_empty_topic' as const, emptyTopicDisplayName: 'general chat', canMentionManyUsersGroup: 6 };
      state.meta = meta;
      tx.write(T.realms.at(state.realmId).put(meta));
      let ownerId: number | null = null;
      for (const spec of plan.create.users) {
        const u = addUser(state, tx, { ...spec, botOwnerId: spec.isBot ? ownerId : null });
        if (spec.role === Role.OWNER && ownerId === null) ownerId = u.id;
      }
    }
    return {
      users: plan.emails
        .map((email) => state.usersByEmail.get(email.toLowerCase()))
        .filter((u) => u !== undefined)
        .map((u) => ({ userId: u.id, email: u.email, apiKey: u.apiKey, fullName: u.fullName, role: u.role, isBot: u.isBot })),
    };
  },
});
