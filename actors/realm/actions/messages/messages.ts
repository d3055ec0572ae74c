/**
 * Sending messages (`planSend` checks and renders, `applySend` stores,
 * `sendDelivery` announces; scheduled messages reuse all three), and telling
 * the user actor where a user's readable history lives (`messageSources`)
 * and whose names a page of messages needs (`directory`).
 */
import { z } from 'zod';
import { ApiError, badNarrow, badRequest, streamDoesNotExist } from '../../../../lib/errors.ts';
import { operandPeople, type NarrowTerm, NarrowTermSchema } from '../../../../lib/narrow.ts';
import { type ChannelRecord, messageBucket, type StoredMessage, type SubscriptionRecord, T, type UserRecord, type UserTopicRecord } from '../../../../storage/tables.ts';
import { type Delivery, type Directory, toUsers } from '../../../events/delivery.ts';
import { jdenticonPath } from '../../../format.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';
import { VisibilityPolicy } from './user_topics.ts';
import { channelRecipientKey, dmKey, dmRecipientKey, GROUP_ID, inSource, isAdmin, isGuest, SYSTEM_GROUPS } from '../../../model.ts';
import { defineAction, defineQuery, type Tx } from '../../../runtime/action.ts';
import { accessibleUsers, accessRestricted, actingUser, canAccess, canSeeUser, contentAccessByGroups, readsSharedHistory, resolvePerson, restrictedViews, seesEveryone } from '../../rules/access.ts';
import { accessChangeEvents } from '../../rules/people.ts';
import { type RenderOptions, renderMessage } from '../../rules/markdown.ts';
import { topicLinks } from '../../../../lib/linkifiers.ts';
import { emojiImageUrl } from '../organization/realm_emoji.ts';
import type { RealmState } from '../../state/state.ts';
import { type ServiceTrigger, serviceTriggers } from '../people/bots.ts';
import { noteOutgoingWebhooks } from './outgoing_webhooks.ts';
import { decideMissedEmails } from '../notifications/notifications.ts';
import { mentionableGroup, mentionedUsers } from '../../rules/mentions.ts';
import { realmGroupSetting } from '../organization/realm_settings.ts';
import { apiEmail, userByApiEmail } from '../../rules/emails.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const MAX_MESSAGE_LENGTH = 10000;
export const MAX_TOPIC_LENGTH = 60;
/** Channels with more subscribers (topics with more participants) than this need permission for @all (@topic); Zulip's threshold, settable for tests. */
const WILDCARD_MENTION_THRESHOLD = Number(process.env.PARLEY_WILDCARD_MENTION_THRESHOLD ?? 15);

const Person = z.union([z.string(), z.number().int()]);
export const SendFields = {
  client: z.string(),
  recipientType: z.enum(['stream', 'private']),
  to: z.union([Person, z.array(Person)]),
  topic: z.string().nullable(),
  content: z.string(),
  readBySender: z.boolean().nullable(),
};

export interface SendRequest {
  client: string;
  recipientType: 'stream' | 'private';
  to: string | number | Array<string | number>;
  topic: string | null;
  content: string;
  readBySender: boolean | null;
}

/** A checked, rendered send: everything but the IDs `applySend` takes. */
export interface SendPlan {
  senderId: number;
  channelId: number | null;
  /** Direct messages: every participant, sender included. */
  participants: number[];
  topic: string;
  content: string;
  rendered: string;
  mentions: number[];
  wildcard: 'stream' | 'topic' | null;
  client: string;
  readBySender: boolean;
  /** The topic's links with the realm's linkifiers (`topic_links`). */
  topicLinks: Array<{ text: string; url: string }>;
  /** Recipients who muted the sender, and recipients alerted by one of their alert words. */
  mutedBy: number[];
  alerted: number[];
  /** Outgoing-webhook bots the message mentions or is addressed to (the gateway posts it to them). */
  serviceBots: ServiceTrigger[];
  /**
   * A first direct message lets the guests in it see the others
   * (`can_access_all_users_group`): who saw whom before it, or null when it
   * changes nothing.
   */
  accessBefore: Map<number, Set<number>> | null;
  /** A topic wildcard mention's audience: the topic's participants before this message (`sendMessageWithTopicWildcard`). */
  topicParticipants?: number[];
  /** The only recipients for whom it starts unread (`StoredMessage.unreadOnlyFor`); absent: no limit. */
  unreadOnlyFor?: number[];
}

/** The organization's name for the empty topic (`realm_empty_topic_display_name`). */
export const emptyTopicDisplayName = (state: Readonly<RealmState>): string => state.meta?.emptyTopicDisplayName ?? 'general chat';

export function normalizeTopic(state: Readonly<RealmState>, raw: string | null): string {
  const topic = (raw ?? '').trim();
  if (topic === '(no topic)' || topic === emptyTopicDisplayName(state)) return '';
  return topic;
}

export function resolveChannel(state: Readonly<RealmState>, to: SendRequest['to']): ChannelRecord {
  let target = to;
  if (Array.isArray(target)) {
    if (target.length !== 1) throw badRequest("Channel messages take exactly one channel in 'to'");
    target = target[0]!;
  }
  if (typeof target === 'number') {
    const c = state.channels.get(target);
    if (!c) throw new ApiError('STREAM_DOES_NOT_EXIST', `Channel with ID '${target}' does not exist`, 400, { stream_id: target });
    return c;
  }
  const c = state.channelsByName.get(target.trim().toLowerCase());
  if (!c) throw streamDoesNotExist(target.trim());
  return c;
}

