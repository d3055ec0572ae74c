/**
 * The weekly digest email (Zulip's `zerver/lib/digest.py` and its
 * `digest` templates).
 *
 * When: while the organization's `digest_emails_enabled` is on (and the
 * server's, `PARLEY_SEND_DIGEST_EMAILS`), a durable timer of the realm is
 * armed for its next `digest_weekday` (0 is Monday, as Zulip's) at
 * `PARLEY_DIGEST_HOUR_UTC` (18:00 UTC by default); turning the setting off
 * clears it, changing the weekday moves it. An operator may run it now
 * (`parley org digest <org> --now`, the `runDigestNow` action): the same
 * timer, due at once. Each run re-arms the timer for the next week.
 *
 * Who: active, human users with `enable_digest_emails` on who have not been
 * active for `DIGEST_CUTOFF_DAYS` (5) days (their queues' polls, stored
 * hourly at most by `noteActivity`) and were not sent a digest in the last
 * 12 hours (Zulip's rules). A user gets one only if there is something to
 * tell: a hot conversation or a new channel.
 *
 * What (since the cutoff, 5 days before the run): up to 4 hot conversations
 * of the channels the user is subscribed to and has not muted (the 2 with
 * the most human senders, then the longest by human messages; channels the
 * user joined within the period are left out, as Zulip leaves out changed
 * subscriptions, so nobody sees what they could not have), each with its
 * first 2 messages and "+ N more messages by ..."; the public channels
 * created in the period; the users who joined in it; an unsubscribe link
 * that works without logging in. HTML and text; the messages' content only
 * where the organization's and the user's settings allow it.
 *
 * How, off the realm's mailbox: the timer's `effect` (outside the mailbox)
 * works through the eligible users 30 at a time (Zulip's chunk), reading the
 * period's messages from the store, not the realm's state: each channel's
 * once per run (cached while the run lasts), and subscriptions indexed by
 * user once per run. A run costs O(users + subscriptions + messages of the
 * period) in all, and between chunks the realm answers other requests. Each
 * chunk's commit records the digests it composed (`digest_outbox`), the
 * time each user got one (`user_digests`: the 12-hour rule, so a run
 * repeated after a crash composes no second digest) and the timer of the
 * next chunk, or of the next week. Mail goes by SMTP after that commit: one
 * timer per user (`digestSend`) sends the recorded mail and deletes it. A
 * node lost between SMTP's acceptance and that delete sends that one mail
 * again, with the same Message-ID (`<digest.<realm>.<user>.<run>@parley>`),
 * so a repeat is recognizable; a digest is composed once per user per week.
 */
import { z } from 'zod';
import { ApiError } from '../../../../lib/errors.ts';
import { realmUrl } from '../../../../lib/hosts.ts';
import { DIGEST_UNSUBSCRIBE_PATH, sendMail } from '../../../../lib/mail.ts';
import { type ChannelRecord, type DigestMail, type StoredMessage, T } from '../../../../storage/tables.ts';
import { channelRecipientKey, Role } from '../../../model.ts';
import { defineAction, defineTimer, type Tx } from '../../../runtime/action.ts';
import type { ActorContext } from '../../../runtime/context.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';
import { ensureUnsubscribeKey, unsubscribeToken } from './notifications.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const timer = defineTimer<RealmState>();

const DIGEST = 'digest';
const SEND = 'digestSend';
const DAY_MS = 86_400_000;
/** Users active within this many days get no digest; the digest covers them (Zulip's DIGEST_CUTOFF). */
export const DIGEST_CUTOFF_DAYS = 5;
/** No second digest within this long (Zulip's twelve_hours_ago). */
const RECENT_DIGEST_MS = 12 * 3600_000;
/** Users per chunk (Zulip's chunk_size). */
const CHUNK = 30;
const HOT_TOPICS = 4;
const SAMPLES = 2;
const READ_CHUNK = 500;

/** Whether this server sends digests at all (Zulip's SEND_DIGEST_EMAILS): `settings_send_digest_emails`. */
export const digestsOnServer = (): boolean => process.env.PARLEY_SEND_DIGEST_EMAILS !== 'false';
const digestHourUtc = (): number => Number(process.env.PARLEY_DIGEST_HOUR_UTC ?? 18);

