/**
 * What notifications cost the send path, end to end (issue 22): an embedded
 * server in its own process, a channel of 1,000 members (`general`: the demo
 * users and users written straight into the store, `lib/grow.ts`), 900 of
 * them active (each with a queue a long-poll loop drains, as clients do) and
 * 100 idle (no queue: away). Two user groups of 100: `bench-away` (the idle
 * ones, batching period long enough that their mail leaves after the
 * measured rounds) and `bench-here` (100 of the active ones). Sends, in the
 * same run, alternating, several rounds:
 *
 *   notify    "@*bench-away* ..."   100 mentioned users to mail: 100 rows and their batch timers in the send's commit
 *   baseline  "@*bench-here* ..."   the same message (same length, a group of the same size, the same
 *                                   mention flags and fan-out), mentioning 100 active users: nobody to notify
 *
 * The baseline differs from the notify send only in whether the mentioned
 * users are to be notified, so the difference is what notifications cost the
 * send (the decision for both is O(mentions), bench/notifications.ts
 * measures it in process). A message without mentions would also leave out
 * the group's rendering and mention flags, which are not notification work.
 *
 * Per send: the HTTP latency (p50/p99 of each kind over all rounds) and the
 * server's CPU (/proc/<pid>/stat: gateway and actors, one process). After
 * the rounds the away users' batches leave: each of them gets one mail by
 * SMTP (a real server, `smtp-server`, in this process), which is checked,
 * and nobody else gets one.
 *
 *   node --import tsx bench/notify-send.ts [--members 1000] [--away 100] [--rounds 4] [--secs 5] [--senders 4] [--profile DIR]
 *   npm run bench -- --notifications [same options]       (also a small run in `npm run bench -- --smoke`)
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSmtp } from '../test/helpers/smtp.ts';
import { benchKey, growDemo } from './lib/grow.ts';
import { basicAuth, RawConn } from './lib/rawhttp.ts';
import { Drainer, type FanoutSetup } from './lib/fanout.ts';
import { api, type Credentials, procCpuSeconds, startParley } from './lib/server.ts';
import { fmt, summarize, type Summary } from './lib/stats.ts';

export interface NotifySendOptions {
  members: number;
  away: number;
  rounds: number;
  secs: number;
  senders: number;
  profileDir?: string;
  log: (line: string) => void;
}

export interface KindFigures {
  sends: number;
  failed: number;
  latency: Summary;
  cpuMsPerSend: number;
  sendsPerSec: number;
}

export interface NotifySendResult {
  members: number;
  active: number;
  away: number;
  rounds: number;
  secsPerRound: number;
  senders: number;
  notify: KindFigures;
  baseline: KindFigures;
  /** notify / baseline, per figure. */
  ratio: { p50: number; p99: number; cpu: number };
  mails: { recipients: number; wrongRecipients: number; waitedSecs: number };
  events: number;
  pollErrors: number;
}

type Kind = 'notify' | 'baseline';

const user = (id: number, site: string): Credentials => ({ email: `user${id}@bench.example`, apiKey: benchKey(id), site });

