// Chaos under traffic: kill -9 and restart of Cassandra, of NATS, of Redis
// and of one gateway, each while sends go through both gateways and a long
// poll waits for their events. The cluster runs on a private set of services
// (test/cluster/services.ts), never on the shared ones. For each outage:
// every answer is a success or a clean 503 envelope, in bounded time; the
// cluster recovers on its own (the time is measured and printed); and every
// message answered `success` is in history exactly once; and no event queue
// skipped one of them and went on (one that may have missed events ends).
import t, { type Test } from 'tap';
import { shardMoveWaitMs } from '../../actors/runtime/client.ts';
import { startProcess } from '../../scripts/cluster-launcher.ts';
import { uniq } from '../helpers/api.ts';
import { channelSend, checkAcked, type Sent, startTestCluster, type TestCluster, traffic, transportFailure, transportFailureSent } from './helpers.ts';
import { type Service, startPrivateServices } from './services.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const t0 = performance.now();
const services = await startPrivateServices();
const t1 = performance.now();
let c: TestCluster;
try {
  c = await startTestCluster(services.env);
} catch (err) {
  await services.stop();
  throw err;
}
t.comment(`private NATS, Redis and Cassandra started in ${((t1 - t0) / 1000).toFixed(1)} s, the cluster on them (schema included) in ${((performance.now() - t1) / 1000).toFixed(1)} s`);
t.teardown(async () => {
  await c.stop().catch((err: Error) => t.comment(`cluster stop: ${err.message}`));
  await services.stop();
});
const maria = c.member;

/** No answer may take longer: the gateway's retries of a moving shard (`shardMoveWaitMs`: 8 s here), then a last request's timeout (3 s here), with margin. */
const ANSWER_BOUND_MS = shardMoveWaitMs(Number(c.env.PARLEY_LEASE_TTL_MS)) + Number(c.env.PARLEY_REQUEST_TIMEOUT_MS) + 2000;
/** A long poll waits up to 1.1 × the heartbeat (5 s here) plus 10 s for the bus hop before the gateway gives up with a 503. */
const POLL_BOUND_MS = 20_000;

async function channelWithMaria(): Promise<string> {
  const channel = uniq('chaos');
  await c.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [c.memberId] });
  return channel;
}

/**
 * Maria long-polls the channel's messages, through the two gateways in turn.
 * A lost queue (its shard moved) is registered again, as Zulip clients do.
 */
