/**
 * The server under test. By default each test file starts its own embedded
 * Parley process (`node main.ts`) on a free port with a fresh data directory.
 * When `PARLEY_TEST_GATEWAYS` is set (the cluster run), tests use those
 * running gateways instead, with the demo credentials in
 * `PARLEY_TEST_DEMO_DIR`; tests therefore never assume an empty realm.
 * When `PARLEY_TEST_OWN_CLUSTER=1`, each `startServer` launches a private
 * cluster instead (2 gateways, 2 actor nodes, on the NATS, Redis and
 * Cassandra the environment names), with the test's own environment in every
 * process: for suites that need settings the shared cluster lacks (an SMTP
 * server, a push service). `stop()` stops it and drops its keyspace.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { diesWithThisProcess, launchCluster, stopAll } from '../../scripts/cluster-launcher.ts';
import { dropKeyspace } from '../../scripts/drop-keyspace.ts';
import { serverArgs } from '../../scripts/build.ts';
import { loadTestLimits } from '../../lib/demo.ts';
import { Api, type Creds } from './api.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
export const DEMO_KEYS = ['owner', 'admin', 'moderator', 'member1', 'member2', 'guest', 'bot'] as const;
export type DemoKey = (typeof DEMO_KEYS)[number];

export interface TestServer {
  /** Base URLs of the gateways (one in embedded mode). */
  urls: string[];
  /** Their /metrics URLs, in the same order (`PARLEY_TEST_METRICS` in the cluster run). */
  metricsUrls: string[];
  /** The /metrics URLs of the processes hosting actors (the same process in embedded mode; `PARLEY_TEST_NODE_METRICS`). */
  nodeMetricsUrls: string[];
  api: Api;
  demo: Record<DemoKey, Creds & { userId: number }>;
  /** The embedded server's data directory; null for a cluster (nothing a test may restart from). */
  dataDir: string | null;
  process: ChildProcess | null;
  /** Stops the process (SIGTERM by default) and waits for it to exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Starts the same data directory again (embedded only). */
  restart(): Promise<TestServer>;
}

export function readZuliprc(path: string): Creds {
  const text = readFileSync(path, 'utf8');
  const email = /^email=(.*)$/m.exec(text)?.[1]?.trim();
  const apiKey = /^key=(.*)$/m.exec(text)?.[1]?.trim();
  if (!email || !apiKey) throw new Error(`bad zuliprc ${path}`);
  return { email, apiKey };
}

async function loadDemo(api: Api, demoDir: string): Promise<TestServer['demo']> {
  const demo = {} as TestServer['demo'];
  const owner = readZuliprc(join(demoDir, 'owner.zuliprc'));
  const members = (await api.as(owner).ok('GET', '/users')).members as Array<{ email: string; user_id: number }>;
  for (const key of DEMO_KEYS) {
    const creds = readZuliprc(join(demoDir, `${key}.zuliprc`));
    const userId = members.find((m) => m.email === creds.email)?.user_id;
    if (userId === undefined) throw new Error(`demo user ${creds.email} not listed`);
    demo[key] = { ...creds, userId };
  }
  return demo;
}

export interface StartOptions {
  env?: Record<string, string>;
  dataDir?: string;
}

export async function startServer(opts: StartOptions = {}): Promise<TestServer> {
  const gateways = process.env.PARLEY_TEST_GATEWAYS;
  if (gateways && !opts.dataDir && !opts.env) {
    const urls = gateways.split(',');
    const metricsUrls = process.env.PARLEY_TEST_METRICS?.split(',') ?? [];
    const nodeMetricsUrls = process.env.PARLEY_TEST_NODE_METRICS?.split(',') ?? [];
    const api = new Api(urls[0]!);
    const demo = await loadDemo(api, process.env.PARLEY_TEST_DEMO_DIR ?? join(ROOT, '.parley', 'demo'));
    const self: TestServer = { urls, metricsUrls, nodeMetricsUrls, api, demo, dataDir: null, process: null, stop: async () => null, restart: async () => self };
    return self;
  }
  if (process.env.PARLEY_TEST_OWN_CLUSTER === '1') return spawnOwnCluster(opts);
  return spawnEmbedded(opts);
}

/**
 * A private cluster for one `startServer`: own keyspace, Redis prefix and NATS namespace (one tag), own demo and
 * data directories; `opts.env` goes to every process. Precondition: the services are up and named in the
 * environment (test/run.sh exports PARLEY_NATS_URL, PARLEY_REDIS_URL, PARLEY_CASSANDRA_*).
 */
