/**
 * The realm's checkpoint: loading an organization reads one snapshot and the
 * journal since, not every user's tables.
 *
 * The realm actor's state is built from the rows of the tables it owns
 * (`IMAGE_TABLES`). Its `RealmImage` keeps those rows, decoded (the records
 * the state holds), in memory: the rows the load read, then every write the
 * realm commits. Each
 * change's writes to them also go, in the same commit, into a journal row of
 * `realm_journal` (its sequence number `seq`). Every `CHECKPOINT_POLICY`'s
 * journal rows (or bytes of them, or a period after the first since the
 * last, or right after a load that found none) the
 * image at `seq` S is encoded (msgpack records, `CHECKPOINT_VERSION`) beside the mailbox, its chunks
 * are written under a new generation in the commits of the next changes (a
 * few per commit, or an otherwise empty `checkpoint` action when the realm is
 * idle), and then, in one later commit, the header (`realm_checkpoints`:
 * S, the generation, its chunk count, the format, a fingerprint of the
 * codecs and the checksum of the chunks) with the deletion of the journal
 * rows up to S and of the previous generation's chunks.
 *
 * Loading reads the header, the chunks and the journal rows after S and
 * replays them onto the image, then runs `RealmState.load` against the image
 * (`imageStore`: the same code that loads from the tables, so both agree by
 * construction). Rows are validated where they come in, once: a row read
 * from the tables or the journal through its codec; a checkpoint as a whole,
 * by its format, its checksum and the codecs' fingerprint (the realm wrote
 * its rows as records of these codecs; under other codecs each row is
 * decoded again). Without a header, or with one of another format or that
 * does not match its chunks, it loads from the tables, records what it read
 * and writes a checkpoint of the current format.
 *
 * Why nothing answered is lost: a change's journal row is in the change's own
 * commit; the header is written after its chunks, by the same fenced writer,
 * in a later commit, so it is durable only if they and every change up to S
 * are; journal rows up to S go only in the header's commit. A crash anywhere
 * before that commit leaves the previous header and every journal row after
 * it. Rows of these tables written by anything but the realm actor (an
 * operator tool writing the store of a stopped server) must drop the header
 * (`forgetCheckpoint`), or the next load would not see them.
 */
import { createHash } from 'node:crypto';
import { Packr, Unpackr } from 'msgpackr';
import { log } from '../../../lib/log.ts';
import type { Key, RangeOptions, Row, Store, WriteOp } from '../../../storage/store.ts';
import { codecShapes, decodeRow, REALM_JOURNAL_BUCKET as JOURNAL_BUCKET, type RealmCheckpointHead, T, tableSchema } from '../../../storage/tables.ts';

/**
 * The format of the checkpoints written: 2, the rows as msgpack records
 * (partitions of [table, pk, [ck, value, ...]] in slices), uncompressed.
 * A header of another format (1: gzipped JSON lines of JSON text) is not
 * read: the realm loads from its tables and replaces it.
 */
export const CHECKPOINT_VERSION = 2;
const MSGPACK = { useRecords: true } as const;

/** The tables a realm's state is built from (what `RealmState.load` and `OrgState.load` read), all written by the realm actor only. */
export const IMAGE_TABLES: ReadonlySet<string> = new Set(
  [
    T.realms, T.allocators, T.users, T.channels, T.subscriptions, T.dmConversations, T.scheduledMessages, T.realmSettings, T.orgAllocators,
    T.channelFolders, T.linkifiers, T.playgrounds, T.invites, T.videoProviderTokens, T.channelTraffic, T.userSettings, T.userSettingsEdited,
    T.realmUserDefaults, T.userGroups, T.profileFields, T.userTopics, T.realmEmoji, T.channelTopics, T.mutedUsers, T.alertWords,
    T.unsubscribeKeys, T.missedEmails, T.pushDevices, T.activePushes, T.userActivity, T.userDigests, T.digestRuns, T.retentionRuns, T.realmExports,
    T.clientDevices,
  ].map((t) => t.schema.name),
);

