/** Scheduled messages (FL 179): POST, GET, PATCH and DELETE /scheduled_messages. */
import { z } from 'zod';
import { MAX_MESSAGE_LENGTH } from '../../actors/realm/actions/messages/messages.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { bool, int, str } from '../params.ts';
import { caller, me, route } from '../route.ts';
import { MessageType } from './messages.ts';

/** A channel ID, or a list of user IDs (sent as JSON); a bare number is a channel or one user. */
const To = str().transform((s, c): number | number[] => {
  const t = s.trim();
  if (/^\d+$/.test(t) && Number.isSafeInteger(Number(t))) return Number(t);
  try {
    const v: unknown = JSON.parse(t);
    if (Array.isArray(v) && v.length > 0 && v.every((x) => Number.isSafeInteger(x))) return v as number[];
    if (Number.isSafeInteger(v)) return v as number;
  } catch {
    /* reported below */
  }
  c.addIssue({ code: 'custom', message: 'must be a channel ID or a list of user IDs' });
  return z.NEVER;
});
const Content = str().pipe(z.string().max(MAX_MESSAGE_LENGTH * 4, { message: `must not be longer than ${MAX_MESSAGE_LENGTH} characters` }));
const Id = int().pipe(z.number().int().nonnegative());

/** A direct message's recipients as a list, even when one bare ID was sent. */
const recipients = (type: 'stream' | 'private', to: number | number[]) => (type === 'private' && !Array.isArray(to) ? [to] : to);

export const createScheduledMessage = route({
  method: 'POST',
  path: '/scheduled_messages',
  auth: 'required',
  params: {
    type: MessageType,
    to: To,
    content: Content,
    topic: str().optional(),
    scheduled_delivery_timestamp: int(),
    read_by_sender: bool().optional(),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), {
      type: 'createScheduledMessage',
      caller: caller(ctx),
      recipientType: p.type,
      to: recipients(p.type, p.to),
      topic: p.topic ?? null,
      content: p.content,
      deliverAt: p.scheduled_delivery_timestamp,
      readBySender: p.read_by_sender ?? null,
    });
  },
});

export const listScheduledMessages = route({
  method: 'GET',
  path: '/scheduled_messages',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'listScheduledMessages', caller: caller(ctx) });
  },
});

export const editScheduledMessage = route({
  method: 'PATCH',
  path: '/scheduled_messages/{scheduled_message_id}',
  auth: 'required',
  params: {
    scheduled_message_id: Id,
    type: MessageType.optional(),
    to: To.optional(),
    content: Content.optional(),
    topic: str().optional(),
    scheduled_delivery_timestamp: int().optional(),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), {
      type: 'editScheduledMessage',
      caller: caller(ctx),
      id: p.scheduled_message_id,
      recipientType: p.type ?? null,
      to: p.to === undefined ? null : recipients(p.type ?? (Array.isArray(p.to) ? 'private' : 'stream'), p.to),
      topic: p.topic ?? null,
      content: p.content ?? null,
      deliverAt: p.scheduled_delivery_timestamp ?? null,
    });
  },
});

export const deleteScheduledMessage = route({
  method: 'DELETE',
  path: '/scheduled_messages/{scheduled_message_id}',
  auth: 'required',
  params: { scheduled_message_id: Id },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'deleteScheduledMessage', caller: caller(ctx), id: p.scheduled_message_id });
  },
});

