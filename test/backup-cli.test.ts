// `parley backup | restore | export | import` against embedded servers: the commands an operator runs,
// their JSON output and exit codes, and the restored or imported organization checked through HTTP.
// (The cluster paths of the same library functions: test/backup.test.ts, test/export.test.ts.)
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t from 'tap';
import { dropKeyspace } from '../scripts/drop-keyspace.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { T } from '../storage/tables.ts';
import { checkRestored, dirWithDemo, hostGet, NO_LIMITS, populate } from './helpers/backup-org.ts';
import { serverFor } from './helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'parley-backup-cli-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

function parley(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), ...args], { cwd: work, env: { ...process.env, PARLEY_MODE: 'embedded', ...env } }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

const source = await serverFor(t, { env: NO_LIMITS });
const org = await populate(source, 5);
const sourceData = join(source.dataDir!, 'data');
const target = dirWithDemo(source);
t.teardown(() => rmSync(target, { recursive: true, force: true }));

t.test('backup cli - backup of a running server and restore into a new data directory; a second restore is refused', async (t) => {
  const b = await parley(['--json', 'backup', join(work, 'b1'), '--data-dir', sourceData]);
  t.equal(b.code, 0, b.stderr);
  t.match(JSON.parse(b.stdout), { mode: 'embedded', format: 'parley-backup' });
  const r = await parley(['--json', 'restore', join(work, 'b1'), '--data-dir', join(target, 'data')]);
  t.equal(r.code, 0, r.stderr);
  const again = await parley(['restore', join(work, 'b1'), '--data-dir', join(target, 'data')]);
  t.equal(again.code, 1);
  t.match(again.stderr, /not empty: restore into a new data directory/);
  const cluster = await parley(['backup', join(work, 'b2'), '--cassandra-data-dir', '/nowhere'], { PARLEY_MODE: 'cluster', PARLEY_CASSANDRA_JMX_PORT: '' });
  t.equal(cluster.code, 2, 'cluster mode without a JMX port is a usage error');
  t.match(cluster.stderr, /JMX port/);
});

t.test('backup cli - export from a running server, import into another under a new subdomain and realm ID, served at its host', async (t) => {
  const restored = await serverFor(t, { dataDir: target, env: NO_LIMITS });
  await checkRestored(t, restored, org, org.sent);

  // Deactivated first, as an operator moving it would: nobody writes to it during the export.
  const d = await parley(['org', 'deactivate', '.', '--data-dir', sourceData]);
  t.equal(d.code, 0, d.stderr);
  const file = join(work, 'org.parley.gz');
  const e = await parley(['--json', 'export', file, '--org', '.', '--data-dir', sourceData]);
  t.equal(e.code, 0, e.stderr);
  t.match(JSON.parse(e.stdout), { realmId: 1, subdomain: '', files: 1 });
  t.equal((await parley(['export', file, '--org', 'nope', '--data-dir', sourceData])).code, 2, 'an unknown organization is a usage error');

  // The restored deployment has the demo as realm 1: the import takes the next free ID.
  const i = await parley(['--json', 'import', file, '--subdomain', 'acme', '--data-dir', join(target, 'data')]);
  t.equal(i.code, 0, i.stderr);
  const imported = JSON.parse(i.stdout);
  t.match(imported, { realmId: 2, exportedRealmId: 1, subdomain: 'acme', organization: { realmId: 2, subdomain: 'acme' } });

  const port = Number(new URL(restored.urls[0]!).port);
  const host = `acme.127.0.0.1:${port}`;
  const me = await hostGet(port, host, '/api/v1/users/me', org.user.creds);
  t.equal(JSON.parse(me.body.toString()).user_id, org.user.id, 'the imported user logs in at acme with the same ID and key (the organization is active here)');
  const upload = await hostGet(port, host, org.upload.url.replace('/user_uploads/1/', '/user_uploads/2/'), org.user.creds);
  t.equal(upload.status, 200);
  t.ok(upload.body.equals(org.upload.data), 'the upload is served under the new realm ID');

  const taken = await parley(['import', file, '--subdomain', 'acme', '--data-dir', join(target, 'data')]);
  t.equal(taken.code, 2, 'a subdomain in use is a usage error');
  t.match(taken.stderr, /Subdomain 'acme' is organization 2's/);
  const down = await parley(['import', file, '--subdomain', 'other', '--data-dir', join(work, 'no-server')]);
  t.equal(down.code, 3, 'no running deployment: unreachable');
});

t.test('backup cli - forget-checkpoints before a rollback: every realm is marked to load from its tables, which the next start does (and then checkpoints again)', async (t) => {
  const s = await serverFor(t, { env: NO_LIMITS });
  const topic = `rollback ${Date.now()}`;
  await s.api.as(s.demo.owner).ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: 'before the rollback' });
  await s.stop();
  const data = join(s.dataDir!, 'data');
  const stale = async () => {
    const store = new EmbeddedStore(data);
    try {
      return await T.realmCheckpoints.at(1, 'stale').get(store);
    } finally {
      await store.close();
    }
  };
  t.notOk(await stale(), 'no realm is marked before');
  const f = await parley(['--json', 'forget-checkpoints', '--data-dir', data]);
  t.equal(f.code, 0, f.stderr);
  t.same(JSON.parse(f.stdout), { realms: [1] }, 'every organization of the deployment');
  t.ok(await stale(), 'the realm is marked: a build of either checkpoint format loads it from its tables');
  const again = await s.restart();
  t.teardown(() => again.stop());
  const r = await again.api.as(again.demo.owner).ok('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: JSON.stringify([{ operator: 'topic', operand: topic }]) });
  t.equal(r.messages[0]?.content, '<p>before the rollback</p>', 'the organization serves what it had');
  await again.stop();
  t.notOk(await stale(), 'the load from the tables wrote a new checkpoint, which clears the mark');
});

