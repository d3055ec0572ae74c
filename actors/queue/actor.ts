/**
 * The queue actor of a shard: holds the event queues of the users in that
 * shard, serves their long polls, and turns deliveries into per-queue events
 * (filtered by event_types, narrow and all_public_streams). A channel message
 * comes once per node, naming no recipients: the shard finds the channel's
 * subscribers among its own queues (`SubscriberIndex`), O(local subscribers).
 *
 * Queues live in memory only, as in Zulip. When the shard is handed over
 * gracefully (SIGTERM, drain, rebalance) they move to its next owner with
 * their pending events and IDs (`actors/runtime/handoff.ts`), so clients go
 * on polling the same queue; when a node is lost they are gone, and clients
 * get BAD_EVENT_QUEUE_ID and register again.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { z } from 'zod';
import { badEventQueue } from '../../lib/errors.ts';
import { eventQueues, queuePolls } from '../../lib/metrics.ts';
import { matchesNarrow, NarrowTermSchema } from '../../lib/narrow.ts';
import { CHECK, checkClientEvent } from '../events/check.ts';
import { type ChannelMessage, type Delivery, type Directory, isChannelMessage } from '../events/delivery.ts';
import { avatarUrl, defaultFlags, formatMessage, topicForClient } from '../format.ts';
import { defineAction, defineQuery, type Msg } from '../runtime/action.ts';
import { Parked } from '../runtime/mailbox.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import type { ActorContext } from '../runtime/context.ts';
import { defineActor } from '../runtime/registry.ts';
import { messageView } from '../user/messages.ts';
import { EventQueue, eventText, MAX_PENDING_EVENTS, type PollReply, type QueueSnapshot } from './event-queue.ts';
import { queueRef } from './ref.ts';
import { type Release, sameRelease, SERVER_GENERATION } from '../../lib/version.ts';
import { SubscriberIndex, type SubscriberIndexSnapshot } from './subscribers.ts';

export const QueueOptions = z.object({
  eventTypes: z.array(z.string()).nullable(),
  /** Resolved to IDs by the realm actor. */
  narrow: z.array(NarrowTermSchema),
  allPublicStreams: z.boolean(),
  applyMarkdown: z.boolean(),
  clientExtavatar: z.boolean(),
  bulkMessageDeletion: z.boolean(),
  idleSecs: z.number().positive(),
  /** The client's declared capabilities (`client_capabilities`), for events that depend on them. */
  capabilities: z.record(z.string(), z.boolean()).default({}),
  /** Unused: the realm applies receives_typing_notifications when a notice is sent (kept for queues stored before). */
  receivesTypingNotifications: z.boolean().default(true),
  /** Client capabilities: typing notices in channels, and presence events in the simplified form. */
  streamTypingNotifications: z.boolean().default(false),
  simplifiedPresenceEvents: z.boolean().default(false),
  /** Client capability individual_emoji_changes (FL 491): realm_emoji add/edit instead of the whole list. */
  individualEmojiChanges: z.boolean().default(false),
  /**
   * For clients without the `empty_topic_name` capability: the organization's
   * `realm_empty_topic_display_name`, given in place of the empty topic in
   * every event that names a topic. Null: the client handles the empty topic.
   */
  emptyTopicDisplayName: z.string().nullable().default(null),
});
export type QueueOptions = z.infer<typeof QueueOptions>;

/** The queue shards hosted in this process, for the scrape's gauges. */
const hosted = new Set<QueueShard>();
eventQueues.add((set) => {
  let n = 0;
  for (const s of hosted) n += s.queues.size;
  set(n);
});
queuePolls.add((set) => {
  let n = 0;
  for (const s of hosted) for (const q of s.queues.values()) if (q.polling) n++;
  set(n);
});

/** How often a polling user is reported to their realm (less than its idle window, `IDLE_SECS`). */
const ACTIVITY_REPORT_MS = 60_000;

