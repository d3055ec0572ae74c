/**
 * Missed-message email (Zulip's `notification_data.py`, `message_send.py`'s
 * `get_recipient_info`, and the `missedmessage_emails` worker).
 *
 * Who is mailed about a message is decided once, where it is sent
 * (`applySend` calls `decideMissedEmails`): each recipient who may be mailed
 * (the DM's participants, or the channel's subscribers a trigger may apply
 * to, `candidates`; the send does not walk the others) is looked at in
 * O(1): not the sender (nor anyone, for the organization's system bots), not a bot, not someone who muted the sender, not
 * someone active now (a queue of theirs polled within `IDLE_SECS`: the queue
 * actors report the users they see polling, `noteActivity`), and then one of
 * Zulip's triggers per the user's settings: a direct message, a personal or
 * group mention, a channel wildcard mention, a followed topic, or the
 * channel's email notifications. The decision is a row of `missed_emails`
 * written in the message's commit, so a node lost after the send loses no
 * notification.
 *
 * Each user's notifications wait for their batch
 * (`email_notifications_batching_period_seconds`) on a durable timer of the
 * realm, set by the first of them. The timer's `effect` runs outside the
 * realm's mailbox: it asks the user's actor which of the messages are still
 * unread (a message read before the batch leaves is not mailed), renders one
 * mail per conversation and sends it; the timer's commit then deletes the rows
 * it mailed. A failed send leaves the rows and the timer, which runs again.
 * A node lost between the mail and that commit mails the batch again (at
 * least once; every mail carries a Message-ID derived from the batch, so a
 * repeat is recognizable).
 *
 * Calls go one way (`docs/architecture.md`): the realm's mailbox never waits
 * on a user actor. The effect is not in the mailbox (it holds nothing while
 * it asks), as Zulip's worker reads flags outside the send's transaction.
 */
import { cancelOnboarding } from './signup_email.ts';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { badRequest } from '../../../../lib/errors.ts';
import { realmUrl } from '../../../../lib/hosts.ts';
import { type MailPart, sendMail, UNSUBSCRIBE_PATH } from '../../../../lib/mail.ts';
import { type StoredMessage, type SubscriptionRecord, T } from '../../../../storage/tables.ts';
import { defineAction, defineTimer, type Tx } from '../../../runtime/action.ts';
import { userActorId, userRef } from '../../../user/ref.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';
import { settingEvents, writeSetting } from '../people/settings.ts';
import type { RealmState } from '../../state/state.ts';
import { VisibilityPolicy } from '../messages/user_topics.ts';
import { hasPushDevice, recordPush } from './push.ts';
import { pushConfigured } from '../../../../lib/push.ts';

const action = defineAction<RealmState>();
const timer = defineTimer<RealmState>();

/** A user whose queues polled within this long is active and not mailed (Zulip's presence idle window, OFFLINE_THRESHOLD_SECS). */
export const IDLE_SECS = Number(process.env.PARLEY_NOTIFY_IDLE_SECS ?? 140);

const MISSED = 'missedMessageEmails';

const setting = (state: Readonly<RealmState>, userId: number, name: string): boolean | number | string => state.setting(userId, name, DEFAULT_USER_SETTINGS[name]!);
const on = (state: Readonly<RealmState>, userId: number, name: string) => setting(state, userId, name) === true;

export const isIdle = (state: Readonly<RealmState>, userId: number, now: number): boolean => now - (state.activeAt.get(userId) ?? 0) > IDLE_SECS * 1000;

/** What every recipient's decision about one message shares, worked out once. */
interface MessageFacts {
  m: StoredMessage;
  mentioned: ReadonlySet<number>;
  /** A topic wildcard mention's audience: the topic's participants before the message. */
  topicParticipants: ReadonlySet<number>;
  /** The `user_topics` key of its topic. */
  topicKey: string;
  subs: ReadonlyMap<number, SubscriptionRecord> | undefined;
}

/** The settings one channel of notification reads (Zulip keeps a set of each per channel of notification). */
interface Medium {
  /** Direct messages and mentions (personal, group, wildcard). */
  offline: string;
  followed: string;
  /** The user's default for a channel's own setting. */
  stream: string;
  streamOverride: (sub: SubscriptionRecord) => boolean | null;
  followedTrigger: string;
  streamTrigger: string;
}

export const EMAIL: Medium = {
  offline: 'enable_offline_email_notifications',
  followed: 'enable_followed_topic_email_notifications',
  stream: 'enable_stream_email_notifications',
  streamOverride: (sub) => sub.emailNotifications,
  followedTrigger: 'followed_topic_email_notify',
  streamTrigger: 'stream_email_notify',
};

