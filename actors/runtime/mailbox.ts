/**
 * A mailbox runs one message to completion before the next (Orleans'
 * non-reentrant default), so an actor's handlers never interleave across an
 * `await`. A handler that must wait for something other than its own work
 * (a long poll) returns a `Parked` reply, which frees the mailbox.
 */
import { type MailboxStats, secondsSince } from '../../lib/metrics.ts';

/** A reply that completes later, outside the mailbox. */
export class Parked<T> {
  constructor(readonly promise: Promise<T>) {}
}

export class Mailbox {
  private queue: Array<() => Promise<void>> = [];
  private running = false;

  /** `stats`: the kind's depth and wait series (`lib/metrics.ts`); none in unit tests. */
  constructor(private readonly stats: MailboxStats | null = null) {}

  /**
   * Runs `fn` after every message posted before it has completed. Every
   * message is counted; one in `stats.sampleEvery` has its wait timed (two
   * clock reads), so the histogram is a uniform sample of all messages.
   */
  post<T>(fn: () => Promise<T> | T): Promise<T> {
    const stats = this.stats;
    let timed = false;
    if (stats) {
      stats.posted.count++;
      if (--stats.untilSample === 0) {
        stats.untilSample = stats.sampleEvery;
        timed = true;
      }
    }
    if (!this.running && this.queue.length === 0) {
      if (timed) stats!.wait.observe(0);
      return this.runNow(fn);
    }
    const queued = timed ? performance.now() : 0;
    if (stats) stats.queued.depth++;
    return new Promise<T>((resolve, reject) => {
      this.queue.push(async () => {
        if (stats) {
          stats.queued.depth--;
          if (timed) stats.wait.observe(secondsSince(queued));
        }
        try {
          resolve(await fn());
        } catch (err) {
          reject(err);
        }
      });
      if (!this.running) void this.drain();
    });
  }

  /** Fast path for an idle mailbox: no queue entry, and no waiting at all for a synchronous handler. */
  private runNow<T>(fn: () => Promise<T> | T): Promise<T> {
    let result: Promise<T> | T;
    try {
      result = fn();
    } catch (err) {
      return Promise.reject(err);
    }
    if (!(result instanceof Promise)) return Promise.resolve(result);
    this.running = true;
    return result.finally(() => {
      this.running = false;
      if (this.queue.length) void this.drain();
    });
  }

  get depth(): number {
    return this.queue.length;
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      for (let job = this.queue.shift(); job; job = this.queue.shift()) await job();
    } finally {
      this.running = false;
    }
  }
}