const envInt = (name: string, fallback: number): number => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
/**
 * When a checkpoint is taken and how it is cut: after `every` journal rows
 * (PARLEY_CHECKPOINT_EVERY) or `bytes` of them, or `periodMs` after the
 * first journal row since the last; `chunkBytes` of gzip per chunk row (as
 * base64, well under a Cassandra journal entry's 4 MiB), `chunksPerCommit`
 * chunk rows with one change. Tests lower them.
 */
export const CHECKPOINT_POLICY = {
  every: envInt('PARLEY_CHECKPOINT_EVERY', 10_000),
  bytes: envInt('PARLEY_CHECKPOINT_BYTES', 64 << 20),
  periodMs: envInt('PARLEY_CHECKPOINT_PERIOD_MS', 10 * 60_000),
  chunkBytes: 1 << 20,
  chunksPerCommit: 2,
};
/** Ops journaled in one row at most (a bulk change becomes several rows). */
const OPS_PER_ROW = 500;
/** Rows of the image encoded between two yields to the event loop. */
const SLICE = 5000;

/** A write in a journal row: table, partition key, clustering key, value as JSON (null: deleted). */
type Entry = [string, string, Key, string | null];

/** table -> partition key -> clustering key -> the row's record (as its codec decodes it). */
type Rows = Map<string, Map<string, Map<Key, unknown>>>;

/** Rows of one partition in a checkpoint: table, partition key, then clustering key and record in turn. */
type Slice = Array<[string, string, unknown[]]>;

const normalCk = (table: string, ck: Key): Key => (tableSchema(table).ck === 'bigint' ? Number(ck) : String(ck));

/** The image tables as a checkpoint's header lists them. */
const IMAGE_TABLE_LIST = [...IMAGE_TABLES].sort();

