/**
 * Cassandra Store.
 *
 * Data tables. Every table of the catalog (TABLE_SCHEMAS) becomes
 *
 *   CREATE TABLE <t> (pk text, ck bigint|text, v text, PRIMARY KEY ((pk), ck))
 *
 * so a Store partition is a Cassandra partition and a range read is a slice of
 * one partition in clustering order. Values are JSON text: the Store promises
 * JSON values, the rows stay readable in cqlsh, and SSTable compression (LZ4 by
 * default) takes most of what a binary encoding would save. Reads are at
 * LOCAL_QUORUM, so a read after an acknowledged commit sees it.
 *
 * The journal: how writes are fenced. Cassandra cannot take back a write in
 * flight (the driver retries idempotent statements, a logged batch replays
 * from the batchlog, hints are delivered later), so a fence check before a
 * write would not stop an old owner's write from landing after a new owner
 * has loaded. Instead every scope has a journal row, written only by
 * lightweight transactions (Paxos), and its entries, written plainly:
 *
 *   journal (scope text PRIMARY KEY,
 *            owner bigint,     -- the fencing token that holds the scope
 *            seq bigint,       -- bumped by every claim and every entry
 *            last_ts bigint,   -- write timestamp of the newest entry
 *            last_entry bigint, last_writer bigint,   -- the newest committed entry
 *            prev_entry bigint, prev_writer bigint)   -- and the one before it
 *   journal_entries ((scope), writer, slot, entry_seq, ts, opsz blob)
 *            -- an entry's ops (deflated JSON), in a ring of 64 slots per
 *               writer; a writer is named by the seq its claim wrote
 *
 * - claim(scope, token) sets `owner = token, seq = seq + 1` in one LWT,
 *   conditioned on the owner and seq it last saw (`IF owner = ? AND seq = ?`,
 *   retried on races; a greater owner resolves null). It then reads the
 *   journal row at SERIAL and re-applies ("replays") its two newest entries,
 *   in order, each with its own write timestamp, and returns a Writer whose
 *   clock starts past `last_ts` and that expects the seq it just wrote.
 * - Writer.commit(ops) writes an entry row (its writer, slot seq % 64) and
 *   then commits it with the LWT `UPDATE journal SET seq, last_ts,
 *   last_entry, last_writer, prev_entry, prev_writer ... IF owner = <token>
 *   AND seq = <expected>`. Not applied: FencedError, and the entry row is
 *   never read. Applied: the ops are written to the data tables, every
 *   statement `USING TIMESTAMP ts` (the entry's ts). The commit resolves once
 *   those writes are acknowledged. Only the small LWT goes through Paxos.
 * - Commits are pipelined: the next commit's entry and LWT may go while the
 *   previous commit's data is written, but never more than two committed
 *   entries are unapplied.
 *
 * Why that fences ("no write of an old owner takes effect after a newer owner
 * has loaded"):
 * - LWTs on one partition are linearizable. Once a claim's LWT has changed
 *   owner and seq, every later append of an older writer fails its condition
 *   (also one of the same token claimed earlier, as seq has moved): its ops
 *   are never applied. An entry row written for an append that then failed
 *   sits in its writer's own slot and is never read: the journal row names
 *   the entries that count.
 * - Entries committed before the claim may still have their data writes in
 *   flight (or retried) when the new owner loads. The claim replays them
 *   first, with the same values and the same timestamps, so when the old
 *   writes land later they rewrite cells with what they already hold. Every
 *   write of the new owner carries a greater timestamp (its clock starts at
 *   last_ts + 1, whatever the wall clocks say), so it wins over them.
 * - Only the two newest entries can be unapplied: a writer holds at most two
 *   unapplied, a failed apply makes the writer refuse further commits, and a
 *   new writer exists only after a claim, which replays those two before it
 *   resolves. Replaying both, in order, completes everything committed; a
 *   delete in the newer one still follows a put of the older one. (Older
 *   entries are not replayed: useless, and after gc_grace_seconds a replayed
 *   put could revive a row whose delete tombstone was purged.) Entry rows of
 *   earlier writers expire after a week.
 *
 * Atomicity: an entry is all or nothing: committed means applied, by its
 * writer or by the next claim. Ops of one entry are deduplicated (the last op
 * on a row wins) and then share one timestamp. A commit whose ops exceed
 * `maxEntryBytes` as JSON (4 MiB) is split at op boundaries into several
 * entries appended one after another; atomicity then holds per entry.
 *
 * Durability: a commit resolves once its entry is committed by Paxos (accepted
 * by a quorum of all replicas for SERIAL, committed at LOCAL_QUORUM) and its
 * data is acknowledged at LOCAL_QUORUM. "Acknowledged" means in the commit log
 * of those replicas: fsynced first with `commitlog_sync: group` or `batch`, as
 * k8s/ ships it (checked by scripts/k8s-validate.sh); with Cassandra's default
 * `periodic` only within `commitlog_sync_period`, so a power loss of every
 * replica that has it loses it (docs/architecture.md, Durability guarantees).
 *
 * Cost: one LWT (a Paxos round: several round trips between replicas, and
 * the ops written to the Paxos state and the journal besides the data
 * tables) per commit, plus the data writes. The actor journal groups every request that
 * arrives during a commit into the next one, so the LWT is paid per group,
 * not per request. A claim costs a read, an LWT, two SERIAL reads and one
 * replay.
 *
 * Batches: the data of an entry goes out in unlogged batches under
 * `maxBatchBytes` and `maxBatchOps` (one statement alone), several in flight
 * at once. They need not be logged: the journal entry, committed by Paxos
 * before any of them is sent, is what makes the change whole; if the writer
 * dies with part of it applied, the next claim of the scope replays the
 * entry. (A logged batch would write every op a third time, to the batchlog.)
 *
 * Multi-DC: init() creates the keyspace with SimpleStrategy, which is right for
 * one data centre only. For several, create it yourself beforehand with
 *   CREATE KEYSPACE parley WITH replication =
 *     {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3};
 * init() leaves an existing keyspace as it is. Keep `serialConsistency`
 * SERIAL when a scope may move between data centres.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import cassandra from 'cassandra-driver';
import { log as rootLog } from '../lib/log.ts';
import { secondsSince, storeStats, timedCommit } from '../lib/metrics.ts';
import { FencedError, type Key, type RangeOptions, type Row, type Scannable, type ScannedRow, type Store, type TableSchema, type Writer, type WriteOp } from './store.ts';
import { TABLE_SCHEMAS } from './tables.ts';

const { consistencies, responseErrorCodes } = cassandra.types;
const storeLog = rootLog.child({ component: 'cassandra-store' });
const STATS = storeStats('cassandra');
const DEFLATE = process.env.PARLEY_JOURNAL_DEFLATE !== '0';
type Long = InstanceType<typeof cassandra.types.Long>;

/** What a fault-injection hook learns about the entry whose data it wraps. */
export interface ApplyInfo {
  scope: string;
  token: number;
  entrySeq: number;
  /** The write timestamp (microseconds) every statement of the entry carries. */
  ts: number;
  /** Rows written (after deduplication). */
  rows: number;
}

