/**
 * Backups of a whole deployment, taken while it runs, and restores onto a
 * fresh one (docs/operations.md has the steps).
 *
 * Embedded: lmdb's copy of the environment (one read transaction: a
 * consistent snapshot of every commit acknowledged before it began, taken
 * beside a running server, which lmdb allows from another process), then the
 * files of the data directory (uploads). Files are written once under a new
 * path before the row that names them commits, so every upload the copied
 * store names is already on disk when the files are copied after it.
 * Restore: the backup's `data` directory becomes a new data directory.
 *
 * Cluster: a Cassandra snapshot of the keyspace on each node (`nodetool
 * snapshot`: a flush, then hard links to the immutable SSTables) copied out
 * of the node's data directory; uploads are rows of `file_chunks`, so they
 * are in it. Restore: the schema is created in the target keyspace (the
 * store's own `init`) and each table's SSTables are loaded with `nodetool
 * import` (Cassandra 4+), which copies them in and makes them live without a
 * restart. nodetool speaks JMX: the node must have a JMX port
 * (scripts/services.sh's PARLEY_CASSANDRA_JMX_PORT), and it runs from the
 * Cassandra jars (scripts/cassandra/NodetoolBatch.java runs several commands
 * in one JVM). A Cassandra snapshot is per node and per table: a write in
 * flight during the snapshot may be in one table's SSTables and not in
 * another's; every write acknowledged before the snapshot began is in it.
 */
import { execFile } from 'node:child_process';
import { cp, lstat, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import cassandra from 'cassandra-driver';
import { CassandraStore, type CassandraStoreOptions } from './cassandra.ts';
import type { Config } from '../lib/config.ts';
import { EmbeddedStore } from './embedded.ts';
import { ChunkedFileStore, DirFileStore, type FileStore } from './files.ts';
import type { Scannable, Store } from './store.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');

export const BACKUP_VERSION = 1;
const MANIFEST = 'parley-backup.json';
/** lmdb's own files in a data directory: copied by lmdb, never as files. */
const LMDB_FILES = new Set(['data.mdb', 'lock.mdb']);

export interface BackupManifest {
  format: 'parley-backup';
  version: number;
  mode: 'embedded' | 'cluster';
  createdAt: string;
  /** Cluster: the keyspace snapshotted and the tables in the backup. */
  keyspace?: string;
  tables?: string[];
}

/** A backup or restore that cannot be done, with a message for the operator. */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

async function isEmptyOrMissing(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).length === 0;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
}

