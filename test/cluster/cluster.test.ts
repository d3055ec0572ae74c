// The cluster as users run it: two gateways and two actor nodes as separate
// processes over real NATS, Redis and Cassandra (started by test/run.sh).
import t from 'tap';
import { Redis } from 'ioredis';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { realmRef } from '../../actors/realm/ref.ts';
import { shardOf } from '../../actors/subjects.ts';
import { launchCluster, stopAll, type ClusterProcess } from '../../scripts/cluster-launcher.ts';
import { Api, uniq } from '../helpers/api.ts';
import { register, waitFor } from '../helpers/events.ts';
import { readZuliprc } from '../helpers/server.ts';

const SHARDS = 64;
const tag = `c${process.pid}${Math.random().toString(36).slice(2, 6)}`;
const demoDir = mkdtempSync(join(tmpdir(), 'parley-cluster-'));
const env = {
  PARLEY_CASSANDRA_KEYSPACE: `parley_${tag}`,
  PARLEY_REDIS_PREFIX: `parley_${tag}`,
  PARLEY_LEASE_TTL_MS: '2000',
  PARLEY_HEARTBEAT_SECS: '5',
  PARLEY_REQUEST_TIMEOUT_MS: '3000',
  PARLEY_SHARDS: String(SHARDS),
  PARLEY_LOG_LEVEL: 'warn',
};
const procs = await launchCluster({ demoDir, env });
const redis = new Redis(process.env.PARLEY_REDIS_URL ?? 'redis://127.0.0.1:6379');
t.teardown(async () => {
  await stopAll(procs);
  redis.disconnect();
  rmSync(demoDir, { recursive: true, force: true });
});

const [gw1, gw2] = procs.filter((p) => p.role === 'gateway').map((p) => p.url) as [string, string];
const owner = new Api(gw1, readZuliprc(join(demoDir, 'owner.zuliprc')));
const maria = new Api(gw2, readZuliprc(join(demoDir, 'member1.zuliprc')));
const mariaId = (await maria.ok('POST', '/register', { fetch_event_types: ['realm_user'] })).user_id as number;

/** The realm's shard lease right now: owner node name and fencing token. */
async function realmLease(): Promise<{ name: string; token: number } | null> {
  const value = await redis.get(`parley_${tag}:lease:${shardOf(realmRef.placement('1'), SHARDS)}`);
  if (!value) return null;
  return { name: value.slice(0, value.lastIndexOf(':')), token: Number(value.slice(value.lastIndexOf(':') + 1)) };
}

/** The actor node process that holds the realm's shard right now. */
async function realmOwner(): Promise<ClusterProcess | undefined> {
  const lease = await realmLease();
  return procs.find((p) => p.role === 'actors' && p.name === lease?.name);
}

t.test('cluster - shards are split between the two actor nodes', async (t) => {
  const owners = new Map<string, number>();
  for (let s = 0; s < SHARDS; s++) {
    const v = await redis.get(`parley_${tag}:lease:${s}`);
    t.ok(v, `shard ${s} has an owner`);
    const node = v!.slice(0, v!.lastIndexOf(':'));
    owners.set(node, (owners.get(node) ?? 0) + 1);
  }
  t.same([...owners.values()].sort(), [SHARDS / 2, SHARDS / 2], 'a fair share each');
});

t.test('cluster - send through gateway 1, receive the long poll through gateway 2', async (t) => {
  const channel = uniq('cross');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [mariaId] });
  const q = await register(maria.at(gw1), { event_types: ['message'] });
  q.api = maria.at(gw2); // registered through gateway 1, polled through gateway 2
  const waiting = waitFor(q, (e) => e.type === 'message');
  await new Promise((r) => setTimeout(r, 100));
  const started = performance.now();
  const sent = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'x', content: 'across gateways' });
  const got = await waiting;
  t.equal(got.message.id, sent.id);
  t.ok(performance.now() - started < 1000, 'well under a second');
});

