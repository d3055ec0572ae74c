/**
 * Rate limits in Redis for the cluster mode: every gateway counts against the
 * same budgets. One key per limited key, `<prefix>:rl:<key>`, holding its
 * GCRA theoretical arrival time (µs, by the Redis clock, so the gateways'
 * clocks do not matter), with a TTL until its budget is whole again. One Lua
 * script per check, so concurrent checks from several gateways never lose a
 * count. The arithmetic is `gcra` in `limiter.ts`.
 *
 * When Redis cannot answer, requests are let through (logged): as in Zulip,
 * whose limiter fails open behind a circuit breaker, an outage of the
 * limiter's store must not become an outage of the API.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { log as rootLog } from '../lib/log.ts';
import type { Limiter, Rule, Verdict } from './limiter.ts';

/** KEYS[1]: the key. ARGV: window (µs), max, consume (1|0). Returns [allowed, remaining, reset µs, retry µs]. */
const CHECK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window = tonumber(ARGV[1])
local interval = window / tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local nxt = tat + interval
local allowed = nxt - now <= window
local used = tat
if allowed and ARGV[3] == '1' then
  used = nxt
  redis.call('SET', KEYS[1], string.format('%d', math.ceil(nxt)), 'PX', math.ceil((nxt - now) / 1000))
end
local retry = 0
if not allowed then retry = nxt - now - window end
return { allowed and 1 or 0, math.floor((window - (used - now)) / interval + 1e-9), math.ceil(used - now), math.ceil(retry) }`;

interface Scripts {
  parleyRateCheck(key: string, windowUs: number, max: number, consume: string): Promise<[number, number, number, number]>;
}

export interface RedisLimiterOptions {
  /** Key prefix, so several clusters can share one Redis. */
  prefix?: string;
  /** How long a check may wait for Redis before the request is let through. */
  timeoutMs?: number;
  log?: Logger;
}

export class RedisLimiter implements Limiter {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly log: Logger;
  private lastErrorLog = 0;
  /** The first connection; checks wait for it (up to the timeout) rather than fail before it. */
  private connecting: Promise<void> | null;

  constructor(url: string, opts: RedisLimiterOptions = {}) {
    this.prefix = opts.prefix ?? 'parley';
    this.log = opts.log ?? rootLog.child({ component: 'rate-limits' });
    // No offline queue: while Redis is away a check fails at once (and the request goes through).
    this.redis = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.timeoutMs ?? 500,
      retryStrategy: (n) => Math.min(50 * n, 1000),
    });
    this.redis.on('error', (err: Error) => this.warn(err));
    this.redis.defineCommand('parleyRateCheck', { numberOfKeys: 1, lua: CHECK });
    const timeout = new Promise<void>((r) => setTimeout(r, opts.timeoutMs ?? 500).unref());
    this.connecting = Promise.race([this.redis.connect().catch((err: Error) => this.warn(err)), timeout]).then(() => {
      this.connecting = null;
    });
  }

  async check(key: string, rule: Rule, consume: boolean): Promise<Verdict> {
    if (this.connecting) await this.connecting;
    try {
      const [allowed, remaining, resetUs, retryUs] = await (this.redis as unknown as Scripts).parleyRateCheck(
        `${this.prefix}:rl:${key}`,
        Math.round(rule.windowSecs * 1e6),
        rule.max,
        consume ? '1' : '0',
      );
      return { allowed: allowed === 1, limit: rule.max, remaining, resetSecs: resetUs / 1e6, retryAfterSecs: retryUs / 1e6 };
    } catch (err) {
      this.warn(err as Error);
      return { allowed: true, limit: rule.max, remaining: rule.max, resetSecs: 0, retryAfterSecs: 0 };
    }
  }

  private warn(err: Error): void {
    const now = Date.now();
    if (now - this.lastErrorLog < 5000) return;
    this.lastErrorLog = now;
    this.log.warn({ err: err.message }, 'rate limiter cannot reach redis; requests are not limited until it answers');
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
