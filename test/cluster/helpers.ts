/**
 * What the cluster tests share: a cluster of their own (own keyspace and
 * Redis prefix), who owns the realm's shard, traffic that records every
 * answer, and the check that every acknowledged message is in history once,
 * with its content, and that no message ID was handed out twice.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { realmRef } from '../../actors/realm/ref.ts';
import { shardOf } from '../../actors/subjects.ts';
import { type ClusterProcess, launchCluster, stopAll } from '../../scripts/cluster-launcher.ts';
import { dropKeyspace } from '../../scripts/drop-keyspace.ts';
import { Api } from '../helpers/api.ts';
import { readZuliprc } from '../helpers/server.ts';
import { loadTestLimits } from '../../lib/demo.ts';

export const SHARDS = 64;

export interface TestCluster {
  tag: string;
  procs: ClusterProcess[];
  redis: Redis;
  env: Record<string, string>;
  demoDir: string;
  gateways: [string, string];
  owner: Api;
  member: Api;
  memberId: number;
  ownerId: number;
  /** The realm's shard lease now: owner node name and fencing token. */
  realmLease(): Promise<{ name: string; token: number } | null>;
  /** The actor node process holding the realm's shard now. */
  realmOwner(): Promise<ClusterProcess | undefined>;
  /** Waits until a node other than `not` holds the realm's shard (and answers). */
  waitForNewOwner(not: ClusterProcess | undefined, timeoutMs?: number): Promise<ClusterProcess | undefined>;
  stop(): Promise<void>;
}

