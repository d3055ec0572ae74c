/**
 * HTTP Basic authentication: the user name is the API email, the password
 * the API key. The realm actor checks them; the gateway keeps no state.
 */
import { realmActorId, realmRef } from '../actors/realm/ref.ts';
import type { Authenticated } from '../actors/realm/users.ts';
import type { ActorClient } from '../actors/runtime/client.ts';
import { ApiError, unauthorized } from '../lib/errors.ts';

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

/**
 * Successful authentications, remembered for a few seconds so that a busy
 * client does not cost a realm-actor round trip per request. A deactivated
 * user or a changed key therefore takes up to `ttlMs` to be refused. Only
 * successes are cached, and the cache is bounded; it is per gateway and
 * nothing depends on it being warm.
 */
export class AuthCache {
  private entries = new Map<string, { user: Authenticated; expires: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  async authenticate(actors: ActorClient, realmId: number, header: string): Promise<Authenticated> {
    const hit = this.entries.get(header);
    if (hit && hit.expires > Date.now()) return hit.user;
    const creds = parseBasic(header);
    if (!creds) throw unauthorized('Missing authorization header for basic auth');
    const user = await actors.call(realmRef, realmActorId(realmId), { type: 'authenticate', caller: { realmId, userId: null }, email: creds.email, apiKey: creds.apiKey });
    if (this.ttlMs > 0) {
      this.entries.delete(header);
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(header, { user, expires: Date.now() + this.ttlMs });
    }
    return user;
  }
}