function resolveDmRecipients(state: Readonly<RealmState>, sender: UserRecord, to: SendRequest['to']): UserRecord[] {
  const list = Array.isArray(to) ? to : typeof to === 'number' ? [to] : to.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) throw badRequest('Message must have recipients');
  const users = new Map<number, UserRecord>();
  for (const p of list) {
    let u: UserRecord;
    try {
      u = resolvePerson(state, p, { systemBots: true });
    } catch {
      throw badRequest(typeof p === 'number' || /^\d+$/.test(String(p)) ? `Invalid user ID ${p}` : `Invalid email '${p}'`);
    }
    users.set(u.id, u);
  }
  users.set(sender.id, sender);
  return [...users.values()];
}

/**
 * Who may send a direct message (Zulip's `check_can_send_direct_message`):
 * a bot always, and anyone to only bots or themselves; otherwise someone in
 * the conversation must be in `direct_message_permission_group`, and a
 * sender outside `direct_message_initiator_group` may only continue a
 * conversation that has messages. O(participants).
 */
function checkDirectMessagePermission(state: Readonly<RealmState>, sender: UserRecord, users: readonly UserRecord[]): void {
  if (sender.isBot) return;
  if (users.every((u) => u.isBot || u.id === sender.id)) return;
  const permission = realmGroupSetting(state, 'direct_message_permission_group');
  if (!users.some((u) => state.can(permission, u))) {
    throw badRequest(permission === GROUP_ID['role:nobody'] ? 'Direct messages are disabled in this organization.' : 'This conversation does not include any users who can authorize it.');
  }
  if (state.can(realmGroupSetting(state, 'direct_message_initiator_group'), sender)) return;
  const conversation = state.dms.get(dmKey(users.map((u) => u.id).sort((a, b) => a - b)));
  if (!conversation || conversation.maxMessageId === null) throw badRequest('You do not have permission to initiate direct message conversations.');
}

/** Interactive clients mark their own messages read; API clients (bots, scripts) do not. */
function defaultReadBySender(client: string): boolean {
  return /^(website|ZulipWeb|ZulipMobile|ZulipElectron|ZulipTerminal|ZulipFlutter)/i.test(client);
}

/**
 * Active users (other than the sender) one of whose alert words `content` contains, as a word, in any
 * case (Zulip's alert words), in ID order: O(content length + candidate words + users alerted), through
 * the realm's alert-word index, whatever the number of users keeping alert words.
 */
export function alertedUsers(state: Readonly<RealmState>, content: string, senderId: number): number[] {
  const out = state.alertWords.matching(content);
  out.delete(senderId);
  return [...out].sort((a, b) => a - b);
}

const renderOptionsByUser = new WeakMap<UserRecord, RenderOptions>();

/** How a silent mention shows a system group (Zulip's `SystemGroups.GROUP_DISPLAY_NAME_MAP`). */
const SYSTEM_GROUP_DISPLAY_NAMES: Readonly<Record<string, string>> = {
  'role:internet': 'Everyone on the internet',
  'role:everyone': 'Everyone including guests',
  'role:members': 'Everyone except guests',
  'role:fullmembers': 'Full members',
  'role:moderators': 'Moderators',
  'role:administrators': 'Administrators',
  'role:owners': 'Owners',
  'role:nobody': 'Nobody',
};

/** What the renderer may look up: members by name, the channels `user` can see (made once per user record; every lookup reads the live state). */
export function renderOptions(state: Readonly<RealmState>, user: UserRecord): RenderOptions {
  let options = renderOptionsByUser.get(user);
  if (options) return options;
  options = {
    user: (name, id) => {
      if (id !== null) return state.users.get(id);
      // A name that several active users share mentions nobody (Zulip asks for @**Name|id** then).
      const matches = [...(state.usersByName.get(name.toLowerCase()) ?? [])].filter((u) => u.isActive);
      return matches.length === 1 ? matches[0] : undefined;
    },
    channel: (name) => {
      const c = state.channelsByName.get(name.toLowerCase());
      return c && canAccess(state, c, user) ? { id: c.id, name: c.name } : undefined;
    },
    topicMessage: (channelId, topic) => {
      const t = state.topics.get(channelId)?.get(topic.toLowerCase());
      // The latest message of the topic (FL 400; its oldest from FL 347).
      return t?.maxId;
    },
    group: (name) => mentionableGroup(state, name),
    systemGroup: (name) => {
      const g = SYSTEM_GROUPS.find((x) => x.name === name.toLowerCase());
      return g ? { id: g.id, name: SYSTEM_GROUP_DISPLAY_NAMES[g.name] ?? g.name } : undefined;
    },
    emoji: (name) => {
      for (const e of state.emoji.values()) if (e.name === name && !e.deactivated) return { sourceUrl: emojiImageUrl(e.id) };
      return undefined;
    },
    get linkifiers() {
      return state.org.compiledLinkifiers();
    },
    get defaultCodeBlockLanguage() {
      return state.org.settings.defaultCodeBlockLanguage;
    },
  };
  renderOptionsByUser.set(user, options);
  return options;
}

