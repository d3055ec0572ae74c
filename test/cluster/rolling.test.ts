/**
 * A rolling deploy is invisible to clients. Clients of five users hold event
 * queues (one through each gateway) and long-poll them while two senders
 * post to a channel they all read; every actor node is replaced in turn as a
 * Kubernetes rolling update does: a new node starts (the old ones hand it
 * shards as the fair share shrinks), then the old one gets SIGTERM and hands
 * its shards over. The queues move with their shards
 * (`actors/runtime/handoff.ts`): no client is told BAD_EVENT_QUEUE_ID, and
 * each queue's message events are exactly the channel's history since it
 * registered, in order, none twice.
 *
 * Then the other case: a node killed with kill -9 hands nothing over; the
 * survivor takes its shards, the queues it held are gone, and each client
 * registers again at most once, then gets every message sent from then on.
 */
import t from 'tap';
import { freePort, startProcess, type ClusterProcess } from '../../scripts/cluster-launcher.ts';
import { Api, uniq } from '../helpers/api.ts';
import { readZuliprc } from '../helpers/server.ts';
import { join } from 'node:path';
import { queueRef, queueActorId } from '../../actors/queue/ref.ts';
import { shardOf } from '../../actors/subjects.ts';
import { channelSend, history, SHARDS, startTestCluster, traffic } from './helpers.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const c = await startTestCluster({ PARLEY_HEARTBEAT_SECS: '2' });
t.teardown(() => c.stop());

const USERS = ['owner', 'admin', 'member1', 'member2', 'moderator'];

/** A client as Zulip's apps poll: register, then GET /events with the last ID seen, again and again. */
class Client {
  queueId = '';
  lastEventId = -1;
  /** Message IDs received, in order, per queue registered. */
  received: number[][] = [];
  eventIds: number[] = [];
  registrations = 0;
  /** Date.now() when the current queue was registered. */
  registeredAt = 0;
  badQueue: string[] = [];
  errors: string[] = [];
  /** The zulip_version of each restart event received (a node of another release took the queue's shard). */
  releases: string[] = [];
  private running = true;
  private loop: Promise<void> | null = null;

  constructor(
    readonly name: string,
    readonly api: Api,
    private readonly channel: string,
  ) {}

  async register(): Promise<void> {
    for (;;) {
      const r = await this.api.post('/register', { event_types: ['message', 'restart'], narrow: [['stream', this.channel]], apply_markdown: false }).catch((err: Error) => err);
      if (!(r instanceof Error) && r.status === 200) {
        this.queueId = r.body.queue_id;
        this.lastEventId = r.body.last_event_id;
        this.registrations++;
        this.registeredAt = Date.now();
        this.received.push([]);
        this.eventIds = [];
        return;
      }
      this.errors.push(`register: ${r instanceof Error ? r.message : `${r.status} ${r.body.code}`}`);
      await sleep(200);
    }
  }