export const PUSH: Medium = {
  offline: 'enable_offline_push_notifications',
  followed: 'enable_followed_topic_push_notifications',
  stream: 'enable_stream_push_notifications',
  streamOverride: (sub) => sub.pushNotifications,
  followedTrigger: 'followed_topic_push_notify',
  streamTrigger: 'stream_push_notify',
};

/**
 * Why `userId` is notified of `m` through `medium`, or null (Zulip's
 * UserMessageNotificationsData, in its order: the most salient trigger
 * wins). O(1).
 */
export function triggerFor(state: Readonly<RealmState>, f: MessageFacts, userId: number, medium: Medium): string | null {
  const m = f.m;
  if (state.mutedUsers.get(userId)?.has(m.senderId)) return null;
  const offline = on(state, userId, medium.offline);
  if (m.streamId === null) return offline ? 'private_message' : null;
  if (offline && f.mentioned.has(userId)) return 'mentioned';
  const sub = f.subs?.get(userId);
  if (!sub) return null;
  const policy = state.userTopics.get(userId)?.get(f.topicKey)?.policy ?? VisibilityPolicy.INHERIT;
  const followed = policy === VisibilityPolicy.FOLLOWED;
  // Zulip's user_allows_notifications_in_StreamTopic (a followed topic of a muted channel counts as unmuted here).
  const muted = policy === VisibilityPolicy.MUTED || (sub.isMuted && policy !== VisibilityPolicy.UNMUTED && !followed);
  if (muted) return null;
  // A topic wildcard reaches the topic's participants only; a channel wildcard every subscriber.
  const wildcard = m.wildcard === 'stream' ? 'stream' : m.wildcard === 'topic' && f.topicParticipants.has(userId) ? 'topic' : null;
  if (offline && wildcard) {
    if (followed && on(state, userId, 'enable_followed_topic_wildcard_mentions_notify')) return `${wildcard}_wildcard_mentioned_in_followed_topic`;
    if (sub.wildcardMentionsNotify ?? on(state, userId, 'wildcard_mentions_notify')) return `${wildcard}_wildcard_mentioned`;
  }
  if (followed && on(state, userId, medium.followed)) return medium.followedTrigger;
  if (medium.streamOverride(sub) ?? on(state, userId, medium.stream)) return medium.streamTrigger;
  return null;
}

const NOBODY: ReadonlySet<number> = new Set();

/**
 * Who may be mailed about a channel message: each trigger of `triggerFor`
 * but the channel wildcard needs the user mentioned, a participant of the
 * topic (a topic wildcard), following the topic, or with the channel's email
 * on, and the realm lists those (`RealmState.emailCandidates`): O(mentions +
 * topic participants + topic followers + users with channel email on), not
 * O(subscribers). A channel wildcard mention (which only those allowed to
 * mention many users may make in a large channel) and a server whose default
 * turns channel email on walk the subscribers. With push configured, the
 * subscribers with a push device are candidates too. The users with channel
 * email on and those with a device are each met with the channel's
 * subscribers by walking the smaller side.
 */
function candidates(state: Readonly<RealmState>, f: MessageFacts, subs: ReadonlyMap<number, SubscriptionRecord>, push: boolean): Iterable<number> {
  if (f.m.wildcard === 'stream' || DEFAULT_USER_SETTINGS[EMAIL.stream] === true) return subs.keys();
  const { byChannel, byTopic, streamEmailUsers } = state.emailCandidates;
  const out = new Set<number>(f.m.mentions);
  for (const id of f.topicParticipants) out.add(id);
  for (const id of byTopic.get(f.topicKey) ?? []) out.add(id);
  for (const id of byChannel.get(f.m.streamId!) ?? []) out.add(id);
  addSubscribed(out, streamEmailUsers, subs);
  // Push: the subscribers with a device (a channel's push setting has no index of its own).
  if (push) {
    addSubscribed(out, state.pushDevices, subs);
    addSubscribed(out, state.clientDevices, subs);
  }
  return out;
}

/** Adds the users of `users` subscribed to the channel (`subs`), walking the smaller of the two: O(min(users, subscribers)). */
function addSubscribed(out: Set<number>, users: ReadonlySet<number> | ReadonlyMap<number, unknown>, subs: ReadonlyMap<number, SubscriptionRecord>): void {
  if (users.size <= subs.size) {
    for (const id of users.keys()) if (subs.has(id)) out.add(id);
  } else {
    for (const id of subs.keys()) if (users.has(id)) out.add(id);
  }
}

