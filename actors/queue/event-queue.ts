/**
 * One client's event queue: events wait here until the client acknowledges
 * them with `last_event_id`; at most one long poll waits on it at a time.
 */
import { ApiError } from '../../lib/errors.ts';
import type { QueueOptions } from '../protocol.ts';

export type QueuedEvent = { id: number; type: string } & Record<string, unknown>;

export interface PollReply {
  events: QueuedEvent[];
  queue_id: string;
}

interface Waiter {
  resolve: (reply: PollReply) => void;
  /** When the poll gets a heartbeat if nothing else arrived (ms since epoch). */
  heartbeatAt: number;
}

/** More unacknowledged events than this and the queue is discarded (the client registers again). */
export const MAX_PENDING_EVENTS = 10_000;

export class EventQueue {
  private events: QueuedEvent[] = [];
  private nextEventId = 0;
  /** Every event with an ID at or below this was acknowledged and dropped. */
  private acked = -1;
  private waiter: Waiter | null = null;
  lastActive = Date.now();

  constructor(
    readonly id: string,
    readonly realmId: number,
    readonly userId: number,
    readonly options: QueueOptions,
  ) {}

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

  push(event: Omit<QueuedEvent, 'id'>): void {
    this.events.push({ ...event, id: this.nextEventId++ } as QueuedEvent);
    this.wake();
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

  reply(): PollReply {
    return { events: this.events.slice(), queue_id: this.id };
  }

  /** Parks a long poll; a poll already waiting is answered now with no events. */
  wait(heartbeatAt: number): Promise<PollReply> {
    this.finishWaiter({ events: [], queue_id: this.id });
    return new Promise<PollReply>((resolve) => {
      this.waiter = { resolve, heartbeatAt };
    });
  }

  /** Sends a heartbeat to a poll that has waited long enough. */
  heartbeatIfDue(now: number): void {
    if (this.waiter && now >= this.waiter.heartbeatAt) this.push({ type: 'heartbeat' });
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
