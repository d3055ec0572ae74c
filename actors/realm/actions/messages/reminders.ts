/**
 * Message reminders (FL 381, 399, 415; Zulip's `zerver/actions/reminders.py`
 * and `zerver/lib/reminders.py`): a user asks to be reminded of a message
 * they can read at a time to come, with a note. A reminder is a scheduled
 * message of the realm (`scheduled_messages.ts`: the same record, counter
 * and durable timer, with `reminderTargetMessageId` set) whose content quotes
 * the message, links it and carries the note, written when it is made; at
 * its time Notification Bot sends it to the user as a direct message, once,
 * also across a restart. Only its user lists or deletes it; `reminders`
 * events (add, remove) and the register key keep clients up to date.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { realmUrl } from '../../../../lib/hosts.ts';
import type { ScheduledMessage, StoredMessage, UserRecord } from '../../../../storage/tables.ts';
import { toUsers } from '../../../events/delivery.ts';
import type { ReminderObject } from '../../../events/schema.ts';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { accessMessage, readMessage } from './message_edit.ts';
import { MAX_MESSAGE_LENGTH, planSend } from './messages.ts';
import { conversationUrl } from '../notifications/notifications.ts';
import { checkTime, dropScheduled, ownedBy, storeScheduled } from './scheduled_messages.ts';
import type { RealmState } from '../../state/state.ts';
import { silentMention } from '../../rules/people.ts';
import { mentionList, messageLinkSyntax, truncate, unusedFence } from '../../rules/bot_text.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

/** Zulip's MAX_REMINDER_NOTE_LENGTH (register's `max_reminder_note_length`, FL 415). */
export const MAX_REMINDER_NOTE_LENGTH = 1000;

export function formatReminder(m: ScheduledMessage): ReminderObject {
  return {
    reminder_id: m.id,
    type: 'private',
    to: m.to as number[],
    content: m.content,
    rendered_content: m.renderedContent,
    scheduled_delivery_timestamp: m.deliverAt,
    failed: m.failed,
    reminder_target_message_id: m.reminderTargetMessageId!,
  };
}

/** A user's reminders, soonest first (GET /reminders and the register key). */
export const remindersOf = (state: Readonly<RealmState>, userId: number): ReminderObject[] => ownedBy(state, userId, true).map(formatReminder);

/** Zulip's `normalize_note_text`: trailing whitespace and leading blank lines dropped, then the length checked. */
function normalizeNote(note: string): string {
  const body = note.trimEnd().replace(/^\n+/, '');
  if ([...body].length > MAX_REMINDER_NOTE_LENGTH) throw badRequest(`Maximum reminder note length: ${MAX_REMINDER_NOTE_LENGTH} characters`);
  return body;
}

/** Zulip's `get_reminder_formatted_content`: who said what where, quoted, with the note. */
export function reminderContent(state: Readonly<RealmState>, user: UserRecord, m: StoredMessage, note: string | null): string {
  const sender = state.users.get(m.senderId) ?? user;
  const url = conversationUrl(state, realmUrl(state.siteUrl, state.meta?.stringId ?? ''), m);
  const who = `${silentMention(sender)} [${'%s'}](${url})`;
  const kind = m.streamId !== null ? 'message' : 'direct message';
  let content = note ? `You requested a reminder for the following ${kind}. Note:\n > ${note}` : `You requested a reminder for the following ${kind}.`;
  content += '\n\n';
  let where: string;
  if (m.streamId !== null) {
    where = `in ${messageLinkSyntax(state.channels.get(m.streamId)?.name ?? '', m.topic, m.id, url)}`;
  } else {
    const others = m.dmUserIds!.filter((id) => id !== m.senderId).map((id) => state.users.get(id)).filter((u) => u !== undefined);
    where = `to ${mentionList(others.length ? others : [sender])}`;
  }
  const widget = m.content.startsWith('/poll') ? 'poll' : m.content.startsWith('/todo') ? 'todo list' : null;
  if (widget) return content + `${who.replace('%s', 'sent')} a ${widget} ${where}.`;
  content += `${who.replace('%s', 'said')} ${where}:\n`;
  const fence = unusedFence(content);
  const room = MAX_MESSAGE_LENGTH - [...content].length - [...`${fence}quote\n\n${fence}`].length;
  return content + `${fence}quote\n${truncate(m.content, room, '\n[message truncated]')}\n${fence}`;
}

export const createReminder = action({
  type: 'createReminder',
  fields: z.object({ messageId: z.number().int(), deliverAt: z.number().int(), note: z.string().nullable() }),
  prepare: (state, msg, ctx) => readMessage(ctx, state.realmId, msg.messageId),
  check(state, msg, found) {
    const user = actingUser(state, msg.caller);
    checkTime(msg.deliverAt);
    const m = accessMessage(state, user, found);
    const note = msg.note === null ? null : normalizeNote(msg.note);
    const content = reminderContent(state, user, m, note);
    // Checked as the user's message to themself (Zulip's check_message), rendered as theirs.
    const plan = planSend(state, user, { client: 'reminders', recipientType: 'private', to: [user.id], topic: null, content, readBySender: false });
    return { user, target: m.id, plan, deliverAt: msg.deliverAt };
  },
  apply(state, p, tx) {
    const record: ScheduledMessage = {
      id: state.take('scheduled', tx),
      senderId: p.user.id,
      type: 'private',
      to: [p.user.id],
      topic: '',
      content: p.plan.content,
      renderedContent: p.plan.rendered,
      deliverAt: p.deliverAt,
      readBySender: false,
      failed: false,
      failure: null,
      reminderTargetMessageId: p.target,
    };
    storeScheduled(state, tx, record);
    return record;
  },
  events: (state, _p, record) => [toUsers(state.realmId, [record.senderId], { type: 'reminders', op: 'add', reminders: [formatReminder(record)] })],
  reply: (record) => ({ reminder_id: record.id }),
});

export const listReminders = query({
  type: 'listReminders',
  fields: z.object({}),
  run: (state, msg) => ({ reminders: remindersOf(state, actingUser(state, msg.caller).id) }),
});

export const deleteReminder = action({
  type: 'deleteReminder',
  fields: z.object({ id: z.number().int() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    const m = state.scheduled.get(msg.id);
    // Zulip's access_reminder: another user's reminder cannot be told from a missing one.
    if (!m || m.senderId !== user.id || m.reminderTargetMessageId === null) throw new ApiError('BAD_REQUEST', 'Reminder does not exist', 404);
    return m;
  },
  apply(state, m, tx) {
    dropScheduled(state, tx, m);
    return {};
  },
  events: (state, m) => [toUsers(state.realmId, [m.senderId], { type: 'reminders', op: 'remove', reminder_id: m.id })],
});