export async function startTestCluster(extraEnv: Record<string, string> = {}): Promise<TestCluster> {
  const tag = `c${process.pid}${Math.random().toString(36).slice(2, 6)}`;
  const demoDir = mkdtempSync(join(tmpdir(), 'parley-cluster-'));
  const env = {
    PARLEY_CASSANDRA_KEYSPACE: `parley_${tag}`,
    PARLEY_REDIS_PREFIX: `parley_${tag}`,
    // Long enough that a loaded CI machine's event-loop stalls do not let leases lapse (5 s in production).
    PARLEY_LEASE_TTL_MS: '4000',
    PARLEY_HEARTBEAT_SECS: '5',
    PARLEY_REQUEST_TIMEOUT_MS: '3000',
    PARLEY_SHARDS: String(SHARDS),
    PARLEY_LOG_LEVEL: 'warn',
    // `traffic` sends as fast as the cluster answers from one user: the demo users get load-test budgets.
    ...loadTestLimits(),
    ...extraEnv,
  };
  const procs = await launchCluster({ demoDir, env });
  // The services may be given in `extraEnv` (a private set) or in this process's environment.
  const services: NodeJS.ProcessEnv = { ...process.env, ...env };
  const redis = new Redis(services.PARLEY_REDIS_URL ?? 'redis://127.0.0.1:6379');
  const gateways = procs.filter((p) => p.role === 'gateway').map((p) => p.url) as [string, string];
  let owner: Api, member: Api, ownerId: number, memberId: number;
  try {
    owner = new Api(gateways[0], readZuliprc(join(demoDir, 'owner.zuliprc')));
    member = new Api(gateways[1], readZuliprc(join(demoDir, 'member1.zuliprc')));
    ownerId = (await owner.ok('POST', '/register', { fetch_event_types: ['realm_user'] })).user_id as number;
    memberId = (await member.ok('POST', '/register', { fetch_event_types: ['realm_user'] })).user_id as number;
  } catch (err) {
    // What the processes printed is the only account of a start that went wrong.
    for (const p of procs) process.stderr.write(`--- ${p.name}\n${p.output()}\n`);
    await stopAll(procs);
    await redis.quit();
    await dropKeyspace(env.PARLEY_CASSANDRA_KEYSPACE, services).catch(() => {});
    throw err;
  }
  const realmShard = shardOf(realmRef.placement('1'), SHARDS);
  const realmLease = async () => {
    const value = await redis.get(`parley_${tag}:lease:${realmShard}`);
    if (!value) return null;
    const i = value.lastIndexOf(':');
    return { name: value.slice(0, i), token: Number(value.slice(i + 1)) };
  };
  const realmOwner = async () => {
    const lease = await realmLease();
    return procs.find((p) => p.role === 'actors' && p.name === lease?.name);
  };
  return {
    tag,
    procs,
    redis,
    env,
    demoDir,
    gateways,
    owner,
    member,
    memberId,
    ownerId,
    realmLease,
    realmOwner,
    async waitForNewOwner(not, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      // What each probe saw, for the account of a takeover that did not happen in time.
      const seen: string[] = [];
      while (Date.now() < deadline) {
        const now = await realmOwner();
        if (now && now !== not) {
          const started = Date.now();
          const r = await owner.get('/users/me/subscriptions', {}, { signal: AbortSignal.timeout(10_000) }).catch((err: Error) => err);
          if (!(r instanceof Error) && r.status === 200) return now;
          seen.push(`${new Date(started).toISOString()} ${now.name}: ${r instanceof Error ? r.message : `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`} after ${Date.now() - started} ms`);
        } else seen.push(`${new Date().toISOString()} lease: ${now?.name ?? 'none'}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const collapsed = seen.filter((line, i) => i === 0 || line.slice(25) !== seen[i - 1]!.slice(25));
      process.stderr.write(`waitForNewOwner: no new owner answered in ${timeoutMs} ms; probes:\n${collapsed.join('\n')}\n`);
      for (const p of procs) process.stderr.write(`--- ${p.name}\n${p.output().slice(-4000)}\n`);
      return undefined;
    },
    async stop() {
      // A test that failed halfway may have left a node paused: it could not exit.
      for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGCONT');
      await stopAll(procs);
      redis.disconnect();
      rmSync(demoDir, { recursive: true, force: true });
      await dropKeyspace(env.PARLEY_CASSANDRA_KEYSPACE, services);
    },
  };
}

/** One answered send: what was sent, what came back, through which gateway and when. */
export interface Sent {
  content: string;
  status: number;
  id: number | null;
  /** Index in `TestCluster.gateways`. */
  gateway: number;
  /** Date.now() when the answer came. */
  at: number;
  /** How long it took. */
  ms: number;
}

/**
 * Sends through both gateways, in turn, from `workers` loops until `stop()`;
 * records every answer, in order. Anything but a success or a clean 503
 * envelope goes to `wrong`, as `gateway <n>: <what>` (n from 1).
 */
export function traffic(c: TestCluster, send: (content: string, api: Api) => Promise<{ status: number; body: Record<string, any> }>, workers = 4, prefix = 't') {
  const answers: Sent[] = [];
  const wrong: string[] = [];
  let running = true;
  let n = 0;
  const loops = Array.from({ length: workers }, async (_, w) => {
    while (running) {
      const content = `${prefix}-w${w}-n${n++}`;
      const gateway = n % 2 ? 0 : 1;
      const api = c.owner.at(c.gateways[gateway]);
      const started = Date.now();
      try {
        const r = await send(content, api);
        const at = Date.now();
        const ms = at - started;
        if (r.status === 200 && r.body.result === 'success' && typeof r.body.id === 'number') answers.push({ content, status: 200, id: r.body.id, gateway, at, ms });
        else if (r.status === 503 && r.body.result === 'error') {
          answers.push({ content, status: 503, id: null, gateway, at, ms });
          // As a client would (the answer says Retry-After), though sooner: the outage's end is what is measured.
          await new Promise((r) => setTimeout(r, 50));
        }
        else wrong.push(`gateway ${gateway + 1}: ${r.status} ${JSON.stringify(r.body)}`);
      } catch (err) {
        wrong.push(transportFailure(gateway, started, err));
        // A gateway that is down refuses at once: do not spin on it.
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  });
  return {
    answers,
    wrong,
    acked: () => answers.filter((a) => a.status === 200),
    clean: () => answers.filter((a) => a.status === 503),
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** How a request that got no HTTP answer is recorded in `wrong`: `gateway <n>: transport error, sent at <epoch ms>: <error> (<cause>)`. */
export function transportFailure(gateway: number, started: number, err: unknown): string {
  const cause = (err as Error & { cause?: Error }).cause;
  return `gateway ${gateway + 1}: transport error, sent at ${started}: ${(err as Error).message}${cause ? ` (${cause.message})` : ''}`;
}

/** When the request of a `transportFailure` entry was sent; null for any other entry. */
export function transportFailureSent(entry: string): number | null {
  const m = /^gateway \d+: transport error, sent at (\d+):/.exec(entry);
  return m ? Number(m[1]) : null;
}

/** Sends a channel message; the shape `traffic` wants. */
export const channelSend = (channel: string) => (content: string, api: Api) => api.post('/messages', { type: 'stream', to: channel, topic: 'load', content }, { signal: AbortSignal.timeout(15_000) });

/** The channel's whole history as [id, content], oldest first. */
export async function history(api: Api, channel: string): Promise<Array<[number, string]>> {
  const out: Array<[number, string]> = [];
  let anchor: number | 'oldest' = 'oldest';
  for (;;) {
    const page = await api.ok('GET', '/messages', { anchor, include_anchor: anchor === 'oldest', num_before: 0, num_after: 5000, narrow: [['stream', channel]], apply_markdown: false });
    for (const m of page.messages) out.push([m.id, m.content]);
    if (page.found_newest || page.messages.length === 0) return out;
    anchor = page.messages.at(-1).id;
  }
}

interface Asserts {
  same(found: unknown, wanted: unknown, msg: string): unknown;
  equal(found: unknown, wanted: unknown, msg: string): unknown;
}

/**
 * Every acknowledged ID, across all clients, against the history: no ID was
 * answered twice, every acknowledged message is in `GET /messages` exactly
 * once with its content, and no ID in history appears twice.
 */
export async function checkAcked(t: Asserts, api: Api, channel: string, acked: Sent[]): Promise<Array<[number, string]>> {
  const ids = acked.map((a) => a.id!);
  const twice = ids.filter((id, i) => ids.indexOf(id) !== i);
  t.same(twice, [], `no message ID was acknowledged twice (${ids.length} acknowledged)`);
  const stored = await history(api, channel);
  const storedIds = stored.map(([id]) => id);
  t.same(storedIds.filter((id, i) => storedIds.indexOf(id) !== i), [], 'no ID appears twice in history');
  const byId = new Map(stored);
  const missing = acked.filter((a) => byId.get(a.id!) !== a.content).map((a) => `${a.id}:${a.content}`);
  t.same(missing, [], `every one of ${acked.length} acknowledged messages is in GET /messages with its content`);
  return stored;
}