function longPolls(channel: string) {
  const wrong: string[] = [];
  const got = new Map<number, number>(); // message ID -> when its event came
  /** Each queue registered: when its register was answered, and the message IDs it gave. */
  const incarnations: Array<{ since: number; ids: Set<number> }> = [];
  let reRegistered = 0;
  let running = true;
  let n = 0;
  const loop = (async () => {
    let queue: { id: string; last: number } | null = null;
    while (running) {
      const gateway = (n++ % 2) as 0 | 1;
      const api = maria.at(c.gateways[gateway]);
      const started = Date.now();
      try {
        if (!queue) {
          const r = await api.post('/register', { event_types: ['message'], narrow: [['stream', channel]], fetch_event_types: ['message'] }, { signal: AbortSignal.timeout(ANSWER_BOUND_MS) });
          if (r.status === 200) {
            queue = { id: r.body.queue_id, last: r.body.last_event_id };
            incarnations.push({ since: Date.now(), ids: new Set() });
          }
          else if (r.status !== 503) wrong.push(`gateway ${gateway + 1}: register ${r.status} ${JSON.stringify(r.body)}`);
          else await sleep(200);
          continue;
        }
        const r = await api.get('/events', { queue_id: queue.id, last_event_id: queue.last }, { signal: AbortSignal.timeout(POLL_BOUND_MS) });
        if (r.status === 200) {
          for (const e of r.body.events) {
            if (e.type !== 'message') continue;
            got.set(e.message.id, Date.now());
            incarnations.at(-1)!.ids.add(e.message.id);
          }
          if (r.body.events.length) queue.last = r.body.events.at(-1).id;
        } else if (r.status === 400 && r.body.code === 'BAD_EVENT_QUEUE_ID') {
          queue = null;
          reRegistered++;
        } else if (r.status === 503) await sleep(200);
        else wrong.push(`gateway ${gateway + 1}: events ${r.status} ${JSON.stringify(r.body)}`);
      } catch (err) {
        wrong.push(transportFailure(gateway, started, err));
        await sleep(50);
      }
    }
  })();
  return {
    wrong,
    got,
    reRegistered: () => reRegistered,
    /**
     * Acknowledged messages a queue skipped and then went on past: sent
     * after the queue was registered, with an ID below one it gave, yet not
     * given. (Message IDs rise in the order events are published.) A queue
     * that may have missed events must end instead, so its client learns it.
     */
    skipped: (acked: Sent[]) =>
      incarnations.flatMap((q, i) => {
        const highest = Math.max(0, ...q.ids);
        return acked.filter((a) => a.at - a.ms > q.since && a.id! < highest && !q.ids.has(a.id!)).map((a) => `queue ${i + 1}: message ${a.id}`);
      }),
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/**
 * When sends had recovered: the first success, on each gateway, of a send
 * started after the start of the last failed one (and after `from`, the
 * restart's end). A send that failed only because it waited out a timeout
 * begun during the outage does not push recovery later than it was.
 */
function recoveredAt(answers: Sent[], from: number, gateways: number[]): number | null {
  const started = (a: Sent) => a.at - a.ms;
  const lastFailure = Math.max(0, ...answers.filter((a) => a.status !== 200).map(started));
  const firsts = gateways.map((g) => answers.find((a) => a.gateway === g && a.status === 200 && started(a) > lastFailure && a.at >= from)?.at);
  return firsts.every((x) => x !== undefined) ? Math.max(...(firsts as number[])) : null;
}

interface Outage {
  /** Takes the part down; may resolve later than the kill. */
  kill(): Promise<void>;
  /** Brings it back; resolves when it answers again. */
  restart(): Promise<void>;
  /** How long it stays down before the restart. */
  downMs: number;
  /** Recovery must come within this, counted from the restart's end. */
  boundMs: number;
}

/**
 * Runs traffic and long polls, the outage, and the checks; prints the
 * measured figures. Returns the traffic and polls for checks of the case,
 * and when the restart was done.
 */
async function underTraffic(t: Test, name: string, o: Outage) {
  const channel = await channelWithMaria();
  const load = traffic(c, channelSend(channel), 4, name);
  const polls = longPolls(channel);
  await sleep(1500);
  const before = load.acked().length;
  const killedAt = Date.now();
  await o.kill();
  await sleep(o.downMs);
  const restartFrom = Date.now();
  await o.restart();
  const backAt = Date.now();
  const gateways = [0, 1];
  let recovered: number | null = null;
  // Recovered once every answer for 2 s has been a success, on each gateway.
  while (Date.now() - backAt < o.boundMs + 5_000) {
    await sleep(200);
    recovered = recoveredAt(load.answers.filter((a) => gateways.includes(a.gateway)), backAt, gateways);
    if (recovered && Date.now() - recovered > 2000) break;
  }
  // The long poll got an event of a message sent after the recovery.
  let pollsRecovered: number | null = null;
  if (recovered) {
    const deadline = Date.now() + 15_000;
    while (!pollsRecovered && Date.now() < deadline) {
      const later = load.acked().filter((a) => a.at > recovered!).map((a) => polls.got.get(a.id!));
      pollsRecovered = later.find((x) => x !== undefined) ?? null;
      await sleep(100);
    }
  }
  await load.stop();
  await polls.stop();
  const secs = (ms: number) => (ms / 1000).toFixed(1);
  const failed = load.clean();
  const slowest = Math.max(...load.answers.map((a) => a.ms));
  const figures = {
    name,
    down: secs(restartFrom - killedAt),
    restart: secs(backAt - restartFrom),
    recovery: recovered ? secs(recovered - backAt) : 'never',
    fromKill: recovered ? secs(recovered - killedAt) : 'never',
    polls: pollsRecovered ? secs(pollsRecovered - backAt) : 'never',
  };
  t.comment(
    `${name}: down ${figures.down} s, restart took ${figures.restart} s; sends succeed again ${figures.recovery} s after it (${figures.fromKill} s after the kill), ` +
      `long polls ${figures.polls} s after it; ${load.acked().length} acknowledged, ${failed.length} clean 503s, slowest answer ${slowest} ms, ` +
      `${polls.reRegistered()} queue re-registrations`,
  );
  t.ok(recovered, 'sends succeed again on their own through both gateways');
  t.ok(recovered && recovered - backAt < o.boundMs, `within ${o.boundMs / 1000} s of the restart`);
  t.ok(slowest < ANSWER_BOUND_MS, `every send answered within ${ANSWER_BOUND_MS / 1000} s (slowest ${slowest} ms)`);
  t.ok(before > 10 && load.acked().length > before, `traffic before and after (${before} before the kill)`);
  t.ok(pollsRecovered, 'the long poll gets new messages again');
  t.same(polls.skipped(load.acked()), [], 'no queue skipped an acknowledged message and went on');
  await checkAcked(t, maria, channel, load.acked());
  return { load, polls, backAt };
}

/** Kills a private service and starts it again with scripts/services.sh. */
const serviceOutage = (svc: Service, downMs: number, boundMs: number): Outage => ({
  kill: () => services.kill(svc),
  restart: async () => void (await services.start(svc)),
  downMs,
  boundMs,
});

t.test('chaos - kill -9 and restart of one gateway: the other answers throughout, the restarted one at once', async (t) => {
  const victim = c.procs.find((p) => p.name === 'gateway-2')!;
  const port = Number(new URL(victim.url).port);
  const { load, polls, backAt } = await underTraffic(t, 'gateway', {
    kill: async () => {
      const exited = new Promise((r) => victim.child.once('exit', r));
      victim.child.kill('SIGKILL');
      await exited;
    },
    restart: async () => {
      const p = await startProcess('gateway', 'gateway-2', port, { PARLEY_DEMO_DIR: c.demoDir, ...c.env }, false);
      c.procs.splice(c.procs.indexOf(victim), 1, p);
    },
    downMs: 2000,
    boundMs: 5000,
  });
  const survivor = [...load.wrong, ...polls.wrong].filter((w) => w.startsWith('gateway 1:'));
  t.same(survivor, [], 'the surviving gateway gave only successes and clean 503s, no connection reset');
  t.comment(`gateway: ${load.wrong.length + polls.wrong.length} requests to the killed gateway failed at the transport while it was down`);
  const killed = [...load.wrong, ...polls.wrong].filter((w) => !w.startsWith('gateway 1:'));
  t.same(killed.filter((w) => transportFailureSent(w) === null), [], 'the killed gateway failed only at the transport (refused or reset), never with a wrong answer');
  t.same(killed.filter((w) => transportFailureSent(w)! >= backAt), [], 'and only for requests sent before it was back');
});

t.test('chaos - kill -9 and restart of NATS: clean 503s while it is down, the cluster reconnects on its own', async (t) => {
  const { load, polls } = await underTraffic(t, 'nats', serviceOutage('nats', 3000, 15_000));
  t.same([...load.wrong, ...polls.wrong], [], 'only successes and clean 503s');
  // NATS delivers at most once: what was published while a node was away may be gone, so its queues end.
  t.ok(polls.reRegistered() >= 1, 'the queue that lived through the outage ended (BAD_EVENT_QUEUE_ID), and the client registered again');
});

t.test('chaos - kill -9 and restart of Redis (its data lost): leases are taken again, nothing acknowledged is lost', async (t) => {
  // Down past the lease TTL (4 s here): every node stops answering for its shards before Redis is back.
  const { load, polls } = await underTraffic(t, 'redis', serviceOutage('redis', 6000, 20_000));
  t.same([...load.wrong, ...polls.wrong], [], 'only successes and clean 503s');
});

t.test('chaos - kill -9 and restart of Cassandra: clean 503s while it is down, actors reload on their own', async (t) => {
  const { load, polls } = await underTraffic(t, 'cassandra', serviceOutage('cassandra', 3000, 30_000));
  t.same([...load.wrong, ...polls.wrong], [], 'only successes and clean 503s');
});

