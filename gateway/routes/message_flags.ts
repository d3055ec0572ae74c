/** Personal message flags: POST /messages/flags, /messages/flags/narrow (FL 155), /mark_all_as_read, /mark_stream_as_read, /mark_topic_as_read. */
import { z } from 'zod';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { parseNarrow } from '../../lib/narrow.ts';
import { bool, int, json, str, wordOrInt } from '../params.ts';
import { caller, me, route } from '../route.ts';

const NonNegative = int().pipe(z.number().nonnegative({ message: 'must not be negative' }));
const Anchor = wordOrInt(['newest', 'oldest', 'first_unread'] as const, 0, "must be a message ID, 'newest', 'oldest' or 'first_unread'");
const userActor = (ctx: Parameters<typeof me>[0]) => userActorId(me(ctx).realmId, me(ctx).userId);

export const updateMessageFlags = route({
  method: 'POST',
  path: '/messages/flags',
  auth: 'required',
  params: { messages: json(z.array(z.number().int())), op: str(), flag: str() },
  async handle(ctx, p) {
    return ctx.actors.raw(userRef, userActor(ctx), { type: 'updateMessageFlags', caller: caller(ctx), op: p.op, flag: p.flag, messages: p.messages });
  },
});

export const updateMessageFlagsForNarrow = route({
  method: 'POST',
  path: '/messages/flags/narrow',
  auth: 'required',
  params: {
    anchor: Anchor,
    include_anchor: bool().optional(),
    num_before: NonNegative,
    num_after: NonNegative,
    narrow: json(z.array(z.unknown()).nullable()).optional(),
    op: str(),
    flag: str(),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(userRef, userActor(ctx), {
      type: 'updateMessageFlagsForNarrow',
      caller: caller(ctx),
      op: p.op,
      flag: p.flag,
      anchor: p.anchor,
      includeAnchor: p.include_anchor ?? true,
      numBefore: p.num_before,
      numAfter: p.num_after,
      narrow: parseNarrow(p.narrow ?? []),
    });
  },
});

export const markAllAsRead = route({
  method: 'POST',
  path: '/mark_all_as_read',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(userRef, userActor(ctx), { type: 'markAllAsRead', caller: caller(ctx) });
  },
});

export const markStreamAsRead = route({
  method: 'POST',
  path: '/mark_stream_as_read',
  auth: 'required',
  params: { stream_id: int() },
  async handle(ctx, p) {
    return ctx.actors.raw(userRef, userActor(ctx), { type: 'markChannelAsRead', caller: caller(ctx), streamId: p.stream_id, topic: null });
  },
});

export const markTopicAsRead = route({
  method: 'POST',
  path: '/mark_topic_as_read',
  auth: 'required',
  params: { stream_id: int(), topic_name: str() },
  async handle(ctx, p) {
    return ctx.actors.raw(userRef, userActor(ctx), { type: 'markChannelAsRead', caller: caller(ctx), streamId: p.stream_id, topic: p.topic_name });
  },
});
