/**
 * Closed-loop HTTP load: wrk when it is installed (STACK.md: autocannon
 * saturates before the server on 2 cores, wrk does not), else a Node
 * generator on RawConn, which is reported as such because it saturates
 * sooner and understates the server.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RawConn } from './rawhttp.ts';
import { summarize } from './stats.ts';

export interface LoadSpec {
  url: string;
  method: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  threads?: number;
  durationSecs: number;
}

export interface LoadResult {
  tool: 'wrk' | 'node';
  rps: number;
  requests: number;
  /** Socket errors plus non-2xx/3xx answers. */
  errors: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
}

export function hasWrk(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

/** Installs wrk with apt-get when it is missing and we are root; bounded to `timeoutMs`. */
export function ensureWrk(log: (s: string) => void, timeoutMs = 120_000): boolean {
  if (hasWrk()) return true;
  if (process.getuid?.() !== 0) return false;
  log('wrk is missing: apt-get install -y wrk');
  const opts = { stdio: 'ignore' as const, timeout: timeoutMs, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  if (spawnSync('apt-get', ['install', '-y', '-qq', 'wrk'], opts).status !== 0) {
    spawnSync('apt-get', ['update', '-qq'], opts);
    spawnSync('apt-get', ['install', '-y', '-qq', 'wrk'], opts);
  }
  return hasWrk();
}

const lua = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;

export async function runWrk(spec: LoadSpec): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-wrk-'));
  const script = join(dir, 'req.lua');
  const headers = Object.entries(spec.headers ?? {}).map(([k, v]) => `wrk.headers[${lua(k)}] = ${lua(v)}`).join('\n');
  writeFileSync(script, `wrk.method = ${lua(spec.method)}
${spec.body !== undefined ? `wrk.body = ${lua(spec.body)}` : ''}
${headers}
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))
end
`);
  const args = ['-t', String(spec.threads ?? 1), '-c', String(spec.connections), '-d', `${spec.durationSecs}s`, '--timeout', '10s', '-s', script, spec.url];
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    p.stdout.on('data', (d) => (text += d));
    p.stderr.on('data', (d) => (text += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), (spec.durationSecs + 30) * 1000);
    p.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(text);
      else reject(new Error(`wrk exited with ${code}: ${text}`));
    });
  });
  rmSync(dir, { recursive: true, force: true });
  const line = /WRKJSON (\{.*\})/.exec(out);
  if (!line) throw new Error(`wrk printed no summary:\n${out}`);
  const j = JSON.parse(line[1]!) as Record<string, number>;
  return {
    tool: 'wrk',
    requests: j.requests!,
    rps: j.requests! / (j.duration_us! / 1e6),
    errors: j.connect! + j.read! + j.write! + j.status! + j.timeout!,
    latencyMs: { p50: j.p50! / 1000, p90: j.p90! / 1000, p99: j.p99! / 1000, max: j.max! / 1000 },
  };
}

/** The same closed loop in Node, for machines without wrk. */
export async function runNodeLoad(spec: LoadSpec): Promise<LoadResult> {
  const u = new URL(spec.url);
  const auth = spec.headers?.Authorization;
  const conns = await Promise.all(Array.from({ length: spec.connections }, async () => {
    const c = new RawConn({ host: u.hostname, port: Number(u.port), authorization: auth });
    await c.connect();
    return c;
  }));
  const lat: number[] = [];
  let errors = 0;
  const start = performance.now();
  const end = start + spec.durationSecs * 1000;
  await Promise.all(conns.map(async (c) => {
    while (performance.now() < end && !c.dead) {
      const t0 = performance.now();
      try {
        const r = await c.request(spec.method, u.pathname + u.search, spec.body, spec.headers?.['Content-Type']);
        if (r.status >= 400) errors++;
        lat.push(performance.now() - t0);
      } catch {
        errors++;
      }
    }
  }));
  const secs = (performance.now() - start) / 1000;
  for (const c of conns) c.close();
  const s = summarize(lat);
  return { tool: 'node', requests: lat.length, rps: lat.length / secs, errors, latencyMs: { p50: s.p50, p90: s.p90, p99: s.p99, max: s.max } };
}

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  return hasWrk() ? runWrk(spec) : runNodeLoad(spec);
}
