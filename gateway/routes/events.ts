/**
 * POST /register, GET /events (long poll) and DELETE /events.
 *
 * Register creates the queue first and then reads the snapshot, so an event
 * that happens in between is in the queue (a client may see it twice, never
 * miss it), as Zulip does.
 */
import { z } from 'zod';
import { presenceActorId, ephemeralRef } from '../../actors/ephemeral/ref.ts';
import { clientExtavatar } from '../../actors/format.ts';
import { queueActorId, queueRef } from '../../actors/queue/ref.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { type EncodedJson, JsonPieces } from '../../actors/runtime/bus.ts';
import { RawJson } from '../../actors/runtime/client.ts';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { ApiError, badEventQueue } from '../../lib/errors.ts';
import { CLIENT_CAPABILITIES } from '../../lib/features.ts';
import { parseNarrow } from '../../lib/narrow.ts';
import { SERVER_VERSION } from '../../lib/version.ts';
import { bool, int, json, str, wordOrInt } from '../params.ts';
import { caller, IGNORED, me, route } from '../route.ts';
import { IncludeSubscribers } from './subscriptions.ts';

/** What `idle_queue_timeout=mobile` asks for: 12 hours (within the server's longest idle time). */
const MOBILE_QUEUE_IDLE_SECS = 12 * 60 * 60;

const StringList = json(z.array(z.string()).nullable());
const QueueId = str().pipe(z.string().min(1, { message: 'must not be empty' }));

export const register = route({
  method: 'POST',
  path: '/register',
  auth: 'required',
  params: {
    apply_markdown: bool().optional(),
    client_extavatar: bool().optional(),
    client_gravatar: bool().optional(),
    include_subscribers: IncludeSubscribers.optional(),
    slim_presence: bool().optional(),
    presence_history_limit_days: int().optional(),
    event_types: StringList.optional(),
    all_public_streams: bool().optional(),
    client_capabilities: json(z.record(z.string(), z.boolean())).optional(),
    fetch_event_types: StringList.optional(),
    narrow: json(z.array(z.unknown())).optional(),
    // Seconds, or 'mobile' (what zulip-flutter sends at every connect).
    idle_queue_timeout: wordOrInt(['mobile'] as const, 1, "must be a positive number of seconds or 'mobile'").optional(),
  },
  async handle(ctx, p) {
    const user = me(ctx);
    const who = caller(ctx);
    const eventTypes = p.event_types ?? null;
    const fetch = p.fetch_event_types ?? eventTypes;
    const extavatar = clientExtavatar(p);
    const requested = p.idle_queue_timeout === 'mobile' ? MOBILE_QUEUE_IDLE_SECS : p.idle_queue_timeout;
    const idleSecs = Math.min(requested ?? ctx.limits.queueIdleSecs, ctx.limits.queueIdleSecs * 7);
    const caps = p.client_capabilities ?? {};
    const realm = realmActorId(user.realmId);
    const parsed = parseNarrow(p.narrow ?? []);
    // What the queue needs of the realm, asked at once: the narrow resolved, the right to all public channels, the
    // user's channels for the queue shard's subscriber index (it expands channel messages itself), and whether they
    // take typing notices (read when the queue is made).
    const [narrow, , setup] = await Promise.all([
      parsed.length ? ctx.actors.call(realmRef, realm, { type: 'narrowForQueue', caller: who, narrow: parsed }).then((r) => r.narrow) : Promise.resolve([]),
      p.all_public_streams ? ctx.actors.call(realmRef, realm, { type: 'allPublicStreamsAccess', caller: who }) : Promise.resolve(null),
      ctx.actors.call(realmRef, realm, { type: 'queueChannels', caller: who }),
    ]);
    const channelIds = setup.channelIds;
    // Clients without empty_topic_name get the organization's name for the empty topic, in events and in the register.
    const emptyTopicDisplayName = caps.empty_topic_name === true ? null : setup.emptyTopicDisplayName;
    const queue = await ctx.actors.call(queueRef, queueActorId(user.realmId, user.userId), {
      type: 'register',
      caller: who,
      channelIds,
      release: { version: SERVER_VERSION, featureLevel: ctx.featureLevel },
      options: {
        eventTypes,
        narrow,
        allPublicStreams: p.all_public_streams ?? false,
        applyMarkdown: p.apply_markdown ?? false,
        clientExtavatar: extavatar,
        bulkMessageDeletion: caps.bulk_message_deletion ?? false,
        idleSecs,
        receivesTypingNotifications: setup.receivesTypingNotifications,
        streamTypingNotifications: caps.stream_typing_notifications ?? false,
        simplifiedPresenceEvents: caps.simplified_presence_events ?? false,
        individualEmojiChanges: caps.individual_emoji_changes ?? false,
        emptyTopicDisplayName,
        capabilities: caps,
      },
    });
    const [realmPart, userPart, presencePart] = await Promise.all([
      // Forwarded as the realm encoded it, never parsed here: its cached parts come as UTF-8 bytes, or
      // deflated once per change for a client that accepts gzip (the gateway writes one gzip stream).
      ctx.actors.pieces(realmRef, realm, { type: 'snapshot', caller: who, fetch, clientExtavatar: extavatar, includeSubscribers: p.include_subscribers ?? 'false', capabilities: caps, parts: ctx.acceptsGzip ? 'deflated' : 'utf8' }),
      ctx.actors.call(userRef, userActorId(user.realmId, user.userId), { type: 'snapshot', caller: who, fetch, emptyTopicDisplayName }),
      fetch === null || fetch.includes('presence')
        ? ctx.actors.raw(ephemeralRef, presenceActorId(user.realmId), { type: 'getPresences', caller: who, slim: (p.slim_presence ?? false) || caps.simplified_presence_events === true, historyLimitDays: p.presence_history_limit_days ?? null })
        : Promise.resolve(new RawJson('{}')),
    ]);
    const unhonored = Object.keys(caps).filter((k) => caps[k] && CLIENT_CAPABILITIES[k] === false).map((k) => `client_capabilities.${k}`);
    const rest = {
      queue_id: queue.queue_id,
      last_event_id: queue.last_event_id,
      idle_queue_timeout_secs: idleSecs,
      service_feature_level: ctx.featureLevel,
      zulip_feature_level: ctx.featureLevel,
      service_version: SERVER_VERSION,
      zulip_version: SERVER_VERSION,
      // Zulip's merge base names the upstream commit a build starts from; a Parley build is its version.
      service_merge_base: SERVER_VERSION,
      zulip_merge_base: SERVER_VERSION,
      event_queue_longpoll_timeout_seconds: 90,
      ...userPart,
    };
    return Object.assign(joinObjects([new RawJson(JSON.stringify(rest)), realmPart, presencePart]), { [IGNORED]: unhonored });
  },
});

