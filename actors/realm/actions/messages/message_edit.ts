/**
 * Editing, moving and deleting messages (Zulip's `actions/message_edit.py`
 * and `message_delete.py`): PATCH and DELETE /messages/{message_id}, and GET
 * /messages/{message_id}/history.
 *
 * A message is stored once, under its recipient: an edit rewrites its row in
 * place and appends to its edit history; a move to another channel deletes the
 * rows from the old channel's partitions and writes them under the new one
 * (and repoints the message locator), all in one commit of the realm actor.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { type ChannelRecord, type EditRecord, type GroupSettingValue, messageBucket, type StoredMessage, T, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toChannelSubscribers, toUsers } from '../../../events/delivery.ts';
import type { ClientEventBody } from '../../../events/schema.ts';
import type { AttachmentObject } from '../../../events/schema.ts';
import { topicForClient } from '../../../format.ts';
import { channelRecipientKey, inSource, isAdmin, Role } from '../../../model.ts';
import { defineAction, defineQuery, later, type Tx } from '../../../runtime/action.ts';
import type { ActorContext } from '../../../runtime/context.ts';
import { userFlags } from '../../../user/flags.ts';
import { attachmentObject } from '../../../user/uploads.ts';
import { actingUser, canAccess, toChannelViewers } from '../../rules/access.ts';
import { canAdminister } from '../channels/streams.ts';
import { realmGroupSetting } from '../organization/realm_settings.ts';
import { renderMessage } from '../../rules/markdown.ts';
import { mentionedUsers } from '../../rules/mentions.ts';
import { alertedUsers, checkCanCreateTopic, emptyTopicDisplayName, MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH, normalizeTopic, renderOptions, uploadPaths } from './messages.ts';
import { readerView } from './reading.ts';
import { ensureSystemBots, sendAsSystemBot, systemBot, systemBotDeliveries } from '../organization/system_bots.ts';
import { silentMention } from '../../rules/people.ts';
import { eachLimited, type RealmState } from '../../state/state.ts';
import { VisibilityPolicy } from './user_topics.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

/** Zulip's defaults for the move time limits, which no API changes yet (absent from realm rows). */
export const MOVE_LIMIT_DEFAULTS = {
  moveMessagesWithinStreamLimitSeconds: 259200 as number | null,
  moveMessagesBetweenStreamsLimitSeconds: 604800 as number | null,
};
type MoveLimit = keyof typeof MOVE_LIMIT_DEFAULTS;
export const moveLimit = (state: Readonly<RealmState>, k: MoveLimit): number | null => state.meta?.[k] ?? (state.meta?.[k] === null ? null : MOVE_LIMIT_DEFAULTS[k]);

/**
 * The organization's edit settings, read where PATCH /realm keeps them (and
 * where the `realm_*` register keys read them), so what clients are told is
 * what is enforced.
 */
const EDIT_GROUPS = {
  canDeleteAnyMessageGroup: 'can_delete_any_message_group',
  canDeleteOwnMessageGroup: 'can_delete_own_message_group',
  canMoveMessagesBetweenTopicsGroup: 'can_move_messages_between_topics_group',
  canMoveMessagesBetweenChannelsGroup: 'can_move_messages_between_channels_group',
} as const;
function setting(state: Readonly<RealmState>, k: keyof typeof EDIT_GROUPS): GroupSettingValue;
function setting(state: Readonly<RealmState>, k: 'allowMessageEditing'): boolean;
function setting(state: Readonly<RealmState>, k: 'messageContentEditLimitSeconds' | 'messageContentDeleteLimitSeconds' | MoveLimit): number | null;
function setting(state: Readonly<RealmState>, k: string): GroupSettingValue | boolean | number | null {
  if (k in EDIT_GROUPS) return realmGroupSetting(state, EDIT_GROUPS[k as keyof typeof EDIT_GROUPS]);
  if (k === 'allowMessageEditing' || k === 'messageContentEditLimitSeconds' || k === 'messageContentDeleteLimitSeconds') return state.org.settings[k];
  return moveLimit(state, k as MoveLimit);
}

/** What a resolved topic's name starts with (Zulip's RESOLVED_PREFIX). */
const RESOLVED_PREFIX = '✔ ';

/** Zulip grants 20 s of grace past a time limit (a client's clock, a slow network); tests may shorten it. */
const GRACE_SECONDS = Number(process.env.PARLEY_EDIT_GRACE_SECONDS ?? 20);
const now = () => Math.floor(Date.now() / 1000);
const expired = (m: StoredMessage, limit: number | null) => limit !== null && now() - m.timestamp > limit + GRACE_SECONDS;

/**
 * Whether `user` may edit the content of `m` (Zulip's validate_user_can_edit_message):
 * editing on, their own message, within the edit limit plus `graceSeconds`.
 */
export function checkCanEditContent(state: Readonly<RealmState>, user: UserRecord, m: StoredMessage, graceSeconds: number): void {
  if (!setting(state, 'allowMessageEditing')) throw badRequest('Your organization has turned off message editing');
  if (m.senderId !== user.id) throw badRequest("You don't have permission to edit this message");
  const limit = setting(state, 'messageContentEditLimitSeconds');
  if (limit !== null && now() - m.timestamp > limit + graceSeconds) throw badRequest('The time limit for editing this message has passed');
}