async function writeManifest(dir: string, m: Omit<BackupManifest, 'format' | 'version' | 'createdAt'>): Promise<BackupManifest> {
  const manifest: BackupManifest = { format: 'parley-backup', version: BACKUP_VERSION, createdAt: new Date().toISOString(), ...m };
  await writeFile(join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
  return manifest;
}

export async function readManifest(dir: string, mode: BackupManifest['mode']): Promise<BackupManifest> {
  let m: BackupManifest;
  try {
    m = JSON.parse(await readFile(join(dir, MANIFEST), 'utf8')) as BackupManifest;
  } catch {
    throw new BackupError(`${dir} is not a Parley backup (no readable ${MANIFEST})`);
  }
  if (m.format !== 'parley-backup' || m.version !== BACKUP_VERSION) throw new BackupError(`${dir}: a backup of format ${m.format} version ${m.version}; this server reads version ${BACKUP_VERSION}`);
  if (m.mode !== mode) throw new BackupError(`${dir} is a backup of ${m.mode} mode, not ${mode}`);
  return m;
}

/**
 * A deployment's storage opened directly (the CLI's backup, export and
 * import): the embedded data directory (beside a running server, as lmdb
 * allows) or the cluster's keyspace, with the uploads' FileStore of that mode.
 */
export async function openStorage(config: Config): Promise<{ store: Store & Scannable; files: FileStore; close(): Promise<void> }> {
  if (config.mode === 'embedded') {
    if (!(await stat(join(config.dataDir, 'data.mdb')).catch(() => null))) throw new BackupError(`${resolve(config.dataDir)} holds no embedded store (pass --data-dir or PARLEY_DATA_DIR)`);
    const store = new EmbeddedStore(config.dataDir);
    return { store, files: new DirFileStore(join(config.dataDir, 'uploads')), close: () => store.close() };
  }
  const store = await CassandraStore.connect(config.cassandra);
  await store.init();
  return { store, files: new ChunkedFileStore(store), close: () => store.close() };
}

// ---- embedded ----------------------------------------------------------------

/**
 * Backs up the embedded data directory `dataDir` (a server may be running on
 * it) into `outDir` (new or empty): `outDir/data` is a data directory.
 */
export async function backupEmbedded(dataDir: string, outDir: string): Promise<BackupManifest> {
  if (!(await stat(join(dataDir, 'data.mdb')).catch(() => null))) throw new BackupError(`${dataDir} holds no embedded store (no data.mdb)`);
  if (!(await isEmptyOrMissing(outDir))) throw new BackupError(`${outDir} is not empty: back up into a new directory`);
  const target = join(outDir, 'data');
  const store = new EmbeddedStore(dataDir);
  try {
    await store.backup(target);
  } finally {
    await store.close();
  }
  // After the store: every file a copied row names was written before that row committed.
  for (const entry of await readdir(dataDir)) {
    if (LMDB_FILES.has(entry)) continue;
    await cp(join(dataDir, entry), join(target, entry), { recursive: true, filter: copied });
  }
  return writeManifest(outDir, { mode: 'embedded' });
}

/** What a backup copies besides the store: files and directories, not a half-written file or the server's admin socket. */
async function copied(src: string): Promise<boolean> {
  const st = await lstat(src);
  return (st.isDirectory() || st.isFile()) && !src.endsWith('.tmp');
}

/** Makes `dataDir` (new or empty; no server on it) a copy of the backup in `backupDir`. Start a server on it afterwards. */
export async function restoreEmbedded(backupDir: string, dataDir: string): Promise<void> {
  await readManifest(backupDir, 'embedded');
  if (!(await isEmptyOrMissing(dataDir))) throw new BackupError(`${dataDir} is not empty: restore into a new data directory`);
  await cp(join(backupDir, 'data'), dataDir, { recursive: true });
}

// ---- cluster (Cassandra) ----------------------------------------------------------

/** How to reach one Cassandra node's JMX, and where its tools are. */
export interface NodetoolOptions {
  jmxHost: string;
  jmxPort: number;
  /** The Cassandra jars (default: where scripts/services.sh installs them). */
  cassandraLib?: string;
  /** A Java 17 (default: $JAVA_HOME/bin/java, else `java` on the PATH). */
  java?: string;
}

const defaultCassandraLib = () => join(process.env.PARLEY_SERVICES_HOME ?? join(homedir(), '.cache', 'parley-services'), `cassandra-${process.env.PARLEY_CASSANDRA_VERSION ?? '5.0.8'}`, 'lib');

/**
 * Runs nodetool commands (each a list of words) against one node; resolves
 * with their output. With a JDK, all in one JVM (NodetoolBatch.java, run
 * from source); a JRE alone (no jdk.compiler) runs nodetool once per command.
 */
export async function nodetool(opts: NodetoolOptions, commands: string[][]): Promise<string> {
  const java = opts.java ?? (process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java');
  const jvmOptions = (await readFile(join(ROOT, 'scripts', 'cassandra', 'jvm.options'), 'utf8'))
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter((l) => /^--add-(exports|opens) /.test(l))
    .flatMap((l) => l.split(/\s+/));
  const base = [...jvmOptions, '-cp', `${opts.cassandraLib ?? defaultCassandraLib()}/*`];
  const target = ['-h', opts.jmxHost, '-p', String(opts.jmxPort)];
  const runs = (await hasCompiler(java))
    ? [[...base, join(ROOT, 'scripts', 'cassandra', 'NodetoolBatch.java'), ...commands.map((c) => [...target, ...c].join('\t'))]]
    : commands.map((c) => [...base, 'org.apache.cassandra.tools.NodeTool', ...target, ...c]);
  let out = '';
  for (const args of runs) {
    try {
      out += (await run(java, args, { maxBuffer: 64 * 1024 * 1024 })).stdout;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      const said = `${e.stdout ?? ''}\n${e.stderr ?? ''}`.split('\n').filter((l) => l && !/ DEBUG |^\s+at /.test(l)).slice(-15).join('\n');
      throw new BackupError(`nodetool ${commands.map((c) => c[0]).join(', ')} failed on ${opts.jmxHost}:${opts.jmxPort}:\n${said || e.message}`);
    }
  }
  return out;
}

/** Whether `java` can run a program from source (a JDK: the jdk.compiler module). */
async function hasCompiler(java: string): Promise<boolean> {
  try {
    return /^jdk\.compiler@/m.test((await run(java, ['--list-modules'])).stdout);
  } catch {
    return false;
  }
}

export interface SnapshotOptions extends NodetoolOptions {
  keyspace: string;
  /** The node's `data_file_directories` entry (scripts/services.sh: `<services dir>/cassandra/data`). */
  cassandraDataDir: string;
  outDir: string;
}

/**
 * Snapshots `keyspace` on one node and copies the snapshot out of the node's
 * data directory into `outDir/tables/<table>/`, then clears the snapshot
 * (its hard links would keep compacted SSTables on disk). Run it for every
 * node, each into its own directory.
 */
export async function snapshotCassandra(opts: SnapshotOptions): Promise<BackupManifest> {
  if (!(await isEmptyOrMissing(opts.outDir))) throw new BackupError(`${opts.outDir} is not empty: back up into a new directory`);
  const tag = `parley-${Date.now()}`;
  await nodetool(opts, [['snapshot', '-t', tag, opts.keyspace]]);
  const tables: string[] = [];
  try {
    const ksDir = join(opts.cassandraDataDir, opts.keyspace);
    for (const dir of await readdir(ksDir)) {
      const snap = join(ksDir, dir, 'snapshots', tag);
      if (!(await stat(snap).catch(() => null))) continue;
      // Table directories are `<table>-<table id>`.
      const table = dir.replace(/-[0-9a-f]{32}$/, '');
      await cp(snap, join(opts.outDir, 'tables', table), { recursive: true });
      tables.push(table);
    }
  } finally {
    await nodetool(opts, [['clearsnapshot', '-t', tag, '--', opts.keyspace]]);
  }
  if (tables.length === 0) throw new BackupError(`no snapshot of keyspace ${opts.keyspace} under ${opts.cassandraDataDir}: is that the node's data directory?`);
  return writeManifest(opts.outDir, { mode: 'cluster', keyspace: opts.keyspace, tables: tables.sort() });
}

export interface CassandraRestoreOptions extends NodetoolOptions {
  backupDir: string;
  /** The target: its keyspace must not exist yet (a fresh deployment). */
  cassandra: CassandraStoreOptions;
}

/**
 * Restores a node's snapshot into a new keyspace: creates the schema as a
 * server would, then imports every table's SSTables (copied: the backup is
 * left as it is). The directory must be readable by the Cassandra process
 * (run it on the node). Start the deployment on the keyspace afterwards.
 */
export async function restoreCassandra(opts: CassandraRestoreOptions): Promise<{ tables: number }> {
  const manifest = await readManifest(opts.backupDir, 'cluster');
  const ks = opts.cassandra.keyspace;
  const probe = new cassandra.Client({ contactPoints: opts.cassandra.contactPoints, localDataCenter: opts.cassandra.localDataCenter });
  try {
    await probe.connect();
    const rs = await probe.execute('SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?', [ks], { prepare: true });
    if (rs.rowLength > 0) throw new BackupError(`keyspace ${ks} exists: restore into a new keyspace (a fresh deployment)`);
  } finally {
    await probe.shutdown();
  }
  const store = await CassandraStore.connect(opts.cassandra);
  try {
    await store.init();
  } finally {
    await store.close();
  }
  const commands: string[][] = [];
  for (const table of manifest.tables ?? []) {
    const dir = resolve(opts.backupDir, 'tables', basename(table));
    // A table with no SSTables (never written) has only its schema file.
    if ((await readdir(dir)).some((f) => f.endsWith('-Data.db'))) commands.push(['import', '--copy-data', ks, table, dir]);
  }
  if (commands.length > 0) await nodetool(opts, commands);
  return { tables: commands.length };
}
