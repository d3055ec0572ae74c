/** GET /messages/matches_narrow and GET /messages/{message_id}. */
import { z } from 'zod';
import { clientExtavatar } from '../../actors/format.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { parseNarrow } from '../../lib/narrow.ts';
import { bool, int, json } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const matchesNarrow = route({
  method: 'GET',
  path: '/messages/matches_narrow',
  auth: 'required',
  params: { msg_ids: json(z.array(z.number().int())), narrow: json(z.array(z.unknown())) },
  async handle(ctx, p) {
    const u = me(ctx);
    return ctx.actors.raw(userRef, userActorId(u.realmId, u.userId), { type: 'matchesNarrow', caller: caller(ctx), ids: p.msg_ids, narrow: parseNarrow(p.narrow) });
  },
});

export const getMessage = route({
  method: 'GET',
  path: '/messages/{message_id}',
  auth: 'required',
  params: {
    message_id: int(),
    apply_markdown: bool().optional(),
    allow_empty_topic_name: bool().optional(),
    client_extavatar: bool().optional(),
    client_gravatar: bool().optional(),
  },
  async handle(ctx, p) {
    const u = me(ctx);
    return ctx.actors.raw(userRef, userActorId(u.realmId, u.userId), { type: 'getMessage', caller: caller(ctx), id: p.message_id, applyMarkdown: p.apply_markdown ?? true, clientExtavatar: clientExtavatar(p), allowEmptyTopicName: p.allow_empty_topic_name ?? false });
  },
});

export const topicHistory = route({
  method: 'GET',
  path: '/users/me/{stream_id}/topics',
  auth: 'required',
  params: {
    stream_id: int(),
    allow_empty_topic_name: bool().optional(),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'topicHistory', caller: caller(ctx), streamId: p.stream_id, allowEmptyTopicName: p.allow_empty_topic_name ?? false });
  },
});