export async function readMessage(ctx: ActorContext, realmId: number, id: number): Promise<StoredMessage | undefined> {
  const located = await T.messageLocator.at(realmId, id).get(ctx.store);
  return located ? T.messages.at(realmId, located.recipientKey, id).get(ctx.store) : undefined;
}

/** The message, if `user` may read it (Zulip's access_message), else "Invalid message(s)". */
export function accessMessage(state: Readonly<RealmState>, user: UserRecord, m: StoredMessage | undefined): StoredMessage {
  if (m && readerView(state, user.id).sources.some((s) => s.recipientKey === m.recipientKey && inSource(s, m.id))) return m;
  throw badRequest('Invalid message(s)');
}

/** Who gets events about a message: the channel's subscribers, or the conversation's participants. */
export function audience(state: Readonly<RealmState>, m: StoredMessage): number[] {
  return m.streamId !== null ? state.activeSubscribers(m.streamId) : m.dmUserIds!;
}

// ---- delete ------------------------------------------------------------------

function checkCanDelete(state: Readonly<RealmState>, user: UserRecord, m: StoredMessage): void {
  const channel = m.streamId !== null ? state.channels.get(m.streamId) : undefined;
  if (state.can(setting(state, 'canDeleteAnyMessageGroup'), user)) return;
  if (channel && state.can(channel.groups.can_delete_any_message_group, user)) return;
  const sender = state.users.get(m.senderId);
  // Users delete their own messages and those of their bots.
  if (m.senderId !== user.id && sender?.botOwnerId !== user.id) throw badRequest("You don't have permission to delete this message");
  if (!state.can(setting(state, 'canDeleteOwnMessageGroup'), user)) {
    if (!channel || !state.can(channel.groups.can_delete_own_message_group, user)) throw badRequest("You don't have permission to delete this message");
  }
  if (expired(m, setting(state, 'messageContentDeleteLimitSeconds'))) throw badRequest('The time limit for deleting this message has passed');
}

/** The ID of the oldest message of `recipientKey` after `id`, or null (read from its buckets, oldest first). */
async function nextMessageId(ctx: ActorContext, realmId: number, recipientKey: string, id: number): Promise<number | null> {
  for (const { ck } of await T.recipientBuckets.partition(realmId, recipientKey).range(ctx.store)) {
    if (Number(ck) < messageBucket(id)) continue;
    const [next] = await T.messages.partition(realmId, recipientKey, Number(ck)).values(ctx.store, { gte: id + 1, limit: 1 });
    if (next) return next.id;
  }
  return null;
}

export const deleteMessage = action({
  type: 'deleteMessage',
  fields: z.object({ id: z.number().int() }),
  async prepare(state, msg, ctx) {
    const found = await readMessage(ctx, state.realmId, msg.id);
    // Deleting a channel's first message makes the next one its first.
    const channel = found?.streamId != null ? state.channels.get(found.streamId) : undefined;
    const nextFirst = found && channel && channel.firstMessageId === found.id ? await nextMessageId(ctx, state.realmId, found.recipientKey, found.id) : undefined;
    return { found, nextFirst };
  },
  check(state, msg, { found, nextFirst }) {
    const user = actingUser(state, msg.caller);
    const m = accessMessage(state, user, found);
    checkCanDelete(state, user, m);
    const channel = m.streamId !== null ? state.channels.get(m.streamId) : undefined;
    const firstMessageId = channel && nextFirst !== undefined && channel.firstMessageId === m.id ? { channel, value: nextFirst } : null;
    // The deleter hears of it even when not subscribed to the channel (FL 274); a channel's subscribers are found by the queue shards.
    return { m, audience: m.streamId !== null ? null : [...new Set([...audience(state, m), user.id])], deleter: user.id, firstMessageId };
  },
  apply(state, p, tx) {
    tx.write(T.messages.at(state.realmId, p.m.recipientKey, p.m.id).delete(), T.messageLocator.at(state.realmId, p.m.id).delete());
    if (p.m.streamId !== null) state.countTopic(tx, p.m.streamId, p.m.topic, p.m.id, -1);
    if (p.firstMessageId) {
      p.firstMessageId.channel.firstMessageId = p.firstMessageId.value;
      tx.write(T.channels.at(state.realmId, p.firstMessageId.channel.id).put(p.firstMessageId.channel));
    }
    return {};
  },
  events(state, p) {
    const m = p.m;
    const event: ClientEventBody = { type: 'delete_message', message_type: m.type, message_ids: [m.id], ...(m.streamId !== null ? { stream_id: m.streamId, topic: m.topic } : {}) };
    const out = [p.audience ? toUsers(state.realmId, p.audience, event) : toChannelSubscribers(state.realmId, m.streamId!, event, [p.deleter])];
    if (p.firstMessageId) {
      const c = p.firstMessageId.channel;
      out.push(toChannelViewers(state, c, { type: 'stream', op: 'update', stream_id: c.id, name: c.name, property: 'first_message_id', value: c.firstMessageId }));
    }
    return out;
  },
});

// ---- edit and move -------------------------------------------------------------