/** Tells a realm which of its users were seen polling at `at` (for missed-message email: `actors/realm/actions/notifications/notifications.ts`). */
export type ActivityReport = (realmId: number, userIds: number[], at: number) => Promise<void>;

export class QueueShard {
  readonly queues = new Map<string, EventQueue>();
  /** `${realm}:${user}` -> when they were last reported active; pruned once stale. */
  private reported = new Map<string, number>();
  /** realm -> users to report at the next tick. */
  private toReport = new Map<number, Set<number>>();
  readonly byUser = new Map<string, Set<EventQueue>>();
  /** realm -> its queues here (for realm-wide deliveries). */
  readonly byRealm = new Map<number, Set<EventQueue>>();
  readonly allPublic = new Set<EventQueue>();
  /** Which of this shard's users (with a queue) are subscribed to which channels. */
  readonly subscribers = new SubscriberIndex();

  constructor(
    readonly heartbeatSecs: number,
    /** Live queues a user may have (`PARLEY_MAX_QUEUES_PER_USER`). */
    readonly maxQueuesPerUser: number,
    private readonly log: Logger,
    private readonly reportActivity: ActivityReport = async () => {},
  ) {
    hosted.add(this);
  }

  /** A user registered or polled: reported to their realm at the next tick, at most once per ACTIVITY_REPORT_MS. */
  noteActive(realmId: number, userId: number, now: number): void {
    const key = `${realmId}:${userId}`;
    if (now - (this.reported.get(key) ?? 0) < ACTIVITY_REPORT_MS) return;
    this.reported.set(key, now);
    let users = this.toReport.get(realmId);
    if (!users) this.toReport.set(realmId, (users = new Set()));
    users.add(userId);
  }

  /** Reports the users noted since the last report to their realms; resolves once the realms have them (a failure is logged). */
  flushActivity(now: number): Promise<void> {
    const sent = [...this.toReport].map(([realmId, users]) => this.reportActivity(realmId, [...users], now));
    this.toReport.clear();
    return Promise.all(sent).then(() => undefined);
  }

  private prunedAt = 0;

  /** Forgets users not seen for a report period (O(users seen), once per period). */
  private pruneReported(now: number): void {
    this.prunedAt = now;
    for (const [key, at] of this.reported) if (now - at >= ACTIVITY_REPORT_MS) this.reported.delete(key);
  }

  /**
   * The queue to end for a new one when the user is at `maxQueuesPerUser`
   * (all of a user's queues live in the user's shard): the one idle longest,
   * a queue without a waiting poll before one with. Null below the cap.
   */
  queueToEvict(realmId: number, userId: number): EventQueue | null {
    const queues = this.byUser.get(`${realmId}:${userId}`);
    if (!queues || queues.size < this.maxQueuesPerUser) return null;
    let oldest: EventQueue | null = null;
    for (const q of queues) {
      if (!oldest || (oldest.polling && !q.polling) || (oldest.polling === q.polling && q.lastActive < oldest.lastActive)) oldest = q;
    }
    return oldest;
  }

  /** `channelIds`: the user's channels as the realm gave them before the queue was made (`SubscriberIndex.seed`). */
  add(q: EventQueue, channelIds: readonly number[]): void {
    this.subscribers.seed(q.realmId, q.userId, channelIds);
    this.queues.set(q.id, q);
    const key = `${q.realmId}:${q.userId}`;
    let set = this.byUser.get(key);
    if (!set) this.byUser.set(key, (set = new Set()));
    set.add(q);
    let inRealm = this.byRealm.get(q.realmId);
    if (!inRealm) this.byRealm.set(q.realmId, (inRealm = new Set()));
    inRealm.add(q);
    if (q.options.allPublicStreams) this.allPublic.add(q);
  }

  /** The caller's own queue, or BAD_EVENT_QUEUE_ID. */
  own(caller: Msg<unknown>['caller'], queueId: string): EventQueue {
    const q = this.queues.get(queueId);
    if (!q || q.userId !== caller.userId || q.realmId !== caller.realmId) throw badEventQueue(queueId);
    return q;
  }

