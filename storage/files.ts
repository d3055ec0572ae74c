/**
 * Where uploaded files' bytes live: a `FileStore`, with two implementations
 * that pass one test suite (`test/files.test.ts`): `DirFileStore`, plain
 * files under the embedded data directory, and `ChunkedFileStore`, the bytes
 * in chunks in the catalog's `file_chunks` table, so every node of a cluster
 * reads them from Cassandra. Files are written once under a fresh random path
 * and never changed, so a write needs no fencing beyond its own scope.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import type { Store } from './store.ts';
import { T } from './tables.ts';

/**
 * The largest upload (`max_file_upload_size_mib`), Zulip's default of 25 MiB
 * in both modes. In a cluster the file crosses the bus in base64 (~34 MB at
 * 25 MiB), in chunks below NATS's max_payload (`actors/runtime/nats-chunks.ts`).
 */
export const MAX_UPLOAD_MIB = Number(process.env.PARLEY_MAX_UPLOAD_MIB ?? 25);
/**
 * How long a gateway waits for an actor to store or read a file's bytes: a
 * 25 MiB file crosses the bus as ~34 MB of base64 and is written to the store
 * in chunk rows, seconds on a busy node, where other requests get
 * PARLEY_REQUEST_TIMEOUT_MS.
 */
export const FILE_TIMEOUT_MS = 60_000;
/** The error text for a file over MAX_UPLOAD_MIB. */
export const tooLarge = (): string => `File is larger than this server's configured maximum upload size (${MAX_UPLOAD_MIB} MiB).`;
/** The largest custom emoji image (`max_emoji_file_size_mib`). */
export const MAX_EMOJI_MIB = 5;

export interface FileInfo {
  contentType: string;
  filename: string;
}

export interface StoredFile extends FileInfo {
  data: Buffer;
}

export interface FileStore {
  /** Stores `data` under `path` (a relative path of safe segments) and resolves once durable. */
  put(path: string, file: StoredFile): Promise<void>;
  get(path: string): Promise<StoredFile | undefined>;
  delete(path: string): Promise<void>;
}

/** Paths are made by the server (`realm/xx/random/name`): no empty, dot or absolute segments. */
function checkPath(path: string): void {
  if (!path || path.startsWith('/') || path.split('/').some((s) => s === '' || s === '.' || s === '..') || normalize(path) !== path) throw new Error(`bad file path ${path}`);
}

/** Files under a directory (the embedded data directory), each with a `.meta.json` beside it. */
export class DirFileStore implements FileStore {
  constructor(private readonly dir: string) {}

  async put(path: string, file: StoredFile): Promise<void> {
    checkPath(path);
    const target = join(this.dir, path);
    await mkdir(dirname(target), { recursive: true });
    // Written aside and renamed: a reader never sees half a file.
    await writeFile(`${target}.tmp`, file.data);
    await writeFile(`${target}.meta.json.tmp`, JSON.stringify({ contentType: file.contentType, filename: file.filename }));
    await rename(`${target}.tmp`, target);
    await rename(`${target}.meta.json.tmp`, `${target}.meta.json`);
  }

  async get(path: string): Promise<StoredFile | undefined> {
    checkPath(path);
    const target = join(this.dir, path);
    try {
      const meta = JSON.parse(await readFile(`${target}.meta.json`, 'utf8')) as FileInfo;
      return { ...meta, data: await readFile(target) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async delete(path: string): Promise<void> {
    checkPath(path);
    const target = join(this.dir, path);
    await rm(`${target}.meta.json`, { force: true });
    await rm(target, { force: true });
  }
}

/** Bytes per chunk row: well under Cassandra's comfortable cell size and the journal's entry limit. */
const CHUNK_BYTES = 256 * 1024;

/** Files as chunk rows of `file_chunks` in the Store (Cassandra in a cluster), one partition per file. */
export class ChunkedFileStore implements FileStore {
  constructor(private readonly store: Store) {}

  async put(path: string, file: StoredFile): Promise<void> {
    checkPath(path);
    const writer = await this.store.claim(`file:${path}`, 1);
    if (!writer) throw new Error(`file ${path} is being written by someone else`);
    const chunks = Math.ceil(file.data.length / CHUNK_BYTES);
    const ops = [];
    for (let i = 0; i < chunks; i++) ops.push(T.fileChunks.at(path, i).put({ data: file.data.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES).toString('base64') }));
    // The description goes last, so a file whose description is readable is whole.
    await writer.commit(ops);
    await writer.commit([T.fileChunks.at(path, -1).put({ contentType: file.contentType, filename: file.filename, size: file.data.length, chunks })]);
  }

  async get(path: string): Promise<StoredFile | undefined> {
    checkPath(path);
    const meta = await T.fileChunks.at(path, -1).get(this.store);
    if (!meta || !('chunks' in meta)) return undefined;
    const rows = await T.fileChunks.partition(path).values(this.store, { gte: 0, lte: meta.chunks - 1 });
    const data = Buffer.concat(rows.map((r) => ('data' in r ? Buffer.from(r.data, 'base64') : Buffer.alloc(0))));
    if (data.length !== meta.size) throw new Error(`file ${path} is incomplete`);
    return { contentType: meta.contentType, filename: meta.filename, data };
  }

  async delete(path: string): Promise<void> {
    checkPath(path);
    const meta = await T.fileChunks.at(path, -1).get(this.store);
    const writer = await this.store.claim(`file:${path}`, 1);
    if (!writer) return;
    const chunks = meta && 'chunks' in meta ? meta.chunks : 0;
    await writer.commit([T.fileChunks.at(path, -1).delete(), ...Array.from({ length: chunks }, (_, i) => T.fileChunks.at(path, i).delete())]);
  }
}

const stores = new WeakMap<Store, FileStore>();

/**
 * The file store of a process: in embedded mode (`PARLEY_MODE=embedded`) the
 * `uploads` directory inside the data directory; otherwise chunks in the shared Store.
 */
export function fileStoreFor(store: Store): FileStore {
  let fs = stores.get(store);
  if (!fs) {
    const embedded = (process.env.PARLEY_MODE ?? 'embedded') === 'embedded';
    fs = embedded ? new DirFileStore(join(process.env.PARLEY_DATA_DIR ?? '.parley/data', 'uploads')) : new ChunkedFileStore(store);
    stores.set(store, fs);
  }
  return fs;
}