/**
 * Wraps a writer's data apply of a committed entry; for fault injection only
 * (storage/faulty.ts, tests). `send` writes the entry's rows, always with the
 * entry's timestamp, and may be called again later, exactly as a driver retry
 * or a batchlog replay would. Not calling it (and rejecting) leaves the entry
 * committed but unapplied, for the next claim to replay. Claims' replays do
 * not go through the hook.
 */
export type ApplyHook = (info: ApplyInfo, send: () => Promise<void>) => Promise<void>;

/** Where and how to connect; `Config['cassandra']` has this shape. */
export interface CassandraStoreOptions {
  /** 'host', 'host:port' or '[v6addr]:port'. Peers found later use the first contact point's port. */
  contactPoints: string[];
  localDataCenter: string;
  keyspace: string;
  /** Used only when init() creates the keyspace. */
  replicationFactor: number;
  /** Reads, data writes, and the commit phase of LWTs; default LOCAL_QUORUM. */
  consistency?: number;
  /**
   * Paxos consistency of claims, journal appends and journal reads; default
   * SERIAL, so two owners in different data centres cannot both win. Use
   * LOCAL_SERIAL only when a scope never moves between data centres.
   */
  serialConsistency?: number;
  /** Batch size budget, estimated from keys and values. Cassandra rejects batches over `batch_size_fail_threshold` (50 KiB by default). */
  maxBatchBytes?: number;
  /** Statements per batch at most. */
  maxBatchOps?: number;
  /** Batches of one entry in flight at once. */
  maxConcurrentBatches?: number;
  /**
   * Largest journal entry: the ops of one commit as JSON, in bytes. A larger
   * commit becomes several entries; a single op larger than this is refused.
   * Default 4 MiB (an LWT is one mutation, and Cassandra refuses mutations
   * over half of `commitlog_segment_size`).
   */
  maxEntryBytes?: number;
  /** Rounds a claim may lose to racing claims or commits before it gives up (rejects). Default 16. */
  claimAttempts?: number;
  /** How long init() waits for all nodes to agree on the schema. */
  schemaAgreementTimeoutMs?: number;
  /** Wall clock in microseconds; tests only (a writer whose clock runs ahead). */
  clockMicros?: () => number;
  /** Fault injection only; see ApplyHook. */
  applyHook?: ApplyHook;
}

