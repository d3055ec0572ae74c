/**
 * The gateway's rate-limit policy, as Zulip's (`zerver/lib/rate_limiter.py`,
 * the API's "Rate limits" page): every request under /api/v1 counts against
 * its user's budget when it is authenticated and against its IP address's
 * otherwise; failed authentications count against a budget of their own per
 * IP, looked at before credentials are verified, so guessing keys is cut
 * off after a few tries without stopping that address's signed-in users.
 *
 * Over a budget the answer is 429 with `code` `RATE_LIMIT_HIT`, `retry-after`
 * (seconds) in the body and a `Retry-After` header; every limited answer
 * carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
 * `X-RateLimit-Reset` (Unix time at which the budget is whole again).
 */
import type { Authenticated } from '../actors/realm/actions/people/users.ts';
import { type ApiError, rateLimitHit } from '../lib/errors.ts';
import type { Rule, Verdict } from '../lib/gcra.ts';
import type { Limiter } from './limiter.ts';
import { rateLimitHits } from '../lib/metrics.ts';

/** `parley_rate_limit_hits_total` by the budget that ran out. */
const HITS = { user: rateLimitHits.labels('user'), ip: rateLimitHits.labels('ip'), auth_failures: rateLimitHits.labels('auth_failures') };

export interface RateLimitRules {
  /** Requests per authenticated user (Zulip's `api_by_user`). */
  user: Rule;
  /** Requests per IP address without credentials (Zulip's `api_by_ip`). */
  ip: Rule;
  /** Failed authentications per IP address. */
  authFailures: Rule;
  /** Rules of their own for some users, by lowercased email (Zulip's per-user `rate_limits`). */
  overrides: ReadonlyMap<string, Rule>;
}

/** Headers a limited answer carries. */
export type LimitHeaders = Record<string, string>;

export class RateLimits {
  constructor(
    private readonly limiter: Limiter,
    readonly rules: RateLimitRules,
  ) {}

  /** Counts a request of an authenticated user; throws the 429 when over its budget. */
  user(user: Authenticated): Promise<LimitHeaders> {
    const rule = this.rules.overrides.get(user.email.toLowerCase()) ?? this.rules.user;
    return this.take(`user:${user.realmId}:${user.userId}`, rule, HITS.user);
  }

  /** Counts a request that carries no credentials, by its address; throws the 429 when over. */
  ip(ip: string): Promise<LimitHeaders> {
    return this.take(`ip:${ip}`, this.rules.ip, HITS.ip);
  }

  /** Before credentials are verified: throws the 429 while the address has used up its failures. */
  async beforeCredentialCheck(ip: string): Promise<void> {
    const v = await this.limiter.check(`authfail:${ip}`, this.rules.authFailures, false);
    if (!v.allowed) {
      HITS.auth_failures.inc();
      throw rateLimited(v);
    }
  }

  /** Counts one failed authentication of the address. */
  async credentialFailed(ip: string): Promise<void> {
    await this.limiter.check(`authfail:${ip}`, this.rules.authFailures, true);
  }

  private async take(key: string, rule: Rule, hits: { inc(): void }): Promise<LimitHeaders> {
    const v = await this.limiter.check(key, rule, true);
    if (!v.allowed) {
      hits.inc();
      throw rateLimited(v);
    }
    return headersOf(v);
  }
}

function headersOf(v: Verdict): LimitHeaders {
  return {
    'X-RateLimit-Limit': String(v.limit),
    'X-RateLimit-Remaining': String(v.remaining),
    'X-RateLimit-Reset': String(Math.ceil(Date.now() / 1000 + v.resetSecs)),
  };
}

/** The 429 of a request over its budget. */
function rateLimited(v: Verdict): ApiError {
  return rateLimitHit('API usage exceeded rate limit', Math.round(v.retryAfterSecs * 1000) / 1000, headersOf(v));
}
