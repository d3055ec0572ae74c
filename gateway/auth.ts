/**
 * HTTP Basic authentication: the user name is the API email, the password
 * the API key. The realm actor checks them; the gateway keeps no state.
 */
import { realmActorId, realmRef } from '../actors/realm/ref.ts';
import type { Authenticated } from '../actors/realm/actions/people/users.ts';
import type { Bus } from '../actors/runtime/bus.ts';
import type { ActorClient } from '../actors/runtime/client.ts';
import { subjects } from '../actors/subjects.ts';
import { ApiError, unauthorized } from '../lib/errors.ts';
import type { RateLimits } from './rate_limits.ts';

export interface Credentials {
  email: string;
  apiKey: string;
}

/** Parses an Authorization header; null when there is none. */
export function parseBasic(header: string): Credentials | null {
  if (!header) return null;
  const space = header.indexOf(' ');
  const scheme = (space === -1 ? header : header.slice(0, space)).toLowerCase();
  if (scheme !== 'basic') throw new ApiError('BAD_REQUEST', 'This endpoint requires HTTP basic authentication.', 400);
  const encoded = header.slice(space + 1).trim();
  const decoded = /^[A-Za-z0-9+/]+=*$/.test(encoded) ? Buffer.from(encoded, 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon <= 0) throw unauthorized('Invalid authorization header for basic auth');
  return { email: decoded.slice(0, colon), apiKey: decoded.slice(colon + 1) };
}

/** Every AuthCache of this process, so that a revocation reaches all of them. */
const caches = new Set<AuthCache>();

/**
 * Successful authentications, remembered for a few seconds so that a busy
 * client does not cost a realm-actor round trip per request. Only successes
 * are cached, and the cache is bounded; it is per gateway and nothing
 * depends on it being warm.
 *
 * Credentials that stop working (a deactivated user, a regenerated key) are
 * dropped at once: the route that changed them calls `announceRevocation`,
 * which every gateway process receives (`parley.auth.revoked`) before the
 * client gets its answer from the announcing gateway. An authentication
 * that was in flight when a revocation arrived is not cached.
 *
 * Credentials not in the cache are verified only while the client's address
 * has failed authentication fewer times than `rateLimits` allows, and each
 * failure counts (`RateLimits.credentialFailed`), so a key guesser is
 * answered 429 without reaching the realm actor.
 */
export class AuthCache {
  private entries = new Map<string, { user: Authenticated; expires: number }>();
  /** `realm:user` -> the cached headers of that user. */
  private byUser = new Map<string, Set<string>>();
  /** `realm:user` -> when its credentials were last revoked (ms). */
  private revokedAt = new Map<string, number>();
  /** When every cached authentication was last dropped (`forgetAll`). */
  private allRevokedAt = -1;

  constructor(
    private readonly ttlMs: number,
    private readonly rateLimits: RateLimits | null = null,
    private readonly maxEntries = 10_000,
  ) {
    caches.add(this);
  }

  /** The user of an Authorization header sent from address `ip`. */
  async authenticate(actors: ActorClient, realmId: number, header: string, ip: string): Promise<Authenticated> {
    const hit = this.entries.get(header);
    // Credentials of one organization are no key to another's host.
    if (hit && hit.expires > Date.now() && hit.user.realmId === realmId) return hit.user;
    const creds = parseBasic(header);
    if (!creds) throw unauthorized('Missing authorization header for basic auth');
    return this.verify(actors, realmId, header, creds, ip);
  }

  /** The user of an API key given alone (Zulip accepts `?api_key=` on file URLs, for clients that cannot set headers on images). */
  async authenticateApiKey(actors: ActorClient, realmId: number, apiKey: string, ip: string): Promise<Authenticated> {
    const cacheKey = `api_key ${apiKey}`;
    const hit = this.entries.get(cacheKey);
    if (hit && hit.expires > Date.now() && hit.user.realmId === realmId) return hit.user;
    return this.verify(actors, realmId, cacheKey, { email: null, apiKey }, ip);
  }

  /** Asks the realm (within the address's budget of failures) and caches a success under `header`. */
  private async verify(actors: ActorClient, realmId: number, header: string, creds: { email: string | null; apiKey: string }, ip: string): Promise<Authenticated> {
    await this.rateLimits?.beforeCredentialCheck(ip);
    const asked = Date.now();
    let user: Authenticated;
    try {
      user = await actors.call(realmRef, realmActorId(realmId), { type: 'authenticate', caller: { realmId, userId: null }, email: creds.email, apiKey: creds.apiKey });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) await this.rateLimits?.credentialFailed(ip);
      throw err;
    }
    const key = `${user.realmId}:${user.userId}`;
    if (this.ttlMs > 0 && (this.revokedAt.get(key) ?? -1) < asked && this.allRevokedAt < asked) {
      this.forget(header);
      if (this.entries.size >= this.maxEntries) this.forget(this.entries.keys().next().value!);
      this.entries.set(header, { user, expires: Date.now() + this.ttlMs });
      let headers = this.byUser.get(key);
      if (!headers) this.byUser.set(key, (headers = new Set()));
      headers.add(header);
    }
    return user;
  }

  /** Forgets every cached authentication of a user. */
  revoke(realmId: number, userId: number): void {
    const key = `${realmId}:${userId}`;
    this.revokedAt.set(key, Date.now());
    if (this.revokedAt.size > this.maxEntries) this.revokedAt.delete(this.revokedAt.keys().next().value!);
    for (const header of this.byUser.get(key) ?? []) this.entries.delete(header);
    this.byUser.delete(key);
  }

  /** Forgets every cached authentication (a revocation may have been missed). */
  forgetAll(): void {
    this.allRevokedAt = Date.now();
    this.entries.clear();
    this.byUser.clear();
  }

  private forget(header: string): void {
    const hit = this.entries.get(header);
    if (!hit) return;
    this.entries.delete(header);
    const key = `${hit.user.realmId}:${hit.user.userId}`;
    this.byUser.get(key)?.delete(header);
  }
}

/** What a revocation announces: users whose cached credentials must go. */
interface Revocation {
  realmId: number;
  userIds: number[];
}

let revocationBus: Bus | null = null;

/** Drops the users' cached authentications in every AuthCache of this process. */
function revokeLocal(r: Revocation): void {
  for (const cache of caches) for (const id of r.userIds) cache.revoke(r.realmId, id);
}

/**
 * Wiring (lib/app.ts): this process takes every revocation announced on the
 * bus, and forgets every cached authentication when the bus may have lost
 * one (it was away from NATS for a while).
 */
export async function listenForRevocations(bus: Bus): Promise<void> {
  revocationBus = bus;
  bus.onEventsLost(() => {
    for (const cache of caches) cache.forgetAll();
  });
  await bus.subscribe(
    subjects.authRevoked,
    (body) => {
      const r = body as Revocation;
      if (typeof r?.realmId === 'number' && Array.isArray(r.userIds)) revokeLocal(r);
    },
    { broadcast: true },
  );
  await bus.flush();
}

/**
 * Called by a route once credentials stopped working: this process forgets
 * them now, and every other gateway once the bus delivers the announcement
 * (flushed before the route answers).
 */
export async function announceRevocation(realmId: number, userIds: number[]): Promise<void> {
  if (userIds.length === 0) return;
  const r: Revocation = { realmId, userIds: [...userIds] };
  revokeLocal(r);
  if (revocationBus) {
    revocationBus.publish(subjects.authRevoked, r);
    await revocationBus.flush();
  }
}
