/**
 * Embedded Store on lmdb: one environment under the data directory, one
 * sub-database per table, keys `[pk, ck]` so a partition is a contiguous,
 * ordered key range. A commit is one block of lmdb writes conditional on the
 * scope's fence (its version is the token of the last claim, `ifVersion`),
 * so a write of an older owner cannot take effect after a newer claim; the
 * returned promise resolves once the commit is on disk. The writes are
 * encoded when the commit is made and applied by lmdb's writer thread in a
 * batch with the other commits of the moment: no JavaScript runs inside the
 * write transaction, so it never waits for the main thread.
 * lmdb's overlappingSync (its default here) may resolve a commit while its
 * sync is still running, so a commit also waits for `flushed`: an answered
 * `success` survives a power loss (test/durability.test.ts traces the syncs).
 */
import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { secondsSince, type StoreStats, storeStats, timedCommit } from '../lib/metrics.ts';
import { FencedError, type Key, type RangeOptions, type Row, type Scannable, type ScannedRow, type Store, type TableSchema, type Writer, type WriteOp } from './store.ts';
import { TABLE_SCHEMAS } from './tables.ts';

/**
 * How a table's sub-database is opened. Values are msgpack records whose
 * shapes (their key lists) lmdb keeps once per table under this key, shared
 * by every row, instead of written into each value: a message row is 174
 * bytes instead of 420, packed 1.7× and unpacked 6× faster
 * (`bench/RESULTS.md`). Rows written without them (shapes inline) read the same.
 */
export const TABLE_DB_OPTIONS = { sharedStructuresKey: Symbol.for('structures') };

export class EmbeddedStore implements Store, Scannable {
  private root: RootDatabase;
  private dbs = new Map<string, { db: Database; schema: TableSchema }>();
  private fences: Database;
  private readonly stats: StoreStats = storeStats('lmdb');

  constructor(path: string, tables: readonly TableSchema[] = TABLE_SCHEMAS) {
    // The store holds key hashes and password hashes: readable by the server's user only,
    // also for a directory made by an older version or under a looser umask.
    mkdirSync(path, { recursive: true, mode: 0o700 });
    chmodSync(path, 0o700);
    this.root = open({ path, maxDbs: 64, compression: false });
    for (const f of readdirSync(path, { withFileTypes: true })) if (f.isFile()) chmodSync(join(path, f.name), 0o600);
    for (const schema of tables) this.dbs.set(schema.name, { db: this.root.openDB({ name: schema.name, ...TABLE_DB_OPTIONS }), schema });
    // Fences carry the token as their version, for `ifVersion`. Stores made before that kept them
    // unversioned in `_fences` (a flag lmdb cannot change on a filled database): copied over once.
    this.fences = this.root.openDB({ name: '_fence_versions', useVersions: true });
    if (this.fences.getKeysCount() === 0) {
      const legacy = this.root.openDB({ name: '_fences' });
      this.root.transactionSync(() => {
        for (const { key, value } of legacy.getRange()) this.fences.putSync(key, value, value as number);
      });
    }
  }

  async init(): Promise<void> {}

  private table(name: string): { db: Database; schema: TableSchema } {
    const t = this.dbs.get(name);
    if (!t) throw new Error(`unknown table ${name}`);
    return t;
  }

  async get<V>(table: string, pk: string, ck: Key): Promise<V | undefined> {
    const t0 = performance.now();
    const { db } = this.table(table);
    // A key too long to store names no row (reads take user input: a path, a word).
    if (!fits(pk, ck)) return undefined;
    const v = db.get([pk, ck]) as V | undefined;
    this.stats.get.observe(secondsSince(t0));
    return v;
  }

  async range<V>(table: string, pk: string, opts: RangeOptions = {}): Promise<Row<V>[]> {
    const t0 = performance.now();
    const rows = this.rangeNow<V>(table, pk, opts);
    this.stats.range.observe(secondsSince(t0));
    return rows;
  }

  private rangeNow<V>(table: string, pk: string, opts: RangeOptions): Row<V>[] {
    const { db, schema } = this.table(table);
    const max: Key = schema.ck === 'bigint' ? Number.MAX_SAFE_INTEGER : TEXT_MAX;
    const min: Key = schema.ck === 'bigint' ? Number.MIN_SAFE_INTEGER : '';
    const lo = opts.gte ?? min;
    const hi = opts.lte ?? max;
    const limit = opts.limit ?? Infinity;
    const rows: Row<V>[] = [];
    if (limit <= 0 || compareKeys(lo, hi) > 0 || !fits(pk, lo) || !fits(pk, hi)) return rows;
    // lmdb ranges include `start` and exclude `end`; walk inclusively and stop at the far bound.
    const range = opts.reverse ? db.getRange({ start: [pk, hi], end: [pk, min], reverse: true }) : db.getRange({ start: [pk, lo], end: [pk, max] });
    for (const { key, value } of range) {
      const ck = (key as [string, Key])[1];
      if (opts.reverse ? compareKeys(ck, lo) < 0 : compareKeys(ck, hi) > 0) break;
      rows.push({ ck, value: value as V });
      if (rows.length >= limit) break;
    }
    if (!opts.reverse && rows.length < limit && hi === max) {
      const last = db.get([pk, max]);
      if (last !== undefined) rows.push({ ck: max, value: last as V });
    }
    if (opts.reverse && rows.length < limit && lo === min) {
      const first = db.get([pk, min]);
      if (first !== undefined) rows.push({ ck: min, value: first as V });
    }
    return rows;
  }

