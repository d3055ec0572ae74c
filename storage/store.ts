/**
 * The Store: persistence shaped like Cassandra's data model. Every table has
 * a partition key (text) and one clustering key (bigint or text) and holds a
 * JSON value. Reads name a partition: one row, or a slice of one partition in
 * clustering order. There are no scans across partitions.
 *
 * Tables are declared in `storage/tables.ts` (the catalog), which builds every
 * key; nothing else concatenates partition keys.
 *
 * Writes are fenced. An owner first claims a scope (an actor, `realm:1`, or a
 * shard's timer cursor, `shard:7`) with the fencing token of its lease and
 * gets a `Writer`; every write goes through that writer, and the store itself
 * refuses it once a greater token has claimed the scope. A claim also
 * completes the writes an earlier owner committed but had not finished
 * applying, so what the new owner loads is everything ever answered `success`
 * and nothing an old owner writes afterwards can change it.
 *
 * Implementations: embedded (lmdb on local disk) and Cassandra. The same test
 * suite (test/store.test.ts) runs against both.
 */

export type Key = number | string;

/** A physical table: its name and the type of its clustering key. */
export interface TableSchema {
  name: string;
  ck: 'bigint' | 'text';
}

export interface Row<V = unknown> {
  ck: Key;
  value: V;
}

export type WriteOp =
  | { op: 'put'; table: string; pk: string; ck: Key; value: unknown }
  | { op: 'delete'; table: string; pk: string; ck: Key };

export interface RangeOptions {
  /** Inclusive lower bound of the clustering key. */
  gte?: Key;
  /** Inclusive upper bound of the clustering key. */
  lte?: Key;
  /** Newest (greatest) first. */
  reverse?: boolean;
  limit?: number;
}

/** The right to write one scope, held under one fencing token. */
export interface Writer {
  readonly scope: string;
  readonly token: number;
  /**
   * Applies `ops` as one atomic change, as if one after another (a later op
   * on a row wins), and resolves once it is durable. Rejects with
   * `FencedError`, having changed nothing, if a greater token has claimed the
   * scope. Any other rejection leaves the outcome unknown (the writer is then
   * unusable: claim the scope again, which completes or discards the write).
   *
   * Commits of one writer may overlap (the actor journal keeps two in
   * flight): they take effect in the order they were started, a later one
   * winning on a row both write, and each promise settles on its own (await
   * them in order where order matters). Very large commits may be applied in
   * several atomic parts (see the implementation).
   */
  commit(ops: WriteOp[]): Promise<void>;
}

export interface Store {
  /**
   * Tables whose rows this store returns already decoded (their codec's
   * records, not raw stored values): the realm's image (`actors/realm/state/checkpoint.ts`),
   * whose rows were decoded once where they came in. The catalog does not decode them again.
   */
  readonly decodedTables?: ReadonlySet<string>;
  /** Creates the keyspace and tables if they are missing (idempotent). */
  init(): Promise<void>;
  get<V>(table: string, pk: string, ck: Key): Promise<V | undefined>;
  range<V>(table: string, pk: string, opts?: RangeOptions): Promise<Row<V>[]>;
  /**
   * Takes `scope` for `token`. Resolves null, changing nothing, if a greater
   * token already holds it. Otherwise every later commit of an older token
   * is refused, and the writes older owners committed are all applied before
   * this resolves, so reads afterwards see them. Claiming again with the
   * same token (an actor reloaded on the same lease) is allowed; the store
   * may then refuse the earlier writer of that token with `FencedError`, so
   * use only the writer of the latest claim.
   */
  claim(scope: string, token: number): Promise<Writer | null>;
  close(): Promise<void>;
}

/** A row with its partition key, as a scan yields it. */
export interface ScannedRow<V = unknown> extends Row<V> {
  pk: string;
}

/**
 * Reading a whole table, for exports and backups only (never on a request's
 * path): both stores implement it beside the Store interface.
 */
export interface Scannable {
  /**
   * Every row of `table` whose partition key starts with `pkPrefix`, in no
   * promised order, read a page at a time. Embedded: O(matching rows), one
   * consistent snapshot. Cassandra: a full scan of the table (O(table), every
   * node), filtered here, and not a snapshot: rows written meanwhile may or
   * may not be seen.
   */
  scan<V>(table: string, pkPrefix: string): AsyncIterable<ScannedRow<V>>;
}

/** A write refused because a newer owner (a greater fencing token) claimed the scope. Nothing was written. */
export class FencedError extends Error {
  constructor(scope: string) {
    super(`lost ownership of ${scope}`);
    this.name = 'FencedError';
  }
}
