/**
 * Notification Bot's notices in a channel's "channel events" topic when the
 * channel is made or changed (Zulip's `maybe_send_channel_events_notice`),
 * posted only while the organization's `send_channel_events_messages` is on
 * (FL 434). The texts are Zulip's, in English (Zulip writes them in the
 * organization's language; this server has only English).
 *
 * Called inside an action's `apply`, so each notice is written in the same
 * commit as the change; the caller delivers them after the channel's own
 * events (`systemBotDeliveries`).
 */
import type { ChannelRecord, GroupSettingValue, StoredMessage, UserRecord } from '../../../../storage/tables.ts';
import { SYSTEM_GROUPS } from '../../../model.ts';
import type { Tx } from '../../../runtime/action.ts';
import { emptyTopicDisplayName } from '../messages/messages.ts';
import type { RealmState } from '../../state/state.ts';
import { ensureSystemBots, sendAsSystemBot } from '../organization/system_bots.ts';
import { silentMention } from '../../rules/people.ts';

/** Zulip's STREAM_EVENTS_NOTIFICATION_TOPIC_NAME; a channel of the empty topic only posts there instead. */
const TOPIC = 'channel events';

/** Posts one notice in the channel, if the organization wants them. */
export function channelEventsNotice(state: RealmState, tx: Tx, c: ChannelRecord, content: string, unreadOnlyFor?: number[]): StoredMessage | null {
  if (!state.org.settings.sendChannelEventsMessages) return null;
  ensureSystemBots(state, tx);
  return sendAsSystemBot(state, tx, 'notification', { recipientType: 'stream', to: c.id, topic: c.topicsPolicy === 'empty_topic_only' ? '' : TOPIC, content }, unreadOnlyFor ? { unreadOnlyFor } : {});
}

/** Zulip's names of the four channel permission policies. */
export function policyName(c: Pick<ChannelRecord, 'inviteOnly' | 'historyPublicToSubscribers' | 'isWebPublic'>): string {
  if (c.isWebPublic) return 'Web-public';
  if (!c.inviteOnly) return 'Public';
  return c.historyPublicToSubscribers ? 'Private, shared history' : 'Private, protected history';
}

const quoted = (text: string) => `\n\`\`\`\` quote\n${text === '' ? '*No description.*' : text}\n\`\`\`\``;

/** The notice in a channel just made (Zulip's `send_messages_for_new_streams`). */
export const createdNotice = (c: ChannelRecord, by: UserRecord): string => `**${policyName(c)}** channel created by ${silentMention(by)}. **Description:**${quoted(c.description)}`;

export const renamedNotice = (by: UserRecord, oldName: string, newName: string): string => `${silentMention(by)} renamed channel **${oldName}** to **${newName}**.`;

export const descriptionNotice = (by: UserRecord, oldText: string, newText: string): string =>
  `${silentMention(by)} changed the description for this channel.\n\n* **Old description:**${quoted(oldText)}\n* **New description:**${quoted(newText)}`;

export const permissionNotice = (by: UserRecord, before: ChannelRecord, after: ChannelRecord): string =>
  `${silentMention(by)} changed the [access permissions](/help/channel-permissions) for this channel from **${policyName(before)}** to **${policyName(after)}**.`;

export const archivedNotice = (c: ChannelRecord): string => `Channel #**${c.name}** has been archived.`;

/** A retention period as Zulip words it: the organization's when the channel has none of its own; -1 is forever. */
export function retentionNotice(state: Readonly<RealmState>, by: UserRecord, oldValue: number | null, newValue: number | null): string {
  const realm = state.org.settings.messageRetentionDays ?? -1;
  const before = oldValue ?? realm;
  const after = newValue ?? realm;
  const days = (n: number) => (n === -1 ? 'Forever' : `${n} days`);
  const summary = after === -1 ? 'Messages in this channel will now be retained forever.' : `Messages in this channel will now be automatically deleted ${after} days after they are sent.`;
  return `${silentMention(by)} has changed the [message retention period](/help/message-retention-policy) for this channel:\n* **Old retention period**: ${days(before)}\n* **New retention period**: ${days(after)}\n\n${summary}`;
}

export function topicsPolicyNotice(state: Readonly<RealmState>, by: UserRecord, oldValue: string, newValue: string): string {
  const general = emptyTopicDisplayName(state);
  const names: Record<string, string> = {
    inherit: 'Automatic',
    allow_empty_topic: `*${general}* topic allowed`,
    disable_empty_topic: `No *${general}* topic`,
    empty_topic_only: `Only *${general}* topic allowed`,
  };
  return `${silentMention(by)} changed the "Allow posting to the *general chat* topic?" setting from **${names[oldValue]}** to **${names[newValue]}**.`;
}

/** Who a group-setting value names, as Zulip's `get_users_string_with_permission`: groups by ID, then users by ID. */
function holders(state: Readonly<RealmState>, value: GroupSettingValue): string {
  const groupMention = (id: number) => `@_*${SYSTEM_GROUPS.find((g) => g.id === id)?.name ?? state.groups.get(id)?.name ?? id}*`;
  if (typeof value === 'number') return groupMention(value);
  const groups = [...value.direct_subgroups].sort((a, b) => a - b).map(groupMention);
  const users = [...value.direct_members].sort((a, b) => a - b).flatMap((id) => {
    const u = state.users.get(id);
    return u ? [silentMention(u)] : [];
  });
  return [...groups, ...users].join(', ');
}

export const postingNotice = (state: Readonly<RealmState>, by: UserRecord, oldValue: GroupSettingValue, newValue: GroupSettingValue): string =>
  `${silentMention(by)} changed the [posting permissions](/help/channel-posting-policy) for this channel:\n\n* **Old**: ${holders(state, oldValue)}\n* **New**: ${holders(state, newValue)}\n`;
