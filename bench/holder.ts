/**
 * Long-poll holder: holds N concurrent GET /events, more than k6 reaches on
 * one machine, and answers three questions:
 *
 *   1. memory: the server's RSS per held queue (VmRSS of /proc/<pid>/status,
 *      before the queues and while they are held);
 *   2. fan-out: one message sent to a channel every queue's user is in must
 *      answer every held poll; delivery latency from the send (p50/p99/max)
 *      and how many polls were answered within 2 s;
 *   3. liveness: with a short PARLEY_HEARTBEAT_SECS, every poll keeps getting
 *      heartbeats (at least one per queue in a window of 2.5 intervals).
 *
 * Connections are spread over source addresses 127.0.0.2, .3, ... because
 * loopback has ~28k ephemeral ports per source address, and over worker
 * processes of at most --per-worker connections each because every process
 * has its own open-file limit (see bench/README.md: `ulimit -n`).
 *
 *   node --import tsx bench/holder.ts --zuliprc owner.zuliprc,member1.zuliprc \
 *        --count 10000 [--server-pid PID] [--heartbeat-secs 50] [--spread 8]
 *
 * The server's own PARLEY_HEARTBEAT_SECS must match --heartbeat-secs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { basicAuth, RawConn, sourceAddress } from './lib/rawhttp.ts';
import { api, type Credentials, procRss, readZuliprc, REPO } from './lib/server.ts';
import { fmt, nowMs, summarize, type Summary } from './lib/stats.ts';

export interface HolderOptions {
  site: string;
  users: Credentials[];
  count: number;
  /** Server pid for RSS readings (local servers only). */
  serverPid?: number;
  heartbeatSecs: number;
  /** Number of source addresses (127.0.0.2 ...). */
  spread?: number;
  perWorker?: number;
  channel?: string;
  /** How long to wait for the fanned-out message to reach every poll. */
  deliveryWaitMs?: number;
  log?: (line: string) => void;
}

export interface HolderResult {
  requested: number;
  registered: number;
  held: number;
  workers: number;
  registerSecs: number;
  rssBeforeBytes: number;
  rssHeldBytes: number;
  rssPerQueueBytes: number;
  delivery: Summary & { answeredWithin2s: number; missing: number; sendMs: number };
  heartbeat: { windowSecs: number; queuesWithHeartbeat: number; heartbeats: number; maxGapMs: number; pollErrors: number; pollErrorSample: string | null };
}

// ---- coordinator -> worker and back -------------------------------------------

type ToWorker =
  | { type: 'start'; site: string; users: Credentials[]; offset: number; count: number; spread: number }
  | { type: 'expect'; marker: string }
  | { type: 'report'; what: 'delivery' | 'heartbeat' }
  | { type: 'heartbeatWindow' }
  | { type: 'stop' };

type FromWorker =
  | { type: 'ready'; registered: number; held: number; error?: string }
  | { type: 'progress'; delivered: number }
  | { type: 'delivery'; latencies: number[] }
  | { type: 'heartbeat'; withHeartbeat: number; heartbeats: number; maxGapMs: number; errors: number; errorSample: string | null };

// ---- worker -------------------------------------------------------------------

interface Held {
  queueId: string;
  lastEventId: number;
  conn: RawConn;
  lastAnswer: number;
  maxGap: number;
  heartbeats: number;
  delivered: number | null;
}

async function pool<T>(items: T[], width: number, fn: (item: T, slot: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, async (_, slot) => {
    while (next < items.length) await fn(items[next++]!, slot);
  }));
}

