/**
 * A node's death shows up as latency, not errors. Sends flow steadily through
 * both gateways; the realm's owner node is killed with SIGKILL between two
 * sends; the sends that follow wait (the gateway's ActorClient retries a
 * shard that has no owner for `shardMoveWaitMs` of the lease TTL) until
 * the other node has taken the shard over, and all of them succeed.
 *
 * The kill comes while no send is in flight: a send the dead node had
 * received but not answered may have run, so it ends as a 503 at its
 * timeout and is never retried (ActorClient) — what is measured here is
 * everything sent after the death.
 */
import t from 'tap';
import { shardMoveWaitMs } from '../../actors/runtime/client.ts';
import { uniq } from '../helpers/api.ts';
import { channelSend, checkAcked, type Sent, startTestCluster, transportFailure } from './helpers.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const c = await startTestCluster();
t.teardown(() => c.stop());

/** Two paced senders, one per gateway; `hold()` waits until neither has a send in flight and keeps them from starting one. */
function steadySends(channel: string) {
  const send = channelSend(channel);
  const answers: Sent[] = [];
  const wrong: string[] = [];
  let inFlight = 0;
  let running = true;
  let held: Promise<void> | null = null;
  let n = 0;
  const loops = [0, 1].map(async (gateway) => {
    const api = c.owner.at(c.gateways[gateway as 0 | 1]);
    while (running) {
      if (held) await held;
      const content = `${uniq('takeover')}-${n++}`;
      const started = Date.now();
      inFlight++;
      try {
        const r = await send(content, api);
        const at = Date.now();
        if (r.status === 200 && r.body.result === 'success') answers.push({ content, status: 200, id: r.body.id, gateway, at, ms: at - started });
        else {
          answers.push({ content, status: r.status, id: null, gateway, at, ms: at - started });
          wrong.push(`gateway ${gateway + 1}: ${r.status} ${JSON.stringify(r.body)} after ${at - started} ms`);
        }
      } catch (err) {
        wrong.push(transportFailure(gateway, started, err));
      } finally {
        inFlight--;
      }
      await sleep(20);
    }
  });
  return {
    answers,
    wrong,
    /** Resolves, with no send in flight, once `during` has run; senders wait meanwhile. */
    async hold(during: () => Promise<void>): Promise<void> {
      let release!: () => void;
      held = new Promise((r) => (release = r));
      while (inFlight > 0) await sleep(1);
      try {
        await during();
      } finally {
        held = null;
        release();
      }
    },
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

t.test('takeover - kill -9 of the realm owner under steady sends: every send succeeds, later, and is in history', async (t) => {
  const channel = uniq('takeover');
  await c.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  const victim = await c.realmOwner();
  t.ok(victim, 'the realm has an owner');
  const sends = steadySends(channel);
  // Traffic flowing first (more than 10 answers, however loaded the machine), then the kill.
  for (const until = Date.now() + 15_000; sends.answers.length <= 10 && Date.now() < until; ) await sleep(100);
  await sleep(500);
  const before = sends.answers.length;
  let killedAt = 0;
  await sends.hold(async () => {
    const exited = new Promise((r) => victim!.child.once('exit', r));
    victim!.child.kill('SIGKILL');
    killedAt = Date.now();
    await exited;
  });
  const next = await c.waitForNewOwner(victim, 20_000);
  t.ok(next && next !== victim, `the other node took the realm (${next?.name})`);
  await sleep(2000);
  await sends.stop();

  const after = sends.answers.filter((a) => a.at - a.ms >= killedAt);
  const acked = sends.answers.filter((a) => a.status === 200);
  const normal = sends.answers.filter((a) => a.at - a.ms < killedAt).map((a) => a.ms).sort((x, y) => x - y);
  const slowest = Math.max(...after.map((a) => a.ms));
  const firstOk = Math.min(...after.filter((a) => a.status === 200).map((a) => a.at));
  t.comment(
    `${before} sends before the kill (median ${normal[normal.length >> 1]} ms); ${after.length} sent after it: ` +
      `the slowest waited ${slowest} ms, the first success came ${firstOk - killedAt} ms after the kill ` +
      `(lease TTL ${c.env.PARLEY_LEASE_TTL_MS} ms, retry budget ${shardMoveWaitMs(Number(c.env.PARLEY_LEASE_TTL_MS))} ms)`,
  );
  t.same(sends.wrong, [], 'no send answered an error (no 503), none failed at the transport');
  t.ok(before > 10, `traffic before the kill (${before})`);
  t.ok(after.length >= 4 && after.every((a) => a.status === 200), `every send after the kill succeeded (${after.length})`);
  t.ok(slowest > 500, 'the sends that came during the takeover waited for it (the death is seen as latency)');
  await checkAcked(t, c.owner, channel, acked);
});
