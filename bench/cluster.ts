/**
 * Target 4: cluster-mode sends per second against the storage floor, in the
 * same run and against the same Cassandra: a bare cassandra-driver write loop
 * (one message-sized row per write, prepared, LOCAL_QUORUM, N in flight),
 * then `POST /messages` through two gateways to two actor nodes over NATS,
 * Redis and Cassandra, driven by wrk on both gateways at once.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import cassandra from 'cassandra-driver';
import { launchCluster, stopAll } from '../scripts/cluster-launcher.ts';
import { loadTestLimits } from '../lib/demo.ts';
import { runLoad, type LoadResult } from './lib/loadgen.ts';
import { basicAuth } from './lib/rawhttp.ts';
import { api, procCpuSeconds, readZuliprc, REPO } from './lib/server.ts';
import { summarize } from './lib/stats.ts';

export interface ClusterResult {
  floor: { writesPerSec: number; p50: number; p99: number; inFlight: number; secs: number; cassandraUsPerWrite: number; clientUsPerWrite: number };
  /** CPU microseconds per message by component during the measured send run (the 2 cores are the bound). */
  cpuUsPerMessage: Record<string, number>;
  sends: { perSec: number; p50: number; p99: number; errors: number; connections: number; secs: number; perGateway: LoadResult[] };
  ratio: number;
}

/** A stored message of the size Parley writes (~700 bytes of JSON). */
const SAMPLE_VALUE = JSON.stringify({
  id: 0, type: 'stream', streamId: 105, streamName: 'bench', streamIsPublic: true, topic: 'load', recipientId: 105, recipientKey: 's105',
  senderId: 100, senderEmail: 'olivia@parley.example', senderFullName: 'Olivia Owner', senderRealmStr: '', content: 't=0 hello from the bench',
  renderedContent: '<p>t=0 hello from the bench</p>', timestamp: 0, client: 'wrk', readBySender: false, mentions: [], wildcard: null, dmRecipients: null,
});

