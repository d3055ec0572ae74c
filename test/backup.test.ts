// Backup and restore of a whole deployment, taken while the server runs and takes writes, restored on a
// fresh deployment and checked through its HTTP API. Embedded: lmdb's copy plus the uploads directory.
// Cluster (PARLEY_TEST_CASSANDRA=1 and a Cassandra with JMX, PARLEY_CASSANDRA_JMX_PORT): a nodetool
// snapshot of a keyspace of the test's own, imported into another new keyspace.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { dropKeyspace } from '../scripts/drop-keyspace.ts';
import { backupEmbedded, BackupError, restoreCassandra, restoreEmbedded, snapshotCassandra } from '../storage/backup.ts';
import { checkRestored, dirWithDemo, keepWriting, NO_LIMITS, populate } from './helpers/backup-org.ts';
import { serverFor, type TestServer } from './helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '..');

function scratch(t: { teardown(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'parley-backup-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts writing, waits until some writes are acknowledged, and returns what was acknowledged so far with the writer. */
async function writing(s: TestServer, org: Awaited<ReturnType<typeof populate>>) {
  const w = keepWriting(s, org);
  while (w.acked.length < 3) await sleep(10);
  return { w, before: [...org.sent, ...w.acked] };
}

t.test('backup - embedded: copied while the server takes writes, restored on a fresh server, every acknowledged message, user, upload and setting is back', async (t) => {
  const s = await serverFor(t, { env: NO_LIMITS });
  const org = await populate(s);
  const { w, before } = await writing(s, org);
  const out = join(scratch(t), 'backup');
  const manifest = await backupEmbedded(join(s.dataDir!, 'data'), out);
  const after = w.acked.length;
  while (w.acked.length < after + 3) await sleep(10); // the server goes on taking writes after the backup (a hang here fails by timeout)
  await w.stop();
  t.equal(manifest.mode, 'embedded');
  t.comment(`the server took writes throughout (${w.acked.length} acknowledged, ${after} by the end of the backup)`);

  const dir = dirWithDemo(s);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await restoreEmbedded(out, join(dir, 'data'));
  const restored = await serverFor(t, { dataDir: dir, env: NO_LIMITS });
  await checkRestored(t, restored, org, before, w.acked.slice(before.length - org.sent.length));
});

t.test('backup - embedded: refuses a non-empty target, a directory that is no backup, and a data directory without a store', async (t) => {
  const dir = scratch(t);
  mkdirSync(join(dir, 'full'));
  writeFileSync(join(dir, 'full', 'x'), 'x');
  await t.rejects(backupEmbedded(join(dir, 'nothing'), join(dir, 'b')), BackupError);
  await t.rejects(restoreEmbedded(join(dir, 'full'), join(dir, 'new')), { name: 'BackupError', message: /not a Parley backup/ });
  const s = await serverFor(t, { env: NO_LIMITS });
  await t.rejects(backupEmbedded(join(s.dataDir!, 'data'), join(dir, 'full')), { message: /not empty/ });
  await backupEmbedded(join(s.dataDir!, 'data'), join(dir, 'ok'));
  await t.rejects(restoreEmbedded(join(dir, 'ok'), join(dir, 'full')), { message: /not empty/ });
});

const jmxPort = process.env.PARLEY_CASSANDRA_JMX_PORT;
t.test('backup - cluster: a Cassandra snapshot taken under writes, imported into a new keyspace, serves everything acknowledged', { skip: process.env.PARLEY_TEST_CASSANDRA !== '1' || !jmxPort ? 'needs PARLEY_TEST_CASSANDRA=1 and a Cassandra with JMX (PARLEY_CASSANDRA_JMX_PORT)' : false }, async (t) => {
  const tag = `bk${process.pid}${Math.random().toString(36).slice(2, 6)}`;
  const cluster = (ks: string) => ({ ...NO_LIMITS, PARLEY_MODE: 'cluster', PARLEY_CASSANDRA_KEYSPACE: ks, PARLEY_REDIS_PREFIX: `parley_${ks}`, PARLEY_SHARDS: '4' });
  const [from, to] = [`parley_${tag}_a`, `parley_${tag}_b`];
  t.teardown(async () => {
    for (const ks of [from, to]) await dropKeyspace(ks).catch(() => {});
  });
  const home = scratch(t);
  let mark = Date.now();
  const lap = (what: string) => {
    t.comment(`${what}: ${((Date.now() - mark) / 1000).toFixed(1)} s`);
    mark = Date.now();
  };
  const s = await serverFor(t, { dataDir: join(home, 'a'), env: cluster(from) });
  lap('a cluster-mode server on a new keyspace');
  const org = await populate(s);
  const { w, before } = await writing(s, org);
  const contactPoints = (process.env.PARLEY_CASSANDRA_CONTACT_POINTS ?? '127.0.0.1:9042').split(',');
  const jmx = { jmxHost: contactPoints[0]!.split(':')[0]!, jmxPort: Number(jmxPort) };
  const out = join(home, 'snapshot');
  const cassandraDataDir = join(process.env.PARLEY_SERVICES_DIR ?? join(ROOT, '.parley', 'services'), 'cassandra', 'data');
  lap('the organization made');
  const manifest = await snapshotCassandra({ ...jmx, keyspace: from, cassandraDataDir, outDir: out });
  lap('snapshot (nodetool snapshot, copy, clearsnapshot)');
  await w.stop();
  t.ok(manifest.tables?.includes('messages') && manifest.tables.includes('file_chunks') && manifest.tables.includes('journal'), 'the snapshot has the data, the uploads and the journal');

  const store = { contactPoints, localDataCenter: process.env.PARLEY_CASSANDRA_DC ?? 'datacenter1', replicationFactor: 1 };
  const { tables } = await restoreCassandra({ ...jmx, backupDir: out, cassandra: { ...store, keyspace: to } });
  lap('restore (schema, nodetool import)');
  t.ok(tables > 5, `${tables} tables imported`);
  await t.rejects(restoreCassandra({ ...jmx, backupDir: out, cassandra: { ...store, keyspace: to } }), { message: /exists/ }, 'a second restore into the same keyspace is refused');

  const dir = dirWithDemo(s);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const restored = await serverFor(t, { dataDir: dir, env: cluster(to) });
  lap('a server on the restored keyspace');
  await checkRestored(t, restored, org, before, w.acked.slice(before.length - org.sent.length));
});
