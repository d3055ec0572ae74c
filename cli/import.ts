/**
 * `parley users import`: users from a CSV file (with a header row) or a
 * JSON-lines file, created in batches by the realm's `createUsers` action,
 * one durable commit per batch, one batch at a time (so the organization's
 * other requests wait at most one batch).
 *
 * Columns / keys: `email` and `full_name` (required), `role` (owner, admin,
 * moderator, member or guest; member when absent), and either `password`
 * (hashed here with argon2, which is slow by design: tens of ms per user) or
 * `password_hash` (an argon2 hash carried over from another system).
 */
import { appendFileSync, chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { parse as parseCsv } from 'csv-parse/sync';
import { MAX_USERS_PER_BATCH, Role } from '../actors/model.ts';
import { realmRef } from '../actors/realm/ref.ts';
import { hashPassword } from '../lib/secrets.ts';
import type { Deployment } from './connect.ts';
import type { InOrganization } from './organization.ts';
import { UsageError } from './output.ts';

export const ROLES: Record<string, number> = { owner: Role.OWNER, admin: Role.ADMIN, moderator: Role.MODERATOR, member: Role.MEMBER, guest: Role.GUEST };

/** One user of the file, as read (the password still in plain text, if given so). */
export interface ImportRow {
  email: string;
  fullName: string;
  role: number;
  password: string | null;
  passwordHash: string | null;
}

type Role = (typeof Role)[keyof typeof Role];

/** Reads and checks every row before anything is created: a mistake names its line and nothing is imported. */
export function readImportFile(path: string, format: 'csv' | 'jsonl' | null): ImportRow[] {
  const text = readFileSync(path, 'utf8');
  const kind = format ?? (/\.(jsonl|ndjson)$/i.test(path) ? 'jsonl' : /\.csv$/i.test(path) ? 'csv' : null);
  if (!kind) throw new UsageError(`${path}: say --format csv or --format jsonl (the name ends in neither .csv nor .jsonl)`);
  let records: Array<{ line: number; value: Record<string, unknown> }>;
  if (kind === 'csv') {
    let rows: Array<Record<string, string>>;
    try {
      rows = parseCsv(text, { columns: (header: string[]) => header.map((h) => h.trim().toLowerCase()), skip_empty_lines: true, trim: true });
    } catch (err) {
      throw new UsageError(`${path}: ${(err as Error).message}`);
    }
    records = rows.map((value, i) => ({ line: i + 2, value }));
  } else {
    records = [];
    for (const [i, line] of text.split('\n').entries()) {
      if (!line.trim()) continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        throw new UsageError(`${path}:${i + 1}: not JSON`);
      }
      if (!value || typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`${path}:${i + 1}: not a JSON object`);
      records.push({ line: i + 1, value: value as Record<string, unknown> });
    }
  }
  if (records.length === 0) throw new UsageError(`${path}: no users`);
  return records.map(({ line, value }) => {
    const field = (k: string): string | null => {
      const v = value[k];
      if (v === undefined || v === null || v === '') return null;
      if (typeof v !== 'string') throw new UsageError(`${path}:${line}: ${k} must be a string`);
      return v;
    };
    const email = field('email');
    const fullName = field('full_name');
    if (!email) throw new UsageError(`${path}:${line}: no email`);
    if (!fullName) throw new UsageError(`${path}:${line}: no full_name`);
    const roleName = (field('role') ?? 'member').toLowerCase();
    const role = ROLES[roleName];
    if (role === undefined) throw new UsageError(`${path}:${line}: unknown role '${roleName}' (one of: ${Object.keys(ROLES).join(', ')})`);
    const password = field('password');
    const passwordHash = field('password_hash');
    if (password && passwordHash) throw new UsageError(`${path}:${line}: give password or password_hash, not both`);
    return { email, fullName, role, password, passwordHash };
  });
}

export interface ImportResult {
  created: number;
  skipped: string[];
  seconds: number;
  users_per_second: number;
  batches: number;
  /** The longest one batch held the organization's actor (its round trip), in ms. */
  longest_batch_ms: number;
}

/**
 * Creates `rows` in batches of `batchSize`; with `keysOut`, appends each
 * created user's `email,user_id,api_key` there (a file of mode 0600).
 * `progress` hears after each batch.
 */
export async function importUsers(dep: Deployment, o: InOrganization, rows: ImportRow[], opts: { batchSize: number; skipExisting: boolean; keysOut: string | null; progress?: (done: number, total: number) => void }): Promise<ImportResult> {
  if (!(opts.batchSize >= 1 && opts.batchSize <= MAX_USERS_PER_BATCH)) throw new UsageError(`--batch must be 1 to ${MAX_USERS_PER_BATCH}`);
  if (opts.keysOut) {
    writeFileSync(opts.keysOut, 'email,user_id,api_key\n', { mode: 0o600 });
    chmodSync(opts.keysOut, 0o600);
  }
  const t0 = performance.now();
  let created = 0;
  let batches = 0;
  let longest = 0;
  const skipped: string[] = [];
  for (let i = 0; i < rows.length; i += opts.batchSize) {
    const slice = rows.slice(i, i + opts.batchSize);
    // Plain passwords are hashed here, never in the organization's actor (argon2 is slow on purpose).
    const users = await Promise.all(
      slice.map(async (r) => ({ email: r.email, fullName: r.fullName, role: r.role as Role, passwordHash: r.password ? await hashPassword(r.password) : r.passwordHash })),
    );
    const b0 = performance.now();
    const reply = await dep.actors.call(realmRef, o.realm, { type: 'createUsers', caller: o.server, users, skipExisting: opts.skipExisting });
    longest = Math.max(longest, performance.now() - b0);
    batches++;
    created += reply.users.length;
    skipped.push(...reply.skipped);
    if (opts.keysOut && reply.users.length) appendFileSync(opts.keysOut, reply.users.map((u) => `${u.email},${u.user_id},${u.api_key}\n`).join(''));
    opts.progress?.(i + slice.length, rows.length);
  }
  const seconds = (performance.now() - t0) / 1000;
  return { created, skipped, seconds, users_per_second: created / seconds, batches, longest_batch_ms: longest };
}
