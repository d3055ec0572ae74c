/**
 * Bots created through the API (Zulip's `POST /bots`, `GET /bots`, `PATCH
 * /bots/{bot_id}`): generic
 * bots, incoming-webhook bots and outgoing-webhook bots. An outgoing-webhook
 * bot has a service: every message that mentions it, or a direct message to
 * it, is posted to its URL, and the answer is sent back as the bot
 * (`outgoing_webhooks.ts`). Embedded bots need a bot runtime inside
 * the server, which Parley does not have: they are refused, as Zulip refuses
 * them where embedded bots are disabled.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { newApiKey, sha256Hex } from '../../../../lib/secrets.ts';
import { T, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toUsers } from '../../../events/delivery.ts';
import type { RealmBotObject } from '../../../events/schema.ts';
import { formatUser } from '../../../format.ts';
import { isAdmin, isGuest } from '../../../model.ts';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { realmGroupSetting } from '../organization/realm_settings.ts';
import { noteAccountAddresses } from '../../state/account_index.ts';
import type { RealmState } from '../../state/state.ts';
import { apiEmail } from '../../rules/emails.ts';
import { addUser, checkFullName, checkUniqueName, MAX_API_KEYS, newUserEvents, updateUser } from './users.ts';
import { userUpdate } from '../../rules/people.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const BotType = { GENERIC: 1, INCOMING_WEBHOOK: 2, OUTGOING_WEBHOOK: 3, EMBEDDED: 4 } as const;
/** Outgoing webhook payload formats: Zulip's own (1); Slack's (2) is not spoken here. */
const GENERIC_INTERFACE = 1;

/** What a sent message asks of the outgoing-webhook bots it mentions or is addressed to (the send's follow-up serves them; never shown to clients). */
export interface ServiceTrigger {
  botId: number;
  email: string;
  fullName: string;
  baseUrl: string;
  token: string;
  trigger: 'mention' | 'direct_message';
}

/** The outgoing-webhook bots a message from `senderId` triggers: those it mentions (channel messages) or is addressed to (direct messages). */
export function serviceTriggers(state: Readonly<RealmState>, senderId: number, isDm: boolean, candidates: number[]): ServiceTrigger[] {
  const sender = state.users.get(senderId);
  // A service bot's own messages never trigger one (no loops between bots).
  if (!sender || sender.service) return [];
  const out: ServiceTrigger[] = [];
  for (const id of new Set(candidates)) {
    const bot = state.users.get(id);
    if (!bot?.isActive || !bot.service || id === senderId) continue;
    out.push({ botId: id, email: bot.email, fullName: bot.fullName, baseUrl: bot.service.baseUrl, token: bot.service.token, trigger: isDm ? 'direct_message' : 'mention' });
  }
  return out;
}

const CreateFields = z.object({
  fullName: z.string(),
  shortName: z.string(),
  botType: z.number().int(),
  payloadUrl: z.string().nullable(),
  interfaceType: z.number().int(),
});