  drop(q: EventQueue): void {
    q.close();
    this.queues.delete(q.id);
    const key = `${q.realmId}:${q.userId}`;
    this.byUser.get(key)?.delete(q);
    if (this.byUser.get(key)?.size === 0) {
      this.byUser.delete(key);
      this.subscribers.forget(q.realmId, q.userId);
    }
    this.allPublic.delete(q);
    this.byRealm.get(q.realmId)?.delete(q);
    if (this.byRealm.get(q.realmId)?.size === 0) this.byRealm.delete(q.realmId);
  }

  deliver(d: Delivery, broadcast: boolean): void {
    if (isChannelMessage(d)) {
      // Only as a broadcast: a channel message is published on its realm's broadcast subject alone.
      if (broadcast) this.deliverChannelMessage(d);
      return;
    }
    if (d.kind === 'realm') {
      // Only as a broadcast, as a channel message: published on its realm's broadcast subject alone.
      if (broadcast) this.deliverToRealm(d);
      return;
    }
    if (broadcast) return;
    if (d.kind === 'event' && d.event.type === 'subscription' && (d.event.op === 'add' || d.event.op === 'remove')) {
      // Before the queues' filters: the index follows every change of a user's own subscriptions.
      const channelIds = d.event.subscriptions.map((s) => s.stream_id);
      for (const id of d.userIds) this.subscribers.note(d.realmId, id, channelIds, d.event.op === 'add', Date.now());
    }
    const formatted = formattedOf(d);
    for (const id of d.userIds!) {
      for (const q of this.byUser.get(`${d.realmId}:${id}`) ?? []) {
        if (d.kind === 'message') this.deliverMessage(q, d, true, formatted);
        else this.deliverEvent(q, d);
        if (q.pending > MAX_PENDING_EVENTS) this.drop(q);
      }
    }
    const gone = deactivatedUser(d);
    if (gone !== null) this.dropUser(d.realmId, gone);
  }

  /**
   * A realm-wide event: every queue of the realm this shard holds but those of
   * `except` (O(local queues of the realm)); with `channelId`, only the queues
   * of the channel's subscribers and of `also` (O(local subscribers with a
   * queue + also)).
   */
  private deliverToRealm(d: Extract<Delivery, { kind: 'realm' }>): void {
    const except = d.except.length ? new Set(d.except) : null;
    const full: EventQueue[] = [];
    const take = (q: EventQueue) => {
      if (except?.has(q.userId)) return;
      this.deliverEvent(q, d);
      if (q.pending > MAX_PENDING_EVENTS) full.push(q);
    };
    if (d.channelId === undefined) for (const q of this.byRealm.get(d.realmId) ?? []) take(q);
    else {
      const subscribers = this.subscribers.subscribers(d.realmId, d.channelId);
      for (const userId of subscribers ?? []) for (const q of this.byUser.get(`${d.realmId}:${userId}`) ?? []) take(q);
      // Those named besides the subscribers, once each: not a subscriber here, not named twice.
      for (const userId of new Set(d.also ?? [])) if (!subscribers?.has(userId)) for (const q of this.byUser.get(`${d.realmId}:${userId}`) ?? []) take(q);
    }
    // Dropped after the walk: dropping changes the set being walked.
    for (const q of full) this.drop(q);
  }

  private deliverEvent(q: EventQueue, d: Extract<Delivery, { kind: 'event' | 'realm' }>): void {
    if (d.event.type === 'delete_message' && !q.options.bulkMessageDeletion) {
      // Clients without bulk_message_deletion get one event per message, with message_id.
      if (q.wants('delete_message')) for (const id of d.event.message_ids ?? []) this.push(q, JSON.stringify({ ...(personalize(d.event, q.options) as object), message_ids: undefined, message_id: id }));
    } else if (q.wants(d.event.type) && (!d.capability || declared(q.options, d.capability.name) === d.capability.value) && accepts(q.options, d.event)) this.push(q, eventJson(d, q.options));
  }

