/**
 * The ephemeral actor of a shard: typing notifications and presence. Both are
 * high-rate and short-lived, so they live in memory only (non-durable, like
 * the queue actor): no journal, no store, and they never wait in the realm's
 * mailbox behind sends (the realm is asked only for who to tell, a read-only
 * query, and that answer is cached briefly). A shard that moves loses them,
 * which clients repair by themselves: typing expires, presence is pinged
 * again within a minute.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { badRequest } from '../../lib/errors.ts';
import { type Delivery, toUsers } from '../events/delivery.ts';
import { ACCESS_LIMITS_PRESENCE } from '../realm/actions/messages/ephemeral.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { defineAction, defineQuery } from '../runtime/action.ts';
import { JsonText } from '../runtime/bus.ts';
import type { ActorContext } from '../runtime/context.ts';
import { defineActor } from '../runtime/registry.ts';
import { ephemeralRef, sharedPresenceAnswer } from './ref.ts';

/** A typing notice not renewed within this long stops by itself (Zulip's TYPING_STARTED_EXPIRY_PERIOD_MILLISECONDS). */
export const TYPING_EXPIRY_MS = Number(process.env.PARLEY_TYPING_EXPIRY_MS ?? 45_000);
/** How long an answer of the realm about who to tell is reused. */
const AUDIENCE_TTL_MS = 10_000;
/** Past this long without a ping a user is offline (Zulip's OFFLINE_THRESHOLD_SECS). */
export const OFFLINE_THRESHOLD_SECS = 140;

type Person = { user_id: number; email: string };
interface Audience {
  sender: Person;
  recipients: Person[] | null;
  userIds: number[];
  /** A channel notice's topic as the realm reads it (the empty topic for '(no topic)'). */
  topic?: string;
  at: number;
}

interface UserPresence {
  activeTimestamp: number;
  idleTimestamp: number;
}

interface RealmPresence {
  users: Map<number, UserPresence>;
  /**
   * The addresses the API knows users by (`actors/realm/rules/emails.ts`), by user
   * ID, from the realm, at the realm's directory version `emailsVersion`:
   * checked when someone unknown shows up or the check is older than
   * `EMAILS_MAX_AGE_MS` (a user may hide their address); a check while
   * nothing about users changed costs the realm O(1) and copies nothing.
   */
  emails: Map<number, string>;
  emailsAt: number;
  emailsVersion: string | null;
  lastUpdateId: number;
  /** `presences` as JSON text by form (`presencesText`), with the second it was built in and the `lastUpdateId` it reflects. */
  encoded: Map<string, { second: number; updateId: number; text: string }>;
}

/**
 * Above this many active users in an organization, a change of presence is
 * not sent as an event: clients learn it from their own pings (every 60 s),
 * which answer with everyone's presence. Zulip's
 * USER_LIMIT_FOR_SENDING_PRESENCE_UPDATE_EVENTS (100 there): each event goes
 * to every user, and users come online in proportion to the organization's
 * size, so events grow with the square of it. Here the default is higher
 * because a queue shard fans an event out, not the presence actor; at most
 * this many recipients per update either way.
 */
export const PRESENCE_EVENTS_USER_LIMIT = Number(process.env.PARLEY_PRESENCE_EVENTS_USER_LIMIT ?? 1000);

export class EphemeralShard {
  /** `${realm}:${sender}:${conversation}` -> the stop event to send when it expires. */
  readonly typing = new Map<string, { stop: Delivery; expiresAt: number }>();
  readonly audiences = new Map<string, Audience>();
  readonly presence = new Map<number, RealmPresence>();

  constructor(
    readonly publish: (d: Delivery) => void,
    readonly log: Logger,
  ) {}

  realm(realmId: number): RealmPresence {
    let p = this.presence.get(realmId);
    if (!p) this.presence.set(realmId, (p = { users: new Map(), emails: new Map(), emailsAt: 0, emailsVersion: null, lastUpdateId: 0, encoded: new Map() }));
    return p;
  }

