/**
 * Cassandra Store. Every table of TABLES becomes
 *
 *   CREATE TABLE <t> (pk text, ck bigint|text, v text, PRIMARY KEY ((pk), ck))
 *
 * so a Store partition is a Cassandra partition and a range read is a slice of
 * one partition in clustering order. Values are JSON text: the Store promises
 * JSON values, the rows stay readable in cqlsh, and SSTable compression (LZ4 by
 * default) takes most of what a binary encoding would save.
 *
 * Consistency: LOCAL_QUORUM reads and writes by default. With RF=1 on one node
 * that is the one replica; with RF=3 it is two of three, so a read after an
 * acknowledged write always overlaps it (read-your-writes, also across
 * processes). Durability on the node is Cassandra's: the write is in the
 * commit log of a quorum of replicas, fsynced per `commitlog_sync`.
 *
 * Writes (see `write`): one op is one statement; ops on one partition go in an
 * unlogged batch (atomic and isolated, a single mutation); ops across
 * partitions go in a LOGGED batch, so an actor's state change (message row +
 * bucket index + id allocator) is all applied or, after a coordinator failure,
 * replayed from the batchlog — never left half done. It is not isolated: a
 * concurrent reader of another partition may briefly see part of it, which is
 * fine because an actor reads its own state from memory and others learn of a
 * change only from the event sent after write() resolves. Batches are kept
 * under `maxBatchBytes`; a write larger than that is split (see `write`).
 *
 * Multi-DC: init() creates the keyspace with SimpleStrategy, which is right for
 * one data centre only. For several, create it yourself beforehand with
 *   CREATE KEYSPACE parley WITH replication =
 *     {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3};
 * init() leaves an existing keyspace as it is.
 */
import cassandra from 'cassandra-driver';
import { type Key, type RangeOptions, type Row, type Store, type Table, TABLES, type WriteOp } from './store.ts';

const { consistencies, responseErrorCodes } = cassandra.types;
type Long = InstanceType<typeof cassandra.types.Long>;

/** Where and how to connect; `Config['cassandra']` has this shape. */
export interface CassandraStoreOptions {
  /** 'host', 'host:port' or '[v6addr]:port'. Peers found later use the first contact point's port. */
  contactPoints: string[];
  localDataCenter: string;
  keyspace: string;
  /** Used only when init() creates the keyspace. */
  replicationFactor: number;
  /** Reads and writes; default LOCAL_QUORUM. */
  consistency?: number;
  /**
   * Paxos consistency of fence claims and fence reads; default SERIAL, so two
   * owners in different data centres cannot both win a claim. LOCAL_SERIAL is
   * cheaper when leases never span data centres.
   */
  serialConsistency?: number;
  /** Batch size budget, estimated from keys and values. Cassandra rejects batches over `batch_size_fail_threshold` (50 KiB by default). */
  maxBatchBytes?: number;
  /** Statements per batch at most. */
  maxBatchOps?: number;
  /** Batches of one split write in flight at once. */
  maxConcurrentBatches?: number;
  /** How long init() waits for all nodes to agree on the schema. */
  schemaAgreementTimeoutMs?: number;
}

const FENCES = 'fences';
const KEYSPACE_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

/** One write op with its statement ready to send; `bytes` estimates its share of a batch (keys, value, ~48 bytes of cell overhead). */
interface Prepared {
  partition: string;
  row: string;
  bytes: number;
  query: string;
  params: unknown[];
}

export class CassandraStore implements Store {
  private readonly client: cassandra.Client;
  private readonly ks: string;
  private readonly consistency: number;
  private readonly serialConsistency: number;
  private readonly maxBatchBytes: number;
  private readonly maxBatchOps: number;
  private readonly maxConcurrentBatches: number;
  private readonly schemaAgreementTimeoutMs: number;
  private lastTimestamp = 0;

  constructor(private readonly opts: CassandraStoreOptions) {
    if (!KEYSPACE_NAME.test(opts.keyspace)) throw new Error(`invalid keyspace name ${JSON.stringify(opts.keyspace)}`);
    if (opts.contactPoints.length === 0) throw new Error('no Cassandra contact points');
    this.ks = opts.keyspace;
    this.consistency = opts.consistency ?? consistencies.localQuorum;
    this.serialConsistency = opts.serialConsistency ?? consistencies.serial;
    this.maxBatchBytes = opts.maxBatchBytes ?? 32 * 1024;
    this.maxBatchOps = opts.maxBatchOps ?? 256;
    this.maxConcurrentBatches = opts.maxConcurrentBatches ?? 8;
    this.schemaAgreementTimeoutMs = opts.schemaAgreementTimeoutMs ?? 30_000;
    const port = portOf(opts.contactPoints[0]!);
    this.client = new cassandra.Client({
      // The driver accepts 'host:port' per contact point; protocolOptions.port is for the peers it discovers.
      contactPoints: opts.contactPoints,
      localDataCenter: opts.localDataCenter,
      protocolOptions: { port, maxSchemaAgreementWaitSeconds: Math.ceil(this.schemaAgreementTimeoutMs / 1000) },
      queryOptions: { consistency: this.consistency, serialConsistency: this.serialConsistency, prepare: true },
    });
  }

