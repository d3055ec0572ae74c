// Restarting on the same data directory keeps everything answered `success`.
// Embedded only: the cluster's own failover test covers the cluster.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { serverFor, startServer } from './helpers/server.ts';

// Both cases stop (and restart) the embedded process they started, which a
// cluster run (PARLEY_TEST_GATEWAYS) cannot do: they report as skipped there.
const skip = process.env.PARLEY_TEST_GATEWAYS ? 'SIGTERMs (and restarts) an embedded server it started; a cluster run has none' : false;
const first = skip ? undefined : await serverFor(t);

t.test('durability - SIGTERM then restart keeps users, API keys, channels and messages', { skip }, async (t) => {
  if (!first) throw new Error('no embedded server');
  const owner = first.api.as(first.demo.owner);
  const ch = uniq('durable');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: ch }], principals: [first.demo.member1.userId] });
  const email = `${uniq('kept')}@parley.example`;
  const { user_id } = await owner.ok('POST', '/users', { email, password: 'pw', full_name: 'Kept User' });
  const ids: number[] = [];
  for (let i = 0; i < 20; i++) ids.push((await owner.ok('POST', '/messages', { type: 'stream', to: ch, topic: 't', content: `m${i}` })).id);
  const dm = await owner.ok('POST', '/messages', { type: 'direct', to: [first.demo.member1.userId], content: 'dm survives' });
  // The demo organization as its users changed it: a demo user deactivated, another out of #general.
  await owner.ok('DELETE', `/users/${first.demo.member2.userId}`);
  await first.api.as(first.demo.moderator).ok('DELETE', '/users/me/subscriptions', { subscriptions: ['general'] });
  t.equal(await first.stop('SIGTERM'), 0, 'clean exit on SIGTERM');

  const second = await first.restart();
  t.teardown(() => second.stop());
  t.same(second.demo.owner.apiKey, first.demo.owner.apiKey, 'API keys survive');
  const again = second.api.as(first.demo.member1);
  const got = await again.ok('GET', '/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [['stream', ch]], apply_markdown: false });
  t.same(got.messages.map((m: any) => m.id), ids);
  t.same(got.messages.map((m: any) => m.content), ids.map((_, i) => `m${i}`));
  const dms = await again.ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [['dm', first.demo.owner.email]], apply_markdown: false });
  t.equal(dms.messages.at(-1).id, dm.id);
  const users = (await again.ok('GET', '/users')).members;
  t.ok(users.some((u: any) => u.user_id === user_id && u.email === email));
  const next = await second.api.as(first.demo.owner).ok('POST', '/messages', { type: 'stream', to: ch, topic: 't', content: 'after restart' });
  t.ok(next.id > dm.id, 'message IDs keep growing after a restart');
  t.equal(users.find((u: any) => u.user_id === first.demo.member2.userId)?.is_active, false, 'a deactivated demo user stays deactivated across the restart (the server starts)');
  const subs = (await second.api.as(first.demo.moderator).ok('GET', '/users/me/subscriptions')).subscriptions;
  t.notOk(subs.some((s: any) => s.name === 'general'), 'a demo user who left #general is not put back by the restart');
});

t.test('durability - SIGTERM answers waiting long polls instead of dropping them', { skip }, async (t) => {
  const s = await serverFor(t);
  const maria = s.api.as(s.demo.member1);
  const q = await maria.ok('POST', '/register', { event_types: ['message'] });
  const waiting = maria.get('/events', { queue_id: q.queue_id, last_event_id: q.last_event_id }, { signal: AbortSignal.timeout(10_000) });
  await new Promise((r) => setTimeout(r, 300));
  const started = Date.now();
  const exited = s.stop('SIGTERM');
  const answer = await waiting;
  t.equal(answer.status, 200);
  t.same(answer.body.events, []);
  t.equal(answer.body.queue_id, q.queue_id);
  t.ok(Date.now() - started < 5000, 'answered at shutdown, not at the heartbeat');
  t.equal(await exited, 0);
});

