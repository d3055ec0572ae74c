/**
 * A budget of `max` per `windowSecs` kept as one number per key, GCRA (a token
 * bucket stored as its "theoretical arrival time"): a key may use `max` at
 * once, then one more every `windowSecs / max` seconds. Used by the gateway's
 * rate limits (`gateway/limiter.ts`, and in Lua by `gateway/redis-limiter.ts`)
 * and by the realm actor's cap on channel creation.
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

/**
 * GCRA on a key's theoretical arrival time `tat` (ms; absent or past means a
 * whole budget), for a use of `cost` (a request: 1). The Redis script
 * computes the same for a cost of 1, in Lua.
 * Returns the verdict and the new `tat` to keep (null: keep the old one).
 */
export function gcra(tat: number | undefined, now: number, rule: Rule, consume: boolean, cost = 1): { verdict: Verdict; tat: number | null } {
  const windowMs = rule.windowSecs * 1000;
  const interval = windowMs / rule.max;
  const base = Math.max(tat ?? now, now);
  const next = base + cost * interval;
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

/**
 * Budgets of many keys in this process's memory. `look` is read-only (an
 * actor's check) and `keep` records the use (its apply); keys whose budget is
 * whole again are dropped by `sweep`, so memory follows the keys active in
 * the last window.
 */
export class Budgets {
  /** key -> theoretical arrival time (ms, by `now`). */
  private tats = new Map<string | number, number>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Whether `cost` fits the key's budget now; `tat` is what `keep` records if it is used. */
  look(key: string | number, rule: Rule, cost = 1): { verdict: Verdict; tat: number | null } {
    return gcra(this.tats.get(key), this.now(), rule, true, cost);
  }

  /** Looks without using (a cost of 1 that is not kept). */
  peek(key: string | number, rule: Rule): Verdict {
    return gcra(this.tats.get(key), this.now(), rule, false).verdict;
  }

  keep(key: string | number, tat: number): void {
    this.tats.set(key, tat);
  }

  sweep(): void {
    const now = this.now();
    for (const [key, tat] of this.tats) if (tat <= now) this.tats.delete(key);
  }

  get size(): number {
    return this.tats.size;
  }

  clear(): void {
    this.tats.clear();
  }
}

/** Parses a rule written `max/seconds` (`200/60`: 200 requests per minute). */
export function parseRule(text: string): Rule {
  const m = /^\s*(\d+)\s*\/\s*(\d+(?:\.\d+)?)\s*$/.exec(text);
  const max = Number(m?.[1]);
  const windowSecs = Number(m?.[2]);
  if (!m || !(max >= 1) || !(windowSecs > 0)) throw new Error(`invalid budget '${text}': write it max/seconds, such as 200/60`);
  return { max, windowSecs };
}

/** Parses `email=max/seconds,...` into per-user rules. */
export function parseOverrides(text: string): Map<string, Rule> {
  const out = new Map<string, Rule>();
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = part.lastIndexOf('=');
    if (eq <= 0) throw new Error(`invalid budget override '${part}': write it email=max/seconds`);
    out.set(part.slice(0, eq).trim().toLowerCase(), parseRule(part.slice(eq + 1)));
  }
  return out;
}
