/**
 * HTTP Basic authentication: the user name is the API email, the password
 * the API key. The realm actor checks them; the gateway keeps no state.
 */
import type { Caller } from '../actors/protocol.ts';
import { ApiError, unauthorized } from '../lib/errors.ts';
import type { ActorClient } from './actors.ts';

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

export async function authenticate(actors: ActorClient, realmId: number, header: string): Promise<Caller> {
  const creds = parseBasic(header);
  if (!creds) throw unauthorized('Missing authorization header for basic auth');
  return actors.realm<Caller>(realmId, { type: 'authenticate', email: creds.email, apiKey: creds.apiKey });
}
