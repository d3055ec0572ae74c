/** Message reminders (FL 381, 399, 415): POST and GET /reminders, DELETE /reminders/{reminder_id}. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { int, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const createReminder = route({
  method: 'POST',
  path: '/reminders',
  auth: 'required',
  params: { message_id: int(), scheduled_delivery_timestamp: int(), note: str().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'createReminder', caller: caller(ctx), messageId: p.message_id, deliverAt: p.scheduled_delivery_timestamp, note: p.note ?? null });
  },
});

export const listReminders = route({
  method: 'GET',
  path: '/reminders',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'listReminders', caller: caller(ctx) });
  },
});

export const deleteReminder = route({
  method: 'DELETE',
  path: '/reminders/{reminder_id}',
  auth: 'required',
  params: { reminder_id: int().pipe(z.number().int().nonnegative()) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'deleteReminder', caller: caller(ctx), id: p.reminder_id });
  },
});
