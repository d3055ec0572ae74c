/**
 * The operator's CLI against a cluster of its own: `parley cluster status`
 * sees both actor nodes and every shard, and `parley cluster drain` hands a
 * node's shards to the other while clients keep sending.
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import t from 'tap';
import { startTestCluster, SHARDS } from './helpers.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const cluster = await startTestCluster();
t.teardown(() => cluster.stop());

function cli(args: string[]): Promise<any> {
  return new Promise((done, fail) => {
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), '--json', ...args], { env: { ...process.env, ...cluster.env, PARLEY_MODE: 'cluster' } }, (err, stdout, stderr) =>
      err ? fail(new Error(`parley ${args.join(' ')}: ${stderr}`)) : done(JSON.parse(stdout)),
    );
  });
}

t.test('cli - cluster status sees both actor nodes and every shard owned', async (t) => {
  const status = await cli(['cluster', 'status']);
  const names = status.nodes.map((n: any) => n.nodeId).sort();
  t.same(names, ['actors-1', 'actors-2']);
  t.equal(status.shards.length, SHARDS);
  t.ok(status.shards.every((s: any) => names.includes(s.owner)), 'every shard owned by a live node');
  t.equal(status.nodes.reduce((n: number, x: any) => n + x.shards.length, 0), SHARDS);
  t.ok(status.nodes.every((n: any) => n.shards.length > 0), 'both nodes hold shards');
});

t.test('cli - cluster drain hands the realm owner\'s shards over while a client keeps sending', async (t) => {
  const owner = await cluster.realmOwner();
  t.ok(owner, 'the realm has an owner');
  const topic = `drain-${process.pid}`;
  let sent = 0;
  let failures = 0;
  let stop = false;
  const sending = (async () => {
    while (!stop || sent < 20) {
      const r = await cluster.member.post('/messages', { type: 'stream', to: 'general', topic, content: `m${sent}` });
      // A client retries a 503 (Zulip's clients do); anything else is a failure.
      if (r.status === 200) sent++;
      else if (r.status !== 503) failures++;
      if (sent >= 40) break;
    }
  })();
  const drained = await cli(['cluster', 'drain', owner!.name]);
  t.same(drained.shards, [], 'the drained node holds nothing');
  const next = await cluster.waitForNewOwner(owner);
  t.ok(next && next !== owner, 'the other node took the realm');
  stop = true;
  await sending;
  t.equal(failures, 0, 'no request failed other than with a retryable 503');
  const status = await cli(['cluster', 'status']);
  t.same(status.nodes.map((n: any) => n.nodeId), [next!.name], 'the drained node left the cluster');
  t.ok(status.shards.every((s: any) => s.owner === next!.name));
  const history = await cluster.member.ok('GET', '/messages', { anchor: 'newest', num_before: 100, num_after: 0, narrow: [{ operator: 'topic', operand: topic }] });
  t.equal(history.messages.length, sent, 'every acknowledged send is in the history');
});
