/**
 * Message reports (FL 382; Zulip's `zerver/views/message_report.py` and
 * `zerver/lib/message_report.py`): a user who can read a message reports it
 * for one of `server_report_message_types` (FL 435), and Notification Bot
 * posts the report in the organization's `moderation_request_channel_id`
 * (FL 331, a private channel), in the topic "<sender> moderation": who
 * reported whose message when, the reason and description quoted, and the
 * message behind a spoiler with its link. Refused when the organization has
 * no moderation channel.
 */
import { z } from 'zod';
import { badRequest } from '../../../../lib/errors.ts';
import { realmUrl } from '../../../../lib/hosts.ts';
import type { StoredMessage, UserRecord } from '../../../../storage/tables.ts';
import { defineAction } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { mentionList, messageLinkSyntax, truncate, unusedFence } from '../../rules/bot_text.ts';
import { accessMessage, readMessage } from './message_edit.ts';
import { MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH } from './messages.ts';
import { conversationUrl } from '../notifications/notifications.ts';
import { REPORT_MESSAGE_TYPES } from '../organization/snapshot.ts';
import type { RealmState } from '../../state/state.ts';
import { ensureSystemBots, sendAsSystemBot, systemBotDeliveries } from '../organization/system_bots.ts';
import { silentMention } from '../../rules/people.ts';

const action = defineAction<RealmState>();

/** Zulip's Realm.MAX_REPORT_MESSAGE_EXPLANATION_LENGTH. */
export const MAX_REPORT_DESCRIPTION_LENGTH = 1000;
/** Zulip's MAX_REPORT_MESSAGE_SNIPPET_LENGTH: room for the description and the rest of the report. */
const SNIPPET_LENGTH = MAX_MESSAGE_LENGTH - MAX_REPORT_DESCRIPTION_LENGTH - 500;

/** Zulip's `datetime_to_global_time`: a `<time:…>` mention every reader sees in their own zone. */
const globalTime = (seconds: number) => `<time:${new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`;

/** Zulip's `send_message_report` content. */
export function reportContent(state: Readonly<RealmState>, reporter: UserRecord, m: StoredMessage, reason: string, description: string): string {
  const sender = state.users.get(m.senderId);
  const who = sender ? silentMention(sender) : 'Unknown user';
  const when = globalTime(m.timestamp);
  let header = `${silentMention(reporter)} reported a message sent by ${who} at ${when}.`;
  const participants = m.dmUserIds;
  if (participants && participants.length > 2) {
    const others = participants.filter((id) => id !== m.senderId).map((id) => state.users.get(id)).filter((u) => u !== undefined);
    header = `${silentMention(reporter)} reported a message sent by ${who} to ${mentionList(others)} at ${when}.`;
  } else if (participants && m.senderId === reporter.id) {
    // One's own message in a one-on-one conversation: the report names the other participant (oneself, to oneself).
    const other = participants.find((id) => id !== reporter.id);
    const to = other === undefined ? reporter : (state.users.get(other) ?? reporter);
    header = `${silentMention(reporter)} reported a message sent by ${who} to ${silentMention(to)} at ${when}.`;
  }
  const url = conversationUrl(state, realmUrl(state.siteUrl, state.meta?.stringId ?? ''), m);
  const original = m.streamId !== null ? `Original message at ${messageLinkSyntax(state.channels.get(m.streamId)?.name ?? '', m.topic, m.id, url)}` : `[Original message](${url})`;
  const quoted = truncate(m.content, SNIPPET_LENGTH, '\n[message truncated]');
  const fence = unusedFence(quoted);
  return `${header}\n\`\`\`quote\n**${reason}**. ${description}\n\`\`\`\n\n${fence} spoiler ${original}\n${quoted}\n${fence}`;
}

export const reportMessage = action({
  type: 'reportMessage',
  fields: z.object({ id: z.number().int(), reportType: z.string(), description: z.string() }),
  prepare: (state, msg, ctx) => readMessage(ctx, state.realmId, msg.id),
  check(state, msg, found) {
    const reporter = actingUser(state, msg.caller);
    const reason = REPORT_MESSAGE_TYPES.find((r) => r.key === msg.reportType)?.name;
    if (reason === undefined) throw badRequest('Invalid report_type', { var_name: 'report_type' });
    if (msg.reportType === 'other' && msg.description === '') throw badRequest('An explanation is required.');
    const channelId = state.org.settings.moderationRequestChannelId;
    const channel = channelId === null ? undefined : state.channels.get(channelId);
    if (!channel || channel.isArchived) throw badRequest('Message reporting is not enabled in this organization.');
    const m = accessMessage(state, reporter, found);
    const sender = state.users.get(m.senderId);
    const policy = channel.topicsPolicy === 'inherit' ? (state.meta?.topicsPolicy ?? 'allow_empty_topic') : channel.topicsPolicy;
    // Zulip's truncate_topic: a long name still makes a topic.
    const topic = policy === 'empty_topic_only' ? '' : truncate(`${sender?.fullName ?? 'Unknown user'} moderation`, MAX_TOPIC_LENGTH, '...');
    return { channelId: channel.id, topic, content: reportContent(state, reporter, m, reason, msg.description), sent: [] as ReturnType<typeof sendAsSystemBot>[] };
  },
  apply(state, p, tx) {
    ensureSystemBots(state, tx);
    p.sent = [sendAsSystemBot(state, tx, 'notification', { recipientType: 'stream', to: p.channelId, topic: p.topic, content: p.content })];
    return {};
  },
  events: (state, p) => systemBotDeliveries(state, p.sent),
});
