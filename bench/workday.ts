/**
 * "A working day" (issue 20) as a bench step: the same k6 day
 * (`bench/k6/workday.js`) against a generated large organization and against
 * the demo organization, in the same run, judged by the same gates side by
 * side (Mattermost's: average ≤ 100 ms, p99 ≤ 2 s, 5xx ≤ 0.025%; and the big
 * channel's delivery p99 ≤ 2 s).
 *
 *   npm run bench -- --workday [--users 10000] [--active 1000] [--secs 90] [--scale 10] [--burst 1000]
 *   node --import tsx bench/workday.ts --org DIR      # reuse an organization generated before (DIR/keys.csv)
 *
 * The large organization is made by `bench/generate-org.ts` (its data
 * directory is kept under .parley/bench/workday-org-<users>/ and reused by
 * later runs); its first `--active` users of keys.csv are the active users.
 * The demo organization has five accounts: its active users are the same
 * number of queues and clients spread over them, and its big channel is
 * `general` (all five). Both servers run embedded with rate limits off (the
 * compression multiplies each user's request rate by `--scale`) and a 10 s
 * heartbeat. Server CPU (/proc), its peak RSS, k6's CPU and other processes'
 * CPU are recorded for each day: the load generator shares the 2 cores.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { findK6 } from './lib/k6.ts';
import { api, machineBusySeconds, procCpuSeconds, REPO, startParley, type ParleyServer } from './lib/server.ts';

export interface WorkdayOptions {
  users: number;
  active: number;
  secs: number;
  scale: number;
  burst: number;
  /** Generator arguments for the large organization. */
  channels: number;
  big: number;
  groups: number;
  messages: number;
  org: string | null;
  skipDemo: boolean;
  skipLarge: boolean;
}

interface DayResult {
  org: string;
  users: number;
  code: number | null;
  output: string;
  metrics: Record<string, Record<string, number>>;
  serverCpuCores: number;
  serverPeakRssMb: number;
  k6CpuCores: number;
  otherCpuCores: number;
  wallSecs: number;
  fdLimit: number;
}

/** Generates the large organization once (or reuses it) and returns its directory. */
function generate(o: WorkdayOptions): Promise<string> {
  const dir = o.org ?? join(REPO, '.parley/bench', `workday-org-${o.users}`);
  if (existsSync(join(dir, 'keys.csv')) && existsSync(join(dir, 'generated.json'))) {
    console.log(`large organization: reusing ${dir}`);
    return Promise.resolve(dir);
  }
  mkdirSync(dir, { recursive: true });
  const args = ['--import', 'tsx', 'bench/generate-org.ts', '--users', String(o.users), '--channels', String(o.channels), '--big', String(o.big), '--groups', String(o.groups), '--messages', String(o.messages), '--data-dir', dir];
  console.log(`large organization: node ${args.join(' ')}`);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const p = spawn('node', args, { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'] });
    p.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`generator exited with ${code}`));
      writeFileSync(join(dir, 'generated.json'), JSON.stringify({ ...o, generatedSecs: (performance.now() - t0) / 1000, at: new Date().toISOString() }));
      resolve(dir);
    });
  });
}

/** The demo organization's accounts as a users file (email,user_id,api_key). */
async function demoUsersFile(server: ParleyServer): Promise<string> {
  const rows = ['email,user_id,api_key'];
  for (const who of Object.values(server.users)) {
    const me = await api<{ user_id: number }>(server.url, who, 'GET', '/users/me');
    rows.push(`${who.email},${me.user_id},${who.apiKey}`);
  }
  const file = join(server.dir, 'users.csv');
  writeFileSync(file, `${rows.join('\n')}\n`);
  return file;
}

