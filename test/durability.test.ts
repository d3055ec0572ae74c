// Restarting on the same data directory keeps everything answered `success`.
// Embedded only: the cluster's own failover test covers the cluster.
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { serverFor } from './helpers/server.ts';

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