  start(): void {
    this.loop = (async () => {
      while (this.running) {
        const r = await this.api.get('/events', { queue_id: this.queueId, last_event_id: this.lastEventId }, { signal: AbortSignal.timeout(20_000) }).catch((err: Error) => err);
        if (r instanceof Error || r.status !== 200) {
          const what = r instanceof Error ? r.message : `${r.status} ${r.body.code}`;
          if (!(r instanceof Error) && r.body.code === 'BAD_EVENT_QUEUE_ID') {
            this.badQueue.push(`${new Date().toISOString()} ${this.queueId}`);
            await this.register();
          } else {
            this.errors.push(what);
            await sleep(100);
          }
          continue;
        }
        for (const e of r.body.events as Array<{ id: number; type: string; message?: { id: number }; zulip_version?: string }>) {
          this.eventIds.push(e.id);
          if (e.type === 'message') this.received.at(-1)!.push(e.message!.id);
          if (e.type === 'restart') this.releases.push(e.zulip_version!);
          this.lastEventId = Math.max(this.lastEventId, e.id);
        }
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

const channel = uniq('rolling');
const apis = USERS.map((u) => new Api(c.gateways[0], readZuliprc(join(c.demoDir, `${u}.zuliprc`))));
const userIds: number[] = await Promise.all(apis.map(async (a) => (await a.ok('GET', '/users/me')).user_id));
await c.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: userIds });

/** Which actor node holds each lease now, by node name. */
async function leaseOwners(): Promise<Map<string, number>> {
  const keys = await c.redis.keys(`parley_${c.tag}:lease:*`);
  const values = await Promise.all(keys.filter((k) => !k.endsWith(':epoch')).map((k) => c.redis.get(k)));
  const count = new Map<string, number>();
  for (const v of values) if (v) count.set(v.slice(0, v.lastIndexOf(':')), (count.get(v.slice(0, v.lastIndexOf(':'))) ?? 0) + 1);
  return count;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** The release the new nodes run: each queue that reaches one of them gets a restart event naming it. */
const NEXT_RELEASE = 'rolling-next';

/** A new actor node, of the next release, as a rolling update starts one before it stops an old one. */
async function startNode(name: string): Promise<ClusterProcess> {
  const p = await startProcess('actors', name, await freePort(), { ...c.env, PARLEY_DEMO_DIR: c.demoDir, PARLEY_VERSION: NEXT_RELEASE }, false);
  c.procs.push(p);
  await until(`${name} holds shards`, async () => ((await leaseOwners()).get(name) ?? 0) > 0, 30_000);
  return p;
}

async function sigterm(p: ClusterProcess): Promise<number | null> {
  const exited = new Promise<number | null>((r) => p.child.once('exit', (code) => r(code)));
  p.child.kill('SIGTERM');
  const code = await exited;
  await until(`${p.name}'s shards taken`, async () => !(await leaseOwners()).has(p.name) && [...(await leaseOwners()).values()].reduce((a, b) => a + b, 0) === SHARDS, 30_000);
  return code;
}

/** Waits until every client's current queue has the channel's history since `from` (or `ms` pass); returns that history. */
async function settle(clients: Client[], ms: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  let ids: number[] = [];
  do {
    ids = (await history(c.owner, channel)).map(([id]) => id);
    if (clients.every((cl) => cl.received.at(-1)!.length > 0 && ids.indexOf(cl.received.at(-1)!.at(-1)!) === ids.length - 1)) break;
    await sleep(200);
  } while (Date.now() < deadline);
  return ids;
}

t.test('rolling - every actor node replaced under traffic (SIGTERM): the queues move with their shards, no event lost or repeated', async (t) => {
  const clients = USERS.flatMap((u, i) => [0, 1].map((g) => new Client(`${u}@gateway-${g + 1}`, apis[i]!.at(c.gateways[g as 0 | 1]), channel)));
  for (const cl of clients) await cl.register();
  const firstId = (await history(c.owner, channel)).length;
  t.equal(firstId, 0, 'the channel is new');
  for (const cl of clients) cl.start();
  const sends = traffic(c, channelSend(channel), 2, 'rolling');
  await sleep(1000);

  const started = Date.now();
  const old = c.procs.filter((p) => p.role === 'actors');
  const exits: Array<number | null> = [];
  for (const [i, p] of old.entries()) {
    const t0 = Date.now();
    await startNode(`actors-new-${i + 1}`);
    const t1 = Date.now();
    exits.push(await sigterm(p));
    t.comment(`${p.name} replaced ${((Date.now() - started) / 1000).toFixed(1)} s in (new node up and holding shards in ${((t1 - t0) / 1000).toFixed(1)} s, SIGTERM to every shard taken ${((Date.now() - t1) / 1000).toFixed(1)} s); leases: ${JSON.stringify(Object.fromEntries(await leaseOwners()))}`);
  }
  await sleep(1000);
  await sends.stop();
  const ids = await settle(clients, 15_000);
  for (const cl of clients) await cl.stop();

  t.same(exits, old.map(() => 0), 'each old node drained and exited cleanly');
  t.ok(sends.acked().length > 20, `${sends.acked().length} sends acknowledged during the rolling restart (${sends.clean().length} answered 503 and were not retried)`);
  t.same(sends.wrong, [], 'no send failed otherwise');
  t.same(clients.flatMap((cl) => cl.badQueue.map((b) => `${cl.name}: ${b}`)), [], 'no client was told BAD_EVENT_QUEUE_ID');
  t.same(clients.map((cl) => cl.registrations), clients.map(() => 1), 'each client registered once');
  for (const cl of clients) {
    const got = cl.received[0]!;
    t.same(got, ids, `${cl.name}: its ${got.length} message events are the channel's ${ids.length} messages, in order, none twice`);
    t.ok(cl.eventIds.every((id, n) => n === 0 || id > cl.eventIds[n - 1]!), `${cl.name}: event IDs only grow`);
    // A queue may pass through an old node again while shards rebalance (a restart event naming the old release):
    // the last one names the new release, and no release is announced twice in a row.
    t.ok(cl.releases.at(-1) === NEXT_RELEASE && cl.releases.every((v, n) => n === 0 || v !== cl.releases[n - 1]), `${cl.name}: restart events ${JSON.stringify(cl.releases)} end with the new release (FL 59)`);
  }
  const acked = new Set(sends.acked().map((a) => a.id));
  t.ok([...acked].every((id) => ids.includes(id!)), 'every acknowledged send is in history');
  t.comment(`clients' transient errors (retried): ${clients.reduce((n, cl) => n + cl.errors.length, 0)} (${[...new Set(clients.flatMap((cl) => cl.errors))].slice(0, 5).join('; ')})`);
});

t.test('rolling - a node killed with kill -9 hands nothing over: each client registers again at most once', async (t) => {
  const clients = USERS.map((u, i) => new Client(`${u}`, apis[i]!.at(c.gateways[i % 2 as 0 | 1]), channel));
  for (const cl of clients) await cl.register();
  for (const cl of clients) cl.start();
  // The victim is the node holding the first client's queue (its user's shard), so some queue is surely lost.
  const queueShard = shardOf(queueRef.placement(queueActorId(1, userIds[0]!)), SHARDS);
  const holder = await c.redis.get(`parley_${c.tag}:lease:${queueShard}`);
  const victim = c.procs.find((p) => p.role === 'actors' && p.child.exitCode === null && p.child.signalCode === null && holder?.startsWith(`${p.name}:`))!;
  t.ok(victim, `found the node that holds ${USERS[0]}'s queue (shard ${queueShard}: ${holder})`);
  const victimShards = (await leaseOwners()).get(victim.name) ?? 0;
  const exited = new Promise((r) => victim.child.once('exit', r));
  victim.child.kill('SIGKILL');
  await exited;
  await until('the killed node\'s shards taken', async () => !(await leaseOwners()).has(victim.name), 30_000);
  const sends = traffic(c, channelSend(channel), 2, 'after-kill');
  await until('ten sends after the kill', async () => sends.acked().length >= 10, 30_000);
  await sends.stop();
  const ids = await settle(clients, 15_000);
  for (const cl of clients) await cl.stop();
  t.ok(victimShards > 0, `the killed node held ${victimShards} shards`);
  t.ok(clients.every((cl) => cl.registrations <= 2), `each client registered again at most once (${clients.map((cl) => cl.registrations - 1).join(', ')} times)`);
  t.ok(clients.some((cl) => cl.registrations === 2), 'the queues of the killed node were lost (their clients registered again)');
  const sentAfter = sends.acked();
  t.ok(sentAfter.length > 5, `${sentAfter.length} sends after the kill (${sends.clean().length} answered 503)`);
  t.same(sends.wrong, [], 'no send failed otherwise');
  for (const cl of clients) {
    const got = cl.received.at(-1)!;
    // A client that registered again reads the state afresh; its new queue has what was sent from then on.
    const due = sentAfter.filter((a) => a.at - a.ms >= cl.registeredAt).map((a) => a.id!);
    t.same(due.filter((id) => !got.includes(id)), [], `${cl.name}: each of the ${due.length} messages sent after its queue was registered reached it`);
    t.same(got.filter((id, n) => got.indexOf(id) !== n), [], `${cl.name}: none twice`);
    t.ok(got.every((id) => ids.includes(id)), `${cl.name}: all in history`);
  }
});
