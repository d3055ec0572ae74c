/**
 * Scheduled messages (FL 179): stored by the realm, each with a durable timer
 * (`Tx.setTimer`) that sends it at its time as a message with a new ID. The
 * timer's handler deletes the scheduled message in the same commit as the
 * send, so however often the timer runs (a node killed mid-delivery, a
 * restart after the time passed), one message is sent.
 *
 * Reminders (FL 381, `reminders.ts`) are scheduled messages too, as in Zulip
 * (`delivery_type` REMIND): the same records, counter and timer, told apart
 * by `reminderTargetMessageId`; Notification Bot sends them to their user.
 * Nothing here lists, edits or deletes a reminder as a scheduled message.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { type ScheduledMessage, T } from '../../../../storage/tables.ts';
import { toUsers } from '../../../events/delivery.ts';
import type { ScheduledMessageObject } from '../../../events/schema.ts';
import { defineAction, defineQuery, defineTimer, type Tx } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { systemBot } from '../organization/system_bots.ts';
import { accessEventsOf, applySend, planSend, type SendPlan, sendDelivery, type SendRequest, SendFields } from './messages.ts';
import { DELIVER_SCHEDULED, type RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();
const timer = defineTimer<RealmState>();

const DELIVER = DELIVER_SCHEDULED;

export function formatScheduled(m: ScheduledMessage): ScheduledMessageObject {
  return {
    scheduled_message_id: m.id,
    type: m.type,
    to: m.to,
    ...(m.type === 'stream' ? { topic: m.topic } : {}),
    content: m.content,
    rendered_content: m.renderedContent,
    scheduled_delivery_timestamp: m.deliverAt,
    failed: m.failed,
  };
}

/** The scheduled messages of a user, soonest first (GET /scheduled_messages and the register key). */
export function scheduledOf(state: Readonly<RealmState>, userId: number): ScheduledMessageObject[] {
  return ownedBy(state, userId, false).map(formatScheduled);
}

/** A user's scheduled messages (or reminders), soonest first. O(scheduled messages of the realm). */
export function ownedBy(state: Readonly<RealmState>, userId: number, reminders: boolean): ScheduledMessage[] {
  return [...state.scheduled.values()]
    .filter((m) => m.senderId === userId && (m.reminderTargetMessageId !== null) === reminders)
    .sort((a, b) => a.deliverAt - b.deliverAt || a.id - b.id);
}

/** The request a scheduled message sends: scheduled messages name channels and people by ID. */
function sendRequest(m: Pick<ScheduledMessage, 'type' | 'to' | 'topic' | 'content' | 'readBySender'>): SendRequest {
  return { client: 'scheduler', recipientType: m.type, to: m.to, topic: m.topic, content: m.content, readBySender: m.readBySender };
}

export function checkTime(deliverAt: number): void {
  if (deliverAt * 1000 <= Date.now()) throw badRequest('Scheduled delivery time must be in the future.');
}

function checkTarget(type: 'stream' | 'private', to: number | number[]): void {
  if (type === 'stream' && typeof to !== 'number') throw badRequest("Invalid 'to': a channel message is scheduled to one channel ID", { var_name: 'to' });
  if (type === 'private' && !Array.isArray(to)) throw badRequest("Invalid 'to': a direct message is scheduled to a list of user IDs", { var_name: 'to' });
}

function setDeliveryTimer(tx: Tx, m: ScheduledMessage): void {
  tx.setTimer(DELIVER, m.deliverAt * 1000, { id: m.id }, m.id);
}

/** Stores a new scheduled message (or reminder) with its delivery timer; `id` comes from `state.take('scheduled', tx)`. */
export function storeScheduled(state: RealmState, tx: Tx, record: ScheduledMessage): void {
  state.scheduled.set(record.id, record);
  tx.write(T.scheduledMessages.at(state.realmId, record.id).put(record));
  setDeliveryTimer(tx, record);
}