  /** Connects (so a wrong address fails here, not at the first query); call init() next. */
  static async connect(opts: CassandraStoreOptions): Promise<CassandraStore> {
    const store = new CassandraStore(opts);
    try {
      await store.client.connect();
    } catch (err) {
      await store.client.shutdown().catch(() => {});
      throw err;
    }
    return store;
  }

  /**
   * Creates the keyspace and the missing tables. Safe to run from several
   * processes at once: every statement is IF NOT EXISTS, "already exists"
   * from a racing creator counts as success, and it returns only once the
   * nodes agree on the schema.
   */
  async init(): Promise<void> {
    await this.ddl(
      `CREATE KEYSPACE IF NOT EXISTS ${this.ks} WITH replication = ` +
        `{'class': 'SimpleStrategy', 'replication_factor': ${Math.trunc(this.opts.replicationFactor)}}`,
    );
    const rs = await this.client.execute('SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?', [this.ks], { prepare: true, consistency: consistencies.one });
    const existing = new Set(rs.rows.map((r) => r['table_name'] as string));
    const creates: string[] = [];
    for (const table of Object.keys(TABLES) as Table[]) {
      if (existing.has(table)) continue;
      creates.push(
        `CREATE TABLE IF NOT EXISTS ${this.ks}.${table} (pk text, ck ${TABLES[table]}, v text, PRIMARY KEY ((pk), ck)) ` +
          'WITH CLUSTERING ORDER BY (ck ASC)',
      );
    }
    // TOKEN is a reserved word in CQL (the token() function), hence the quotes wherever the column is named.
    if (!existing.has(FENCES)) creates.push(`CREATE TABLE IF NOT EXISTS ${this.ks}.${FENCES} (scope text PRIMARY KEY, "token" bigint)`);
    // One at a time: each schema change waits for agreement anyway, and a single node applies them serially.
    for (const cql of creates) await this.ddl(cql);
    await this.awaitSchemaAgreement();
  }

  async get<V>(table: Table, pk: string, ck: Key): Promise<V | undefined> {
    checkKey(table, ck);
    const rs = await this.client.execute(`SELECT v FROM ${this.ks}.${table} WHERE pk = ? AND ck = ?`, [pk, ck], this.readOptions());
    const row = rs.first();
    return row ? (JSON.parse(row['v'] as string) as V) : undefined;
  }

  async range<V>(table: Table, pk: string, opts: RangeOptions = {}): Promise<Row<V>[]> {
    const { reverse = false } = opts;
    const gte = opts.gte === undefined ? undefined : bound(table, opts.gte, 'gte');
    const lte = opts.lte === undefined ? undefined : bound(table, opts.lte, 'lte');
    const limit = opts.limit ?? Infinity;
    if (limit <= 0 || (gte !== undefined && lte !== undefined && gte > lte)) return [];
    // CQL LIMIT is a 32-bit int; anything larger is no limit at all.
    const bounded = Number.isFinite(limit) && limit < 2 ** 31;
    if (bounded && !Number.isInteger(limit)) throw new RangeError(`limit must be an integer, got ${limit}`);
    let cql = `SELECT ck, v FROM ${this.ks}.${table} WHERE pk = ?`;
    const params: unknown[] = [pk];
    if (gte !== undefined) {
      cql += ' AND ck >= ?';
      params.push(gte);
    }
    if (lte !== undefined) {
      cql += ' AND ck <= ?';
      params.push(lte);
    }
    if (reverse) cql += ' ORDER BY ck DESC';
    if (bounded) {
      cql += ' LIMIT ?';
      params.push(limit);
    }
    const rows: Row<V>[] = [];
    const rs = await this.client.execute(cql, params, { ...this.readOptions(), fetchSize: bounded ? Math.min(limit, 5000) : 5000 });
    // Iterating the result set fetches the further pages of a long slice.
    for await (const row of rs) rows.push({ ck: fromCk(row['ck'] as Long | string), value: JSON.parse(row['v'] as string) as V });
    return rows;
  }