function pidOf(pattern: string): number | null {
  const r = spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' });
  const pid = Number(r.stdout.split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

function servicesEnv(): Record<string, string> {
  const text = execFileSync('bash', [join(REPO, 'scripts/services.sh'), 'env'], { encoding: 'utf8' });
  return Object.fromEntries([...text.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** The storage floor: a bare write loop with `inFlight` writes outstanding. */
export async function cassandraFloor(env: Record<string, string>, secs: number, inFlight = 64): Promise<ClusterResult['floor']> {
  const [host, port] = (env.PARLEY_CASSANDRA_CONTACT_POINTS ?? '127.0.0.1:9042').split(',')[0]!.split(':');
  const client = new cassandra.Client({ contactPoints: [`${host}:${port ?? 9042}`], localDataCenter: env.PARLEY_CASSANDRA_DC ?? 'datacenter1' });
  await client.connect();
  const ks = `parley_floor_${randomBytes(4).toString('hex')}`;
  try {
    await client.execute(`CREATE KEYSPACE ${ks} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
    await client.execute(`CREATE TABLE ${ks}.messages (pk text, ck bigint, v text, PRIMARY KEY ((pk), ck))`);
    const insert = `INSERT INTO ${ks}.messages (pk, ck, v) VALUES (?, ?, ?)`;
    const opts = { prepare: true, consistency: cassandra.types.consistencies.localQuorum };
    await client.execute(insert, ['warm', 0, SAMPLE_VALUE], opts);
    const latencies: number[] = [];
    let n = 0;
    const cassandraPid = pidOf('CassandraDaemon');
    const cpu0 = { cassandra: cassandraPid ? procCpuSeconds(cassandraPid) : NaN, client: process.cpuUsage() };
    const deadline = performance.now() + secs * 1000;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (performance.now() < deadline) {
          const i = n++;
          const t0 = performance.now();
          await client.execute(insert, [`1:s105:${Math.floor(i / 10_000)}`, i, SAMPLE_VALUE], opts);
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    const s = summarize(latencies);
    const loopCpu = process.cpuUsage(cpu0.client);
    const perWrite = (seconds: number) => (seconds * 1e6) / latencies.length;
    return {
      writesPerSec: latencies.length / elapsed,
      p50: s.p50,
      p99: s.p99,
      inFlight,
      secs,
      cassandraUsPerWrite: cassandraPid ? perWrite(procCpuSeconds(cassandraPid) - cpu0.cassandra) : NaN,
      clientUsPerWrite: perWrite((loopCpu.user + loopCpu.system) / 1e6),
    };
  } finally {
    await client.execute(`DROP KEYSPACE IF EXISTS ${ks}`).catch(() => null);
    await client.shutdown();
  }
}

export async function clusterBench(opts: { secs: number; floorSecs: number; connections: number; log: (s: string) => void }): Promise<ClusterResult> {
  const { log } = opts;
  // `status` exits 0 only when all three run.
  const wasRunning = spawnSync('bash', [join(REPO, 'scripts/services.sh'), 'status'], { stdio: 'ignore' }).status === 0;
  if (!wasRunning) {
    log('   starting NATS, Redis and Cassandra (scripts/services.sh start all)');
    execFileSync('bash', [join(REPO, 'scripts/services.sh'), 'start', 'all'], { stdio: 'ignore' });
  }
  const env = servicesEnv();
  Object.assign(process.env, env);
  const tag = randomBytes(4).toString('hex');
  const demoDir = mkdtempSync(join(tmpdir(), 'parley-bench-cluster-'));
  try {
    const floor = await cassandraFloor(env, opts.floorSecs);
    log(`   bare cassandra-driver write loop (${floor.inFlight} in flight, ${floor.secs} s): ${Math.round(floor.writesPerSec).toLocaleString('en-US')} writes/s, p50 ${floor.p50.toFixed(2)} ms, p99 ${floor.p99.toFixed(2)} ms`);
    const procs = await launchCluster({
      demoDir,
      // Rate limits stay on; the demo users that drive the load get budgets of their own (as the embedded bench's).
      env: { PARLEY_CASSANDRA_KEYSPACE: `parley_bench_${tag}`, PARLEY_REDIS_PREFIX: `parley_bench_${tag}`, PARLEY_LOG_LEVEL: 'warn', ...loadTestLimits() },
    });
    try {
      const gateways = procs.filter((p) => p.role === 'gateway').map((p) => p.url);
      const owner = readZuliprc(join(demoDir, 'owner.zuliprc'));
      await api(gateways[0]!, owner, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: 'bench' }] });
      const body = new URLSearchParams({ type: 'stream', to: 'bench', topic: 'load', content: 'hello from the bench' }).toString();
      const spec = (url: string, connections: number, durationSecs: number) => ({
        url: `${url}/api/v1/messages`,
        method: 'POST' as const,
        headers: { Authorization: basicAuth(owner.email, owner.apiKey), 'Content-Type': 'application/x-www-form-urlencoded' },
        body,
        connections,
        durationSecs,
      });
      const per = Math.max(1, Math.floor(opts.connections / gateways.length));
      await Promise.all(gateways.map((g) => runLoad(spec(g, per, 2)))); // warm-up: JIT, prepared statements
      const components: Array<[string, number]> = [
        ...procs.map((p): [string, number] => [p.role === 'gateway' ? 'gateways' : 'actor nodes', p.pid]),
        ['nats-server', pidOf('nats-server') ?? -1],
        ['redis-server', pidOf('redis-server') ?? -1],
        ['cassandra', pidOf('CassandraDaemon') ?? -1],
      ];
      const before = components.map(([, pid]) => procCpuSeconds(pid));
      const perGateway = await Promise.all(gateways.map((g) => runLoad(spec(g, per, opts.secs))));
      const after = components.map(([, pid]) => procCpuSeconds(pid));
      const perSec = perGateway.reduce((a, r) => a + r.rps, 0);
      const total = perGateway.reduce((a, r) => a + r.requests, 0);
      const cpuUsPerMessage: Record<string, number> = {};
      components.forEach(([name], i) => {
        const used = after[i]! - before[i]!;
        if (Number.isFinite(used)) cpuUsPerMessage[name] = (cpuUsPerMessage[name] ?? 0) + (used * 1e6) / total;
      });
      const sends = {
        perSec,
        p50: Math.max(...perGateway.map((r) => r.latencyMs.p50)),
        p99: Math.max(...perGateway.map((r) => r.latencyMs.p99)),
        errors: perGateway.reduce((a, r) => a + r.errors, 0),
        connections: per * gateways.length,
        secs: opts.secs,
        perGateway,
      };
      log(`   CPU per message: ${Object.entries(cpuUsPerMessage).map(([k, v]) => `${k} ${v.toFixed(0)} µs`).join(', ')} (the floor: cassandra ${floor.cassandraUsPerWrite.toFixed(0)} µs + driver loop ${floor.clientUsPerWrite.toFixed(0)} µs per write)`);
      log(`   POST /messages through ${gateways.length} gateways, ${procs.length - gateways.length} actor nodes (wrk -c${per} on each, ${opts.secs} s): ${Math.round(perSec).toLocaleString('en-US')} msg/s, p50 ${sends.p50.toFixed(1)} ms, p99 ${sends.p99.toFixed(1)} ms, ${sends.errors} errors`);
      return { floor, sends, cpuUsPerMessage, ratio: perSec / floor.writesPerSec };
    } finally {
      await stopAll(procs);
    }
  } finally {
    rmSync(demoDir, { recursive: true, force: true });
    if (!wasRunning) execFileSync('bash', [join(REPO, 'scripts/services.sh'), 'stop', 'all'], { stdio: 'ignore' });
  }
}
