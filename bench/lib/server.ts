/**
 * Starts and stops the processes a bench run measures: Parley itself (on a
 * free port, with a temporary data directory and demo realm) and the
 * baselines. Each is spawned through `bash -c 'ulimit -n ...; exec ...'` so
 * it gets the highest open-file limit the sandbox allows (`exec` keeps the
 * pid, so /proc/<pid> is the measured process itself).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTestLimits } from '../../lib/demo.ts';
import { serverArgs } from '../../scripts/build.ts';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface Credentials {
  email: string;
  apiKey: string;
  site: string;
}

/** Reads a zuliprc file (`[api]` with email=, key=, site=). */
export function readZuliprc(path: string): Credentials {
  const text = readFileSync(path, 'utf8');
  const get = (k: string) => new RegExp(`^\\s*${k}\\s*=\\s*(.*?)\\s*$`, 'm').exec(text)?.[1];
  const email = get('email');
  const apiKey = get('key');
  const site = get('site');
  if (!email || !apiKey || !site) throw new Error(`${path}: needs email=, key= and site= under [api]`);
  return { email, apiKey, site: site.replace(/\/+$/, '') };
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolvePort(port));
    });
  });
}

/** The limit `ulimit -n` may be raised to here: 1048576 if allowed, else the hard limit. */
const RAISE_FD_LIMIT = 'ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true';

export interface Spawned {
  child: ChildProcess;
  pid: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resident set size in bytes (VmRSS of /proc/<pid>/status). */
  rss(): number;
  /** The soft open-file limit the process runs with. */
  fdLimit(): number;
  stop(): Promise<number | null>;
}

