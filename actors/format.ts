/**
 * How records look on the wire (the API's user, channel, subscription and
 * message objects), typed by the strict schemas of `events/schema.ts`. Shared
 * by the realm, user and queue actors so that a register snapshot, a fetch and
 * an event always agree.
 */
import { createHash } from 'node:crypto';
import type { ChannelRecord, StoredMessage, SubscriptionRecord, UserRecord } from '../storage/tables.ts';
import type { Directory } from './events/delivery.ts';
import type { ChannelObject, EditHistoryEntry, MessageObject, SubscriptionObject, UserObject } from './events/schema.ts';
import { GROUP_ID, Role } from './model.ts';

/** Whether the client computes avatar URLs itself (`client_extavatar`, legacy `client_gravatar`); Zulip's default is true. */
export const clientExtavatar = (p: { client_extavatar?: boolean; client_gravatar?: boolean }): boolean => p.client_extavatar ?? p.client_gravatar ?? true;

/** An externally hosted avatar's URL (null when the client computes it); `medium` is Zulip's 500-pixel size. */
export function avatarUrl(email: string, extavatar: boolean, medium = false): string | null {
  if (extavatar) return null;
  const hash = createHash('md5').update(email.toLowerCase()).digest('hex');
  return `https://secure.gravatar.com/avatar/${hash}?d=identicon${medium ? '&s=500' : ''}&version=1`;
}

/**
 * Where a user's generated Jdenticon avatar is served (`gateway/pages/avatars.ts`),
 * relative to the organization's URL as Zulip gives avatars it stores: the
 * 100-pixel image, or the 500-pixel one for `medium` (FL 456).
 */
export const jdenticonPath = (userId: number, medium = false): string => `/user_avatars/jdenticon/${userId}${medium ? '-medium' : ''}.png`;

/**
 * A user's avatar URL (Zulip's `get_avatar_field`): a Jdenticon ('J') is
 * served here, so its URL is given whatever the client computes; a Gravatar
 * ('G') is null for a client that computes it (`extavatar`).
 */
export function userAvatarUrl(u: Pick<UserRecord, 'id' | 'email' | 'avatarSource'>, extavatar: boolean, medium = false): string | null {
  return u.avatarSource === 'J' ? jdenticonPath(u.id, medium) : avatarUrl(u.email, extavatar, medium);
}

/**
 * The organization's UUID (Zulip's `Realm.uuid`), derived from its ID: what the
 * push service knows it by, and the salt of its users' Jdenticons (FL 466).
 */