const JOURNAL = 'journal';
const ENTRIES = 'journal_entries';
/** Entry slots per scope and token: a slot is reused R entries later, long after its entry was applied. */
const RING = 64;
/** Entry rows live a week: the current writer rewrites its slots, those of earlier tokens expire. */
const ENTRY_TTL_SECS = 7 * 24 * 3600;
const KEYSPACE_NAME = /^[a-z_][a-z0-9_]{0,47}$/;
const TABLE_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

/** One row write with its statement ready to send; `bytes` estimates its share of a batch (keys, value, ~48 bytes of cell overhead). */
interface Prepared {
  partition: string;
  row: string;
  bytes: number;
  query: string;
  params: unknown[];
}

/** A journal entry to append: its JSON text and its row writes. */
interface Entry {
  text: string;
  ops: Prepared[];
}

/** A scope's journal row: its owner, its seq, and which entry is the newest committed one. */
interface Head {
  owner: number | null;
  seq: number | null;
  lastTs: number;
  lastEntry: number | null;
  /** The writer that committed it (a writer is named by the seq its claim wrote, unique per scope). */
  lastWriter: number | null;
  /** The entry committed before it, and its writer (a writer may have two entries unapplied). */
  prevEntry: number | null;
  prevWriter: number | null;
}

/** Entries a writer may have committed and not yet applied: commits are pipelined this deep, and a claim replays this many. */
export const PIPELINE = 2;

/** What a Writer needs from the store (kept off the Store's public surface). */
interface Journal {
  now(): number;
  plan(ops: WriteOp[]): Entry[];
  append(scope: string, token: number, writer: number, expectedSeq: number, entrySeq: number, ts: number, text: string, prev: { entry: number | null; writer: number | null }): Promise<boolean>;
  apply(info: ApplyInfo, ops: Prepared[], viaHook: boolean): Promise<void>;
}

export class CassandraStore implements Store, Scannable {
  private readonly client: cassandra.Client;
  private readonly ks: string;
  private readonly schemas = new Map<string, TableSchema>();
  private readonly consistency: number;
  private readonly serialConsistency: number;
  private readonly maxBatchBytes: number;
  private readonly maxBatchOps: number;
  private readonly maxConcurrentBatches: number;
  private readonly maxEntryBytes: number;
  private readonly claimAttempts: number;
  private readonly schemaAgreementTimeoutMs: number;
  private readonly clock: () => number;
  private applyHook: ApplyHook | undefined;
  private readonly journal: Journal;

  constructor(
    private readonly opts: CassandraStoreOptions,
    tables: readonly TableSchema[] = TABLE_SCHEMAS,
  ) {
    if (!KEYSPACE_NAME.test(opts.keyspace)) throw new Error(`invalid keyspace name ${JSON.stringify(opts.keyspace)}`);
    if (opts.contactPoints.length === 0) throw new Error('no Cassandra contact points');
    for (const schema of tables) {
      if (!TABLE_NAME.test(schema.name) || schema.name === JOURNAL) throw new Error(`invalid table name ${JSON.stringify(schema.name)}`);
      this.schemas.set(schema.name, schema);
    }
    this.ks = opts.keyspace;
    this.consistency = opts.consistency ?? consistencies.localQuorum;
    this.serialConsistency = opts.serialConsistency ?? consistencies.serial;
    this.maxBatchBytes = opts.maxBatchBytes ?? 32 * 1024;
    this.maxBatchOps = opts.maxBatchOps ?? 256;
    this.maxConcurrentBatches = opts.maxConcurrentBatches ?? 8;
    this.maxEntryBytes = opts.maxEntryBytes ?? 4 * 1024 * 1024;
    this.claimAttempts = opts.claimAttempts ?? 16;
    this.schemaAgreementTimeoutMs = opts.schemaAgreementTimeoutMs ?? 30_000;
    this.clock = opts.clockMicros ?? (() => Date.now() * 1000);
    this.applyHook = opts.applyHook;
    const port = portOf(opts.contactPoints[0]!);
    this.client = new cassandra.Client({
      // The driver accepts 'host:port' per contact point; protocolOptions.port is for the peers it discovers.
      contactPoints: opts.contactPoints,
      localDataCenter: opts.localDataCenter,
      protocolOptions: { port, maxSchemaAgreementWaitSeconds: Math.ceil(this.schemaAgreementTimeoutMs / 1000) },
      queryOptions: { consistency: this.consistency, serialConsistency: this.serialConsistency, prepare: true },
      // The driver's default waits up to 10 minutes between attempts, doubling from 1 s: after an
      // outage of half a minute the cluster stayed unable to write for up to 16 s more once
      // Cassandra was back (test/cluster/chaos.test.ts). At most 2 s keeps recovery prompt.
      policies: { reconnection: new cassandra.policies.reconnection.ExponentialReconnectionPolicy(250, 2000, false) },
    });
    this.journal = {
      now: () => this.clock(),
      plan: (ops) => this.plan(ops),
      append: (...args) => this.append(...args),
      apply: (info, ops, viaHook) => this.apply(info, ops, viaHook),
    };
  }