/**
 * Zulip's `check_for_can_create_topic_group_violation` (FL 441): a topic the channel does not
 * have yet is started only by members of its can_create_topic_group (a bot also through its
 * owner); system bots start any. O(1): the realm keeps each channel's topics.
 */
export function checkCanCreateTopic(state: Readonly<RealmState>, user: UserRecord, channel: ChannelRecord, topic: string): void {
  const setting = channel.groups.can_create_topic_group;
  if (user.isSystemBot || setting === GROUP_ID['role:everyone']) return;
  if (state.topics.get(channel.id)?.has(topic.toLowerCase())) return;
  if (state.can(setting, user)) return;
  const owner = user.isBot && user.botOwnerId !== null ? state.users.get(user.botOwnerId) : undefined;
  if (owner && state.can(setting, owner)) return;
  throw badRequest('You do not have permission to create new topics in this channel.');
}

/** Validates, authorizes and renders a send by `sender`; throws the API error, changes nothing. */
export function planSend(state: Readonly<RealmState>, sender: UserRecord, req: SendRequest): SendPlan {
  const content = req.content.trimEnd();
  if (!content.trim()) throw badRequest('Message must not be empty');
  if (content.includes('\u0000')) throw badRequest('Message must not contain null bytes');
  if ([...content].length > MAX_MESSAGE_LENGTH) throw badRequest(`Message must not be longer than ${MAX_MESSAGE_LENGTH} characters`);
  let channel: ChannelRecord | null = null;
  let topic = '';
  let participants: number[] = [];
  /** How many get it: counted only for a channel wildcard mention's permission (O(subscribers), that send only). */
  let recipientCount = (): number => participants.length;
  if (req.recipientType === 'private') {
    const people = resolveDmRecipients(state, sender, req.to);
    participants = people.map((u) => u.id).sort((a, b) => a - b);
    const seen = seesEveryone(state, sender) ? null : accessibleUsers(state, sender);
    if (seen && participants.some((id) => !seen.has(id))) throw badRequest('You do not have permission to access some of the recipients.');
    checkDirectMessagePermission(state, sender, people);
  } else {
    channel = resolveChannel(state, req.to);
    // A system bot posts where the organization tells it to (Zulip: cross-realm bots may send anywhere).
    // A private channel takes messages from its subscribers and, when its history is shared, from who reads it
    // through its groups (FL 354), if can_send_message_group lets them; not from its administrators as such
    // (Zulip's access_stream_for_send_message: they have metadata access only).
    const sends = channel.inviteOnly ? state.isSubscribed(channel.id, sender.id) || readsSharedHistory(state, channel, sender) : canAccess(state, channel, sender);
    if (!sender.isSystemBot && !sends) {
      if (channel.inviteOnly && !canAccess(state, channel, sender)) throw streamDoesNotExist(channel.name);
      throw badRequest(`Not authorized to send to channel '${channel.name}'`);
    }
    if (channel.isArchived) throw badRequest(`Not authorized to send to channel '${channel.name}'`);
    if (!sender.isSystemBot && !state.can(channel.groups.can_send_message_group, sender) && !isAdmin(sender)) throw badRequest('You do not have permission to post in this channel.');
    topic = normalizeTopic(state, req.topic);
    if ([...topic].length > MAX_TOPIC_LENGTH) throw badRequest(`Topic too long (limit: ${MAX_TOPIC_LENGTH} characters)`);
    if (/[\u0000-\u001f\u007f-\u009f]/.test(topic)) throw badRequest('Invalid character in topic');
    const policy = channel.topicsPolicy === 'inherit' ? (state.meta?.topicsPolicy ?? 'allow_empty_topic') : channel.topicsPolicy;
    if (topic === '' && policy === 'disable_empty_topic') throw badRequest('Sending messages to the general chat is not allowed in this channel.');
    if (topic !== '' && policy === 'empty_topic_only') throw badRequest('Only the general chat topic is allowed in this channel.');
    checkCanCreateTopic(state, sender, channel, topic);
    const id = channel.id;
    recipientCount = () => state.activeSubscribers(id).length;
  }
  const rendered = renderMessage(content, renderOptions(state, sender));
  if (channel && rendered.wildcard === 'stream' && recipientCount() > WILDCARD_MENTION_THRESHOLD && !state.can(state.meta?.canMentionManyUsersGroup ?? GROUP_ID['role:administrators'], sender)) {
    throw new ApiError('STREAM_WILDCARD_MENTION_NOT_ALLOWED', 'You do not have permission to use channel wildcard mentions in this channel.', 400);
  }
  const mentioned = mentionedUsers(state, sender, rendered);
  const recipients = channel ? null : new Set(participants);
  const isRecipient = (id: number) => (recipients ? recipients.has(id) : state.isSubscribed(channel!.id, id));
  const mutedBy = [...(state.mutedBy.get(sender.id) ?? [])].filter(isRecipient);
  const alerted = alertedUsers(state, content, sender.id).filter(isRecipient);
  return {
    mutedBy,
    alerted,
    senderId: sender.id,
    channelId: channel?.id ?? null,
    participants,
    topic,
    content,
    rendered: rendered.html,
    mentions: mentioned.filter((m) => (recipients ? recipients.has(m) : state.isSubscribed(channel!.id, m))),
    wildcard: channel ? rendered.wildcard : null,
    client: req.client,
    readBySender: req.readBySender ?? defaultReadBySender(req.client),
    topicLinks: channel ? topicLinks(topic, state.org.compiledLinkifiers()) : [],
    serviceBots: serviceTriggers(state, sender.id, !channel, channel ? rendered.mentions : participants),
    accessBefore: !channel && accessRestricted(state) && !state.dmConversation(participants) ? restrictedViews(state) : null,
  };
}

