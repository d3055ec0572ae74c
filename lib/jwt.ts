/**
 * Sign-in by token (POST /jwt/fetch_api_key, FL 160): JSON web tokens
 * verified with `jose` against the keys configured for the organization.
 *
 * Configuration (like Zulip's JWT_AUTH_KEYS), read from the environment:
 *   PARLEY_JWT_AUTH_KEYS='{"1": {"key": "<secret or PEM public key>", "algorithms": ["HS256"]}}'
 * keyed by realm ID; a realm may list several keys (an array), tried in turn,
 * so a secret (HS256) and a public key (RS256) can be used side by side.
 */
import { errors, importSPKI, jwtVerify, type JWTPayload } from 'jose';
import { z } from 'zod';
import { badRequest } from './errors.ts';

const KeySpec = z.object({ key: z.string().min(1), algorithms: z.array(z.enum(['HS256', 'HS384', 'HS512', 'RS256', 'RS384', 'RS512', 'ES256', 'EdDSA'])).min(1) }).strict();
const Config = z.record(z.string(), z.union([KeySpec, z.array(KeySpec).min(1)]));
type KeySpec = z.infer<typeof KeySpec>;

let parsed: Map<string, KeySpec[]> | null = null;

/** The configured keys of a realm (none: token sign-in is off there). Invalid configuration fails loudly. */
export function jwtKeys(realmId: number, env: NodeJS.ProcessEnv = process.env): KeySpec[] {
  if (!parsed) {
    const raw = env.PARLEY_JWT_AUTH_KEYS;
    parsed = new Map();
    if (raw) {
      const r = Config.safeParse(JSON.parse(raw));
      if (!r.success) throw new Error(`invalid PARLEY_JWT_AUTH_KEYS: ${r.error.issues[0]?.message}`);
      for (const [realm, spec] of Object.entries(r.data)) parsed.set(realm, Array.isArray(spec) ? spec : [spec]);
    }
  }
  return parsed.get(String(realmId)) ?? [];
}

async function keyFor(spec: KeySpec): Promise<Uint8Array | CryptoKey> {
  if (spec.algorithms.every((a) => a.startsWith('HS'))) return new TextEncoder().encode(spec.key);
  return importSPKI(spec.key, spec.algorithms[0]!);
}

/**
 * The verified claims of `token`, or the API error Zulip gives: token sign-in
 * not configured, no token, a bad or expired token, no `email` claim.
 */
export async function verifyJwt(realmId: number, token: string): Promise<JWTPayload & { email: string }> {
  const keys = jwtKeys(realmId);
  if (!keys.length) throw badRequest('JWT authentication is not enabled for this organization');
  if (!token) throw badRequest('No JSON web token passed in request');
  let expired = false;
  for (const spec of keys) {
    try {
      const { payload } = await jwtVerify(token, await keyFor(spec), { algorithms: spec.algorithms });
      if (typeof payload.email !== 'string') throw badRequest('No email specified in JSON web token claims');
      return payload as JWTPayload & { email: string };
    } catch (err) {
      if (err instanceof errors.JWTExpired) expired = true;
      else if (!(err instanceof errors.JOSEError) && !(err instanceof TypeError)) throw err;
    }
  }
  throw badRequest(expired ? 'Bad JSON web token: the token has expired' : 'Bad JSON web token');
}