/**
 * Records who is mailed about a just-stored message, in its commit, and
 * starts each new batch's timer; and who is pushed about it (`push.ts`),
 * also in its commit. A direct message: O(participants); a channel message:
 * O(`candidates`). Call before the message's own write: it sets `m.pushed`.
 */
export function decideMissedEmails(state: RealmState, m: StoredMessage, tx: Tx, topicParticipants?: readonly number[]): void {
  // The organization's own bots (Welcome Bot, Notification Bot) mail nobody: a new user would be
  // mailed their welcome message before they ever logged in (a Parley choice).
  if (state.systemBots.has(m.senderId)) return;
  const now = Date.now();
  const subs = m.streamId !== null ? state.subs.get(m.streamId) : undefined;
  const facts: MessageFacts = {
    m,
    mentioned: new Set(m.mentions),
    topicParticipants: m.wildcard === 'topic' && topicParticipants ? new Set(topicParticipants) : NOBODY,
    topicKey: `${m.streamId}:${m.topic.toLowerCase()}`,
    subs,
  };
  const push = pushConfigured();
  const recipients: Iterable<number> = subs ? candidates(state, facts, subs, push) : m.streamId !== null ? [] : m.dmUserIds!;
  let pushed: Array<[number, string]> | null = null;
  for (const userId of recipients) {
    if (userId === m.senderId || (subs && !subs.get(userId)?.active)) continue;
    const idle = isIdle(state, userId, now);
    // Push also reaches an active user whose enable_online_push_notifications is on (Zulip's online_push_enabled).
    const mayPush = push && hasPushDevice(state, userId) && (idle || on(state, userId, 'enable_online_push_notifications'));
    if (!idle && !mayPush) continue;
    const user = state.users.get(userId);
    if (!user || user.isBot || !user.isActive) continue;
    if (idle) {
      const trigger = triggerFor(state, facts, userId, EMAIL);
      if (trigger) addMissed(state, tx, userId, m.id, trigger, now);
    }
    if (mayPush) {
      const trigger = triggerFor(state, facts, userId, PUSH);
      if (trigger) (pushed ??= []).push([userId, trigger]);
    }
  }
  if (pushed) recordPush(state, m, pushed, tx);
}

function addMissed(state: RealmState, tx: Tx, userId: number, messageId: number, trigger: string, now: number): void {
  let mine = state.missedEmails.get(userId);
  if (!mine) state.missedEmails.set(userId, (mine = new Map()));
  ensureUnsubscribeKey(state, tx);
  // The first notification of a batch starts its timer; the rest ride along.
  if (mine.size === 0) startBatch(state, tx, userId, now);
  mine.set(messageId, trigger);
  tx.write(T.missedEmails.at(state.realmId, userId, messageId).put({ trigger }));
}

function startBatch(state: Readonly<RealmState>, tx: Tx, userId: number, now: number): void {
  const period = Number(setting(state, userId, 'email_notifications_batching_period_seconds'));
  tx.setTimer(MISSED, now + period * 1000, { userId }, userId);
}

/** How stale a user's stored last activity may get before a report rewrites it. */
const ACTIVITY_STORE_MS = 3600_000;

/**
 * The queue actors' report of users seen polling: in memory for the idle
 * window (a reloaded realm counts everyone idle until the next report), and
 * stored hourly at most for the digest.
 */
export const noteActivity = action({
  type: 'noteActivity',
  fields: z.object({ userIds: z.array(z.number().int()), at: z.number().int() }),
  check(_state, msg) {
    if (msg.caller.userId !== null) throw badRequest('Only the server reports activity');
    return msg;
  },
  apply(state, msg, tx) {
    for (const id of msg.userIds) {
      if (!state.users.has(id) || (state.activeAt.get(id) ?? 0) >= msg.at) continue;
      // Back after two weeks or more: named again in the partial subscriber lists (FL 412).
      state.noteRecentActivity(id, msg.at);
      state.activeAt.set(id, msg.at);
      // Stored too, hourly at most, for the digest's "not active for days" (`digest.ts`).
      if (msg.at - (state.lastActive.get(id) ?? 0) >= ACTIVITY_STORE_MS) {
        state.lastActive.set(id, msg.at);
        tx.write(T.userActivity.at(state.realmId, id).put({ at: msg.at }));
      }
    }
    return {};
  },
});

/** One mail of a batch: a conversation's messages. */
interface Conversation {
  key: string;
  messages: StoredMessage[];
}