const setting = (state: Readonly<RealmState>, userId: number, name: string) => state.setting(userId, name, DEFAULT_USER_SETTINGS[name]!);

/** The first time after `now` that is `weekday` (0: Monday) at the digest hour, UTC. */
export function nextDigestAt(now: number, weekday: number, hour = digestHourUtc()): number {
  const d = new Date(now);
  const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), hour);
  for (let i = 0; ; i++) {
    const t = start + i * DAY_MS;
    if (t > now && (new Date(t).getUTCDay() + 6) % 7 === weekday) return t;
  }
}

const enabled = (state: Readonly<RealmState>): boolean => state.org.settings.digestEmailsEnabled && digestsOnServer();

/** Sets the digest timer for `run` (its scheduled time), continuing after user `after`; replaces the armed one. */
function schedule(state: RealmState, tx: Tx, at: number, run: number, after: number): void {
  if (state.digestPending) tx.clearTimer(DIGEST, state.digestPending.at, 0);
  ensureUnsubscribeKey(state, tx);
  const when = tx.setTimer(DIGEST, at, { run, after }, 0);
  state.digestPending = { at: when, run, after };
  tx.write(T.digestRuns.at(state.realmId).put(state.digestPending));
}

function disarm(state: RealmState, tx: Tx): void {
  if (state.digestPending) tx.clearTimer(DIGEST, state.digestPending.at, 0);
  state.digestPending = null;
  tx.write(T.digestRuns.at(state.realmId).delete());
}

/** Arms the digest timer for the next digest weekday, or clears it when digests are off (a change of the organization's settings). */
export function armDigest(state: RealmState, tx: Tx, now = Date.now()): void {
  if (!enabled(state)) return disarm(state, tx);
  const at = nextDigestAt(now, state.org.settings.digestWeekday);
  schedule(state, tx, at, at, 0);
}

/** The operator's "run the digest now" (`parley org digest <org> --now`): the timer, due at once, for a run of this time. */
export const runDigestNow = action({
  type: 'runDigestNow',
  fields: z.object({}),
  check(state, msg) {
    if (msg.caller.userId !== null) throw new ApiError('UNAUTHORIZED', 'Only the server runs digests', 403);
    if (!digestsOnServer()) throw new ApiError('BAD_REQUEST', 'This server sends no digest emails (PARLEY_SEND_DIGEST_EMAILS=false)', 400);
    if (!state.org.settings.digestEmailsEnabled) throw new ApiError('BAD_REQUEST', 'Digest emails are off for this organization (digest_emails_enabled)', 400);
    return Date.now();
  },
  apply(state, now, tx) {
    schedule(state, tx, now, now, 0);
    return { run: now };
  },
});

// ---- what a digest says --------------------------------------------------------------------

/** A conversation of the period (Zulip's DigestTopic). */
interface DigestTopic {
  channelId: number;
  name: string;
  samples: StoredMessage[];
  humanSenders: Set<string>;
  humanMessages: number;
}

/** One channel's period: its conversations, in the order they began, and its first message's ID. */
interface ChannelPeriod {
  firstId: number;
  topics: DigestTopic[];
}

/** What a run works out once: its eligible users, subscriptions by user, and each channel's period (read when first needed). */
interface RunCache {
  run: number;
  eligible: number[];
  channelsOf: Map<number, number[]>;
  periods: Map<number, Promise<ChannelPeriod>>;
}

const runs = new Map<number, RunCache>();

/** Whether user `id` is to get a digest in the run at `run` (Zulip's `_enqueue_emails_for_realm` filter). */
function eligible(state: Readonly<RealmState>, id: number, run: number): boolean {
  const u = state.users.get(id);
  if (!u || !u.isActive || u.isBot || setting(state, id, 'enable_digest_emails') !== true) return false;
  const lastActive = Math.max(state.lastActive.get(id) ?? 0, state.activeAt.get(id) ?? 0);
  return lastActive <= run - DIGEST_CUTOFF_DAYS * DAY_MS && (state.lastDigest.get(id) ?? 0) <= run - RECENT_DIGEST_MS;
}