/** Deletes a scheduled message (or reminder) and its timer, if it still has one. */
export function dropScheduled(state: RealmState, tx: Tx, m: ScheduledMessage): void {
  state.dropScheduled(tx, m);
}

const To = z.union([z.number().int(), z.array(z.number().int())]);

export const createScheduled = action({
  type: 'createScheduledMessage',
  fields: z.object({ recipientType: SendFields.recipientType, to: To, topic: z.string().nullable(), content: z.string(), deliverAt: z.number().int(), readBySender: z.boolean().nullable() }),
  check(state, msg) {
    const sender = actingUser(state, msg.caller);
    checkTarget(msg.recipientType, msg.to);
    const plan = planSend(state, sender, { client: 'scheduler', recipientType: msg.recipientType, to: msg.to, topic: msg.topic, content: msg.content, readBySender: msg.readBySender });
    checkTime(msg.deliverAt);
    return { plan, msg };
  },
  apply(state, p, tx) {
    const id = state.take('scheduled', tx);
    const record: ScheduledMessage = {
      id,
      senderId: p.plan.senderId,
      type: p.msg.recipientType,
      to: p.msg.recipientType === 'stream' ? p.plan.channelId! : (p.msg.to as number[]),
      topic: p.plan.topic,
      content: p.plan.content,
      renderedContent: p.plan.rendered,
      deliverAt: p.msg.deliverAt,
      readBySender: p.msg.readBySender,
      failed: false,
      failure: null,
      reminderTargetMessageId: null,
    };
    storeScheduled(state, tx, record);
    return record;
  },
  events: (state, _p, record) => [toUsers(state.realmId, [record.senderId], { type: 'scheduled_messages', op: 'add', scheduled_messages: [formatScheduled(record)] })],
  reply: (record) => ({ scheduled_message_id: record.id }),
});

/** The caller's own scheduled message, or the error Zulip gives for any other ID. */
function ownScheduled(state: Readonly<RealmState>, userId: number, id: number): ScheduledMessage {
  const m = state.scheduled.get(id);
  if (!m || m.senderId !== userId || m.reminderTargetMessageId !== null) throw badRequest('Scheduled message does not exist');
  return m;
}

export const listScheduled = query({
  type: 'listScheduledMessages',
  fields: z.object({}),
  run(state, msg) {
    return { scheduled_messages: scheduledOf(state, actingUser(state, msg.caller).id) };
  },
});

export const editScheduled = action({
  type: 'editScheduledMessage',
  fields: z.object({
    id: z.number().int(),
    recipientType: SendFields.recipientType.nullable(),
    to: To.nullable(),
    topic: z.string().nullable(),
    content: z.string().nullable(),
    deliverAt: z.number().int().nullable(),
  }),
  check(state, msg) {
    const sender = actingUser(state, msg.caller);
    const old = ownScheduled(state, sender.id, msg.id);
    if (msg.recipientType !== null && msg.to === null) throw badRequest('Recipient required when updating type of scheduled message.');
    if (msg.recipientType === null && msg.to === null && msg.topic === null && msg.content === null && msg.deliverAt === null) throw badRequest('Nothing to change');
    const type = msg.recipientType ?? old.type;
    const to = msg.to ?? old.to;
    checkTarget(type, to);
    const plan = planSend(state, sender, sendRequest({ type, to, topic: msg.topic ?? old.topic, content: msg.content ?? old.content, readBySender: old.readBySender }));
    const deliverAt = msg.deliverAt ?? old.deliverAt;
    // A time in the past is refused when it is being set, or when a failed message is being retried.
    if (msg.deliverAt !== null || old.failed) checkTime(deliverAt);
    return { old, plan, type, to, deliverAt };
  },
  apply(state, p, tx) {
    const record: ScheduledMessage = {
      ...p.old,
      type: p.type,
      to: p.type === 'stream' ? p.plan.channelId! : p.to,
      topic: p.plan.topic,
      content: p.plan.content,
      renderedContent: p.plan.rendered,
      deliverAt: p.deliverAt,
      failed: false,
      failure: null,
    };
    state.scheduled.set(record.id, record);
    tx.write(T.scheduledMessages.at(state.realmId, record.id).put(record));
    if (!p.old.failed) tx.clearTimer(DELIVER, p.old.deliverAt * 1000, p.old.id);
    setDeliveryTimer(tx, record);
    return record;
  },
  reply: () => ({}),
  events(state, p, record) {
    return [toUsers(state.realmId, [p.old.senderId], { type: 'scheduled_messages', op: 'update', scheduled_message: formatScheduled(record) })];
  },
});