/** Sends through both gateways from `workers` loops until `stop()`; records every outcome. */
function traffic(channel: string, workers = 4) {
  const ok = new Map<number, string>();
  const clean: number[] = [];
  const wrong: string[] = [];
  let running = true;
  let n = 0;
  const loops = Array.from({ length: workers }, async (_, w) => {
    while (running) {
      const content = `w${w}-n${n++}`;
      const api = n % 2 ? owner : owner.at(gw2);
      try {
        const r = await api.post('/messages', { type: 'stream', to: channel, topic: 'load', content }, { signal: AbortSignal.timeout(15_000) });
        if (r.status === 200 && r.body.result === 'success' && typeof r.body.id === 'number') {
          if (ok.has(r.body.id)) wrong.push(`id ${r.body.id} answered twice`);
          ok.set(r.body.id, content);
        } else if (r.status === 503 && r.body.result === 'error') clean.push(Date.now());
        else wrong.push(`${r.status} ${JSON.stringify(r.body)}`);
      } catch (err) {
        wrong.push(`transport error: ${(err as Error).message}`);
      }
    }
  });
  return {
    ok,
    clean,
    wrong,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

async function checkHistory(t: { same(found: unknown, wanted: unknown, msg: string): unknown }, channel: string, ok: Map<number, string>) {
  const got = await maria.ok('GET', '/messages', { anchor: 'oldest', num_before: 0, num_after: 5000, narrow: [['stream', channel]], apply_markdown: false });
  const stored = new Map<number, string>(got.messages.map((m: any) => [m.id, m.content]));
  const missing = [...ok.keys()].filter((id) => stored.get(id) !== ok.get(id));
  t.same(missing, [], `every one of ${ok.size} messages answered success is in GET /messages with its content`);
}

t.test('cluster - kill -9 of the realm\'s actor node under traffic: shards move, nothing answered success is lost', async (t) => {
  const channel = uniq('failover');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [mariaId] });
  const victim = await realmOwner();
  t.ok(victim, 'found the node that owns the realm');
  const load = traffic(channel);
  await new Promise((r) => setTimeout(r, 1500));
  const before = load.ok.size;
  const killedAt = Date.now();
  victim!.child.kill('SIGKILL');
  // Wait for the realm to be served again, then keep sending a little longer.
  let recoveredAt = 0;
  while (!recoveredAt && Date.now() - killedAt < 20_000) {
    await new Promise((r) => setTimeout(r, 100));
    const survivor = await realmOwner();
    if (survivor && survivor !== victim && load.ok.size > before + 5) recoveredAt = Date.now();
  }
  await new Promise((r) => setTimeout(r, 1500));
  await load.stop();
  t.ok(recoveredAt > 0, `the realm's shard moved and sends succeed again after ${((recoveredAt - killedAt) / 1000).toFixed(1)} s`);
  t.ok(recoveredAt - killedAt < 10_000, 'within seconds');
  t.same(load.wrong, [], 'no wrong answers: only successes and clean 503s');
  t.ok(before > 10 && load.ok.size > before, `sent ${load.ok.size} (${before} before the kill), ${load.clean.length} clean 503s during the move`);
  await checkHistory(t, channel, load.ok);
  const owners = new Set<string>();
  for (let s = 0; s < SHARDS; s++) {
    const v = await redis.get(`parley_${tag}:lease:${s}`);
    if (v) owners.add(v.slice(0, v.lastIndexOf(':')));
  }
  t.same([...owners], [procs.find((p) => p.role === 'actors' && p !== victim)!.name], 'the survivor owns every shard');
});

t.test('cluster - two owners are never both writing: a paused owner resumes fenced', async (t) => {
  // Restore two actor nodes: the kill above left one.
  const { startProcess, freePort } = await import('../../scripts/cluster-launcher.ts');
  procs.push(await startProcess('actors', 'actors-3', await freePort(), { PARLEY_DEMO_DIR: demoDir, ...env }, false));
  await new Promise((r) => setTimeout(r, 3000)); // the newcomer takes its fair share
  const channel = uniq('fenced');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [mariaId] });
  const paused = await realmOwner();
  const pausedToken = (await realmLease())!.token;
  t.ok(paused, 'found the realm owner');
  const load = traffic(channel, 3);
  await new Promise((r) => setTimeout(r, 1000));
  paused!.child.kill('SIGSTOP');
  // Paused past its lease: the other node takes the realm's shard and serves it.
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && ((await realmOwner()) ?? paused) === paused) await new Promise((r) => setTimeout(r, 200));
  const takeover = await realmOwner();
  const takeoverToken = (await realmLease())?.token ?? 0;
  t.ok(takeover && takeover !== paused, 'another node took the realm while the owner was paused');
  t.ok(takeoverToken > pausedToken, 'with a greater fencing token');
  const sentBeforeResume = load.ok.size;
  await new Promise((r) => setTimeout(r, 1500));
  paused!.child.kill('SIGCONT');
  await new Promise((r) => setTimeout(r, 3000));
  await load.stop();
  t.ok(load.ok.size > sentBeforeResume, 'sends kept succeeding through the new owner');
  t.same(load.wrong, [], 'no wrong answers, no message ID handed out twice');
  await checkHistory(t, channel, load.ok);
  // The resumed node may get shards again by rebalancing, but only under a new, greater token.
  const now = (await realmLease())!;
  t.ok(now.name === takeover!.name ? now.token === takeoverToken : now.token > takeoverToken, `realm lease now ${now.name}:${now.token}`);
  const ids = [...load.ok.keys()].sort((a, b) => a - b);
  t.equal(new Set(ids).size, ids.length, 'message IDs are unique');
});

t.test('cluster - SIGTERM of an actor node hands its shards over without failing requests', async (t) => {
  const channel = uniq('handover');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [mariaId] });
  const leaving = await realmOwner();
  t.ok(leaving, 'found the realm owner');
  const load = traffic(channel, 3);
  await new Promise((r) => setTimeout(r, 1000));
  const exited = new Promise<number | null>((r) => leaving!.child.once('exit', (code) => r(code)));
  leaving!.child.kill('SIGTERM');
  t.equal(await exited, 0, 'clean exit');
  await new Promise((r) => setTimeout(r, 2000));
  await load.stop();
  t.same(load.wrong, [], 'no wrong answers');
  t.equal(load.clean.length, 0, 'no request failed: the gateways retried while the shards moved');
  await checkHistory(t, channel, load.ok);
  const survivor = await realmOwner();
  t.ok(survivor && survivor !== leaving, `${survivor?.name} owns the realm now`);
});
