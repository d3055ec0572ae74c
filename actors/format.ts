/**
 * How records look on the wire (the API's user, subscription and message
 * objects). Shared by the realm, user and queue actors so that a register
 * snapshot, a fetch and an event always agree.
 */
import { createHash } from 'node:crypto';
import type { ChannelRecord, StoredMessage, SubscriptionRecord, UserRecord } from './model.ts';

export function avatarUrl(email: string, clientExtavatar: boolean): string | null {
  if (clientExtavatar) return null;
  const hash = createHash('md5').update(email.toLowerCase()).digest('hex');
  return `https://secure.gravatar.com/avatar/${hash}?d=identicon&version=1`;
}

export function formatUser(u: UserRecord, clientExtavatar: boolean): Record<string, unknown> {
  return {
    user_id: u.id,
    delivery_email: u.email,
    email: u.email,
    full_name: u.fullName,
    date_joined: u.dateJoined,
    is_active: u.isActive,
    is_owner: u.role === 100,
    is_admin: u.role <= 200,
    is_guest: u.role === 600,
    is_bot: u.isBot,
    bot_type: u.botType,
    bot_owner_id: u.isBot ? u.botOwnerId : null,
    role: u.role,
    timezone: u.timezone,
    avatar_url: avatarUrl(u.email, clientExtavatar),
    avatar_version: 1,
    is_imported_stub: false,
  };
}

export function formatChannel(c: ChannelRecord): Record<string, unknown> {
  return {
    stream_id: c.id,
    name: c.name,
    description: c.description,
    rendered_description: c.renderedDescription,
    date_created: c.dateCreated,
    creator_id: c.creatorId,
    invite_only: c.inviteOnly,
    is_web_public: c.isWebPublic,
    is_announcement_only: false,
    stream_post_policy: 1,
    message_retention_days: c.messageRetentionDays,
    history_public_to_subscribers: c.historyPublicToSubscribers,
    first_message_id: c.firstMessageId,
    folder_id: null,
    topics_policy: c.topicsPolicy,
    is_archived: false,
    is_recently_active: true,
    stream_weekly_traffic: null,
    ...c.groups,
  };
}

export function formatSubscription(c: ChannelRecord, s: SubscriptionRecord, subscribers?: number[]): Record<string, unknown> {
  return {
    ...formatChannel(c),
    ...(subscribers ? { subscribers } : {}),
    desktop_notifications: null,
    email_notifications: null,
    wildcard_mentions_notify: null,
    push_notifications: null,
    audible_notifications: null,
    pin_to_top: s.pinToTop,
    is_muted: s.isMuted,
    in_home_view: !s.isMuted,
    color: s.color,
  };
}

/** A message's flags for `userId` when the user has not changed them. */
export function defaultFlags(m: StoredMessage, userId: number): string[] {
  const flags: string[] = [];
  if (m.senderId === userId && m.readBySender) flags.push('read');
  if (m.mentions.includes(userId)) flags.push('mentioned');
  if (m.wildcard === 'stream') flags.push('stream_wildcard_mentioned');
  if (m.wildcard === 'topic') flags.push('topic_wildcard_mentioned');
  return flags;
}

export function formatMessage(m: StoredMessage, opts: { applyMarkdown: boolean; clientExtavatar: boolean }): Record<string, unknown> {
  return {
    id: m.id,
    sender_id: m.senderId,
    sender_email: m.senderEmail,
    sender_full_name: m.senderFullName,
    sender_realm_str: m.senderRealmStr,
    avatar_url: avatarUrl(m.senderEmail, opts.clientExtavatar),
    client: m.client,
    content: opts.applyMarkdown ? m.renderedContent : m.content,
    content_type: opts.applyMarkdown ? 'text/html' : 'text/x-markdown',
    subject: m.topic,
    topic_links: [],
    timestamp: m.timestamp,
    type: m.type,
    ...(m.type === 'stream' ? { stream_id: m.streamId } : {}),
    display_recipient: m.type === 'stream' ? m.streamName : m.dmRecipients?.map((r) => ({ ...r, is_mirror_dummy: false })),
    recipient_id: m.recipientId,
    reactions: [],
    submessages: [],
    is_me_message: m.content.startsWith('/me '),
  };
}