export async function notifySendBench(o: NotifySendOptions): Promise<NotifySendResult> {
  const smtp = await startSmtp();
  const seeded = await startParley({ readyTimeoutMs: 120_000 });
  let server = seeded;
  try {
    const owner = seeded.users.owner!;
    const general = (await api<{ stream_id: number }>(seeded.url, owner, 'GET', '/get_stream_id', { stream: 'general' })).stream_id;
    const demoMembers = (await api<{ subscribers: number[] }>(seeded.url, owner, 'GET', `/streams/${general}/members`)).subscribers.length;
    await seeded.stop();
    const grown = o.members - demoMembers;
    if (grown < 2 * o.away) throw new Error(`--members ${o.members} leaves too few users for two groups of ${o.away}`);
    const t0 = performance.now();
    const first = await growDemo(join(seeded.dir, 'data'), grown);
    o.log(`   ${demoMembers} demo members + ${grown} users written into the store in ${fmt((performance.now() - t0) / 1000)} s`);
    server = await startParley({
      dir: seeded.dir,
      readyTimeoutMs: 300_000,
      ...(o.profileDir ? { cpuProfDir: o.profileDir } : {}),
      // Every member polls after every message: the per-user request budget is not what is measured.
      env: { PARLEY_SMTP_URL: smtp.url, PARLEY_RATE_LIMIT_USER: '100000000/60' },
    });
    const site = server.url;
    const awayIds = Array.from({ length: o.away }, (_, i) => first + i);
    const hereIds = Array.from({ length: o.away }, (_, i) => first + o.away + i);
    const activeGrown = Array.from({ length: grown - o.away }, (_, i) => first + o.away + i);

    // The away users' batches leave after the measured rounds (their mail is checked then).
    const measuredSecs = Math.ceil((2 + o.rounds * 2 * o.secs) * 1.5 + 2);
    await inParallel(awayIds, 16, (id) => api(site, user(id, site), 'PATCH', '/settings', { email_notifications_batching_period_seconds: measuredSecs }));
    await api(site, owner, 'POST', '/user_groups/create', { name: 'bench-away', description: 'idle members', members: JSON.stringify(awayIds) });
    await api(site, owner, 'POST', '/user_groups/create', { name: 'bench-here', description: 'active members', members: JSON.stringify(hereIds) });

    // Every member but the away ones holds a queue, drained as a client would.
    const pollers: Credentials[] = [...Object.values(server.users), ...activeGrown.map((id) => user(id, site))];
    const queues: FanoutSetup['queues'] = [];
    const t1 = performance.now();
    await inParallel(pollers, 16, async (u) => {
      const r = await api<{ queue_id: string; last_event_id: number }>(site, u, 'POST', '/register', { event_types: ['message'] });
      queues.push({ user: u, queueId: r.queue_id, lastEventId: r.last_event_id });
    });
    const drainer = new Drainer(site, { channel: 'general', subscribers: o.members, queues });
    await drainer.start();
    o.log(`   ${queues.length} queues registered and polling in ${fmt((performance.now() - t1) / 1000)} s; ${o.away} members away`);
    // The queue actors report who polls on their next tick; then everyone polling is active.
    await new Promise((r) => setTimeout(r, 2500));

    const conns = await Promise.all(
      Array.from({ length: o.senders }, async () => {
        const u = new URL(site);
        const c = new RawConn({ host: u.hostname, port: Number(u.port), authorization: basicAuth(owner.email, owner.apiKey) });
        await c.connect();
        return c;
      }),
    );
    const body = (kind: Kind, n: number) => `type=stream&to=${general}&topic=bench&content=${encodeURIComponent(`@*${kind === 'notify' ? 'bench-away' : 'bench-here'}* a line about the size of a chat message, number ${n}`)}`;
    const samples: Record<Kind, number[]> = { notify: [], baseline: [] };
    const totals: Record<Kind, { sends: number; failed: number; cpu: number; secs: number }> = { notify: { sends: 0, failed: 0, cpu: 0, secs: 0 }, baseline: { sends: 0, failed: 0, cpu: 0, secs: 0 } };
    let n = 0;
    const round = async (kind: Kind, secs: number, record: boolean) => {
      const cpu0 = procCpuSeconds(server.pid);
      const start = performance.now();
      const end = start + secs * 1000;
      let sends = 0;
      let failed = 0;
      await Promise.all(
        conns.map(async (c) => {
          while (performance.now() < end) {
            const t = performance.now();
            const r = await c.request('POST', '/api/v1/messages', body(kind, n++));
            if (r.status !== 200) {
              if (failed++ < 3) o.log(`   send failed: ${r.status} ${r.body.slice(0, 200)}`);
              continue;
            }
            sends++;
            if (record) samples[kind].push(performance.now() - t);
          }
        }),
      );
      if (!record) return;
      const k = totals[kind];
      k.sends += sends;
      k.failed += failed;
      k.cpu += procCpuSeconds(server.pid) - cpu0;
      k.secs += (performance.now() - start) / 1000;
    };
    // Warm-up of both kinds, then rounds alternating which kind goes first.
    await round('baseline', 1, false);
    await round('notify', 1, false);
    for (let r = 0; r < o.rounds; r++) {
      const order: Kind[] = r % 2 === 0 ? ['notify', 'baseline'] : ['baseline', 'notify'];
      for (const kind of order) await round(kind, o.secs, true);
    }
    const mailsBefore = smtp.messages.length;
    for (const c of conns) c.close();
    const figures = (kind: Kind): KindFigures => {
      const k = totals[kind];
      return { sends: k.sends, failed: k.failed, latency: summarize(samples[kind]), cpuMsPerSend: (k.cpu * 1000) / k.sends, sendsPerSec: k.sends / k.secs };
    };
    const notify = figures('notify');
    const baseline = figures('baseline');
    if (notify.failed + baseline.failed > 0) throw new Error(`${notify.failed + baseline.failed} sends failed`);
    if (mailsBefore > 0) throw new Error(`${mailsBefore} mails left during the measured rounds: the batch period was too short`);

    // The away users' batches leave: one mail each (one conversation), nobody else mailed.
    const t2 = performance.now();
    const awayEmails = new Set(awayIds.map((id) => user(id, site).email));
    await smtp.waitFor((ms) => ms.length >= o.away, (measuredSecs + 90) * 1000);
    await new Promise((r) => setTimeout(r, 1000));
    await drainer.stop();
    const recipients = smtp.messages.flatMap((m) => (Array.isArray(m.to) ? m.to : m.to ? [m.to] : []).flatMap((a) => a.value.map((v) => v.address?.toLowerCase() ?? '')));
    const wrong = recipients.filter((r) => !awayEmails.has(r)).length;
    const distinct = new Set(recipients.filter((r) => awayEmails.has(r))).size;
    if (wrong > 0 || distinct !== o.away) throw new Error(`mail went to ${distinct} of the ${o.away} away members and to ${wrong} others`);
    return {
      members: o.members,
      active: demoMembers + activeGrown.length,
      away: o.away,
      rounds: o.rounds,
      secsPerRound: o.secs,
      senders: o.senders,
      notify,
      baseline,
      ratio: { p50: notify.latency.p50 / baseline.latency.p50, p99: notify.latency.p99 / baseline.latency.p99, cpu: notify.cpuMsPerSend / baseline.cpuMsPerSend },
      mails: { recipients: distinct, wrongRecipients: wrong, waitedSecs: (performance.now() - t2) / 1000 },
      events: drainer.events,
      pollErrors: drainer.errors,
    };
  } finally {
    await server.dispose();
    await smtp.close();
  }
}