const PropagateMode = z.enum(['change_one', 'change_later', 'change_all']);

/** What prepare found: the message, and for a topic or channel change, every message of its topic. */
interface EditFacts {
  target: StoredMessage | undefined;
  /** The target's topic (change_later / change_all), oldest first, the target included. */
  topic: StoredMessage[];
  /** For new content with a topic wildcard mention: the topic's participants (senders and reactors), as at a send. */
  participants?: number[];
}

/** A (non-silent) topic wildcard mention, as the gateway recognizes one at a send (`gateway/routes/messages.ts`). */
const TOPIC_WILDCARD = /@\*\*topic\*\*/i;

/** The senders and reactors of a topic's messages (Zulip's participants_for_topic). */
function participantsOf(messages: readonly StoredMessage[]): number[] {
  const out = new Set<number>();
  for (const m of messages) {
    out.add(m.senderId);
    for (const r of m.reactions) out.add(r.userId);
  }
  return [...out];
}

/** Every message of a channel's topic with an ID of at least `from`, oldest first. */
async function topicMessages(ctx: ActorContext, realmId: number, m: StoredMessage, from: number): Promise<StoredMessage[]> {
  const key = m.recipientKey;
  const out: StoredMessage[] = [];
  const lower = m.topic.toLowerCase();
  for (const { ck } of await T.recipientBuckets.partition(realmId, key).range(ctx.store)) {
    if (Number(ck) < messageBucket(from)) continue;
    for (const x of await T.messages.partition(realmId, key, Number(ck)).values(ctx.store, { gte: from })) if (x.topic.toLowerCase() === lower) out.push(x);
  }
  return out;
}

interface EditPlan {
  user: UserRecord;
  target: StoredMessage;
  messages: StoredMessage[];
  mode: z.infer<typeof PropagateMode>;
  content: { content: string; rendered: string; mentions: number[]; wildcard: StoredMessage['wildcard']; topicWildcardUsers: number[] | null; alerted: number[] } | null;
  topic: string | null;
  to: ChannelRecord | null;
  /** Who gets the event: the channel's subscribers (both channels' on a move), or the conversation's participants. */
  audience: number[];
  /** What the store holds of each recipient's flags of the target message. */
  stored: Map<number, StoredFlags>;
  changed?: StoredMessage[];
  edited?: number;
  /** Notification Bot's notices in the old and the new thread (`send_notification_to_old_thread`, `_new_thread`). */
  notify: { old: boolean; new: boolean };
  notices?: Array<StoredMessage | null>;
  /** A resolved-topic notice that this edit undid within the grace period, deleted instead of a new notice. */
  undone?: StoredMessage;
  /** `detached_uploads` of the reply (FL 285). */
  detached?: AttachmentObject[];
}

