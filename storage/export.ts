/**
 * Export one organization (realm) to a file and import it into another
 * deployment, embedded or cluster, over the Store interface: one code path
 * for both stores.
 *
 * The file is gzipped JSON lines:
 *
 *   {"format":"parley-export","version":1,"realmId":7,"exportedAt":...}
 *   {"row":["users","7:0",100,{...}]}        every row of the realm, as stored
 *   {"timer":{...}}                          the realm's and its users' durable timers
 *   {"file":{"path":"7/ab/…/a.png","contentType":…,"filename":…,"data":"<base64>"}}
 *   {"end":{"rows":N,"timers":N,"files":N}}  a file without it is truncated
 *
 * Which rows are the realm's: every table of the catalog keys its partitions
 * by the realm first (`<realm>` or `<realm>:…`), except the three listed in
 * NOT_REALM_TABLES. Uploaded bytes are read and written through the
 * FileStore (a directory embedded, `file_chunks` in a cluster), so an
 * embedded export imports into a cluster and back.
 *
 * IDs are kept: user, channel, message and group IDs are numbered per realm,
 * and upload URLs in message content (`/user_uploads/<realm>/…`) name the
 * realm, so the organization is imported under its own realm ID and every ID
 * and link stays valid. The import therefore refuses a realm ID the target
 * deployment already has (rewriting it would mean rewriting message
 * content, upload paths and every key). The realm's `realms` row is written
 * last, once everything else is durable: until then the organization does
 * not exist for the server, and a failed import can simply be run again.
 *
 * Consistency: the export reads table after table. Embedded, each table is
 * one snapshot; in a cluster a scan sees rows written meanwhile or not. For
 * an exact picture export an organization nobody writes to (deactivated, or
 * from a restored backup).
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import { realmRef } from '../actors/realm/ref.ts';
import type { ActorRef } from '../actors/runtime/registry.ts';
import { shardOf } from '../actors/subjects.ts';
import { userRef } from '../actors/user/ref.ts';
import type { FileStore } from './files.ts';
import type { Key, Scannable, Store, WriteOp } from './store.ts';
import { T, TimerRecord, type Table } from './tables.ts';

export const EXPORT_VERSION = 1;

/**
 * Tables not partitioned by realm: timers (per shard; the realm's are
 * exported apart), the timer cursors, file bytes (read through the
 * FileStore), and the deployment's directory of organizations (the target
 * registers the imported one in its own).
 */
export const NOT_REALM_TABLES: ReadonlySet<string> = new Set([T.timers, T.timerCursors, T.fileChunks, T.organizations, T.organizationLinks].map((t) => t.schema.name));

const TABLES = new Map<string, Table<unknown, never[], never[]>>(Object.values(T).map((t) => [t.schema.name, t as unknown as Table<unknown, never[], never[]>]));
/** The tables an export carries, in the order it writes them. */
export const REALM_TABLES: readonly string[] = [...TABLES.keys()].filter((n) => !NOT_REALM_TABLES.has(n));

/** The durable actor kinds whose timers belong to a realm, and where their actors live. */
const TIMER_KINDS: Record<string, ActorRef<unknown>> = { realm: realmRef, user: userRef };

/** Whether a partition key is one of `realmId`'s. */
export const isRealmPartition = (realmId: number, pk: string): boolean => pk === String(realmId) || pk.startsWith(`${realmId}:`);

function isRealmTimer(realmId: number, t: TimerRecord): boolean {
  return t.kind in TIMER_KINDS && (t.actor === String(realmId) || t.actor.startsWith(`${realmId}:`));
}

/** An export or import that cannot be done, with a message for the operator. */
export class ExportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExportError';
  }
}

const Header = (realmId: number) => ({ format: 'parley-export', version: EXPORT_VERSION, realmId, exportedAt: new Date().toISOString() });

export interface ExportCounts {
  rows: number;
  timers: number;
  files: number;
}