export function realmUuidOf(realmId: number): string {
  const h = createHash('sha256').update(`parley-realm:${realmId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The organization's icon: with none uploaded (there is no upload), the identicon Zulip gives, from its string ID. */
export function realmIconUrl(stringId: string): string {
  return `https://secure.gravatar.com/avatar/${createHash('md5').update(stringId.toLowerCase()).digest('hex')}?d=identicon`;
}

/** The name and email Zulip shows for a user the viewer may not see (or that no longer exists). */
export const UNKNOWN_USER_NAME = 'Unknown user';
export const unknownUserEmail = (id: number): string => `user${id}@unknown.invalid`;
/** The avatar of a user the viewer may not see, whatever the client computes itself (Zulip's `get_avatar_for_inaccessible_user`). */
export const unknownUserAvatarUrl = (id: number): string => avatarUrl(unknownUserEmail(id), false)!;

/**
 * What a viewer who may not see a user gets in their place, for clients
 * without `user_list_incomplete` (Zulip's `get_data_for_inaccessible_user`):
 * an active member with a made-up email, no name and no data.
 */
export function inaccessibleUser(id: number): UserObject {
  const email = unknownUserEmail(id);
  return {
    user_id: id,
    delivery_email: null,
    email,
    full_name: UNKNOWN_USER_NAME,
    date_joined: new Date(0).toISOString(),
    is_active: true,
    is_owner: false,
    is_admin: false,
    is_guest: false,
    is_bot: false,
    bot_type: null,
    role: Role.MEMBER,
    timezone: '',
    avatar_url: unknownUserAvatarUrl(id),
    avatar_version: 1,
    is_imported_stub: false,
    profile_data: {},
  };
}

/**
 * A user object. `shown` is the address the API knows the user by and the
 * real one as the viewer may see it (`actors/realm/rules/emails.ts`); without it,
 * the real one for both. A user known by a made-up address gets an avatar
 * URL whatever `extavatar` says, as the client cannot compute it (Zulip).
 */
export function formatUser(u: UserRecord, extavatar: boolean, shown: { email: string; deliveryEmail: string | null } = { email: u.email, deliveryEmail: u.email }): UserObject {
  return {
    user_id: u.id,
    delivery_email: shown.deliveryEmail,
    email: shown.email,
    full_name: u.fullName,
    date_joined: u.dateJoined,
    is_active: u.isActive,
    is_owner: u.role === Role.OWNER,
    is_admin: u.role <= Role.ADMIN,
    is_guest: u.role === Role.GUEST,
    is_bot: u.isBot,
    bot_type: u.botType,
    ...(u.isBot ? { bot_owner_id: u.botOwnerId } : {}),
    ...(u.isSystemBot ? { is_system_bot: true } : {}),
    role: u.role as UserObject['role'],
    timezone: u.timezone,
    avatar_url: userAvatarUrl(u, extavatar && shown.email === u.email),
    avatar_version: 1,
    is_imported_stub: false,
    ...(u.isDeleted ? { is_deleted: true as const } : {}),
  };
}

/** The deprecated `stream_post_policy` that matches `can_send_message_group` (1 when it matches none). */
function streamPostPolicy(c: ChannelRecord): ChannelObject['stream_post_policy'] {
  const g = c.groups.can_send_message_group;
  if (g === GROUP_ID['role:administrators']) return 2;
  if (g === GROUP_ID['role:fullmembers']) return 3;
  if (g === GROUP_ID['role:moderators']) return 4;
  return 1;
}

/** The fields the realm computes from a channel's traffic (`OrgState`) and its subscriptions. */
export interface ChannelActivity {
  isRecentlyActive: boolean;
  weeklyTraffic: number | null;
  /** Its subscribers who are active users (FL 394). */
  subscriberCount: number;
  /** Whether a user is active: deactivated users are left out of the direct members of the channel's permissions (FL 303). */
  isActive?: (userId: number) => boolean;
}

/** A channel's permissions as the API shows them: without the deactivated direct members of anonymous values. */
function channelGroups(groups: ChannelRecord['groups'], isActive: ((userId: number) => boolean) | undefined): ChannelRecord['groups'] {
  if (!isActive) return groups;
  const out = { ...groups };
  for (const [k, v] of Object.entries(out)) if (typeof v !== 'number') (out as Record<string, unknown>)[k] = { ...v, direct_members: v.direct_members.filter(isActive) };
  return out;
}

export function formatChannel(c: ChannelRecord, activity: ChannelActivity): ChannelObject {
  const policy = streamPostPolicy(c);
  return {
    stream_id: c.id,
    name: c.name,
    description: c.description,
    rendered_description: c.renderedDescription,
    date_created: c.dateCreated,
    creator_id: c.creatorId,
    invite_only: c.inviteOnly,
    is_web_public: c.isWebPublic,
    is_announcement_only: policy === 2,
    stream_post_policy: policy,
    message_retention_days: c.messageRetentionDays,
    history_public_to_subscribers: c.historyPublicToSubscribers,
    first_message_id: c.firstMessageId,
    folder_id: c.folderId,
    topics_policy: c.topicsPolicy,
    is_archived: c.isArchived,
    is_recently_active: activity.isRecentlyActive,
    stream_weekly_traffic: activity.weeklyTraffic,
    subscriber_count: activity.subscriberCount,
    ...channelGroups(c.groups, activity.isActive),
  };
}

/** The subscriber list a channel object carries, if any: complete, or partial (`include_subscribers`, FL 412). */
export type SubscriberLists = { subscribers: number[] } | { partial_subscribers: number[] } | Record<string, never>;

export function formatSubscription(c: ChannelRecord, s: SubscriptionRecord, lists: SubscriberLists, activity: ChannelActivity): SubscriptionObject {
  return {
    ...formatChannel(c, activity),
    ...lists,
    desktop_notifications: s.desktopNotifications,
    email_notifications: s.emailNotifications,
    wildcard_mentions_notify: s.wildcardMentionsNotify,
    push_notifications: s.pushNotifications,
    audible_notifications: s.audibleNotifications,
    pin_to_top: s.pinToTop,
    is_muted: s.isMuted,
    in_home_view: !s.isMuted,
    color: s.color,
  };
}

/** A message's flags for `userId` when the user has not changed them. */
export function defaultFlags(m: StoredMessage, userId: number): string[] {
  const flags: string[] = [];
  if ((m.senderId === userId && m.readBySender) || m.mutedBy.includes(userId) || (m.unreadOnlyFor && !m.unreadOnlyFor.includes(userId))) flags.push('read');
  if (m.mentions.includes(userId)) flags.push('mentioned');
  if (m.wildcard === 'stream') flags.push('stream_wildcard_mentioned');
  if (m.wildcard === 'topic' && (m.topicWildcardUsers === undefined || m.topicWildcardUsers?.includes(userId))) flags.push('topic_wildcard_mentioned');
  if (m.alerted.includes(userId)) flags.push('has_alert_word');
  // Deprecated at FL 224 and still given, last, for older clients (Zulip's MessageDict): either wildcard flag.
  if (flags.includes('stream_wildcard_mentioned') || flags.includes('topic_wildcard_mentioned')) flags.push('wildcard_mentioned');
  return flags;
}

export interface MessageFormat {
  applyMarkdown: boolean;
  clientExtavatar: boolean;
  /** What the empty topic is called for this client (`topicForClient`); absent or null: the empty string. */
  emptyTopicDisplayName?: string | null;
}

/**
 * A channel topic as a client sees it: clients that do not handle the empty
 * topic (without the `empty_topic_name` capability, or reads without
 * `allow_empty_topic_name`) get the organization's
 * `realm_empty_topic_display_name` in its place (Zulip's
 * `maybe_rename_empty_topic_to_general_chat`); `displayName` null keeps it.
 */
export const topicForClient = (topic: string, displayName: string | null | undefined): string => (topic === '' && displayName ? displayName : topic);

/**
 * Formats a stored message with the names in `names` (which must hold its
 * sender, participants and channel). A user missing from `names` (one the
 * viewer may not see) is "Unknown user", with a made-up email and the
 * placeholder avatar (Zulip's `MessageDict.finalize_payload` without
 * `can_access_sender`).
 */
export function formatMessage(m: StoredMessage, names: Directory, opts: MessageFormat): MessageObject {
  const person = (id: number) => names.users[id] ?? { email: unknownUserEmail(id), full_name: UNKNOWN_USER_NAME };
  const sender = person(m.senderId);
  return {
    id: m.id,
    sender_id: m.senderId,
    sender_email: sender.email,
    sender_full_name: sender.full_name,
    sender_realm_str: names.realmStr,
    avatar_url: names.users[m.senderId] ? (names.users[m.senderId]!.avatar_url ?? avatarUrl(sender.email, opts.clientExtavatar)) : unknownUserAvatarUrl(m.senderId),
    client: m.client,
    content: opts.applyMarkdown ? m.renderedContent : m.content,
    content_type: opts.applyMarkdown ? 'text/html' : 'text/x-markdown',
    subject: m.type === 'stream' ? topicForClient(m.topic, opts.emptyTopicDisplayName) : m.topic,
    topic_links: m.topicLinks,
    timestamp: m.timestamp,
    type: m.type,
    ...(m.type === 'stream' ? { stream_id: m.streamId! } : {}),
    display_recipient:
      m.type === 'stream'
        ? (names.channels[m.streamId!] ?? '')
        : (m.dmUserIds ?? []).map((id) => ({ id, email: person(id).email, full_name: person(id).full_name, is_mirror_dummy: false })),
    recipient_id: m.recipientId,
    reactions: m.reactions.map((r) => ({ emoji_name: r.emojiName, emoji_code: r.emojiCode, reaction_type: r.reactionType, user_id: r.userId })),
    submessages: [],
    is_me_message: m.content.startsWith('/me '),
    ...(m.lastEditTimestamp !== null ? { last_edit_timestamp: m.lastEditTimestamp } : {}),
    ...(m.lastMovedTimestamp !== null ? { last_moved_timestamp: m.lastMovedTimestamp } : {}),
    ...(m.editHistory.length && names.editHistory !== 'none' ? { edit_history: editHistory(m, names.editHistory ?? 'all') } : {}),
  };
}

/**
 * A message's edit history as the API lists it: newest first. With the
 * organization's policy `moves` (FL 358), content edits are left out and a
 * move that also changed the content keeps only the move (Zulip's
 * visible_edit_history_for_message).
 */
export function editHistory(m: StoredMessage, policy: 'all' | 'moves' | 'none' = 'all'): EditHistoryEntry[] {
  const visible = policy === 'all' ? m.editHistory : m.editHistory.filter((e) => e.prevTopic !== undefined || e.prevStream !== undefined).map((e) => ({ ...e, prevContent: undefined }));
  return visible
    .map((e) => ({
      user_id: e.userId,
      timestamp: e.timestamp,
      ...(e.prevContent !== undefined ? { prev_content: e.prevContent, prev_rendered_content: e.prevRenderedContent ?? '' } : {}),
      ...(e.prevTopic !== undefined ? { prev_topic: e.prevTopic, topic: e.topic ?? '' } : {}),
      ...(e.prevStream !== undefined ? { prev_stream: e.prevStream, stream: e.stream ?? 0 } : {}),
    }))
    .reverse();
}