async function worker(): Promise<void> {
  const send = (m: FromWorker) => process.send!(m);
  const held: Held[] = [];
  let marker = '';
  let errors = 0;
  let errorSample: string | null = null;
  let stopping = false;
  let delivered = 0;
  let progressTimer: NodeJS.Timeout | null = null;

  const noteError = (what: string) => {
    errors++;
    errorSample ??= what.slice(0, 300);
  };

  async function pollLoop(h: Held, path: string): Promise<void> {
    while (!stopping) {
      try {
        if (h.conn.dead) await h.conn.connect();
        const r = await h.conn.request('GET', `${path}?queue_id=${encodeURIComponent(h.queueId)}&last_event_id=${h.lastEventId}&dont_block=false`);
        const at = nowMs();
        h.maxGap = Math.max(h.maxGap, at - h.lastAnswer);
        h.lastAnswer = at;
        if (r.status !== 200) {
          noteError(`HTTP ${r.status}: ${r.body}`);
          if (r.body.includes('BAD_EVENT_QUEUE_ID')) return;
          await new Promise((res) => setTimeout(res, 500));
          continue;
        }
        const { events } = JSON.parse(r.body) as { events: Array<{ id: number; type: string; message?: { content: string } }> };
        if (events.length === 0) h.heartbeats++; // a poll ended with nothing new counts as a keep-alive answer too
        for (const e of events) {
          h.lastEventId = Math.max(h.lastEventId, e.id);
          if (e.type === 'heartbeat') h.heartbeats++;
          else if (e.type === 'message' && marker && h.delivered === null && e.message?.content.includes(marker)) {
            const t = /t=([\d.]+)/.exec(e.message.content);
            h.delivered = t ? at - Number(t[1]) : NaN;
            delivered++;
          }
        }
      } catch (err) {
        if (stopping) return;
        noteError(String(err));
        await new Promise((res) => setTimeout(res, 500));
      }
    }
  }

  process.on('message', async (m: ToWorker) => {
    switch (m.type) {
      case 'start': {
        const u = new URL(m.site);
        const host = u.hostname;
        const port = Number(u.port || 80);
        const prefix = `${u.pathname.replace(/\/+$/, '')}/api/v1`;
        const targets = m.users.map((c) => ({ host, port, authorization: basicAuth(c.email, c.apiKey) }));
        // Register over a small pool of connections per user, then hold one connection per queue.
        const regConns = new Map<number, RawConn[]>();
        try {
          const slots = Array.from({ length: m.count }, (_, i) => m.offset + i);
          const queues: Array<{ global: number; queueId: string; lastEventId: number }> = [];
          await pool(slots, 32, async (global, slot) => {
            const ui = global % targets.length;
            let list = regConns.get(ui);
            if (!list) regConns.set(ui, (list = []));
            let c = list[slot];
            if (!c || c.dead) {
              c = new RawConn(targets[ui]!);
              await c.connect();
              list[slot] = c;
            }
            const r = await c.request('POST', `${prefix}/register`, 'event_types=%5B%22message%22%5D');
            if (r.status !== 200) throw new Error(`register: HTTP ${r.status} ${r.body.slice(0, 200)}`);
            const j = JSON.parse(r.body) as { queue_id: string; last_event_id: number };
            queues.push({ global, queueId: j.queue_id, lastEventId: j.last_event_id });
          });
          for (const list of regConns.values()) for (const c of list) c?.close();
          await pool(queues, 256, async (q) => {
            const conn = new RawConn(targets[q.global % targets.length]!, sourceAddress(q.global, m.spread));
            await conn.connect();
            held.push({ queueId: q.queueId, lastEventId: q.lastEventId, conn, lastAnswer: nowMs(), maxGap: 0, heartbeats: 0, delivered: null });
          });
          for (const h of held) void pollLoop(h, `${prefix}/events`);
          send({ type: 'ready', registered: queues.length, held: held.length });
        } catch (err) {
          send({ type: 'ready', registered: held.length, held: held.length, error: String(err) });
        }
        return;
      }
      case 'expect':
        marker = m.marker;
        progressTimer = setInterval(() => send({ type: 'progress', delivered }), 100);
        return;
      case 'report':
        if (m.what === 'delivery') {
          if (progressTimer) clearInterval(progressTimer);
          send({ type: 'delivery', latencies: held.map((h) => (h.delivered === null ? -1 : h.delivered)) });
        } else {
          const now = nowMs();
          send({
            type: 'heartbeat',
            withHeartbeat: held.filter((h) => h.heartbeats > 0).length,
            heartbeats: held.reduce((s, h) => s + h.heartbeats, 0),
            maxGapMs: held.reduce((mx, h) => Math.max(mx, h.maxGap, now - h.lastAnswer), 0),
            errors,
            errorSample,
          });
        }
        return;
      case 'heartbeatWindow': {
        const now = nowMs();
        for (const h of held) {
          h.heartbeats = 0;
          h.maxGap = 0;
          h.lastAnswer = Math.max(h.lastAnswer, now);
        }
        errors = 0;
        errorSample = null;
        return;
      }
      case 'stop':
        stopping = true;
        for (const h of held) h.conn.close();
        process.exit(0);
    }
  });
}