let shape: string | null = null;
/** A fingerprint of the image tables' codecs: a checkpoint written under others has its rows decoded again. */
export function imageShape(): string {
  shape ??= createHash('sha256').update(codecShapes(IMAGE_TABLES)).digest('hex').slice(0, 16);
  return shape;
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

export interface CheckpointStats {
  /** How the last load got its rows: 'checkpoint' or 'tables'. */
  loadedFrom: 'checkpoint' | 'tables';
  /** Journal rows replayed at load. */
  replayed: number;
  /** The seq of the header loaded (0 without one). */
  checkpointSeq: number;
  /** Image tables the loaded checkpoint lacked, read from the store (an older build's checkpoint). */
  readFromTables?: string[];
}

/** The realm's journal lacks rows between the checkpoint and its newest row. */
class JournalGap extends Error {}

export class RealmImage {
  private readonly rows: Rows = new Map();
  /** The newest journal row written (or found at load). */
  seq = 0;
  /** The seq of the newest checkpoint whose header is written or loaded. */
  checkpointSeq = 0;
  private checkpointGen: string | null = null;
  private checkpointChunks = 0;
  /** Journal bytes since the newest checkpoint. */
  private bytesSince = 0;
  /** A checkpoint being made: its chunks once gzipped, how many are written. */
  private making: { seq: number; gen: string; chunks: string[] | null; checksum: string; written: number; failed: boolean } | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Whether a tool wrote rows the checkpoint lacks (`forgetCheckpoint`): the next header clears it. */
  private stale = false;
  /** Asks the realm to run an otherwise empty change, whose commit carries pending chunks (set by the actor). */
  kick: () => void = () => {};
  stats: CheckpointStats = { loadedFrom: 'tables', replayed: 0, checkpointSeq: 0 };

  constructor(readonly realmId: number) {}

  /**
   * Reads the newest checkpoint and the journal after it; returns the store
   * to load the state from: the image (with reads of other tables passed
   * on) or, without a checkpoint, the tables themselves, recording what is
   * read. `fromTables` ignores the checkpoint (tests compare the two).
   */
  async open(store: Store, opts: { fromTables?: boolean } = {}): Promise<Store> {
    const [head, stale] = await Promise.all([T.realmCheckpoints.at(this.realmId, 'head').get(store), T.realmCheckpoints.at(this.realmId, 'stale').get(store)]);
    this.stale = stale !== undefined;
    if (!head || stale || opts.fromTables || head.version !== CHECKPOINT_VERSION) return this.openTables(store, head);
    const chunks = await T.realmCheckpointChunks.partition(this.realmId, head.gen).values(store);
    // A load is a macrotask at least (the embedded store answers in microtasks): a realm failing and
    // loading again in a loop must not starve the event loop.
    await new Promise((r) => setImmediate(r));
    const bytes = Buffer.concat(chunks.map((c) => Buffer.from(c.data, 'base64')));
    if (chunks.length !== head.chunks || sha256(bytes) !== head.checksum) {
      log.warn({ realmId: this.realmId, gen: head.gen, chunks: chunks.length, of: head.chunks }, 'realm checkpoint does not match its header: loading from the tables');
      return this.openTables(store, head);
    }
    // Rows written under other codecs (a checkpoint of an older build) are decoded by today's.
    const trusted = head.shape === imageShape();
    // Image tables an older build did not checkpoint (nor journal): their rows are only in the store. A header
    // that does not list its tables and was written under other codecs may lack any of them: the tables are read.
    if (!head.tables && !trusted) return this.openTables(store, head);
    const held = new Set(head.tables ?? IMAGE_TABLES);
    const missing = new Set([...IMAGE_TABLES].filter((table) => !held.has(table)));
    try {
      // An empty image (a realm with no rows) is written as no bytes at all.
      if (bytes.length) {
        new Unpackr(MSGPACK).unpackMultiple(bytes, (slice: Slice) => {
          for (const [table, pk, flat] of slice) {
            // A table no longer in the image (this build does not load it), or read from the store, is left out.
            if (!IMAGE_TABLES.has(table) || missing.has(table)) continue;
            for (let i = 0; i < flat.length; i += 2) {
              const ck = flat[i] as Key;
              this.put(table, pk, ck, trusted ? flat[i + 1] : decodeRow(table, pk, ck, flat[i + 1]));
            }
          }
        });
      }
    } catch (err) {
      log.warn({ err, realmId: this.realmId, gen: head.gen }, 'realm checkpoint does not decode: loading from the tables');
      this.rows.clear();
      return this.openTables(store, head);
    }
    this.checkpointSeq = head.seq;
    this.checkpointGen = head.gen;
    this.checkpointChunks = head.chunks;
    let replayedTo: { seq: number; replayed: number };
    try {
      replayedTo = await this.replay(store, head.seq, missing);
    } catch (err) {
      if (!(err instanceof JournalGap)) throw err;
      // A restore of a Cassandra snapshot taken under writes (one table at a time) may lack journal rows
      // the tables have: the tables are what the realm is, the journal only a copy of them.
      log.warn({ err, realmId: this.realmId, gen: head.gen }, 'realm journal has a gap: loading from the tables');
      this.rows.clear();
      this.bytesSince = 0;
      return this.openTables(store, head, true);
    }
    this.seq = replayedTo.seq;
    this.stats = { loadedFrom: 'checkpoint', replayed: replayedTo.replayed, checkpointSeq: head.seq, readFromTables: [...missing] };
    return imageStore(store, this, missing);
  }

  /** Loading from the tables: what is read is recorded, and written as a checkpoint once loaded. */
  private async openTables(store: Store, head: RealmCheckpointHead | undefined, journalGap = false): Promise<Store> {
    // The journal goes on from the newest row written: a seq is never reused.
    const afterHead = head && !journalGap ? await this.replay(store, head.seq, null).catch((err: unknown) => (err instanceof JournalGap ? null : Promise.reject(err))) : null;
    this.seq = afterHead ? afterHead.seq : await newestJournalSeq(store, this.realmId, head?.seq ?? 0);
    this.checkpointSeq = this.seq;
    if (head) {
      // The rows of the checkpoint it replaces are deleted with the next one's header.
      this.checkpointGen = head.gen;
      this.checkpointChunks = head.chunks;
    }
    this.stats = { loadedFrom: 'tables', replayed: 0, checkpointSeq: 0 };
    return recordingStore(store, this);
  }

  /**
   * Reads the journal rows after `from`, numbered without gaps; with `apply` (the tables the image reads
   * from the store instead), applies their writes to the image's other tables.
   */
  private async replay(store: Store, from: number, apply: ReadonlySet<string> | null): Promise<{ seq: number; replayed: number }> {
    let seq = from;
    let replayed = 0;
    for (let bucket = Math.floor((from + 1) / JOURNAL_BUCKET); ; bucket++) {
      const rows = await T.realmJournal.partition(this.realmId, bucket).range(store, { gte: from + 1 });
      for (const r of rows) {
        const next = Number(r.ck);
        if (next !== seq + 1) throw new JournalGap(`realm ${this.realmId}: journal row ${next} follows ${seq}`);
        // Journal rows may be of an older build: each row is decoded by today's codec.
        if (apply) {
          for (const [table, pk, ck, json] of r.value.ops) {
            if (!IMAGE_TABLES.has(table) || apply.has(table)) continue;
            this.put(table, pk, ck, json === null ? undefined : decodeRow(table, pk, ck, JSON.parse(json)));
          }
        }
        seq = next;
        this.bytesSince += JSON.stringify(r.value.ops).length;
        replayed++;
      }
      // A bucket that does not reach its end is the last, unless rows at its end are missing: a row in the
      // next bucket is then a gap too (the realm must not go on numbering below rows that exist).
      if (seq < (bucket + 1) * JOURNAL_BUCKET - 1) {
        const [later] = await T.realmJournal.partition(this.realmId, bucket + 1).range(store, { limit: 1 });
        if (later) throw new JournalGap(`realm ${this.realmId}: journal row ${later.ck} follows ${seq}`);
        return { seq, replayed };
      }
    }
  }

  /** After the state is built: a load that read tables is checkpointed at once (the next load reads the checkpoint instead). */
  loaded(): void {
    if (this.stats.loadedFrom === 'tables' || this.stats.readFromTables?.length) this.begin();
    else if (this.seq > this.checkpointSeq) this.arm();
  }

  /** Records a row (its decoded record; undefined: deleted) read from, or written to, a table of the image. */
  put(table: string, pk: string, ck: Key, value: unknown): void {
    ck = normalCk(table, ck);
    let part = this.rows.get(table)?.get(pk);
    if (value === undefined) {
      part?.delete(ck);
      return;
    }
    if (!part) {
      let t = this.rows.get(table);
      if (!t) this.rows.set(table, (t = new Map()));
      t.set(pk, (part = new Map()));
    }
    part.set(ck, value);
  }

  partition(table: string, pk: string): Map<Key, unknown> | undefined {
    return this.rows.get(table)?.get(pk);
  }

  /**
   * The writes to add to a change's commit (called in the mailbox, in commit
   * order): its journal rows, and the next part of a checkpoint in progress.
   */
  journalWrites(ops: readonly WriteOp[]): WriteOp[] {
    const out: WriteOp[] = [];
    let entries: Entry[] = [];
    const flush = () => {
      if (!entries.length) return;
      const seq = ++this.seq;
      out.push(T.realmJournal.at(this.realmId, seq).put({ ops: entries }));
      entries = [];
    };
    for (const op of ops) {
      if (!IMAGE_TABLES.has(op.table)) continue;
      const json = op.op === 'put' ? JSON.stringify(op.value) : null;
      this.put(op.table, op.pk, op.ck, op.op === 'put' ? op.value : undefined);
      this.bytesSince += (json?.length ?? 0) + op.pk.length + 32;
      entries.push([op.table, op.pk, op.ck, json]);
      if (entries.length >= OPS_PER_ROW) flush();
    }
    flush();
    if (out.length) this.arm();
    if (!this.making && (this.seq - this.checkpointSeq >= CHECKPOINT_POLICY.every || this.bytesSince >= CHECKPOINT_POLICY.bytes)) this.begin();
    out.push(...this.nextParts());
    return out;
  }

  /** Whether a checkpoint is waiting for a commit to carry its parts. */
  get pending(): boolean {
    return !this.closed && this.making?.chunks != null;
  }

  /** Starts a checkpoint of the image as it is now (at `seq`): encoded beside the mailbox. */
  private begin(): void {
    if (this.making) return;
    const seq = this.seq;
    const making = { seq, gen: `${seq}-${Date.now().toString(36)}`, chunks: null as string[] | null, checksum: '', written: 0, failed: false };
    this.making = making;
    // The rows as they are now, cut into slices. A record changed in place later is written again
    // with that change, which goes to the journal after `seq`: replaying it gives the same row.
    const slices: Slice[] = [];
    let slice: Slice = [];
    let rows = 0;
    for (const [table, parts] of this.rows) {
      for (const [pk, part] of parts) {
        let flat: unknown[] = [];
        for (const [ck, value] of part) {
          if (rows >= SLICE) {
            if (flat.length) slice.push([table, pk, flat]);
            slices.push(slice);
            slice = [];
            flat = [];
            rows = 0;
          }
          flat.push(ck, value);
          rows++;
        }
        if (flat.length) slice.push([table, pk, flat]);
      }
    }
    if (slice.length) slices.push(slice);
    void serialize(slices).then(
      ({ chunks, checksum }) => {
        making.chunks = chunks;
        making.checksum = checksum;
        this.kick();
      },
      (err: unknown) => {
        // Nothing written yet: the next trigger tries again.
        log.warn({ err, realmId: this.realmId }, 'realm checkpoint could not be encoded');
        if (this.making === making) this.making = null;
      },
    );
  }

  /** Up to CHUNKS_PER_COMMIT chunk rows of the checkpoint in progress, then its header (with the cleanup of what it replaces). */
  private nextParts(): WriteOp[] {
    const m = this.making;
    if (!m?.chunks) return [];
    const out: WriteOp[] = [];
    while (m.written < m.chunks.length && out.length < CHECKPOINT_POLICY.chunksPerCommit) {
      out.push(T.realmCheckpointChunks.at(this.realmId, m.gen, m.written).put({ data: m.chunks[m.written]! }));
      m.written++;
    }
    if (out.length) {
      // More to write: an idle realm is asked for another change.
      queueMicrotask(() => this.kick());
      return out;
    }
    out.push(T.realmCheckpoints.at(this.realmId, 'head').put({ seq: m.seq, gen: m.gen, chunks: m.chunks.length, version: CHECKPOINT_VERSION, shape: imageShape(), checksum: m.checksum, tables: IMAGE_TABLE_LIST }));
    if (this.stale) out.push(T.realmCheckpoints.at(this.realmId, 'stale').delete());
    this.stale = false;
    for (let s = this.checkpointSeq + 1; s <= m.seq; s++) out.push(T.realmJournal.at(this.realmId, s).delete());
    if (this.checkpointGen) for (let i = 0; i < this.checkpointChunks; i++) out.push(T.realmCheckpointChunks.at(this.realmId, this.checkpointGen, i).delete());
    this.checkpointSeq = m.seq;
    this.checkpointGen = m.gen;
    this.checkpointChunks = m.chunks.length;
    this.bytesSince = 0;
    this.making = null;
    return out;
  }

  /** A checkpoint CHECKPOINT_PERIOD_MS after the first journal row since the last (one timer at a time; unref'd). */
  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.seq > this.checkpointSeq) this.begin();
    }, CHECKPOINT_POLICY.periodMs);
    this.timer.unref();
  }

  /** Stops the periodic checkpoint and the requests for empty changes (the actor is unloaded, or its host broke). */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.kick = () => {};
  }
}

