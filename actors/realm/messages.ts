/**
 * Sending messages (`checkSendMessage` validates and authorizes,
 * `doSendMessage` makes it durable and then notifies) and telling the user
 * actor where a user's visible history lives (`messageSources`).
 */
import { ApiError, badNarrow, badRequest, streamDoesNotExist } from '../../lib/errors.ts';
import { operandPeople, type NarrowTerm } from '../../lib/narrow.ts';
import type { WriteOp } from '../../storage/store.ts';
import { bucketOf, type ChannelRecord, dmKey, GROUP_ID, inGroupSetting, Role, type StoredMessage, type UserRecord } from '../model.ts';
import type { RealmMsg } from '../protocol.ts';
import type { ActorContext } from '../runtime/context.ts';
import { Parked } from '../runtime/mailbox.ts';
import { renderMessage } from './markdown.ts';
import type { RealmState } from './state.ts';
import { canAccess, resolvePerson } from './subscriptions.ts';
import { requireUser } from './users.ts';

type SendMsg = Extract<RealmMsg, { type: 'sendMessage' }>;

export const MAX_MESSAGE_LENGTH = 10000;
export const MAX_TOPIC_LENGTH = 60;
/** Channels with more subscribers than this need permission for @all (Zulip's threshold). */
const WILDCARD_MENTION_THRESHOLD = 15;

interface CheckedSend {
  sender: UserRecord;
  channel: ChannelRecord | null;
  topic: string;
  recipients: UserRecord[];
  content: string;
}

function normalizeTopic(state: RealmState, raw: string | null): string {
  const topic = (raw ?? '').trim();
  if (topic === '(no topic)' || topic === state.meta?.emptyTopicDisplayName) return '';
  return topic;
}