export const createBot = action({
  type: 'createBot',
  fields: CreateFields,
  check(state, msg) {
    const owner = actingUser(state, msg.caller);
    if (owner.isBot) throw badRequest('This endpoint does not accept bot requests.');
    if (isGuest(owner)) throw new ApiError('BAD_REQUEST', 'Not allowed for guest users', 400);
    if (![BotType.GENERIC, BotType.INCOMING_WEBHOOK, BotType.OUTGOING_WEBHOOK].includes(msg.botType as 1 | 2 | 3)) throw badRequest('Invalid bot type');
    // can_create_bots_group: any bot; can_create_write_only_bots_group: incoming-webhook bots (they only send).
    const may = state.can(realmGroupSetting(state, 'can_create_bots_group'), owner) || (msg.botType === BotType.INCOMING_WEBHOOK && state.can(realmGroupSetting(state, 'can_create_write_only_bots_group'), owner));
    if (!may) throw badRequest('Insufficient permission');
    const fullName = checkFullName(msg.fullName);
    checkUniqueName(state, fullName, null);
    const short = msg.shortName.trim().toLowerCase();
    if (!/^[a-z0-9][a-z0-9._-]*$/.test(short)) throw badRequest('Bad name or username');
    const domain = owner.email.slice(owner.email.lastIndexOf('@') + 1);
    const email = `${short}-bot@${domain}`;
    if (state.usersByEmail.has(email.toLowerCase())) throw badRequest('Username already in use');
    let service: UserRecord['service'] = null;
    if (msg.botType === BotType.OUTGOING_WEBHOOK) {
      if (msg.interfaceType !== GENERIC_INTERFACE) throw badRequest('Invalid interface type');
      if (!msg.payloadUrl || !isHttpUrl(msg.payloadUrl)) throw badRequest('payload_url is not a URL');
      service = { baseUrl: msg.payloadUrl, interfaceType: msg.interfaceType, token: randomBytes(24).toString('base64url') };
    }
    return { email, fullName, ownerId: owner.id, botType: msg.botType, service, apiKey: newApiKey() };
  },
  // The bot made, and its key in clear for the reply (the record keeps its hash).
  apply(state, p, tx) {
    const bot = addUser(state, tx, { email: p.email, fullName: p.fullName, role: 400, isBot: true, botType: p.botType, botOwnerId: p.ownerId, service: p.service, passwordHash: null, loggedIn: true, apiKey: p.apiKey });
    // Zulip counts every profile with the address, bots too.
    noteAccountAddresses(tx, [bot.id]);
    return { bot, apiKey: p.apiKey };
  },
  events: (state, _p, { bot }) => [...newUserEvents(state, bot, []), toUsers(state.realmId, botAudience(state, bot), { type: 'realm_bot', op: 'add', bot: realmBotObject(bot) })],
  reply: ({ bot, apiKey }) => ({
    user_id: bot.id,
    api_key: apiKey,
    avatar_url: formatUser(bot, false).avatar_url,
    default_sending_stream: null,
    default_events_register_stream: null,
    default_all_public_streams: false,
  }),
});

/**
 * The bots `user` administers (Zulip's `get_owned_bot_dicts`): their own; an administrator's: every bot.
 * System bots are no one's. O(the bots returned), from the state's bot indexes (no walk of every user).
 */
function administeredBots(state: Readonly<RealmState>, user: UserRecord): UserRecord[] {
  const ids = isAdmin(user) ? state.botIds : (state.botsByOwner.get(user.id) ?? []);
  return [...ids].sort((a, b) => a - b).map((id) => state.users.get(id)!);
}

const servicesOf = (b: UserRecord) => (b.service ? [{ base_url: b.service.baseUrl, interface: b.service.interfaceType, token: b.service.token }] : []);

/**
 * A bot as register's `realm_bots` and `realm_bot` add events show it: since
 * FL 474 only what realm_users does not carry (no api_key, avatar_url,
 * bot_type, email, full_name, is_active or owner_id).
 */
export function realmBotObject(b: UserRecord): RealmBotObject {
  return {
    user_id: b.id,
    default_sending_stream: null,
    default_events_register_stream: null,
    default_all_public_streams: false,
    services: servicesOf(b),
  };
}

/** Register's `realm_bots`: the bots the user administers, deactivated ones included (with `is_active`). */
export const realmBotsOf = (state: Readonly<RealmState>, user: UserRecord): RealmBotObject[] => administeredBots(state, user).map(realmBotObject);

/** The active human administrators and owners: O(staff), from the state's index of active staff. */
function activeAdmins(state: Readonly<RealmState>): Set<number> {
  const ids = new Set<number>();
  for (const id of state.activeStaffIds) {
    const u = state.users.get(id)!;
    if (!u.isBot && isAdmin(u)) ids.add(id);
  }
  return ids;
}

/** Who hears of changes to a bot (Zulip's `bot_owner_user_ids`): active administrators and its owner. O(staff). */
export function botAudience(state: Readonly<RealmState>, bot: UserRecord): number[] {
  const ids = activeAdmins(state);
  if (bot.botOwnerId !== null && state.users.get(bot.botOwnerId)?.isActive) ids.add(bot.botOwnerId);
  return [...ids];
}