  /** Connects (so a wrong address fails here, not at the first query); call init() next. */
  static async connect(opts: CassandraStoreOptions, tables: readonly TableSchema[] = TABLE_SCHEMAS): Promise<CassandraStore> {
    const store = new CassandraStore(opts, tables);
    try {
      await store.client.connect();
    } catch (err) {
      await store.client.shutdown().catch(() => {});
      throw err;
    }
    return store;
  }

  /** Installs or removes the fault-injection hook of data applies (storage/faulty.ts). */
  setApplyHook(hook: ApplyHook | undefined): void {
    this.applyHook = hook;
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
    for (const { name, ck } of this.schemas.values()) {
      if (existing.has(name)) continue;
      creates.push(`CREATE TABLE IF NOT EXISTS ${this.ks}.${name} (pk text, ck ${ck}, v text, PRIMARY KEY ((pk), ck)) WITH CLUSTERING ORDER BY (ck ASC)`);
    }
    if (!existing.has(JOURNAL)) {
      creates.push(
        `CREATE TABLE IF NOT EXISTS ${this.ks}.${JOURNAL} (scope text, owner bigint, seq bigint, last_ts bigint, last_entry bigint, last_writer bigint, prev_entry bigint, prev_writer bigint, PRIMARY KEY (scope))`,
      );
    }
    if (!existing.has(ENTRIES)) {
      // Rows of earlier writers are never read again: they expire.
      creates.push(
        `CREATE TABLE IF NOT EXISTS ${this.ks}.${ENTRIES} (scope text, writer bigint, slot int, entry_seq bigint, ts bigint, opsz blob, PRIMARY KEY ((scope), writer, slot)) ` +
          `WITH default_time_to_live = ${ENTRY_TTL_SECS}`,
      );
    }
    // One at a time: each schema change waits for agreement anyway, and a single node applies them serially.
    for (const cql of creates) await this.ddl(cql);
    await this.awaitSchemaAgreement();
  }

  async get<V>(table: string, pk: string, ck: Key): Promise<V | undefined> {
    checkKey(this.schema(table), ck);
    const t0 = performance.now();
    const rs = await this.client.execute(`SELECT v FROM ${this.ks}.${table} WHERE pk = ? AND ck = ?`, [pk, ck], this.readOptions());
    STATS.get.observe(secondsSince(t0));
    const row = rs.first();
    return row ? (JSON.parse(row['v'] as string) as V) : undefined;
  }

  async range<V>(table: string, pk: string, opts: RangeOptions = {}): Promise<Row<V>[]> {
    const schema = this.schema(table);
    const { reverse = false } = opts;
    const gte = opts.gte === undefined ? undefined : bound(schema, opts.gte, 'gte');
    const lte = opts.lte === undefined ? undefined : bound(schema, opts.lte, 'lte');
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
    const t0 = performance.now();
    const rs = await this.client.execute(cql, params, { ...this.readOptions(), fetchSize: bounded ? Math.min(limit, 5000) : 5000 });
    // Iterating the result set fetches the further pages of a long slice.
    for await (const row of rs) rows.push({ ck: fromCk(row['ck'] as Long | string), value: JSON.parse(row['v'] as string) as V });
    STATS.range.observe(secondsSince(t0));
    return rows;
  }

  /** See Scannable: the whole table, a page of 1,000 rows at a time, in token order; the prefix is checked here. */
  async *scan<V>(table: string, pkPrefix: string): AsyncIterable<ScannedRow<V>> {
    this.schema(table);
    const rs = await this.client.execute(`SELECT pk, ck, v FROM ${this.ks}.${table}`, [], { ...this.readOptions(), fetchSize: 1000 });
    for await (const row of rs) {
      const pk = row['pk'] as string;
      if (pk.startsWith(pkPrefix)) yield { pk, ck: fromCk(row['ck'] as Long | string), value: JSON.parse(row['v'] as string) as V };
    }
  }

  /**
   * See Store.claim. Here: an LWT moves `owner` to `token` and bumps `seq`
   * (which also supersedes earlier writers of the same token), then the
   * newest journal entry is replayed, then the writer is returned. Rejects
   * (outcome unknown: the claim may or may not have taken effect; claim
   * again) on a timeout, or after `claimAttempts` rounds lost to racers.
   */
  async claim(scope: string, token: number): Promise<Writer | null> {
    checkToken(token);
    const t0 = performance.now();
    try {
      return await this.claimNow(scope, token);
    } finally {
      STATS.claim.observe(secondsSince(t0));
    }
  }

