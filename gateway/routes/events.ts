/**
 * POST /register, GET /events (long poll) and DELETE /events.
 *
 * Register creates the queue first and then reads the snapshot, so an event
 * that happens in between is in the queue (a client may see it twice, never
 * miss it), as Zulip does.
 */
import { z } from 'zod';
import { FEATURE_LEVEL, SERVER_VERSION } from '../../actors/realm/snapshot.ts';
import { parseNarrow } from '../../lib/narrow.ts';
import { bool, int, json, str } from '../params.ts';
import { me, route } from '../route.ts';

const StringList = json(z.array(z.string()).nullable());

export const register = route({
  method: 'POST',
  path: '/register',
  auth: 'required',
  params: {
    apply_markdown: bool().optional(),
    client_extavatar: bool().optional(),
    client_gravatar: bool().optional(),
    include_subscribers: str().pipe(z.enum(['true', 'false', 'partial'], { message: "must be 'true', 'false' or 'partial'" })).optional(),
    slim_presence: bool().optional(),
    presence_history_limit_days: int().optional(),
    event_types: StringList.optional(),
    all_public_streams: bool().optional(),
    client_capabilities: json(z.record(z.string(), z.boolean())).optional(),
    fetch_event_types: StringList.optional(),
    narrow: json(z.array(z.unknown())).optional(),
    idle_queue_timeout: int().pipe(z.number().min(1)).optional(),
  },
  async handle(ctx, p) {
    const caller = me(ctx);
    const eventTypes = p.event_types ?? null;
    const fetch = p.fetch_event_types !== undefined && p.fetch_event_types !== null ? p.fetch_event_types : eventTypes;
    const narrow = parseNarrow(p.narrow ?? []);
    const clientExtavatar = p.client_extavatar ?? p.client_gravatar ?? true;
    const idleSecs = Math.min(p.idle_queue_timeout ?? ctx.limits.queueIdleSecs, ctx.limits.queueIdleSecs * 7);
    const caps = p.client_capabilities ?? {};
    const queue = await ctx.actors.queue<{ queue_id: string; last_event_id: number }>(caller.userId, {
      type: 'register',
      realmId: caller.realmId,
      options: { eventTypes, narrow, allPublicStreams: p.all_public_streams ?? false, applyMarkdown: p.apply_markdown ?? false, clientExtavatar, bulkMessageDeletion: caps.bulk_message_deletion ?? false, idleSecs },
    });
    const [realm, user] = await Promise.all([
      ctx.actors.realm(caller.realmId, { type: 'snapshot', userId: caller.userId, fetch, clientExtavatar, includeSubscribers: p.include_subscribers ?? 'false' }),
      ctx.actors.user(caller.userId, { type: 'snapshot', realmId: caller.realmId, fetch }),
    ]);
    return {
      queue_id: queue.queue_id,
      last_event_id: queue.last_event_id,
      idle_queue_timeout_secs: idleSecs,
      service_feature_level: FEATURE_LEVEL,
      service_version: SERVER_VERSION,
      event_queue_longpoll_timeout_seconds: 90,
      ...realm,
      ...user,
    };
  },
});

export const getEvents = route({
  method: 'GET',
  path: '/events',
  auth: 'required',
  params: {
    queue_id: str().pipe(z.string().min(1, { message: 'must not be empty' })),
    last_event_id: int().optional(),
    dont_block: bool().optional(),
  },
  async handle(ctx, p) {
    const caller = me(ctx);
    return ctx.actors.queueRaw(caller.userId, { type: 'getEvents', queueId: p.queue_id, lastEventId: p.last_event_id ?? null, dontBlock: p.dont_block ?? false }, ctx.limits.longPollTimeoutMs);
  },
});

export const deleteQueue = route({
  method: 'DELETE',
  path: '/events',
  auth: 'required',
  params: { queue_id: str().pipe(z.string().min(1, { message: 'must not be empty' })) },
  async handle(ctx, p) {
    const caller = me(ctx);
    await ctx.actors.queue(caller.userId, { type: 'deleteQueue', queueId: p.queue_id });
    return {};
  },
});