/** Links into the web app, as Zulip's `near_message_url`: the conversation, at its first missed message. */
export function conversationUrl(state: Readonly<RealmState>, base: string, m: StoredMessage): string {
  if (m.streamId === null) return `${base}/#narrow/dm/${m.dmUserIds!.join(',')}/near/${m.id}`;
  const channel = state.channels.get(m.streamId);
  const slug = `${m.streamId}-${encodeURIComponent((channel?.name ?? '').replace(/ /g, '-'))}`;
  return `${base}/#narrow/channel/${slug}/topic/${encodeURIComponent(m.topic)}/near/${m.id}`;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const nameOf = (state: Readonly<RealmState>, id: number) => state.users.get(id)?.fullName ?? 'Unknown user';

/** The mail for one conversation (Zulip's `build_message_list` and `missed_message` templates, in short). */
export function composeMissedEmail(state: Readonly<RealmState>, site: string, userId: number, conv: Conversation): MailPart & { messageId: string; unsubscribe: string } {
  const first = conv.messages[0]!;
  const realmName = state.meta?.name ?? 'Parley';
  const withContent = state.org.settings.messageContentAllowedInEmailNotifications && on(state, userId, 'message_content_in_email_notifications');
  let subject: string;
  if (first.streamId === null) {
    const others = first.dmUserIds!.filter((id) => id !== userId).map((id) => nameOf(state, id));
    subject = others.length === 1 ? `DMs with ${others[0]}` : `Group DMs with ${others.join(', ')}`;
  } else {
    subject = `#${state.channels.get(first.streamId)?.name ?? 'channel'} > ${first.topic || (state.meta?.emptyTopicDisplayName ?? 'general chat')}`;
  }
  const base = realmUrl(site, state.meta?.stringId ?? '');
  const url = conversationUrl(state, base, first);
  const unsubscribe = `${base}${UNSUBSCRIBE_PATH}/${unsubscribeToken(state, userId)}`;
  const footer = 'This server has no incoming email gateway: replies to this email are not delivered. Reply in the app instead.';
  const text: string[] = [`You have unread messages in ${realmName}: ${subject}`, ''];
  const html: string[] = [`<p>You have unread messages in ${escapeHtml(realmName)}: <b>${escapeHtml(subject)}</b></p>`];
  for (const m of conv.messages) {
    const sender = nameOf(state, m.senderId);
    if (withContent) {
      text.push(`${sender}: ${m.content}`);
      html.push(`<div class="message"><b>${escapeHtml(sender)}</b>: ${m.renderedContent}</div>`);
    } else {
      text.push(`${sender} sent a message (content hidden by the organization's or your settings).`);
      html.push(`<div class="message"><b>${escapeHtml(sender)}</b> sent a message.</div>`);
    }
  }
  text.push('', `View or reply: ${url}`, '', footer, `Unsubscribe from missed-message emails: ${unsubscribe}`);
  html.push(`<p><a href="${escapeHtml(url)}">View or reply in ${escapeHtml(realmName)}</a></p>`, `<p><small>${escapeHtml(footer)} <a href="${escapeHtml(unsubscribe)}">Unsubscribe</a> from missed-message emails.</small></p>`);
  return { subject, text: text.join('\n'), html: html.join('\n'), messageId: `<missed.${state.realmId}.${userId}.${first.id}.${conv.messages.at(-1)!.id}@parley>`, unsubscribe };
}

/** What the effect handled: these rows are done (mailed, read, or no longer to be mailed). */
interface Handled {
  ids: number[];
}

/**
 * A user's batch leaves: the unread ones are mailed, one mail per
 * conversation, and every row the effect looked at is deleted. Rows added
 * while it ran start a new batch.
 */
export const missedMessageEmails = timer({
  name: MISSED,
  async effect(state, payload: { userId: number }, ctx): Promise<Handled> {
    const pending = state.missedEmails.get(payload.userId);
    const ids = pending ? [...pending.keys()].sort((a, b) => a - b) : [];
    const user = state.users.get(payload.userId);
    if (!ids.length || !user?.isActive) return { ids };
    const caller = { realmId: state.realmId, userId: payload.userId };
    const { messages } = await ctx.actors.call(userRef, userActorId(state.realmId, payload.userId), { type: 'unreadMessages', caller, ids });
    const byConversation = new Map<string, Conversation>();
    for (const m of messages) {
      const key = m.streamId === null ? m.recipientKey : `${m.streamId}:${m.topic.toLowerCase()}`;
      let conv = byConversation.get(key);
      if (!conv) byConversation.set(key, (conv = { key, messages: [] }));
      conv.messages.push(m);
    }
    for (const conv of byConversation.values()) {
      const { unsubscribe, ...mail } = composeMissedEmail(state, ctx.siteUrl, payload.userId, conv);
      await sendMail({ to: user.email, ...mail, listUnsubscribe: unsubscribe });
    }
    ctx.log.info({ realm: state.realmId, user: payload.userId, messages: messages.length, mails: byConversation.size }, 'missed-message emails sent');
    return { ids };
  },
  check(state, payload: { userId: number }, _ctx, done: Handled) {
    return { userId: payload.userId, ids: done.ids };
  },
  apply(state, p, tx) {
    const mine = state.missedEmails.get(p.userId);
    for (const id of p.ids) {
      mine?.delete(id);
      tx.write(T.missedEmails.at(state.realmId, p.userId, id).delete());
    }
    if (mine?.size) startBatch(state, tx, p.userId, Date.now());
    else state.missedEmails.delete(p.userId);
    return null;
  },
});


/** What an unsubscribe link turns off: missed-message emails or the digest (Zulip's one-click unsubscribe types). */
export type UnsubscribeKind = 'missed_messages' | 'digest' | 'welcome' | 'login';
/** The setting a link turns off; the onboarding email's (`welcome`) cancels the pending mail instead (`actors/realm/actions/notifications/signup_email.ts`), as Zulip's. */
const UNSUBSCRIBE_SETTING: Record<Exclude<UnsubscribeKind, 'welcome'>, string> = { missed_messages: 'enable_offline_email_notifications', digest: 'enable_digest_emails', login: 'enable_login_emails' };

const signature = (key: string, realmId: number, userId: number, kind: UnsubscribeKind) => createHmac('sha256', Buffer.from(key, 'base64url')).update(`${realmId}:${userId}:${kind}`).digest('base64url');

/** The organization's key for unsubscribe links, made (in `tx`) if it has none yet. */
export function ensureUnsubscribeKey(state: RealmState, tx: Tx): void {
  if (state.unsubscribeKey !== null) return;
  state.unsubscribeKey = randomBytes(32).toString('base64url');
  tx.write(T.unsubscribeKeys.at(state.realmId).put({ key: state.unsubscribeKey }));
}

/** `<user ID>.<signature>`: works without logging in, for as long as the organization's key. */
export function unsubscribeToken(state: Readonly<RealmState>, userId: number, kind: UnsubscribeKind = 'missed_messages'): string {
  return `${userId}.${signature(state.unsubscribeKey!, state.realmId, userId, kind)}`;
}

/** The user a token names, if its signature is this organization's for `kind`; null otherwise. */
function tokenUser(state: Readonly<RealmState>, token: string, kind: UnsubscribeKind): number | null {
  const m = /^(\d{1,10})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m || state.unsubscribeKey === null) return null;
  const userId = Number(m[1]);
  const want = Buffer.from(signature(state.unsubscribeKey, state.realmId, userId, kind));
  const got = Buffer.from(m[2]!);
  return want.length === got.length && timingSafeEqual(want, got) && state.users.has(userId) ? userId : null;
}

