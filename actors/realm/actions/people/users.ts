/**
 * Members: authentication, reads (GET /users, /users/me, /users/{id} and by
 * email), creation (POST /users), administration (PATCH /users/{id} with
 * the role rules; deactivation and reactivation; DELETE /users/me) and the
 * realm's first users.
 *
 * Passwords arrive here already hashed, and are checked in the gateway
 * (`lib/secrets.ts`): slow hashing never runs in the realm's mailbox.
 */
import { emailProblem } from '../organization/realm_domains.ts';
import { EmailVisibility, fakeEmailDomain, userByApiEmail } from '../../rules/emails.ts';
import { channelActivity, channelSettingsNamingUser, defaultStreamIds } from '../channels/streams.ts';
import { z } from 'zod';
import { adminRequired, ApiError, badRequest, realmDeactivated, unauthorized } from '../../../../lib/errors.ts';
import { hashPassword, newApiKey, sameDigest, sha256Hex } from '../../../../lib/secrets.ts';
import { type ChannelRecord, type StoredMessage, type SubscriptionRecord, T, type UserRecord } from '../../../../storage/tables.ts';
import { fnv1a } from '../../../../lib/hash.ts';
import { COLORS } from '../channels/subscriptions.ts';
import { type Delivery, toRealm, toUsers, toUsersIf, withCapability, withCapabilityToRealm } from '../../../events/delivery.ts';
import { userDeactivated } from './api_keys.ts';
import type { ClientEventBody, UserObject } from '../../../events/schema.ts';
import { formatChannel } from '../../../format.ts';
import { isAdmin, MAX_USERS_PER_BATCH, Role } from '../../../model.ts';
import { defineAction, defineQuery, type Tx } from '../../../runtime/action.ts';
import { accessRestricted, actingUser, activeUsers, canAccess, canSeeUser, channelAudience, restrictedViews, toChannelAudience } from '../../rules/access.ts';
import { applyProfileData, checkProfileData, ProfileDataEntry, profileDataEvents, type ProfileChange } from './profile_fields.ts';
import { accessChangeEvents, realmUserAdd, roleGroupEvents, roleGroups, userAudience, userObject, usersFor, userUpdate } from '../../rules/people.ts';
import { realmGroupSetting, realmSettingsNamingUser } from '../organization/realm_settings.ts';
import { forgetUserDataLater } from './deleted_user_data.ts';
import { anyKind, deleteMessagesLater } from './deactivated_user_messages.ts';
import { noteAccountAddresses } from '../../state/account_index.ts';
import { type RealmState, uniqueNameKey } from '../../state/state.ts';
import { settingsNamingUser } from '../../rules/groups.ts';
import { ensureSystemBots, sendWelcome, systemBotDeliveries } from '../organization/system_bots.ts';
import { cancelOnboarding, noteNewHuman } from '../notifications/signup_email.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

/** A user keeps at most this many API keys (one per login); a new login past it retires the oldest. */
export const MAX_API_KEYS = 16;
const MAX_NAME_LENGTH = 100;

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
  /** `email` null: the key alone (Zulip's `?api_key=` on file URLs, `authenticated_uploads_api_view`). */
  fields: z.object({ email: z.string().nullable(), apiKey: z.string() }),
  // Authentication never waits behind the organization's writes (`QueryDef.concurrent`).
  concurrent: true,
  run(state, msg): Authenticated {
    // Zulip's RealmDeactivatedError, before the key is looked at (the gateway refuses such hosts first).
    if (state.meta?.deactivated) throw realmDeactivated();
    const hash = sha256Hex(msg.apiKey);
    const user = state.usersByKeyHash.get(hash);
    const entry = user?.apiKeys.find((k) => sameDigest(k.hash, hash));
    if (!user || !entry || (msg.email !== null && user.email.toLowerCase() !== msg.email.trim().toLowerCase())) throw unauthorized('Invalid API key');
    // Zulip's UserDeactivatedError: a client tells a deactivated account from a wrong key by the code.
    if (!user.isActive) throw userDeactivated();
    return { realmId: state.realmId, userId: user.id, email: user.email, role: user.role, isBot: user.isBot };
  },
});

const ReadOptions = { clientExtavatar: z.boolean(), includeCustomProfileFields: z.boolean() };

export const listUsers = query({
  type: 'listUsers',
  fields: z.object({ userIds: z.array(z.number().int()).nullable(), ...ReadOptions }),
  run(state, msg) {
    const viewer = actingUser(state, msg.caller);
    let users = [...state.users.values()];
    if (msg.userIds) {
      for (const id of msg.userIds) if (!state.users.has(id)) throw badRequest(`Invalid user ID: ${id}`);
      const wanted = new Set(msg.userIds);
      users = users.filter((u) => wanted.has(u.id));
    }
    // Users the caller may not see are left out (Zulip since FL 437), IDs asked for included.
    return { members: usersFor(state, viewer, users, { extavatar: msg.clientExtavatar, profile: msg.includeCustomProfileFields, incomplete: true }) };
  },
});

