/**
 * Video calls (FL 493): a provider behind a small interface, configured on
 * the server. The one implementation speaks OAuth 2.0 (authorization code)
 * and creates a meeting with the user's access token, as Zulip's Zoom
 * integration does:
 *
 *   PARLEY_VIDEO_PROVIDER='{"authorize_url": "...", "token_url": "...",
 *     "create_meeting_url": "...", "client_id": "...", "client_secret": "..."}'
 *
 * The OAuth `state` is signed (HMAC with the client secret) and names the
 * realm, the user and an expiry, so the gateway needs no session to know
 * whom a completed authorization belongs to.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

export interface VideoProvider {
  /** Where to send the user to authorize this server. */
  authorizeUrl(state: string, redirectUri: string): string;
  /** Exchanges an authorization code for the user's access token. */
  exchangeCode(code: string, redirectUri: string): Promise<string>;
  /** Creates a meeting; `null` when the provider refuses the token (expired or revoked). */
  createMeeting(accessToken: string): Promise<{ url: string } | null>;
}

const Config = z.object({
  authorize_url: z.string().url(),
  token_url: z.string().url(),
  create_meeting_url: z.string().url(),
  client_id: z.string().min(1),
  client_secret: z.string().min(1),
});
type Config = z.infer<typeof Config>;

/** The provider's answer could not be used. */
export class ProviderError extends Error {}

class OAuthProvider implements VideoProvider {
  constructor(private readonly c: Config) {}

  authorizeUrl(state: string, redirectUri: string): string {
    const u = new URL(this.c.authorize_url);
    u.search = new URLSearchParams({ response_type: 'code', client_id: this.c.client_id, redirect_uri: redirectUri, state }).toString();
    return u.toString();
  }

  async exchangeCode(code: string, redirectUri: string): Promise<string> {
    const res = await fetch(this.c.token_url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${this.c.client_id}:${this.c.client_secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri }).toString(),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await res.json().catch(() => null)) as { access_token?: unknown } | null;
    if (!res.ok || typeof body?.access_token !== 'string') throw new ProviderError(`token exchange failed (${res.status})`);
    return body.access_token;
  }

  async createMeeting(accessToken: string): Promise<{ url: string } | null> {
    const res = await fetch(this.c.create_meeting_url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ settings: { join_before_host: true } }),
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status === 401) return null;
    const body = (await res.json().catch(() => null)) as { join_url?: unknown } | null;
    if (!res.ok || typeof body?.join_url !== 'string') throw new ProviderError(`meeting creation failed (${res.status})`);
    return { url: body.join_url };
  }
}

let configured: { provider: VideoProvider; secret: string } | null | undefined;

/** The configured provider, or null when video calls are not configured on this server. */
export function videoProvider(env: NodeJS.ProcessEnv = process.env): { provider: VideoProvider; secret: string } | null {
  if (configured === undefined) {
    const raw = env.PARLEY_VIDEO_PROVIDER;
    if (!raw) configured = null;
    else {
      const r = Config.safeParse(JSON.parse(raw));
      if (!r.success) throw new Error(`invalid PARLEY_VIDEO_PROVIDER: ${r.error.issues[0]?.path.join('.')}: ${r.error.issues[0]?.message}`);
      configured = { provider: new OAuthProvider(r.data), secret: r.data.client_secret };
    }
  }
  return configured;
}

const sign = (secret: string, data: string) => createHmac('sha256', secret).update(data).digest('base64url');

/** A signed OAuth state naming the realm and user, valid for `ttlSecs`. */
export function signState(secret: string, realmId: number, userId: number, ttlSecs = 900): string {
  const data = Buffer.from(JSON.stringify({ r: realmId, u: userId, e: Math.floor(Date.now() / 1000) + ttlSecs })).toString('base64url');
  return `${data}.${sign(secret, data)}`;
}

/** The realm and user of a signed state, or null when it is forged or expired. */
export function verifyState(secret: string, state: string): { realmId: number; userId: number } | null {
  const [data, mac] = state.split('.');
  if (!data || !mac) return null;
  const want = Buffer.from(sign(secret, data));
  const got = Buffer.from(mac);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return null;
  try {
    const v = JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as { r: number; u: number; e: number };
    return v.e > Date.now() / 1000 ? { realmId: v.r, userId: v.u } : null;
  } catch {
    return null;
  }
}