function checkEdit(state: Readonly<RealmState>, user: UserRecord, m: StoredMessage, msg: { content: string | null; topic: string | null; streamId: number | null; mode: EditPlan['mode']; prevContentSha256: string | null }, facts: EditFacts): EditPlan {
  if (msg.content === null && msg.topic === null && msg.streamId === null) throw badRequest('Nothing to change');
  const isDm = m.type === 'private';
  if (isDm && msg.topic !== null) throw badRequest('Direct messages cannot have topics.');
  if (isDm && msg.streamId !== null) throw badRequest('Direct messages cannot be moved to channels.');
  if (msg.content !== null && msg.streamId !== null) throw badRequest('Cannot change message content while changing channel');
  // A client's guard against overwriting an edit it has not seen (FL 379): the SHA-256 of the content it edited.
  if (msg.prevContentSha256 !== null && msg.prevContentSha256 !== createHash('sha256').update(m.content).digest('hex')) {
    throw new ApiError('EXPECTATION_MISMATCH', "'prev_content_sha256' value does not match the expected value.", 400);
  }
  let content: EditPlan['content'] = null;
  if (msg.content !== null) {
    checkCanEditContent(state, user, m, GRACE_SECONDS);
    const text = msg.content.trim() === '' ? '(deleted)' : msg.content.trimEnd();
    if ([...text].length > MAX_MESSAGE_LENGTH) throw badRequest(`Message must not be longer than ${MAX_MESSAGE_LENGTH} characters`);
    if (text.includes('\u0000')) throw badRequest('Message must not contain null bytes');
    const r = renderMessage(text, renderOptions(state, user));
    const recipients = m.dmUserIds ? new Set(m.dmUserIds) : null;
    const mentions = mentionedUsers(state, user, r).filter((id) => (recipients ? recipients.has(id) : state.isSubscribed(m.streamId!, id)));
    // Alert words are matched again: the new text may hold one the old did not, or lose one.
    const wildcard = isDm ? null : r.wildcard;
    const topicWildcardUsers = wildcard === 'topic' ? [...new Set([...(facts.participants ?? []), m.senderId])].sort((a, b) => a - b) : null;
    content = { content: text, rendered: r.html, mentions, wildcard, topicWildcardUsers, alerted: alertedUsers(state, text, m.senderId) };
  }
  const moderator = user.role <= Role.MODERATOR;
  const orig = m.streamId !== null ? state.channels.get(m.streamId) : undefined;
  let topic: string | null = null;
  let resolving = false;
  if (msg.topic !== null) {
    topic = normalizeTopic(state, msg.topic);
    if ([...topic].length > MAX_TOPIC_LENGTH) throw badRequest(`Topic too long (limit: ${MAX_TOPIC_LENGTH} characters)`);
    if (/[\u0000-\u001f\u007f-\u009f]/.test(topic)) throw badRequest('Invalid character in topic');
    if (topic === m.topic && msg.streamId === null && msg.content === null) throw badRequest('Nothing to change');
    if (topic !== m.topic && orig) {
      const target = (msg.streamId !== null ? state.channels.get(msg.streamId) : undefined) ?? orig;
      resolving = resolves(m.topic, topic);
      if (resolving) {
        if (!canResolveTopics(state, user, orig, target)) throw badRequest("You don't have permission to resolve topics in this channel.");
      } else {
        if (!canEditTopic(state, user, orig, target)) throw badRequest("You don't have permission to edit this message");
        if (!moderator && expired(m, setting(state, 'moveMessagesWithinStreamLimitSeconds'))) throw badRequest("The time limit for editing this message's topic has passed.");
      }
    }
  }
  let to: ChannelRecord | null = null;
  if (msg.streamId !== null) {
    to = state.channels.get(msg.streamId) ?? null;
    if (!to || !canAccess(state, to, user)) throw badRequest('Invalid channel ID');
    if (to.id === m.streamId) to = null;
    else {
      if (!orig || !canMoveOutOfChannel(state, user, orig)) throw badRequest("You don't have permission to move this message");
      if (!moderator && expired(m, setting(state, 'moveMessagesBetweenStreamsLimitSeconds'))) throw badRequest("The time limit for editing this message's channel has passed");
      if (!state.can(to.groups.can_send_message_group, user) && !isAdmin(user)) throw badRequest('You do not have permission to post in this channel.');
    }
  }
  if (topic !== null || to !== null) {
    const channel = to ?? state.channels.get(m.streamId!)!;
    const policy = channel.topicsPolicy === 'inherit' ? (state.meta?.topicsPolicy ?? 'allow_empty_topic') : channel.topicsPolicy;
    const finalTopic = topic ?? m.topic;
    if (finalTopic === '' && policy === 'disable_empty_topic') throw badRequest('Sending messages to the general chat is not allowed in this channel.');
    if (finalTopic !== '' && policy === 'empty_topic_only') throw badRequest('Only the general chat topic is allowed in this channel.');
  }
  const moving = topic !== null || to !== null;
  if (moving && msg.mode === 'change_all' && !moderator && !resolving) checkChangeAllTimeLimit(state, user, m, topic !== null && topic !== m.topic, to !== null, facts.topic);
  // A move (not a resolve) may start a topic: the channel's can_create_topic_group decides (FL 441).
  if (moving && !resolving) checkCanCreateTopic(state, user, to ?? orig!, topic ?? m.topic);
  const messages = !moving || msg.mode === 'change_one' ? [m] : facts.topic.filter((x) => (msg.mode === 'change_all' ? true : x.id >= m.id));
  const users = new Set(audience(state, m));
  if (to) for (const id of state.activeSubscribers(to.id)) users.add(id);
  return { user, target: m, messages, mode: msg.mode, content, topic, to, audience: [...users], stored: new Map(), notify: { old: false, new: false } };
}

/** Zulip's `lstrip(RESOLVED_PREFIX)`: every leading check mark and space. */
const unresolved = (topic: string) => topic.replace(/^[✔ ]+/u, '');

/** Whether a topic change only marks the topic resolved, or unresolved (Zulip's topic_resolved / topic_unresolved). */
function resolves(from: string, to: string): boolean {
  const isResolved = (t: string) => t.startsWith(RESOLVED_PREFIX);
  if (isResolved(to) && !isResolved(from)) return unresolved(to) === from;
  if (isResolved(from) && !isResolved(to)) return unresolved(from) === to;
  return false;
}

/** Zulip's `can_move_messages_within_channel`: administrators, the channel's administrators, its can_move_messages_within_channel_group (FL 396). */
function canMoveWithinChannel(state: Readonly<RealmState>, user: UserRecord, c: ChannelRecord): boolean {
  return canAdminister(state, c, user) || state.can(c.groups.can_move_messages_within_channel_group, user);
}

/** Zulip's `can_edit_topic`: the organization's permission, or the channel's in the channel the messages leave or reach. */
function canEditTopic(state: Readonly<RealmState>, user: UserRecord, orig: ChannelRecord, target: ChannelRecord): boolean {
  if (isAdmin(user) || state.can(setting(state, 'canMoveMessagesBetweenTopicsGroup'), user)) return true;
  return canMoveWithinChannel(state, user, orig) || (target.id !== orig.id && canMoveWithinChannel(state, user, target));
}

/** Zulip's `can_move_messages_out_of_channel`: the organization's permission, the channel's administrators, its can_move_messages_out_of_channel_group (FL 396). */
function canMoveOutOfChannel(state: Readonly<RealmState>, user: UserRecord, c: ChannelRecord): boolean {
  if (isAdmin(user) || state.can(setting(state, 'canMoveMessagesBetweenChannelsGroup'), user)) return true;
  return canAdminister(state, c, user) || state.can(c.groups.can_move_messages_out_of_channel_group, user);
}