async function spawnOwnCluster(opts: StartOptions): Promise<TestServer> {
  if (opts.dataDir) throw new Error('a private cluster keeps its state in Cassandra: no dataDir');
  const tag = `t${process.pid}${Math.random().toString(36).slice(2, 6)}`;
  const dir = mkdtempSync(join(tmpdir(), 'parley-own-cluster-'));
  const env: Record<string, string> = {
    PARLEY_CASSANDRA_KEYSPACE: `parley_${tag}`,
    PARLEY_REDIS_PREFIX: `parley_${tag}`,
    PARLEY_NATS_NAMESPACE: `parley_${tag}`,
    PARLEY_DATA_DIR: join(dir, 'data'),
    PARLEY_OUTBOX_DIR: join(dir, 'outbox'),
    PARLEY_HEARTBEAT_SECS: '2',
    PARLEY_LOG_LEVEL: process.env.PARLEY_LOG_LEVEL ?? 'warn',
    // As the embedded server's: the demo users act for whole files of cases within seconds.
    PARLEY_RATE_LIMIT_OVERRIDES: loadTestLimits().PARLEY_RATE_LIMIT_OVERRIDES!,
    ...opts.env,
  };
  const drop = () => dropKeyspace(env.PARLEY_CASSANDRA_KEYSPACE!, { ...process.env, ...env }).catch((err: Error) => process.stderr.write(`could not drop ${env.PARLEY_CASSANDRA_KEYSPACE}: ${err.message}\n`));
  const demoDir = join(dir, 'demo');
  let procs: Awaited<ReturnType<typeof launchCluster>>;
  try {
    procs = await launchCluster({ demoDir, env });
  } catch (err) {
    await drop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  if (process.env.PARLEY_TEST_SERVER_OUTPUT) for (const p of procs) p.child.stdout!.on('data', (d: Buffer) => process.stderr.write(d));
  const gateways = procs.filter((p) => p.role === 'gateway');
  const nodes = procs.filter((p) => p.role === 'actors');
  const api = new Api(gateways[0]!.url);
  let stopped: Promise<number | null> | null = null;
  const self: TestServer = {
    urls: gateways.map((p) => p.url),
    metricsUrls: gateways.map((p) => p.metricsUrl),
    nodeMetricsUrls: nodes.map((p) => p.metricsUrl),
    api,
    demo: await loadDemo(api, demoDir).catch(async (err: Error) => {
      for (const p of procs) process.stderr.write(`--- ${p.name}\n${p.output()}\n`);
      await stopAll(procs);
      await drop();
      throw err;
    }),
    dataDir: null,
    process: null,
    // Stopped once (serverFor's teardown and a test may both ask); the signal is for an embedded process.
    stop: () =>
      (stopped ??= (async () => {
        await stopAll(procs);
        await drop();
        rmSync(dir, { recursive: true, force: true });
        return 0;
      })()),
    restart: () => Promise.reject(new Error('a private cluster is not restarted (embedded only)')),
  };
  return self;
}

async function spawnEmbedded(opts: StartOptions): Promise<TestServer> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'parley-test-'));
  const child = spawn(process.execPath, serverArgs(), {
    cwd: ROOT,
    env: {
      ...process.env,
      PARLEY_MODE: 'embedded',
      PARLEY_ROLE: 'all',
      PARLEY_PORT: '0',
      PARLEY_METRICS_PORT: '0',
      PARLEY_DATA_DIR: join(dataDir, 'data'),
      PARLEY_DEMO_DIR: join(dataDir, 'demo'),
      PARLEY_LOG_LEVEL: process.env.PARLEY_LOG_LEVEL ?? 'warn',
      // The demo users act for whole files of cases within seconds: they get load-test rate budgets, as every
      // file of the cluster run gives them (test/run.sh). The limits are tested with users of their own
      // (rate_limits.test.ts); a test may still set its own.
      PARLEY_RATE_LIMIT_OVERRIDES: loadTestLimits().PARLEY_RATE_LIMIT_OVERRIDES!,
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  diesWithThisProcess(child);
  let out = '';
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const [port, metricsPort] = await new Promise<[number, number | null]>((resolvePort, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (process.env.PARLEY_TEST_SERVER_OUTPUT) process.stderr.write(d); // the server's log, to see why a request failed
      out += d.toString();
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (m && out.includes('zuliprc')) {
        clearTimeout(timer);
        const metrics = /Metrics for Prometheus on http:\/\/[^:]+:(\d+)/.exec(out);
        resolvePort([Number(m[1]), metrics ? Number(metrics[1]) : null]);
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const api = new Api(url);
  const demo = await loadDemo(api, join(dataDir, 'demo'));
  const self: TestServer = {
    urls: [url],
    metricsUrls: metricsPort === null ? [] : [`http://127.0.0.1:${metricsPort}/metrics`],
    nodeMetricsUrls: metricsPort === null ? [] : [`http://127.0.0.1:${metricsPort}/metrics`],
    api,
    demo,
    dataDir,
    process: child,
    stop: (signal = 'SIGTERM') =>
      new Promise((res) => {
        if (child.exitCode !== null || child.signalCode !== null) return res(child.exitCode);
        child.once('exit', (code) => res(code));
        child.kill(signal);
      }),
    restart: () => spawnEmbedded({ ...opts, dataDir }),
  };
  return self;
}

/** Starts a server for a tap test and stops it (and removes its data) at teardown. */
export async function serverFor(t: { teardown(fn: () => unknown): void }, opts: StartOptions = {}): Promise<TestServer> {
  const s = await startServer(opts);
  t.teardown(async () => {
    await s.stop();
    if (s.dataDir && !opts.dataDir) rmSync(s.dataDir, { recursive: true, force: true });
  });
  return s;
}
