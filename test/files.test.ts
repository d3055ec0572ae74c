// The FileStore suite, run against each implementation: plain files in a directory
// (embedded mode) and chunks in the Store (lmdb here; Cassandra when it is reachable,
// which PARLEY_TEST_CASSANDRA=1 requires, in a throwaway keyspace).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import cassandra from 'cassandra-driver';
import t, { type Test } from 'tap';
import { loadConfig } from '../lib/config.ts';
import { CassandraStore } from '../storage/cassandra.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { ChunkedFileStore, DirFileStore, type FileStore } from '../storage/files.ts';

async function fileSuite(t: Test, files: FileStore): Promise<void> {
  const path = (name: string) => `1/${randomBytes(1).toString('hex')}/${randomBytes(12).toString('hex')}/${name}`;
  await t.test('files - a file reads back byte for byte with its type and name', async (t) => {
    const p = path('a.txt');
    await files.put(p, { contentType: 'text/plain', filename: 'a.txt', data: Buffer.from('hello files') });
    const got = await files.get(p);
    t.same([got?.contentType, got?.filename, got?.data.toString()], ['text/plain', 'a.txt', 'hello files']);
  });
  await t.test('files - large and binary files span chunks and come back whole', async (t) => {
    const data = randomBytes(700 * 1024 + 17);
    const p = path('big.bin');
    await files.put(p, { contentType: 'application/octet-stream', filename: 'big.bin', data });
    t.ok((await files.get(p))?.data.equals(data));
    const empty = path('empty');
    await files.put(empty, { contentType: 'text/plain', filename: 'empty', data: Buffer.alloc(0) });
    t.equal((await files.get(empty))?.data.length, 0);
  });
  await t.test('files - a missing file is undefined; a deleted file is gone', async (t) => {
    t.equal(await files.get(path('missing')), undefined);
    const p = path('gone.txt');
    await files.put(p, { contentType: 'text/plain', filename: 'gone.txt', data: Buffer.from('x') });
    await files.delete(p);
    t.equal(await files.get(p), undefined);
  });
  await t.test('files - paths that climb out or are absolute are refused', async (t) => {
    for (const bad of ['../x', '/etc/passwd', '1/../../x', '1//x', '']) await t.rejects(files.put(bad, { contentType: 'text/plain', filename: 'x', data: Buffer.from('x') }), bad);
  });
}

// Creating a Cassandra keyspace and its tables takes a while on 2 cores.
t.setTimeout(240_000);

const requireCassandra = process.env.PARLEY_TEST_CASSANDRA === '1';
const config = loadConfig({ PARLEY_CASSANDRA_CONTACT_POINTS: process.env.PARLEY_CASSANDRA_CONTACT_POINTS, PARLEY_CASSANDRA_DC: process.env.PARLEY_CASSANDRA_DC }).cassandra;
const keyspace = `parley_files_${randomBytes(5).toString('hex')}`;
const probe = new cassandra.Client({ contactPoints: config.contactPoints, localDataCenter: config.localDataCenter, socketOptions: { connectTimeout: 3000 } });
const reachable = await probe.connect().then(
  () => true,
  () => false,
);
await probe.shutdown().catch(() => {});

const dir = mkdtempSync(join(tmpdir(), 'parley-files-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

await t.test('directory', (t) => fileSuite(t, new DirFileStore(join(dir, 'uploads'))));

await t.test('chunks in the embedded store', async (t) => {
  const store = new EmbeddedStore(join(dir, 'lmdb'));
  t.teardown(() => store.close());
  await fileSuite(t, new ChunkedFileStore(store));
});

const admin = new cassandra.Client({ contactPoints: config.contactPoints, localDataCenter: config.localDataCenter, socketOptions: { connectTimeout: 3000 } });
if (!reachable && requireCassandra) t.fail(`cassandra not reachable at ${config.contactPoints.join(',')} but PARLEY_TEST_CASSANDRA=1`);
else if (!reachable) await t.test('chunks in Cassandra', { skip: 'Cassandra not reachable (PARLEY_TEST_CASSANDRA=1 makes this a failure)' }, async () => {});
else {
  await t.test('chunks in Cassandra', async (t) => {
    const store = await CassandraStore.connect({ ...config, keyspace, replicationFactor: 1 });
    t.teardown(async () => {
      await store.close();
      await admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
      await admin.shutdown();
    });
    await store.init();
    await fileSuite(t, new ChunkedFileStore(store));
  });
}