/** Zulip's `can_resolve_topics`: the organization's can_resolve_topics_group, or the channel's in either channel (FL 402). */
function canResolveTopics(state: Readonly<RealmState>, user: UserRecord, orig: ChannelRecord, target: ChannelRecord): boolean {
  if (state.can(realmGroupSetting(state, 'can_resolve_topics_group'), user)) return true;
  return state.can(orig.groups.can_resolve_topics_group, user) || (target.id !== orig.id && state.can(target.groups.can_resolve_topics_group, user));
}

/**
 * Zulip's `check_time_limit_for_change_all_propagate_mode` (FL 172): moving a
 * whole topic needs every message of it the user can read to be within the
 * stricter of the applicable move limits; else MOVE_MESSAGES_TIME_LIMIT_EXCEEDED
 * says how many of the most recent ones they may move.
 */
function checkChangeAllTimeLimit(state: Readonly<RealmState>, user: UserRecord, m: StoredMessage, topicChanged: boolean, channelChanged: boolean, topic: StoredMessage[]): void {
  const limits = [topicChanged ? setting(state, 'moveMessagesWithinStreamLimitSeconds') : null, channelChanged ? setting(state, 'moveMessagesBetweenStreamsLimitSeconds') : null].filter((x) => x !== null);
  if (!limits.length) return;
  const limit = Math.min(...limits);
  const sources = readerView(state, user.id).sources.filter((s) => s.recipientKey === m.recipientKey);
  const readable = topic.filter((x) => sources.some((s) => inSource(s, x.id)));
  const allowed = readable.filter((x) => !expired(x, limit));
  if (allowed.length === readable.length) return;
  throw new ApiError('MOVE_MESSAGES_TIME_LIMIT_EXCEEDED', `You only have permission to move the ${allowed.length}/${readable.length} most recent messages in this topic.`, 400, {
    first_message_id_allowed_to_move: allowed[0]?.id ?? null,
    total_messages_allowed_to_move: allowed.length,
    total_messages_in_topic: readable.length,
  });
}

/** A recipient's stored flags of a message: their flag row of it, if any, and their read watermark. */
export interface StoredFlags {
  row: string[] | undefined;
  readBelow: number;
}

/**
 * Recipients whose flags are read at once (two point reads each): an edit in
 * a channel of 5,000 subscribers reads for about 20 ms on the embedded store,
 * and takes 40 round trips to Cassandra.
 */
const FLAG_READS = 128;

/**
 * Reads each user's flag row of message `id` and read watermark (`user_marks`),
 * FLAG_READS users at a time, as Zulip reads the message's UserMessage rows.
 * The user actors own these rows; the store holds everything of theirs that is
 * durable, so a flag change still in flight is not seen (its own event follows).
 */
export async function readStoredFlags(ctx: ActorContext, realmId: number, id: number, users: number[]): Promise<Map<number, StoredFlags>> {
  const found = await eachLimited(
    users,
    async (u): Promise<StoredFlags> => {
      const [row, marks] = await Promise.all([T.userFlags.at(realmId, u, id).get(ctx.store), T.userMarks.at(realmId, u).get(ctx.store)]);
      return { row, readBelow: marks?.readBelow ?? 0 };
    },
    FLAG_READS,
  );
  return new Map(users.map((u, i) => [u, found[i]!]));
}

/**
 * A recipient's flags of `m` after the edit, as GET /messages gives them: what
 * they set (read, starred, collapsed) from their stored flags, what follows
 * from the message (mentions, alert words) from its new content, and
 * `historical` where they did not receive it. An edit that adds a mention
 * adds `mentioned` but leaves the read state alone, as in Zulip. (Zulip sends
 * `["read"]` to a subscriber without a UserMessage row; such a message is
 * `read` + `historical` here, as Zulip's own GET /messages gives it.)
 */
function recipientFlags(state: Readonly<RealmState>, m: StoredMessage, userId: number, stored: StoredFlags | undefined): string[] {
  // The same rule as the user's message sources (`sourcesFor`): direct messages are always received.
  const sub = m.streamId !== null ? state.subs.get(m.streamId)?.get(userId) : undefined;
  const receivedFrom = m.streamId === null ? 0 : sub?.active ? sub.startMessageId : null;
  return userFlags(m, userId, receivedFrom, stored?.readBelow ?? 0, stored?.row);
}

