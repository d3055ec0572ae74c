/**
 * The bench: how fast Parley is, as ratios to limits measured minutes apart
 * on the same machine.
 *
 *   npm run bench                 quick: a few minutes
 *   npm run bench -- --full       long: longer runs, more load points, 100k long polls (as many as the fd limit allows)
 *   npm run bench -- --smoke      tiny (< 60 s): proves every script works; exits non-zero if one fails
 *
 * Other flags: --profile (CPU-profile the server during the send run and
 * print its top frames), --svg PATH (also write the latency chart there),
 * --no-k6 (skip the k6 scripts), --holder N (long polls to hold),
 * --server-env NAME=VALUE (repeatable; extra environment for every Parley
 * server started, e.g. PARLEY_SHARDS=8), --invite-only (the send channel is
 * private, so deliveries go only to its subscribers' shards), --skip
 * hello,store,send,holder (leave steps out, e.g. for a what-if run),
 * --workday (the working day of a large organization, bench/workday.ts, with
 * its own options: --users, --active, --secs, --scale, --burst, --org; not part
 * of the quick, full or smoke runs), --notifications (what notifications cost
 * the send path, bench/notify-send.ts, with its own options: --members,
 * --away, --rounds, --secs, --senders, --profile; the smoke run has a small
 * one), --replot FILE (redraw the chart of a saved last.json into --svg PATH and exit),
 * --server-repo DIR (the send and profile steps measure that checkout's
 * server: a baseline under this harness), --latency-rate N (the latency
 * steps offer N msg/s instead of fractions of the maximum: builds compared
 * at the same load), --server-node-args="FLAGS" (node flags for the send
 * step's server, e.g. "--trace-gc"), --server-output FILE (that server's
 * output, the last 100-200 KB, written there after its latency steps).
 *
 * Each step starts the processes it measures itself, on free ports with a
 * temporary data directory, and stops them. Results: a table on stdout,
 * .parley/bench/last.json, .parley/bench/latency.svg and, with --profile,
 * .parley/bench/profile.txt.
 */