  private async claimNow(scope: string, token: number): Promise<Writer | null> {
    // A plain read is enough for a first guess: the LWT checks it.
    const guess = await this.client.execute(`SELECT owner, seq FROM ${this.ks}.${JOURNAL} WHERE scope = ?`, [scope], this.readOptions());
    let owner = toNumber(guess.first()?.['owner']);
    let seq = toNumber(guess.first()?.['seq']);
    let claimedSeq: number | undefined;
    for (let attempt = 0; attempt < this.claimAttempts; attempt++) {
      // Only Paxos writes owner, so a greater owner seen by any read really claimed the scope.
      if (owner !== null && owner > token) return null;
      const next = (seq ?? 0) + 1;
      const rs = await this.client.execute(
        `UPDATE ${this.ks}.${JOURNAL} SET owner = ?, seq = ? WHERE scope = ? IF owner = ? AND seq = ?`,
        [token, next, scope, owner, seq],
        this.lwtOptions(),
      );
      if (rs.wasApplied()) {
        claimedSeq = next;
        break;
      }
      // Not applied: the answer holds the current values; try again with them (after a little jitter if this is a crowd).
      owner = toNumber(rs.first()?.['owner']);
      seq = toNumber(rs.first()?.['seq']);
      if (attempt >= 2) await sleep(Math.random() * 10 * attempt);
    }
    if (claimedSeq === undefined) throw new Error(`claim(${scope}, ${token}): no decision after ${this.claimAttempts} rounds of racing claims or commits`);

    const head = await this.readHead(scope);
    if (head.owner !== null && head.owner > token) return null; // a greater claim came right after ours
    await this.replayNewest(scope, token, head);
    return new CassandraWriter(this.journal, scope, token, claimedSeq, claimedSeq, head.lastTs, { entry: head.lastEntry, writer: head.lastWriter });
  }

  async close(): Promise<void> {
    await this.client.shutdown();
  }

  // ---- journal -------------------------------------------------------------

  /** The scope's journal row, read at SERIAL (any Paxos round in progress is finished first). */
  private async readHead(scope: string): Promise<Head> {
    const rs = await this.client.execute(`SELECT owner, seq, last_ts, last_entry, last_writer, prev_entry, prev_writer FROM ${this.ks}.${JOURNAL} WHERE scope = ?`, [scope], this.serialReadOptions());
    const row = rs.first();
    return {
      owner: toNumber(row?.['owner']),
      seq: toNumber(row?.['seq']),
      lastTs: toNumber(row?.['last_ts']) ?? 0,
      lastEntry: toNumber(row?.['last_entry']),
      lastWriter: toNumber(row?.['last_writer']),
      prevEntry: toNumber(row?.['prev_entry']),
      prevWriter: toNumber(row?.['prev_writer']),
    };
  }

  /**
   * Re-applies the newest committed entries (the last PIPELINE of them, in
   * order) with their own timestamps: see the top of the file for why those
   * suffice.
   */
  private async replayNewest(scope: string, token: number, head: Head): Promise<void> {
    const entries: Array<[number | null, number | null]> = [
      [head.prevEntry, head.prevWriter],
      [head.lastEntry, head.lastWriter],
    ];
    for (const [entry, writer] of entries) {
      if (entry === null || writer === null) continue;
      const rs = await this.client.execute(`SELECT entry_seq, ts, opsz FROM ${this.ks}.${ENTRIES} WHERE scope = ? AND writer = ? AND slot = ?`, [scope, writer, entry % RING], this.readOptions());
      const row = rs.first();
      const ts = toNumber(row?.['ts']);
      const packed = row?.['opsz'] as Buffer | null | undefined;
      if (!row || !packed || ts === null || toNumber(row['entry_seq']) !== entry) {
        // Written at LOCAL_QUORUM before its commit, so it is there unless it expired: a scope nobody
        // claimed for ENTRY_TTL_SECS, whose writer had died while applying it. Nothing can be done then.
        storeLog.error({ scope, entry }, 'a committed journal entry is gone (expired); it cannot be replayed');
        continue;
      }
      const prepared = this.parseEntry(scope, unpackEntry(packed));
      await this.apply({ scope, token, entrySeq: entry, ts, rows: prepared.length }, prepared, false);
    }
  }

  /**
   * Appends (commits) an entry: its ops are written first, in a row of the
   * writer's own (token, slot), then an LWT makes it the scope's newest
   * entry if the writer still holds the scope. Only that small LWT goes
   * through Paxos; an entry row whose LWT failed is never read.
   */
  private async append(scope: string, token: number, writer: number, expectedSeq: number, entrySeq: number, ts: number, text: string, prev: { entry: number | null; writer: number | null }): Promise<boolean> {
    await this.client.execute(
      `INSERT INTO ${this.ks}.${ENTRIES} (scope, writer, slot, entry_seq, ts, opsz) VALUES (?, ?, ?, ?, ?, ?)`,
      [scope, writer, entrySeq % RING, entrySeq, ts, packEntry(text)],
      { prepare: true, consistency: this.consistency, isIdempotent: true },
    );
    const rs = await this.client.execute(
      `UPDATE ${this.ks}.${JOURNAL} SET seq = ?, last_ts = ?, last_entry = ?, last_writer = ?, prev_entry = ?, prev_writer = ? WHERE scope = ? IF owner = ? AND seq = ?`,
      [entrySeq, ts, entrySeq, writer, prev.entry, prev.writer, scope, token, expectedSeq],
      this.lwtOptions(),
    );
    return rs.wasApplied();
  }