/**
 * The unsubscribe link, followed without credentials (one click, as Zulip's):
 * turns `enable_offline_email_notifications` (a missed-message email's link)
 * or `enable_digest_emails` (a digest's) off for the user the token names,
 * with the settings event a change from the settings page gives.
 */
export const unsubscribeMissedEmails = action({
  type: 'unsubscribeMissedEmails',
  fields: z.object({ token: z.string().max(200), kind: z.enum(['missed_messages', 'digest', 'welcome', 'login']).default('missed_messages') }),
  check(state, msg) {
    if (msg.caller.userId !== null) throw badRequest('Only the server follows unsubscribe links');
    const userId = tokenUser(state, msg.token, msg.kind);
    if (userId === null) throw badRequest('Invalid or expired unsubscribe link');
    if (msg.kind === 'welcome') return { userId, name: null, change: false };
    const name = UNSUBSCRIBE_SETTING[msg.kind];
    return { userId, name, change: on(state, userId, name) };
  },
  apply(state, p, tx) {
    if (p.name === null) cancelOnboarding(state, p.userId, tx);
    else if (p.change) writeSetting(state, tx, p.userId, p.name, false, true);
    return { email: state.users.get(p.userId)!.email };
  },
  events(state, p) {
    return p.change && p.name !== null ? settingEvents(state, p.userId, p.name, false) : [];
  },
});