const CHECK = process.env.PARLEY_CHECK === '1';

/**
 * One JSON object from objects that share no key (checked in check mode: a
 * key in two would reach the client twice), each as text or pieces whose
 * first and last are texts (`withParts`). Only those end texts are cut: the
 * encoded parts between are passed on as they are.
 */
function joinObjects(objects: Array<RawJson | JsonPieces>): JsonPieces {
  if (CHECK) {
    const seen = new Set<string>();
    for (const o of objects) {
      for (const k of Object.keys(JSON.parse(o instanceof RawJson ? o.text : o.text()) as object)) {
        if (seen.has(k)) throw new Error(`register parts share key ${k}`);
        seen.add(k);
      }
    }
  }
  const out: Array<string | EncodedJson> = [];
  for (const o of objects) {
    const pieces = o instanceof RawJson ? [o.text] : [...o.pieces];
    const first = pieces[0];
    const last = pieces[pieces.length - 1];
    if (typeof first !== 'string' || typeof last !== 'string') throw new Error('a register part must begin and end with text');
    if (pieces.length === 1 && first.trim() === '{}') continue;
    pieces[0] = (out.length === 0 ? '{' : ',') + first.trimStart().slice(1);
    pieces[pieces.length - 1] = (pieces[pieces.length - 1] as string).trimEnd().slice(0, -1);
    out.push(...pieces);
  }
  out.push(out.length === 0 ? '{}' : '}');
  return new JsonPieces(out);
}

/**
 * Clients that recognize a queue that is gone by the error's text as Zulip
 * wrote it before 2022, "Bad event queue id: X", and not by its code: the
 * released zulip-terminal (0.7.0, `model.py` `poll_for_events`; the fix,
 * zulip-terminal#1272, is unreleased) otherwise polls the dead queue for ever,
 * against Zulip too. They get that text; the code, status and `queue_id` are
 * what every client gets. Keyed by the client's name from its User-Agent.
 */
const OLD_QUEUE_ERROR_TEXT: ReadonlySet<string> = new Set(['ZulipTerminal']);

export const getEvents = route({
  method: 'GET',
  path: '/events',
  auth: 'required',
  params: { queue_id: QueueId, last_event_id: int().optional(), dont_block: bool().optional() },
  async handle(ctx, p) {
    const user = me(ctx);
    try {
      return await ctx.actors.raw(queueRef, queueActorId(user.realmId, user.userId), { type: 'getEvents', caller: caller(ctx), queueId: p.queue_id, lastEventId: p.last_event_id ?? null, dontBlock: p.dont_block ?? false }, ctx.limits.longPollTimeoutMs);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'BAD_EVENT_QUEUE_ID' && OLD_QUEUE_ERROR_TEXT.has(ctx.client)) throw badEventQueue(p.queue_id, true);
      throw err;
    }
  },
});

export const deleteQueue = route({
  method: 'DELETE',
  path: '/events',
  auth: 'required',
  params: { queue_id: QueueId },
  async handle(ctx, p) {
    const user = me(ctx);
    await ctx.actors.call(queueRef, queueActorId(user.realmId, user.userId), { type: 'deleteQueue', caller: caller(ctx), queueId: p.queue_id });
    return {};
  },
});
