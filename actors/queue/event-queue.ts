/**
 * One client's event queue: events wait here until the client acknowledges
 * them with `last_event_id`; at most one long poll waits on it at a time.
 */
import { ApiError } from '../../lib/errors.ts';
import type { QueueOptions } from './actor.ts';
import { JsonText } from '../runtime/bus.ts';
import type { Release } from '../../lib/version.ts';

/**
 * An event as the client will get it, already encoded, in two parts: `shared`,
 * the object's JSON up to its last field (a message fanned out to many queues
 * is encoded once and this text is the same string in every queue), and
 * `own`, what this queue adds (its flags); the event's `id` and the closing
 * brace are added when a poll's reply is put together. A queue thus holds a
 * few dozen bytes per waiting message, not a copy of it.
 */
export interface QueuedEvent {
  id: number;
  shared: string;
  own: string;
}

/** An event's JSON text as the client gets it. */
export const eventText = (e: QueuedEvent): string => `${e.shared}${e.own}${e.shared.length > 1 || e.own ? ',' : ''}"id":${e.id}}`;

/** A poll's reply, `{events, queue_id}`, as JSON text. */
export type PollReply = JsonText;

interface Waiter {
  resolve: (reply: PollReply) => void;
  /** When the poll gets a heartbeat if nothing else arrived (ms since epoch). */
  heartbeatAt: number;
}

/** More unacknowledged events than this and the queue is discarded (the client registers again). */
export const MAX_PENDING_EVENTS = 10_000;

/** A queue as handed over to a shard's next owner (`actors/runtime/handoff.ts`): everything but a waiting poll. */
export interface QueueSnapshot {
  id: string;
  realmId: number;
  userId: number;
  options: QueueOptions;
  nextEventId: number;
  acked: number;
  lastActive: number;
  events: QueuedEvent[];
  /** The release the client last heard of (absent: handed over by a node from before releases were recorded). */
  release?: Release | null;
}

export class EventQueue {
  private events: QueuedEvent[] = [];
  private nextEventId = 0;
  /** Every event with an ID at or below this was acknowledged and dropped. */
  private acked = -1;
  private waiter: Waiter | null = null;
  lastActive = Date.now();
  /**
   * The release the client last heard of: the one it registered under, then
   * the one a `restart` event announced (`lib/version.ts`). Null: not known.
   */
  release: Release | null = null;
  /** The format its messages are encoded in (queues with the same key share the text). */
  readonly formatKey: string;

  constructor(
    readonly id: string,
    readonly realmId: number,
    readonly userId: number,
    readonly options: QueueOptions,
  ) {
    this.formatKey = `${options.applyMarkdown}:${options.clientExtavatar}:${options.emptyTopicDisplayName ?? ''}`;
  }

  /** The queue as data, for the shard's next owner. */
  snapshot(): QueueSnapshot {
    return { id: this.id, realmId: this.realmId, userId: this.userId, options: this.options, nextEventId: this.nextEventId, acked: this.acked, lastActive: this.lastActive, events: this.events, release: this.release };
  }

  /** The queue a snapshot describes, as it was on the previous owner (same ID, same event IDs). */
  static restore(s: QueueSnapshot): EventQueue {
    const q = new EventQueue(s.id, s.realmId, s.userId, s.options);
    q.nextEventId = s.nextEventId;
    q.acked = s.acked;
    q.lastActive = s.lastActive;
    q.events = s.events;
    q.release = s.release ?? null;
    return q;
  }

  get lastEventId(): number {
    return this.nextEventId - 1;
  }

  get pending(): number {
    return this.events.length;
  }

  get polling(): boolean {
    return this.waiter !== null;
  }

  wants(type: string): boolean {
    return this.options.eventTypes === null || this.options.eventTypes.includes(type);
  }

  /** Queues an event given as the JSON text of an object without its `id`; returns the event's text with its `id`. */
  pushEncoded(json: string): string {
    return eventText(this.pushParts(json.slice(0, -1), ''));
  }

  /** Queues an event given as its two parts (`QueuedEvent`): `shared` is an object's JSON without its closing brace. */
  pushParts(shared: string, own: string): QueuedEvent {
    const e = { id: this.nextEventId++, shared, own };
    this.events.push(e);
    this.wake();
    return e;
  }

  /** Drops acknowledged events; an ID older than what was already dropped is an error. */
  acknowledge(lastEventId: number): void {
    if (lastEventId < this.acked) {
      throw new ApiError('BAD_REQUEST', `An event newer than ${this.acked} has already been pruned!`, 400);
    }
    this.acked = Math.max(this.acked, lastEventId);
    let i = 0;
    while (i < this.events.length && this.events[i]!.id <= lastEventId) i++;
    if (i) this.events.splice(0, i);
  }

  /** One flat string made by one join: the gateway slices it into its answer without copying it again. */
  reply(): PollReply {
    const parts = ['{"events":['];
    for (let i = 0; i < this.events.length; i++) parts.push(i ? `,${eventText(this.events[i]!)}` : eventText(this.events[i]!));
    parts.push(`],"queue_id":${JSON.stringify(this.id)}}`);
    return new JsonText(parts.join(''));
  }

  private empty(): PollReply {
    return new JsonText(`{"events":[],"queue_id":${JSON.stringify(this.id)}}`);
  }

  /** Parks a long poll; a poll already waiting is answered now with no events. */
  wait(heartbeatAt: number): Promise<PollReply> {
    this.finishWaiter(this.empty());
    return new Promise<PollReply>((resolve) => {
      this.waiter = { resolve, heartbeatAt };
    });
  }

  /** Sends a heartbeat to a poll that has waited long enough; returns its text when it did. */
  heartbeatIfDue(now: number): string | null {
    if (this.waiter && now >= this.waiter.heartbeatAt) return this.pushEncoded('{"type":"heartbeat"}');
    return null;
  }

  /** Ends a waiting poll (on delete or shutdown) with what is queued. */
  close(): void {
    this.finishWaiter(this.reply());
  }

  private wake(): void {
    if (this.waiter) this.finishWaiter(this.reply());
  }

  private finishWaiter(reply: PollReply): void {
    const w = this.waiter;
    if (!w) return;
    this.waiter = null;
    this.lastActive = Date.now();
    w.resolve(reply);
  }
}
