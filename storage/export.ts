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
 * by the realm first (`<realm>` or `<realm>:…`), except those listed in
 * NOT_REALM_TABLES. Uploaded bytes are read and written through the
 * FileStore (a directory embedded, `file_chunks` in a cluster), so an
 * embedded export imports into a cluster and back.
 *
 * IDs: user, channel, message and group IDs are numbered per realm and
 * kept as they are. The realm ID itself is kept by default; a deployment
 * numbers its organizations from 1, so importing into one that has
 * organizations usually needs another realm ID (`ImportOptions.realmId`):
 * then every key, upload path and upload link in content
 * (`/user_uploads/<realm>/…`) is rewritten to it (`Relabel`), and old links
 * keep working on the new deployment. A realm ID the target already has is
 * refused, never merged into. The realm's `realms` row is written last, once
 * everything else is durable: until then the organization does not exist
 * for the server, and a failed import can simply be run again. Registering
 * it in the target's directory (its host) is the caller's next step
 * (`registerImported`).
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
import { DIRECTORY_ID, directoryRef, SERVER_CALLER } from '../actors/directory/ref.ts';
import { Role } from '../actors/model.ts';
import { realmRef } from '../actors/realm/ref.ts';
import type { ActorClient } from '../actors/runtime/client.ts';
import type { ActorRef } from '../actors/runtime/registry.ts';
import { shardOf } from '../actors/subjects.ts';
import { userRef } from '../actors/user/ref.ts';
import type { FileStore } from './files.ts';
import type { Key, Scannable, Store, WriteOp } from './store.ts';
import { type ChannelRecord, type MessageLocation, type RealmMeta, type StoredMessage, T, TimerRecord, type Table, type UserRecord } from './tables.ts';

export const EXPORT_VERSION = 1;

/**
 * Tables not partitioned by realm: timers (per shard; the realm's are
 * exported apart), the timer cursors, shard handoffs (in flight only), file bytes (read through the
 * FileStore), and the deployment's directory of organizations and its
 * address index (the target registers the imported one in its own, whose
 * directory then indexes its addresses). Also left out: the realm's
 * checkpoint and journal (`actors/realm/state/checkpoint.ts`), a copy of rows the
 * export carries anyway, encoded with the exporting realm's IDs: the imported
 * realm loads from its tables and writes a checkpoint of its own.
 */
export const NOT_REALM_TABLES: ReadonlySet<string> = new Set(
  [T.timers, T.timerCursors, T.shardHandoffs, T.fileChunks, T.organizations, T.organizationLinks, T.accountAddresses, T.accountAddressOf, T.accountIndexDone, T.realmCheckpoints, T.realmCheckpointChunks, T.realmJournal].map((t) => t.schema.name),
);

/**
 * Tables an older server wrote that this one has none of: an export made
 * there may carry their rows, which an import counts and drops.
 * `e2ee_push_devices`: registrations by push account (FL 406-467), gone at
 * FL 468 as in Zulip 12.
 */
const RETIRED_TABLES: ReadonlySet<string> = new Set(['e2ee_push_devices']);

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

/**
 * What an export carries. `operator`: every row, as the CLI exports (a copy
 * of the organization, logins included). The two kinds an administrator asks
 * for through the API (POST /export/realm) carry no credentials (password
 * hashes, API key hashes: Zulip's exports leave them out too; users set a
 * password after an import); `full` carries everything else, `public`
 * (Zulip's public-data export) only what every member may see: messages of
 * channels that are not private, with their flags and uploads, and none of
 * the users' private data (direct messages, drafts, snippets, navigation views, bots' storage, alert words,
 * muted users and topics, scheduled messages, devices, invitations, activity
 * and digest records, timers).
 */
export type ExportScope = 'operator' | 'full' | 'public';

