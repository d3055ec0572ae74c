/**
 * Fault injection for the cluster tests: a Store wrapper that delays or
 * duplicates writes of one scope when a test asks it to, at run time, through
 * Redis. Enabled only with PARLEY_FAULTS=1 (see `maybeFaulty`); otherwise the
 * store is used unchanged.
 *
 * Protocol (keys under the Redis prefix `<p>`, `parley` by default):
 *
 *   <p>:faults               JSON set by the test:
 *                            { "id": "<unique>", "scope": "realm:1",
 *                              "stage": "commit" | "apply",
 *                              "action": "delay" | "duplicate", "ms": 6000 }
 *   <p>:faults:<id>:state    written by the process that acts on it:
 *                            `holding` when it starts holding (the delayed
 *                            call, or the copy to send again), `released`
 *                            when it passes the held call on
 *   <p>:faults:<id>:outcome  `ok` | `fenced` | `error: <message>`: how the
 *                            delayed or duplicated inner call ended
 *
 * Every process polls `<p>:faults` every 100 ms (never on the write path) and
 * acts at most once per id: on the first matching call after it has seen the
 * fault. A fault whose state key exists was taken by some process and is
 * ignored by the others (they may race within one poll interval; arm a fault
 * for a scope while one process owns it). State and outcome keys expire after
 * a day.
 *
 * Stages:
 * - `commit`: the whole Writer.commit call. `delay` holds it for `ms` before
 *   passing it to the inner writer (its result, e.g. FencedError, goes to the
 *   caller and to `outcome`). `duplicate` passes it on, and `ms` after it
 *   settles calls the inner writer's commit again with the same ops (after
 *   any commit then in flight), logging the result and writing it to
 *   `outcome`. While the scope is still owned by that writer the duplicate
 *   really commits the ops again; once a newer owner has claimed it must end
 *   `fenced`.
 * - `apply` (CassandraStore only; others report `error: ...`): the data
 *   writes of a committed journal entry. `delay` holds them for `ms` (the
 *   journal entry is committed, so a new owner claiming meanwhile replays it);
 *   `duplicate` sends the same statements, with the same write timestamp,
 *   again `ms` after they were first acknowledged, exactly as a late driver
 *   retry or batchlog replay would. Both must change nothing once a newer
 *   owner has written.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { z } from 'zod';
import { log as rootLog } from '../lib/log.ts';
import type { ApplyHook, ApplyInfo } from './cassandra.ts';
import { FencedError, type Key, type RangeOptions, type Row, type Store, type Writer, type WriteOp } from './store.ts';

export const Fault = z.object({
  id: z.string().min(1),
  scope: z.string().min(1),
  stage: z.enum(['commit', 'apply']),
  action: z.enum(['delay', 'duplicate']),
  ms: z.number().int().min(0).max(3_600_000),
});
export type Fault = z.infer<typeof Fault>;

export interface FaultOptions {
  redisUrl: string;
  /** Redis key prefix (PARLEY_REDIS_PREFIX). */
  prefix: string;
  /** Default: PARLEY_FAULTS === '1'. */
  enabled?: boolean;
  /** Default 100 ms. */
  pollMs?: number;
  log?: Logger;
}

/** The store wrapped in a FaultyStore when faults are enabled, else the store itself. */
export function maybeFaulty(store: Store, opts: FaultOptions): Store {
  const enabled = opts.enabled ?? process.env['PARLEY_FAULTS'] === '1';
  return enabled ? new FaultyStore(store, opts) : store;
}

/** A store whose data applies can be wrapped (CassandraStore). */
interface ApplyHookTarget {
  setApplyHook(hook: ApplyHook | undefined): void;
}

function hasApplyHook(store: Store): store is Store & ApplyHookTarget {
  return typeof (store as Partial<ApplyHookTarget>).setApplyHook === 'function';
}

const KEY_TTL_SECS = 86_400;

export class FaultyStore implements Store {
  private readonly redis: Redis;
  private readonly key: string;
  private readonly log: Logger;
  private readonly timer: NodeJS.Timeout;
  private readonly pending = new Set<NodeJS.Timeout>();
  /** The fault seen by the last poll, not yet acted on. */
  private armed: Fault | undefined;
  /** Ids acted on (here or, as their state key says, elsewhere). */
  private readonly done = new Set<string>();
  private polling = false;
  private closed = false;
  private lastComplaint = 0;

