/**
 * The send workload: a channel with ten subscribers, each subscriber's queue
 * drained by a long-poll loop (as clients would), and an open-loop sender
 * that posts at a fixed rate and embeds the intended send time in each
 * message, so latency counts any queueing on the sender's side too
 * (no coordinated omission).
 */
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { api, type Credentials, type ParleyServer } from './server.ts';
import { basicAuth, RawConn } from './rawhttp.ts';
import { nowMs, summarize, type Summary, windowedP99 } from './stats.ts';

export const CHANNEL = 'bench';

export interface FanoutSetup {
  channel: string;
  subscribers: number;
  /** Queues registered for subscribers (the drainer polls these). */
  queues: Array<{ user: Credentials; queueId: string; lastEventId: number }>;
}

/**
 * Subscribes the five demo users and `extraUsers` new users to the channel
 * and registers `queues` queues spread over the demo users. New users get no
 * API key yet (no fetch_api_key), so only demo users hold queues.
 */
export async function setupFanout(server: ParleyServer, opts: { extraUsers: number; queues: number; inviteOnly?: boolean }): Promise<FanoutSetup> {
  const owner = server.users.owner!;
  const demo = Object.values(server.users);
  const principals: Array<string | number> = demo.map((u) => u.email);
  for (let i = 0; i < opts.extraUsers; i++) {
    const email = `bench-sub-${i}@parley.example`;
    await api(server.url, owner, 'POST', '/users', { email, password: `bench-password-${i}-${Date.now()}`, full_name: `Bench Subscriber ${i}` });
    principals.push(email);
  }
  await api(server.url, owner, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: CHANNEL }], principals, invite_only: opts.inviteOnly ?? false });
  const queues: FanoutSetup['queues'] = [];
  for (let i = 0; i < opts.queues; i++) {
    const user = demo[i % demo.length]!;
    const r = await api<{ queue_id: string; last_event_id: number }>(server.url, user, 'POST', '/register', { event_types: ['message'] });
    queues.push({ user, queueId: r.queue_id, lastEventId: r.last_event_id });
  }
  return { channel: CHANNEL, subscribers: principals.length, queues };
}

const MESSAGE_START = '{"type":"message"';
const LAST_ID = /"id":(\d+)\}\],"queue_id"/;

/** Long-polls every queue of a set-up until stopped; counts events and, when asked, measures delivery latency. */
export class Drainer {
  events = 0;
  errors = 0;
  errorSample: string | null = null;
  /** Delivery latencies (ms) of messages with `t=<ms>` content, collected while `measuring`. */
  samples: number[] = [];
  /** When each sample's message was sent (ms), beside `samples`. */
  sentAt: number[] = [];
  measuring = false;
  private stopped = false;
  private loops: Promise<void>[] = [];
  private conns: RawConn[] = [];

  constructor(private readonly site: string, private readonly setup: FanoutSetup) {}

  async start(): Promise<void> {
    const u = new URL(this.site);
    for (const q of this.setup.queues) {
      const conn = new RawConn({ host: u.hostname, port: Number(u.port), authorization: basicAuth(q.user.email, q.user.apiKey) });
      await conn.connect();
      this.conns.push(conn);
      this.loops.push(this.loop(conn, q));
    }
  }

