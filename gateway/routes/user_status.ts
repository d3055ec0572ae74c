/** Status: POST /users/me/status, GET /users/{user_id}/status and POST /users/{user_id}/status. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { bool, int, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const updateStatus = route({
  method: 'POST',
  path: '/users/me/status',
  auth: 'required',
  params: { status_text: str().optional(), away: bool().optional(), emoji_name: str().optional(), emoji_code: str().optional(), reaction_type: str().optional() },
  async handle(ctx, p) {
    // The reply says whether presence changed (for the events); the client gets the envelope only.
    await ctx.actors.call(realmRef, realmActorId(me(ctx).realmId), {
      type: 'updateStatus',
      caller: caller(ctx),
      statusText: p.status_text ?? null,
      away: p.away ?? null,
      emojiName: p.emoji_name ?? null,
      emojiCode: p.emoji_code ?? null,
      reactionType: p.reaction_type ?? null,
    });
    return {};
  },
});

export const getStatus = route({
  method: 'GET',
  path: '/users/{user_id}/status',
  auth: 'required',
  params: { user_id: int().pipe(z.number().int().nonnegative()) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'getStatus', caller: caller(ctx), userId: p.user_id });
  },
});

/** An administrator sets another user's status (FL 407); `away` is the user's own (presence_enabled). */
export const updateUserStatus = route({
  method: 'POST',
  path: '/users/{user_id}/status',
  auth: 'required',
  params: { user_id: int().pipe(z.number().int().nonnegative()), status_text: str().optional(), emoji_name: str().optional(), emoji_code: str().optional(), reaction_type: str().optional() },
  async handle(ctx, p) {
    await ctx.actors.call(realmRef, realmActorId(me(ctx).realmId), {
      type: 'updateStatus',
      caller: caller(ctx),
      userId: p.user_id,
      statusText: p.status_text ?? null,
      away: null,
      emojiName: p.emoji_name ?? null,
      emojiCode: p.emoji_code ?? null,
      reactionType: p.reaction_type ?? null,
    });
    return {};
  },
});
