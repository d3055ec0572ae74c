/** GET /messages/{message_id}/read_receipts. */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { int } from '../params.ts';
import { caller, me, route } from '../route.ts';
import { z } from 'zod';

export const readReceipts = route({
  method: 'GET',
  path: '/messages/{message_id}/read_receipts',
  auth: 'required',
  params: { message_id: int().pipe(z.number().nonnegative({ message: 'must not be negative' })) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'readReceipts', caller: caller(ctx), id: p.message_id });
  },
});
