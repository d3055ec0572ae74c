/** PATCH and DELETE /messages/{message_id}, GET /messages/{message_id}/history, POST /streams/{stream_id}/delete_topic. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { MAX_MESSAGE_LENGTH } from '../../actors/realm/actions/messages/messages.ts';
import { badRequest } from '../../lib/errors.ts';
import { bool, int, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

const MessageId = int().pipe(z.number().nonnegative({ message: 'must not be negative' }));

export const updateMessage = route({
  method: 'PATCH',
  path: '/messages/{message_id}',
  auth: 'required',
  params: {
    message_id: MessageId,
    content: str().pipe(z.string().max(MAX_MESSAGE_LENGTH * 4, { message: `must not be longer than ${MAX_MESSAGE_LENGTH} characters` })).optional(),
    topic: str().optional(),
    subject: str().optional(),
    stream_id: int().optional(),
    propagate_mode: str().pipe(z.enum(['change_one', 'change_later', 'change_all'], { message: 'must be change_one, change_later or change_all' })).optional(),
    send_notification_to_old_thread: bool().optional(),
    send_notification_to_new_thread: bool().optional(),
    prev_content_sha256: str().optional(),
  },
  async handle(ctx, p) {
    const topic = p.topic ?? p.subject ?? null;
    if (p.propagate_mode && p.propagate_mode !== 'change_one' && topic === null && p.stream_id === undefined) throw badRequest('Invalid propagate_mode without topic edit');
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), {
      type: 'updateMessage',
      caller: caller(ctx),
      id: p.message_id,
      content: p.content ?? null,
      topic,
      streamId: p.stream_id ?? null,
      propagateMode: p.propagate_mode ?? 'change_one',
      notifyOld: p.send_notification_to_old_thread ?? false,
      notifyNew: p.send_notification_to_new_thread ?? true,
      prevContentSha256: p.prev_content_sha256 ?? null,
    });
  },
});

export const deleteMessage = route({
  method: 'DELETE',
  path: '/messages/{message_id}',
  auth: 'required',
  params: { message_id: MessageId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'deleteMessage', caller: caller(ctx), id: p.message_id });
  },
});

export const messageHistory = route({
  method: 'GET',
  path: '/messages/{message_id}/history',
  auth: 'required',
  params: { message_id: MessageId, allow_empty_topic_name: bool().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'messageHistory', caller: caller(ctx), id: p.message_id, allowEmptyTopicName: p.allow_empty_topic_name ?? false });
  },
});

export const deleteTopic = route({
  method: 'POST',
  path: '/streams/{stream_id}/delete_topic',
  auth: 'required',
  params: { stream_id: int().pipe(z.number().nonnegative({ message: 'must not be negative' })), topic_name: str() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'deleteTopic', caller: caller(ctx), streamId: p.stream_id, topic: p.topic_name });
  },
});