function cacheFor(state: Readonly<RealmState>, run: number): RunCache {
  const had = runs.get(state.realmId);
  if (had?.run === run) return had;
  const channelsOf = new Map<number, number[]>();
  for (const [channelId, subs] of state.subs) {
    for (const [userId, sub] of subs) {
      if (!sub.active || sub.isMuted) continue;
      let mine = channelsOf.get(userId);
      if (!mine) channelsOf.set(userId, (mine = []));
      mine.push(channelId);
    }
  }
  const cache: RunCache = { run, eligible: [...state.users.keys()].filter((id) => eligible(state, id, run)).sort((a, b) => a - b), channelsOf, periods: new Map() };
  runs.set(state.realmId, cache);
  return cache;
}

/** A channel's messages since `cutoffSecs`, oldest first, read from the store newest bucket first. */
async function periodMessages(ctx: ActorContext, realmId: number, channelId: number, cutoffSecs: number): Promise<StoredMessage[]> {
  const key = channelRecipientKey(channelId);
  const out: StoredMessage[] = [];
  for (const { ck } of await T.recipientBuckets.partition(realmId, key).range(ctx.store, { reverse: true })) {
    const partition = T.messages.partition(realmId, key, Number(ck));
    let hi = Number.MAX_SAFE_INTEGER;
    for (;;) {
      const rows = await partition.values(ctx.store, { lte: hi, reverse: true, limit: READ_CHUNK });
      for (const m of rows) {
        if (m.timestamp <= cutoffSecs) return out.reverse();
        out.push(m);
      }
      if (rows.length < READ_CHUNK) break;
      hi = rows[rows.length - 1]!.id - 1;
      await new Promise((r) => setImmediate(r));
    }
  }
  return out.reverse();
}

async function readPeriod(state: Readonly<RealmState>, ctx: ActorContext, channelId: number, cutoffSecs: number): Promise<ChannelPeriod> {
  const messages = await periodMessages(ctx, state.realmId, channelId, cutoffSecs);
  const byTopic = new Map<string, DigestTopic>();
  for (const m of messages) {
    const key = m.topic.toLowerCase();
    let t = byTopic.get(key);
    if (!t) byTopic.set(key, (t = { channelId, name: m.topic, samples: [], humanSenders: new Set(), humanMessages: 0 }));
    if (t.samples.length < SAMPLES) t.samples.push(m);
    const sender = state.users.get(m.senderId);
    if (sender && !sender.isBot) {
      t.humanSenders.add(sender.fullName);
      t.humanMessages++;
    }
  }
  return { firstId: messages[0]?.id ?? Infinity, topics: [...byTopic.values()] };
}

/** The largest `n` by `key`, ties kept in their order (as heapq.nlargest). */
const largest = <X>(xs: X[], n: number, key: (x: X) => number): X[] => xs.map((x, i) => ({ x, i })).sort((a, b) => key(b.x) - key(a.x) || a.i - b.i).slice(0, n).map((e) => e.x);

/** Zulip's get_hot_topics: the 2 with the most senders, then the longest, up to 4. */
export function hotTopics<X extends { humanSenders: Set<string>; humanMessages: number }>(topics: X[]): X[] {
  const hot = largest(topics, 2, (t) => t.humanSenders.size);
  for (const t of largest(topics, HOT_TOPICS, (t) => t.humanMessages)) {
    if (hot.length >= HOT_TOPICS) break;
    if (!hot.includes(t)) hot.push(t);
  }
  return hot;
}