function applyEdit(state: RealmState, p: EditPlan, tx: Tx): void {
  const ts = now();
  const realm = state.realmId;
  const from = p.target.streamId;
  const changed: StoredMessage[] = [];
  for (const old of p.messages) {
    const isTarget = old.id === p.target.id;
    const record: EditRecord = { userId: p.user.id, timestamp: ts };
    const next: StoredMessage = { ...old };
    if (isTarget && p.content) {
      Object.assign(record, { prevContent: old.content, prevRenderedContent: old.renderedContent });
      Object.assign(next, { content: p.content.content, renderedContent: p.content.rendered, mentions: p.content.mentions, wildcard: p.content.wildcard, topicWildcardUsers: p.content.topicWildcardUsers, alerted: p.content.alerted, lastEditTimestamp: ts });
      // Uploads follow the text: readers of the message may download what it links to now, not what it no longer does.
      const before = new Set(uploadPaths(state.realmId, old.content));
      const after = new Set(uploadPaths(state.realmId, next.content));
      for (const path of after) if (!before.has(path)) tx.write(T.attachmentMessages.at(state.realmId, path, old.id).put(1));
      for (const path of before) if (!after.has(path)) tx.write(T.attachmentMessages.at(state.realmId, path, old.id).delete());
    }
    if (p.topic !== null && p.topic !== old.topic) {
      Object.assign(record, { prevTopic: old.topic, topic: p.topic });
      next.topic = p.topic;
    }
    if (p.to) {
      Object.assign(record, { prevStream: from!, stream: p.to.id });
      Object.assign(next, { streamId: p.to.id, recipientId: p.to.recipientId, recipientKey: channelRecipientKey(p.to.id) });
      if (p.to.firstMessageId === null || p.to.firstMessageId > old.id) {
        p.to.firstMessageId = old.id;
        tx.write(T.channels.at(realm, p.to.id).put(p.to));
      }
    }
    if (record.prevTopic !== undefined || record.prevStream !== undefined) {
      next.lastMovedTimestamp = ts;
      state.countTopic(tx, old.streamId!, old.topic, old.id, -1);
      state.countTopic(tx, next.streamId!, next.topic, old.id, 1);
    }
    if (Object.keys(record).length === 2) continue;
    next.editHistory = [...old.editHistory, record];
    if (next.recipientKey !== old.recipientKey) {
      tx.write(T.messages.at(realm, old.recipientKey, old.id).delete(), T.messageLocator.at(realm, old.id).put({ recipientKey: next.recipientKey }));
      const bucketKey = `${next.recipientKey}:${messageBucket(old.id)}`;
      if (!state.knownBuckets.has(bucketKey)) {
        tx.write(T.recipientBuckets.at(realm, next.recipientKey, messageBucket(old.id)).put(1));
        state.knownBuckets.add(bucketKey);
      }
    }
    tx.write(T.messages.at(realm, next.recipientKey, old.id).put(next));
    changed.push(next);
  }
  p.changed = changed;
  p.edited = ts;
}

/**
 * Notification Bot's notices of a move (Zulip's
 * `send_message_moved_breadcrumbs`), after the move, in the old thread and
 * the new one as asked: where the messages went or came from, and who moved
 * them. Resolving or unresolving a topic (only the "✔ " prefix changes)
 * sends none.
 */
function moveNotices(state: RealmState, p: EditPlan, tx: Tx): Array<StoredMessage | null> {
  const changed = p.changed ?? [];
  const m = p.target;
  if (!changed.length || m.streamId === null || (p.topic === null && p.to === null)) return [];
  const newTopic = p.topic ?? m.topic;
  const newStream = p.to ?? state.channels.get(m.streamId)!;
  const oldStream = state.channels.get(m.streamId)!;
  if (p.to === null && newTopic.replace(/^✔ /, '') === m.topic.replace(/^✔ /, '')) return [];
  const link = (channel: string, topic: string) => `#**${channel}>${topic}**`;
  const who = silentMention(p.user);
  const all = p.mode === 'change_all';
  const n = changed.length;
  const to = link(newStream.name, newTopic);
  const from = link(oldStream.name, m.topic);
  ensureSystemBots(state, tx);
  const out: Array<StoredMessage | null> = [];
  if (p.notify.old) {
    const content = all ? `This topic was moved to ${to} by ${who}.` : n === 1 ? `A message was moved from this topic to ${to} by ${who}.` : `${n} messages were moved from this topic to ${to} by ${who}.`;
    out.push(sendAsSystemBot(state, tx, 'notification', { recipientType: 'stream', to: oldStream.id, topic: m.topic, content }));
  }
  if (p.notify.new) {
    const content = all ? `This topic was moved here from ${from} by ${who}.` : n === 1 ? `A message was moved here from ${from} by ${who}.` : `${n} messages were moved here from ${from} by ${who}.`;
    out.push(sendAsSystemBot(state, tx, 'notification', { recipientType: 'stream', to: newStream.id, topic: newTopic, content }));
  }
  return out;
}

/**
 * Notification Bot's notice that a topic was resolved or unresolved (Zulip's
 * `maybe_send_resolve_topic_notifications`), in the topic as renamed. It
 * starts unread only for the subscribers whose
 * `resolved_topic_notice_auto_read_policy` (FL 385) says so: `never` (never
 * marked read), and `except_followed` for those who follow the topic; read
 * for everyone else, the user who resolved it included. O(subscribers), on
 * a resolve only. A toggle undone soon (the topic's last message is the
 * notice of the toggle before, at most `RESOLVE_UNDO_GRACE_SECONDS` old) deletes
 * that notice instead of posting another (Zulip's
 * `maybe_delete_previous_resolve_topic_notification`).
 */
