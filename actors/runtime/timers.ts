/**
 * Durable timers (Orleans' reminders): an actor sets a timer in the same
 * commit as the change that needs it (`Tx.setTimer`), so the timer exists
 * exactly when the change does. Timers are stored per shard and hour
 * (`T.timers`); the node that owns a shard loads that shard's timers from the
 * shard's cursor (the first hour that may still hold timers) up to the next
 * hour, runs each when due by handing it to its actor (`ActorHost.fire`), and
 * loads each following hour as time reaches it.
 *
 * A timer runs at least once: its row is deleted in the commit of its
 * handler's change, so a node that dies before that commit leaves the row for
 * the next owner, which runs it again. Handlers are therefore idempotent
 * (they check the state they change, which the same commit updates).
 */
import type { Logger } from 'pino';
import type { Store, Writer } from '../../storage/store.ts';
import { T, timerHour, type TimerRecord } from '../../storage/tables.ts';
import type { TimerWheel } from './context.ts';

/** How often the wheel looks at the clock for a new hour and the cursor. */
const TICK_MS = 30_000;
/** Delay before a timer whose handler failed unexpectedly runs again. */
const RETRY_MS = 5_000;

const keyOf = (t: TimerRecord) => T.timers.at(0, t).ck as string;

export class ShardTimers implements TimerWheel {
  private pending = new Map<string, NodeJS.Timeout>();
  /** Every hour up to this one has been read from the store. */
  private loadedUntil = 0;
  private cursor = 0;
  private ticker: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly shard: number,
    private readonly store: Store,
    /** The shard's own writer (scope `shard:<n>`), for the cursor. */
    private readonly writer: Writer,
    private readonly fire: (t: TimerRecord) => Promise<void>,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  async start(): Promise<void> {
    const hour = timerHour(this.now());
    this.cursor = (await T.timerCursors.at(this.shard).get(this.store))?.hour ?? hour;
    // Set first, so a timer committed while we read is scheduled by `schedule`.
    this.loadedUntil = hour + 1;
    for (let h = this.cursor; h <= this.loadedUntil; h++) await this.load(h);
    this.ticker = setInterval(() => void this.tick().catch((err: unknown) => this.log.warn({ err, shard: this.shard }, 'timer tick failed')), TICK_MS);
    this.ticker.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.ticker) clearInterval(this.ticker);
    for (const handle of this.pending.values()) clearTimeout(handle);
    this.pending.clear();
  }

  schedule(t: TimerRecord): void {
    if (this.stopped || timerHour(t.at) > this.loadedUntil) return;
    const key = keyOf(t);
    if (this.pending.has(key)) return;
    this.arm(key, t, Math.max(0, t.at - this.now()));
  }

  cancel(t: TimerRecord): void {
    const key = keyOf(t);
    const handle = this.pending.get(key);
    if (handle) clearTimeout(handle);
    this.pending.delete(key);
  }

  /** Timers waiting in memory (for tests and logs). */
  get size(): number {
    return this.pending.size;
  }

  private arm(key: string, t: TimerRecord, delay: number): void {
    const handle = setTimeout(() => void this.run(key, t), delay);
    this.pending.set(key, handle);
  }

  private async run(key: string, t: TimerRecord): Promise<void> {
    if (this.stopped) return;
    try {
      await this.fire(t);
      if (this.pending.get(key)) this.pending.delete(key);
    } catch (err) {
      if (this.stopped) return;
      this.log.warn({ err, timer: key, shard: this.shard }, 'timer handler failed; retrying');
      this.arm(key, t, RETRY_MS);
    }
  }

  private async load(hour: number): Promise<void> {
    for (const t of await T.timers.partition(this.shard, hour).values(this.store)) this.schedule(t);
  }

  /** Loads hours as the clock reaches them and moves the cursor past hours left empty. */
  private async tick(): Promise<void> {
    const hour = timerHour(this.now());
    while (this.loadedUntil < hour + 1 && !this.stopped) {
      this.loadedUntil++;
      await this.load(this.loadedUntil);
    }
    let cursor = this.cursor;
    while (cursor < hour && (await T.timers.partition(this.shard, cursor).range(this.store, { limit: 1 })).length === 0) cursor++;
    if (cursor !== this.cursor && !this.stopped) {
      await this.writer.commit([T.timerCursors.at(this.shard).put({ hour: cursor })]);
      this.cursor = cursor;
    }
  }
}