import { execSync, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { clusterBench as runClusterBench, type ClusterResult } from './cluster.ts';
import { runHolder, type HolderResult } from './holder.ts';
import { formatProfile, summarizeProfile, type ProfileSummary } from './lib/cpuprofile.ts';
import { Drainer, type RateResult, sendAtRate, setupFanout, CHANNEL } from './lib/fanout.ts';
import { startEphemeralTraffic } from './lib/ephemeral.ts';
import { findK6, k6Version, runK6, type K6Run } from './lib/k6.ts';
import { ensureWrk, hasWrk, runLoad, type LoadResult } from './lib/loadgen.ts';
import { basicAuth } from './lib/rawhttp.ts';
import { api, freePort, procCpuSeconds, REPO, spawnWithFdLimit, startParley, withForeignCpu, type ParleyServer, type Spawned } from './lib/server.ts';
import { fmt, summarize, type Summary } from './lib/stats.ts';
import { lineChart } from './lib/svg.ts';

// ---- plan ---------------------------------------------------------------------------

type Mode = 'smoke' | 'quick' | 'full';

interface Plan {
  loadSecs: number;
  warmupSecs: number;
  /** wrk connection counts tried for the maximum send rate (the best one counts). */
  connections: number[];
  /** Fractions of the maximum send rate for the latency curve. */
  sweep: number[];
  sweepSecs: number;
  holder: number;
  heartbeatSecs: number;
  storeCount: number;
  k6Secs: number;
}

const PLANS: Record<Mode, Plan> = {
  smoke: { loadSecs: 2, warmupSecs: 0, connections: [16], sweep: [0.5], sweepSecs: 2, holder: 300, heartbeatSecs: 1, storeCount: 200, k6Secs: 2 },
  quick: { loadSecs: 10, warmupSecs: 3, connections: [100], sweep: [0.1, 0.25, 0.5, 0.75, 0.9], sweepSecs: 5, holder: 10_000, heartbeatSecs: 5, storeCount: 2000, k6Secs: 15 },
  full: { loadSecs: 30, warmupSecs: 5, connections: [32, 100, 256], sweep: [0.05, 0.1, 0.25, 0.5, 0.6, 0.75, 0.9, 1.0], sweepSecs: 15, holder: 100_000, heartbeatSecs: 10, storeCount: 10_000, k6Secs: 60 },
};

/** The targets the issue sets. */
const TARGET = {
  sendRatio: 0.3,
  deliveryP99Ms: 10,
  heldQuick: 10_000,
  heldFullMin: 50_000,
  heldFullGoal: 100_000,
  rssBytes: 2 * 1024 ** 3,
  answerWithinMs: 2000,
  clusterRatio: 0.5,
};

/** Queues per channel subscriber set: 5 demo users + 5 created users subscribed, 10 queues drained. */
const FANOUT = { extraUsers: 5, queues: 10, inviteOnly: false };

/** Extra environment for every Parley server a step starts (--server-env). */
const serverEnv: Record<string, string> = {};

/**
 * Another checkout whose server the send and profile steps measure with this
 * harness (--server-repo): a baseline measured by the same figures. Its server
 * may lack typing and presence; then that sub-step is left out.
 */
let serverRepo: string | undefined;

/**
 * The one rate (msg/s) the latency steps offer instead of fractions of the
 * measured maximum (--latency-rate): builds of different maxima compared at
 * the same load.
 */
let latencyRate: number | null = null;

/** Node flags for the send step's server (--server-node-args, e.g. `--trace-gc`), and where its output goes (--server-output). */
let serverNodeArgs: string[] = [];
let serverOutput: string | undefined;

// ---- bookkeeping ------------------------------------------------------------------------

interface Figure {
  name: string;
  value: number;
  unit: string;
  target?: string;
  ratio?: number;
  status: 'PASS' | 'MISS' | 'INFO' | 'CAPPED';
  note?: string;
}

const figures: Figure[] = [];
const failures: string[] = [];
const live = new Set<Spawned>();

function log(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function step<T>(name: string, fn: () => Promise<T>): Promise<T | null> {
  const t0 = performance.now();
  log(`\n== ${name}`);
  try {
    const r = await fn();
    log(`   (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
    return r;
  } catch (err) {
    failures.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    log(`   FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return null;
  }
}

function sh(cmd: string): string {
  try {
    return execSync(cmd, { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
  } catch {
    return '';
  }
}

/** The commit checked out in `dir` (with `+changes` when its tree differs from it). */
function gitHead(dir: string): string {
  const head = sh(`git -C ${JSON.stringify(dir)} rev-parse --short HEAD`);
  return head + (sh(`git -C ${JSON.stringify(dir)} status --porcelain --untracked-files=no`) ? '+changes' : '');
}

/** Whether a server answers the typing route (a baseline from before issue 10 does not). */
async function hasTyping(server: ParleyServer): Promise<boolean> {
  const res = await fetch(`${server.url}/api/v1/typing`, { method: 'POST', headers: { Authorization: basicAuth(server.users.owner!.email, server.users.owner!.apiKey) } });
  return res.status !== 404;
}

function machine() {
  const fd = spawnSync('bash', ['-c', 'ulimit -Sn; ulimit -Hn'], { encoding: 'utf8' }).stdout.trim().split('\n');
  return {
    date: new Date().toISOString(),
    commit: sh('git rev-parse --short HEAD'),
    dirty: sh('git status --porcelain').length > 0,
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model ?? '',
    memTotalGiB: +(os.totalmem() / 1024 ** 3).toFixed(1),
    freeH: sh('free -h'),
    node: process.version,
    wrk: hasWrk() ? sh('wrk --version 2>&1 | head -1') || 'wrk' : null,
    fdLimit: { soft: fd[0], hard: fd[1] },
    loadavgAtStart: os.loadavg().map((v) => +v.toFixed(2)),
  };
}

// ---- steps --------------------------------------------------------------------------------

async function helloBaseline(plan: Plan): Promise<LoadResult> {
  const port = await freePort();
  const hello = spawnWithFdLimit(['node', '--import', 'tsx', 'bench/baseline/hello.ts'], { ...process.env, PORT: String(port) });
  live.add(hello);
  try {
    const deadline = Date.now() + 20_000;
    while (!hello.output().includes('listening')) {
      if (hello.child.exitCode !== null || Date.now() > deadline) throw new Error(`hello.ts did not start: ${hello.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const url = `http://127.0.0.1:${port}/`;
    if (plan.warmupSecs) await runLoad({ url, method: 'GET', connections: 100, durationSecs: 1 });
    let best: LoadResult | null = null;
    for (const c of plan.connections) {
      const r = await runLoad({ url, method: 'GET', connections: c, durationSecs: plan.loadSecs });
      log(`   hello world, ${r.tool} -c${c}: ${fmt(r.rps)} req/s, p99 ${fmt(r.latencyMs.p99)} ms, ${r.errors} errors`);
      if (!best || r.rps > best.rps) best = r;
    }
    if (!best || best.rps <= 0) throw new Error('hello world served nothing');
    figures.push({ name: 'baseline: uWS hello world', value: best.rps, unit: 'req/s', status: 'INFO', note: `${best.tool}, best of -c ${plan.connections.join('/')}` });
    return best;
  } finally {
    await hello.stop();
    live.delete(hello);
  }
}

interface StoreResult {
  inFlight: number;
  sequential: { perSec: number };
  concurrent: { perSec: number };
}

async function storeBaseline(plan: Plan): Promise<StoreResult> {
  const p = spawnSync('node', ['--import', 'tsx', 'bench/baseline/store.ts', '--count', String(plan.storeCount), '--in-flight', '64'], { cwd: REPO, encoding: 'utf8', timeout: 300_000 });
  if (p.status !== 0) throw new Error(`store baseline failed: ${p.stderr || p.stdout}`);
  const r = JSON.parse(p.stdout.trim().split('\n').pop()!) as StoreResult;
  log(`   EmbeddedStore.write, 1 message row: sequential ${fmt(r.sequential.perSec)}/s, ${r.inFlight} in flight ${fmt(r.concurrent.perSec)}/s`);
  figures.push({ name: 'baseline: store write, sequential', value: r.sequential.perSec, unit: 'writes/s', status: 'INFO', note: 'each awaits its commit + sync' });
  figures.push({ name: `baseline: store write, ${r.inFlight} in flight`, value: r.concurrent.perSec, unit: 'writes/s', status: 'INFO' });
  return r;
}

interface SendResult {
  load: LoadResult;
  connections: number;
  delivered: number;
  expected: number;
  cpuMsPerMessage: number;
  rssBytes: number;
  sweep: Array<RateResult & { foreignCores: number }>;
  registerMs: Summary;
  k6: K6Run[];
}

async function sendBench(plan: Plan, mode: Mode, opts: { k6: string | null }, hello: LoadResult | null, store: StoreResult | null): Promise<SendResult> {
  const server = await startParley({ env: serverEnv, repo: serverRepo, nodeArgs: serverNodeArgs });
  live.add(server);
  try {
    log(`   parley ${server.url} pid ${server.pid}, fd limit ${server.fdLimit()}`);
    const setup = await setupFanout(server, FANOUT);
    log(`   channel '${setup.channel}': ${setup.subscribers} subscribers, ${setup.queues.length} queues drained by long polls`);
    const drainer = new Drainer(server.url, setup);
    await drainer.start();
    const owner = server.users.owner!;
    const spec = (c: number, secs: number) => ({
      url: `${server.url}/api/v1/messages`,
      method: 'POST' as const,
      connections: c,
      durationSecs: secs,
      headers: { Authorization: basicAuth(owner.email, owner.apiKey), 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `type=stream&to=${CHANNEL}&topic=wrk&content=${encodeURIComponent('a message from the bench, about the length of a chat line')}`,
    });
    let stored = 0; // messages in the channel, for the register figure
    if (plan.warmupSecs) stored += (await runLoad(spec(plan.connections[0]!, plan.warmupSecs))).requests;
    let best: { load: LoadResult; c: number; delivered: number; cpu: number } | null = null;
    for (const c of plan.connections) {
      await new Promise((r) => setTimeout(r, 500));
      const before = drainer.events;
      const cpu0 = procCpuSeconds(server.pid);
      const load = await runLoad(spec(c, plan.loadSecs));
      const cpu = procCpuSeconds(server.pid) - cpu0;
      stored += load.requests;
      await new Promise((r) => setTimeout(r, 1000)); // deliveries still in flight
      const delivered = drainer.events - before;
      log(`   POST /messages, ${load.tool} -c${c}: ${fmt(load.rps)} msg/s, p50 ${fmt(load.latencyMs.p50)} ms, p99 ${fmt(load.latencyMs.p99)} ms, ${load.errors} errors; ${delivered} events drained (${fmt(delivered / Math.max(1, load.requests))} per message)`);
      if (!best || load.rps > best.load.rps) best = { load, c, delivered, cpu };
    }
    const load = best!.load;
    const expected = load.requests * setup.queues.length;
    if (load.requests === 0) throw new Error('no message was sent');
    if (load.errors > load.requests * 0.01) throw new Error(`${load.errors} of ${load.requests} sends failed`);
    if (best!.delivered < expected) throw new Error(`fan-out incomplete: ${best!.delivered} of ${expected} events drained`);
    if (drainer.errors) log(`   drainer errors: ${drainer.errors} (${drainer.errorSample})`);
    const cpuMsPerMessage = (best!.cpu * 1000) / load.requests;
    const rss = server.rss();
    const ratio = hello ? load.rps / hello.rps : NaN;
    figures.push({
      name: `send: POST /messages, ${setup.subscribers} subscribers, ${setup.queues.length} queues`,
      value: load.rps,
      unit: 'msg/s',
      target: `>= ${TARGET.sendRatio * 100}% of hello world`,
      ratio,
      status: ratio >= TARGET.sendRatio ? 'PASS' : 'MISS',
      note: `${load.tool} -c${best!.c}; ${fmt(cpuMsPerMessage)} ms server CPU per message${store ? `; ${fmt((load.rps / store.concurrent.perSec) * 100)}% of the store's concurrent write rate` : ''}`,
    });
    figures.push({ name: 'send: HTTP latency at max rate', value: load.latencyMs.p99, unit: 'ms p99', status: 'INFO', note: `p50 ${fmt(load.latencyMs.p50)} ms, closed loop with ${best!.c} connections` });

    // Latency against load: open-loop sends at fractions of the maximum rate.
    const sweep: Array<RateResult & { foreignCores: number }> = [];
    for (const f of latencyRate ? [latencyRate / load.rps] : plan.sweep) {
      const rate = Math.max(1, load.rps * f);
      const { result: r, foreignCores } = await withForeignCpu([server.pid], () => sendAtRate(server.url, owner, drainer, rate, plan.sweepSecs));
      log(`   ${fmt(f * 100)}% (${fmt(rate)} msg/s offered, ${fmt(r.achievedRate)} achieved): send p50 ${fmt(r.send.p50)} / p99 ${fmt(r.send.p99)} ms; delivery p50 ${fmt(r.delivery.p50)} / p99 ${fmt(r.delivery.p99)} / max ${fmt(r.delivery.max)} ms (${r.deliveries}/${r.sent * setup.queues.length} events, ${r.failed} failed); other processes ${fmt(foreignCores)} cores; the bench's own loop delay p99 ${fmt(r.harness.loopDelayP99)} / max ${fmt(r.harness.loopDelayMax)} ms, GC ${fmt(r.harness.gcTotalMs)} ms in ${r.harness.gcCount} (longest ${fmt(r.harness.gcMaxMs)})`);
      sweep.push({ ...r, foreignCores });
      if (r.failed > r.sent * 0.01) throw new Error(`${r.failed} of ${r.sent} sends failed at ${fmt(rate)} msg/s`);
      if (r.deliveries < (r.sent - r.failed) * setup.queues.length) throw new Error(`delivery incomplete at ${fmt(rate)} msg/s: ${r.deliveries} of ${(r.sent - r.failed) * setup.queues.length}`);
    }
    const half = sweep.reduce((a, b) => (Math.abs(b.targetRate / load.rps - 0.5) < Math.abs(a.targetRate / load.rps - 0.5) ? b : a));
    figures.push({
      name: `delivery: p99 send-to-delivery at ${fmt((half.targetRate / load.rps) * 100)}% of max (${fmt(half.targetRate)} msg/s)`,
      value: half.delivery.p99,
      unit: 'ms',
      target: `< ${TARGET.deliveryP99Ms} ms`,
      ratio: half.delivery.p99 / TARGET.deliveryP99Ms,
      status: half.delivery.p99 < TARGET.deliveryP99Ms ? 'PASS' : 'MISS',
      note: `p50 ${fmt(half.delivery.p50)} ms; per 1-s window p99 median ${fmt(half.deliveryWindows.median)} / worst ${fmt(half.deliveryWindows.worst)} ms (${half.deliveryWindows.windows} windows); send p99 ${fmt(half.send.p99)} ms (window median ${fmt(half.sendWindows.median)}); ${half.delivery.count} deliveries; other processes used ${fmt(half.foreignCores)} cores meanwhile`,
    });
    // The same half-rate step with typing and presence traffic alongside: ephemeral
    // traffic must not slow sends or their delivery down.
    if (!serverRepo || (await hasTyping(server))) {
      const users = Object.values(server.users);
      const ids = await Promise.all(users.map(async (u) => (await api<{ user_id: number }>(server.url, u, 'POST', '/register', { fetch_event_types: ['realm_user'], event_types: ['heartbeat'] })).user_id));
      const rate = latencyRate ?? Math.max(1, load.rps * 0.5);
      const traffic = startEphemeralTraffic(server.url, users, mode === 'smoke' ? 20 : 200, ids);
      const { result: r } = await withForeignCpu([server.pid], () => sendAtRate(server.url, owner, drainer, rate, plan.sweepSecs));
      const side = await traffic.stop();
      log(`   50% with typing and presence alongside (${side.sent} notices and pings, ${side.failed} failed): send p99 ${fmt(r.send.p99)} ms; delivery p50 ${fmt(r.delivery.p50)} / p99 ${fmt(r.delivery.p99)} ms (${r.deliveries}/${r.sent * setup.queues.length} events)`);
      figures.push({
        name: 'delivery: p99 at 50% of max with typing and presence alongside',
        value: r.delivery.p99,
        unit: 'ms',
        target: `< ${TARGET.deliveryP99Ms} ms`,
        ratio: r.delivery.p99 / TARGET.deliveryP99Ms,
        status: r.delivery.p99 < TARGET.deliveryP99Ms ? 'PASS' : 'MISS',
        note: `per 1-s window p99 median ${fmt(r.deliveryWindows.median)} / worst ${fmt(r.deliveryWindows.worst)} ms; send p99 ${fmt(r.send.p99)} ms; ${side.sent} typing notices and presence pings meanwhile (${side.failed} failed); compare with the 50% step above`,
      });
      if (side.failed > side.sent * 0.01) throw new Error(`${side.failed} typing/presence requests failed`);
    }
    await drainer.stop();
    if (serverOutput) writeFileSync(serverOutput, server.output());

    // Register cost grows with history (the snapshot's unread summary reads the newest messages):
    // time a few registers now that the channel holds everything sent above.
    stored += sweep.reduce((n, r) => n + r.sent - r.failed, 0);
    const regMs: number[] = [];
    for (let i = 0; i < (mode === 'smoke' ? 3 : 20); i++) {
      const t0 = performance.now();
      await api(server.url, server.users.member1!, 'POST', '/register', { event_types: ['message'] });
      regMs.push(performance.now() - t0);
    }
    const reg = summarize(regMs);
    log(`   POST /register (event_types=["message"]) with ~${fmt(stored)} messages in the channel: p50 ${fmt(reg.p50)} ms, max ${fmt(reg.max)} ms (${reg.count} sequential)`);
    figures.push({ name: 'register: one queue, with history in the channel', value: reg.p50, unit: 'ms p50', status: 'INFO', note: `max ${fmt(reg.max)} ms; ~${fmt(stored)} messages stored; blocks the event loop while it runs` });

    // The k6 scripts against the same server, as a user would run them.
    const k6: K6Run[] = [];
    if (opts.k6) {
      const demo = join(server.dir, 'demo');
      const all = ['owner', 'admin', 'member1', 'member2', 'bot'].map((r) => join(demo, `${r}.zuliprc`)).join(',');
      const d = `${plan.k6Secs}s`;
      const short: Record<string, string> = mode === 'smoke' ? { LEAD_SECS: '1', TAIL_SECS: '1' } : {};
      const runs: Array<[string, Record<string, string>]> = mode === 'smoke'
        ? [
            ['bench/k6/send.js', { PARLEY_ZULIPRC: join(demo, 'bot.zuliprc'), RATE: '20', DURATION: d }],
            ['bench/k6/longpoll.js', { PARLEY_ZULIPRC: all, VUS: '10', SEND_RATE: '5', DURATION: d, ...short }],
            ['bench/k6/mixed.js', { PARLEY_ZULIPRC: all, POLL_VUS: '20', SEND_RATE: '5', READ_RATE: '2', DURATION: d, ...short }],
          ]
        : [['bench/k6/mixed.js', { PARLEY_ZULIPRC: all, POLL_VUS: mode === 'full' ? '300' : '100', SEND_RATE: '10', READ_RATE: '5', DURATION: d }]];
      for (const [script, env] of runs) {
        const r = await runK6(opts.k6, script, env, plan.k6Secs + 60);
        k6.push(r);
        log(r.output.split('\n').map((l) => `   ${l}`).join('\n'));
        // k6 exits 99 when a threshold is crossed: a result under load, but a failure in the smoke run.
        if (r.code !== 0 && (r.code !== 99 || mode === 'smoke')) throw new Error(`k6 ${script} exited with ${r.code}`);
        const lat = r.summary?.metrics.event_latency?.values;
        if (lat) {
          const env_ = Object.entries(env).filter(([k]) => !k.startsWith('PARLEY_') && !k.endsWith('_SECS')).map(([k, v]) => `${k}=${v}`).join(' ');
          figures.push({ name: `k6 ${script.split('/').pop()}: delivery latency p99`, value: lat['p(99)']!, unit: 'ms', status: 'INFO', note: `p50 ${fmt(lat.med!)} ms, ${lat.count} events; ${env_}${r.code === 99 ? '; k6 thresholds crossed' : ''}` });
        }
      }
    }

    return { load, connections: best!.c, delivered: best!.delivered, expected, cpuMsPerMessage, rssBytes: rss, sweep, registerMs: reg, k6 };
  } finally {
    await server.dispose();
    live.delete(server);
  }
}

/**
 * A server of its own, CPU-profiled (node --cpu-prof) while wrk sends at the
 * maximum rate, so the profile shows the saturated send path and little else.
 */
async function profileSend(plan: Plan, connections: number): Promise<ProfileSummary> {
  const profDir = join(REPO, '.parley/bench/prof');
  rmSync(profDir, { recursive: true, force: true });
  mkdirSync(profDir, { recursive: true });
  const server = await startParley({ cpuProfDir: profDir, env: serverEnv, repo: serverRepo });
  live.add(server);
  try {
    const setup = await setupFanout(server, FANOUT);
    const drainer = new Drainer(server.url, setup);
    await drainer.start();
    const owner = server.users.owner!;
    const load = await runLoad({
      url: `${server.url}/api/v1/messages`,
      method: 'POST',
      connections,
      durationSecs: plan.loadSecs,
      headers: { Authorization: basicAuth(owner.email, owner.apiKey), 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `type=stream&to=${CHANNEL}&topic=wrk&content=${encodeURIComponent('a message from the bench, about the length of a chat line')}`,
    });
    log(`   profiled run: ${fmt(load.rps)} msg/s with ${load.tool} -c${connections}`);
    await drainer.stop();
  } finally {
    await server.dispose(); // the profile is written when the server exits
    live.delete(server);
  }
  const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(profDir, f));
  // The main thread's profile is the largest; tsx's loader thread writes a small one.
  const main = files.sort((a, b) => statSync(b).size - statSync(a).size)[0];
  if (!main) throw new Error('the server wrote no CPU profile');
  const profile = summarizeProfile(main, REPO, 20);
  const text = formatProfile(profile);
  writeFileSync(join(REPO, '.parley/bench/profile.txt'), `${text}\n`);
  log(text.split('\n').map((l) => `   ${l}`).join('\n'));
  return profile;
}

async function holderBench(plan: Plan, mode: Mode, requested: number): Promise<HolderResult & { capacity: number; fdLimit: number }> {
  const server: ParleyServer = await startParley({ heartbeatSecs: plan.heartbeatSecs, env: serverEnv });
  live.add(server);
  try {
    const fdLimit = server.fdLimit();
    // Each held poll is one socket on the server; keep a margin for its own files.
    const capacity = Math.max(0, fdLimit - 500);
    const count = Math.min(requested, capacity);
    log(`   parley ${server.url} pid ${server.pid}, PARLEY_HEARTBEAT_SECS=${plan.heartbeatSecs}, fd limit ${fdLimit}: holding ${count} of ${requested} requested long polls`);
    const r = await runHolder({ site: server.url, users: Object.values(server.users), count, serverPid: server.pid, heartbeatSecs: plan.heartbeatSecs, log: (s) => log(`   ${s}`) });
    if (r.held < count) throw new Error(`only ${r.held} of ${count} polls held`);
    if (r.delivery.count < r.held) throw new Error(`fan-out reached ${r.delivery.count} of ${r.held} polls`);
    if (r.heartbeat.queuesWithHeartbeat < r.held) throw new Error(`${r.held - r.heartbeat.queuesWithHeartbeat} polls got no heartbeat`);

    const goal = mode === 'full' ? TARGET.heldFullGoal : mode === 'quick' ? TARGET.heldQuick : requested;
    const floor = mode === 'full' ? TARGET.heldFullMin : goal;
    const capped = r.held < floor && count < requested;
    figures.push({
      name: 'long polls held',
      value: r.held,
      unit: 'polls',
      target: mode === 'full' ? `${goal.toLocaleString('en-US')} (at least ${floor.toLocaleString('en-US')})` : `${goal.toLocaleString('en-US')}`,
      ratio: r.held / goal,
      status: r.held >= floor ? 'PASS' : capped ? 'CAPPED' : 'MISS',
      note: capped ? `the server's open-file limit here is ${fdLimit} (hard limit; raising it needs CAP_SYS_RESOURCE), one socket per poll` : `${r.workers} holder process(es); registered in ${fmt(r.registerSecs)} s`,
    });
    const extrapolated = r.rssBeforeBytes + r.rssPerQueueBytes * TARGET.heldFullGoal;
    figures.push({
      name: `server RSS with ${r.held.toLocaleString('en-US')} polls held`,
      value: r.rssHeldBytes / 1024 ** 2,
      unit: 'MiB',
      target: '< 2 GiB',
      ratio: r.rssHeldBytes / TARGET.rssBytes,
      status: r.rssHeldBytes < TARGET.rssBytes ? 'PASS' : 'MISS',
      note: `${fmt(r.rssPerQueueBytes / 1024)} KiB per held queue over ${fmt(r.rssBeforeBytes / 1024 ** 2)} MiB idle; at 100k polls ≈ ${fmt(extrapolated / 1024 ** 2)} MiB (extrapolated)`,
    });
    figures.push({
      name: 'fan-out: one message answers every held poll',
      value: r.delivery.answeredWithin2s,
      unit: 'polls within 2 s',
      target: `all ${r.held.toLocaleString('en-US')} within 2 s`,
      ratio: r.delivery.answeredWithin2s / r.held,
      status: r.delivery.answeredWithin2s === r.held ? 'PASS' : 'MISS',
      note: `latency p50 ${fmt(r.delivery.p50)} ms, p99 ${fmt(r.delivery.p99)} ms, max ${fmt(r.delivery.max)} ms; the send itself took ${fmt(r.delivery.sendMs)} ms`,
    });
    figures.push({
      name: `heartbeats every ${plan.heartbeatSecs} s keep flowing`,
      value: r.heartbeat.queuesWithHeartbeat,
      unit: 'polls answered',
      target: `all ${r.held.toLocaleString('en-US')} in ${fmt(r.heartbeat.windowSecs)} s`,
      ratio: r.heartbeat.queuesWithHeartbeat / r.held,
      status: r.heartbeat.queuesWithHeartbeat === r.held && r.heartbeat.pollErrors === 0 ? 'PASS' : 'MISS',
      note: `${r.heartbeat.heartbeats} heartbeat answers, longest silence ${fmt(r.heartbeat.maxGapMs)} ms, ${r.heartbeat.pollErrors} poll errors`,
    });
    return { ...r, capacity, fdLimit };
  } finally {
    await server.dispose();
    live.delete(server);
  }
}

/** Target 4: cluster sends per second as a ratio to a bare cassandra-driver write loop (bench/cluster.ts). */
async function clusterStep(plan: Plan): Promise<ClusterResult> {
  const r = await runClusterBench({ secs: plan.loadSecs, floorSecs: Math.max(2, Math.min(plan.loadSecs, 10)), connections: Math.min(100, Math.max(...plan.connections)), log: (s) => log(s) });
  figures.push({
    name: 'cluster: bare cassandra-driver write loop',
    value: r.floor.writesPerSec,
    unit: 'writes/s',
    status: 'INFO',
    note: `${r.floor.inFlight} in flight, p99 ${fmt(r.floor.p99)} ms`,
  });
  figures.push({
    name: 'cluster: POST /messages (2 gateways, 2 actor nodes)',
    value: r.sends.perSec,
    unit: 'msg/s',
    target: '>= 50% of the write loop',
    ratio: r.ratio,
    status: r.ratio >= TARGET.clusterRatio ? 'PASS' : 'MISS',
    note: `p50 ${fmt(r.sends.p50)} ms, p99 ${fmt(r.sends.p99)} ms, ${r.sends.errors} errors, wrk -c${r.sends.connections} over both gateways`,
  });
  if (r.sends.errors > 0) failures.push(`cluster: ${r.sends.errors} send errors`);
  return r;
}

/** A small run of bench/notify-send.ts (the smoke run's): it works end to end, mail included. */
async function notifyStep() {
  const { notifySendBench, describe } = await import('./notify-send.ts');
  const r = await notifySendBench({ members: 100, away: 10, rounds: 1, secs: 1, senders: 2, log });
  log(describe(r).split('\n').map((l) => `   ${l}`).join('\n'));
  figures.push({ name: `notifications: send p50 with ${r.away} away members mentioned / with ${r.away} active ones`, value: r.ratio.p50, unit: 'x', status: 'INFO', note: `${r.members} members; CPU/send ${r.ratio.cpu.toFixed(2)}x; ${r.mails.recipients} mailed` });
  return r;
}

function variantText(): string {
  return [...Object.entries(serverEnv).map(([k, v]) => `${k}=${v}`), ...(FANOUT.inviteOnly ? ['invite-only channel'] : [])].join(', ');
}

// ---- report -----------------------------------------------------------------------------

function table(): string {
  const rows = figures.map((f) => [
    f.name,
    Number.isFinite(f.value) ? `${fmt(f.value)} ${f.unit}` : '-',
    f.target ?? '',
    f.ratio !== undefined && Number.isFinite(f.ratio) ? (f.target?.includes('%') ? `${(f.ratio * 100).toFixed(1)}%` : `${f.ratio.toFixed(2)}x`) : '',
    f.status === 'INFO' ? '' : f.status,
  ]);
  const head = ['figure', 'value', 'target', 'ratio', ''];
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(w[i]!)).join('  ').trimEnd();
  return [line(head), line(w.map((n) => '-'.repeat(n))), ...rows.map(line)].join('\n');
}

function chart(send: SendResult, hello: LoadResult | null, mode: Mode, info: ReturnType<typeof machine>): string {
  const maxRate = send.load.rps;
  return lineChart({
    title: 'Parley: send-to-delivery latency against load',
    subtitle: `${info.commit}${info.dirty ? '+' : ''}, ${mode} run, ${info.nproc} cores, Node ${info.node}; max ${fmt(maxRate)} msg/s (${fmt(hello ? (maxRate / hello.rps) * 100 : NaN)}% of hello world), ${FANOUT.queues} queues per message${variantText() ? `; ${variantText()}` : ''}`,
    xLabel: 'offered load (messages/s, open loop)',
    yLabel: 'latency (ms, log scale)',
    series: [
      { label: 'delivery p99', color: '#d62728', points: send.sweep.map((r) => [r.targetRate, r.delivery.p99]) },
      { label: 'delivery p50', color: '#1f77b4', points: send.sweep.map((r) => [r.targetRate, r.delivery.p50]) },
      { label: 'send (HTTP) p99', color: '#ff7f0e', points: send.sweep.map((r) => [r.targetRate, r.send.p99]), dashed: true },
    ],
    hLines: [{ y: TARGET.deliveryP99Ms, label: `target: delivery p99 < ${TARGET.deliveryP99Ms} ms at half the max rate`, color: '#2ca02c' }],
    vLines: [{ x: maxRate / 2, label: 'half max', color: '#888' }],
  });
}

// ---- main -----------------------------------------------------------------------------------

async function main(): Promise<number> {
  // `--workday [its options]`: the working day of a large organization (bench/workday.ts) instead of the quick run.
  if (process.argv.includes('--workday')) {
    const { workday, workdayOptions, WORKDAY_ARGS } = await import('./workday.ts');
    const { values: w } = parseArgs({ options: { ...WORKDAY_ARGS, workday: { type: 'boolean' } } });
    const days = await workday(workdayOptions(w));
    return days.every((d) => d.code === 0) ? 0 : 1;
  }
  // `--notifications [its options]`: notifications' cost on the send path (bench/notify-send.ts).
  if (process.argv.includes('--notifications')) {
    const { notifySendBench, notifyOptions, describe, NOTIFY_ARGS } = await import('./notify-send.ts');
    const { values: n } = parseArgs({ options: { ...NOTIFY_ARGS, notifications: { type: 'boolean' } } });
    log(`parley bench: notifications on the send path — ${new Date().toISOString()}, commit ${gitHead(REPO)}, ${os.cpus().length} cores, load average ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
    const r = await notifySendBench(notifyOptions(n, (l) => log(l)));
    log(describe(r));
    log(`load average at the end ${os.loadavg().map((v) => v.toFixed(2)).join(' ')}`);
    return 0;
  }
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      full: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      svg: { type: 'string' },
      'no-k6': { type: 'boolean', default: false },
      holder: { type: 'string' },
      'server-env': { type: 'string', multiple: true, default: [] },
      'server-repo': { type: 'string' },
      'latency-rate': { type: 'string' },
      'server-node-args': { type: 'string' },
      'server-output': { type: 'string' },
      'invite-only': { type: 'boolean', default: false },
      skip: { type: 'string', default: '' },
      replot: { type: 'string' },
    },
  });
  if (values.replot) {
    const saved = JSON.parse(readFileSync(values.replot, 'utf8')) as { mode: Mode; machine: ReturnType<typeof machine>; hello: LoadResult | null; send: SendResult; variant?: { serverEnv: Record<string, string>; inviteOnly: boolean } };
    Object.assign(serverEnv, saved.variant?.serverEnv ?? {});
    FANOUT.inviteOnly = saved.variant?.inviteOnly ?? false;
    const svg = chart(saved.send, saved.hello, saved.mode, saved.machine);
    writeFileSync(values.svg ?? join(REPO, '.parley/bench/latency.svg'), svg);
    log(`redrew ${values.replot} into ${values.svg ?? '.parley/bench/latency.svg'}`);
    return 0;
  }
  const skip = new Set(values.skip.split(',').map((x) => x.trim()).filter(Boolean));
  for (const kv of values['server-env']) {
    const eq = kv.indexOf('=');
    if (eq <= 0) throw new Error(`--server-env wants NAME=VALUE, got '${kv}'`);
    serverEnv[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  FANOUT.inviteOnly = values['invite-only'];
  serverRepo = values['server-repo'];
  serverNodeArgs = (values['server-node-args'] ?? '').split(' ').filter(Boolean);
  serverOutput = values['server-output'];
  if (values['latency-rate']) {
    latencyRate = Number(values['latency-rate']);
    if (!(latencyRate > 0)) throw new Error(`--latency-rate wants msg/s, got '${values['latency-rate']}'`);
  }
  if (serverRepo) log(`servers of the send and profile steps from ${serverRepo} (${gitHead(serverRepo)})`);
  const mode: Mode = values.smoke ? 'smoke' : values.full ? 'full' : 'quick';
  const plan = PLANS[mode];
  const started = performance.now();
  const outDir = join(REPO, '.parley/bench');
  mkdirSync(outDir, { recursive: true });

  if (!ensureWrk(log)) log('wrk is not installed and could not be: closed-loop load comes from a Node generator, which saturates before the server');
  const k6 = values['no-k6'] ? null : findK6();
  const info = { ...machine(), k6: k6 ? k6Version(k6) : null };
  log(`parley bench (${mode}) — ${info.date}, commit ${info.commit}${info.dirty ? ' (uncommitted changes)' : ''}, ${info.nproc} cores, ${info.memTotalGiB} GiB, Node ${info.node}, ${info.wrk ?? 'no wrk'}, ${info.k6 ?? 'no k6 (scripts/install-k6.sh)'}, fd limit ${info.fdLimit.soft}/${info.fdLimit.hard}, load average ${info.loadavgAtStart.join(' ')}`);
  if (variantText()) log(`variant: ${variantText()}`);
  if (info.loadavgAtStart[0]! > 0.5) log(`note: the machine was busy at start (load average ${info.loadavgAtStart[0]}): figures may be low`);

  const hello = skip.has('hello') ? null : await step('baseline: uWebSockets.js hello world', () => helloBaseline(plan));
  const store = skip.has('store') ? null : await step('baseline: raw store writes', () => storeBaseline(plan));
  const send = skip.has('send') ? null : await step('send and deliver (embedded)', () => sendBench(plan, mode, { k6 }, hello, store));
  const profile = values.profile ? await step('profile: server CPU while sending at the maximum rate', () => profileSend(plan, send?.connections ?? plan.connections[0]!)) : null;
  if (!k6 && !values['no-k6']) {
    // Without k6 the scripts are at least parsed, so a syntax error still fails the smoke run.
    await step('k6 scripts: syntax only (k6 not installed; scripts/install-k6.sh)', async () => {
      for (const f of ['lib.js', 'send.js', 'longpoll.js', 'mixed.js', 'workday.js']) {
        const p = spawnSync('node', ['--check', join(REPO, 'bench/k6', f)], { encoding: 'utf8' });
        if (p.status !== 0) throw new Error(`bench/k6/${f}: ${p.stderr}`);
      }
      log('   bench/k6/*.js parse');
    });
  }
  const requested = values.holder ? Number(values.holder) : plan.holder;
  const holder = skip.has('holder') ? null : await step(`long polls held (${requested.toLocaleString('en-US')})`, () => holderBench(plan, mode, requested));
  const notify = mode !== 'smoke' || skip.has('notify') ? null : await step('notifications on the send path (small: bench/notify-send.ts; npm run bench -- --notifications for 1,000 members)', () => notifyStep());
  const cluster = skip.has('cluster') ? null : await step('cluster mode (NATS, Redis, Cassandra)', () => clusterStep(plan));

  const elapsed = (performance.now() - started) / 1000;
  log(`\n== results (${mode}, ${elapsed.toFixed(0)} s)\n${table()}`);
  const svg = send && send.sweep.length ? chart(send, hello, mode, info) : null;
  if (svg) {
    writeFileSync(join(outDir, 'latency.svg'), svg);
    if (values.svg) writeFileSync(values.svg, svg);
  }
  const result = {
    mode,
    variant: { serverEnv, inviteOnly: FANOUT.inviteOnly, ...(serverRepo ? { serverRepo, serverCommit: gitHead(serverRepo) } : {}) },
    machine: info,
    elapsedSecs: elapsed,
    targets: TARGET,
    figures,
    failures,
    hello,
    store,
    send: send && { ...send, k6: send.k6.map((r) => ({ script: r.script, code: r.code, output: r.output })) },
    holder,
    profile,
    cluster,
    notify,
    loadavgAtEnd: os.loadavg().map((v) => +v.toFixed(2)),
  };
  writeFileSync(join(outDir, 'last.json'), `${JSON.stringify(result, null, 2)}\n`);
  log(`\nwrote .parley/bench/last.json${svg ? ', .parley/bench/latency.svg' : ''}${values.svg && svg ? `, ${values.svg}` : ''}`);
  if (failures.length) {
    log(`\n${failures.length} step(s) failed:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
    return 1;
  }
  return 0;
}

async function cleanup(): Promise<void> {
  await Promise.all([...live].map((p) => p.stop().catch(() => null)));
}

process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));
process.on('SIGTERM', () => void cleanup().then(() => process.exit(143)));

const code = await main().catch(async (err: unknown) => {
  log(`bench crashed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  return 1;
});
await cleanup();
process.exit(code);