/** "A, B, C, and 2 others" (Zulip's display_list). */
function displayList(names: string[], max: number): string {
  if (names.length <= 1) return names.join('');
  if (names.length <= max) return `${names.slice(0, -1).join(', ')}${names.length > 2 ? ',' : ''} and ${names.at(-1)}`;
  const rest = names.length - max;
  return `${names.slice(0, max).join(', ')}, and ${rest} other${rest === 1 ? '' : 's'}`;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const slug = (c: Pick<ChannelRecord, 'id' | 'name'>) => `${c.id}-${encodeURIComponent(c.name.replace(/ /g, '-'))}`;

/** A user's digest, or null when it would tell nothing (Zulip's enough_traffic: no hot conversation, no new channel). */
async function compose(state: Readonly<RealmState>, ctx: ActorContext, cache: RunCache, userId: number): Promise<DigestMail | null> {
  const user = state.users.get(userId)!;
  const cutoffMs = cache.run - DIGEST_CUTOFF_DAYS * DAY_MS;
  const cutoffSecs = Math.floor(cutoffMs / 1000);
  const topics: DigestTopic[] = [];
  for (const channelId of cache.channelsOf.get(userId) ?? []) {
    const channel = state.channels.get(channelId);
    if (!channel || channel.isArchived) continue;
    let period = cache.periods.get(channelId);
    if (!period) cache.periods.set(channelId, (period = readPeriod(state, ctx, channelId, cutoffSecs)));
    const p = await period;
    // Joined within the period: left out, so nobody is shown what came before they could see it.
    const sub = state.subs.get(channelId)?.get(userId);
    if (!sub || sub.startMessageId > p.firstId) continue;
    topics.push(...p.topics);
  }
  const hot = hotTopics(topics);
  const guest = user.role === Role.GUEST;
  // This server has no web-public channels: a guest is told of none (Zulip's can_access_public_streams).
  const newChannels = guest ? [] : [...state.channels.values()].filter((c) => !c.isArchived && !c.inviteOnly && c.dateCreated * 1000 > cutoffMs).sort((a, b) => a.id - b.id);
  if (!hot.length && !newChannels.length) return null;
  const newUsers = guest ? [] : [...state.users.values()].filter((u) => u.isActive && !u.isBot && u.id !== userId && Date.parse(u.dateJoined) > cutoffMs).sort((a, b) => a.id - b.id);

  const realmName = state.meta?.name ?? 'Parley';
  const base = realmUrl(ctx.siteUrl, state.meta?.stringId ?? '');
  const unsubscribe = `${base}${DIGEST_UNSUBSCRIBE_PATH}/${unsubscribeToken(state, userId, 'digest')}`;
  const withContent = state.org.settings.messageContentAllowedInEmailNotifications && setting(state, userId, 'message_content_in_email_notifications') === true;
  const nameOf = (id: number) => state.users.get(id)?.fullName ?? 'Unknown user';
  const text: string[] = [];
  const html: string[] = [`<p>Here is what happened in <b>${escapeHtml(realmName)}</b> while you were away.</p>`];
  if (withContent) {
    if (hot.length) html.push('<h3>Hot conversations</h3>');
    for (const t of hot) {
      const channel = state.channels.get(t.channelId)!;
      const header = `#${channel.name} > ${t.name}`;
      const url = `${base}/#narrow/channel/${slug(channel)}/topic/${encodeURIComponent(t.name)}/near/${t.samples[0]!.id}`;
      const more = t.humanMessages - t.samples.length;
      const participants = [...t.humanSenders].sort();
      text.push(header, '');
      html.push(`<div class="conversation"><p><a href="${escapeHtml(url)}"><b>${escapeHtml(header)}</b></a></p>`);
      for (const m of t.samples) {
        text.push(`${nameOf(m.senderId)}: ${m.content}`);
        html.push(`<div class="message"><b>${escapeHtml(nameOf(m.senderId))}</b>: ${m.renderedContent}</div>`);
      }
      if (more > 0) {
        const line = `+ ${more} more message${more === 1 ? '' : 's'} by ${displayList(participants, 4)}.`;
        text.push(line);
        html.push(`<p class="more">${escapeHtml(line)}</p>`);
      }
      text.push('');
      html.push('</div>');
    }
  } else {
    const count = hot.reduce((n, t) => n + t.humanMessages, 0);
    const line =
      count > 0 && newChannels.length > 0 ? `You have ${count} new messages, and there are ${newChannels.length} new channels in ${realmName}.` : count > 0 ? `You have ${count} new messages in ${realmName}.` : `There are ${newChannels.length} new channels in ${realmName}.`;
    const why = state.org.settings.messageContentAllowedInEmailNotifications ? 'This email does not include message content because you have chosen to hide message content in email notifications.' : 'This email does not include message content because your organization hides message content in email notifications.';
    text.push(line, '', why, '');
    html.push(`<p>${escapeHtml(line)}</p>`, `<p>${escapeHtml(why)}</p>`);
  }
  if (newChannels.length) {
    text.push('** New channels **', `    ${displayList(newChannels.map((c) => c.name), 1000)}.`, '');
    html.push('<h3>New channels</h3>', `<p>${newChannels.map((c) => `<a href="${escapeHtml(`${base}/#narrow/channel/${slug(c)}`)}">${escapeHtml(c.name)}</a>`).join(', ')}</p>`);
  }
  if (newUsers.length) {
    const names = displayList(newUsers.map((u) => u.fullName), 10);
    text.push('** New users **', `    ${names}.`, '');
    html.push('<h3>New users</h3>', `<p>${escapeHtml(names)}</p>`);
  }
  text.push(`Log in to catch up: ${base}.`, '', '--', 'Manage email preferences:', '', `${base}/#settings/notifications`, '', 'Unsubscribe from digest emails:', '', unsubscribe);
  html.push(
    `<p><a href="${escapeHtml(base)}">Log in to catch up</a></p>`,
    `<p><small><a href="${escapeHtml(`${base}/#settings/notifications`)}">Manage email preferences</a> · <a href="${escapeHtml(unsubscribe)}">Unsubscribe from digest emails</a></small></p>`,
  );
  return { subject: `Parley digest for ${realmName}`, text: text.join('\n'), html: html.join('\n'), messageId: `<digest.${state.realmId}.${userId}.${cache.run}@parley>`, unsubscribe };
}

// ---- the timers --------------------------------------------------------------------------

interface Pending {
  run: number;
  after: number;
}

interface Chunk {
  /** False when the timer is not the armed one (replaced, or digests turned off meanwhile). */
  current: boolean;
  mails: Array<{ userId: number; mail: DigestMail }>;
  /** The last user looked at, when more may follow; null at the run's end. */
  next: number | null;
}

const isCurrent = (state: Readonly<RealmState>, p: Pending) => state.digestPending?.run === p.run && state.digestPending.after === p.after;

/** One chunk of a run: composed outside the mailbox, recorded in the commit, mailed after it. */
export const digestRun = timer({
  name: DIGEST,
  async effect(state, p: Pending, ctx): Promise<Chunk> {
    if (!isCurrent(state, p) || !enabled(state)) return { current: false, mails: [], next: null };
    const cache = cacheFor(state, p.run);
    const start = cache.eligible.findIndex((id) => id > p.after);
    const batch = start < 0 ? [] : cache.eligible.slice(start, start + CHUNK);
    const mails: Chunk['mails'] = [];
    for (const userId of batch) {
      // Settings may have changed since the run began.
      if (!eligible(state, userId, p.run)) continue;
      const mail = await compose(state, ctx, cache, userId);
      if (mail) mails.push({ userId, mail });
    }
    const next = start >= 0 && start + CHUNK < cache.eligible.length ? batch.at(-1)! : null;
    if (next === null) runs.delete(state.realmId);
    ctx.log.info({ realm: state.realmId, run: p.run, users: batch.length, digests: mails.length }, 'digest chunk composed');
    return { current: true, mails, next };
  },
  check(_state, p: Pending, _ctx, done: Chunk) {
    return { p, done };
  },
  apply(state, { p, done }, tx) {
    if (!done.current || !isCurrent(state, p)) return null;
    const now = Date.now();
    for (const { userId, mail } of done.mails) {
      if (!eligible(state, userId, p.run)) continue;
      state.lastDigest.set(userId, now);
      tx.write(T.userDigests.at(state.realmId, userId).put({ at: now }), T.digestOutbox.at(state.realmId, userId).put(mail));
      tx.setTimer(SEND, now, { userId }, userId);
    }
    if (done.next !== null) schedule(state, tx, now, p.run, done.next);
    else if (enabled(state)) {
      const at = nextDigestAt(Math.max(now, p.run), state.org.settings.digestWeekday);
      schedule(state, tx, at, at, 0);
    } else disarm(state, tx);
    return null;
  },
});

/** Mails one recorded digest by SMTP, after the commit that recorded it; the commit after deletes it. */
export const digestSend = timer({
  name: SEND,
  async effect(state, p: { userId: number }, ctx): Promise<boolean> {
    const mail = await T.digestOutbox.at(state.realmId, p.userId).get(ctx.store);
    const user = state.users.get(p.userId);
    if (!mail || !user?.isActive) return false;
    const { unsubscribe, ...rest } = mail;
    await sendMail({ to: user.email, ...rest, listUnsubscribe: unsubscribe });
    ctx.log.info({ realm: state.realmId, user: p.userId }, 'digest email sent');
    return true;
  },
  check(_state, p: { userId: number }) {
    return p;
  },
  apply(state, p, tx) {
    tx.write(T.digestOutbox.at(state.realmId, p.userId).delete());
    return null;
  },
});