/** GET /users/{user_id} and GET /users/{email}: deactivated users and bots included; a user the caller may not see is refused. */
export const getUser = query({
  type: 'getUser',
  fields: z.object({ user: z.union([z.number().int(), z.string()]), ...ReadOptions }),
  run(state, msg) {
    const viewer = actingUser(state, msg.caller);
    // By the address the API knows the user by, or the real one where the caller may see it (Zulip since FL 302).
    const u = typeof msg.user === 'number' ? state.person(msg.user) : userByApiEmail(state, msg.user, viewer);
    if (!u) throw badRequest('No such user');
    if (!canSeeUser(state, viewer, u)) throw badRequest('Insufficient permission');
    return { user: userObject(state, u, viewer, { extavatar: msg.clientExtavatar, profile: msg.includeCustomProfileFields }) };
  },
});

/** GET /users/me: the caller's own user object, with real avatar URL and profile data. */
export const getOwnUser = query({
  type: 'getOwnUser',
  fields: z.object({}),
  run(state, msg) {
    const u = actingUser(state, msg.caller);
    return { ...userObject(state, u, u, { extavatar: false, profile: true }), max_message_id: state.maxMessageId > 0 ? state.maxMessageId : -1 };
  },
});

/** Zulip's full-name rules: trimmed, 1 to 100 characters, no control characters. */
export function checkFullName(raw: string): string {
  const name = raw.trim();
  if ([...name].length > MAX_NAME_LENGTH) throw badRequest('Name too long!');
  if (!name) throw badRequest('Name too short!');
  if (/[\u0000-\u001f\u007f-\u009f*`\\>"@]/.test(name)) throw badRequest('Invalid characters in name!');
  return name;
}

/**
 * Zulip's `require_unique_names` (FL 246): when the organization requires it,
 * no other user, active or not, bot or human, has the name, compared as Zulip
 * does (NFKC, case-folded): one lookup in `usersByUniqueName`, O(1) (a loop over
 * every user made a bulk import O(users x batch)).
 */
export function checkUniqueName(state: Readonly<RealmState>, name: string, selfId: number | null): void {
  if (!state.org.settings.requireUniqueNames) return;
  for (const id of state.usersByUniqueName.get(uniqueNameKey(name)) ?? []) if (id !== selfId) throw badRequest('Unique names required in this organization.');
}

export interface NewUser {
  email: string;
  fullName: string;
  role: number;
  isBot?: boolean;
  botOwnerId?: number | null;
  canCreateUsers?: boolean;
  canChangeUserEmails?: boolean;
  passwordHash: string | null;
  /** False for users created through the API: their date_joined becomes their first login. */
  loggedIn: boolean;
  /** The first API key's plain text, made in `check` (only its hash is kept); empty for none. */
  apiKey: string;
  isSystemBot?: boolean;
  botType?: number;
  service?: UserRecord['service'];
}

/** Creates a user record, with the organization's current defaults as settings, and its writes. */
export function addUser(state: RealmState, tx: Tx, n: NewUser): UserRecord {
  const id = state.take('user', tx);
  const now = Date.now();
  const user: UserRecord = {
    id,
    email: n.email,
    fullName: n.fullName,
    role: n.role,
    isBot: n.isBot ?? false,
    botType: n.isBot ? (n.botType ?? 1) : null,
    botOwnerId: n.botOwnerId ?? null,
    isActive: true,
    apiKey: '',
    passwordHash: n.passwordHash,
    dateJoined: new Date(now).toISOString(),
    timezone: '',
    canCreateUsers: n.canCreateUsers ?? false,
    apiKeys: n.apiKey ? [{ hash: sha256Hex(n.apiKey), created: Math.floor(now / 1000) }] : [],
    loggedIn: n.loggedIn,
    canChangeUserEmails: n.canChangeUserEmails ?? false,
    profileData: {},
    status: { text: '', emojiName: '', emojiCode: '', reactionType: '' },
    pendingEmail: null,
    service: n.service ?? null,
    isSystemBot: n.isSystemBot ?? false,
    onboardingAt: null,
    onboarding: [],
    // The organization's default (FL 456); system bots keep theirs, as Zulip's have fixed images.
    avatarSource: n.isSystemBot ? 'G' : state.org.settings.defaultAvatarSource,
  };
  state.indexUser(user);
  tx.write(T.users.at(state.realmId, id).put(user));
  // A new user starts from the organization's defaults; later changes to them never reach this user.
  if (Object.keys(state.userDefaults).length) {
    const settings = { ...state.userDefaults };
    state.settings.set(id, settings);
    tx.write(T.userSettings.at(state.realmId, id).put(settings));
  }
  return user;
}

/** Subscribes a new user to those of `channelIds` that exist and are not archived; returns the channels subscribed. */
export function subscribeNewUser(state: RealmState, tx: Tx, userId: number, channelIds: number[]): number[] {
  const done: number[] = [];
  for (const id of channelIds) {
    const c = state.channels.get(id);
    if (!c || c.isArchived || state.isSubscribed(id, userId)) continue;
    const sub: SubscriptionRecord = {
      streamId: id,
      userId,
      active: true,
      color: COLORS[fnv1a(`${id}:${userId}`) % COLORS.length]!,
      pinToTop: false,
      isMuted: false,
      startMessageId: state.maxMessageId + 1,
      endMessageId: null,
      desktopNotifications: null,
      emailNotifications: null,
      pushNotifications: null,
      audibleNotifications: null,
      wildcardMentionsNotify: null,
    };
    state.indexSub(sub);
    tx.write(T.subscriptions.at(state.realmId, id, userId).put(sub));
    done.push(id);
  }
  return done;
}

/**
 * A new user's events: `realm_user` add for everyone and `peer_add` for
 * each channel's audience, each one realm-wide delivery (`realmUserAdd`,
 * `toChannelAudience`): O(channels joined), whatever the organization's
 * size. The user's own `subscription` add is not sent: a user created
 * just now has no event queue to get it (their first register reads
 * their subscriptions), and it would carry every subscriber of every
 * default channel.
 */
export function newUserEvents(state: Readonly<RealmState>, user: UserRecord, subscribed: number[]): Delivery[] {
  const out: Delivery[] = realmUserAdd(state, user);
  for (const id of subscribed) out.push(toChannelAudience(state, state.channels.get(id)!, { type: 'subscription', op: 'peer_add', stream_ids: [id], user_ids: [user.id] }, [user.id]));
  return out;
}

/** POST /users: administrators holding `can_create_users` only (and the server: the CLI). The gateway hashes the password. The user joins the default channels, as everyone who signs up does. */
export const createUser = action({
  type: 'createUser',
  fields: z.object({ email: z.string(), passwordHash: z.string(), fullName: z.string() }),
  check(state, msg) {
    // The server (the operator's CLI) may create users; a user must be an administrator allowed to.
    if (msg.caller.userId !== null) {
      const actor = actingUser(state, msg.caller);
      if (!isAdmin(actor)) throw adminRequired();
      if (!actor.canCreateUsers) throw badRequest('User not authorized to create users');
    }
    const fullName = checkFullName(msg.fullName);
    checkUniqueName(state, fullName, null);
    // Zulip's create_user_backend: the organization's address rules first, then whether the address is taken.
    const problem = emailProblem(state, msg.email);
    if (problem === 'domain') throw badRequest(`Email '${msg.email}' not allowed in this organization`);
    if (problem === 'disposable') throw badRequest('Disposable email addresses are not allowed in this organization');
    if (problem === 'plus') throw badRequest('Email addresses containing + are not allowed.');
    if (state.usersByEmail.has(msg.email.toLowerCase())) throw badRequest(`Email '${msg.email}' already in use`);
    return { email: msg.email, fullName, role: Role.MEMBER, passwordHash: msg.passwordHash, loggedIn: false, apiKey: newApiKey(), subscribed: [] as number[], welcome: [] as Array<StoredMessage | null> };
  },
  apply(state, plan, tx) {
    const user = addUser(state, tx, plan);
    noteAccountAddresses(tx, [user.id]);
    plan.subscribed = subscribeNewUser(state, tx, user.id, defaultStreamIds(state));
    // Zulip's process_new_human_user: Welcome Bot greets every new human user.
    plan.welcome = sendWelcome(state, tx, user, null);
    noteNewHuman(state, user, tx);
    return { user_id: user.id };
  },
  events(state, plan, reply) {
    return [...newUserEvents(state, state.users.get(reply.user_id)!, plan.subscribed), ...systemBotDeliveries(state, plan.welcome)];
  },
});

/** The address check of POST /users. */
const EMAIL = z.string().email();

const ImportedUser = z
  .object({
    email: z.string().min(3).max(254),
    fullName: z.string(),
    role: z.union([z.literal(Role.OWNER), z.literal(Role.ADMIN), z.literal(Role.MODERATOR), z.literal(Role.MEMBER), z.literal(Role.GUEST)]),
    /** An argon2 hash (`$argon2...`, as `hashPassword` makes, or carried over from another system), or null: no password. */
    passwordHash: z.string().nullable(),
  })
  .strict();

/**
 * A batch of an import (`parley users import`): the server only. Each user
 * as through POST /users (default channels, the organization's default
 * settings) but with the role given and no Welcome Bot message (as Zulip's
 * `bulk_create_users`); each gets an API key, returned once, here. One
 * durable commit per batch; per user, O(1 + default channels) work and one
 * realm-wide `realm_user` add, plus one `peer_add` per default channel for
 * the whole batch. An email in use fails the batch, or with `skipExisting`
 * is left out and named in the reply.
 */
export const createUsers = action({
  type: 'createUsers',
  fields: z.object({ users: z.array(ImportedUser).min(1).max(MAX_USERS_PER_BATCH), skipExisting: z.boolean() }),
  check(state, msg) {
    if (msg.caller.userId !== null) throw badRequest('Only the server may import users');
    const seen = new Set<string>();
    const skipped: string[] = [];
    const users: NewUser[] = [];
    for (const [i, u] of msg.users.entries()) {
      const key = u.email.toLowerCase();
      if (!EMAIL.safeParse(u.email).success) throw badRequest(`User ${i + 1}: invalid email '${u.email}'`);
      if (seen.has(key)) throw badRequest(`User ${i + 1}: email '${u.email}' appears twice`);
      seen.add(key);
      if (u.passwordHash !== null && !u.passwordHash.startsWith('$argon2')) throw badRequest(`User ${i + 1}: password_hash is not an argon2 hash`);
      let fullName: string;
      try {
        fullName = checkFullName(u.fullName);
        checkUniqueName(state, fullName, null);
      } catch (err) {
        throw badRequest(`User ${i + 1} (${u.email}): ${(err as Error).message}`);
      }
      if (state.usersByEmail.has(key)) {
        if (!msg.skipExisting) throw badRequest(`User ${i + 1}: email '${u.email}' already in use`);
        skipped.push(u.email);
        continue;
      }
      users.push({ email: u.email, fullName, role: u.role, passwordHash: u.passwordHash, loggedIn: false, apiKey: newApiKey() });
    }
    return { users, skipped, created: [] as Array<{ id: number; subscribed: number[] }> };
  },
  apply(state, plan, tx) {
    const defaults = defaultStreamIds(state);
    const out: Array<{ user_id: number; email: string; api_key: string }> = [];
    for (const n of plan.users) {
      const user = addUser(state, tx, n);
      plan.created.push({ id: user.id, subscribed: subscribeNewUser(state, tx, user.id, defaults) });
      out.push({ user_id: user.id, email: user.email, api_key: n.apiKey });
    }
    noteAccountAddresses(tx, out.map((u) => u.user_id));
    return { users: out, skipped: plan.skipped };
  },
  events(state, plan) {
    const out: Delivery[] = [];
    const byChannel = new Map<number, number[]>();
    for (const { id, subscribed } of plan.created) {
      out.push(...realmUserAdd(state, state.users.get(id)!));
      for (const c of subscribed) {
        let ids = byChannel.get(c);
        if (!ids) byChannel.set(c, (ids = []));
        ids.push(id);
      }
    }
    for (const [c, ids] of byChannel) out.push(toChannelAudience(state, state.channels.get(c)!, { type: 'subscription', op: 'peer_add', stream_ids: [c], user_ids: ids }, ids));
    return out;
  },
});

/** Whether `user` is the organization's only active human owner. */
function isLastOwner(state: Readonly<RealmState>, user: UserRecord): boolean {
  if (user.role !== Role.OWNER || user.isBot) return false;
  return ![...state.users.values()].some((u) => u.id !== user.id && u.isActive && !u.isBot && u.role === Role.OWNER);
}

/** Zulip's `can_admin_user`: administrators, and a bot's owner for that bot. */
const canAdminUser = (actor: UserRecord, target: UserRecord): boolean => isAdmin(actor) || (target.isBot && target.botOwnerId === actor.id);

const ownerRequired = (): ApiError => new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner', 400);

/** The target of an administrative operation (Zulip's `access_user_by_id(..., for_admin=True)`). */
function adminTarget(state: Readonly<RealmState>, actor: UserRecord, userId: number, opts: { allowDeactivated: boolean; allowBots: boolean }): UserRecord {
  const target = state.users.get(userId);
  if (!target || (target.isBot && !opts.allowBots)) throw badRequest('No such user');
  if (!target.isActive && !opts.allowDeactivated) throw badRequest('User is deactivated');
  if (!canAdminUser(actor, target)) throw badRequest('Insufficient permission');
  return target;
}

interface UpdatePlan {
  userId: number;
  oldRole: number;
  role: number | null;
  fullName: string | null;
  email: string | null;
  profile: ProfileChange[];
  /** Channels the user can see before the change (a role change may change that). */
  visibleBefore: Set<number>;
  /** Who saw whom before the change (a role change may make the user a guest who sees fewer users, or the reverse). */
  accessBefore: Map<number, Set<number>>;
}

function visibleChannels(state: Readonly<RealmState>, user: UserRecord): Set<number> {
  const out = new Set<number>();
  for (const c of state.channels.values()) if (canAccess(state, c, user)) out.add(c.id);
  return out;
}

/**
 * PATCH /users/{user_id} and PATCH /users/{email} (FL 313): full name, role
 * (owner rules), custom profile data, email. By email, the user is found as
 * GET /users/{email} finds them.
 */
export const updateUser = action({
  type: 'updateUser',
  fields: z.object({
    userId: z.union([z.number().int(), z.string()]),
    fullName: z.string().nullable(),
    role: z.number().int().nullable(),
    profileData: z.array(ProfileDataEntry).nullable(),
    newEmail: z.string().nullable(),
  }),
  check(state, msg): UpdatePlan {
    const actor = actingUser(state, msg.caller);
    const userId = typeof msg.userId === 'number' ? msg.userId : (userByApiEmail(state, msg.userId, actor)?.id ?? -1);
    const target = adminTarget(state, actor, userId, { allowDeactivated: true, allowBots: true });
    if (msg.newEmail !== null && !(actor.role === Role.OWNER && actor.canChangeUserEmails)) throw badRequest('User not authorized to change user emails');
    let role: number | null = null;
    if (msg.role !== null && msg.role !== target.role) {
      if ((msg.role === Role.OWNER || target.role === Role.OWNER) && actor.role !== Role.OWNER) throw ownerRequired();
      if (!isAdmin(actor)) throw adminRequired();
      if (isLastOwner(state, target)) throw badRequest('The owner permission cannot be removed from the only organization owner.');
      role = msg.role;
    }
    let fullName: string | null = null;
    if (msg.fullName !== null && msg.fullName.trim() !== '' && msg.fullName !== target.fullName) {
      fullName = checkFullName(msg.fullName);
      checkUniqueName(state, fullName, target.id);
      if (fullName === target.fullName) fullName = null;
    }
    const profile = msg.profileData ? checkProfileData(state, target, msg.profileData, true) : [];
    let email: string | null = null;
    if (msg.newEmail !== null && msg.newEmail !== target.email) {
      const holder = state.usersByEmail.get(msg.newEmail.toLowerCase());
      if (holder && holder.id !== target.id) throw badRequest(`Email '${msg.newEmail}' already in use`);
      email = msg.newEmail;
    }
    return { userId: target.id, oldRole: target.role, role, fullName, email, profile, visibleBefore: visibleChannels(state, target), accessBefore: role !== null ? restrictedViews(state) : new Map() };
  },
  apply(state, p, tx) {
    const u = state.users.get(p.userId)!;
    const next: UserRecord = { ...u, role: p.role ?? u.role, fullName: p.fullName ?? u.fullName, email: p.email ?? u.email };
    state.indexUser(next);
    tx.write(T.users.at(state.realmId, u.id).put(next));
    if (p.email !== null) noteAccountAddresses(tx, [u.id]);
    applyProfileData(state, u.id, p.profile, tx);
    // A changed email makes the old API email (and so the old credentials) stop working.
    return { revoked: p.email !== null ? [u.id] : [] };
  },
  events(state, p) {
    const out: Delivery[] = [];
    const id = p.userId;
    if (p.role !== null) {
      out.push(userUpdate(state, id, { user_id: id, role: p.role as UserObject['role'] }));
      out.push(...roleGroupEvents(state, id, p.oldRole, p.role));
      out.push(...channelVisibilityEvents(state, state.users.get(id)!, p.visibleBefore));
      out.push(...accessChangeEvents(state, p.accessBefore));
    }
    // A bot's name is told by realm_user events only since FL 474 (realm_bot objects carry no name).
    if (p.fullName !== null) out.push(userUpdate(state, id, { user_id: id, full_name: p.fullName }));
    out.push(...profileDataEvents(state, id, p.profile));
    if (p.email !== null) {
      out.push(userUpdate(state, id, { user_id: id, delivery_email: p.email }));
      out.push(userUpdate(state, id, { user_id: id, new_email: p.email }));
    }
    return out;
  },
});

/**
 * After a role change: channels the user now sees (created for them, with
 * subscribers) or no longer sees. Archived channels only for the user's
 * clients with the `archived_channels` capability: the others never list them.
 */
function channelVisibilityEvents(state: Readonly<RealmState>, user: UserRecord, before: Set<number>): Delivery[] {
  const after = visibleChannels(state, user);
  const gained = [...after].filter((id) => !before.has(id)).map((id) => state.channels.get(id)!);
  const lost = [...before].filter((id) => !after.has(id)).map((id) => state.channels.get(id)!);
  const out: Delivery[] = [];
  for (const archived of [false, true]) {
    const to = (event: ClientEventBody): Delivery => (archived ? toUsersIf(state.realmId, [user.id], event, { name: 'archived_channels', value: true }) : toUsers(state.realmId, [user.id], event));
    const shown = gained.filter((c) => c.isArchived === archived);
    if (shown.length) {
      // Told with no subscribers: the peer_add events that follow name them and count them in (FL 394).
      out.push(to({ type: 'stream', op: 'create', streams: shown.map((c) => formatChannel(c, { ...channelActivity(state, c), subscriberCount: 0 })) }));
      for (const c of shown) {
        const subscribers = state.activeSubscribers(c.id);
        if (subscribers.length) out.push(to({ type: 'subscription', op: 'peer_add', stream_ids: [c.id], user_ids: subscribers.sort((a, b) => a - b) }));
      }
    }
    const hidden = lost.filter((c) => c.isArchived === archived).map((c) => c.id);
    if (hidden.length) out.push(to({ type: 'stream', op: 'delete', stream_ids: hidden }));
  }
  return out;
}

/** The channels a user is subscribed to. */
function subscribedChannels(state: Readonly<RealmState>, userId: number): ChannelRecord[] {
  const out: ChannelRecord[] = [];
  for (const [channelId, subs] of state.subs) if (subs.get(userId)?.active) out.push(state.channels.get(channelId)!);
  return out;
}

function setActive(state: RealmState, tx: Tx, userId: number, active: boolean): void {
  // Zulip's do_deactivate_user clears the user's scheduled emails: onboarding emails do not resume on reactivation.
  if (!active) cancelOnboarding(state, userId, tx);
  const next = { ...state.users.get(userId)!, isActive: active };
  state.indexUser(next);
  tx.write(T.users.at(state.realmId, userId).put(next));
}

/**
 * Events for deactivated users: everyone who may see them (and the user,
 * whose queues then end) learns it; their channels' peers see them leave.
 * Users who may not see them (Zulip's users_without_access_to_deactivated_user)
 * learn instead that they left their groups and the permissions naming them
 * (FL 303): a deactivated user is in no group.
 */
function deactivationEvents(state: Readonly<RealmState>, userIds: number[]): Delivery[] {
  const out: Delivery[] = [];
  for (const id of userIds) {
    const update = userUpdate(state, id, { user_id: id, is_active: false });
    // No realm_bot update for a bot since FL 474: realm_user events tell it.
    out.push(update);
    // Users who may not see them: none while everyone sees everyone (no walk of the organization).
    const told = accessRestricted(state) ? new Set(userAudience(state, id)) : null;
    const others = told ? activeUsers(state).filter((x) => !told.has(x)) : [];
    if (others.length) {
      const user = state.users.get(id)!;
      for (const g of [...roleGroups(user.role), ...[...state.groups.values()].filter((x) => x.members.includes(id)).map((x) => x.id)]) {
        const event = { type: 'user_group' as const, op: 'remove_members' as const, group_id: g, user_ids: [id] };
        out.push(...(state.groups.get(g)?.deactivated ? withCapability(state.realmId, others, 'include_deactivated_groups', event, null) : [toUsers(state.realmId, others, event)]));
      }
      out.push(...settingsNamingUser(state, id, others), ...realmSettingsNamingUser(state, id, others), ...channelSettingsNamingUser(state, id, others));
    }
    for (const c of subscribedChannels(state, id)) out.push(toChannelAudience(state, c, { type: 'subscription', op: 'peer_remove', stream_ids: [c.id], user_ids: [id] }, [id]));
  }
  return out;
}

/** A user and the active bots they own: deactivating a user deactivates their bots. */
function withOwnedBots(state: Readonly<RealmState>, user: UserRecord): number[] {
  const bots = [...state.users.values()].filter((u) => u.isBot && u.isActive && u.botOwnerId === user.id).map((u) => u.id);
  return [...bots, user.id];
}

/** What DELETE /users/{user_id} does besides deactivating (FL 459 `actions`), each for the user's bots too. */
const DeactivationActions = z.object({
  /** Renames them "Deleted user" (a bot: "Deactivated bot"); their avatar is the default one already (no uploads here). */
  deleteProfile: z.boolean().default(false),
  deletePublicChannelMessages: z.boolean().default(false),
  deletePrivateChannelMessages: z.boolean().default(false),
  deleteDirectMessages: z.boolean().default(false),
});

/** The name a deleted profile gets (Zulip's do_deactivate_user with `delete_profile`). */
export const deletedName = (u: UserRecord): string => (u.isBot ? 'Deactivated bot' : 'Deleted user');

/**
 * DELETE /users/{user_id}: deactivates a user and the active bots they own
 * (bots first, as Zulip does); their API keys stop working and their queues
 * end. With `actions` (FL 459), the same is done to each of them: the profile
 * deleted (renamed, with a realm_user update), and their messages of the
 * kinds asked for deleted by a follow-up in batches
 * (`deactivated_user_messages.ts`), which needs the right to delete anyone's
 * messages (`can_delete_any_message_group`).
 */
export const deactivateUser = action({
  type: 'deactivateUser',
  fields: z.object({ userId: z.number().int(), actions: DeactivationActions.default({ deleteProfile: false, deletePublicChannelMessages: false, deletePrivateChannelMessages: false, deleteDirectMessages: false }) }),
  check(state, msg) {
    const actor = actingUser(state, msg.caller);
    const target = adminTarget(state, actor, msg.userId, { allowDeactivated: false, allowBots: false });
    if (target.role === Role.OWNER && actor.role !== Role.OWNER) throw ownerRequired();
    if (isLastOwner(state, target)) throw badRequest('Cannot deactivate the only organization owner');
    const a = msg.actions;
    const kinds = { publicChannels: a.deletePublicChannelMessages, privateChannels: a.deletePrivateChannelMessages, direct: a.deleteDirectMessages };
    // Deleting someone's messages is what can_delete_any_message_group allows (administrators by default).
    if (anyKind(kinds) && !state.can(realmGroupSetting(state, 'can_delete_any_message_group'), actor)) throw badRequest("You don't have permission to delete this user's messages");
    return { ids: withOwnedBots(state, target), deleteProfile: a.deleteProfile, kinds, actorId: actor.id };
  },
  apply(state, p, tx) {
    const renamed: number[] = [];
    for (const id of p.ids) {
      setActive(state, tx, id, false);
      const u = state.users.get(id)!;
      if (p.deleteProfile && u.fullName !== deletedName(u)) {
        const next = { ...u, fullName: deletedName(u) };
        state.indexUser(next);
        tx.write(T.users.at(state.realmId, id).put(next));
        renamed.push(id);
      }
    }
    if (anyKind(p.kinds)) deleteMessagesLater(tx, p.ids, p.kinds, p.actorId);
    return { revoked: p.ids, renamed };
  },
  events(state, p, made) {
    const out: Delivery[] = [];
    for (const id of p.ids) {
      // As Zulip's do_deactivate_user: the new name, then the deactivation, bots first.
      if (made.renamed.includes(id)) out.push(userUpdate(state, id, { user_id: id, full_name: state.users.get(id)!.fullName }));
      out.push(...deactivationEvents(state, [id]));
    }
    return out;
  },
  reply: (made) => ({ revoked: made.revoked }),
});

/**
 * The operator deletes a user (`parley users delete`; Zulip's
 * `do_delete_user` and `do_delete_user_preserving_messages`, run by its
 * `manage.py delete_user`): the user is deactivated (with their bots), and
 * their account data goes: name and address become "Deleted User <id>" and
 * `deleteduser<id>@<fake domain>`, shown to everyone; credentials, pending
 * email change, profile data, status, settings, alert words and mutes are
 * removed, and the rest of what they owned goes too, as Zulip's rows cascade:
 * the realm's rows of them in this commit (`RealmState.forgetUser`:
 * subscriptions, topic policies, scheduled messages and reminders, push
 * devices), their user actor's by a durable follow-up
 * (`deleted_user_data.ts`: drafts, snippets, flags, navigation views, bot
 * storage); `is_deleted` (FL 490) marks them from then on; and, unless
 * `preserveMessages`, every message they sent is deleted by the follow-up of
 * DELETE /users/{user_id}'s message actions. Zulip tells clients nothing of
 * the new name and address (they see them on their next register); here the
 * `realm_user` updates of a rename and an address change are sent, as every
 * visible change has its event. A deleted user is never reactivated.
 */
export const deleteUser = action({
  type: 'deleteUser',
  fields: z.object({ userId: z.number().int(), preserveMessages: z.boolean() }),
  check(state, msg) {
    if (msg.caller.userId !== null) throw unauthorized('Only the server deletes users');
    const target = state.users.get(msg.userId);
    if (!target || target.isSystemBot) throw badRequest('No such user');
    if (target.isDeleted) throw badRequest('User is already deleted');
    if (isLastOwner(state, target)) throw badRequest('Cannot delete the only organization owner');
    return { id: target.id, deactivate: target.isActive ? withOwnedBots(state, target) : [], preserveMessages: msg.preserveMessages };
  },
  apply(state, p, tx) {
    for (const id of p.deactivate) setActive(state, tx, id, false);
    const u = state.users.get(p.id)!;
    const next: UserRecord = {
      ...u,
      email: `deleteduser${u.id}@${fakeEmailDomain(state)}`,
      fullName: `Deleted User ${u.id}`,
      isDeleted: true,
      passwordHash: null,
      apiKeys: [],
      apiKey: '',
      pendingEmail: null,
      timezone: '',
      canCreateUsers: false,
      canChangeUserEmails: false,
      profileData: {},
      status: { text: '', emojiName: '', emojiCode: '', reactionType: '' },
    };
    state.indexUser(next);
    tx.write(T.users.at(state.realmId, u.id).put(next));
    // Default settings, but the address shown to everyone (it is made up), as Zulip's deleted users.
    const settings = { email_address_visibility: EmailVisibility.EVERYONE };
    state.settings.set(u.id, settings);
    tx.write(T.userSettings.at(state.realmId, u.id).put(settings));
    if (state.alertWords.delete(u.id)) tx.write(T.alertWords.at(state.realmId, u.id).delete());
    for (const mutedId of state.mutedUsers.get(u.id)?.keys() ?? []) tx.write(T.mutedUsers.at(state.realmId, u.id, mutedId).delete());
    state.mutedUsers.delete(u.id);
    // The index forgets the address, as Zulip's scrubbed profile no longer has it.
    noteAccountAddresses(tx, [u.id]);
    // The rest of what they had: the realm's rows now, the user actor's by a follow-up.
    state.forgetUser(tx, u.id);
    forgetUserDataLater(tx, u.id);
    if (!p.preserveMessages) deleteMessagesLater(tx, [u.id], { publicChannels: true, privateChannels: true, direct: true }, null);
    return { revoked: [...new Set([...p.deactivate, u.id])], user_id: u.id };
  },
  events(state, p) {
    const u = state.users.get(p.id)!;
    return [
      ...p.deactivate.flatMap((id) => deactivationEvents(state, [id])),
      userUpdate(state, u.id, { user_id: u.id, full_name: u.fullName }),
      userUpdate(state, u.id, { user_id: u.id, delivery_email: u.email }),
      userUpdate(state, u.id, { user_id: u.id, new_email: u.email }),
    ];
  },
});

/** DELETE /users/me: deactivates one's own account, never the last user or the last owner. */
export const deactivateSelf = action({
  type: 'deactivateSelf',
  fields: z.object({}),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    const others = [...state.users.values()].some((u) => u.id !== user.id && u.isActive);
    if (!others) throw new ApiError('CANNOT_DEACTIVATE_LAST_USER', 'Cannot deactivate the only user.', 400, { is_last_owner: false, entity: 'user' });
    if (isLastOwner(state, user)) throw new ApiError('CANNOT_DEACTIVATE_LAST_USER', 'Cannot deactivate the only organization owner.', 400, { is_last_owner: true, entity: 'organization owner' });
    return withOwnedBots(state, user);
  },
  apply(state, ids, tx) {
    for (const id of ids) setActive(state, tx, id, false);
    return { revoked: ids };
  },
  events: (state, ids) => deactivationEvents(state, ids),
});

/** POST /users/{user_id}/reactivate. */
export const reactivateUser = action({
  type: 'reactivateUser',
  fields: z.object({ userId: z.number().int() }),
  check(state, msg) {
    const actor = actingUser(state, msg.caller);
    const target = adminTarget(state, actor, msg.userId, { allowDeactivated: true, allowBots: true });
    if (target.isActive) throw badRequest('User is already active');
    // Zulip's deleted accounts are for good: their data is gone (FL 490).
    if (target.isDeleted) throw badRequest('User has been deleted');
    return target.id;
  },
  apply(state, id, tx) {
    setActive(state, tx, id, true);
    return {};
  },
  events(state, id) {
    const user = state.users.get(id)!;
    const out: Delivery[] = [userUpdate(state, id, { user_id: id, is_active: true })];
    for (const c of subscribedChannels(state, id)) out.push(toChannelAudience(state, c, { type: 'subscription', op: 'peer_add', stream_ids: [c.id], user_ids: [id] }, [id]));
    // Deactivated users are left out of groups' members: they are back in their groups.
    const groups = [...roleGroups(user.role), ...[...state.groups.values()].filter((g) => g.members.includes(id)).map((g) => g.id)];
    for (const g of groups) {
      const deactivated = state.groups.get(g)?.deactivated === true;
      const event = { type: 'user_group' as const, op: 'add_members' as const, group_id: g, user_ids: [id] };
      out.push(...(deactivated ? withCapabilityToRealm(state.realmId, 'include_deactivated_groups', event, null) : [toRealm(state.realmId, event)]));
    }
    // A channel's audience is its own (who sees its metadata): O(users) for each channel whose permissions name the user.
    out.push(...settingsNamingUser(state, id), ...realmSettingsNamingUser(state, id), ...channelSettingsNamingUser(state, id, activeUsers(state)));
    return out;
  },
});

/** Days until a demo organization's scheduled deletion (Zulip's DEMO_ORG_DEADLINE_DAYS). */
export const DEMO_ORG_DEADLINE_DAYS = 30;

export const BootstrapUser = z.object({
  email: z.string(),
  fullName: z.string(),
  role: z.number().int(),
  isBot: z.boolean().optional(),
  canCreateUsers: z.boolean().optional(),
  canChangeUserEmails: z.boolean().optional(),
  password: z.string().optional(),
  /** The API key to give the user (made up here when absent). */
  apiKey: z.string().min(32).optional(),
});

/**
 * Internal (the gateway never sends it): creates the realm with its first
 * users if it does not exist yet. The reply carries each new user's API key
 * in plain text, once; for a realm that already existed it carries only the
 * keys the caller sent that are still the user's, so a caller whose first
 * attempt timed out after it was done learns that its keys hold.
 */
export const bootstrap = action({
  type: 'bootstrap',
  fields: z.object({
    name: z.string(),
    users: z.array(BootstrapUser),
    subdomain: z.string().default(''),
    demo: z.boolean().default(false),
    /** Someone is creating this organization (not an import or the seeded demo): its first owner is its creator, mailed as Zulip mails one (`signup_email.ts`). */
    realmCreation: z.boolean().default(false),
    /** The organization's type, chosen at its creation (Zulip's org_type; checked by the directory). */
    orgType: z.number().int().default(0),
    /** Its new users' avatars (FL 456): Jdenticons, Zulip's default for a new organization, unless told otherwise. */
    defaultAvatarSource: z.enum(['G', 'J']).default('J'),
  }),
  async prepare(state, msg) {
    if (state.meta || msg.caller.userId !== null) return [];
    return Promise.all(msg.users.map((u) => (u.password ? hashPassword(u.password) : Promise.resolve(null))));
  },
  check(state, msg, hashes: Array<string | null>) {
    if (msg.caller.userId !== null) throw unauthorized('Only the server bootstraps a realm');
    if (state.meta) {
      const known = msg.users.filter((u) => u.apiKey !== undefined && state.usersByEmail.get(u.email.toLowerCase())?.apiKeys.some((k) => sameDigest(k.hash, sha256Hex(u.apiKey!))));
      return { create: null, emails: msg.users.map((u) => u.email), known: known.map((u) => [u.email.toLowerCase(), u.apiKey!] as const) };
    }
    const users = msg.users.map((u, i) => ({ ...u, passwordHash: hashes[i] ?? null, loggedIn: true, apiKey: u.apiKey ?? newApiKey() }));
    return { create: { name: msg.name, subdomain: msg.subdomain, demo: msg.demo, realmCreation: msg.realmCreation, orgType: msg.orgType, defaultAvatarSource: msg.defaultAvatarSource, users }, emails: msg.users.map((u) => u.email), known: [] };
  },
  apply(state, plan, tx) {
    const keys = new Map<number, string>();
    for (const [email, key] of plan.known) keys.set(state.usersByEmail.get(email)!.id, key);
    if (plan.create) {
      const dateCreated = Math.floor(Date.now() / 1000);
      const demoOrganizationScheduledDeletionDate = plan.create.demo ? dateCreated + DEMO_ORG_DEADLINE_DAYS * 86_400 : null;
      const meta = { name: plan.create.name, stringId: plan.create.subdomain, deactivated: false, dateCreated, topicsPolicy: 'allow_empty_topic' as const, emptyTopicDisplayName: 'general chat', canMentionManyUsersGroup: 6, demoOrganizationScheduledDeletionDate };
      state.meta = meta;
      tx.write(T.realms.at(state.realmId).put(meta));
      // Before the first users, who get its avatars (FL 456).
      state.org.settings = { ...state.org.settings, orgType: plan.create.orgType, defaultAvatarSource: plan.create.defaultAvatarSource };
      tx.write(T.realmSettings.at(state.realmId).put(state.org.settings));
      let ownerId: number | null = null;
      for (const spec of plan.create.users) {
        const u = addUser(state, tx, { ...spec, botOwnerId: spec.isBot ? ownerId : null });
        keys.set(u.id, spec.apiKey);
        if (spec.role === Role.OWNER && ownerId === null) {
          ownerId = u.id;
          if (plan.create.realmCreation) noteNewHuman(state, u, tx, true);
        }
      }
      noteAccountAddresses(tx, [...keys.keys()]);
    }
    // After the first users, so that their IDs do not depend on this; a realm created before system bots gets them here.
    if (state.meta) ensureSystemBots(state, tx);
    return {
      created: plan.create !== null,
      users: plan.emails
        .map((email) => state.usersByEmail.get(email.toLowerCase()))
        .filter((u) => u !== undefined)
        .map((u) => ({ userId: u.id, email: u.email, apiKey: keys.get(u.id) ?? null, fullName: u.fullName, role: u.role, isBot: u.isBot })),
    };
  },
});