  /** Ends every queue of a user (deactivated): a waiting poll gets what is queued, the next poll BAD_EVENT_QUEUE_ID. */
  dropUser(realmId: number, userId: number): void {
    for (const q of [...(this.byUser.get(`${realmId}:${userId}`) ?? [])]) this.drop(q);
  }

  /**
   * A channel message for this shard's queues: those of the channel's
   * subscribers (with their flags), then, for a public channel, the
   * all_public_streams queues of users not subscribed (read). O(local
   * subscribers with a queue + all_public_streams queues).
   */
  private deliverChannelMessage(d: ChannelMessage): void {
    const subscribers = this.subscribers.subscribers(d.realmId, d.message.streamId!);
    if (!subscribers && !(d.allPublic && this.allPublic.size)) return;
    const formatted = formattedOf(d);
    const full: EventQueue[] = [];
    for (const userId of subscribers ?? []) {
      for (const q of this.byUser.get(`${d.realmId}:${userId}`) ?? []) {
        this.deliverMessage(q, d, true, formatted);
        if (q.pending > MAX_PENDING_EVENTS) full.push(q);
      }
    }
    if (d.allPublic) {
      for (const q of this.allPublic) {
        if (q.realmId !== d.realmId || subscribers?.has(q.userId)) continue;
        this.deliverMessage(q, d, false, formatted);
        if (q.pending > MAX_PENDING_EVENTS) full.push(q);
      }
    }
    // Dropped after the walk: dropping a user's last queue changes the index being walked.
    for (const q of full) this.drop(q);
  }

  /** `formatted` caches the message's JSON per format options across the queues of one delivery (`formattedOf`). */
  private deliverMessage(q: EventQueue, d: Extract<Delivery, { kind: 'message' }>, isRecipient: boolean, formatted: Map<string, string>): void {
    if (!q.wants('message')) return;
    const m = d.message;
    const flags = isRecipient ? defaultFlags(m, q.userId) : READ;
    if (q.options.narrow.length > 0 && !matchesNarrow(q.options.narrow, messageView(m, flags))) return;
    const hidden = d.hiddenSenderFor?.includes(q.userId) ?? false;
    const key = hidden ? `${q.formatKey}:hidden` : q.formatKey;
    // The event's text up to its flags, one string for every queue that gets this format.
    let shared = formatted.get(key);
    if (!shared) formatted.set(key, (shared = `{"type":"message","message":${JSON.stringify(formatMessage(m, hidden ? withoutUser(d.names, m.senderId) : d.names, q.options))}`));
    const echo = d.localEcho && d.localEcho.queueId === q.id && d.localEcho.senderId === q.userId ? `,"local_message_id":${JSON.stringify(d.localEcho.localId)}` : '';
    const e = q.pushParts(shared, flagsField(flags) + echo);
    if (CHECK) checkClientEvent(eventText(e), this.log);
  }

  private push(q: EventQueue, json: string): void {
    const text = q.pushEncoded(json);
    checkClientEvent(text, this.log);
  }

  /** Heartbeats for polls that waited long enough; discards queues idle too long. */
  tick(now: number): void {
    this.subscribers.prune(now);
    if (this.toReport.size) void this.flushActivity(now);
    if (now - this.prunedAt >= ACTIVITY_REPORT_MS) this.pruneReported(now);
    for (const q of this.queues.values()) {
      if (q.polling) {
        const beat = q.heartbeatIfDue(now);
        if (beat) checkClientEvent(beat, this.log);
      } else if (now - q.lastActive > q.options.idleSecs * 1000) this.drop(q);
    }
  }

  /**
   * Ends every queue: events meant for them may have been lost (the node was
   * off the bus). A waiting poll gets what is queued, the next poll
   * BAD_EVENT_QUEUE_ID, and the client registers again: it reads the state
   * afresh instead of missing a change without knowing.
   */
  dropAll(): void {
    if (this.queues.size) this.log.warn({ queues: this.queues.size }, 'ended event queues that may have missed events');
    for (const q of [...this.queues.values()]) this.drop(q);
  }

