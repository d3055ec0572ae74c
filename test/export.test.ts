// Export one organization to a file and import it into another deployment: embedded -> embedded, and
// embedded -> cluster (PARLEY_TEST_CASSANDRA=1), checked through the HTTP API of a server started on the
// target; IDs, logins and upload links stay valid. And what the importer refuses.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { DIRECTORY_ID, directoryRef, SERVER_CALLER } from '../actors/directory/ref.ts';
import { realmRef } from '../actors/realm/ref.ts';
import { shardOf } from '../actors/subjects.ts';
import { dropKeyspace } from '../scripts/drop-keyspace.ts';
import { CassandraStore } from '../storage/cassandra.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { exportRealm, ExportError, freeRealmId, importRealm, isRealmPartition, NOT_REALM_TABLES, REALM_TABLES, registerImported } from '../storage/export.ts';
import { startParley } from '../lib/app.ts';
import { loadConfig } from '../lib/config.ts';
import { ChunkedFileStore, DirFileStore } from '../storage/files.ts';
import type { Store } from '../storage/store.ts';
import { T, timerHour } from '../storage/tables.ts';
import { checkRestored, dirWithDemo, hostGet, NO_LIMITS, populate } from './helpers/backup-org.ts';
import { serverFor } from './helpers/server.ts';

const REALM = 1; // the demo realm
const scratch = mkdtempSync(join(tmpdir(), 'parley-export-'));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

// The source: an embedded server with the fixture and a scheduled message (a durable timer), exported while it runs.
const source = await serverFor(t, { env: NO_LIMITS });
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
  const target = await serverFor(t, { dataDir: dir, env: NO_LIMITS });
  await checkRestored(t, target, org, org.sent);
  await scheduledBack(t, target);
});

t.test('export - imported under another realm ID: keys, upload paths and links rewritten, registered in the directory, served at its host', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-import-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new EmbeddedStore(join(dir, 'data'));
  const files = new DirFileStore(join(dir, 'data', 'uploads'));
  const got = await importRealm(store, files, file, { shards: 1, realmId: 2, subdomain: 'acme' });
  t.match(got, { realmId: 2, exportedRealmId: REALM, subdomain: 'acme', owner: { email: source.demo.owner.email } });
  const users = [];
  for await (const r of store.scan('users', '')) users.push(r.pk);
  t.ok(users.length > 0 && users.every((pk) => pk.startsWith('2:')), 'every user row is under realm 2');
  const newPath = org.upload.url.replace(`/user_uploads/${REALM}/`, '/user_uploads/2/').slice('/user_uploads/'.length);
  t.ok(await files.get(newPath), 'the upload is stored under realm 2');
  t.ok(await T.attachments.at(2, newPath).get(store), 'and recorded there');
  await store.close();

  process.env.PARLEY_DATA_DIR = join(dir, 'data'); // where this process's file store is (storage/files.ts)
  process.env.PARLEY_ADDRESS_BACKFILL_BATCH = '3'; // the address index's backfill in several turns
  t.teardown(() => delete process.env.PARLEY_ADDRESS_BACKFILL_BATCH);
  const start = () => startParley(loadConfig({ ...process.env, PARLEY_MODE: 'embedded', PARLEY_PORT: '0', PARLEY_METRICS_PORT: '0', PARLEY_DATA_DIR: join(dir, 'data'), PARLEY_LOG_LEVEL: 'warn' }));
  let parley = await start();
  t.teardown(() => parley.stop());
  t.equal(await freeRealmId(parley.actors), 1, 'an empty directory: realm 1 is free');
  const registered = await registerImported(parley.actors, got);
  t.match(registered, { realmId: 2, subdomain: 'acme', name: 'Parley Demo' });
  t.equal(await freeRealmId(parley.actors), 3);

  const host = `acme.127.0.0.1:${parley.port}`;
  const me = await hostGet(parley.port!, host, '/api/v1/users/me', org.user.creds);
  t.equal(JSON.parse(me.body.toString()).user_id, org.user.id, 'the imported user logs in at the host, same ID and key');
  const narrow = encodeURIComponent(JSON.stringify([{ operator: 'channel', operand: org.channel }]));
  const msgs = JSON.parse((await hostGet(parley.port!, host, `/api/v1/messages?anchor=newest&num_before=100&num_after=0&apply_markdown=false&narrow=${narrow}`, org.user.creds)).body.toString());
  const byId = new Map((msgs.messages as Array<{ id: number; content: string }>).map((m) => [m.id, m.content]));
  const expected = org.sent.map((m) => ({ id: m.id, content: m.content.replaceAll(`/user_uploads/${REALM}/`, '/user_uploads/2/') }));
  t.same(expected.filter((m) => byId.get(m.id) !== m.content), [], 'every message, same ID, links pointing at realm 2');
  const download = await hostGet(parley.port!, host, `/user_uploads/${newPath}`, org.user.creds);
  t.equal(download.status, 200);
  t.ok(download.body.equals(org.upload.data), 'the linked upload is served with its bytes');
  const root = await hostGet(parley.port!, `127.0.0.1:${parley.port}`, '/api/v1/users/me', org.user.creds);
  t.match({ status: root.status, ...JSON.parse(root.body.toString()) }, { status: 404, code: 'NONEXISTENT_SUBDOMAIN' }, 'and not at the root domain, which has no organization here');

  // The export carries no address index: the directory had the adopted realm backfill it (actors/directory/accounts.ts).
  const indexed = async () => {
    const until = Date.now() + 20_000;
    while (!(await parley.actors.call(directoryRef, DIRECTORY_ID, { type: 'addressesIndexed', caller: SERVER_CALLER, realmId: 2 })).indexed && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    return (await parley.actors.call(directoryRef, DIRECTORY_ID, { type: 'accountsWithAddress', caller: SERVER_CALLER, address: org.user.email.toUpperCase() })).accounts;
  };
  t.same(await indexed(), [{ realmId: 2, userId: org.user.id }], 'the imported accounts are in the address index');
  t.same((await parley.actors.call(directoryRef, DIRECTORY_ID, { type: 'accountsWithAddress', caller: SERVER_CALLER, address: source.demo.owner.email })).accounts.map((a) => a.realmId), [2], 'every batch of the backfill (3 user IDs a turn): the owner too');
  // Who may write the index: an organization's follow-up (the server for that realm) only; never a user, nor the server for no organization.
  const write = (caller: { realmId: number; userId: number | null }) => parley.actors.call(directoryRef, DIRECTORY_ID, { type: 'setAccountAddresses', caller, entries: [{ userId: org.user.id, address: 'intruder@x.example' }] });
  await t.rejects(write({ realmId: 2, userId: org.user.id }), { message: 'Only an organization indexes its addresses' }, 'a user is refused');
  await t.rejects(write(SERVER_CALLER), { message: 'Only an organization indexes its addresses' }, 'the server for no organization is refused');
  await t.rejects(parley.actors.call(directoryRef, DIRECTORY_ID, { type: 'accountsWithAddress', caller: { realmId: 2, userId: org.user.id }, address: org.user.email }), { message: 'Only the server reads the address index' }, 'a user reads nothing of it');
  t.same((await parley.actors.call(directoryRef, DIRECTORY_ID, { type: 'accountsWithAddress', caller: SERVER_CALLER, address: 'intruder@x.example' })).accounts, [], 'nothing was written');
  // As a server older than the index left it: no index rows, the organization not marked. The directory's next load backfills it.
  await parley.stop();
  const old = new EmbeddedStore(join(dir, 'data'));
  const writer = await old.claim('test:older-server', 1);
  await writer!.commit([T.accountIndexDone.at(2).delete(), T.accountAddresses.at(org.user.email.toLowerCase(), 2, org.user.id).delete(), T.accountAddressOf.at(2, org.user.id).delete()]);
  t.same(await T.accountAddresses.partition(org.user.email.toLowerCase()).values(old), [], 'the index rows are gone');
  await old.close();
  parley = await start();
  t.same(await indexed(), [{ realmId: 2, userId: org.user.id }], 'backfilled again at the directory\'s load');
});