  /** Typing notices nobody renewed stop by themselves. */
  tick(now: number): void {
    for (const [key, t] of this.typing) {
      if (t.expiresAt > now) continue;
      this.typing.delete(key);
      this.publish(t.stop);
    }
    for (const [key, a] of this.audiences) if (now - a.at > AUDIENCE_TTL_MS) this.audiences.delete(key);
  }
}

const action = defineAction<EphemeralShard>();
const query = defineQuery<EphemeralShard>();

// ---- typing ------------------------------------------------------------------

const TypingFields = z.object({
  op: z.enum(['start', 'stop']),
  messageType: z.enum(['direct', 'stream']),
  to: z.array(z.number().int()).nullable(),
  streamId: z.number().int().nullable(),
  topic: z.string().nullable(),
});

export const setTyping = action({
  type: 'setTyping',
  fields: TypingFields,
  async prepare(shard, msg, ctx: ActorContext): Promise<Audience> {
    const key = JSON.stringify([msg.caller, msg.messageType, msg.to, msg.streamId, msg.topic]);
    const cached = shard.audiences.get(key);
    if (cached && Date.now() - cached.at < AUDIENCE_TTL_MS) return cached;
    const a = await ctx.actors.call(realmRef, realmActorId(msg.caller.realmId), { type: 'typingAudience', caller: msg.caller, messageType: msg.messageType, to: msg.to, streamId: msg.streamId, topic: msg.topic });
    const audience = { ...a, at: Date.now() };
    (shard as EphemeralShard).audiences.set(key, audience);
    return audience;
  },
  check(_shard, msg, audience) {
    const base =
      msg.messageType === 'direct'
        ? { message_type: 'direct' as const, sender: audience.sender, recipients: audience.recipients! }
        : { message_type: 'stream' as const, sender: audience.sender, stream_id: msg.streamId!, topic: audience.topic ?? msg.topic! };
    const conversation = msg.messageType === 'direct' ? `d${audience.userIds.join(',')}` : `s${msg.streamId}:${(audience.topic ?? msg.topic!).toLowerCase()}`;
    return {
      key: `${msg.caller.realmId}:${msg.caller.userId}:${conversation}`,
      op: msg.op,
      event: (op: 'start' | 'stop') => toUsers(msg.caller.realmId, audience.userIds, { type: 'typing', op, ...base }),
    };
  },
  apply(shard, p) {
    if (p.op === 'start') shard.typing.set(p.key, { stop: p.event('stop'), expiresAt: Date.now() + TYPING_EXPIRY_MS });
    else shard.typing.delete(p.key);
    return {};
  },
  events: (_shard, p) => [p.event(p.op)],
});

/**
 * A typing notice while editing a message (`typing_edit_message`, FL 351):
 * the realm says who hears it (`editTypingAudience`, which checks that the
 * caller may edit the message); it stops by itself as other notices do.
 */
export const setEditTyping = action({
  type: 'setEditTyping',
  fields: z.object({ op: z.enum(['start', 'stop']), messageId: z.number().int() }),
  async prepare(_shard, msg, ctx: ActorContext) {
    return ctx.actors.call(realmRef, realmActorId(msg.caller.realmId), { type: 'editTypingAudience', caller: msg.caller, messageId: msg.messageId });
  },
  check(_shard, msg, audience) {
    const base = { sender_id: audience.sender.user_id, message_id: msg.messageId, recipient: audience.recipient };
    return {
      key: `${msg.caller.realmId}:${msg.caller.userId}:e${msg.messageId}`,
      op: msg.op,
      event: (op: 'start' | 'stop') => toUsers(msg.caller.realmId, audience.userIds, { type: 'typing_edit_message', op, ...base }),
    };
  },
  apply(shard, p) {
    if (p.op === 'start') shard.typing.set(p.key, { stop: p.event('stop'), expiresAt: Date.now() + TYPING_EXPIRY_MS });
    else shard.typing.delete(p.key);
    return {};
  },
  events: (_shard, p) => [p.event(p.op)],
});

// ---- presence ----------------------------------------------------------------

