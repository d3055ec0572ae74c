/** GET /streams/{stream_id}/email_address (FL 226): "" here, as a Zulip server without an email gateway answers (`actors/realm/actions/channels/channel_email.ts`). */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { int, json } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const channelEmailAddress = route({
  method: 'GET',
  path: '/streams/{stream_id}/email_address',
  auth: 'required',
  params: { stream_id: int().pipe(z.number().int().nonnegative()), sender_id: json(z.number().int().nonnegative()).optional() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'channelEmailAddress', caller: caller(ctx), streamId: p.stream_id, senderId: p.sender_id ?? null }),
});