/** Tables a public export leaves out whole: each row is one user's private data or a secret. */
const PRIVATE_TABLES: ReadonlySet<string> = new Set(
  [T.dmConversations, T.userDrafts, T.savedSnippets, T.navigationViews, T.botStorage, T.alertWords, T.mutedUsers, T.userTopics, T.scheduledMessages, T.pushDevices, T.clientDevices, T.activePushes, T.missedEmails, T.unsubscribeKeys, T.invites, T.videoProviderTokens, T.realmExports, T.userActivity, T.userDigests, T.digestRuns, T.tusUploads].map(
    (t) => t.schema.name,
  ),
);

/**
 * Which rows a public export keeps, from a first pass over the realm's
 * channels, message locations and upload links: O(channels + messages +
 * links) memory for the IDs, read once before the export streams.
 */
class PublicRows {
  private constructor(
    private readonly channelKeys: Set<string>,
    private readonly messages: Set<number>,
    private readonly paths: Set<string>,
  ) {}

  static async read(store: Store & Scannable, realmId: number): Promise<PublicRows> {
    const channelKeys = new Set<string>();
    for await (const r of store.scan<ChannelRecord>(T.channels.schema.name, String(realmId))) if (isRealmPartition(realmId, r.pk) && !r.value.inviteOnly) channelKeys.add(`s${r.value.id}`);
    const messages = new Set<number>();
    for await (const r of store.scan<MessageLocation>(T.messageLocator.schema.name, String(realmId))) if (isRealmPartition(realmId, r.pk) && channelKeys.has(r.value.recipientKey)) messages.add(Number(r.ck));
    const paths = new Set<string>();
    for await (const r of store.scan(T.attachmentMessages.schema.name, String(realmId))) if (isRealmPartition(realmId, r.pk) && messages.has(Number(r.ck))) paths.add(r.pk.slice(String(realmId).length + 1));
    return new PublicRows(channelKeys, messages, paths);
  }

  keeps(table: string, pk: string, ck: Key, value: unknown): boolean {
    if (PRIVATE_TABLES.has(table)) return false;
    switch (table) {
      case T.messages.schema.name:
        return this.channelKeys.has((value as StoredMessage).recipientKey);
      case T.recipientBuckets.schema.name:
        return this.channelKeys.has(pk.slice(pk.indexOf(':') + 1));
      case T.messageLocator.schema.name:
      case T.userFlags.schema.name:
        return this.messages.has(Number(ck));
      case T.channelTopics.schema.name:
        return this.channelKeys.has(`s${pk.slice(pk.indexOf(':') + 1)}`);
      case T.attachments.schema.name:
        return this.paths.has(String(ck));
      case T.userAttachments.schema.name:
        return this.paths.has(value as string);
      case T.attachmentMessages.schema.name:
        return this.messages.has(Number(ck));
      default:
        return true;
    }
  }
}

/** A user row without its credentials (`full` and `public` exports). */
const withoutCredentials = (u: UserRecord): UserRecord => ({ ...u, apiKey: '', apiKeys: [], passwordHash: null });