function resolveNotice(state: RealmState, p: EditPlan, tx: Tx): Array<StoredMessage | null> {
  const m = p.target;
  if (!p.changed?.length || m.streamId === null || p.topic === null || !resolves(m.topic, p.topic)) return [];
  const channel = p.to ?? state.channels.get(m.streamId)!;
  const last = p.changed.reduce((a, b) => (b.id > a.id ? b : a));
  const bot = systemBot(state, 'notification');
  const lastOfTopic = last.id >= (state.topics.get(channel.id)?.get(p.topic.toLowerCase())?.maxId ?? 0);
  if (bot && last.senderId === bot.id && lastOfTopic && RESOLVE_NOTICE.test(last.content) && now() - last.timestamp <= RESOLVE_UNDO_GRACE_SECONDS) {
    tx.write(T.messages.at(state.realmId, last.recipientKey, last.id).delete(), T.messageLocator.at(state.realmId, last.id).delete());
    state.countTopic(tx, channel.id, last.topic, last.id, -1);
    p.undone = last;
    return [];
  }
  const keys = [`${m.streamId}:${m.topic.toLowerCase()}`, `${channel.id}:${p.topic.toLowerCase()}`];
  const unread: number[] = [];
  for (const id of state.activeSubscribers(channel.id)) {
    if (id === p.user.id || state.users.get(id)?.isBot) continue;
    const policy = state.setting(id, 'resolved_topic_notice_auto_read_policy', DEFAULT_USER_SETTINGS.resolved_topic_notice_auto_read_policy!);
    const follows = () => keys.some((k) => state.userTopics.get(id)?.get(k)?.policy === VisibilityPolicy.FOLLOWED);
    if (policy === 'never' || (policy === 'except_followed' && follows())) unread.push(id);
  }
  ensureSystemBots(state, tx);
  const content = `${silentMention(p.user)} has marked this topic as ${p.topic.startsWith(RESOLVED_PREFIX) ? 'resolved' : 'unresolved'}.`;
  return [sendAsSystemBot(state, tx, 'notification', { recipientType: 'stream', to: channel.id, topic: p.topic, content }, { unreadOnlyFor: unread })];
}

/** Zulip's RESOLVE_TOPIC_UNDO_GRACE_PERIOD_SECONDS. */
const RESOLVE_UNDO_GRACE_SECONDS = 60;
/** The text of a resolved-topic notice (`resolveNotice`). */
const RESOLVE_NOTICE = /^@_\*\*[^*]+\*\* has marked this topic as (?:un)?resolved\.$/;

function editEvents(state: Readonly<RealmState>, p: EditPlan): Delivery[] {
  const changed = p.changed!;
  if (!changed.length) return [];
  const m = p.target;
  const after = changed.find((x) => x.id === m.id) ?? m;
  const moved = p.topic !== null || p.to !== null;
  const base = {
    type: 'update_message' as const,
    user_id: p.user.id,
    rendering_only: false,
    message_id: m.id,
    message_ids: changed.map((x) => x.id).sort((a, b) => a - b),
    edit_timestamp: p.edited!,
    ...(m.streamId !== null ? { stream_name: state.channels.get(m.streamId)?.name ?? '', stream_id: m.streamId } : {}),
    ...(p.to ? { new_stream_id: p.to.id } : {}),
    ...(moved ? { propagate_mode: p.mode, orig_subject: m.topic } : {}),
    ...(p.topic !== null ? { subject: p.topic, topic_links: [] } : {}),
    ...(p.content ? { orig_content: m.content, orig_rendered_content: m.renderedContent, content: after.content, rendered_content: after.renderedContent, is_me_message: after.content.startsWith('/me ') } : {}),
  };
  // Each recipient gets their own flags; recipients with the same flags share one delivery.
  const byFlags = new Map<string, number[]>();
  for (const id of p.audience) {
    const key = JSON.stringify(recipientFlags(state, after, id, p.stored.get(id)));
    const ids = byFlags.get(key);
    if (ids) ids.push(id);
    else byFlags.set(key, [id]);
  }
  return [...byFlags].map(([flags, ids]) => toUsers(state.realmId, ids, { ...base, flags: JSON.parse(flags) as string[] }));
}

/**
 * The sender's uploads that the new content no longer links and that no
 * other message links (Zulip's `check_attachment_reference_change`): the
 * edit leaves them reachable only through the message's edit history.
 */
async function detachedUploads(ctx: ActorContext, realmId: number, m: StoredMessage, content: string): Promise<AttachmentObject[]> {
  const after = new Set(uploadPaths(realmId, content));
  const out: AttachmentObject[] = [];
  for (const path of uploadPaths(realmId, m.content)) {
    if (after.has(path)) continue;
    const a = await T.attachments.at(realmId, path).get(ctx.store);
    if (!a || a.ownerId !== m.senderId) continue;
    const links = await T.attachmentMessages.partition(realmId, path).range(ctx.store);
    if (links.some((r) => Number(r.ck) !== m.id)) continue;
    out.push(attachmentObject(a, []));
  }
  return out;
}