  /** The shard's queues as data, for its next owner (their waiting polls are answered at unload). */
  handOff(): QueueShardSnapshot {
    return { queues: [...this.queues.values()].map((q) => q.snapshot()), subscribers: this.subscribers.snapshot() };
  }

  /**
   * Takes the queues (and the subscriber index of their users) a previous
   * owner handed over, or the last stop kept. A queue last told of another
   * release than `release`, this process's, gets one `restart` event (Zulip
   * sends one to every queue Tornado loads at start) and is told of this one,
   * so later handovers within the release send none.
   */
  takeOver(s: QueueShardSnapshot, release: Release | null): void {
    this.subscribers.restore(s.subscribers);
    for (const snap of s.queues) {
      const q = EventQueue.restore(snap);
      // Each user is indexed already: `add` seeds nothing.
      this.add(q, []);
      if (release && !sameRelease(q.release, release)) this.announceRelease(q, release);
    }
  }

  /** The `restart` event (FL 59: with the version and feature level; FL 240: without `immediate`). */
  private announceRelease(q: EventQueue, release: Release): void {
    q.release = release;
    if (!q.wants('restart')) return;
    this.push(q, JSON.stringify({ type: 'restart', zulip_version: release.version, zulip_merge_base: release.version, zulip_feature_level: release.featureLevel, server_generation: SERVER_GENERATION }));
  }

  /** Ends every waiting poll (shutdown or shard handover). */
  closeAll(): void {
    hosted.delete(this);
    for (const q of this.queues.values()) q.close();
  }
}

/** What a queue shard hands over to the shard's next owner. */
export interface QueueShardSnapshot {
  queues: QueueSnapshot[];
  subscribers: SubscriberIndexSnapshot;
}

/**
 * A message's JSON per format options, kept with the delivery: the node gives
 * every shard of it the same (checked) delivery, so each format is made once
 * per node, not once per shard.
 */
const formats = new WeakMap<Delivery, Map<string, string>>();
function formattedOf(d: Delivery): Map<string, string> {
  let m = formats.get(d);
  if (!m) formats.set(d, (m = new Map()));
  return m;
}

/**
 * An event's JSON for queues with `options`, encoded once per delivery and variant (what `personalize`
 * reads: client_extavatar, empty_topic_name) and shared by every queue that takes it: a realm-wide
 * peer_add or a newcomer's subscription add with the channel's subscriber list is encoded a few
 * times per node, not once per queue (O(size) instead of O(queues × size) in time and memory).
 */
function eventJson(d: Extract<Delivery, { kind: 'event' | 'realm' }>, options: QueueOptions): string {
  const variants = formattedOf(d);
  const key = `event\u0000${options.clientExtavatar}\u0000${options.emptyTopicDisplayName ?? '\u0000'}`;
  let json = variants.get(key);
  if (json === undefined) variants.set(key, (json = JSON.stringify(personalize(d.event, options))));
  return json;
}

/** The flags of a message to a queue that did not receive it (an all_public_streams queue). */
const READ = ['read'];

/** `,"flags":[...]` for a list of flags, one string per distinct list (there are a few dozen at most). */
const flagFields = new Map<string, string>();
function flagsField(flags: string[]): string {
  const key = flags.join();
  let field = flagFields.get(key);
  if (!field) flagFields.set(key, (field = `,"flags":${JSON.stringify(flags)}`));
  return field;
}

/** `names` without one user: a message's sender for those who may not see them. */
function withoutUser(names: Directory, userId: number): Directory {
  const { [String(userId)]: _, ...users } = names.users;
  return { ...names, users };
}

/** The user a delivery reports deactivated (their queues end once they got it), or null. */
function deactivatedUser(d: Delivery): number | null {
  if (d.kind !== 'event' || d.event.type !== 'realm_user' || d.event.op !== 'update') return null;
  const person = d.event.person;
  return 'is_active' in person && person.is_active === false ? person.user_id : null;
}