/** The export's lines (without newlines), read as they are produced. */
export async function* exportLines(store: Store & Scannable, files: FileStore, realmId: number, counts: ExportCounts = { rows: 0, timers: 0, files: 0 }, scope: ExportScope = 'operator'): AsyncGenerator<string> {
  if (!(await T.realms.at(realmId).get(store))) throw new ExportError(`no organization with realm ID ${realmId} in this deployment`);
  const filter = scope === 'public' ? await PublicRows.read(store, realmId) : null;
  yield JSON.stringify(Header(realmId));
  const paths: string[] = [];
  for (const table of REALM_TABLES) {
    for await (const r of store.scan(table, String(realmId))) {
      if (!isRealmPartition(realmId, r.pk)) continue;
      if (filter && !filter.keeps(table, r.pk, r.ck, r.value)) continue;
      if (scope !== 'operator' && table === T.users.schema.name) r.value = withoutCredentials(r.value as UserRecord);
      if (table === T.attachments.schema.name) paths.push((r.value as { path: string }).path);
      if (table === T.realmEmoji.schema.name) paths.push((r.value as { fileName: string }).fileName);
      counts.rows++;
      yield JSON.stringify({ row: [table, r.pk, r.ck, r.value] });
    }
  }
  for await (const r of store.scan<TimerRecord>(T.timers.schema.name, '')) {
    if (!isRealmTimer(realmId, r.value) || scope === 'public') continue;
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

/** Realm `realmId`'s export of `scope`, gzipped, in memory (an export made through the API, stored in the FileStore as one file). */
export async function exportToBuffer(store: Store & Scannable, files: FileStore, realmId: number, scope: ExportScope): Promise<{ data: Buffer; counts: ExportCounts }> {
  const counts: ExportCounts = { rows: 0, timers: 0, files: 0 };
  const chunks: Buffer[] = [];
  const lines = async function* () {
    for await (const line of exportLines(store, files, realmId, counts, scope)) yield `${line}\n`;
  };
  await pipeline(Readable.from(lines()), createGzip(), async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) chunks.push(chunk);
  });
  return { data: Buffer.concat(chunks), counts };
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
  /** The realm ID to import as (default: the export's own). Another ID rewrites every key, upload path and upload link. */
  realmId?: number;
  /** The organization's subdomain in the target (its realm's `stringId`); default: as exported. */
  subdomain?: string;
  /** Ops per commit (default 500). */
  batch?: number;
}

export interface ImportResult extends ExportCounts {
  realmId: number;
  /** The realm ID in the export. */
  exportedRealmId: number;
  name: string;
  subdomain: string;
  /** The organization's first active owner, for registering it (the directory's createOrganization). */
  owner: { email: string; fullName: string } | null;
}

/** Ops per commit, and their JSON size at most (well under a Cassandra journal entry's 4 MiB). */
const BATCH_OPS = 500;
const BATCH_BYTES = 1024 * 1024;

/**
 * Imports an export file into `store` and `files`. Refuses (ExportError,
 * nothing written) when the realm ID is taken here, and (before the realm
 * is made visible) on a file that is truncated, of another version, or has a
 * row, timer or file outside its realm.
 */
export async function importRealm(store: Store, files: FileStore, file: string, opts: ImportOptions): Promise<ImportResult> {
  const input = createReadStream(file).pipe(createGunzip());
  const lines = createInterface({ input, crlfDelay: Infinity });
  const it = lines[Symbol.asyncIterator]();
  try {
    const first = await it.next();
    const header = first.done ? undefined : (parseLine(first.value, 1) as Partial<ReturnType<typeof Header>>);
    if (header?.format !== 'parley-export') throw new ExportError(`${file} is not a Parley export`);
    if (header.version !== EXPORT_VERSION) throw new ExportError(`${file} is an export of version ${header.version}; this server reads version ${EXPORT_VERSION}`);
    const from = header.realmId;
    if (!Number.isSafeInteger(from) || from! < 1) throw new ExportError(`${file}: bad realm ID ${from}`);
    const to = opts.realmId ?? from!;
    if (!Number.isSafeInteger(to) || to < 1) throw new ExportError(`bad target realm ID ${to}`);
    return await importBody(store, files, new Relabel(from!, to), { next: () => it.next() }, opts);
  } catch (err) {
    if (/^Z_/.test((err as NodeJS.ErrnoException).code ?? '')) throw new ExportError(`${file} is not a gzipped Parley export (${(err as Error).message})`);
    throw err;
  } finally {
    lines.close();
    input.destroy();
  }
}

/** The realm ID an export file holds (its first line). */
export async function exportedRealmId(file: string): Promise<number> {
  const input = createReadStream(file).pipe(createGunzip());
  const lines = createInterface({ input, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      const header = parseLine(line, 1) as Partial<ReturnType<typeof Header>>;
      if (header.format === 'parley-export' && Number.isSafeInteger(header.realmId)) return header.realmId!;
      break;
    }
  } catch (err) {
    if (/^Z_/.test((err as NodeJS.ErrnoException).code ?? '')) throw new ExportError(`${file} is not a gzipped Parley export`);
    throw err;
  } finally {
    lines.close();
    input.destroy();
  }
  throw new ExportError(`${file} is not a Parley export`);
}

