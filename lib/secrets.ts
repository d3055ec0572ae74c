/**
 * API keys and passwords. API keys are random and high-entropy, so a fast
 * SHA-256 is enough to find them without keeping them: only the hash is
 * stored and held in memory, and a presented key is compared in constant
 * time. Passwords get a slow, salted hash (argon2id from @node-rs/argon2);
 * hashes written by the first versions of Parley (Node's scrypt) still verify.
 * Hashing and verifying run in the gateway, off the actor's mailbox.
 */
import { hash as argon2Hash, verify as argon2Verify } from '@node-rs/argon2';
import { createHash, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A 32-character API key from a CSPRNG (about 190 bits). */
export function newApiKey(): string {
  let key = '';
  // Rejection sampling keeps every character equally likely.
  while (key.length < 32) for (const b of randomBytes(48)) if (b < 248 && key.length < 32) key += KEY_ALPHABET[b % KEY_ALPHABET.length];
  return key;
}

export const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Whether two hex digests are equal, in time independent of where they differ. */
export function sameDigest(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A random confirmation key (email change links). */
export const newConfirmationKey = (): string => randomBytes(18).toString('base64url');

/** Hashes a password with argon2id (OWASP's parameters: 19 MiB, 2 passes). */
/** Password length rules of password changes and sign-up (register's `password_min_length` / `password_max_length`); no guess estimate is made. */
export const MIN_PASSWORD_LENGTH = 6;
export const MAX_PASSWORD_LENGTH = 1024;

export function hashPassword(password: string): Promise<string> {
  return argon2Hash(password, { memoryCost: 19456, timeCost: 2, parallelism: 1 });
}

/** Checks a password against a stored hash (argon2id, or the legacy `scrypt$salt$hash`); false for none. */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  if (!stored) return false;
  if (stored.startsWith('$argon2')) {
    try {
      return await argon2Verify(stored, password);
    } catch {
      return false;
    }
  }
  const [scheme, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const got = await new Promise<Buffer>((res, rej) => scrypt(password, Buffer.from(salt, 'base64'), expected.length, (err, key) => (err ? rej(err) : res(key))));
  return got.length === expected.length && timingSafeEqual(got, expected);
}