  constructor(
    private readonly inner: Store,
    opts: FaultOptions,
  ) {
    this.key = `${opts.prefix}:faults`;
    this.log = opts.log ?? rootLog.child({ component: 'faults' });
    this.redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1 });
    this.redis.on('error', (err: Error) => this.complain(err, 'redis'));
    this.timer = setInterval(() => void this.poll(), opts.pollMs ?? 100);
    this.timer.unref();
    if (hasApplyHook(inner)) inner.setApplyHook((info, send) => this.aroundApply(info, send));
    this.log.warn({ key: this.key }, 'fault injection enabled');
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  get<V>(table: string, pk: string, ck: Key): Promise<V | undefined> {
    return this.inner.get<V>(table, pk, ck);
  }

  range<V>(table: string, pk: string, opts?: RangeOptions): Promise<Row<V>[]> {
    return this.inner.range<V>(table, pk, opts);
  }

  async claim(scope: string, token: number): Promise<Writer | null> {
    const writer = await this.inner.claim(scope, token);
    return writer && new FaultyWriter(this, writer);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (const t of this.pending) clearTimeout(t);
    this.pending.clear();
    if (hasApplyHook(this.inner)) this.inner.setApplyHook(undefined);
    await this.redis.quit().catch(() => this.redis.disconnect());
    await this.inner.close();
  }

  /** The fault this process has seen and not yet acted on (tests wait for it). */
  get armedFault(): Fault | undefined {
    return this.armed;
  }

  /** The armed fault for this call, if any; taken once. */
  take(scope: string, stage: Fault['stage']): Fault | undefined {
    const f = this.armed;
    if (!f || f.scope !== scope || f.stage !== stage || this.done.has(f.id)) return undefined;
    this.done.add(f.id);
    this.armed = undefined;
    this.log.warn({ fault: f }, 'fault: acting');
    return f;
  }

  /** Writes `<p>:faults:<id>:<field>` in the background (commands on one connection keep their order). */
  report(f: Fault, field: 'state' | 'outcome', value: string): void {
    if (field === 'outcome') this.log.warn({ fault: f, outcome: value }, 'fault: outcome');
    this.redis.set(`${this.key}:${f.id}:${field}`, value, 'EX', KEY_TTL_SECS).catch((err: unknown) => this.complain(err, `report ${field}`));
  }

  /** Reports how a held or repeated call ended, and passes its result on. */
  async outcome(f: Fault, call: () => Promise<void>): Promise<void> {
    try {
      await call();
      this.report(f, 'outcome', 'ok');
    } catch (err) {
      this.report(f, 'outcome', err instanceof FencedError ? 'fenced' : `error: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    }
  }

  /** Resolves after `ms`, unless the store closes first (then never: the caller is abandoned with the process). */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.pending.delete(t);
        resolve();
      }, ms);
      this.pending.add(t);
    });
  }

  private async aroundApply(info: ApplyInfo, send: () => Promise<void>): Promise<void> {
    const f = this.take(info.scope, 'apply');
    if (!f) return send();
    this.report(f, 'state', 'holding');
    if (f.action === 'delay') {
      await this.sleep(f.ms);
      this.report(f, 'state', 'released');
      return this.outcome(f, send);
    }
    await send();
    void this.sleep(f.ms).then(() => {
      this.report(f, 'state', 'released');
      this.outcome(f, send).catch(() => {});
    });
  }

  private async poll(): Promise<void> {
    if (this.polling || this.closed) return;
    this.polling = true;
    try {
      const raw = await this.redis.get(this.key);
      const parsed = raw === null ? undefined : Fault.safeParse(safeJson(raw));
      if (!parsed?.success) {
        if (parsed) this.complain(new Error(`unreadable ${this.key}: ${raw!.slice(0, 200)}`), 'poll');
        this.armed = undefined;
        return;
      }
      const f = parsed.data;
      if (this.done.has(f.id)) return;
      if ((await this.redis.exists(`${this.key}:${f.id}:state`)) > 0) {
        this.done.add(f.id); // taken by another process
        this.armed = undefined;
        return;
      }
      if (f.stage === 'apply' && !hasApplyHook(this.inner)) {
        this.done.add(f.id);
        this.report(f, 'outcome', 'error: stage apply needs a CassandraStore');
        return;
      }
      this.armed = f;
    } catch (err) {
      this.complain(err, 'poll');
    } finally {
      this.polling = false;
    }
  }

  /** Logs a failure at most every 10 s, so an absent Redis does not flood the log. */
  private complain(err: unknown, what: string): void {
    const now = Date.now();
    if (now - this.lastComplaint < 10_000) return;
    this.lastComplaint = now;
    this.log.warn({ err }, `fault injection: ${what} failed`);
  }
}

class FaultyWriter implements Writer {
  /** Every inner commit, the caller's and the duplicates, one at a time (the inner writer requires it). */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly faults: FaultyStore,
    private readonly inner: Writer,
  ) {}

  get scope(): string {
    return this.inner.scope;
  }

  get token(): number {
    return this.inner.token;
  }

  async commit(ops: WriteOp[]): Promise<void> {
    const f = this.faults.take(this.scope, 'commit');
    if (!f) return this.serial(ops);
    this.faults.report(f, 'state', 'holding');
    if (f.action === 'delay') {
      await this.faults.sleep(f.ms);
      this.faults.report(f, 'state', 'released');
      return this.faults.outcome(f, () => this.serial(ops));
    }
    const first = this.serial(ops);
    void first
      .catch(() => {})
      .then(() => this.faults.sleep(f.ms))
      .then(() => {
        this.faults.report(f, 'state', 'released');
        return this.faults.outcome(f, () => this.serial(ops));
      })
      .catch(() => {});
    return first;
  }

  private serial(ops: WriteOp[]): Promise<void> {
    const run = this.chain.then(() => this.inner.commit(ops));
    this.chain = run.catch(() => {});
    return run;
  }
}

function safeJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}