  private async loop(conn: RawConn, q: FanoutSetup['queues'][number]): Promise<void> {
    while (!this.stopped) {
      try {
        if (conn.dead) await conn.connect();
        const r = await conn.request('GET', `/api/v1/events?queue_id=${encodeURIComponent(q.queueId)}&last_event_id=${q.lastEventId}&dont_block=false`);
        const at = nowMs();
        if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${r.body.slice(0, 200)}`);
        if (this.measuring) {
          // Parse only while measuring: at full send rate the drainer must stay cheap next to the server.
          const { events } = JSON.parse(r.body) as { events: Array<{ id: number; type: string; message?: { content: string } }> };
          for (const e of events) {
            q.lastEventId = Math.max(q.lastEventId, e.id);
            if (e.type !== 'message') continue;
            this.events++;
            const t = /t=([\d.]+)/.exec(e.message!.content);
            if (t) {
              this.samples.push(at - Number(t[1]));
              this.sentAt.push(Number(t[1]));
            }
          }
        } else {
          for (let i = r.body.indexOf(MESSAGE_START); i !== -1; i = r.body.indexOf(MESSAGE_START, i + 1)) this.events++;
          const m = LAST_ID.exec(r.body.slice(-200));
          if (m) q.lastEventId = Number(m[1]);
          else q.lastEventId = Math.max(q.lastEventId, ...(JSON.parse(r.body) as { events: Array<{ id: number }> }).events.map((e) => e.id));
        }
      } catch (err) {
        if (this.stopped) return;
        this.errors++;
        this.errorSample ??= String(err);
        if (String(err).includes('BAD_EVENT_QUEUE_ID')) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const c of this.conns) c.close();
    await Promise.all(this.loops);
  }
}

export interface RateResult {
  targetRate: number;
  achievedRate: number;
  sent: number;
  failed: number;
  /** Send time to HTTP answer, from the intended send time. */
  send: Summary;
  /** Send time to the drainer reading the event, per (message, queue). */
  delivery: Summary;
  /** The p99s of each second of the run: their median and worst (`windowedP99`). */
  sendWindows: ReturnType<typeof windowedP99>;
  deliveryWindows: ReturnType<typeof windowedP99>;
  deliveries: number;
  /**
   * The bench process's own stalls while it ran (it sends and drains on one
   * thread): its event-loop delay and its garbage collections. A stall here
   * delays sends and readings alike and shows as the server's latency.
   */
  harness: { loopDelayP99: number; loopDelayMax: number; gcCount: number; gcTotalMs: number; gcMaxMs: number };
}

/** Watches this process's event-loop delay and GC pauses until `stop`. */
function watchHarness(): () => RateResult['harness'] {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const gc = { gcCount: 0, gcTotalMs: 0, gcMaxMs: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.gcCount++;
      gc.gcTotalMs += e.duration;
      gc.gcMaxMs = Math.max(gc.gcMaxMs, e.duration);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => {
    delay.disable();
    observer.disconnect();
    return { loopDelayP99: delay.percentile(99) / 1e6, loopDelayMax: delay.max / 1e6, ...gc };
  };
}

/** Posts `rate` messages per second for `durationSecs`, open loop, over up to `maxConns` connections. */
export async function sendAtRate(site: string, who: Credentials, drainer: Drainer, rate: number, durationSecs: number, maxConns = 256): Promise<RateResult> {
  const u = new URL(site);
  const target = { host: u.hostname, port: Number(u.port), authorization: basicAuth(who.email, who.apiKey) };
  const idle: RawConn[] = [];
  let open = 0;
  const sendLat: number[] = [];
  const sendAt: number[] = [];
  let sent = 0;
  let failed = 0;
  const total = Math.max(1, Math.round(rate * durationSecs));
  const interval = 1000 / rate;
  const backlog: number[] = [];
  const inFlight = new Set<Promise<void>>();
  drainer.samples = [];
  drainer.sentAt = [];
  const eventsBefore = drainer.events;
  drainer.measuring = true;
  const harness = watchHarness();
  const start = nowMs() + 20;

  const fire = async (intended: number) => {
    let c = idle.pop();
    if (!c) {
      open++;
      c = new RawConn(target);
      await c.connect();
    }
    const body = `type=stream&to=${CHANNEL}&topic=rate&content=${encodeURIComponent(`rate ${rate.toFixed(0)}/s t=${intended.toFixed(3)}`)}`;
    try {
      const r = await c.request('POST', '/api/v1/messages', body);
      if (r.status === 200) {
        sendLat.push(nowMs() - intended);
        sendAt.push(intended);
      }
      else failed++;
    } catch {
      failed++;
    }
    if (!c.dead) idle.push(c);
    else open--;
    const next = backlog.shift();
    if (next !== undefined) track(fire(next));
  };
  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };

  while (sent < total) {
    const now = nowMs();
    const due = Math.min(total, Math.floor((now - start) / interval) + 1);
    while (sent < due) {
      const intended = start + sent * interval;
      sent++;
      if (idle.length || open < maxConns) track(fire(intended));
      else backlog.push(intended);
    }
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(5, start + sent * interval - nowMs()))));
  }
  while (inFlight.size || backlog.length) await Promise.race(inFlight);
  const elapsed = (nowMs() - start) / 1000;
  await new Promise((r) => setTimeout(r, 300)); // let the last deliveries land
  drainer.measuring = false;
  for (const c of idle) c.close();
  return {
    harness: harness(),
    targetRate: rate,
    achievedRate: sendLat.length / elapsed,
    sent,
    failed,
    send: summarize(sendLat),
    delivery: summarize(drainer.samples),
    sendWindows: windowedP99(sendLat, sendAt),
    deliveryWindows: windowedP99(drainer.samples, drainer.sentAt),
    deliveries: drainer.events - eventsBefore,
  };
}
