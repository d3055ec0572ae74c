/** POST /user_topics: a topic's visibility policy for the current user; the older muted_topics endpoint. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { ApiError, badRequest } from '../../lib/errors.ts';
import { channelName, int, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const updateUserTopic = route({
  method: 'POST',
  path: '/user_topics',
  auth: 'required',
  params: { stream_id: int(), topic: str(), visibility_policy: int().pipe(z.number().int().min(0, { message: 'must be 0, 1, 2 or 3' }).max(3, { message: 'must be 0, 1, 2 or 3' })) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'updateUserTopic', caller: caller(ctx), streamId: p.stream_id, topic: p.topic, policy: p.visibility_policy });
  },
});

/**
 * PATCH /users/me/subscriptions/muted_topics: Zulip's endpoint from before
 * POST /user_topics (FL 170), kept for older clients: `op` add mutes the
 * topic, remove gives it back its channel's default; the channel by
 * `stream_id` or by name (`stream`), one of the two. Muting a muted topic or
 * unmuting one that is not muted succeeds (FL 169).
 */
export const updateMutedTopic = route({
  method: 'PATCH',
  path: '/users/me/subscriptions/muted_topics',
  auth: 'required',
  params: { stream_id: int().optional(), stream: channelName().optional(), topic: str(), op: str().pipe(z.enum(['add', 'remove'], { message: "must be 'add' or 'remove'" })) },
  async handle(ctx, p) {
    if ((p.stream_id === undefined) === (p.stream === undefined)) throw badRequest("Please choose one: 'stream' or 'stream_id'.");
    const realm = realmActorId(me(ctx).realmId);
    const streamId = p.stream_id ?? (await ctx.actors.call(realmRef, realm, { type: 'getStreamId', caller: caller(ctx), name: p.stream! })).stream_id;
    try {
      await ctx.actors.call(realmRef, realm, { type: 'updateUserTopic', caller: caller(ctx), streamId, topic: p.topic, policy: p.op === 'add' ? 1 : 0 });
    } catch (err) {
      // Unmuting a topic that is not muted is a success here (POST /user_topics answers 'Nothing to be done').
      if (!(p.op === 'remove' && err instanceof ApiError && err.message === 'Nothing to be done')) throw err;
    }
    return {};
  },
});