/**
 * Moves an organization from realm ID `from` to `to`: partition keys
 * (`<realm>…`), upload paths (`<realm>/…`: attachment rows and their keys,
 * custom emoji files, the files themselves) and upload links in any text
 * (`/user_uploads/<realm>/…` in messages, their edit history, drafts,
 * scheduled messages), and timers' actor IDs. Nothing else in a row holds
 * the realm ID (other IDs are numbered per realm and stay as they are).
 */
class Relabel {
  private readonly link: RegExp;

  constructor(
    readonly from: number,
    readonly to: number,
  ) {
    this.link = new RegExp(`/user_uploads/${from}/`, 'g');
  }

  get same(): boolean {
    return this.from === this.to;
  }

  /** `<from>…` -> `<to>…`, for partition keys (checked to be the realm's) and actor IDs. */
  private prefix(key: string): string {
    return `${this.to}${key.slice(String(this.from).length)}`;
  }

  path(p: string): string {
    return this.same ? p : `${this.to}/${p.slice(String(this.from).length + 1)}`;
  }

  private text(v: unknown): unknown {
    if (typeof v === 'string') return v.replace(this.link, `/user_uploads/${this.to}/`);
    if (Array.isArray(v)) return v.map((x) => this.text(x));
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, this.text(x)]));
    return v;
  }

  row(table: string, pk: string, ck: Key, value: unknown): { pk: string; ck: Key; value: unknown } {
    if (this.same) return { pk, ck, value };
    let v = this.text(value) as Record<string, unknown>;
    if (table === T.attachments.schema.name) {
      v = { ...v, path: this.path(v.path as string) };
      ck = this.path(ck as string);
    }
    if (table === T.realmEmoji.schema.name) v = { ...v, fileName: this.path(v.fileName as string) };
    // attachment_messages: `<realm>:<path>`, and the path names the realm too.
    const newPk = table === T.attachmentMessages.schema.name ? `${this.to}:${this.path(pk.slice(String(this.from).length + 1))}` : this.prefix(pk);
    return { pk: newPk, ck, value: v };
  }

  timer(t: TimerRecord): TimerRecord {
    return this.same ? t : { ...t, actor: this.prefix(t.actor), payload: this.text(t.payload) };
  }
}