/** Runs `fn` over `items`, `width` at a time. */
async function inParallel<T>(items: readonly T[], width: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

export function describe(r: NotifySendResult): string {
  const k = (label: string, f: KindFigures) => `${label}: ${f.sends} sends, p50 ${fmt(f.latency.p50)} ms, p99 ${fmt(f.latency.p99)} ms, ${fmt(f.cpuMsPerSend)} ms CPU/send, ${fmt(f.sendsPerSec)} sends/s`;
  return [
    `${r.members} members (${r.active} polling, ${r.away} away), ${r.senders} senders, ${r.rounds} rounds of ${r.secsPerRound} s per kind`,
    k(`notify (mentions ${r.away} away)`, r.notify),
    k(`baseline (mentions ${r.away} active)`, r.baseline),
    `notify/baseline: p50 ${r.ratio.p50.toFixed(3)}x, p99 ${r.ratio.p99.toFixed(3)}x, CPU/send ${r.ratio.cpu.toFixed(3)}x`,
    `mail: ${r.mails.recipients} away members mailed once the batch left (${fmt(r.mails.waitedSecs)} s after the rounds), ${r.mails.wrongRecipients} others; ${r.events} message events polled, ${r.pollErrors} poll errors`,
  ].join('\n');
}

export const NOTIFY_ARGS = {
  members: { type: 'string', default: '1000' },
  away: { type: 'string', default: '100' },
  rounds: { type: 'string', default: '4' },
  secs: { type: 'string', default: '5' },
  senders: { type: 'string', default: '4' },
  profile: { type: 'string' },
} as const;

export function notifyOptions(v: { members?: string; away?: string; rounds?: string; secs?: string; senders?: string; profile?: string }, log: (s: string) => void): NotifySendOptions {
  return { members: Number(v.members ?? 1000), away: Number(v.away ?? 100), rounds: Number(v.rounds ?? 4), secs: Number(v.secs ?? 5), senders: Number(v.senders ?? 4), profileDir: v.profile, log };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: NOTIFY_ARGS });
  const r = await notifySendBench(notifyOptions(values, (s) => console.log(s)));
  console.log(describe(r));
  process.exit(0);
}