function runDay(k6: string, env: Record<string, string>, server: ParleyServer, timeoutSecs: number): Promise<Omit<DayResult, 'org' | 'users'>> {
  const json = join(server.dir, 'k6-summary.json');
  const args = ['run', '--quiet', '--no-color', '--address', '127.0.0.1:0', ...Object.entries({ ...env, SUMMARY_JSON: json }).flatMap(([k, v]) => ['-e', `${k}=${v}`]), join(REPO, 'bench/k6/workday.js')];
  // k6 gets the highest open-file limit allowed too: each active user holds a poll and a connection for its other calls.
  const p = spawn('bash', ['-c', `ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"`, 'k6', k6, ...args], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  p.stdout!.on('data', (d) => (out += d));
  p.stderr!.on('data', (d) => (out = (out + d).slice(-200_000)));
  const t0 = performance.now();
  const busy0 = machineBusySeconds();
  const server0 = procCpuSeconds(server.pid);
  const self0 = process.cpuUsage();
  let k6Cpu = 0;
  let peakRss = 0;
  const sampler = setInterval(() => {
    const c = procCpuSeconds(p.pid!);
    if (Number.isFinite(c)) k6Cpu = c;
    peakRss = Math.max(peakRss, server.rss() || 0);
  }, 500);
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutSecs * 1000);
  return new Promise((resolve) => {
    p.on('exit', (code) => {
      clearInterval(sampler);
      clearTimeout(timer);
      const wall = (performance.now() - t0) / 1000;
      const serverCpu = procCpuSeconds(server.pid) - server0;
      const self = process.cpuUsage(self0);
      let metrics: DayResult['metrics'] = {};
      try {
        const data = JSON.parse(readFileSync(json, 'utf8')) as { metrics: Record<string, { values: Record<string, number> }> };
        metrics = Object.fromEntries(Object.entries(data.metrics).map(([k, v]) => [k, v.values]));
      } catch {
        metrics = {};
      }
      resolve({
        code,
        output: out.trim(),
        metrics,
        serverCpuCores: serverCpu / wall,
        serverPeakRssMb: peakRss / 2 ** 20,
        k6CpuCores: k6Cpu / wall,
        otherCpuCores: Math.max(0, (machineBusySeconds() - busy0 - serverCpu - k6Cpu - (self.user + self.system) / 1e6) / wall),
        wallSecs: wall,
        fdLimit: server.fdLimit(),
      });
    });
  });
}

const SERVER_ENV = { PARLEY_RATE_LIMITS: 'false', PARLEY_MAX_QUEUES_PER_USER: '1000000' };

function dayEnv(o: WorkdayOptions, url: string, usersFile: string, bigChannel: string): Record<string, string> {
  return { PARLEY_URL: url, USERS_FILE: usersFile, ACTIVE: String(o.active), DURATION: `${o.secs}s`, SCALE: String(o.scale), BURST: String(o.burst), BIG_CHANNEL: bigChannel };
}

async function largeDay(k6: string, o: WorkdayOptions): Promise<DayResult> {
  const dir = await generate(o);
  const server = await startParley({ dir, heartbeatSecs: 10, readyTimeoutMs: 600_000, env: SERVER_ENV });
  try {
    console.log(`large organization: server up (${dir}); the day: ${o.active} active users, ${o.secs} s at x${o.scale}`);
    const r = await runDay(k6, dayEnv(o, server.url, join(dir, 'keys.csv'), 'everyone-big'), server, o.secs + 600);
    const users = readFileSync(join(dir, 'keys.csv'), 'utf8').split('\n').length - 2;
    return { org: 'large', users, ...r };
  } finally {
    // The organization's directory is kept for the next run.
    await server.stop();
  }
}

async function demoDay(k6: string, o: WorkdayOptions): Promise<DayResult> {
  const server = await startParley({ heartbeatSecs: 10, env: SERVER_ENV });
  try {
    const file = await demoUsersFile(server);
    console.log(`demo organization: the same day against ${server.url}`);
    const r = await runDay(k6, dayEnv(o, server.url, file, 'general'), server, o.secs + 600);
    return { org: 'demo', users: 5, ...r };
  } finally {
    await server.dispose();
  }
}

// ---- report -----------------------------------------------------------------------

const ms = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '—' : `${x.toFixed(x < 10 ? 1 : 0)} ms`);