  /**
   * Applies `ops` as if one after another, and resolves once Cassandra has
   * acknowledged all of them at the write consistency.
   *
   * A write that fits one batch is atomic: the ops are one statement, an
   * unlogged batch (one partition) or a logged batch (several). A larger one
   * is split into batches; each is atomic, the whole is not. `units` (lengths
   * of consecutive runs of `ops`, summing to ops.length) names runs that must
   * stay whole: a split only falls between units, unless one unit alone is too
   * large. Without `units` all of `ops` is one unit.
   *
   * Every batch gets its own client timestamp, increasing in op order, so
   * batches may run concurrently and a later op on a row still wins. Within a
   * batch a row touched twice keeps only its last op (a batch's statements
   * share one timestamp, on which Cassandra would let a delete win).
   */
  async write(ops: WriteOp[], units?: number[]): Promise<void> {
    if (ops.length === 0) return;
    const prepared = ops.map((op) => this.prepareOp(op));
    const runs = units ? splitUnits(prepared, units) : [prepared];
    const batches: Prepared[][] = [];
    let current: Prepared[] = [];
    let bytes = 0;
    const fits = (n: number, b: number) => n <= this.maxBatchOps && b <= this.maxBatchBytes;
    for (const run of runs) {
      const runBytes = run.reduce((s, p) => s + p.bytes, 0);
      if (current.length > 0 && !fits(current.length + run.length, bytes + runBytes)) {
        batches.push(current);
        current = [];
        bytes = 0;
      }
      for (const p of run) {
        // Only a single run larger than a whole batch gets here with a full batch.
        if (current.length > 0 && !fits(current.length + 1, bytes + p.bytes)) {
          batches.push(current);
          current = [];
          bytes = 0;
        }
        current.push(p);
        bytes += p.bytes;
      }
    }
    if (current.length > 0) batches.push(current);
    const stamped = batches.map((batch) => ({ batch: lastPerRow(batch), timestamp: this.nextTimestamp() }));
    await eachLimited(stamped, this.maxConcurrentBatches, ({ batch, timestamp }) => this.sendBatch(batch, timestamp));
  }

  /**
   * A lightweight transaction: raises the fence of `scope` to `token` unless
   * a greater token holds it. Linearizable (Paxos at `serialConsistency`). A
   * timeout leaves the outcome unknown and rejects; the caller must then
   * treat the scope as not owned.
   */
  async claimFence(scope: string, token: number): Promise<boolean> {
    checkToken(token);
    const lwt = { prepare: true, consistency: this.consistency, serialConsistency: this.serialConsistency, isIdempotent: false };
    // A claim usually re-claims a known scope, so try the update first: one Paxos round in the common case.
    for (let attempt = 0; attempt < 3; attempt++) {
      const upd = await this.client.execute(`UPDATE ${this.ks}.${FENCES} SET "token" = ? WHERE scope = ? IF "token" <= ?`, [token, scope, token], lwt);
      if (upd.wasApplied()) return true;
      if (upd.first()?.['token'] != null) return false; // the row exists with a greater token
      const ins = await this.client.execute(`INSERT INTO ${this.ks}.${FENCES} (scope, "token") VALUES (?, ?) IF NOT EXISTS`, [scope, token], lwt);
      if (ins.wasApplied()) return true;
      const current = ins.first()?.['token'] as Long | null | undefined;
      if (current != null && current.toNumber() > token) return false;
      // Someone created the row between our two statements with a token not above ours: update again.
    }
    throw new Error(`claimFence(${scope}): no decision after 3 attempts`);
  }

  /** Read at serial consistency, so a claim in flight is either seen whole or not at all. */
  async fence(scope: string): Promise<number> {
    const rs = await this.client.execute(`SELECT "token" FROM ${this.ks}.${FENCES} WHERE scope = ?`, [scope], {
      prepare: true,
      consistency: this.serialConsistency,
      isIdempotent: true,
    });
    const token = rs.first()?.['token'] as Long | null | undefined;
    return token == null ? 0 : token.toNumber();
  }

  async close(): Promise<void> {
    await this.client.shutdown();
  }

  private readOptions(): cassandra.QueryOptions {
    return { prepare: true, consistency: this.consistency, isIdempotent: true };
  }

  private prepareOp(op: WriteOp): Prepared {
    checkKey(op.table, op.ck);
    const partition = JSON.stringify([op.table, op.pk]);
    const row = JSON.stringify([op.table, op.pk, op.ck]);
    const keyBytes = Buffer.byteLength(op.pk) + (typeof op.ck === 'number' ? 8 : Buffer.byteLength(op.ck));
    if (op.op === 'delete') {
      return { partition, row, bytes: keyBytes + 48, query: `DELETE FROM ${this.ks}.${op.table} WHERE pk = ? AND ck = ?`, params: [op.pk, op.ck] };
    }
    const json = JSON.stringify(op.value) as string | undefined;
    if (json === undefined) throw new TypeError(`${op.table}/${op.pk}/${op.ck}: value is not representable as JSON`);
    return {
      partition,
      row,
      bytes: keyBytes + Buffer.byteLength(json) + 48,
      query: `INSERT INTO ${this.ks}.${op.table} (pk, ck, v) VALUES (?, ?, ?)`,
      params: [op.pk, op.ck, json],
    };
  }