/** The export's lines (without newlines), read as they are produced. */
export async function* exportLines(store: Store & Scannable, files: FileStore, realmId: number, counts: ExportCounts = { rows: 0, timers: 0, files: 0 }): AsyncGenerator<string> {
  if (!(await T.realms.at(realmId).get(store))) throw new ExportError(`no organization with realm ID ${realmId} in this deployment`);
  yield JSON.stringify(Header(realmId));
  const paths: string[] = [];
  for (const table of REALM_TABLES) {
    for await (const r of store.scan(table, String(realmId))) {
      if (!isRealmPartition(realmId, r.pk)) continue;
      if (table === T.attachments.schema.name) paths.push((r.value as { path: string }).path);
      if (table === T.realmEmoji.schema.name) paths.push((r.value as { fileName: string }).fileName);
      counts.rows++;
      yield JSON.stringify({ row: [table, r.pk, r.ck, r.value] });
    }
  }
  for await (const r of store.scan<TimerRecord>(T.timers.schema.name, '')) {
    if (!isRealmTimer(realmId, r.value)) continue;
    counts.timers++;
    yield JSON.stringify({ timer: r.value });
  }
  for (const path of paths) {
    const f = await files.get(path);
    if (!f) continue; // an upload whose bytes were never stored (a failed request) or deleted
    counts.files++;
    yield JSON.stringify({ file: { path, contentType: f.contentType, filename: f.filename, data: f.data.toString('base64') } });
  }
  yield JSON.stringify({ end: counts });
}

/** Writes realm `realmId`'s export to `file` (gzipped, mode 0600: it holds password and key hashes). */
export async function exportRealm(store: Store & Scannable, files: FileStore, realmId: number, file: string): Promise<ExportCounts> {
  const counts: ExportCounts = { rows: 0, timers: 0, files: 0 };
  const lines = async function* () {
    for await (const line of exportLines(store, files, realmId, counts)) yield `${line}\n`;
  };
  await pipeline(Readable.from(lines()), createGzip(), createWriteStream(file, { mode: 0o600 }));
  return counts;
}

export interface ImportOptions {
  /** The target deployment's shard count (`PARLEY_SHARDS`, see lib/config.ts): timers are filed under their actor's shard there. */
  shards: number;
  /** Ops per commit (default 500). */
  batch?: number;
}

/** Ops per commit, and their JSON size at most (well under a Cassandra journal entry's 4 MiB). */
const BATCH_OPS = 500;
const BATCH_BYTES = 1024 * 1024;

/**
 * Imports an export file into `store` and `files`. Refuses (ExportError,
 * nothing written) when the realm ID is taken here, and (before the realm
 * is made visible) on a file that is truncated, of another version, or has a
 * row, timer or file outside its realm. Resolves with the realm ID.
 */
export async function importRealm(store: Store, files: FileStore, file: string, opts: ImportOptions): Promise<{ realmId: number } & ExportCounts> {
  const input = createReadStream(file).pipe(createGunzip());
  const lines = createInterface({ input, crlfDelay: Infinity });
  const it = lines[Symbol.asyncIterator]();
  try {
    const first = await it.next();
    const header = first.done ? undefined : (parseLine(first.value, 1) as Partial<ReturnType<typeof Header>>);
    if (header?.format !== 'parley-export') throw new ExportError(`${file} is not a Parley export`);
    if (header.version !== EXPORT_VERSION) throw new ExportError(`${file} is an export of version ${header.version}; this server reads version ${EXPORT_VERSION}`);
    const realmId = header.realmId;
    if (!Number.isSafeInteger(realmId) || realmId! < 0) throw new ExportError(`${file}: bad realm ID ${realmId}`);
    return await importBody(store, files, realmId!, { next: () => it.next() }, opts);
  } catch (err) {
    if (/^Z_/.test((err as NodeJS.ErrnoException).code ?? '')) throw new ExportError(`${file} is not a gzipped Parley export (${(err as Error).message})`);
    throw err;
  } finally {
    lines.close();
    input.destroy();
  }
}