async function importBody(store: Store, files: FileStore, relabel: Relabel, lines: { next(): Promise<IteratorResult<string>> }, opts: ImportOptions): Promise<ImportResult> {
  const { from, to } = relabel;
  if (await T.realms.at(to).get(store)) throw new ExportError(`realm ID ${to} is already an organization in this deployment: import refused (choose a free realm ID to import as)`);
  // A scope of the import's own: the realm's actors claim theirs when they first load, after the import.
  const writer = await store.claim(`import:${to}`, 1);
  if (!writer) throw new ExportError(`realm ${to} is being imported by another process`);
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
  let meta: RealmMeta | null = null;
  let owner: UserRecord | null = null;
  let end: ExportCounts | null = null;
  for (let n = 2; ; n++) {
    const next = await lines.next();
    if (next.done) break;
    if (end) throw new ExportError(`line ${n}: data after the end of the export`);
    const line = parseLine(next.value, n) as { row?: [string, string, Key, unknown]; timer?: unknown; file?: { path: string; contentType: string; filename: string; data: string }; end?: ExportCounts };
    if (line.row) {
      const [table, pk, ck, value] = line.row;
      if (RETIRED_TABLES.has(table)) {
        counts.rows++;
        continue;
      }
      const def = TABLES.get(table);
      if (!def || NOT_REALM_TABLES.has(table)) throw new ExportError(`line ${n}: table ${JSON.stringify(table)} is not an organization's`);
      if (typeof pk !== 'string' || !isRealmPartition(from, pk)) throw new ExportError(`line ${n}: row ${table}/${pk} is not realm ${from}'s`);
      if ((table === T.attachments.schema.name || table === T.attachmentMessages.schema.name) && !String(table === T.attachments.schema.name ? ck : pk.slice(String(from).length + 1)).startsWith(`${from}/`)) {
        throw new ExportError(`line ${n}: an upload of ${table} that is not realm ${from}'s`);
      }
      const decoded = def.codec.safeParse(value);
      if (!decoded.success) throw new ExportError(`line ${n}: ${table}/${pk}/${String(ck)} does not decode: ${decoded.error.issues[0]?.message}`);
      const row = relabel.row(table, pk, ck, value);
      counts.rows++;
      if (table === T.users.schema.name) {
        const u = decoded.data as UserRecord;
        if (u.role === Role.OWNER && u.isActive && !u.isBot && (!owner || u.id < owner.id)) owner = u;
      }
      // The realm's own row makes it exist: written after everything else.
      if (table === T.realms.schema.name) meta = row.value as RealmMeta;
      else await add({ op: 'put', table, ...row }, next.value.length);
    } else if (line.timer) {
      const t = TimerRecord.safeParse(line.timer);
      if (!t.success || !isRealmTimer(from, t.data)) throw new ExportError(`line ${n}: a timer that is not realm ${from}'s`);
      const timer = relabel.timer(t.data);
      const shard = shardOf(TIMER_KINDS[timer.kind]!.placement(timer.actor), opts.shards);
      counts.timers++;
      await add(T.timers.at(shard, timer).put(timer), next.value.length);
    } else if (line.file) {
      const f = line.file;
      if (typeof f.path !== 'string' || !f.path.startsWith(`${from}/`)) throw new ExportError(`line ${n}: file ${JSON.stringify(f.path)} is not realm ${from}'s`);
      await files.put(relabel.path(f.path), { contentType: f.contentType, filename: f.filename, data: Buffer.from(f.data, 'base64') });
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
  if (!meta) throw new ExportError(`the export has no realms row for realm ${from}`);
  // Active here whatever it was at the source (deactivating the source is how to export it unchanged); the directory registers it active.
  const visible: RealmMeta = { ...meta, ...(opts.subdomain === undefined ? {} : { stringId: opts.subdomain }), deactivated: false };
  await flush();
  await writer.commit([T.realms.at(to).put(visible)]);
  const o = owner as UserRecord | null;
  return { realmId: to, exportedRealmId: from, name: visible.name, subdomain: visible.stringId, owner: o && { email: o.email, fullName: o.fullName }, ...counts };
}

/** A realm ID no organization of the target's directory has (after its greatest), to import as. */
export async function freeRealmId(actors: ActorClient): Promise<number> {
  const { organizations } = await actors.call(directoryRef, DIRECTORY_ID, { type: 'listOrganizations', caller: SERVER_CALLER });
  return Math.max(0, ...organizations.map((o) => o.realmId)) + 1;
}

/**
 * Registers an imported organization in the target deployment's directory
 * under its subdomain (the directory adopts the existing realm), so its
 * host serves it; every gateway hears of it at once. Refused (ApiError) if
 * the subdomain is another organization's.
 */
export async function registerImported(actors: ActorClient, imported: ImportResult) {
  if (!imported.owner) throw new ExportError(`realm ${imported.realmId} has no active owner to register it with`);
  const { organization } = await actors.call(directoryRef, DIRECTORY_ID, {
    type: 'createOrganization',
    caller: SERVER_CALLER,
    subdomain: imported.subdomain,
    name: imported.name,
    realmId: imported.realmId,
    users: [{ email: imported.owner.email, fullName: imported.owner.fullName, role: Role.OWNER }],
  });
  return organization;
}

function parseLine(text: string, n: number): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ExportError(`line ${n} is not JSON: the file is damaged`);
  }
}
