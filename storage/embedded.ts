/**
 * Embedded Store on lmdb: one environment under the data directory, one
 * sub-database per table, keys `[pk, ck]` so a partition is a contiguous,
 * ordered key range. Writes of one call commit in one transaction, and the
 * returned promise resolves after lmdb has synced the commit to disk.
 */
import { mkdirSync } from 'node:fs';
import { open, type Database, type RootDatabase } from 'lmdb';
import { type Key, type RangeOptions, type Row, type Store, type Table, TABLES, type WriteOp } from './store.ts';

export class EmbeddedStore implements Store {
  private root: RootDatabase;
  private dbs = new Map<Table, Database>();
  private fences: Database;

  constructor(path: string) {
    mkdirSync(path, { recursive: true });
    this.root = open({ path, maxDbs: 32, compression: false });
    for (const table of Object.keys(TABLES) as Table[]) this.dbs.set(table, this.root.openDB({ name: table }));
    this.fences = this.root.openDB({ name: '_fences' });
  }

  async init(): Promise<void> {}

  private db(table: Table): Database {
    const db = this.dbs.get(table);
    if (!db) throw new Error(`unknown table ${table}`);
    return db;
  }

  async get<V>(table: Table, pk: string, ck: Key): Promise<V | undefined> {
    return this.db(table).get([pk, ck]) as V | undefined;
  }

  async range<V>(table: Table, pk: string, opts: RangeOptions = {}): Promise<Row<V>[]> {
    const max: Key = TABLES[table] === 'bigint' ? Number.MAX_SAFE_INTEGER : '\uffff\uffff';
    const min: Key = TABLES[table] === 'bigint' ? Number.MIN_SAFE_INTEGER : '';
    const lo = opts.gte ?? min;
    const hi = opts.lte ?? max;
    const limit = opts.limit ?? Infinity;
    const rows: Row<V>[] = [];
    if (limit <= 0 || lo > hi) return rows;
    // lmdb ranges include `start` and exclude `end`; walk inclusively and stop at the far bound.
    const range = opts.reverse
      ? this.db(table).getRange({ start: [pk, hi], end: [pk, min], reverse: true })
      : this.db(table).getRange({ start: [pk, lo], end: [pk, max] });
    for (const { key, value } of range) {
      const ck = (key as [string, Key])[1];
      if (opts.reverse ? ck < lo : ck > hi) break;
      rows.push({ ck, value: value as V });
      if (rows.length >= limit) break;
    }
    if (!opts.reverse && rows.length < limit && hi === max) {
      const last = this.db(table).get([pk, max]);
      if (last !== undefined) rows.push({ ck: max, value: last as V });
    }
    if (opts.reverse && rows.length < limit && lo === min) {
      const first = this.db(table).get([pk, min]);
      if (first !== undefined) rows.push({ ck: min, value: first as V });
    }
    return rows;
  }

  /** One lmdb transaction: every unit is atomic because the whole call is. */
  async write(ops: WriteOp[], _units?: number[]): Promise<void> {
    if (ops.length === 0) return;
    await this.root.transaction(() => {
      for (const op of ops) {
        const db = this.db(op.table);
        if (op.op === 'put') db.put([op.pk, op.ck], op.value);
        else db.remove([op.pk, op.ck]);
      }
    });
  }

  async claimFence(scope: string, token: number): Promise<boolean> {
    return this.root.transaction(() => {
      const current = (this.fences.get(scope) as number | undefined) ?? 0;
      if (current > token) return false;
      this.fences.put(scope, token);
      return true;
    });
  }

  async fence(scope: string): Promise<number> {
    return (this.fences.get(scope) as number | undefined) ?? 0;
  }

  async close(): Promise<void> {
    await this.root.close();
  }
}
