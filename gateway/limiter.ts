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
 * is exact.
 */

/** At most `max` requests per `windowSecs` seconds. */
export interface Rule {
  max: number;
  windowSecs: number;
}

/** The outcome of one check, with what the `X-RateLimit-*` headers report. */
export interface Verdict {
  allowed: boolean;
  /** The rule's `max`. */
  limit: number;
  /** Requests the key may still make at once. */
  remaining: number;
  /** Seconds until the key's budget is whole again. */
  resetSecs: number;
  /** Seconds until one more request is allowed (0 when allowed). */
  retryAfterSecs: number;
}

export interface Limiter {
  /**
   * Checks whether one request of `key` fits `rule`. With `consume`, an
   * allowed request is counted; without, nothing changes (a look before an
   * expensive step, such as verifying credentials).
   */
  check(key: string, rule: Rule, consume: boolean): Promise<Verdict>;
  close(): Promise<void>;
}

/**
 * GCRA on a key's theoretical arrival time `tat` (ms; absent or past means a
 * whole budget). The Redis script computes the same, in Lua.
 * Returns the verdict and the new `tat` to keep (null: keep the old one).
 */
export function gcra(tat: number | undefined, now: number, rule: Rule, consume: boolean): { verdict: Verdict; tat: number | null } {
  const windowMs = rule.windowSecs * 1000;
  const interval = windowMs / rule.max;
  const base = Math.max(tat ?? now, now);
  const next = base + interval;
  const allowed = next - now <= windowMs;
  const used = allowed && consume ? next : base;
  const verdict: Verdict = {
    allowed,
    limit: rule.max,
    remaining: Math.max(0, Math.floor((windowMs - (used - now)) / interval + 1e-9)),
    resetSecs: (used - now) / 1000,
    retryAfterSecs: allowed ? 0 : (next - now - windowMs) / 1000,
  };
  return { verdict, tat: allowed && consume ? next : null };
}

/** Embedded mode: every key's budget in this process's memory. */
export class LocalLimiter implements Limiter {
  /** key -> theoretical arrival time (ms, monotonic). Entries in the past are whole budgets and are swept. */
  private tats = new Map<string, number>();
  private sweeper: NodeJS.Timeout;

  constructor(
    private readonly now: () => number = () => performance.now(),
    sweepMs = 60_000,
  ) {
    this.sweeper = setInterval(() => this.sweep(), sweepMs);
    this.sweeper.unref();
  }

  async check(key: string, rule: Rule, consume: boolean): Promise<Verdict> {
    const { verdict, tat } = gcra(this.tats.get(key), this.now(), rule, consume);
    if (tat !== null) this.tats.set(key, tat);
    return verdict;
  }

  /** Forgets keys whose budget is whole again, so memory follows the keys active in the last window. */
  sweep(): void {
    const now = this.now();
    for (const [key, tat] of this.tats) if (tat <= now) this.tats.delete(key);
  }

  /** Keys with a budget not yet whole (for tests). */
  get size(): number {
    return this.tats.size;
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.tats.clear();
  }
}