/** Zulip's legacy presence of one user: status from the two timestamps, as the "website" client. */
function legacyPresence(u: UserPresence) {
  const active = u.activeTimestamp + OFFLINE_THRESHOLD_SECS >= u.idleTimestamp;
  const status = active ? ('active' as const) : ('idle' as const);
  const timestamp = active ? u.activeTimestamp : u.idleTimestamp;
  return { aggregated: { client: 'website', status, timestamp }, website: { client: 'website', status, timestamp, pushable: false } };
}

const modernPresence = (u: UserPresence) => ({ active_timestamp: u.activeTimestamp, idle_timestamp: u.idleTimestamp });

/**
 * Everyone's presence seen in the last `days` days: by user ID (slim) or by
 * email (legacy); with `sees`, only theirs (a restricted guest's, `presenceAccess`).
 */
function presences(p: RealmPresence, slim: boolean, days: number | null, sees: ReadonlySet<number> | null) {
  const since = days === null ? 0 : Math.floor(Date.now() / 1000) - days * 86_400;
  const out: Record<string, unknown> = {};
  for (const [id, u] of p.users) {
    if (u.idleTimestamp < since || (sees && !sees.has(id))) continue;
    if (slim) out[String(id)] = modernPresence(u);
    else {
      const email = p.emails.get(id);
      if (email) out[email] = legacyPresence(u);
    }
  }
  return out;
}

/** How long a copy of the addresses is used: a user who hides theirs stops showing it in presence within this. */
const EMAILS_MAX_AGE_MS = 5000;
const stale = (p: RealmPresence) => Date.now() - p.emailsAt > EMAILS_MAX_AGE_MS;

/**
 * `presences(p, slim, days, null)` as JSON text. Built at most once a second
 * per form, and again when someone came online or changed status
 * (`lastUpdateId`): a ping answers with everyone's presence, and building it
 * is O(users), so at 10,000 users pinging every minute one build per second
 * serves them all. What a reply shows is thus at most a second old; presence
 * timestamps are whole seconds.
 */
function presencesText(p: RealmPresence, slim: boolean, days: number): string {
  const key = `${slim ? 'slim' : 'legacy'}:${days}`;
  const second = Math.floor(Date.now() / 1000);
  const hit = p.encoded.get(key);
  if (hit && hit.second === second && hit.updateId === p.lastUpdateId) return hit.text;
  const text = JSON.stringify(presences(p, slim, days, null));
  p.encoded.set(key, { second, updateId: p.lastUpdateId, text });
  return text;
}

/** The presences a caller gets: the shared text, or theirs alone when access limits what they see. */
function presencesFor(p: RealmPresence, slim: boolean, days: number, sees: ReadonlySet<number> | null): string {
  return sees ? JSON.stringify(presences(p, slim, days, sees)) : presencesText(p, slim, days);
}

/** A ping's whole answer, `head` (made in `second`) and everyone's presence: one string for every ping of the second, which the gateway encodes once. */
function pingReplyText(p: RealmPresence, slim: boolean, days: number, second: number, head: string, withUpdateId: boolean): string {
  // Under the form's key prefix, so that dropping a form's texts drops these too.
  const key = `${slim ? 'slim' : 'legacy'}:${days}:reply:${withUpdateId}`;
  const hit = p.encoded.get(key);
  if (hit && hit.second === second && hit.updateId === p.lastUpdateId) return hit.text;
  const text = `${head.slice(0, -1)},"presences":${presencesText(p, slim, days)}}`;
  p.encoded.set(key, { second, updateId: p.lastUpdateId, text });
  return text;
}

async function refreshEmails(p: RealmPresence, ctx: ActorContext, caller: { realmId: number; userId: number | null }): Promise<void> {
  const { version, users } = await ctx.actors.call(realmRef, realmActorId(caller.realmId), { type: 'presenceDirectory', caller, known: p.emailsVersion });
  p.emailsAt = Date.now();
  if (users === null) return;
  p.emailsVersion = version;
  p.emails.clear();
  for (const u of users) p.emails.set(u.user_id, u.email);
  // Legacy presences are keyed by email; the slim ones by user ID stay.
  for (const key of p.encoded.keys()) if (key.startsWith('legacy:')) p.encoded.delete(key);
}