export const updateMessage = action({
  type: 'updateMessage',
  fields: z.object({
    id: z.number().int(),
    content: z.string().nullable(),
    topic: z.string().nullable(),
    streamId: z.number().int().nullable(),
    propagateMode: PropagateMode,
    /** Zulip's defaults: a notice in the new thread, none in the old one. */
    notifyOld: z.boolean().default(false),
    notifyNew: z.boolean().default(true),
    /** The SHA-256 (hex) of the content the client edited (FL 379); null: not checked. */
    prevContentSha256: z.string().nullable().default(null),
  }),
  // The event needs every recipient's stored flags, so the edit is checked here,
  // before they are read: a refused edit reads none. Nothing else runs in the
  // mailbox between prepare and check, so the plan is still what check would make.
  async prepare(state, msg, ctx): Promise<EditPlan> {
    const target = await readMessage(ctx, state.realmId, msg.id);
    const moving = msg.topic !== null || msg.streamId !== null;
    const topic = target && target.type === 'stream' && moving && msg.propagateMode !== 'change_one' ? await topicMessages(ctx, state.realmId, target, msg.propagateMode === 'change_all' ? 0 : target.id) : [];
    const participants = target && target.type === 'stream' && msg.content !== null && TOPIC_WILDCARD.test(msg.content) ? participantsOf(await topicMessages(ctx, state.realmId, target, 0)) : undefined;
    const user = actingUser(state, msg.caller);
    const m = accessMessage(state, user, target);
    const plan = checkEdit(state, user, m, { content: msg.content, topic: msg.topic, streamId: msg.streamId, mode: msg.propagateMode, prevContentSha256: msg.prevContentSha256 }, { target, topic, participants });
    plan.stored = await readStoredFlags(ctx, state.realmId, m.id, plan.audience);
    plan.notify = { old: msg.notifyOld, new: msg.notifyNew };
    plan.detached = plan.content ? await detachedUploads(ctx, state.realmId, m, plan.content.content) : [];
    return plan;
  },
  check: (_state, _msg, plan) => plan,
  apply(state, p, tx) {
    applyEdit(state, p, tx);
    p.notices = [...moveNotices(state, p, tx), ...resolveNotice(state, p, tx)];
    return { detached_uploads: p.detached ?? [] };
  },
  events(state, p) {
    const undone = p.undone ? [toChannelSubscribers(state.realmId, p.undone.streamId!, { type: 'delete_message', message_type: 'stream', message_ids: [p.undone.id], stream_id: p.undone.streamId!, topic: p.undone.topic })] : [];
    return [...editEvents(state, p), ...undone, ...systemBotDeliveries(state, p.notices ?? [])];
  },
});

export const messageHistory = query({
  type: 'messageHistory',
  fields: z.object({ id: z.number().int(), allowEmptyTopicName: z.boolean().default(false) }),
  run(state, msg, ctx) {
    const user = actingUser(state, msg.caller);
    const policy = state.org.settings.messageEditHistoryVisibilityPolicy;
    if (policy === 'none') throw badRequest('Message edit history is disabled in this organization');
    const view = readerView(state, user.id);
    const emptyName = msg.allowEmptyTopicName ? null : emptyTopicDisplayName(state);
    return later(async () => {
      const m = await readMessage(ctx, state.realmId, msg.id);
      if (!m || !view.sources.some((s) => s.recipientKey === m.recipientKey && inSource(s, m.id))) throw badRequest('Invalid message(s)');
      const snapshots = historySnapshots(m, m.type === 'stream' ? emptyName : null);
      return { message_history: policy === 'all' ? snapshots : movesOnly(snapshots) };
    });
  },
});

/**
 * The history with the policy `moves` (FL 358, Zulip's visible_edit_history_for_message):
 * content edits left out, and a move that also edited the content without the content's change.
 */
function movesOnly(snapshots: Array<Record<string, unknown>>): Array<Record<string, unknown>> {
  return snapshots
    .filter((e) => !('prev_content' in e) || 'prev_topic' in e)
    .map(({ prev_content: _c, prev_rendered_content: _r, content_html_diff: _d, ...rest }) => rest);
}

/** Zulip's message_history: the message as it was after each change, oldest first. */
function historySnapshots(m: StoredMessage, emptyTopicName: string | null) {
  // Walk back from the current state to the original one.
  let content = m.content;
  let rendered = m.renderedContent;
  let topic = m.topic;
  let stream = m.streamId;
  const states: Array<Record<string, unknown>> = [];
  for (const e of [...m.editHistory].reverse()) {
    const entry: Record<string, unknown> = { topic: topicForClient(topic, emptyTopicName), content, rendered_content: rendered, timestamp: e.timestamp, user_id: e.userId };
    if (e.prevContent !== undefined) Object.assign(entry, { prev_content: e.prevContent, prev_rendered_content: e.prevRenderedContent, content_html_diff: rendered });
    if (e.prevTopic !== undefined) entry.prev_topic = topicForClient(e.prevTopic, emptyTopicName);
    if (e.prevStream !== undefined) Object.assign(entry, { prev_stream: e.prevStream, stream });
    states.unshift(entry);
    if (e.prevContent !== undefined) [content, rendered] = [e.prevContent, e.prevRenderedContent ?? ''];
    if (e.prevTopic !== undefined) topic = e.prevTopic;
    if (e.prevStream !== undefined) stream = e.prevStream;
  }
  states.unshift({ topic: topicForClient(topic, emptyTopicName), content, rendered_content: rendered, timestamp: m.timestamp, user_id: m.senderId });
  return states;
}