t.test('durability - a restart under another release: kept event queues get one restart event with its version and level (FL 59, 240), new ones none', { skip }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-release-'));
  let current = await startServer({ dataDir: dir, env: { PARLEY_VERSION: 'release-a' } });
  t.teardown(async () => {
    await current.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const maria = () => current.api.as(current.demo.member1);
  const settings = await current.api.ok('GET', '/server_settings');
  t.equal(settings.zulip_version, 'release-a', 'PARLEY_VERSION names the release');
  const level = settings.zulip_feature_level as number;
  const q = await maria().ok('POST', '/register', { event_types: ['message', 'restart'] });
  t.equal(q.zulip_version, 'release-a');
  const messagesOnly = await maria().ok('POST', '/register', { event_types: ['message'] });
  const ch = uniq('release');
  await current.api.as(current.demo.owner).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: ch }], principals: [current.demo.member1.userId] });
  const before = await current.api.as(current.demo.owner).ok('POST', '/messages', { type: 'stream', to: ch, topic: 't', content: 'before the deploy' });
  t.equal(await current.stop('SIGTERM'), 0);

  current = await startServer({ dataDir: dir, env: { PARLEY_VERSION: 'release-b' } });
  t.equal((await current.api.ok('GET', '/server_settings')).zulip_version, 'release-b');
  // A long poll on the kept queue: what was waiting, then the restart event, once.
  const got = await maria().ok('GET', '/events', { queue_id: q.queue_id, last_event_id: q.last_event_id });
  t.same(got.events.map((e: any) => e.type), ['message', 'restart'], 'the queue kept its events and got one restart event');
  t.equal(got.events[0].message.id, before.id);
  const restart = got.events[1];
  t.same(Object.keys(restart).sort(), ['id', 'server_generation', 'type', 'zulip_feature_level', 'zulip_merge_base', 'zulip_version'], 'no immediate (FL 240)');
  t.match(restart, { zulip_version: 'release-b', zulip_merge_base: 'release-b', zulip_feature_level: level });
  const generation = async () => (await maria().ok('POST', '/register', { fetch_event_types: ['realm'], event_types: ['heartbeat'] })).server_generation as number;
  t.equal(restart.server_generation, await generation(), "server_generation: the new process's, as its register gives it");
  t.same((await maria().ok('GET', '/events', { queue_id: messagesOnly.queue_id, last_event_id: messagesOnly.last_event_id, dont_block: true })).events.map((e: any) => e.type), ['message'], 'a queue without restart in event_types is kept and gets none');
  const fresh = await maria().ok('POST', '/register', { event_types: ['message', 'restart'] });
  t.equal(fresh.zulip_version, 'release-b');
  // The kept queue takes deliveries again: a channel message sent now reaches it.
  const after = await current.api.as(current.demo.owner).ok('POST', '/messages', { type: 'stream', to: ch, topic: 't', content: 'after the deploy' });
  const next = await maria().ok('GET', '/events', { queue_id: q.queue_id, last_event_id: restart.id });
  t.same(next.events.map((e: any) => [e.type, e.message?.id]), [['message', after.id]], 'no second restart event; new messages arrive');
  t.same((await maria().ok('GET', '/events', { queue_id: fresh.queue_id, last_event_id: fresh.last_event_id })).events.map((e: any) => e.type), ['message'], 'a queue registered under the new release gets no restart event');
  const lastSeen = next.events[0].id;
  t.equal(await current.stop('SIGTERM'), 0);

  // The same release again: a restart, not a deploy: no restart event.
  current = await startServer({ dataDir: dir, env: { PARLEY_VERSION: 'release-b' } });
  const again = await maria().ok('GET', '/events', { queue_id: q.queue_id, last_event_id: lastSeen, dont_block: true });
  t.same(again.events, [], 'the queue was told of release-b once');
});

t.test('durability - kill -9 under load, three times: every acknowledged send is kept, no ID handed out twice', { skip }, async (t) => {
  // Sends as fast as eight connections go, so the server is killed mid-commit; rate limits off for that.
  let s = await serverFor(t, { env: { PARLEY_RATE_LIMITS: 'false' } });
  const ch = uniq('crash');
  await s.api.as(s.demo.owner).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: ch }] });
  const acked = new Map<number, string>();
  const duplicates: number[] = [];
  for (let trial = 1; trial <= 3; trial++) {
    const owner = s.api.as(s.demo.owner);
    let running = true;
    const senders = Array.from({ length: 8 }, async (_, k) => {
      for (let n = 0; running; n++) {
        const content = `trial ${trial} sender ${k} #${n}`;
        try {
          const r = await owner.post('/messages', { type: 'stream', to: ch, topic: 'crash', content });
          if (r.status !== 200) continue;
          if (acked.has(r.body.id)) duplicates.push(r.body.id);
          acked.set(r.body.id, content);
        } catch {
          return; // the connection died with the server
        }
      }
    });
    await new Promise((r) => setTimeout(r, 400 + Math.floor(Math.random() * 800)));
    const before = acked.size;
    await s.stop('SIGKILL');
    running = false;
    await Promise.all(senders);
    t.ok(before > 0, `trial ${trial}: killed with sends in flight (${acked.size} acknowledged so far)`);
    s = await s.restart();
  }
  t.teardown(() => s.stop());
  t.same(duplicates, [], 'no ID was acknowledged twice');
  const history = await s.api.as(s.demo.owner).ok('GET', '/messages', { anchor: 'newest', num_before: 5000, num_after: 0, narrow: [['stream', ch]], apply_markdown: false });
  const stored = new Map<number, string>(history.messages.map((m: any) => [m.id, m.content]));
  t.equal(stored.size, history.messages.length, 'no ID twice in history');
  const lost = [...acked].filter(([id, content]) => stored.get(id) !== content);
  t.same(lost, [], `every one of ${acked.size} acknowledged messages is in history with its content`);
  const next = await s.api.as(s.demo.owner).ok('POST', '/messages', { type: 'stream', to: ch, topic: 'crash', content: 'after the crashes' });
  t.ok(next.id > Math.max(...acked.keys()), 'IDs keep growing past every acknowledged one');
});