/**
 * Who the caller sees and who sees them, when `can_access_all_users_group`
 * limits presence (`ACCESS_LIMITS_PRESENCE`); null otherwise: everyone.
 */
async function accessOf(ctx: ActorContext, caller: { realmId: number; userId: number | null }): Promise<{ sees: Set<number> | null; seenBy: number[] } | null> {
  if (!ACCESS_LIMITS_PRESENCE) return null;
  const a = await ctx.actors.call(realmRef, realmActorId(caller.realmId), { type: 'presenceAccess', caller });
  return { sees: a.sees ? new Set(a.sees) : null, seenBy: a.seenBy };
}

const DEFAULT_HISTORY_DAYS = 14;

export const updatePresence = action({
  type: 'updatePresence',
  fields: z.object({
    status: z.string(),
    pingOnly: z.boolean(),
    newUserInput: z.boolean(),
    slim: z.boolean(),
    lastUpdateId: z.number().int().nullable(),
    historyLimitDays: z.number().int().nullable(),
    /** The caller takes everyone's presence from `pingAnswer` (once a second and version): answer `sharedPresenceAnswer` where it applies. */
    sharedAnswer: z.boolean().default(false),
  }),
  async prepare(shard, msg, ctx) {
    if (msg.status !== 'active' && msg.status !== 'idle') throw badRequest(`Invalid status: ${msg.status}`);
    const p = (shard as EphemeralShard).realm(msg.caller.realmId);
    if (!p.emails.has(msg.caller.userId!) || stale(p)) await refreshEmails(p, ctx, msg.caller);
    if (!p.emails.has(msg.caller.userId!)) throw badRequest('Account is deactivated');
    return accessOf(ctx, msg.caller);
  },
  check(shard, msg, access) {
    const p = shard.realm(msg.caller.realmId);
    const userId = msg.caller.userId!;
    const now = Math.floor(Date.now() / 1000);
    const old = p.users.get(userId);
    const next: UserPresence = { activeTimestamp: msg.status === 'active' ? now : (old?.activeTimestamp ?? 0), idleTimestamp: now };
    const wasOnline = old !== undefined && old.idleTimestamp + OFFLINE_THRESHOLD_SECS >= now;
    const statusChanged = old === undefined || legacyPresence(old).aggregated.status !== legacyPresence(next).aggregated.status;
    return { msg, p, userId, next, access, notify: !wasOnline || statusChanged };
  },
  apply(_shard, x) {
    x.p.users.set(x.userId, x.next);
    if (x.notify) x.p.lastUpdateId++;
    const now = Math.floor(Date.now() / 1000);
    const head = JSON.stringify({ server_timestamp: now, zephyr_mirror_active: false, ...(x.msg.lastUpdateId !== null ? { presence_last_update_id: x.p.lastUpdateId } : {}) });
    if (x.msg.pingOnly) return new JsonText(head);
    const days = x.msg.historyLimitDays ?? DEFAULT_HISTORY_DAYS;
    if (x.access?.sees) return new JsonText(`${head.slice(0, -1)},"presences":${presencesFor(x.p, x.msg.slim, days, x.access.sees)}}`);
    if (x.msg.sharedAnswer) return new JsonText(sharedPresenceAnswer(x.p.lastUpdateId));
    // Everyone's presence: the same text for every ping of the second.
    return new JsonText(pingReplyText(x.p, x.msg.slim, days, now, head, x.msg.lastUpdateId !== null));
  },
  events(_shard, x) {
    // Bounded fan-out: no event at all past the limit (Zulip's), so an update never walks every user.
    if (!x.notify || x.p.emails.size > PRESENCE_EVENTS_USER_LIMIT) return [];
    const everyone = x.access ? x.access.seenBy : [...x.p.emails.keys()];
    const realmId = x.msg.caller.realmId;
    const legacy = legacyPresence(x.next);
    return [
      toUsers(realmId, everyone, { type: 'presence', user_id: x.userId, email: x.p.emails.get(x.userId)!, server_timestamp: x.next.idleTimestamp, presence: { website: legacy.website } }),
      toUsers(realmId, everyone, { type: 'presence', presences: { [String(x.userId)]: modernPresence(x.next) } }),
    ];
  },
});

