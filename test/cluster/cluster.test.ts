// The cluster as users run it: two gateways and two actor nodes as separate
// processes over real NATS, Redis and Cassandra (started by test/run.sh).
import t from 'tap';
import { freePort, startProcess } from '../../scripts/cluster-launcher.ts';
import { uniq } from '../helpers/api.ts';
import { register, waitFor } from '../helpers/events.ts';
import { channelSend, checkAcked, SHARDS, startTestCluster, traffic } from './helpers.ts';

const c = await startTestCluster();
t.teardown(() => c.stop());
const { owner, gateways } = c;
const maria = c.member;

async function channelWithMaria(): Promise<string> {
  const channel = uniq('ch');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [c.memberId] });
  return channel;
}

t.test('cluster - shards are split between the two actor nodes', async (t) => {
  const owners = new Map<string, number>();
  for (let s = 0; s < SHARDS; s++) {
    const v = await c.redis.get(`parley_${c.tag}:lease:${s}`);
    t.ok(v, `shard ${s} has an owner`);
    const node = v!.slice(0, v!.lastIndexOf(':'));
    owners.set(node, (owners.get(node) ?? 0) + 1);
  }
  t.same([...owners.values()].sort(), [SHARDS / 2, SHARDS / 2], 'a fair share each');
});

t.test('cluster - send through gateway 1, receive the long poll through gateway 2', async (t) => {
  const channel = await channelWithMaria();
  const q = await register(maria.at(gateways[0]), { event_types: ['message'] });
  q.api = maria.at(gateways[1]); // registered through gateway 1, polled through gateway 2
  const waiting = waitFor(q, (e) => e.type === 'message');
  await new Promise((r) => setTimeout(r, 100));
  const started = performance.now();
  const sent = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'x', content: 'across gateways' });
  const got = await waiting;
  t.equal(got.message.id, sent.id);
  t.ok(performance.now() - started < 1000, 'well under a second');
});

t.test("cluster - kill -9 of the realm's actor node under traffic: shards move, nothing answered success is lost", async (t) => {
  const channel = await channelWithMaria();
  const victim = await c.realmOwner();
  t.ok(victim, 'found the node that owns the realm');
  const load = traffic(c, channelSend(channel));
  // Traffic flowing first (more than 10 sends acknowledged, however loaded the machine), then the kill.
  for (const until = Date.now() + 15_000; load.acked().length <= 10 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 500));
  const before = load.acked().length;
  const killedAt = Date.now();
  victim!.child.kill('SIGKILL');
  let recoveredAt = 0;
  while (!recoveredAt && Date.now() - killedAt < 20_000) {
    await new Promise((r) => setTimeout(r, 100));
    const survivor = await c.realmOwner();
    if (survivor && survivor !== victim && load.acked().length > before + 5) recoveredAt = Date.now();
  }
  await new Promise((r) => setTimeout(r, 1500));
  await load.stop();
  t.ok(recoveredAt > 0, `the realm's shard moved and sends succeed again after ${((recoveredAt - killedAt) / 1000).toFixed(1)} s`);
  t.ok(recoveredAt - killedAt < 10_000, 'within seconds');
  t.same(load.wrong, [], 'no wrong answers: only successes and clean 503s');
  t.ok(before > 10 && load.acked().length > before, `sent ${load.acked().length} (${before} before the kill), ${load.clean().length} clean 503s during the move`);
  await checkAcked(t, maria, channel, load.acked());
  const owners = new Set<string>();
  for (let s = 0; s < SHARDS; s++) {
    const v = await c.redis.get(`parley_${c.tag}:lease:${s}`);
    if (v) owners.add(v.slice(0, v.lastIndexOf(':')));
  }
  t.same([...owners], [c.procs.find((p) => p.role === 'actors' && p !== victim)!.name], 'the survivor owns every shard');
});

t.test('cluster - two owners are never both writing: a paused owner resumes fenced', async (t) => {
  // Restore two actor nodes: the kill above left one.
  c.procs.push(await startProcess('actors', 'actors-3', await freePort(), { PARLEY_DEMO_DIR: c.demoDir, ...c.env }, false));
  // The newcomer takes its fair share (waited for: a request while shards move may outwait its retries on a loaded machine).
  for (const until = Date.now() + 60_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
    const held = await Promise.all(Array.from({ length: SHARDS }, (_, s) => c.redis.get(`parley_${c.tag}:lease:${s}`)));
    if (held.filter((v) => v?.startsWith('actors-3:')).length === SHARDS / 2) break;
  }
  const channel = await channelWithMaria();
  const paused = await c.realmOwner();
  const pausedToken = (await c.realmLease())!.token;
  t.ok(paused, 'found the realm owner');
  const load = traffic(c, channelSend(channel), 3);
  await new Promise((r) => setTimeout(r, 1000));
  paused!.child.kill('SIGSTOP');
  // NATS drops the paused node's subscriptions after two missed pings (~4-6 s);
  // the new owner then loads the realm. A loaded CI machine needs the margin.
  const takeover = await c.waitForNewOwner(paused, 30_000);
  const takeoverToken = (await c.realmLease())?.token ?? 0;
  t.ok(takeover && takeover !== paused, 'another node took the realm while the owner was paused');
  t.ok(takeoverToken > pausedToken, 'with a greater fencing token');
  const sentBeforeResume = load.acked().length;
  await new Promise((r) => setTimeout(r, 1500));
  paused!.child.kill('SIGCONT');
  await new Promise((r) => setTimeout(r, 3000));
  await load.stop();
  t.ok(load.acked().length > sentBeforeResume, 'sends kept succeeding through the new owner');
  t.same(load.wrong, [], 'no wrong answers');
  await checkAcked(t, maria, channel, load.acked());
  // The resumed node may get shards again by rebalancing, but only under a new, greater token.
  const now = (await c.realmLease())!;
  t.ok(now.token > takeoverToken || (now.token === takeoverToken && now.name === takeover?.name), `realm lease now ${now.name}:${now.token}`);
});

t.test('cluster - SIGTERM of an actor node hands its shards over without failing requests', async (t) => {
  const channel = await channelWithMaria();
  const leaving = await c.realmOwner();
  t.ok(leaving, 'found the realm owner');
  const load = traffic(c, channelSend(channel), 3);
  await new Promise((r) => setTimeout(r, 1000));
  const exited = new Promise<number | null>((r) => leaving!.child.once('exit', (code) => r(code)));
  leaving!.child.kill('SIGTERM');
  t.equal(await exited, 0, 'clean exit');
  await new Promise((r) => setTimeout(r, 2000));
  await load.stop();
  t.same(load.wrong, [], 'no wrong answers');
  t.equal(load.clean().length, 0, 'no request failed: the gateways retried while the shards moved');
  await checkAcked(t, maria, channel, load.acked());
  const survivor = await c.realmOwner();
  t.ok(survivor && survivor !== leaving, `${survivor?.name} owns the realm now`);
});