/** Whether a queue's client declared a capability; `client_extavatar` (a register parameter) counts as one, for avatar events. */
const declared = (options: QueueOptions, name: string): boolean => (name === 'client_extavatar' ? options.clientExtavatar : (options.capabilities[name] ?? false));

/**
 * Whether a queue takes an event at all: typing follows the queue's capabilities (the realm leaves out
 * users whose receives_typing_notifications is off when each notice is sent), presence comes in the
 * form the queue asked for.
 */
function accepts(options: QueueOptions, event: Extract<Delivery, { kind: 'event' }>['event']): boolean {
  if (event.type === 'typing') return event.message_type !== 'stream' || options.streamTypingNotifications;
  if (event.type === 'presence') return 'presences' in event === options.simplifiedPresenceEvents;
  if (event.type === 'realm_emoji') return (event.op !== 'update') === options.individualEmojiChanges;
  return true;
}

/** Per-queue variants of an event: avatar URLs follow the queue's client_extavatar, topics its empty_topic_name. */
function personalize(event: Extract<Delivery, { kind: 'event' }>['event'], options: QueueOptions): unknown {
  // A user known by a made-up address keeps the avatar URL the realm gave (the client cannot compute it).
  // So does a user whose avatar this server makes (a Jdenticon: a path of the organization's URL).
  if (event.type === 'realm_user' && event.op === 'add' && event.person.email === event.person.delivery_email && !event.person.avatar_url?.startsWith('/')) return { ...event, person: { ...event.person, avatar_url: avatarUrl(event.person.email, options.clientExtavatar) } };
  const name = options.emptyTopicDisplayName;
  return name === null ? event : withEmptyTopicNamed(event, name);
}

/**
 * An event with the empty topic given as `name`, for clients without the
 * empty_topic_name capability: the events Zulip's queues rewrite
 * (`zerver/tornado/event_queue.py`); a message's `subject` is set when it is
 * formatted (`formatMessage`).
 */
function withEmptyTopicNamed(event: Extract<Delivery, { kind: 'event' }>['event'], name: string): unknown {
  switch (event.type) {
    case 'update_message':
      if (event.subject !== '' && event.orig_subject !== '') return event;
      return {
        ...event,
        ...(event.subject !== undefined ? { subject: topicForClient(event.subject, name) } : {}),
        ...(event.orig_subject !== undefined ? { orig_subject: topicForClient(event.orig_subject, name) } : {}),
      };
    case 'delete_message':
    case 'typing':
      return event.topic === '' ? { ...event, topic: name } : event;
    case 'user_topic':
      return event.topic_name === '' ? { ...event, topic_name: name } : event;
    case 'update_message_flags': {
      const details = event.message_details;
      if (!details || !Object.values(details).some((x) => x.type === 'stream' && x.topic === '')) return event;
      const renamed = Object.fromEntries(Object.entries(details).map(([id, x]) => [id, x.type === 'stream' ? { ...x, topic: topicForClient(x.topic, name) } : x]));
      return { ...event, message_details: renamed };
    }
    default:
      return event;
  }
}

const action = defineAction<QueueShard>();
const query = defineQuery<QueueShard>();