  /** See Scannable: keys sort by partition key first, so the rows of a prefix are one contiguous range. */
  async *scan<V>(table: string, pkPrefix: string): AsyncIterable<ScannedRow<V>> {
    const { db } = this.table(table);
    for (const { key, value } of db.getRange({ start: [pkPrefix] })) {
      const [pk, ck] = key as [string, Key];
      if (!pk.startsWith(pkPrefix)) break;
      yield { pk, ck, value: value as V };
    }
  }

  /**
   * Copies the whole environment to `dir` (created; must not hold a store)
   * while writers go on: lmdb's copy reads one consistent snapshot, a
   * read transaction, so the copy is every commit acknowledged before it
   * started and nothing half-written. `compact` leaves out free pages.
   */
  async backup(dir: string, compact = true): Promise<void> {
    // lmdb writes data.mdb into an existing directory (the environment is a directory, not one file).
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    await this.root.backup(dir, compact);
  }

  async claim(scope: string, token: number): Promise<Writer | null> {
    checkToken(token);
    const t0 = performance.now();
    const ok = await this.root.transaction(() => {
      const current = (this.fences.get(scope) as number | undefined) ?? 0;
      if (current > token) return false;
      this.fences.put(scope, token, token);
      return true;
    });
    this.stats.claim.observe(secondsSince(t0));
    if (!ok) return null;
    // A commit is one transaction: there is never a committed write left to finish.
    return { scope, token, commit: (ops) => timedCommit(this.stats, ops.length, () => this.commit(scope, token, ops)) };
  }

  /** One block of writes on the condition that the scope's fence is still `token`: all or nothing, in one lmdb transaction. */
  private async commit(scope: string, token: number, ops: WriteOp[]): Promise<void> {
    for (const op of ops) {
      checkKey(this.table(op.table).schema, op.ck);
      if (!fits(op.pk, op.ck)) throw new RangeError(`${op.table}: key [${op.pk.slice(0, 40)}…, ${String(op.ck).slice(0, 40)}…] is longer than ${MAX_KEY_BYTES} bytes`);
    }
    const ok = await this.fences.ifVersion(scope, token, () => {
      for (const op of ops) {
        const { db } = this.table(op.table);
        if (op.op === 'put') void db.put([op.pk, op.ck], op.value);
        else void db.remove([op.pk, op.ck]);
      }
    });
    if (!ok) throw new FencedError(scope);
    await this.root.flushed; // shared by every commit of the batch: a group commit
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}

/**
 * The bound of an unbounded walk over a text clustering key. lmdb orders
 * strings by their UTF-8 bytes (code point order, as Cassandra does), so
 * '\uffff' would end the walk before any key that starts with a character
 * beyond U+FFFF (an emoji): the greatest code point, twice, sorts after every
 * key that does not start with two of that noncharacter.
 */
const TEXT_MAX = '\u{10FFFF}\u{10FFFF}';

/**
 * Keys in lmdb's (and Cassandra's) order: numbers by value, strings by code
 * point, which JavaScript's `<` (by UTF-16 unit) is not for a character
 * beyond U+FFFF against one from U+E000 to U+FFFF.
 */
function compareKeys(a: Key, b: Key): number {
  if (typeof a !== 'string' || typeof b !== 'string') return a < b ? -1 : a > b ? 1 : 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit's place in code point order: surrogates (U+10000 and beyond) after U+E000..U+FFFF. */
const codePointRank = (u: number): number => (u >= 0xe000 ? u - 0x800 : u >= 0xd800 ? u + 0x2000 : u);

/** lmdb's largest key (its default maxKeySize), in bytes. */
const MAX_KEY_BYTES = 1978;

/**
 * Whether `[pk, ck]` is short enough to be a key: the UTF-8 bytes of its
 * strings and a margin for lmdb's framing (a few bytes a part, 9 for a
 * number). Writes are held to the same rule, so a key that does not fit is
 * one no row has, and a read of it finds nothing instead of failing.
 */
function fits(pk: string, ck: Key): boolean {
  return Buffer.byteLength(pk) + (typeof ck === 'string' ? Buffer.byteLength(ck) : 9) + 16 <= MAX_KEY_BYTES;
}

function checkToken(token: number): void {
  if (!Number.isSafeInteger(token) || token < 0) throw new TypeError(`fence token must be a non-negative safe integer, got ${token}`);
}

/** Bigint tables take safe integers, text tables strings (as Cassandra does). */
export function checkKey(schema: TableSchema, ck: Key): void {
  if (schema.ck === 'bigint' ? !Number.isSafeInteger(ck) : typeof ck !== 'string') {
    throw new TypeError(`${schema.name}: clustering key must be ${schema.ck === 'bigint' ? 'a safe integer' : 'a string'}, got ${JSON.stringify(ck)}`);
  }
}
