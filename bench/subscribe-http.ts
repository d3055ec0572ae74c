/**
 * `POST /users/me/subscriptions` of every user of an organization of N to a new channel, over HTTP
 * against an embedded server (the demo organization grown to N through the store), and what the
 * organization's other requests see meanwhile:
 *
 * - the slowest answer to another user's `GET /users/me` (a realm query) and to a send to a
 *   two-member channel (a realm action), each sent every 20 ms while the request runs;
 * - the longest the server's thread was held (prom-client's `nodejs_eventloop_lag_max_seconds`,
 *   read before and after the request: realm turns, commits' encoding, deliveries and GC alike);
 * - with `--queues K`, K newcomers hold an event queue with a long poll each, as online users do:
 *   each gets its `subscription` add, whose subscriber list is the channel's;
 * - the server's CPU time over the request (probes and polls included) and peak memory (VmHWM).
 *
 * With `--repo DIR` (another checkout, e.g. `git worktree add /tmp/base main`) the same rounds run
 * against that server too, alternated with this checkout's, each round with a channel of its own.
 *
 *   node --import tsx bench/subscribe-http.ts [--sizes 10000,33645] [--rounds 2] [--queues 0] [--repo DIR] [--profile DIR] [--trace-gc]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchKey, growDemo } from './lib/grow.ts';
import { api, type Credentials, freePort, type ParleyServer, procCpuSeconds, startParley } from './lib/server.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '10000,33645' },
    rounds: { type: 'string', default: '2' },
    queues: { type: 'string', default: '0' },
    repo: { type: 'string' },
    /** Write the servers' CPU profiles there. */
    profile: { type: 'string' },
    'trace-gc': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(values.rounds);
const QUEUES = Number(values.queues);

const peakRssMb = (pid: number): number => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

interface Server {
  label: string;
  srv: ParleyServer;
  metrics: string;
  principals: number[];
  pollers: Array<() => void>;
}

async function eventLoopMaxMs(metrics: string): Promise<number> {
  const text = await fetch(`${metrics}/metrics`).then((r) => r.text());
  return Number(/^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(text)?.[1] ?? NaN) * 1000;
}

async function start(label: string, repo: string | undefined, n: number): Promise<Server> {
  const seeded = await startParley({ repo, readyTimeoutMs: 120_000 });
  await seeded.stop();
  await growDemo(join(seeded.dir, 'data'), n - 5);
  const metricsPort = await freePort();
  const srv = await startParley({
    repo,
    dir: seeded.dir,
    readyTimeoutMs: 300_000,
    env: { PARLEY_METRICS_PORT: String(metricsPort) },
    ...(values.profile ? { cpuProfDir: values.profile } : {}),
    ...(values['trace-gc'] ? { nodeArgs: ['--trace-gc'] } : {}),
  });
  const { members } = await api<{ members: Array<{ user_id: number; is_active: boolean; is_bot: boolean; email: string }> }>(srv.url, srv.users.owner!, 'GET', '/users');
  const humans = members.filter((m) => m.is_active && !m.is_bot);
  // The probes' channel: two members, the sender and another.
  await api(srv.url, srv.users.member2!, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: 'probe' }], principals: [srv.users.member1!.email, srv.users.member2!.email] });
  const pollers: Array<() => void> = [];
  const grown = humans.filter((m) => m.email.endsWith('@bench.example')).slice(0, QUEUES);
  const t0 = performance.now();
  for (const m of grown) pollers.push(await holdQueue(srv.url, { email: m.email, apiKey: benchKey(m.user_id), site: srv.url }));
  if (grown.length) console.log(`  ${label}: ${grown.length} queues registered in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return { label, srv, metrics: `http://127.0.0.1:${metricsPort}`, principals: humans.map((m) => m.user_id), pollers };
}

/** Registers a queue for `who` (subscription events) and polls it until stopped. */
async function holdQueue(site: string, who: Credentials): Promise<() => void> {
  const reg = await api<{ queue_id: string; last_event_id: number }>(site, who, 'POST', '/register', { event_types: ['subscription'], fetch_event_types: ['realm'] });
  let stop = false;
  const auth = `Basic ${Buffer.from(`${who.email}:${who.apiKey}`).toString('base64')}`;
  void (async () => {
    let last = reg.last_event_id;
    while (!stop) {
      const res = await fetch(`${site}/api/v1/events?queue_id=${encodeURIComponent(reg.queue_id)}&last_event_id=${last}`, { headers: { Authorization: auth } }).catch(() => null);
      if (!res) break;
      const body = (await res.json()) as { events?: Array<{ id: number }> };
      for (const e of body.events ?? []) last = Math.max(last, e.id);
    }
  })();
  return () => {
    stop = true;
  };
}

/** Calls `fn` every 20 ms until `done` resolves; the slowest call and the median. */
async function probe(fn: () => Promise<unknown>, done: Promise<unknown>): Promise<{ slowest: number; median: number; count: number }> {
  let over = false;
  void done.finally(() => (over = true));
  const times: number[] = [];
  while (!over) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, 20));
  }
  times.sort((a, b) => a - b);
  return { slowest: times.at(-1) ?? 0, median: times[Math.floor(times.length / 2)] ?? 0, count: times.length };
}

async function round(s: Server, name: string): Promise<string> {
  const { srv } = s;
  const before = peakRssMb(srv.pid);
  await eventLoopMaxMs(s.metrics); // resets the histogram
  const cpu0 = procCpuSeconds(srv.pid);
  const t0 = performance.now();
  const request = api<{ subscribed: Record<string, string[]> }>(srv.url, srv.users.owner!, 'POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: s.principals });
  const [reply, me, send] = await Promise.all([
    request,
    probe(() => api(srv.url, srv.users.member1!, 'GET', '/users/me'), request),
    probe(() => api(srv.url, srv.users.member2!, 'POST', '/messages', { type: 'stream', to: 'probe', topic: 'probe', content: 'probe' }), request),
  ]);
  const total = performance.now() - t0;
  const cpu = procCpuSeconds(srv.pid) - cpu0;
  const held = await eventLoopMaxMs(s.metrics);
  return (
    `${s.label}: ${Object.keys(reply.subscribed).length.toLocaleString('en')} subscribed in ${(total / 1000).toFixed(1)} s (server CPU ${cpu.toFixed(1)} s); ` +
    `GET /users/me slowest ${me.slowest.toFixed(0)} ms (median ${me.median.toFixed(0)}, ${me.count}), send slowest ${send.slowest.toFixed(0)} ms (median ${send.median.toFixed(0)}, ${send.count}); ` +
    `thread held at most ${held.toFixed(0)} ms; peak RSS ${before.toFixed(0)} → ${peakRssMb(srv.pid).toFixed(0)} MB; load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`
  );
}

for (const n of values.sizes.split(',').map(Number)) {
  const servers: Server[] = [];
  try {
    if (values.repo) servers.push(await start(`before (${values.repo})`, values.repo, n));
    servers.push(await start('this checkout', undefined, n));
    console.log(`${n.toLocaleString('en')} users, ${QUEUES} newcomers holding a queue:`);
    for (let r = 0; r < ROUNDS; r++) for (const s of servers) console.log(`  round ${r + 1} ${await round(s, `everyone-${n}-${r}`)}`);
  } finally {
    for (const s of servers) {
      for (const stop of s.pollers) stop();
      if (values['trace-gc']) console.log(s.srv.output().split('\n').filter((l) => /Mark-Compact/.test(l)).slice(-10).join('\n'));
      await s.srv.dispose();
    }
  }
}
process.exit(0);