/** Stores a planned send: the message, its locator, and what the realm keeps about its recipient. */
export function applySend(state: RealmState, plan: SendPlan, tx: Tx): StoredMessage {
  const id = state.takeMessageId(tx);
  const realm = state.realmId;
  let recipientKey: string;
  let recipientId: number;
  if (plan.channelId !== null) {
    const channel = state.channels.get(plan.channelId)!;
    recipientKey = channelRecipientKey(channel.id);
    recipientId = channel.recipientId;
    if (channel.firstMessageId === null) {
      channel.firstMessageId = id;
      tx.write(T.channels.at(realm, channel.id).put(channel));
    }
    // Counted per day for the channel's weekly traffic and recent activity (`OrgState`).
    state.org.recordMessage(realm, channel.id, Math.floor(Date.now() / 1000), tx);
  } else {
    const key = dmKey(plan.participants);
    recipientKey = dmRecipientKey(key);
    let conv = state.dms.get(key);
    if (!conv) {
      conv = { key, recipientId: state.take('recipient', tx), userIds: plan.participants, maxMessageId: null };
      state.indexDm(conv);
    }
    conv.maxMessageId = id;
    // Each participant's partition holds the conversation, with its newest message.
    for (const userId of conv.userIds) tx.write(T.dmConversations.at(realm, userId, key).put(conv));
    recipientId = conv.recipientId;
  }
  const message: StoredMessage = {
    id,
    type: plan.channelId !== null ? 'stream' : 'private',
    streamId: plan.channelId,
    topic: plan.topic,
    recipientId,
    recipientKey,
    senderId: plan.senderId,
    content: plan.content,
    renderedContent: plan.rendered,
    timestamp: Math.floor(Date.now() / 1000),
    client: plan.client,
    readBySender: plan.readBySender,
    mentions: plan.mentions,
    wildcard: plan.wildcard,
    topicWildcardUsers: plan.wildcard === 'topic' ? [...new Set([...(plan.topicParticipants ?? []), plan.senderId])].sort((a, b) => a - b) : null,
    dmUserIds: plan.channelId !== null ? null : plan.participants,
    topicLinks: plan.topicLinks,
    editHistory: [],
    lastEditTimestamp: null,
    lastMovedTimestamp: null,
    mutedBy: plan.mutedBy,
    alerted: plan.alerted,
    reactions: [],
    ...(plan.unreadOnlyFor ? { unreadOnlyFor: plan.unreadOnlyFor } : {}),
  };
  if (plan.channelId !== null) state.countTopic(tx, plan.channelId, plan.topic, id, 1);
  const bucket = messageBucket(id);
  const bucketKey = `${recipientKey}:${bucket}`;
  if (!state.knownBuckets.has(bucketKey)) {
    tx.write(T.recipientBuckets.at(realm, recipientKey, bucket).put(1));
    state.knownBuckets.add(bucketKey);
  }
  // Who is mailed and pushed about it, in the same commit (`notifications.ts`); before the write, which records who was pushed.
  decideMissedEmails(state, message, tx, plan.topicParticipants);
  tx.write(T.messages.at(realm, recipientKey, id).put(message), T.messageLocator.at(realm, id).put({ recipientKey }));
  // Uploads the message links to may be downloaded by its readers.
  for (const path of uploadPaths(realm, plan.content)) tx.write(T.attachmentMessages.at(realm, path, id).put(1));
  noteOutgoingWebhooks(id, message.senderId, plan.serviceBots, tx);
  return message;
}

/**
 * Zulip's automatic topic visibility on send: the sender follows (or, in a
 * muted channel, unmutes) the topic as their policies say, and users
 * mentioned by name follow it (automatically_follow_topics_where_mentioned).
 * A policy only raises visibility: a followed topic stays followed. The
 * policies are the users' settings, which the realm holds.
 */
export function applyAutomaticVisibility(state: RealmState, m: StoredMessage, isNewTopic: boolean, tx: Tx): UserTopicRecord[] {
  if (m.streamId === null) return [];
  const out: UserTopicRecord[] = [];
  if (policyApplies(Number(userSetting(state, m.senderId, 'automatically_follow_topics_policy')), isNewTopic)) {
    raiseVisibility(state, m, m.senderId, VisibilityPolicy.FOLLOWED, tx, out);
  } else if (state.subs.get(m.streamId)?.get(m.senderId)?.isMuted && policyApplies(Number(userSetting(state, m.senderId, 'automatically_unmute_topics_in_muted_streams_policy')), isNewTopic)) {
    raiseVisibility(state, m, m.senderId, VisibilityPolicy.UNMUTED, tx, out);
  }
  for (const id of m.mentions) {
    if (id !== m.senderId && userSetting(state, id, 'automatically_follow_topics_where_mentioned') === true) raiseVisibility(state, m, id, VisibilityPolicy.FOLLOWED, tx, out);
  }
  return out;
}