export function spawnWithFdLimit(argv: string[], env: NodeJS.ProcessEnv, cwd = REPO): Spawned {
  const quoted = argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('bash', ['-c', `${RAISE_FD_LIMIT}; exec ${quoted}`], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const pid = child.pid!;
  return {
    child,
    pid,
    output: () => out,
    rss: () => procRss(pid),
    fdLimit: () => procFdLimit(pid),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

export function procRss(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

export function procFdLimit(pid: number): number {
  try {
    const m = /Max open files\s+(\d+|unlimited)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'));
    return m ? (m[1] === 'unlimited' ? Infinity : Number(m[1])) : NaN;
  } catch {
    return NaN;
  }
}

/** CPU time (user + system) a process has used, in seconds. */
export function procCpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

/**
 * CPU seconds all processes on the machine have used in user and system mode
 * (/proc/stat, all cores). Interrupt time is left out: loopback TCP is
 * processed there and belongs to the measured processes, not to others.
 */
export function machineBusySeconds(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system] = f as [number, number, number];
    return (user + nice + system) / 100;
  } catch {
    return NaN;
  }
}

/**
 * Measures how much CPU processes other than `pids` and this one used while
 * `fn` ran, in cores: other work on a shared machine that skews the figures.
 */
export async function withForeignCpu<T>(pids: number[], fn: () => Promise<T>): Promise<{ result: T; foreignCores: number }> {
  const t0 = performance.now();
  const busy0 = machineBusySeconds();
  const own0 = pids.map(procCpuSeconds);
  const self0 = process.cpuUsage();
  const result = await fn();
  const secs = (performance.now() - t0) / 1000;
  const self = process.cpuUsage(self0);
  const ours = pids.reduce((sum, pid, i) => sum + (procCpuSeconds(pid) - own0[i]!), 0) + (self.user + self.system) / 1e6;
  return { result, foreignCores: Math.max(0, (machineBusySeconds() - busy0 - ours) / secs) };
}

export interface ParleyServer extends Spawned {
  url: string;
  port: number;
  dir: string;
  /** Demo users by role: owner, admin, member1, member2, bot. */
  users: Record<string, Credentials>;
  /** Stops the server and removes its data directory. */
  dispose(): Promise<void>;
}

export interface ParleyOptions {
  heartbeatSecs?: number;
  /** Directory for a V8 CPU profile written when the server exits. */
  cpuProfDir?: string;
  env?: Record<string, string>;
  /** Extra node flags (e.g. --trace-gc), before the script. */
  nodeArgs?: string[];
  readyTimeoutMs?: number;
  /** Another checkout to run the server of (a baseline): its own bundle if it has a build step, else its main.ts under tsx. */
  repo?: string;
  /** A directory a server started before used (`ParleyServer.dir`): starts again on its data, e.g. after the store was written offline. */
  dir?: string;
}

/** The node arguments that run the server of checkout `repo`. */
function serverArgsOf(repo: string | undefined): string[] {
  if (!repo || resolve(repo) === REPO) return serverArgs();
  if (!existsSync(join(repo, 'scripts/build.ts'))) return ['--import', 'tsx', 'main.ts'];
  const built = spawnSync('node', ['--import', 'tsx', 'scripts/build.ts'], { cwd: repo, encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`could not build ${repo}: ${built.stderr}`);
  return ['--enable-source-maps', 'dist/main.mjs'];
}

/** Starts Parley in embedded mode on a free port with a fresh data directory and waits until the demo realm is seeded. */
export async function startParley(opts: ParleyOptions = {}): Promise<ParleyServer> {
  const port = await freePort();
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'parley-bench-'));
  const demoDir = join(dir, 'demo');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PARLEY_MODE: 'embedded',
    PARLEY_PORT: String(port),
    // Metrics on (as in production), on a port of their own that never collides.
    PARLEY_METRICS_PORT: '0',
    PARLEY_DATA_DIR: join(dir, 'data'),
    PARLEY_DEMO_DIR: demoDir,
    PARLEY_LOG_LEVEL: 'warn',
    PARLEY_HEARTBEAT_SECS: String(opts.heartbeatSecs ?? 50),
    // Rate limits stay on with their defaults; the demo users that drive the load get budgets of their own.
    ...loadTestLimits(),
    ...opts.env,
  };
  const node = ['node', ...(opts.nodeArgs ?? []), ...(opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : []), ...serverArgsOf(opts.repo)];
  const proc = spawnWithFdLimit(node, env, opts.repo ? resolve(opts.repo) : REPO);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  const roles = ['owner', 'admin', 'member1', 'member2', 'bot'];
  for (;;) {
    if (proc.child.exitCode !== null) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`parley exited with ${proc.child.exitCode} during start:\n${proc.output().slice(-3000)}`);
    }
    if (Date.now() > deadline) {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`parley did not become ready within ${opts.readyTimeoutMs ?? 60_000} ms:\n${proc.output().slice(-3000)}`);
    }
    if (roles.every((r) => existsSync(join(demoDir, `${r}.zuliprc`)))) {
      const ok = await fetch(`${url}/api/v1/server_settings`).then((r) => r.ok, () => false);
      if (ok) break;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const users = Object.fromEntries(roles.map((r) => [r, readZuliprc(join(demoDir, `${r}.zuliprc`))]));
  return {
    ...proc,
    url,
    port,
    dir,
    users,
    async dispose() {
      await proc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Calls the API with fetch (set-up calls only; load goes through wrk, k6 or RawConn). */
export async function api<T = Record<string, unknown>>(site: string, who: Credentials, method: string, path: string, params: Record<string, string | number | boolean | unknown[] | object> = {}): Promise<T> {
  const form = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) form.set(k, typeof v === 'string' ? v : JSON.stringify(v));
  const auth = `Basic ${Buffer.from(`${who.email}:${who.apiKey}`).toString('base64')}`;
  const isGet = method === 'GET' || method === 'DELETE';
  const request = () =>
    fetch(`${site}/api/v1${path}${isGet && [...form].length ? `?${form}` : ''}`, {
      method,
      headers: { Authorization: auth, ...(isGet ? {} : { 'Content-Type': 'application/x-www-form-urlencoded' }) },
      body: isGet ? undefined : form.toString(),
    });
  // A pooled keep-alive connection the server closed while idle (a long step in between, e.g. the
  // generator's import) fails the next request with "other side closed": a read is sent again once.
  const res = await request().catch((err: unknown) => {
    if (method === 'GET' && (err as { cause?: { code?: string } }).cause?.code === 'UND_ERR_SOCKET') return request();
    throw err;
  });
  const json = (await res.json()) as T & { result?: string; msg?: string };
  if (!res.ok || json.result !== 'success') throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}