  /**
   * Validates and prepares `ops`, keeps the last op per row, and cuts them
   * into entries of at most maxEntryBytes of JSON. Throws before anything is
   * written: unknown table, clustering key of the wrong type, a value that is
   * not JSON, or one op larger than an entry.
   */
  private plan(ops: WriteOp[]): Entry[] {
    const prepared: Array<{ p: Prepared; element: string; bytes: number }> = [];
    for (const op of ops) {
      const schema = this.schema(op.table);
      checkKey(schema, op.ck);
      let element: string;
      let p: Prepared;
      if (op.op === 'delete') {
        element = JSON.stringify(['d', op.table, op.pk, op.ck]);
        p = this.statement(op.table, op.pk, op.ck, undefined);
      } else {
        const json = JSON.stringify(op.value) as string | undefined;
        if (json === undefined) throw new TypeError(`${op.table}/${op.pk}/${op.ck}: value is not representable as JSON`);
        element = `["p",${JSON.stringify(op.table)},${JSON.stringify(op.pk)},${JSON.stringify(op.ck)},${json}]`;
        p = this.statement(op.table, op.pk, op.ck, json);
      }
      const bytes = Buffer.byteLength(element);
      if (bytes + 2 > this.maxEntryBytes) {
        throw new RangeError(`${op.table}/${op.pk}/${op.ck}: one op is ${bytes} bytes as JSON, over the journal entry limit of ${this.maxEntryBytes} bytes; nothing was written`);
      }
      prepared.push({ p, element, bytes });
    }
    const kept = lastPerRow(prepared, (x) => x.p.row);
    const entries: Entry[] = [];
    let current: typeof kept = [];
    let size = 2;
    const flush = () => {
      entries.push({ text: `[${current.map((x) => x.element).join(',')}]`, ops: current.map((x) => x.p) });
      current = [];
      size = 2;
    };
    for (const x of kept) {
      if (current.length > 0 && size + 1 + x.bytes > this.maxEntryBytes) flush();
      size += (current.length > 0 ? 1 : 0) + x.bytes;
      current.push(x);
    }
    // An empty commit is one empty entry: it still checks the fence, as the embedded store's does.
    if (current.length > 0 || entries.length === 0) flush();
    return entries;
  }

  /** The row writes of a stored entry. */
  private parseEntry(scope: string, text: string): Prepared[] {
    const elements = JSON.parse(text) as unknown;
    if (!Array.isArray(elements)) throw new Error(`journal of ${scope}: entry is not a JSON array`);
    return elements.map((e: unknown) => {
      if (!Array.isArray(e) || (e[0] !== 'p' && e[0] !== 'd') || typeof e[1] !== 'string' || typeof e[2] !== 'string') {
        throw new Error(`journal of ${scope}: malformed op ${JSON.stringify(e)?.slice(0, 200)}`);
      }
      const [kind, table, pk, ck] = e as ['p' | 'd', string, string, Key];
      checkKey(this.schema(table), ck);
      return this.statement(table, pk, ck, kind === 'p' ? JSON.stringify(e[4]) : undefined);
    });
  }

  /** Writes an entry's rows, every statement with the entry's timestamp. */
  private async apply(info: ApplyInfo, ops: Prepared[], viaHook: boolean): Promise<void> {
    if (ops.length === 0) return;
    const batches = this.batches(ops);
    const send = () => eachLimited(batches, this.maxConcurrentBatches, (batch) => this.sendBatch(batch, info.ts));
    const hook = viaHook ? this.applyHook : undefined;
    if (hook) return hook(info, send);
    return send();
  }

  /** Consecutive ops cut at maxBatchOps / maxBatchBytes. Rows are distinct (deduplicated), so order between batches does not matter. */
  /**
   * The ops grouped by partition, each group cut into batches under the size
   * and count limits: a single-partition unlogged batch is one mutation for
   * Cassandra, where one spanning partitions is split by the coordinator (and
   * warned about).
   */
  private batches(ops: Prepared[]): Prepared[][] {
    const byPartition = new Map<string, Prepared[]>();
    for (const p of ops) {
      const list = byPartition.get(p.partition);
      if (list) list.push(p);
      else byPartition.set(p.partition, [p]);
    }
    const batches: Prepared[][] = [];
    for (const group of byPartition.values()) {
      let current: Prepared[] = [];
      let bytes = 0;
      for (const p of group) {
        if (current.length > 0 && (current.length + 1 > this.maxBatchOps || bytes + p.bytes > this.maxBatchBytes)) {
          batches.push(current);
          current = [];
          bytes = 0;
        }
        current.push(p);
        bytes += p.bytes;
      }
      if (current.length > 0) batches.push(current);
    }
    return batches;
  }