/** Values of automatically_follow_topics_policy and automatically_unmute_topics_in_muted_streams_policy. */
const AUTO = { ON_PARTICIPATION: 1, ON_SEND: 2, ON_INITIATION: 3, NEVER: 4 } as const;

function policyApplies(policy: number, isNewTopic: boolean): boolean {
  return policy === AUTO.ON_PARTICIPATION || policy === AUTO.ON_SEND || (policy === AUTO.ON_INITIATION && isNewTopic);
}

/** A user's setting (the realm holds every user's settings), or its default. */
function userSetting(state: Readonly<RealmState>, userId: number, name: string) {
  return state.setting(userId, name, DEFAULT_USER_SETTINGS[name]!);
}

/** Raises `userId`'s visibility policy for the message's topic to `policy`, unless it is that already or followed. */
function raiseVisibility(state: RealmState, m: StoredMessage, userId: number, policy: number, tx: Tx, out: UserTopicRecord[]): void {
  const existing = state.userTopics.get(userId)?.get(`${m.streamId}:${m.topic.toLowerCase()}`);
  const current = existing?.policy ?? VisibilityPolicy.INHERIT;
  if (current === policy || current === VisibilityPolicy.FOLLOWED) return;
  const record: UserTopicRecord = { userId, streamId: m.streamId!, topic: existing?.topic ?? m.topic, policy, lastUpdated: Math.floor(Date.now() / 1000) };
  state.indexUserTopic(record);
  tx.write(T.userTopics.at(state.realmId, userId, m.streamId!, record.topic).put(record));
  out.push(record);
}

export function visibilityEvents(state: Readonly<RealmState>, changes: UserTopicRecord[]): Delivery[] {
  return changes.map((r) => toUsers(state.realmId, [r.userId], { type: 'user_topic', stream_id: r.streamId, topic_name: r.topic, last_updated: r.lastUpdated, visibility_policy: r.policy as 0 | 1 | 2 | 3 }));
}