/** GET /bots: the active bots the caller administers (their own; an administrator's: all), with their services. */
export const listBots = query({
  type: 'listBots',
  fields: z.object({}),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    return {
      bots: administeredBots(state, user)
        .filter((b) => b.isActive)
        .map((b) => ({
          user_id: b.id,
          full_name: b.fullName,
          username: b.email,
          avatar_url: formatUser(b, false).avatar_url,
          bot_type: b.botType,
          owner_id: b.botOwnerId,
          is_active: b.isActive,
          services: servicesOf(b),
        })),
    };
  },
});

/**
 * PATCH /bots/{bot_id} (Zulip's `patch_bot_backend`): its administrators (an
 * organization administrator, or the bot's owner) change its name, its
 * owner and its outgoing-webhook service; its role as PATCH /users/{user_id}
 * changes a role (administrators; the owner role by owners only, FL 130).
 * The name and role go through `updateUser`'s own check, change and events.
 */
export const updateBot = action({
  type: 'updateBot',
  fields: z.object({
    botId: z.number().int(),
    fullName: z.string().nullable(),
    role: z.number().int().nullable(),
    ownerId: z.number().int().nullable(),
    payloadUrl: z.string().nullable(),
    interfaceType: z.number().int().nullable(),
    shortName: z.string().nullable().default(null),
  }),
  check(state, msg, facts, ctx) {
    const actor = actingUser(state, msg.caller);
    const bot = state.users.get(msg.botId);
    if (!bot?.isBot || !bot.isActive || bot.isSystemBot) throw badRequest('No such bot');
    if (!isAdmin(actor) && bot.botOwnerId !== actor.id) throw badRequest('Insufficient permission');
    let fullName: string | null = null;
    if (msg.fullName !== null) {
      const name = checkFullName(msg.fullName);
      checkUniqueName(state, name, bot.id);
      // Zulip's check_bot_name_available: no other active user of the organization has the name.
      const taken = [...(state.usersByName.get(name.toLowerCase()) ?? [])].some((u) => u.id !== bot.id && u.isActive);
      if (name !== bot.fullName && taken) throw badRequest('Name is already in use!');
      fullName = name;
    }
    const user = updateUser.check(state, { ...msg, type: 'updateUser', userId: bot.id, fullName, role: msg.role, profileData: null, newEmail: null }, facts, ctx);
    // short_name (FL 447): the bot's email becomes <short_name>-bot@<its domain>, as at creation; who may
    // change the bot may change it (not only owners allowed to change emails, as PATCH /users/{user_id}'s new_email).
    if (msg.shortName !== null) {
      const short = msg.shortName.trim().toLowerCase();
      if (!/^[a-z0-9][a-z0-9._-]*$/.test(short)) throw badRequest('Bad name or username');
      const email = `${short}-bot@${bot.email.slice(bot.email.lastIndexOf('@') + 1)}`;
      const holder = state.usersByEmail.get(email.toLowerCase());
      if (holder && holder.id !== bot.id) throw badRequest('Username already in use');
      if (email !== bot.email) user.email = email;
    }
    let owner: { old: number | null; new: number } | null = null;
    if (msg.ownerId !== null) {
      const next = state.users.get(msg.ownerId);
      if (!next || next.isSystemBot) throw badRequest('Failed to change owner, no such user');
      if (!next.isActive) throw badRequest('Failed to change owner, user is deactivated');
      if (next.isBot) throw badRequest("Failed to change owner, bots can't own other bots");
      if (next.id !== bot.botOwnerId) owner = { old: bot.botOwnerId, new: next.id };
    }
    let service: UserRecord['service'] = null;
    if (msg.payloadUrl !== null || msg.interfaceType !== null) {
      if (!bot.service) throw badRequest('Only outgoing webhook bots have a service');
      const interfaceType = msg.interfaceType ?? bot.service.interfaceType;
      if (interfaceType !== GENERIC_INTERFACE) throw badRequest('Invalid interface type');
      const baseUrl = msg.payloadUrl ?? bot.service.baseUrl;
      if (!isHttpUrl(baseUrl)) throw badRequest('service_payload_url is not a URL');
      if (baseUrl !== bot.service.baseUrl || interfaceType !== bot.service.interfaceType) service = { ...bot.service, baseUrl, interfaceType };
    }
    return { user, owner, service };
  },
  apply(state, p, tx, ctx) {
    const { revoked } = updateUser.apply(state, p.user, tx, ctx);
    if (p.owner || p.service) {
      const b = state.users.get(p.user.userId)!;
      const next: UserRecord = { ...b, botOwnerId: p.owner?.new ?? b.botOwnerId, service: p.service ?? b.service };
      state.indexUser(next);
      tx.write(T.users.at(state.realmId, b.id).put(next));
    }
    const bot = state.users.get(p.user.userId)!;
    return {
      full_name: bot.fullName,
      avatar_url: formatUser(bot, false).avatar_url,
      service_interface: bot.service?.interfaceType ?? GENERIC_INTERFACE,
      service_payload_url: bot.service?.baseUrl ?? null,
      config_data: null,
      default_sending_stream: null,
      default_events_register_stream: null,
      default_all_public_streams: false,
      ...(p.owner ? { bot_owner: apiEmail(state, state.users.get(p.owner.new)!) } : {}),
      // For the gateway (the old email's credentials stop working), not the client.
      revoked,
    };
  },
  events(state, p, reply) {
    const out = updateUser.events!(state, p.user, { revoked: [] });
    const bot = state.users.get(p.user.userId)!;
    if (p.owner) {
      // Zulip's do_change_bot_owner: the old owner (unless an administrator) loses the bot from realm_bots,
      // the new one (unless an administrator) gains it; the others learn the new owner from realm_user (no realm_bot update since FL 474).
      const admins = activeAdmins(state);
      const old = p.owner.old === null ? undefined : state.users.get(p.owner.old);
      if (old?.isActive && !admins.has(old.id)) out.push(toUsers(state.realmId, [old.id], { type: 'realm_bot', op: 'delete', bot: { user_id: bot.id } }));
      if (!admins.has(p.owner.new)) out.push(toUsers(state.realmId, [p.owner.new], { type: 'realm_bot', op: 'add', bot: realmBotObject(bot) }));
      out.push(userUpdate(state, bot.id, { user_id: bot.id, bot_owner_id: p.owner.new }));
    }
    if (p.service) out.push(toUsers(state.realmId, botAudience(state, bot), { type: 'realm_bot', op: 'update', bot: { user_id: bot.id, services: servicesOf(bot) } }));
    void reply;
    return out;
  },
});

function isHttpUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * GET /bots/{bot_id}/api_key (FL 463): a key of the bot, for its owner or an
 * administrator (Zulip's `access_bot_by_id`). Keys are stored only as
 * hashes, so no stored key can be handed out again: as POST /fetch_api_key
 * does for a user, each call issues the bot a new key beside its others (the
 * oldest beyond MAX_API_KEYS retired); nothing else about the bot changes,
 * so no event.
 */
export const botApiKey = action({
  type: 'botApiKey',
  fields: z.object({ botId: z.number().int() }),
  check(state, msg) {
    const actor = actingUser(state, msg.caller);
    const bot = state.users.get(msg.botId);
    if (!bot?.isBot || bot.isSystemBot) throw badRequest('No such bot');
    if (!isAdmin(actor) && bot.botOwnerId !== actor.id) throw badRequest('Insufficient permission');
    return { botId: bot.id, key: newApiKey() };
  },
  apply(state, p, tx) {
    const bot = state.users.get(p.botId)!;
    const apiKeys = [...bot.apiKeys, { hash: sha256Hex(p.key), created: Math.floor(Date.now() / 1000) }].slice(-MAX_API_KEYS);
    const next = { ...bot, apiKeys };
    state.indexUser(next);
    tx.write(T.users.at(state.realmId, bot.id).put(next));
    return { api_key: p.key };
  },
});