function report(days: DayResult[]): string {
  const rows: Array<[string, (d: DayResult) => string]> = [
    ['users in the organization', (d) => d.users.toLocaleString('en')],
    ['gate: average of every call ≤ 100 ms', (d) => `${ms(d.metrics.api_duration?.avg)} ${d.metrics.api_duration?.avg! <= 100 ? 'PASS' : 'MISS'}`],
    ['gate: p99 of every call ≤ 2 s', (d) => `${ms(d.metrics.api_duration?.['p(99)'])} ${d.metrics.api_duration?.['p(99)']! <= 2000 ? 'PASS' : 'MISS'}`],
    ['gate: 5xx (or no answer) ≤ 0.025%', (d) => `${((d.metrics.server_errors?.rate ?? NaN) * 100).toFixed(4)}% ${d.metrics.server_errors?.rate! <= 0.00025 ? 'PASS' : 'MISS'}`],
    ['big channel delivery p99 ≤ 2 s', (d) => `${ms(d.metrics.big_delivery_latency?.['p(99)'])} ${d.metrics.big_delivery_latency?.['p(99)']! <= 2000 ? 'PASS' : 'MISS'}`],
    ['calls (all, incl. polls)', (d) => String(d.metrics.http_reqs?.count ?? '—')],
    ...['presence', 'typing', 'send_small', 'send_dm', 'send_big', 'read_history', 'register', 'burst_register'].map(
      (n) => [`${n.replace(/_/g, ' ')}: avg / p99`, (d: DayResult) => `${ms(d.metrics[`${n}_duration`]?.avg)} / ${ms(d.metrics[`${n}_duration`]?.['p(99)'])} (n=${d.metrics[`${n}_duration`]?.count ?? 0})`] as [string, (d: DayResult) => string],
    ),
    ['delivery p50 / p99, all messages', (d) => `${ms(d.metrics.delivery_latency?.med)} / ${ms(d.metrics.delivery_latency?.['p(99)'])} (n=${d.metrics.delivery_latency?.count ?? 0})`],
    ['delivery p50 / p99, direct', (d) => `${ms(d.metrics.dm_delivery_latency?.med)} / ${ms(d.metrics.dm_delivery_latency?.['p(99)'])}`],
    ['typing / presence events received', (d) => `${d.metrics.typing_events?.count ?? 0} / ${d.metrics.presence_events?.count ?? 0}`],
    ['server CPU (cores, mean)', (d) => d.serverCpuCores.toFixed(2)],
    ['server peak RSS', (d) => `${d.serverPeakRssMb.toFixed(0)} MB`],
    ['k6 CPU (cores, mean)', (d) => d.k6CpuCores.toFixed(2)],
    ['other processes (cores, mean)', (d) => d.otherCpuCores.toFixed(2)],
    ['k6 exit code (99 = a gate failed)', (d) => String(d.code)],
  ];
  const head = `| | ${days.map((d) => `${d.org} organization`).join(' | ')} |\n|---|${days.map(() => '---').join('|')}|`;
  return `${head}\n${rows.map(([label, f]) => `| ${label} | ${days.map(f).join(' | ')} |`).join('\n')}`;
}

export async function workday(o: WorkdayOptions): Promise<DayResult[]> {
  const k6 = findK6();
  if (!k6) throw new Error('k6 not found: run scripts/install-k6.sh');
  console.log(`workday: ${o.active} active users, a ${o.secs} s day at x${o.scale}, burst of ${o.burst}; load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const days: DayResult[] = [];
  if (!o.skipLarge) days.push(await largeDay(k6, o));
  if (!o.skipDemo) days.push(await demoDay(k6, o));
  for (const d of days) console.log(`\n--- ${d.org} organization ---\n${d.output.split('\n').filter((l) => !/^\s*$/.test(l)).slice(-40).join('\n')}`);
  console.log(`\n${report(days)}\nload average at the end: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const outDir = join(REPO, '.parley/bench');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'workday.json'), JSON.stringify({ at: new Date().toISOString(), options: o, loadavg: os.loadavg(), days: days.map(({ output: _, ...d }) => d) }, null, 2));
  console.log(`written: ${join(outDir, 'workday.json')}`);
  return days;
}

export const WORKDAY_ARGS = {
  users: { type: 'string', default: '10000' },
  active: { type: 'string', default: '1000' },
  secs: { type: 'string', default: '90' },
  scale: { type: 'string', default: '10' },
  burst: { type: 'string', default: '1000' },
  channels: { type: 'string', default: '300' },
  big: { type: 'string' },
  groups: { type: 'string', default: '30' },
  messages: { type: 'string', default: '3000' },
  org: { type: 'string' },
  'skip-demo': { type: 'boolean', default: false },
  'skip-large': { type: 'boolean', default: false },
} as const;

export function workdayOptions(v: Record<string, string | boolean | undefined>): WorkdayOptions {
  const users = Number(v.users);
  return {
    users,
    active: Number(v.active),
    secs: Number(v.secs),
    scale: Number(v.scale),
    burst: Number(v.burst),
    channels: Number(v.channels),
    big: v.big === undefined ? Math.floor(users / 2) : Number(v.big),
    groups: Number(v.groups),
    messages: Number(v.messages),
    org: (v.org as string | undefined) ?? null,
    skipDemo: v['skip-demo'] === true,
    skipLarge: v['skip-large'] === true,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: WORKDAY_ARGS });
  const days = await workday(workdayOptions(values));
  process.exit(days.every((d) => d.code === 0) ? 0 : 1);
}
