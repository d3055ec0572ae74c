/** POST /user_topics: a topic's visibility policy for the current user. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { int, str } from '../params.ts';
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