function resolveChannel(state: RealmState, to: SendMsg['to']): ChannelRecord {
  let target = to;
  if (Array.isArray(target)) {
    if (target.length !== 1) throw badRequest('Channel messages take exactly one channel in \'to\'');
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

function resolveDmRecipients(state: RealmState, sender: UserRecord, to: SendMsg['to']): UserRecord[] {
  const list = Array.isArray(to) ? to : typeof to === 'number' ? [to] : to.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) throw badRequest('Message must have recipients');
  const users = new Map<number, UserRecord>();
  for (const p of list) {
    let u: UserRecord;
    try {
      u = resolvePerson(state, p);
    } catch {
      const text = typeof p === 'number' || /^\d+$/.test(String(p)) ? `Invalid user ID ${p}` : `Invalid email '${p}'`;
      throw badRequest(text);
    }
    users.set(u.id, u);
  }
  users.set(sender.id, sender);
  return [...users.values()];
}

export function checkSendMessage(state: RealmState, msg: SendMsg): CheckedSend {
  const sender = requireUser(state, msg.senderId);
  const content = msg.content.trimEnd();
  if (!content.trim()) throw badRequest('Message must not be empty');
  if ([...content].length > MAX_MESSAGE_LENGTH) throw badRequest(`Message must not be longer than ${MAX_MESSAGE_LENGTH} characters`);
  if (msg.recipientType === 'private') {
    return { sender, channel: null, topic: '', recipients: resolveDmRecipients(state, sender, msg.to), content };
  }
  const channel = resolveChannel(state, msg.to);
  if (!canAccess(state, channel, sender)) {
    if (channel.inviteOnly) throw streamDoesNotExist(channel.name);
    throw badRequest(`Not authorized to send to channel '${channel.name}'`);
  }
  if (!inGroupSetting(channel.groups.can_send_message_group, sender) && sender.role > Role.ADMIN) {
    throw badRequest(`You do not have permission to post in this channel.`);
  }
  const topic = normalizeTopic(state, msg.topic);
  if ([...topic].length > MAX_TOPIC_LENGTH) throw badRequest(`Topic too long (limit: ${MAX_TOPIC_LENGTH} characters)`);
  if (/[\u0000-\u001f\u007f-\u009f]/.test(topic)) throw badRequest('Invalid character in topic');
  const policy = channel.topicsPolicy === 'inherit' ? (state.meta?.topicsPolicy ?? 'allow_empty_topic') : channel.topicsPolicy;
  if (topic === '' && policy === 'disable_empty_topic') throw badRequest('Sending messages to the general chat is not allowed in this channel.');
  if (topic !== '' && policy === 'empty_topic_only') throw badRequest('Only the general chat topic is allowed in this channel.');
  const recipients = state.activeSubscribers(channel.id).map((id) => state.users.get(id)!);
  return { sender, channel, topic, recipients, content };
}

export function doSendMessage(state: RealmState, ctx: ActorContext, msg: SendMsg, checked: CheckedSend): Parked<{ id: number }> {
  const { sender, channel, topic, recipients, content } = checked;
  const rendered = renderMessage(content, (name, id) => {
    if (id !== null) return state.users.get(id);
    // A name that several active users share mentions nobody (Zulip asks for @**Name|id** then).
    const matches = [...(state.usersByName.get(name.toLowerCase()) ?? [])].filter((u) => u.isActive);
    return matches.length === 1 ? matches[0] : undefined;
  });
  if (channel && rendered.wildcard === 'stream' && recipients.length > WILDCARD_MENTION_THRESHOLD && !inGroupSetting(state.meta?.canMentionManyUsersGroup ?? GROUP_ID['role:administrators'], sender)) {
    throw new ApiError('STREAM_WILDCARD_MENTION_NOT_ALLOWED', 'You do not have permission to use channel wildcard mentions in this channel.', 400);
  }

  const ops: WriteOp[] = [];
  const { id, op: allocOp } = state.takeMessageId();
  if (allocOp) ops.push(allocOp);
  let recipientKey: string;
  let recipientId: number;
  if (channel) {
    recipientKey = `s${channel.id}`;
    recipientId = channel.id;
  } else {
    const key = dmKey(recipients.map((u) => u.id));
    recipientKey = `d${key}`;
    let conv = state.dms.get(key);
    if (!conv) {
      const { id: objectId, op } = state.takeObjectId();
      conv = { key, recipientId: objectId, userIds: key.split(',').map(Number) };
      state.indexDm(conv);
      ops.push(op);
    }
    // One write records a new conversation or its newest message.
    conv.maxMessageId = id;
    ops.push({ op: 'put', table: 'dm_conversations', pk: state.pk, ck: key, value: conv });
    recipientId = conv.recipientId;
  }
  const message: StoredMessage = {
    id,
    type: channel ? 'stream' : 'private',
    streamId: channel?.id ?? null,
    streamName: channel?.name ?? null,
    streamIsPublic: channel ? !channel.inviteOnly : false,
    topic,
    recipientId,
    recipientKey,
    senderId: sender.id,
    senderEmail: sender.email,
    senderFullName: sender.fullName,
    senderRealmStr: state.meta?.stringId ?? '',
    content,
    renderedContent: rendered.html,
    timestamp: Math.floor(Date.now() / 1000),
    client: msg.client,
    readBySender: msg.readBySender ?? defaultReadBySender(msg.client),
    mentions: rendered.mentions.filter((m) => recipients.some((r) => r.id === m)),
    wildcard: channel ? rendered.wildcard : null,
    dmRecipients: channel ? null : recipients.map((u) => ({ id: u.id, email: u.email, full_name: u.fullName })).sort((a, b) => a.id - b.id),
  };
  const bucket = bucketOf(id);
  const bucketKey = `${recipientKey}:${bucket}`;
  if (!state.knownBuckets.has(bucketKey)) {
    ops.push({ op: 'put', table: 'recipient_buckets', pk: `${state.realmId}:${recipientKey}`, ck: bucket, value: 1 });
    state.knownBuckets.add(bucketKey);
  }
  ops.push({ op: 'put', table: 'messages', pk: `${state.realmId}:${recipientKey}:${bucket}`, ck: id, value: message });
  if (channel && channel.firstMessageId === null) {
    channel.firstMessageId = id;
    ops.push({ op: 'put', table: 'channels', pk: state.pk, ck: channel.id, value: channel });
  }
  return new Parked(ctx.journal.append(ops).then(() => notifySent(state, ctx, msg, message, recipients)));
}

function notifySent(state: RealmState, ctx: ActorContext, msg: SendMsg, message: StoredMessage, recipients: UserRecord[]): { id: number } {
  const localEcho = msg.queueId && msg.localId ? { senderId: message.senderId, queueId: msg.queueId, localId: msg.localId } : null;
  ctx.publish({
    kind: 'message',
    realmId: state.realmId,
    userIds: recipients.map((u) => u.id),
    allPublic: message.streamIsPublic,
    message: message as unknown as Record<string, unknown>,
    localEcho,
  });
  return { id: message.id };
}

/** Interactive clients mark their own messages read; API clients (bots, scripts) do not. */
function defaultReadBySender(client: string): boolean {
  return /^(website|ZulipWeb|ZulipMobile|ZulipElectron|ZulipTerminal|ZulipFlutter)/i.test(client);
}

/** One recipient's history a user may read, from `minId` on. */
export interface MessageSource {
  recipientKey: string;
  minId: number;
}

/** Where the messages matching `narrow` that `userId` may read are stored. */
export function messageSources(state: RealmState, userId: number, narrow: NarrowTerm[]): { sources: MessageSource[] } {
  const user = requireUser(state, userId);
  const positive = narrow.filter((t) => !t.negated);
  const channelTerm = positive.find((t) => t.operator === 'channel');
  const dmTerm = positive.find((t) => t.operator === 'dm');
  const channelsPublic = positive.some((t) => t.operator === 'channels');
  const onlyDms = positive.some((t) => (t.operator === 'is' && (t.operand === 'dm' || t.operand === 'private')) || t.operator === 'dm-including');
  const onlyStreams = positive.some((t) => t.operator === 'topic' || t.operator === 'channels');
  const sources: MessageSource[] = [];
  const streamSource = (c: ChannelRecord, whole: boolean) => {
    const sub = state.subs.get(c.id)?.get(userId);
    const publicHistory = c.historyPublicToSubscribers && (!c.inviteOnly || sub !== undefined);
    if (whole && publicHistory) return { recipientKey: `s${c.id}`, minId: 0 };
    if (!sub) return null;
    return { recipientKey: `s${c.id}`, minId: publicHistory ? 0 : sub.startMessageId };
  };

  if (channelTerm) {
    const operand = channelTerm.operand;
    const c = typeof operand === 'number' || /^\d+$/.test(String(operand)) ? state.channels.get(Number(operand)) : state.channelsByName.get(String(operand).toLowerCase());
    if (!c || !canAccess(state, c, user)) throw badNarrow('Invalid narrow operator: unknown channel');
    const src = streamSource(c, true);
    return { sources: src ? [src] : [] };
  }
  if (dmTerm) {
    const { ids, emails } = operandPeople(dmTerm.operand);
    const people = [...ids.map((id) => state.users.get(id)), ...emails.map((e) => state.usersByEmail.get(e))];
    if (people.some((p) => p === undefined)) throw badNarrow('Invalid narrow operator: unknown user');
    const conv = state.dmConversation([userId, ...people.map((p) => p!.id)]);
    return { sources: conv ? [{ recipientKey: `d${conv.key}`, minId: 0 }] : [] };
  }
  if (!onlyDms) {
    if (channelsPublic) {
      for (const c of state.channels.values()) if (!c.inviteOnly) sources.push({ recipientKey: `s${c.id}`, minId: 0 });
    } else {
      for (const c of state.channels.values()) {
        const sub = state.subs.get(c.id)?.get(userId);
        if (sub) sources.push({ recipientKey: `s${c.id}`, minId: sub.startMessageId });
      }
    }
  }
  if (!onlyStreams) for (const key of state.dmsByUser.get(userId) ?? []) sources.push({ recipientKey: `d${key}`, minId: 0 });
  return { sources };
}