/**
 * The image's slices as msgpack records (each slice on its own, with the
 * structures of its records), cut into base64 chunks, with the
 * checksum of their bytes; yields to the event loop between slices.
 */
async function serialize(slices: Slice[]): Promise<{ chunks: string[]; checksum: string }> {
  const packr = new Packr(MSGPACK);
  const parts: Buffer[] = [];
  for (const slice of slices) {
    // Copied: a Packr reuses its buffer.
    parts.push(Buffer.from(packr.pack(slice)));
    await new Promise((r) => setImmediate(r));
  }
  const bytes = Buffer.concat(parts);
  const chunks: string[] = [];
  for (let i = 0; i < bytes.length; i += CHECKPOINT_POLICY.chunkBytes) chunks.push(bytes.subarray(i, i + CHECKPOINT_POLICY.chunkBytes).toString('base64'));
  if (!chunks.length) chunks.push('');
  return { chunks, checksum: sha256(bytes) };
}

/**
 * The newest journal row of a realm, at least `from` (the checkpoint's seq; the rows up to it are deleted
 * with it): buckets are read from the checkpoint's on, up to two empty ones in a row.
 */
async function newestJournalSeq(store: Store, realmId: number, from: number): Promise<number> {
  let newest = from;
  for (let bucket = Math.floor(from / JOURNAL_BUCKET); ; bucket++) {
    const [row] = await T.realmJournal.partition(realmId, bucket).range(store, { reverse: true, limit: 1 });
    if (row) newest = Math.max(newest, Number(row.ck));
    // An empty bucket ends the journal unless the next has rows (rows missing across a bucket's end).
    else if (!(await T.realmJournal.partition(realmId, bucket + 1).range(store, { limit: 1 })).length) return newest;
  }
}

