/**
 * POST /register, GET /events (long poll) and DELETE /events.
 *
 * Register creates the queue first and then reads the snapshot, so an event
 * that happens in between is in the queue (a client may see it twice, never
 * miss it), as Zulip does.
 */
import { z } from 'zod';
import { clientExtavatar } from '../../actors/format.ts';
import { queueActorId, queueRef } from '../../actors/queue/ref.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { CLIENT_CAPABILITIES } from '../../lib/features.ts';
import { parseNarrow } from '../../lib/narrow.ts';
import { SERVER_VERSION } from '../../lib/version.ts';
import { bool, int, json, str, unsupported } from '../params.ts';
import { caller, IGNORED, me, route } from '../route.ts';
import { IncludeSubscribers } from './subscriptions.ts';

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
    // There is no presence data yet for these to shape.
    slim_presence: unsupported(bool()),
    presence_history_limit_days: unsupported(int()),
    event_types: StringList.optional(),
    all_public_streams: bool().optional(),
    client_capabilities: json(z.record(z.string(), z.boolean())).optional(),
    fetch_event_types: StringList.optional(),
    narrow: json(z.array(z.unknown())).optional(),
    idle_queue_timeout: int().pipe(z.number().min(1)).optional(),
  },
  async handle(ctx, p) {
    const user = me(ctx);
    const who = caller(ctx);
    const eventTypes = p.event_types ?? null;
    const fetch = p.fetch_event_types ?? eventTypes;
    const extavatar = clientExtavatar(p);
    const idleSecs = Math.min(p.idle_queue_timeout ?? ctx.limits.queueIdleSecs, ctx.limits.queueIdleSecs * 7);
    const caps = p.client_capabilities ?? {};
    const realm = realmActorId(user.realmId);
    const parsed = parseNarrow(p.narrow ?? []);
    const narrow = parsed.length ? (await ctx.actors.call(realmRef, realm, { type: 'narrowForQueue', caller: who, narrow: parsed })).narrow : [];
    const queue = await ctx.actors.call(queueRef, queueActorId(user.realmId, user.userId), {
      type: 'register',
      caller: who,
      options: { eventTypes, narrow, allPublicStreams: p.all_public_streams ?? false, applyMarkdown: p.apply_markdown ?? false, clientExtavatar: extavatar, bulkMessageDeletion: caps.bulk_message_deletion ?? false, includeDeactivatedGroups: caps.include_deactivated_groups ?? false, idleSecs },
    });
    const [realmPart, userPart] = await Promise.all([
      ctx.actors.call(realmRef, realm, { type: 'snapshot', caller: who, fetch, clientExtavatar: extavatar, includeSubscribers: p.include_subscribers ?? 'false', includeDeactivatedGroups: caps.include_deactivated_groups ?? false }),
      ctx.actors.call(userRef, userActorId(user.realmId, user.userId), { type: 'snapshot', caller: who, fetch }),
    ]);
    const unhonored = Object.keys(caps).filter((k) => caps[k] && CLIENT_CAPABILITIES[k] === false).map((k) => `client_capabilities.${k}`);
    return {
      queue_id: queue.queue_id,
      last_event_id: queue.last_event_id,
      idle_queue_timeout_secs: idleSecs,
      service_feature_level: ctx.featureLevel,
      zulip_feature_level: ctx.featureLevel,
      service_version: SERVER_VERSION,
      zulip_version: SERVER_VERSION,
      event_queue_longpoll_timeout_seconds: 90,
      ...realmPart,
      ...userPart,
      [IGNORED]: unhonored,
    };
  },
});

export const getEvents = route({
  method: 'GET',
  path: '/events',
  auth: 'required',
  params: { queue_id: QueueId, last_event_id: int().optional(), dont_block: bool().optional() },
  async handle(ctx, p) {
    const user = me(ctx);
    return ctx.actors.raw(queueRef, queueActorId(user.realmId, user.userId), { type: 'getEvents', caller: caller(ctx), queueId: p.queue_id, lastEventId: p.last_event_id ?? null, dontBlock: p.dont_block ?? false }, ctx.limits.longPollTimeoutMs);
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