  private async sendBatch(batch: Prepared[], timestamp: number): Promise<void> {
    const options: cassandra.QueryOptions = { prepare: true, consistency: this.consistency, isIdempotent: true, timestamp };
    if (batch.length === 1) {
      await this.client.execute(batch[0]!.query, batch[0]!.params, options);
      return;
    }
    const onePartition = batch.every((p) => p.partition === batch[0]!.partition);
    await this.client.batch(
      batch.map((p) => ({ query: p.query, params: p.params })),
      { ...options, logged: !onePartition },
    );
  }

  /** Microseconds, strictly increasing within this process (Cassandra's last-write-wins clock). */
  private nextTimestamp(): number {
    this.lastTimestamp = Math.max(Date.now() * 1000, this.lastTimestamp + 1);
    return this.lastTimestamp;
  }

  private async ddl(cql: string): Promise<void> {
    try {
      await this.client.execute(cql, [], { prepare: false });
    } catch (err) {
      if (err instanceof cassandra.errors.ResponseError && err.code === responseErrorCodes.alreadyExists) return;
      throw err;
    }
  }

  private async awaitSchemaAgreement(): Promise<void> {
    const deadline = Date.now() + this.schemaAgreementTimeoutMs;
    // Public and documented in the driver, but missing from its bundled typings.
    const metadata = this.client.metadata as cassandra.metadata.Metadata & { checkSchemaAgreement(): Promise<boolean> };
    while (!(await metadata.checkSchemaAgreement())) {
      if (Date.now() > deadline) throw new Error(`Cassandra nodes did not agree on the schema within ${this.schemaAgreementTimeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

function portOf(contactPoint: string): number {
  const m = /^(?:\[[^\]]+\]|[^:[\]]+):(\d+)$/.exec(contactPoint);
  return m ? Number(m[1]) : 9042;
}

/** Bigint tables take safe integers (they come back as JS numbers), text tables strings. */
function checkKey(table: Table, ck: Key): void {
  if (TABLES[table] === 'bigint' ? !Number.isSafeInteger(ck) : typeof ck !== 'string') {
    throw new TypeError(`${table}: clustering key must be ${TABLES[table] === 'bigint' ? 'a safe integer' : 'a string'}, got ${JSON.stringify(ck)}`);
  }
}

/**
 * A range bound as Cassandra takes it. Bounds on bigint tables may be any
 * number, as they may be for the embedded store (readers pass anchors such as
 * 1e16 - 1): rounded inwards, then clamped to the bigint range. Stored keys
 * are safe integers, so that selects the same rows.
 */
function bound(table: Table, key: Key, side: 'gte' | 'lte'): Key {
  if (TABLES[table] === 'text') {
    if (typeof key !== 'string') throw new TypeError(`${table}: ${side} must be a string, got ${JSON.stringify(key)}`);
    return key;
  }
  if (typeof key !== 'number' || Number.isNaN(key)) throw new TypeError(`${table}: ${side} must be a number, got ${JSON.stringify(key)}`);
  // The driver's Long.fromNumber saturates at ±2^63, so clamping there covers ±Infinity too.
  return Math.min(2 ** 63, Math.max(-(2 ** 63), side === 'gte' ? Math.ceil(key) : Math.floor(key)));
}

function checkToken(token: number): void {
  if (!Number.isSafeInteger(token)) throw new TypeError(`fence token must be a safe integer, got ${token}`);
}

function fromCk(ck: Long | string): Key {
  return typeof ck === 'string' ? ck : ck.toNumber();
}

function splitUnits<T>(items: T[], units: number[]): T[][] {
  if (units.some((n) => !Number.isInteger(n) || n < 0) || units.reduce((s, n) => s + n, 0) !== items.length) {
    throw new RangeError(`units ${JSON.stringify(units)} do not cover ${items.length} ops`);
  }
  const runs: T[][] = [];
  let at = 0;
  for (const n of units) {
    if (n > 0) runs.push(items.slice(at, at + n));
    at += n;
  }
  return runs;
}

/** The batch with every row's earlier ops dropped, in the order of the kept ops. */
function lastPerRow(batch: Prepared[]): Prepared[] {
  const last = new Map<string, number>();
  batch.forEach((p, i) => last.set(p.row, i));
  return last.size === batch.length ? batch : batch.filter((p, i) => last.get(p.row) === i);
}

/** Runs `fn` over `items` with at most `limit` in flight; rejects with the first failure after all have settled. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  if (items.length === 1) return fn(items[0]!);
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      try {
        await fn(item);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failure) throw failure.err;
}