export const getPresences = query({
  type: 'getPresences',
  fields: z.object({ slim: z.boolean(), historyLimitDays: z.number().int().nullable() }),
  run(shard, msg, ctx) {
    const p = shard.realm(msg.caller.realmId);
    return (async () => {
      const access = await accessOf(ctx, msg.caller);
      if (!msg.slim && (stale(p) || [...p.users.keys()].some((id) => !p.emails.has(id)))) await refreshEmails(p, ctx, msg.caller);
      const head = JSON.stringify({ server_timestamp: Math.floor(Date.now() / 1000), presence_last_update_id: p.lastUpdateId });
      return new JsonText(`${head.slice(0, -1)},"presences":${presencesFor(p, msg.slim, msg.historyLimitDays ?? DEFAULT_HISTORY_DAYS, access?.sees ?? null)}}`);
    })();
  },
});

/**
 * The answer of a web app's ping (`updatePresence` without `ping_only`) for
 * whoever sees everyone: the same text for the whole second, which a gateway
 * asks for at most once a second per form (`gateway/shared-replies.ts`
 * `PerSecond`) while each ping's write goes to `updatePresence`. O(users) once
 * a second per form, O(1) otherwise.
 */
export const pingAnswer = query({
  type: 'pingAnswer',
  fields: z.object({ slim: z.boolean(), historyLimitDays: z.number().int().nullable(), withUpdateId: z.boolean() }),
  run(shard, msg, ctx) {
    const p = shard.realm(msg.caller.realmId);
    return (async () => {
      const access = await accessOf(ctx, msg.caller);
      // Only a caller who sees everyone gets the shared answer; the others' pings are answered by updatePresence itself.
      if (access?.sees) throw badRequest('Insufficient permission');
      if (!msg.slim && (stale(p) || [...p.users.keys()].some((id) => !p.emails.has(id)))) await refreshEmails(p, ctx, msg.caller);
      const now = Math.floor(Date.now() / 1000);
      const head = JSON.stringify({ server_timestamp: now, zephyr_mirror_active: false, ...(msg.withUpdateId ? { presence_last_update_id: p.lastUpdateId } : {}) });
      return new JsonText(pingReplyText(p, msg.slim, msg.historyLimitDays ?? DEFAULT_HISTORY_DAYS, now, head, msg.withUpdateId));
    })();
  },
});

export const getUserPresence = query({
  type: 'getUserPresence',
  fields: z.object({ who: z.string() }),
  run(shard, msg, ctx) {
    const p = shard.realm(msg.caller.realmId);
    const find = () => (/^\d+$/.test(msg.who) ? (p.emails.has(Number(msg.who)) ? Number(msg.who) : undefined) : [...p.emails].find(([, e]) => e.toLowerCase() === msg.who.toLowerCase())?.[0]);
    return (async () => {
      let id = find();
      if (id === undefined) {
        await refreshEmails(p, ctx, msg.caller);
        id = find();
      }
      if (id === undefined) throw badRequest('No such user');
      const access = await accessOf(ctx, msg.caller);
      if (access?.sees && !access.sees.has(id)) throw badRequest('Insufficient permission');
      const u = p.users.get(id);
      if (!u) throw badRequest(`No presence data for ${msg.who}`);
      // FL 487 added the modern timestamps (and dropped the legacy dictionaries, which FL 497 restored beside them).
      return { presence: { ...modernPresence(u), ...legacyPresence(u) } };
    })();
  },
});

export const ephemeralHandlers = { setTyping, setEditTyping, updatePresence, getPresences, pingAnswer, getUserPresence };

export const ephemeralActor = defineActor({
  ref: ephemeralRef,
  durable: false,
  perShard: true,
  load: async (ctx) => new EphemeralShard((d) => ctx.publish(d), ctx.log.child({ actor: 'ephemeral' })),
  handlers: ephemeralHandlers,
  tick: (shard, now) => shard.tick(now),
});