async function importBody(store: Store, files: FileStore, realmId: number, lines: { next(): Promise<IteratorResult<string>> }, opts: ImportOptions): Promise<{ realmId: number } & ExportCounts> {
  if (await T.realms.at(realmId).get(store)) throw new ExportError(`realm ID ${realmId} is already an organization in this deployment: import refused (IDs and upload links are kept, so the ID must be free)`);
  // A scope of the import's own: the realm's actors claim theirs when they first load, after the import.
  const writer = await store.claim(`import:${realmId}`, 1);
  if (!writer) throw new ExportError(`realm ${realmId} is being imported by another process`);
  const counts: ExportCounts = { rows: 0, timers: 0, files: 0 };
  let pending: WriteOp[] = [];
  let pendingBytes = 0;
  const flush = async () => {
    if (pending.length === 0) return;
    await writer.commit(pending);
    pending = [];
    pendingBytes = 0;
  };
  const add = async (op: WriteOp, bytes: number) => {
    pending.push(op);
    pendingBytes += bytes;
    if (pending.length >= (opts.batch ?? BATCH_OPS) || pendingBytes >= BATCH_BYTES) await flush();
  };
  let meta: WriteOp | null = null;
  let end: ExportCounts | null = null;
  for (let n = 2; ; n++) {
    const next = await lines.next();
    if (next.done) break;
    if (end) throw new ExportError(`line ${n}: data after the end of the export`);
    const line = parseLine(next.value, n) as { row?: [string, string, Key, unknown]; timer?: unknown; file?: { path: string; contentType: string; filename: string; data: string }; end?: ExportCounts };
    if (line.row) {
      const [table, pk, ck, value] = line.row;
      const def = TABLES.get(table);
      if (!def || NOT_REALM_TABLES.has(table)) throw new ExportError(`line ${n}: table ${JSON.stringify(table)} is not an organization's`);
      if (typeof pk !== 'string' || !isRealmPartition(realmId, pk)) throw new ExportError(`line ${n}: row ${table}/${pk} is not realm ${realmId}'s`);
      const decoded = def.codec.safeParse(value);
      if (!decoded.success) throw new ExportError(`line ${n}: ${table}/${pk}/${String(ck)} does not decode: ${decoded.error.issues[0]?.message}`);
      const op: WriteOp = { op: 'put', table, pk, ck, value };
      counts.rows++;
      // The realm's own row makes it exist: written after everything else.
      if (table === T.realms.schema.name) meta = op;
      else await add(op, next.value.length);
    } else if (line.timer) {
      const t = TimerRecord.safeParse(line.timer);
      if (!t.success || !isRealmTimer(realmId, t.data)) throw new ExportError(`line ${n}: a timer that is not realm ${realmId}'s`);
      const shard = shardOf(TIMER_KINDS[t.data.kind]!.placement(t.data.actor), opts.shards);
      counts.timers++;
      await add(T.timers.at(shard, t.data).put(t.data), next.value.length);
    } else if (line.file) {
      const f = line.file;
      if (typeof f.path !== 'string' || !f.path.startsWith(`${realmId}/`)) throw new ExportError(`line ${n}: file ${JSON.stringify(f.path)} is not realm ${realmId}'s`);
      await files.put(f.path, { contentType: f.contentType, filename: f.filename, data: Buffer.from(f.data, 'base64') });
      counts.files++;
    } else if (line.end) {
      end = line.end;
    } else {
      throw new ExportError(`line ${n}: not a row, timer, file or end`);
    }
  }
  if (!end) throw new ExportError('the export is truncated (no end line): the organization was not made visible; import a whole file again');
  if (end.rows !== counts.rows || end.timers !== counts.timers || end.files !== counts.files) {
    throw new ExportError(`the export says ${JSON.stringify(end)} but holds ${JSON.stringify(counts)}`);
  }
  if (!meta) throw new ExportError(`the export has no realms row for realm ${realmId}`);
  await flush();
  await writer.commit([meta]);
  return { realmId, ...counts };
}

function parseLine(text: string, n: number): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ExportError(`line ${n} is not JSON: the file is damaged`);
  }
}
