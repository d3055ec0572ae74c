/** POST and DELETE /messages/{message_id}/reactions. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { int, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

const params = {
  message_id: int().pipe(z.number().nonnegative({ message: 'must not be negative' })),
  emoji_name: str().optional(),
  emoji_code: str().optional(),
  reaction_type: str().optional(),
};

export const addReaction = route({
  method: 'POST',
  path: '/messages/{message_id}/reactions',
  auth: 'required',
  params,
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'addReaction', caller: caller(ctx), id: p.message_id, emojiName: p.emoji_name ?? null, emojiCode: p.emoji_code ?? null, reactionType: p.reaction_type ?? null });
  },
});

export const removeReaction = route({
  method: 'DELETE',
  path: '/messages/{message_id}/reactions',
  auth: 'required',
  params,
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'removeReaction', caller: caller(ctx), id: p.message_id, emojiName: p.emoji_name ?? null, emojiCode: p.emoji_code ?? null, reactionType: p.reaction_type ?? null });
  },
});