/** The paths of this realm's uploads that `content` links to (`/user_uploads/<realm>/<xx>/<random>/<name>`). */
export function uploadPaths(realmId: number, content: string): string[] {
  if (!content.includes('/user_uploads/')) return [];
  const out = new Set<string>();
  for (const m of content.matchAll(/\/user_uploads\/(\d+\/[0-9a-f]{2}\/[A-Za-z0-9_-]{24}\/[^\s)\]"'<>]+)/g)) if (m[1]!.startsWith(`${realmId}/`)) out.add(m[1]!);
  return [...out];
}

/**
 * The names a message is formatted with, as they are now; for a `viewer`
 * who does not see everyone, without the users they may not see (who are
 * then formatted as "Unknown user").
 */
export function namesFor(state: Readonly<RealmState>, userIds: Iterable<number>, channelIds: Iterable<number>, viewer?: UserRecord): Directory {
  const users: Directory['users'] = {};
  const seen = viewer && !seesEveryone(state, viewer) ? accessibleUsers(state, viewer) : null;
  for (const id of userIds) {
    const u = state.person(id);
    if (u && (seen === null || seen.has(id) || u.isBot)) users[id] = { email: apiEmail(state, u), full_name: u.fullName, ...(u.avatarSource === 'J' ? { avatar_url: jdenticonPath(u.id) } : {}) };
  }
  const channels: Directory['channels'] = {};
  for (const id of channelIds) {
    const c = state.channels.get(id);
    if (c) channels[id] = c.name;
  }
  return { realmStr: state.meta?.stringId ?? '', users, channels, editHistory: state.org.settings.messageEditHistoryVisibilityPolicy };
}

/** The `realm_user` events of users a first direct message lets guests see: before the message, so its sender is known. */
export function accessEventsOf(state: Readonly<RealmState>, plan: SendPlan): Delivery[] {
  return plan.accessBefore ? accessChangeEvents(state, plan.accessBefore) : [];
}

/**
 * The recipients of a channel message who may not see its sender: restricted
 * guests, when the sender is not subscribed to the channel (Zulip's
 * `user_ids_without_access_to_sender`); a subscribed sender shares the
 * channel with every recipient. A direct message's participants see each
 * other. O(1) unless the organization restricts access and the sender is not
 * subscribed; then O(subscribers), the one channel send that walks them.
 */
function hiddenSenderFor(state: Readonly<RealmState>, m: StoredMessage): number[] {
  const sender = state.person(m.senderId);
  if (m.streamId === null || !sender || sender.isBot || !accessRestricted(state) || state.isSubscribed(m.streamId, sender.id)) return [];
  return state.activeSubscribers(m.streamId).filter((id) => {
    const u = state.users.get(id);
    return u !== undefined && !canSeeUser(state, u, sender);
  });
}

/**
 * The message event for a stored message's recipients: a direct message's
 * participants by ID; a channel message by its channel alone, expanded to
 * its subscribers' queues by the queue shards (`actors/queue/subscribers.ts`),
 * so this is O(1) whatever the channel's size (names: the sender's; hidden
 * sender: see `hiddenSenderFor`).
 */
export function sendDelivery(state: Readonly<RealmState>, m: StoredMessage, localEcho: { queueId: string; localId: string } | null): Delivery {
  const channel = m.streamId !== null ? state.channels.get(m.streamId)! : null;
  const hidden = hiddenSenderFor(state, m);
  return {
    kind: 'message',
    realmId: state.realmId,
    userIds: channel ? null : m.dmUserIds!,
    allPublic: channel !== null && !channel.inviteOnly,
    message: m,
    names: namesFor(state, [m.senderId, ...(m.dmUserIds ?? [])], channel ? [channel.id] : []),
    ...(hidden.length ? { hiddenSenderFor: hidden } : {}),
    localEcho: localEcho ? { senderId: m.senderId, ...localEcho } : null,
  };
}

export const sendMessage = action({
  type: 'sendMessage',
  fields: z.object({ ...SendFields, queueId: z.string().nullable(), localId: z.string().nullable() }),
  check(state, msg) {
    const plan = planSend(state, actingUser(state, msg.caller), msg);
    return { plan, localEcho: msg.queueId && msg.localId ? { queueId: msg.queueId, localId: msg.localId } : null };
  },
  apply(state, p, tx) {
    const isNewTopic = p.plan.channelId !== null && !state.topics.get(p.plan.channelId)?.has(p.plan.topic.toLowerCase());
    const stored = applySend(state, p.plan, tx);
    return { stored, visibility: applyAutomaticVisibility(state, stored, isNewTopic, tx) };
  },
  events(state, p, sent) {
    return [...accessEventsOf(state, p.plan), sendDelivery(state, sent.stored, p.localEcho), ...visibilityEvents(state, sent.visibility)];
  },
  reply({ stored, visibility }) {
    const mine = visibility.find((r) => r.userId === stored.senderId);
    return { id: stored.id, ...(mine ? { automatic_new_visibility_policy: mine.policy } : {}) };
  },
});

/**
 * A send whose content has a topic wildcard mention (`@**topic**`): the
 * gateway sends it here, so that only such sends read the topic's
 * participants first (`prepare` waits for earlier writes, which ordinary
 * sends must not). More than WILDCARD_MENTION_THRESHOLD participants (senders
 * and reacters, as Zulip counts them) and no permission to mention many
 * users: TOPIC_WILDCARD_MENTION_NOT_ALLOWED.
 */
export const sendMessageWithTopicWildcard = action({
  type: 'sendMessageWithTopicWildcard',
  fields: z.object({ ...SendFields, queueId: z.string().nullable(), localId: z.string().nullable() }),
  async prepare(state, msg, ctx) {
    const participants = new Set<number>();
    if (msg.recipientType !== 'stream') return participants;
    let channel: ChannelRecord;
    try {
      channel = resolveChannel(state, msg.to);
    } catch {
      return participants;
    }
    const topic = normalizeTopic(state, msg.topic).toLowerCase();
    const key = channelRecipientKey(channel.id);
    for (const { ck } of await T.recipientBuckets.partition(state.realmId, key).range(ctx.store)) {
      for (const m of await T.messages.partition(state.realmId, key, Number(ck)).values(ctx.store)) {
        if (m.topic.toLowerCase() !== topic) continue;
        participants.add(m.senderId);
        for (const r of m.reactions) participants.add(r.userId);
      }
    }
    return participants;
  },
  check(state, msg, participants) {
    const sender = actingUser(state, msg.caller);
    const plan = planSend(state, sender, msg);
    if (plan.wildcard === 'topic' && new Set([...participants, sender.id]).size > WILDCARD_MENTION_THRESHOLD && !state.can(state.meta?.canMentionManyUsersGroup ?? GROUP_ID['role:administrators'], sender)) {
      throw new ApiError('TOPIC_WILDCARD_MENTION_NOT_ALLOWED', 'You do not have permission to use topic wildcard mentions in this topic.', 400);
    }
    if (plan.wildcard === 'topic') plan.topicParticipants = [...participants];
    return { plan, localEcho: msg.queueId && msg.localId ? { queueId: msg.queueId, localId: msg.localId } : null };
  },
  apply: sendMessage.apply,
  events: sendMessage.events,
  reply: sendMessage.reply,
});

/**
 * One recipient's history a user may read, from `minId` on and, when
 * `maxId` is set, up to it. The user received (has flags of their own for)
 * its messages from `receivedFrom` on; older ones, or all when null, are
 * historical: read, as Zulip shows them.
 */
export const MessageSource = z.object({ recipientKey: z.string(), minId: z.number().int(), maxId: z.number().int().optional(), receivedFrom: z.number().int().nullable() });
export type MessageSource = z.infer<typeof MessageSource>;

/**
 * The messages a former subscriber of a channel with protected history may
 * read: those sent while they were subscribed (Zulip decides by their
 * UserMessage rows). A subscription ended before `endMessageId` was recorded
 * reads nothing after its start.
 */
const formerRange = (sub: SubscriptionRecord): { minId: number; maxId: number } => ({ minId: sub.startMessageId, maxId: sub.endMessageId ?? sub.startMessageId - 1 });

/** The channel a `channel` operand names, by ID or name. */
function channelOperand(state: Readonly<RealmState>, operand: NarrowTerm['operand']): ChannelRecord | undefined {
  return typeof operand === 'number' || /^\d+$/.test(String(operand)) ? state.channels.get(Number(operand)) : state.channelsByName.get(String(operand).toLowerCase());
}

/**
 * Turns every operand that names a channel or people into IDs, as the
 * matcher (`lib/narrow.ts`) wants them: a channel the user cannot see, or a
 * person who does not exist, is BAD_NARROW; `channels:public` becomes the
 * public channels the user can see.
 */
export function resolveNarrow(state: Readonly<RealmState>, user: UserRecord, narrow: NarrowTerm[]): NarrowTerm[] {
  return narrow.map((t): NarrowTerm => {
    switch (t.operator) {
      case 'channel': {
        const c = channelOperand(state, t.operand);
        if (!c || !(canAccess(state, c, user) || contentAccessByGroups(state, c, user))) throw badNarrow('Invalid narrow operator: unknown channel');
        return { ...t, operand: c.id };
      }
      case 'channels':
        return { ...t, operand: [...state.channels.values()].filter((c) => !c.inviteOnly && canAccess(state, c, user)).map((c) => c.id) };
      case 'topic':
        // As in Zulip, the display name of the empty topic names it (no topic can be stored under that name: it is read as "" on send).
        return typeof t.operand === 'string' && t.operand.toLowerCase() === emptyTopicDisplayName(state).toLowerCase() ? { ...t, operand: '' } : t;
      case 'is':
        if (t.operand === 'followed' || t.operand === 'muted') return { operator: 'conversations', operand: JSON.stringify(visibilitySet(state, user.id, t.operand)), negated: t.negated };
        return t;
      case 'sender':
      case 'mentions':
      case 'dm':
      case 'dm-including': {
        const { ids, emails } = operandPeople(t.operand);
        const people = [...ids.map((id) => state.person(id)), ...emails.map((e) => userByApiEmail(state, e, user))];
        if (people.some((p) => p === undefined)) throw badNarrow('Invalid narrow operator: unknown user');
        return { ...t, operand: [...new Set(people.map((p) => p!.id))] };
      }
      default:
        return t;
    }
  });
}

/**
 * The conversations `is:followed` or `is:muted` names for a user: followed
 * topics; or muted topics and muted channels, less the topics unmuted in them.
 */
function visibilitySet(state: Readonly<RealmState>, userId: number, which: 'followed' | 'muted') {
  const topics: string[] = [];
  const except: string[] = [];
  for (const [key, r] of state.userTopics.get(userId) ?? []) {
    if (which === 'followed' ? r.policy === 3 : r.policy === 1) topics.push(key);
    else if (which === 'muted' && (r.policy === 2 || r.policy === 3)) except.push(key);
  }
  const channels = which === 'muted' ? [...state.subs].filter(([, subs]) => subs.get(userId)?.isMuted).map(([id]) => id) : [];
  return { channels, topics, except };
}

/** Where the messages matching a resolved `narrow` that `user` may read are stored. */
export function sourcesFor(state: Readonly<RealmState>, user: UserRecord, narrow: NarrowTerm[]): MessageSource[] {
  const positive = narrow.filter((t) => !t.negated);
  const channelTerm = positive.find((t) => t.operator === 'channel');
  const dmTerm = positive.find((t) => t.operator === 'dm');
  const publicOnly = positive.find((t) => t.operator === 'channels');
  const onlyDms = positive.some((t) => (t.operator === 'is' && (t.operand === 'dm' || t.operand === 'private')) || t.operator === 'dm-including');
  const onlyStreams = positive.some((t) => t.operator === 'topic' || t.operator === 'channels');
  if (channelTerm) {
    const c = state.channels.get(Number(channelTerm.operand))!;
    const sub = state.subs.get(c.id)?.get(user.id);
    const receivedFrom = sub?.active ? sub.startMessageId : null;
    // A private channel's shared history is for its subscribers and who reads it through its groups (FL 354):
    // a former subscriber without them reads none of it (Zulip's has_message_access).
    if (readsSharedHistory(state, c, user)) return [{ recipientKey: channelRecipientKey(c.id), minId: 0, receivedFrom }];
    if (c.historyPublicToSubscribers) return [];
    if (!sub) return [];
    return [{ recipientKey: channelRecipientKey(c.id), ...(sub.active ? { minId: sub.startMessageId } : formerRange(sub)), receivedFrom }];
  }
  if (dmTerm) {
    const conv = state.dmConversation([user.id, ...(dmTerm.operand as number[])]);
    return conv ? [{ recipientKey: dmRecipientKey(conv.key), minId: 0, receivedFrom: 0 }] : [];
  }
  const sources: MessageSource[] = [];
  if (!onlyDms) {
    if (publicOnly) {
      for (const id of publicOnly.operand as number[]) {
        const sub = state.subs.get(id)?.get(user.id);
        sources.push({ recipientKey: channelRecipientKey(id), minId: 0, receivedFrom: sub?.active ? sub.startMessageId : null });
      }
    } else {
      for (const [channelId, subs] of state.subs) {
        const sub = subs.get(user.id);
        const channel = state.channels.get(channelId)!;
        if (sub && !sub.active && channel.inviteOnly && channel.historyPublicToSubscribers) continue;
        if (!sub) continue;
        const range = channel.historyPublicToSubscribers ? { minId: 0 } : sub.active ? { minId: sub.startMessageId } : formerRange(sub);
        sources.push({ recipientKey: channelRecipientKey(channelId), ...range, receivedFrom: sub.active ? sub.startMessageId : null });
      }
    }
  }
  if (!onlyStreams) for (const key of state.dmsByUser.get(user.id) ?? []) sources.push({ recipientKey: dmRecipientKey(key), minId: 0, receivedFrom: 0 });
  return sources;
}

/** What the user actor found for a `with:<message ID>` term: the message, or nothing. */
export const WithTarget = z.object({ message: z.object({ id: z.number().int(), recipientKey: z.string(), streamId: z.number().int().nullable(), topic: z.string(), dmUserIds: z.array(z.number().int()).nullable() }).nullable() });
export type WithTarget = z.infer<typeof WithTarget>;

/** Whether a narrow names one conversation on its own (a DM, or a channel and a topic). */
function definesConversation(narrow: NarrowTerm[]): boolean {
  const has = (op: string) => narrow.some((t) => t.operator === op);
  return has('dm') || (has('channel') && has('topic'));
}

/**
 * A `with:<message ID>` term names the conversation that message is in now
 * (Zulip FL 271): the narrow's channel, topic and DM terms give way to that
 * conversation. If the user cannot read the message, a narrow that names a
 * conversation by itself is kept as it is; otherwise it is BAD_NARROW.
 */
function resolveWith(state: Readonly<RealmState>, user: UserRecord, narrow: NarrowTerm[], target: WithTarget): NarrowTerm[] {
  const rest = narrow.filter((t) => t.operator !== 'with');
  const m = target.message;
  const channel = m?.streamId != null ? state.channels.get(m.streamId) : undefined;
  const readable =
    m !== null &&
    (sourcesFor(state, user, []).some((src) => src.recipientKey === m.recipientKey && inSource(src, m.id)) ||
      (channel !== undefined && readsSharedHistory(state, channel, user)));
  if (!readable) {
    if (definesConversation(rest)) return rest;
    throw badNarrow("Invalid 'with' operator");
  }
  const others = rest.filter((t) => !['channel', 'topic', 'dm'].includes(t.operator));
  const conversation: NarrowTerm[] =
    m.streamId !== null
      ? [
          { operator: 'channel', operand: m.streamId, negated: false },
          { operator: 'topic', operand: m.topic, negated: false },
        ]
      : [{ operator: 'dm', operand: m.dmUserIds!, negated: false }];
  return [...conversation, ...others];
}

export const messageSources = query({
  type: 'messageSources',
  fields: z.object({ narrow: z.array(NarrowTermSchema), with: WithTarget.nullable() }),
  // A history read (GET /messages, the user's register) does not wait behind sends in the mailbox.
  concurrent: true,
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    const narrow = resolveNarrow(state, user, msg.with ? resolveWith(state, user, msg.narrow, msg.with) : msg.narrow);
    return { narrow, sources: sourcesFor(state, user, narrow), emptyTopicDisplayName: emptyTopicDisplayName(state) };
  },
});

/**
 * What a new event queue needs of the realm, read before the queue is made:
 * the channels the caller is subscribed to, for the subscriber index of the
 * queue shard it goes to (`actors/queue/subscribers.ts`), whether they take
 * typing notices, and the organization's name for the empty topic. O(channels
 * of the organization); answered beside the mailbox, so a register does not
 * wait behind the organization's sends.
 */
export const queueChannels = query({
  type: 'queueChannels',
  fields: z.object({}),
  // Read-only, synchronous: answered beside the mailbox (`QueryDef.concurrent`).
  concurrent: true,
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    const channelIds: number[] = [];
    for (const [channelId, subs] of state.subs) if (subs.get(user.id)?.active) channelIds.push(channelId);
    const typing = state.setting(user.id, 'receives_typing_notifications', DEFAULT_USER_SETTINGS.receives_typing_notifications!);
    return { channelIds, receivesTypingNotifications: typing !== false, emptyTopicDisplayName: emptyTopicDisplayName(state) };
  },
});