t.test('export - an export by a server of before FL 468: its push-account rows are dropped, its registration timer goes when due', async (t) => {
  const lines = gunzipSync(readFileSync(file)).toString().trimEnd().split('\n');
  const end = JSON.parse(lines.at(-1)!) as { end: { rows: number; timers: number; files: number } };
  // What such a server wrote for a registration by push account (FL 406-467), and the timer that handed it to the service.
  const account = { userId: org.user.id, pushAccountId: 7, tokenKind: 'fcm', pushKey: '', bouncerPublicKey: 'k', encryptedPushRegistration: 'r', status: 'pending', errorCode: null, bouncerDeviceId: null };
  const timer = { kind: 'realm', actor: String(REALM), name: 'pushE2eeRegister', ref: 7, at: Date.now() - 1000, payload: { userId: org.user.id, pushAccountId: 7 } };
  const old = join(scratch, 'before-468.gz');
  const body = [...lines.slice(0, -1), JSON.stringify({ row: ['e2ee_push_devices', String(REALM), `${org.user.id}:7`, account] }), JSON.stringify({ timer })];
  writeFileSync(old, gzipSync(`${[...body, JSON.stringify({ end: { ...end.end, rows: end.end.rows + 1, timers: end.end.timers + 1 } })].join('\n')}\n`));
  const dir = dirWithDemo(source);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const filed = async () => {
    const store = new EmbeddedStore(join(dir, 'data'));
    try {
      return (await T.timers.partition(shardOf(realmRef.placement(String(REALM)), 1), timerHour(timer.at)).values(store)).some((x) => x.name === 'pushE2eeRegister');
    } finally {
      await store.close();
    }
  };
  {
    const store = new EmbeddedStore(join(dir, 'data'));
    const got = await importRealm(store, new DirFileStore(join(dir, 'data', 'uploads')), old, { shards: 1 });
    await store.close();
    t.match(got, { realmId: REALM, rows: end.end.rows + 1, timers: end.end.timers + 1 }, 'the import counts the old row and takes the timer');
  }
  t.ok(await filed(), 'the old timer is filed');
  const target = await serverFor(t, { dataDir: dir, env: NO_LIMITS });
  await checkRestored(t, target, org, org.sent);
  // Due at the start: run (and deleted) once the realm is up, which checkRestored made it.
  await new Promise((r) => setTimeout(r, 2000));
  await target.stop();
  t.notOk(await filed(), 'the old registration timer was deleted when due, with nothing to do');
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
  const target = await serverFor(t, { dataDir: dir, env: { ...NO_LIMITS, PARLEY_MODE: 'cluster', PARLEY_CASSANDRA_KEYSPACE: keyspace, PARLEY_REDIS_PREFIX: `parley_${keyspace}`, PARLEY_SHARDS: '4' } });
  await checkRestored(t, target, org, org.sent);
  await scheduledBack(t, target);
});
