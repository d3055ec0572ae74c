/**
 * Starts a local Parley cluster: actor nodes and gateways as separate
 * processes of `main.ts` in cluster mode, against NATS, Redis and Cassandra
 * on 127.0.0.1. Used by `npm run cluster` and by the cluster tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { serverArgs } from './build.ts';

export const ROOT = resolve(import.meta.dirname, '..');

export interface ClusterProcess {
  role: 'gateway' | 'actors';
  name: string;
  pid: number;
  url: string;
  /** Its /metrics (`lib/metrics.ts`), on a port of its own. */
  metricsUrl: string;
  child: ChildProcess;
  output: () => string;
}

export interface LaunchOptions {
  gateways?: number;
  actorNodes?: number;
  /** Ports to use, in order (gateways first); free ports when absent. */
  ports?: number[];
  demoDir: string;
  env?: Record<string, string>;
  /** Extra node flags for every process (e.g. --cpu-prof). */
  nodeArgs?: string[];
}

/** Every child handed to `diesWithThisProcess` that has not exited. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Kills `child` if this process exits first (a test that timed out must not leave servers running). */
export function diesWithThisProcess(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
}

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? res(addr.port) : rej(new Error('no port'))));
    });
  });
}

/** Starts one `main.ts` process and resolves once it listens (and, if seeding, has written the zuliprc files). */
export async function startProcess(role: 'gateway' | 'actors', name: string, port: number, env: Record<string, string>, seed: boolean, nodeArgs: string[] = []): Promise<ClusterProcess> {
  const metricsPort = await freePort();
  const child = spawn(process.execPath, [...nodeArgs, ...serverArgs()], {
    cwd: ROOT,
    env: { ...process.env, PARLEY_MODE: 'cluster', PARLEY_ROLE: role, PARLEY_PORT: String(port), PARLEY_METRICS_PORT: String(metricsPort), PARLEY_NODE_ID: name, PARLEY_SEED_DEMO: String(seed), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  diesWithThisProcess(child);
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  };
  child.stderr!.on('data', keep);
  return new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`${name} did not start:\n${out}`)), 90_000);
    child.stdout!.on('data', (d: Buffer) => {
      keep(d);
      if (/listening on http/.test(out) && (!seed || out.includes('zuliprc'))) {
        clearTimeout(timer);
        res({ role, name, pid: child.pid!, url: `http://127.0.0.1:${port}`, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, child, output: () => out });
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      rej(new Error(`${name} exited (${code ?? signal}) while starting:\n${out}`));
    });
  });
}

export async function launchCluster(opts: LaunchOptions): Promise<ClusterProcess[]> {
  const gateways = opts.gateways ?? 2;
  const actorNodes = opts.actorNodes ?? 2;
  const ports = opts.ports ?? [];
  const env = { PARLEY_DEMO_DIR: opts.demoDir, ...opts.env };
  const procs: ClusterProcess[] = [];
  try {
    // Actor nodes first: they create the schema and take the shards.
    const actorPorts = await Promise.all(Array.from({ length: actorNodes }, async (_, i) => ports[gateways + i] ?? (await freePort())));
    procs.push(...(await Promise.all(actorPorts.map((p, i) => startProcess('actors', `actors-${i + 1}`, p, env, false, opts.nodeArgs)))));
    // A production cluster has no demo (PARLEY_PRODUCTION refuses to seed one).
    const production = (opts.env?.PARLEY_PRODUCTION ?? process.env.PARLEY_PRODUCTION) === 'true';
    for (let i = 0; i < gateways; i++) {
      const p = ports[i] ?? (await freePort());
      // The first gateway seeds the demo organization (idempotent).
      procs.push(await startProcess('gateway', `gateway-${i + 1}`, p, env, i === 0 && !production, opts.nodeArgs));
    }
  } catch (err) {
    await stopAll(procs);
    throw err;
  }
  return procs;
}

export async function stopProcess(p: ClusterProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  await new Promise<void>((res) => {
    p.child.once('exit', () => res());
    p.child.kill(signal);
  });
}

export async function stopAll(procs: ClusterProcess[]): Promise<void> {
  // Gateways first, so no request arrives at an actor node that is leaving.
  await Promise.all(procs.filter((p) => p.role === 'gateway').map((p) => stopProcess(p)));
  await Promise.all(procs.filter((p) => p.role === 'actors').map((p) => stopProcess(p)));
}