/** A narrow resolved to IDs, for an event queue's filter. */
export const narrowForQueue = query({
  type: 'narrowForQueue',
  fields: z.object({ narrow: z.array(NarrowTermSchema) }),
  // Read-only, synchronous: answered beside the mailbox (`QueryDef.concurrent`).
  concurrent: true,
  run(state, msg) {
    if (msg.narrow.some((t) => t.operator === 'with')) throw badNarrow("Invalid narrow operator: 'with' cannot filter an event queue");
    return { narrow: resolveNarrow(state, actingUser(state, msg.caller), msg.narrow) };
  },
});

/**
 * Whether the caller may register a queue with `all_public_streams`: not a
 * guest, who may not read public channels they are not in (Zulip's
 * `can_access_public_streams`).
 */
export const allPublicStreamsAccess = query({
  type: 'allPublicStreamsAccess',
  fields: z.object({}),
  // Read-only, synchronous: answered beside the mailbox (`QueryDef.concurrent`).
  concurrent: true,
  run(state, msg) {
    if (isGuest(actingUser(state, msg.caller))) throw badRequest('User not authorized for this query');
    return {};
  },
});

/** Names for formatting a page of messages. */
export const directory = query({
  type: 'directory',
  fields: z.object({ userIds: z.array(z.number().int()), channelIds: z.array(z.number().int()) }),
  // Read-only, synchronous: answered beside the mailbox (`QueryDef.concurrent`).
  concurrent: true,
  run(state, msg) {
    return namesFor(state, msg.userIds, msg.channelIds, actingUser(state, msg.caller));
  },
});
