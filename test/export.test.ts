// Export one organization to a file and import it into another deployment: embedded -> embedded, and
// embedded -> cluster (PARLEY_TEST_CASSANDRA=1), checked through the HTTP API of a server started on the
// target; IDs, logins and upload links stay valid. And what the importer refuses.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { realmRef } from '../actors/realm/ref.ts';
import { shardOf } from '../actors/subjects.ts';
import { dropKeyspace } from '../scripts/drop-keyspace.ts';
import { CassandraStore } from '../storage/cassandra.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { exportRealm, ExportError, importRealm, isRealmPartition, NOT_REALM_TABLES, REALM_TABLES } from '../storage/export.ts';
import { ChunkedFileStore, DirFileStore } from '../storage/files.ts';
import type { Store } from '../storage/store.ts';
import { T, timerHour } from '../storage/tables.ts';
import { checkRestored, dirWithDemo, populate } from './helpers/backup-org.ts';
import { serverFor } from './helpers/server.ts';

const REALM = 1; // the demo realm
const scratch = mkdtempSync(join(tmpdir(), 'parley-export-'));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

// The source: an embedded server with the fixture and a scheduled message (a durable timer), exported while it runs.
const source = await serverFor(t);
const org = await populate(source);
const deliverAt = Math.floor(Date.now() / 1000) + 3 * 3600;
const { stream_id } = await source.api.as(source.demo.owner).ok('GET', '/get_stream_id', { stream: org.channel });
const { scheduled_message_id } = await source.api.as(source.demo.owner).ok('POST', '/scheduled_messages', { type: 'stream', to: stream_id, topic: 'later', content: 'scheduled', scheduled_delivery_timestamp: deliverAt });
const file = join(scratch, 'org.parley.gz');
{
  const store = new EmbeddedStore(join(source.dataDir!, 'data'));
  try {
    const counts = await exportRealm(store, new DirFileStore(join(source.dataDir!, 'data', 'uploads')), REALM, file);
    t.ok(counts.rows > 50 && counts.files === 1 && counts.timers >= 1, `exported ${JSON.stringify(counts)}`);
  } finally {
    await store.close();
  }
}

t.test('export - every table but timers, timer cursors, file chunks and the directory is partitioned by realm first', async (t) => {
  for (const table of Object.values(T)) {
    const partition = table.partition as unknown as (...args: unknown[]) => { pk: string };
    const pk = partition(7, 3, 5).pk;
    if (NOT_REALM_TABLES.has(table.schema.name)) continue;
    t.ok(isRealmPartition(7, pk) && !isRealmPartition(70, pk), `${table.schema.name}: ${pk}`);
  }
  t.equal(REALM_TABLES.length + NOT_REALM_TABLES.size, Object.keys(T).length);
});

/** The scheduled message's timer is in the target's store, under the shard its realm actor has there. */
async function timerFiled(store: Store, shards: number): Promise<boolean> {
  const timers = await T.timers.partition(shardOf(realmRef.placement(String(REALM)), shards), timerHour(deliverAt * 1000)).values(store);
  return timers.some((x) => x.kind === 'realm' && x.actor === String(REALM) && x.ref === scheduled_message_id);
}

async function scheduledBack(t: Test, s: Awaited<ReturnType<typeof serverFor>>) {
  const r = await s.api.as(s.demo.owner).ok('GET', '/scheduled_messages');
  t.ok((r.scheduled_messages as Array<{ scheduled_message_id: number }>).some((m) => m.scheduled_message_id === scheduled_message_id), 'the scheduled message is back');
}

t.test('export - embedded to embedded: imported into a fresh deployment, served with the same IDs, logins and upload links', async (t) => {
  const dir = dirWithDemo(source);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new EmbeddedStore(join(dir, 'data'));
  const files = new DirFileStore(join(dir, 'data', 'uploads'));
  const got = await importRealm(store, files, file, { shards: 1 });
  t.match(got, { realmId: REALM, files: 1 });
  t.ok(await timerFiled(store, 1), 'the timer is filed');
  await t.rejects(importRealm(store, files, file, { shards: 1 }), { name: 'ExportError', message: /already an organization/ }, 'a second import of the realm is refused');
  await store.close();
  const target = await serverFor(t, { dataDir: dir });
  await checkRestored(t, target, org, org.sent);
  await scheduledBack(t, target);
});

t.test('export - refuses a truncated file, a row of another realm and a file that is no export, leaving the realm absent', async (t) => {
  const lines = gunzipSync(readFileSync(file)).toString().trimEnd().split('\n');
  const bad = (name: string, text: string) => {
    const path = join(scratch, name);
    writeFileSync(path, gzipSync(text));
    return path;
  };
  const truncated = bad('truncated.gz', `${lines.slice(0, -1).join('\n')}\n`);
  const foreign = bad('foreign.gz', [lines[0], JSON.stringify({ row: ['users', '2:0', 100, JSON.parse(lines[1]!).row?.[3]] }), ...lines.slice(1)].join('\n'));
  const plain = join(scratch, 'plain.txt');
  writeFileSync(plain, 'hello');
  const store = new EmbeddedStore(join(scratch, 'refusals'));
  const files = new DirFileStore(join(scratch, 'refusals', 'uploads'));
  t.teardown(() => store.close());
  await t.rejects(importRealm(store, files, truncated, { shards: 1 }), { name: 'ExportError', message: /truncated/ });
  await t.rejects(importRealm(store, files, foreign, { shards: 1 }), { name: 'ExportError', message: /not realm 1's/ });
  await t.rejects(importRealm(store, files, plain, { shards: 1 }), ExportError);
  t.equal(await T.realms.at(REALM).get(store), undefined, 'the realm does not exist after the refused imports');
  await t.rejects(exportRealm(store, files, 42, join(scratch, 'none.gz')), { message: /no organization with realm ID 42/ });
});

t.test('export - embedded to cluster: imported into a Cassandra keyspace with the uploads as chunks, served by a cluster-mode server', { skip: process.env.PARLEY_TEST_CASSANDRA !== '1' ? 'needs PARLEY_TEST_CASSANDRA=1' : false }, async (t) => {
  const keyspace = `parley_ex${process.pid}${Math.random().toString(36).slice(2, 6)}`;
  t.teardown(() => dropKeyspace(keyspace).catch(() => {}));
  const store = await CassandraStore.connect({
    contactPoints: (process.env.PARLEY_CASSANDRA_CONTACT_POINTS ?? '127.0.0.1:9042').split(','),
    localDataCenter: process.env.PARLEY_CASSANDRA_DC ?? 'datacenter1',
    keyspace,
    replicationFactor: 1,
  });
  t.teardown(() => store.close());
  await store.init();
  const got = await importRealm(store, new ChunkedFileStore(store), file, { shards: 4 });
  t.match(got, { realmId: REALM, files: 1 });
  t.ok(await timerFiled(store, 4), 'the timer is filed under its shard among 4');
  const dir = dirWithDemo(source);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const target = await serverFor(t, { dataDir: dir, env: { PARLEY_MODE: 'cluster', PARLEY_CASSANDRA_KEYSPACE: keyspace, PARLEY_REDIS_PREFIX: `parley_${keyspace}`, PARLEY_SHARDS: '4' } });
  await checkRestored(t, target, org, org.sent);
  await scheduledBack(t, target);
});
