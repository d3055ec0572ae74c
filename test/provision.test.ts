// Provisioning at scale against an embedded server: `parley users import` of 5,000 users in batches
// (every imported user can authenticate after, the events reach a registered client, the
// organization keeps answering meanwhile), its refusals, and bulk subscription of thousands of
// principals in one request. Rates are measured in bench/ (bench/provision.ts), not asserted here.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t from 'tap';
import { hashPassword } from '../lib/secrets.ts';
import { NO_LIMITS } from './helpers/backup-org.ts';
import { SUBSCRIBE_STEP } from '../actors/realm/actions/channels/subscriptions.ts';
import { catchUp, type Snap } from './helpers/apply.ts';
import { poll, register } from './helpers/events.ts';
import { serverFor } from './helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '..');
const work = mkdtempSync(join(tmpdir(), 'parley-provision-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));

const s = await serverFor(t, { env: NO_LIMITS });
const dataDir = join(s.dataDir!, 'data');
const owner = s.api.as(s.demo.owner);

function parley(args: string[], dir = dataDir): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), ...args, '--data-dir', dir], { cwd: work, env: { ...process.env, PARLEY_MODE: 'embedded' }, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

/** Runs `fn` while timing GET /users/me by another user every 50 ms; returns the slowest answer (ms). */
async function slowestMeanwhile(fn: () => Promise<void>): Promise<{ slowest: number; answered: number }> {
  let stop = false;
  let slowest = 0;
  let answered = 0;
  const member = s.api.as(s.demo.member1);
  const probe = (async () => {
    while (!stop) {
      const t0 = performance.now();
      await member.ok('GET', '/users/me');
      slowest = Math.max(slowest, performance.now() - t0);
      answered++;
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  try {
    await fn();
  } finally {
    stop = true;
    await probe;
  }
  return { slowest, answered };
}

const N = 5000;
const PASSWORD = 'imported-password-1';

t.test('users import - 5,000 users in batches: each can authenticate, a client hears of them, others are answered meanwhile', async (t) => {
  const hash = await hashPassword(PASSWORD);
  const lines: string[] = [];
  for (let i = 1; i <= N; i++) {
    const row: Record<string, string> = { email: `imported${i}@import.example`, full_name: `Imported Person ${i}` };
    if (i % 1000 === 0) row.role = 'guest';
    if (i === 7) row.role = 'admin';
    if (i <= 3) row.password_hash = hash;
    lines.push(JSON.stringify(row));
  }
  writeFileSync(join(work, 'users.jsonl'), `${lines.join('\n')}\n`);
  const q = await register(owner, { event_types: ['realm_user', 'subscription'] });

  let r!: { code: number; stdout: string; stderr: string };
  const { slowest, answered } = await slowestMeanwhile(async () => {
    r = await parley(['--json', 'users', '--org', '.', 'import', join(work, 'users.jsonl'), '--keys-out', join(work, 'keys.csv')]);
  });
  t.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  t.equal(out.created, N);
  t.equal(out.batches, N / 200, 'batches of 200 by default');
  t.same(out.skipped, []);
  t.ok(answered > 0 && slowest < 3000, `another user's request answered within 3 s during the import (slowest ${slowest.toFixed(0)} ms over ${answered})`);

  // Every imported user's key works.
  const keys = readFileSync(join(work, 'keys.csv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
  t.equal(keys.length, N);
  let ok = 0;
  for (let i = 0; i < keys.length; i += 25) {
    const batch = keys.slice(i, i + 25);
    const replies = await Promise.all(batch.map(([email, , apiKey]) => s.api.as({ email: email!, apiKey: apiKey! }).call('GET', '/users/me')));
    replies.forEach((res, j) => {
      if (res.status === 200 && res.body.email === batch[j]![0] && res.body.user_id === Number(batch[j]![1])) ok++;
    });
  }
  t.equal(ok, N, 'every imported user authenticates with their API key');

  // Those imported with a password hash sign in with the password; the roles are kept.
  for (let i = 1; i <= 3; i++) {
    const got = await s.api.ok('POST', '/fetch_api_key', { username: `imported${i}@import.example`, password: PASSWORD });
    t.equal(got.email, `imported${i}@import.example`);
  }
  const refused = await s.api.call('POST', '/fetch_api_key', { username: 'imported4@import.example', password: PASSWORD });
  t.equal(refused.status, 401, 'a user imported without a password has none');
  const { members } = await owner.ok('GET', '/users');
  const byEmail = new Map<string, any>(members.map((m: any) => [m.email, m]));
  t.equal(byEmail.get('imported7@import.example')?.role, 200, 'admin kept');
  t.equal(byEmail.get('imported1000@import.example')?.role, 600, 'guest kept');
  t.equal(byEmail.get('imported1@import.example')?.role, 400, 'member by default');

  // The registered client heard of every one (realm_user add), and of their joining the default channels.
  const added = new Set<string>();
  let peerAdds = 0;
  const deadline = Date.now() + 30_000;
  while (added.size < N && Date.now() < deadline) {
    for (const e of await poll(q, { dontBlock: true })) {
      if (e.type === 'realm_user' && e.op === 'add') added.add(e.person.email);
      if (e.type === 'subscription' && e.op === 'peer_add') peerAdds += e.user_ids.length;
    }
  }
  t.equal(added.size, N, 'a realm_user add for each imported user');
  t.ok(peerAdds >= N, `peer_add names each imported user (${peerAdds} user IDs over the default channels)`);
  const snapshot = await owner.ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  t.ok(snapshot.realm_users.some((u: any) => u.email === `imported${N}@import.example`), 'a fresh register lists them');
});

t.test('users import - an email in use fails the batch unless --skip-existing; a bad file is refused before anything is created', async (t) => {
  const file = join(work, 'again.csv');
  writeFileSync(file, `email,full_name,role\nimported1@import.example,Again One,member\nfresh1@import.example,Fresh One,moderator\n`);
  const again = await parley(['users', '--org', '.', 'import', file]);
  t.equal(again.code, 1);
  t.match(again.stderr, /imported1@import\.example' already in use/);
  const skip = await parley(['--json', 'users', '--org', '.', 'import', file, '--skip-existing']);
  t.equal(skip.code, 0, skip.stderr);
  t.match(JSON.parse(skip.stdout), { created: 1, skipped: ['imported1@import.example'] });
  const { user } = await owner.ok('GET', '/users/fresh1@import.example');
  t.equal(user.role, 300, 'role from the CSV column');

  writeFileSync(file, `email,full_name,role\nok1@import.example,Ok One,member\nbad@import.example,Bad,emperor\n`);
  const bad = await parley(['users', '--org', '.', 'import', file]);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /again\.csv:3: unknown role 'emperor'/);
  const none = await owner.call('GET', '/users/ok1@import.example');
  t.equal(none.status, 400, 'nothing of a refused file was created');

  writeFileSync(file, `email,full_name\nnot-an-email,Somebody\n`);
  const badEmail = await parley(['users', '--org', '.', 'import', file]);
  t.equal(badEmail.code, 1);
  t.match(badEmail.stderr, /invalid email 'not-an-email'/);
});

t.test('subscriptions - an owner subscribes 5,000+ principals to a new channel in one request, done in steps; others are answered meanwhile', async (t) => {
  const { members } = await owner.ok('GET', '/users');
  const humans = members.filter((m: any) => m.is_active && !m.is_bot).map((m: any) => m.user_id as number);
  // member1 is in the first step, member2 in the last: the first hears of the later steps' subscribers by peer_add.
  const { member1, member2, bot } = s.demo;
  const principals = [member1.userId, ...humans.filter((id: number) => id !== member1.userId && id !== member2.userId), member2.userId];
  t.ok(principals.length >= 5000 && principals.length > 4 * SUBSCRIBE_STEP, `${principals.length} principals, steps of ${SUBSCRIBE_STEP}`);
  const FETCH = { fetch_event_types: ['subscription', 'stream'], event_types: ['subscription', 'stream'], include_subscribers: true, client_capabilities: { notification_settings_null: true } };
  const clients = [s.api.as(member1), s.api.as(member2), s.api.as(bot)];
  const queues = await Promise.all(clients.map((api) => register(api, FETCH)));
  const name = `everyone-${process.pid}`;
  let reply!: Record<string, any>;
  const { slowest, answered } = await slowestMeanwhile(async () => {
    reply = await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals });
  });
  t.equal(Object.keys(reply.subscribed).length, principals.length, 'every principal subscribed, in one reply');
  t.same(reply.already_subscribed, {});
  t.equal(reply.new_subscription_messages_sent, false, 'too many to tell (max_bulk_new_subscription_messages)');
  // Timed, not bounded tightly: the machine is shared (bench/subscribe-bulk.ts measures the steps).
  t.ok(answered > 0 && slowest < 3000, `another user's request answered within 3 s meanwhile (slowest ${slowest.toFixed(0)} ms over ${answered})`);

  const channel = await owner.ok('GET', '/get_stream_id', { stream: name });
  const members1 = (await owner.ok('GET', `/streams/${channel.stream_id}/members`)).subscribers as number[];
  t.same(new Set(members1), new Set(principals), 'GET /streams/{id}/members: every principal');
  // Each client's snapshot with the events of every step applied equals a fresh register.
  const bySubscribers = (snap: Snap) => [...snap.subscriptions, ...snap.never_subscribed].find((x: any) => x.stream_id === channel.stream_id)?.subscribers?.length;
  for (const [i, q] of queues.entries()) {
    const snap = q.snapshot;
    const seen = await catchUp(q, snap, () => bySubscribers(snap) === principals.length);
    t.ok(seen.has('subscription/peer_add'), `client ${i}: peer_add events`);
    const fresh = (await register(clients[i]!, FETCH)).snapshot;
    for (const key of ['subscriptions', 'never_subscribed', 'unsubscribed', 'streams']) t.same(normalize(snap[key]), normalize(fresh[key]), `client ${i}: ${key} equal a fresh register's`);
  }
  const mine = (await s.api.as(member1).ok('GET', '/users/me/subscriptions')).subscriptions.find((x: any) => x.stream_id === channel.stream_id);
  t.match(mine.color, /^#[0-9a-f]{6}$/);

  // A retry (after a failure midway, say) completes the rest and changes nothing that is done.
  const again = await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals });
  t.same(again.subscribed, {}, 'the retry subscribes nobody');
  t.equal(Object.keys(again.already_subscribed).length, principals.length, 'everyone already subscribed');
  t.equal((await owner.ok('GET', `/streams/${channel.stream_id}`)).stream.subscriber_count, principals.length);
});

t.test('subscriptions - a request in steps that outlasts the default request timeout is answered with its result', async (t) => {
  // Calls time out after 2 s here; a request's steps are of 100 subscriptions with 120 ms between
  // them: 2,000 principals take 20 steps, more than 2 s. The gateway gives a subscription request
  // 2 ms more per subscription past a step (gateway/routes/subscriptions.ts).
  const slow = await serverFor(t, { env: { ...NO_LIMITS, PARLEY_REQUEST_TIMEOUT_MS: '2000', PARLEY_STEP_PAUSE_MS: '120', PARLEY_SUBSCRIBE_STEP: '100' } });
  const dir = join(slow.dataDir!, 'data');
  const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ email: `slow${i}@import.example`, full_name: `Slow Person ${i}` }));
  writeFileSync(join(work, 'slow.jsonl'), `${lines.join('\n')}\n`);
  const imported = await parley(['--json', 'users', '--org', '.', 'import', join(work, 'slow.jsonl')], dir);
  t.equal(imported.code, 0, imported.stderr);
  const boss = slow.api.as(slow.demo.owner);
  const { members } = await boss.ok('GET', '/users');
  const principals = members.filter((m: any) => m.is_active && !m.is_bot).map((m: any) => m.user_id as number);
  t.ok(principals.length >= 2000);
  const t0 = performance.now();
  const res = await boss.call('POST', '/users/me/subscriptions', { subscriptions: [{ name: 'slow-everyone' }], principals });
  const took = performance.now() - t0;
  t.equal(res.status, 200, `answered with its result after ${took.toFixed(0)} ms: ${JSON.stringify(res.body).slice(0, 200)}`);
  t.ok(took > 2000, `the request outlasted the 2-s default timeout (${took.toFixed(0)} ms)`);
  t.equal(Object.keys(res.body.subscribed ?? {}).length, principals.length, 'every principal subscribed');
  const channel = await boss.ok('GET', '/get_stream_id', { stream: 'slow-everyone' });
  t.equal((await boss.ok('GET', `/streams/${channel.stream_id}`)).stream.subscriber_count, principals.length);
});

/** A snapshot's channel list in a comparable form: sorted by channel, subscriber lists sorted. */
function normalize(list: any[] | undefined): any[] {
  return [...(list ?? [])].sort((a, b) => a.stream_id - b.stream_id).map((x) => (x.subscribers ? { ...x, subscribers: [...x.subscribers].sort((a: number, b: number) => a - b) } : x));
}