/** Reads go to `store`; rows of the image's tables are decoded (once) and recorded into `image` as they are read. */
function recordingStore(store: Store, image: RealmImage): Store {
  return {
    ...passThrough(store),
    decodedTables: IMAGE_TABLES,
    async get<V>(table: string, pk: string, ck: Key): Promise<V | undefined> {
      const raw = await store.get<unknown>(table, pk, ck);
      if (raw === undefined || !IMAGE_TABLES.has(table)) return raw as V | undefined;
      const v = decodeRow(table, pk, ck, raw);
      image.put(table, pk, ck, v);
      return v as V;
    },
    async range<V>(table: string, pk: string, opts?: RangeOptions): Promise<Row<V>[]> {
      const rows = await store.range<unknown>(table, pk, opts);
      if (!IMAGE_TABLES.has(table)) return rows as Row<V>[];
      return rows.map((r) => {
        const value = decodeRow(table, pk, r.ck, r.value);
        image.put(table, pk, r.ck, value);
        return { ck: r.ck, value: value as V };
      });
    },
  };
}

/**
 * Reads of the image's tables are answered from the image (its records, decoded already); others go to
 * `store`, and the image tables the checkpoint lacked (`missing`) are read from it and recorded.
 */
function imageStore(store: Store, image: RealmImage, missing: ReadonlySet<string>): Store {
  const recording = recordingStore(store, image);
  return {
    ...passThrough(store),
    decodedTables: IMAGE_TABLES,
    async get<V>(table: string, pk: string, ck: Key): Promise<V | undefined> {
      if (missing.has(table)) return recording.get<V>(table, pk, ck);
      if (!IMAGE_TABLES.has(table)) return store.get<V>(table, pk, ck);
      return image.partition(table, pk)?.get(normalCk(table, ck)) as V | undefined;
    },
    async range<V>(table: string, pk: string, opts: RangeOptions = {}): Promise<Row<V>[]> {
      if (missing.has(table)) return recording.range<V>(table, pk, opts);
      if (!IMAGE_TABLES.has(table)) return store.range<V>(table, pk, opts);
      const part = image.partition(table, pk);
      if (!part) return [];
      let cks = [...part.keys()].filter((ck) => (opts.gte === undefined || ck >= opts.gte) && (opts.lte === undefined || ck <= opts.lte));
      cks.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      if (opts.reverse) cks.reverse();
      if (opts.limit !== undefined) cks = cks.slice(0, opts.limit);
      return cks.map((ck) => ({ ck, value: part.get(ck) as V }));
    },
  };
}

function passThrough(store: Store): Store {
  return {
    init: () => store.init(),
    get: (table, pk, ck) => store.get(table, pk, ck),
    range: (table, pk, opts) => store.range(table, pk, opts),
    claim: (scope, token) => store.claim(scope, token),
    close: () => store.close(),
  };
}

/**
 * The write that makes the next load of a realm read its tables instead of
 * its checkpoint: for tools that write a realm's rows into the store of a
 * stopped server (bench/lib/grow.ts).
 */
export function forgetCheckpoint(realmId: number): WriteOp {
  return T.realmCheckpoints.at(realmId, 'stale').put({ seq: 0, gen: '', chunks: 0, version: CHECKPOINT_VERSION, shape: '', checksum: '' });
}