const register = action({
  type: 'register',
  /** `channelIds`: the user's channels, read from the realm just before (`queueChannels`), for the shard's subscriber index. */
  fields: z.object({
    options: QueueOptions,
    channelIds: z.array(z.number().int()),
    /**
     * The release the register's answer named (the gateway's): the queue remembers it (`takeOver`). Null
     * from a gateway of an older release during a rolling deploy: the next release to serve the queue announces itself.
     */
    release: z.object({ version: z.string(), featureLevel: z.number().int() }).strict().nullable().default(null),
  }),
  check(shard, msg) {
    // Each queue holds memory and gets every event: a bounded number per user. Past the cap the
    // user's longest-idle queue ends (its client gets BAD_EVENT_QUEUE_ID and registers again, as
    // after an expiry), so a client that registers without end cannot grow the server.
    return { caller: msg.caller, options: msg.options, channelIds: msg.channelIds, release: msg.release, evict: shard.queueToEvict(msg.caller.realmId, msg.caller.userId!) };
  },
  apply(shard, p) {
    if (p.evict) shard.drop(p.evict);
    const q = new EventQueue(randomBytes(12).toString('base64url'), p.caller.realmId, p.caller.userId!, p.options);
    q.release = p.release;
    shard.add(q, p.channelIds);
    shard.noteActive(q.realmId, q.userId, Date.now());
    return { queue_id: q.id, last_event_id: q.lastEventId };
  },
});

const getEvents = query({
  type: 'getEvents',
  fields: z.object({ queueId: z.string(), lastEventId: z.number().int().nullable(), dontBlock: z.boolean() }),
  run(shard, msg): PollReply | Parked<PollReply> {
    const q = shard.own(msg.caller, msg.queueId);
    if (msg.lastEventId !== null) q.acknowledge(msg.lastEventId);
    q.lastActive = Date.now();
    shard.noteActive(q.realmId, q.userId, q.lastActive);
    if (q.pending > 0 || msg.dontBlock) return q.reply();
    const jitter = 0.9 + Math.random() * 0.2;
    return new Parked(q.wait(Date.now() + shard.heartbeatSecs * 1000 * jitter));
  },
});

const deleteQueue = action({
  type: 'deleteQueue',
  fields: z.object({ queueId: z.string() }),
  check(shard, msg) {
    return shard.own(msg.caller, msg.queueId);
  },
  apply(shard, q) {
    shard.drop(q);
    return {};
  },
});

export const queueHandlers = { register, getEvents, deleteQueue };

function newShard(ctx: ActorContext): QueueShard {
  const log = ctx.log.child({ actor: 'queue' });
  const report: ActivityReport = (realmId, userIds, at) =>
    ctx.actors.call(realmRef, realmActorId(realmId), { type: 'noteActivity', caller: { realmId, userId: null }, userIds, at }).then(
      () => undefined,
      (err: unknown) => log.warn({ err, realmId }, 'activity report failed'),
    );
  return new QueueShard(ctx.heartbeatSecs, ctx.limits.maxQueuesPerUser, log, report);
}

export const queueActor = defineActor({
  ref: queueRef,
  durable: false,
  perShard: true,
  load: async (ctx) => newShard(ctx),
  // A graceful handover (actors/runtime/handoff.ts): held polls answered now (the client polls again and
  // reaches the next owner), the queues handed over as they are once the last delivery here is applied.
  quiesce: (shard) => {
    // Activity not reported yet goes now: the next owner does not get it.
    void shard.flushActivity(Date.now());
    for (const q of shard.queues.values()) q.close();
  },
  // A stopping node's: the activity noted since the last tick reaches the realms before they unload (else a user
  // active in the last second before a deploy would be left out of partial subscriber lists after it).
  flush: (shard) => shard.flushActivity(Date.now()),
  holdsState: (shard) => shard.queues.size > 0,
  handOff: (shard) => shard.handOff(),
  takeOver: async (ctx, data) => {
    const shard = newShard(ctx);
    shard.takeOver(data as QueueShardSnapshot, ctx.release);
    return shard;
  },
  handlers: queueHandlers,
  onDelivery: (shard, d, broadcast) => shard.deliver(d, broadcast),
  wantsBroadcasts: (shard) => shard.queues.size > 0,
  eventsLost: (shard) => shard.dropAll(),
  tick: (shard, now) => shard.tick(now),
  stats: (shard) => {
    let polls = 0;
    for (const q of shard.queues.values()) if (q.polling) polls++;
    return { queues: shard.queues.size, polls };
  },
  unload: (shard) => {
    void shard.flushActivity(Date.now());
    shard.closeAll();
  },
});