// ---- coordinator ----------------------------------------------------------------

const RAISE_FD_LIMIT = 'ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true';

function startWorker(): ChildProcess {
  const file = fileURLToPath(import.meta.url);
  return spawn('bash', ['-c', `${RAISE_FD_LIMIT}; exec node --import tsx '${file}' --worker`], { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

function nextMessage<T extends FromWorker['type']>(w: ChildProcess, type: T, timeoutMs: number): Promise<Extract<FromWorker, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      w.off('message', on);
      reject(new Error(`holder worker sent no '${type}' within ${timeoutMs} ms`));
    }, timeoutMs);
    const on = (m: FromWorker) => {
      if (m.type !== type) return;
      clearTimeout(timer);
      w.off('message', on);
      resolve(m as Extract<FromWorker, { type: T }>);
    };
    w.on('message', on);
  });
}

export async function runHolder(o: HolderOptions): Promise<HolderResult> {
  const log = o.log ?? ((s: string) => process.stdout.write(`${s}\n`));
  const perWorker = o.perWorker ?? 15_000;
  const spread = o.spread ?? Math.max(4, Math.ceil(o.count / 20_000));
  const channel = o.channel ?? 'holder';
  const nWorkers = Math.max(1, Math.ceil(o.count / perWorker));
  const rssBefore = o.serverPid ? procRss(o.serverPid) : NaN;

  // Every user whose queues are held reads the channel the message goes to.
  for (const u of o.users) await api(o.site, u, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });

  const workers = Array.from({ length: nWorkers }, () => startWorker());
  const exitEarly = Promise.race(workers.map((w) => new Promise<never>((_, reject) => w.once('exit', (code) => reject(new Error(`holder worker exited with ${code}`))))));
  exitEarly.catch(() => {});
  try {
    const t0 = performance.now();
    let offset = 0;
    const readies = workers.map((w, i) => {
      const count = Math.min(perWorker, o.count - offset);
      w.send({ type: 'start', site: o.site, users: o.users, offset, count, spread } satisfies ToWorker);
      offset += count;
      return nextMessage(w, 'ready', 600_000);
    });
    const ready = await Promise.race([Promise.all(readies), exitEarly]);
    const registerSecs = (performance.now() - t0) / 1000;
    const registered = ready.reduce((s, r) => s + r.registered, 0);
    const held = ready.reduce((s, r) => s + r.held, 0);
    const failed = ready.find((r) => r.error);
    log(`holder: ${registered} queues registered, ${held} polls held (${nWorkers} worker(s), ${spread} source addresses) in ${fmt(registerSecs)} s${failed ? `; error: ${failed.error}` : ''}`);

    await new Promise((r) => setTimeout(r, 1500)); // let every poll park
    const rssHeld = o.serverPid ? procRss(o.serverPid) : NaN;

    // Fan-out: one message, every held poll should get it.
    const marker = `holder-${process.pid}-${Date.now()}`;
    let delivered = 0;
    const progress = workers.map(() => 0);
    workers.forEach((w, i) => w.on('message', (m: FromWorker) => {
      if (m.type === 'progress') {
        progress[i] = m.delivered;
        delivered = progress.reduce((a, b) => a + b, 0);
      }
    }));
    for (const w of workers) w.send({ type: 'expect', marker } satisfies ToWorker);
    await new Promise((r) => setTimeout(r, 50));
    const sentAt = nowMs();
    await api(o.site, o.users[0]!, 'POST', '/messages', { type: 'stream', to: channel, topic: 'holder', content: `${marker} t=${sentAt.toFixed(3)}` });
    const sendMs = nowMs() - sentAt;
    const waitUntil = performance.now() + (o.deliveryWaitMs ?? 10_000);
    while (delivered < held && performance.now() < waitUntil) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 150));
    const lat: number[] = [];
    let missing = 0;
    // Listen before asking: a worker may answer while another one's answer is awaited.
    const deliveries = workers.map((w) => nextMessage(w, 'delivery', 30_000));
    for (const w of workers) w.send({ type: 'report', what: 'delivery' } satisfies ToWorker);
    for (const d of await Promise.all(deliveries)) {
      for (const l of d.latencies) {
        if (l < 0 || Number.isNaN(l)) missing++;
        else lat.push(l);
      }
    }
    const s = summarize(lat);
    const within2s = lat.filter((l) => l <= 2000).length;
    log(`holder: fan-out reached ${lat.length}/${held} polls (${within2s} within 2 s); latency p50 ${fmt(s.p50)} ms, p99 ${fmt(s.p99)} ms, max ${fmt(s.max)} ms`);

    // Heartbeats: a window of 2.5 intervals in which every poll should be answered at least once.
    const windowSecs = o.heartbeatSecs * 2.5;
    for (const w of workers) w.send({ type: 'heartbeatWindow' } satisfies ToWorker);
    await new Promise((r) => setTimeout(r, windowSecs * 1000));
    const reports = workers.map((w) => nextMessage(w, 'heartbeat', 30_000));
    for (const w of workers) w.send({ type: 'report', what: 'heartbeat' } satisfies ToWorker);
    const hb = { windowSecs, queuesWithHeartbeat: 0, heartbeats: 0, maxGapMs: 0, pollErrors: 0, pollErrorSample: null as string | null };
    for (const r of await Promise.all(reports)) {
      hb.queuesWithHeartbeat += r.withHeartbeat;
      hb.heartbeats += r.heartbeats;
      hb.maxGapMs = Math.max(hb.maxGapMs, r.maxGapMs);
      hb.pollErrors += r.errors;
      hb.pollErrorSample ??= r.errorSample;
    }
    log(`holder: heartbeats in ${fmt(windowSecs)} s: ${hb.queuesWithHeartbeat}/${held} queues answered, ${hb.heartbeats} answers, longest silence ${fmt(hb.maxGapMs)} ms, ${hb.pollErrors} poll errors${hb.pollErrorSample ? ` (e.g. ${hb.pollErrorSample})` : ''}`);

    return {
      requested: o.count,
      registered,
      held,
      workers: nWorkers,
      registerSecs,
      rssBeforeBytes: rssBefore,
      rssHeldBytes: rssHeld,
      rssPerQueueBytes: held ? (rssHeld - rssBefore) / held : NaN,
      delivery: { ...s, answeredWithin2s: within2s, missing, sendMs },
      heartbeat: hb,
    };
  } finally {
    for (const w of workers) if (w.connected) w.send({ type: 'stop' } satisfies ToWorker);
    await Promise.all(workers.map((w) => (w.exitCode !== null ? Promise.resolve() : new Promise<void>((r) => {
      const t = setTimeout(() => { w.kill('SIGKILL'); r(); }, 10_000);
      w.once('exit', () => { clearTimeout(t); r(); });
    }))));
  }
}

// ---- command line -----------------------------------------------------------------

if (process.argv.includes('--worker')) {
  await worker();
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      zuliprc: { type: 'string' },
      count: { type: 'string', default: '1000' },
      'server-pid': { type: 'string' },
      'heartbeat-secs': { type: 'string', default: '50' },
      spread: { type: 'string' },
      'per-worker': { type: 'string', default: '15000' },
      channel: { type: 'string', default: 'holder' },
    },
  });
  if (!values.zuliprc) {
    process.stderr.write('usage: node --import tsx bench/holder.ts --zuliprc a.zuliprc[,b.zuliprc...] --count N [--server-pid PID] [--heartbeat-secs S]\n');
    process.exit(2);
  }
  const users = values.zuliprc.split(',').map((p) => readZuliprc(p.trim()));
  const r = await runHolder({
    site: users[0]!.site,
    users,
    count: Number(values.count),
    serverPid: values['server-pid'] ? Number(values['server-pid']) : undefined,
    heartbeatSecs: Number(values['heartbeat-secs']),
    spread: values.spread ? Number(values.spread) : undefined,
    perWorker: Number(values['per-worker']),
    channel: values.channel,
  });
  process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
}