export const deleteScheduled = action({
  type: 'deleteScheduledMessage',
  fields: z.object({ id: z.number().int() }),
  check(state, msg) {
    return ownScheduled(state, actingUser(state, msg.caller).id, msg.id);
  },
  apply(state, m, tx) {
    dropScheduled(state, tx, m);
    return {};
  },
  events(state, m) {
    return [toUsers(state.realmId, [m.senderId], { type: 'scheduled_messages', op: 'remove', scheduled_message_id: m.id })];
  },
});

type DeliveryPlan = { m: ScheduledMessage; send: SendPlan; stored?: ReturnType<typeof applySend> } | { m: ScheduledMessage; failure: string };

/**
 * Sends a scheduled message at its time; a message that can no longer be
 * sent is marked failed. A reminder is sent by Notification Bot to its user
 * (Zulip's REMIND delivery); one that cannot be sent (its user was
 * deactivated) is dropped, as reminders have no `update` event to say so.
 */
export const deliverScheduled = timer({
  name: DELIVER,
  check(state, payload: { id: number }): DeliveryPlan {
    const m = state.scheduled.get(payload.id);
    // Already sent (the timer ran before, and its commit deleted the message) or deleted: nothing to do.
    if (!m || m.failed) throw new ApiError('BAD_REQUEST', 'Scheduled message is gone', 400);
    const owner = state.users.get(m.senderId);
    try {
      if (!owner?.isActive) throw badRequest('The sender is deactivated');
      const sender = m.reminderTargetMessageId === null ? owner : systemBot(state, 'notification');
      if (!sender) throw badRequest('The organization has no Notification Bot');
      return { m, send: planSend(state, sender, sendRequest(m)) };
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return { m, failure: err.message };
    }
  },
  apply(state, p, tx) {
    if ('failure' in p && p.m.reminderTargetMessageId === null) {
      const failed = { ...p.m, failed: true, failure: p.failure };
      state.scheduled.set(failed.id, failed);
      tx.write(T.scheduledMessages.at(state.realmId, failed.id).put(failed));
      return null;
    }
    // The timer that is running is deleted by its own commit.
    state.scheduled.delete(p.m.id);
    tx.write(T.scheduledMessages.at(state.realmId, p.m.id).delete());
    if ('failure' in p) return null;
    p.stored = applySend(state, p.send, tx);
    return p.stored.id;
  },
  events(state, p) {
    const gone = p.m.reminderTargetMessageId === null ? toUsers(state.realmId, [p.m.senderId], { type: 'scheduled_messages', op: 'remove', scheduled_message_id: p.m.id }) : toUsers(state.realmId, [p.m.senderId], { type: 'reminders', op: 'remove', reminder_id: p.m.id });
    if (!('failure' in p)) return [gone, ...accessEventsOf(state, p.send), sendDelivery(state, p.stored!, null)];
    if (p.m.reminderTargetMessageId !== null) return [gone];
    return [toUsers(state.realmId, [p.m.senderId], { type: 'scheduled_messages', op: 'update', scheduled_message: formatScheduled(state.scheduled.get(p.m.id)!) })];
  },
});