  private statement(table: string, pk: string, ck: Key, json: string | undefined): Prepared {
    const partition = JSON.stringify([table, pk]);
    const row = JSON.stringify([table, pk, ck]);
    const keyBytes = Buffer.byteLength(pk) + (typeof ck === 'number' ? 8 : Buffer.byteLength(ck));
    if (json === undefined) {
      return { partition, row, bytes: keyBytes + 48, query: `DELETE FROM ${this.ks}.${table} WHERE pk = ? AND ck = ?`, params: [pk, ck] };
    }
    return { partition, row, bytes: keyBytes + Buffer.byteLength(json) + 48, query: `INSERT INTO ${this.ks}.${table} (pk, ck, v) VALUES (?, ?, ?)`, params: [pk, ck, json] };
  }

  private async sendBatch(batch: Prepared[], timestamp: number): Promise<void> {
    // Idempotent: a retry carries the same timestamp, so it rewrites the same cells with the same values.
    const options: cassandra.QueryOptions = { prepare: true, consistency: this.consistency, isIdempotent: true, timestamp };
    if (batch.length === 1) {
      await this.client.execute(batch[0]!.query, batch[0]!.params, options);
      return;
    }
    await this.client.batch(
      batch.map((p) => ({ query: p.query, params: p.params })),
      { ...options, logged: false },
    );
  }

  // ---- helpers ---------------------------------------------------------------

  private schema(table: string): TableSchema {
    const s = this.schemas.get(table);
    if (!s) throw new Error(`unknown table ${table}`);
    return s;
  }

  private readOptions(): cassandra.QueryOptions {
    return { prepare: true, consistency: this.consistency, isIdempotent: true };
  }

  private serialReadOptions(): cassandra.QueryOptions {
    return { prepare: true, consistency: this.serialConsistency, isIdempotent: true };
  }

  /** Never retried by the driver: a second attempt of an LWT could apply twice or answer "not applied" for our own write. */
  private lwtOptions(): cassandra.QueryOptions {
    return { prepare: true, consistency: this.consistency, serialConsistency: this.serialConsistency, isIdempotent: false };
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
      await sleep(200);
    }
  }
}

/**
 * The right to write one scope. Commits may overlap: each one's journal
 * appends (LWTs) run after those of the commits started before it, and at
 * most PIPELINE committed entries are unapplied at any time (a new append
 * waits for an earlier apply otherwise), which is what a claim's replay of
 * the last PIPELINE entries relies on. A commit's promise does not wait for
 * earlier commits: callers that need order (the actor journal) await in
 * order.
 */
class CassandraWriter implements Writer {
  private fenced = false;
  private failure: { err: unknown } | undefined;
  /** Settles when the appends of the commits started so far are done. */
  private appends: Promise<void> = Promise.resolve();
  /** Committed entries whose data is not yet acknowledged, and who waits for one to finish. */
  private unapplied = 0;
  private applyWaiters: Array<() => void> = [];

  constructor(
    private readonly journal: Journal,
    readonly scope: string,
    readonly token: number,
    /** The journal's seq as of this writer's last LWT: the condition of its next append. */
    private seq: number,
    /** The seq its claim wrote: names this writer's entry rows. */
    private readonly writer: number,
    /** Timestamp of the newest entry this writer knows of; its clock stays above it. */
    private lastTs: number,
    /** The scope's newest committed entry (recorded as `prev` by the next append). */
    private last: { entry: number | null; writer: number | null },
  ) {}

  /**
   * See Writer.commit. Rejects with FencedError when the first entry's append
   * is refused (a greater token, or a later claim of the same token, took the
   * scope): nothing was written, and every later commit is refused too. Any
   * other failure (a timeout of the append, a failed data write, a fence
   * met between the entries of a split commit) leaves the outcome unknown and
   * the writer refuses every later commit: claim the scope again, which
   * replays the committed entries to completion.
   */
  commit(ops: WriteOp[]): Promise<void> {
    return timedCommit(STATS, ops.length, () => this.commitNow(ops));
  }

