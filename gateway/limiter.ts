/**
 * Rate limiting: how many requests a key (a user, an IP address) may make.
 * In-process for the embedded mode (`LocalLimiter`, below) and in Redis for
 * the cluster mode (`RedisLimiter`, `gateway/redis-limiter.ts`), so every
 * gateway of a cluster counts against the same budget. The same suite runs
 * against both (`test/limiter.test.ts`); the policy (which key, which rule,
 * the 429 and its headers) is `gateway/rate_limits.ts`.
 *
 * Both implement one algorithm, GCRA (a token bucket kept as one number, the
 * "theoretical arrival time"): a rule `max` per `windowSecs` lets a key make
 * `max` requests at once, then one more every `windowSecs / max` seconds.
 * One number per key (no log of timestamps, as Zulip's Redis backend keeps),
 * so a raised limit for a load test costs no memory, and the wait it reports
 * is exact. The arithmetic is `gcra` (`lib/gcra.ts`).
 */
import { Budgets, type Rule, type Verdict } from '../lib/gcra.ts';

export type { Rule, Verdict };

export interface Limiter {
  /**
   * Checks whether one request of `key` fits `rule`. With `consume`, an
   * allowed request is counted; without, nothing changes (a look before an
   * expensive step, such as verifying credentials).
   */
  check(key: string, rule: Rule, consume: boolean): Promise<Verdict>;
  close(): Promise<void>;
}

/** Embedded mode: every key's budget in this process's memory. */
export class LocalLimiter implements Limiter {
  private budgets: Budgets;
  private sweeper: NodeJS.Timeout;

  constructor(now: () => number = () => performance.now(), sweepMs = 60_000) {
    this.budgets = new Budgets(now);
    this.sweeper = setInterval(() => this.budgets.sweep(), sweepMs);
    this.sweeper.unref();
  }

  async check(key: string, rule: Rule, consume: boolean): Promise<Verdict> {
    if (!consume) return this.budgets.peek(key, rule);
    const { verdict, tat } = this.budgets.look(key, rule);
    if (tat !== null) this.budgets.keep(key, tat);
    return verdict;
  }

  /** Forgets keys whose budget is whole again. */
  sweep(): void {
    this.budgets.sweep();
  }

  /** Keys with a budget not yet whole (for tests). */
  get size(): number {
    return this.budgets.size;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.budgets.clear();
  }
}
