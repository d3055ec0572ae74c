/**
 * What a send costs by its audience: one organization grown to N users, all
 * subscribed to a channel `big`, against a channel of 2 (the owner and a
 * member). For each size, an embedded server (its own process) is started on
 * the demo organization, the two channels are made through the API, the
 * server is stopped, N users and their `big` subscriptions are written
 * straight into its store (seconds, not the API's minutes), and it is started
 * again on that data. Then 8 concurrent senders post to `big` and to the
 * 2-member channel in turns (ABAB, a few seconds each) and the server's CPU
 * time per send (/proc/<pid>/stat: gateway, realm and queue actors, one
 * process) and sends/s are printed. The generated users hold no queues: what
 * grows with N is the work done for the audience itself.
 *
 *   node --import tsx bench/bigchannel.ts [--sizes 1000,10000] [--secs 4] [--base DIR]
 *
 * `--base DIR`: also measure the server of another checkout (e.g. main before
 * a change: `git archive <commit> | tar -x -C DIR`, with node_modules linked),
 * in the same run, first. `--profile DIR`: a CPU profile of this checkout's
 * server (read it with bench/profile.ts); `--only big|pair`: send to one channel.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { forgetCheckpoint } from '../actors/realm/state/checkpoint.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { Allocator, SubscriptionRecord, T, UserRecord } from '../storage/tables.ts';
import { basicAuth, RawConn } from './lib/rawhttp.ts';
import { api, procCpuSeconds, startParley, type ParleyServer } from './lib/server.ts';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000' }, secs: { type: 'string', default: '4' }, base: { type: 'string' }, profile: { type: 'string' }, only: { type: 'string' }, senders: { type: 'string', default: '8' } } });
const sizes = values.sizes!.split(',').map(Number);
const secs = Number(values.secs);
const senders = Number(values.senders);

interface Figures {
  cpuMsPerSend: number;
  sendsPerSec: number;
}

/** The demo organization's ID: the realm whose owner the demo's owner is (the only realm with users). */
async function demoRealm(store: EmbeddedStore): Promise<number> {
  for await (const row of store.scan<unknown>('realms', '')) return Number(row.pk);
  throw new Error('no realm in the store');
}

/** Writes `n` members subscribed to channel `channelId` into a stopped server's store. */
async function grow(dataDir: string, channelId: number, n: number): Promise<void> {
  const store = new EmbeddedStore(dataDir);
  const realm = await demoRealm(store);
  const ids = Allocator.parse((await T.allocators.at(realm).get(store)) ?? {});
  // A fence of its own: the realm's scope (and its owner's next claim) is left alone.
  const writer = (await store.claim('bench:grow', Date.now()))!;
  const first = ids.user;
  const now = new Date().toISOString();
  for (let start = 0; start < n; start += 2000) {
    const ops = [];
    for (let i = start; i < Math.min(n, start + 2000); i++) {
      const id = first + i;
      ops.push(
        T.users.at(realm, id).put(UserRecord.parse({ id, email: `big${i}@bench.example`, fullName: `Bench User ${i}`, role: 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: now })),
        T.subscriptions.at(realm, channelId, id).put(SubscriptionRecord.parse({ streamId: channelId, userId: id, active: true, color: '#76ce90', startMessageId: 0 })),
      );
    }
    await writer.commit(ops);
  }
  // Rows written beside the realm actor: its next load reads the tables, not its checkpoint.
  await writer.commit([T.allocators.at(realm).put({ ...ids, user: first + n }), forgetCheckpoint(realm)]);
  await store.close();
}

async function channelId(s: ParleyServer, name: string): Promise<number> {
  return (await api<{ stream_id: number }>(s.url, s.users.owner!, 'GET', '/get_stream_id', { stream: name })).stream_id;
}

/** `senders` connections posting to `to` for `secs` seconds: the server's CPU per send and the rate. */
async function sendFor(s: ParleyServer, to: number, secs: number): Promise<Figures> {
  const u = new URL(s.url);
  const owner = s.users.owner!;
  const conns = await Promise.all(
    Array.from({ length: senders }, async () => {
      const c = new RawConn({ host: u.hostname, port: Number(u.port), authorization: basicAuth(owner.email, owner.apiKey) });
      await c.connect();
      return c;
    }),
  );
  let sent = 0;
  let failed = 0;
  const cpu0 = procCpuSeconds(s.pid);
  const t0 = performance.now();
  const end = t0 + secs * 1000;
  await Promise.all(
    conns.map(async (c) => {
      while (performance.now() < end) {
        const r = await c.request('POST', '/api/v1/messages', `type=stream&to=${to}&topic=bench&content=hello`);
        if (r.status === 200) sent++;
        else if (failed++ < 3) console.error(`send failed: ${r.status} ${r.body.slice(0, 200)}`);
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = procCpuSeconds(s.pid) - cpu0;
  for (const c of conns) c.close();
  return { cpuMsPerSend: (cpu * 1000) / sent, sendsPerSec: sent / elapsed };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function measure(label: string, repo: string | undefined, n: number): Promise<void> {
  let s = await startParley({ repo });
  try {
    const owner = s.users.owner!;
    const member = s.users.member1!;
    await api(s.url, owner, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: 'big' }] });
    await api(s.url, owner, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: 'pair' }], principals: [owner.email, member.email] });
    const big = await channelId(s, 'big');
    const pair = await channelId(s, 'pair');
    await s.stop();
    const t0 = performance.now();
    await grow(join(s.dir, 'data'), big, n);
    const grown = ((performance.now() - t0) / 1000).toFixed(1);
    s = await startParley({ repo, dir: s.dir, readyTimeoutMs: 180_000, ...(values.profile && !repo ? { cpuProfDir: values.profile } : {}) });
    // Warm up (and load the realm) on both channels.
    await sendFor(s, pair, 1);
    await sendFor(s, big, 1);
    const runs: Record<'big' | 'pair', Figures[]> = { big: [], pair: [] };
    for (let round = 0; round < 2; round++) {
      if (values.only !== 'pair') runs.big.push(await sendFor(s, big, secs));
      if (values.only !== 'big') runs.pair.push(await sendFor(s, pair, secs));
    }
    const f = (k: 'big' | 'pair') => ({ cpu: mean(runs[k].map((r) => r.cpuMsPerSend)), rate: mean(runs[k].map((r) => r.sendsPerSec)) });
    const b = f('big');
    const p = f('pair');
    console.log(
      `${label} | ${n.toLocaleString('en-US')} users (written in ${grown} s) | big: ${b.cpu.toFixed(3)} ms CPU/send, ${b.rate.toFixed(0)} sends/s | 2-member: ${p.cpu.toFixed(3)} ms CPU/send, ${p.rate.toFixed(0)} sends/s | big/2-member CPU ${(b.cpu / p.cpu).toFixed(2)}x, extra ${((b.cpu - p.cpu) * 1000).toFixed(0)} µs/send`,
    );
  } finally {
    await s.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
}

for (const n of sizes) {
  if (values.base) await measure(`base (${values.base})`, values.base, n);
  await measure('this checkout', undefined, n);
}