t.test('backup cli - import into a running cluster deployment over NATS and Cassandra, export it back from the cluster', { skip: process.env.PARLEY_TEST_CASSANDRA !== '1' ? 'needs PARLEY_TEST_CASSANDRA=1' : false }, async (t) => {
  const keyspace = `parley_cli${process.pid}${Math.random().toString(36).slice(2, 6)}`;
  t.teardown(() => dropKeyspace(keyspace).catch(() => {}));
  const env = { PARLEY_MODE: 'cluster', PARLEY_CASSANDRA_KEYSPACE: keyspace, PARLEY_REDIS_PREFIX: `parley_${keyspace}`, PARLEY_SHARDS: '4' };
  const home = mkdtempSync(join(tmpdir(), 'parley-cli-cluster-'));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const cluster = await serverFor(t, { dataDir: home, env: { ...NO_LIMITS, ...env } });
  const file = join(work, 'org.parley.gz');
  const i = await parley(['--json', 'import', file, '--subdomain', 'acme'], env);
  t.equal(i.code, 0, i.stderr);
  const imported = JSON.parse(i.stdout);
  t.match(imported, { realmId: 2, exportedRealmId: 1, subdomain: 'acme', files: 1 });
  const port = Number(new URL(cluster.urls[0]!).port);
  const host = `acme.127.0.0.1:${port}`;
  t.equal(JSON.parse((await hostGet(port, host, '/api/v1/users/me', org.user.creds)).body.toString()).user_id, org.user.id, 'the imported user logs in at acme');
  const upload = await hostGet(port, host, org.upload.url.replace('/user_uploads/1/', '/user_uploads/2/'), org.user.creds);
  t.ok(upload.status === 200 && upload.body.equals(org.upload.data), 'the upload is served from Cassandra under the new realm ID');
  const back = await parley(['--json', 'export', join(work, 'back.parley.gz'), '--org', 'acme'], env);
  t.equal(back.code, 0, back.stderr);
  t.match(JSON.parse(back.stdout), { realmId: 2, subdomain: 'acme', files: 1, timers: imported.timers }, 'the same uploads and timers come back out');
});