  private async commitNow(ops: WriteOp[]): Promise<void> {
    this.usable();
    // Invalid ops are refused here, before anything is written; the writer stays usable.
    const entries = this.journal.plan(ops);
    const before = this.appends;
    let done!: () => void;
    this.appends = new Promise<void>((r) => (done = r));
    const applies: Promise<void>[] = [];
    try {
      await before;
      for (const [i, entry] of entries.entries()) {
        this.usable();
        while (this.unapplied >= PIPELINE) await new Promise<void>((r) => this.applyWaiters.push(r));
        this.usable();
        const ts = Math.max(this.journal.now(), this.lastTs + 1);
        const entrySeq = this.seq + 1;
        if (!(await this.journal.append(this.scope, this.token, this.writer, this.seq, entrySeq, ts, entry.text, this.last))) {
          this.fenced = true;
          if (i === 0) throw new FencedError(this.scope);
          throw new Error(`${this.scope}: fenced after ${i} of the ${entries.length} journal entries of one commit were applied`, { cause: new FencedError(this.scope) });
        }
        this.seq = entrySeq;
        this.lastTs = ts;
        this.last = { entry: entrySeq, writer: this.writer };
        this.unapplied++;
        applies.push(
          this.journal.apply({ scope: this.scope, token: this.token, entrySeq, ts, rows: entry.ops.length }, entry.ops, true).finally(() => {
            this.unapplied--;
            this.applyWaiters.shift()?.();
          }),
        );
      }
    } catch (err) {
      this.fail(err);
      throw err;
    } finally {
      done();
    }
    // The next commit's appends may start while this one's data is written.
    try {
      await Promise.all(applies);
    } catch (err) {
      this.fail(err);
      throw err;
    }
  }

  private usable(): void {
    if (this.fenced) throw new FencedError(this.scope);
    if (this.failure) throw new Error(`${this.scope}: this writer had a failed commit and is unusable; claim the scope again`, { cause: this.failure.err });
  }

  private fail(err: unknown): void {
    if (!(err instanceof FencedError)) this.failure ??= { err };
    for (const w of this.applyWaiters.splice(0)) w();
  }
}

function portOf(contactPoint: string): number {
  const m = /^(?:\[[^\]]+\]|[^:[\]]+):(\d+)$/.exec(contactPoint);
  return m ? Number(m[1]) : 9042;
}

/** Bigint tables take safe integers (they come back as JS numbers), text tables strings. */
function checkKey(schema: TableSchema, ck: Key): void {
  if (schema.ck === 'bigint' ? !Number.isSafeInteger(ck) : typeof ck !== 'string') {
    throw new TypeError(`${schema.name}: clustering key must be ${schema.ck === 'bigint' ? 'a safe integer' : 'a string'}, got ${JSON.stringify(ck)}`);
  }
}

/**
 * A range bound as Cassandra takes it. Bounds on bigint tables may be any
 * number, as they may be for the embedded store (readers pass anchors such as
 * 1e16 - 1): rounded inwards, then clamped to the bigint range. Stored keys
 * are safe integers, so that selects the same rows.
 */
function bound(schema: TableSchema, key: Key, side: 'gte' | 'lte'): Key {
  if (schema.ck === 'text') {
    if (typeof key !== 'string') throw new TypeError(`${schema.name}: ${side} must be a string, got ${JSON.stringify(key)}`);
    return key;
  }
  if (typeof key !== 'number' || Number.isNaN(key)) throw new TypeError(`${schema.name}: ${side} must be a number, got ${JSON.stringify(key)}`);
  // The driver's Long.fromNumber saturates at ±2^63, so clamping there covers ±Infinity too.
  return Math.min(2 ** 63, Math.max(-(2 ** 63), side === 'gte' ? Math.ceil(key) : Math.floor(key)));
}

function checkToken(token: number): void {
  if (!Number.isSafeInteger(token) || token < 0) throw new TypeError(`fence token must be a non-negative safe integer, got ${token}`);
}

function fromCk(ck: Long | string): Key {
  return typeof ck === 'string' ? ck : ck.toNumber();
}

function toNumber(v: unknown): number | null {
  if (v == null) return null;
  return typeof v === 'number' ? v : (v as Long).toNumber();
}

/** The items with every row's earlier ops dropped, in the order of the kept ops. */
function lastPerRow<T>(items: T[], rowOf: (item: T) => string): T[] {
  const last = new Map<string, number>();
  items.forEach((x, i) => last.set(rowOf(x), i));
  return last.size === items.length ? items : items.filter((x, i) => last.get(rowOf(x)) === i);
}

/** Runs `fn` over `items` with at most `limit` in flight; rejects with the first failure after all have settled. */
/** A journal entry's ops as stored: a tag byte (0 plain, 1 deflated), then the JSON. */
function packEntry(text: string): Buffer {
  return DEFLATE ? Buffer.concat([Buffer.of(1), deflateRawSync(text, { level: 1 })]) : Buffer.concat([Buffer.of(0), Buffer.from(text)]);
}

function unpackEntry(b: Buffer): string {
  return b[0] === 1 ? inflateRawSync(b.subarray(1)).toString('utf8') : b.subarray(1).toString('utf8');
}

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

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
