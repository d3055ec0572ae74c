/**
 * The Store: persistence shaped like Cassandra's data model. Every table has
 * a partition key (text) and one clustering key (bigint or text) and holds a
 * JSON value. Reads name a partition: one row, or a slice of one partition in
 * clustering order. There are no scans across partitions.
 *
 * Implementations: embedded (lmdb on local disk) and Cassandra. The same test
 * suite (test/store.test.ts) runs against both.
 */

export type Key = number | string;

/** The tables and the type of their clustering key. */
export const TABLES = {
  /** pk realm id; ck 'meta' | 'ids': realm settings and the id allocator. */
  realm_meta: 'text',
  /** pk realm id; ck user id. */
  users: 'bigint',
  /** pk realm id; ck stream id. */
  channels: 'bigint',
  /** pk realm id; ck `${streamId}:${userId}`. */
  subscriptions: 'text',
  /** pk realm id; ck conversation key (sorted user ids joined by ','). */
  dm_conversations: 'text',
  /** pk `${realmId}:${recipientKey}`; ck bucket number. Which buckets hold messages. */
  recipient_buckets: 'bigint',
  /** pk `${realmId}:${recipientKey}:${bucket}`; ck message id. */
  messages: 'bigint',
  /** pk `${realmId}:${userId}`; ck message id: flags that differ from the default. */
  user_flags: 'bigint',
  /** pk `${realmId}:${userId}`; ck 'settings'. */
  user_state: 'text',
} as const;

export type Table = keyof typeof TABLES;

export interface Row<V = unknown> {
  ck: Key;
  value: V;
}

export type WriteOp =
  | { op: 'put'; table: Table; pk: string; ck: Key; value: unknown }
  | { op: 'delete'; table: Table; pk: string; ck: Key };

export interface RangeOptions {
  /** Inclusive lower bound of the clustering key. */
  gte?: Key;
  /** Inclusive upper bound of the clustering key. */
  lte?: Key;
  /** Newest (greatest) first. */
  reverse?: boolean;
  limit?: number;
}

export interface Store {
  /** Creates the keyspace and tables if they are missing (idempotent). */
  init(): Promise<void>;
  get<V>(table: Table, pk: string, ck: Key): Promise<V | undefined>;
  range<V>(table: Table, pk: string, opts?: RangeOptions): Promise<Row<V>[]>;
  /**
   * Applies the writes; resolves only once they are durable. `units` gives the
   * lengths of consecutive runs of `ops` that must each apply atomically (one
   * actor state change each); by default all of `ops` is one unit.
   */
  write(ops: WriteOp[], units?: number[]): Promise<void>;
  /**
   * Fencing: records that `scope` is now owned under `token`. Resolves false
   * (and changes nothing) if a greater token was already claimed, which means
   * a newer owner exists and the caller must stop.
   */
  claimFence(scope: string, token: number): Promise<boolean>;
  /** The greatest token claimed for `scope` (0 if none). */
  fence(scope: string): Promise<number>;
  close(): Promise<void>;
}

/** Thrown by an actor that finds it no longer owns its shard. */
export class FencedError extends Error {
  constructor(scope: string) {
    super(`lost ownership of ${scope}`);
    this.name = 'FencedError';
  }
}