/**
 * The write path's system calls while one message is sent, traced by strace
 * with every fsync and fdatasync held for 300 ms. Every write to the data
 * file made before the answer must be on disk when the answer leaves: either
 * written through lmdb's O_DSYNC handle (its meta page) and returned, or
 * followed by a sync of its file that returned. An answer sent while the
 * sync is still held fails this.
 */
const hasStrace = spawnSync('strace', ['-V']).status === 0;
t.test('durability - a success is answered only once its commit is on disk', { skip: skip || (!hasStrace && 'needs strace') }, async (t) => {
  const s = await serverFor(t);
  const owner = s.api.as(s.demo.owner);
  await owner.ok('POST', '/messages', { type: 'stream', to: 'general', topic: 'disk', content: 'warm up' });
  const pid = s.process!.pid!;
  const dir = mkdtempSync(join(tmpdir(), 'parley-strace-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, 'trace.txt');
  const tracer = spawn('strace', ['-f', '-p', String(pid), '-s', '24', '-o', out, '-e', 'trace=fsync,fdatasync,pwrite64,pwritev,write,writev,sendto', '-e', 'inject=fsync,fdatasync:delay_exit=300000']);
  await new Promise((r) => setTimeout(r, 1500)); // strace attaches to every thread
  // Several at once, from actors that commit independently (the realm's messages, each user's settings),
  // so commits overlap: one is being synced while the next commits.
  const users = [s.demo.member1, s.demo.member2, s.demo.admin, s.demo.moderator].map((c) => s.api.as(c));
  const sent = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      i % 2 ? owner.ok('POST', '/messages', { type: 'stream', to: 'general', topic: 'disk', content: `on disk before the answer ${i}` }) : users[(i / 2) % 4]!.ok('PATCH', '/settings', { left_side_userlist: i % 4 === 0 }),
    ),
  );
  tracer.kill('SIGINT');
  await new Promise((r) => tracer.once('exit', r));

  // The data file's descriptors, and which of them were opened O_DSYNC (010000 in fdinfo's octal flags).
  const fds = new Map<string, boolean>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const path = readlinkSync(`/proc/${pid}/fd/${fd}`);
    if (!path.startsWith(s.dataDir!) || !path.endsWith('/data.mdb')) continue;
    const flags = parseInt(/^flags:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))![1]!, 8);
    fds.set(fd, (flags & 0o10000) !== 0);
  }
  // Calls that finished, with start and end times (an interrupted call's end is on its "resumed" line).
  const calls = parseTrace(readFileSync(out, 'utf8'));
  const replies = calls.filter((c) => c.name === 'sendto' && c.args.includes('HTTP/1.1 200'));
  t.equal(replies.length, sent.length, 'every answer was traced');
  const written = (before: number) => calls.filter((c) => /^(pwrite64|pwritev|write|writev)$/.test(c.name) && fds.has(c.fd) && c.start < before);
  t.ok(written(Infinity).length > 0, `the commits wrote the data file (${written(Infinity).length} writes)`);
  const unsafe = replies.flatMap((reply) =>
    written(reply.start)
      .filter((w) => (fds.get(w.fd) ? w.end > reply.start : !calls.some((c) => /^f(data)?sync$/.test(c.name) && c.fd === w.fd && c.start >= w.end && c.end <= reply.start)))
      .map((w) => `answer on line ${reply.start + 1}: ${w.name}(${w.fd}) on line ${w.start + 1} not yet on disk`),
  );
  t.same(unsafe, [], 'nothing written before an answer was still unsynced when it left');
});

interface Call {
  name: string;
  fd: string;
  args: string;
  /** Lines of the trace where the call began and where it returned: strace writes them in the order they happen. */
  start: number;
  end: number;
}

/** strace -f output: `pid name(args) = r`, or split into `<unfinished ...>` and `<... name resumed>` lines. */
function parseTrace(text: string): Call[] {
  const calls: Call[] = [];
  const open = new Map<string, { name: string; args: string; start: number }>();
  const fdOf = (args: string) => /^(\d+)/.exec(args)?.[1] ?? '';
  text.split('\n').forEach((line, i) => {
    const m = /^(\d+)\s+(.*)$/.exec(line);
    if (!m) return;
    const [, pid, rest] = m as unknown as [string, string, string];
    const whole = /^(\w+)\((.*)\) += /.exec(rest);
    const unfinished = /^(\w+)\((.*) <unfinished \.\.\.>$/.exec(rest);
    const resumed = /^<\.\.\. (\w+) resumed>/.exec(rest);
    if (whole) calls.push({ name: whole[1]!, args: whole[2]!, fd: fdOf(whole[2]!), start: i, end: i });
    else if (unfinished) open.set(pid, { name: unfinished[1]!, args: unfinished[2]!, start: i });
    else if (resumed && open.has(pid)) {
      const o = open.get(pid)!;
      open.delete(pid);
      calls.push({ ...o, fd: fdOf(o.args), end: i });
    }
  });
  return calls;
}
