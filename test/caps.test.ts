/**
 * Per-user caps: live event queues (`PARLEY_MAX_QUEUES_PER_USER`; past it the longest-idle one ends) and
 * channels created per period (`PARLEY_CHANNEL_CREATION_LIMIT`). The queue
 * cap runs with its default against the server under test, with a user of
 * its own; the channel budget on an embedded server of its own with a small
 * budget, so the shared realm does not fill with channels.
 */
import t from 'tap';
import { Api, uniq } from './helpers/api.ts';
import { newPerson } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);

t.test('caps - a user has at most 100 live event queues: the next register ends their longest-idle one', async (t) => {
  const me = s.api.as(await newPerson(s));
  const ids: string[] = [];
  // 101 registers and a few more requests: within the user's default rate limit.
  for (let i = 0; i < 101; i++) {
    const r = await me.call('POST', '/register', { event_types: ['message'], fetch_event_types: ['realm'] });
    if (r.status !== 200) t.fail(`register ${i + 1}: ${r.status} ${JSON.stringify(r.body)}`);
    ids.push(r.body.queue_id);
  }
  const poll = (api: Api, queue_id: string) => api.call('GET', '/events', { queue_id, last_event_id: -1, dont_block: true });
  const first = await poll(me, ids[0]!);
  t.equal(first.status, 400, 'the 101st register ended the queue idle longest (the first)');
  t.match(first.body, { code: 'BAD_EVENT_QUEUE_ID', queue_id: ids[0] });
  t.equal((await poll(me, ids[1]!)).status, 200, 'the second is still there');
  t.equal((await poll(me, ids[100]!)).status, 200, 'and the newest');
  // Now the second was just polled: the third is the one idle longest.
  await me.ok('POST', '/register', { event_types: ['message'], fetch_event_types: ['realm'] });
  t.equal((await poll(me, ids[2]!)).status, 400, 'the next register ends the third, not the second that was just used');
  t.equal((await poll(me, ids[1]!)).status, 200);
  const other = await s.api.as(s.demo.member1).call('POST', '/register', { event_types: ['message'], fetch_event_types: ['realm'] });
  t.equal(other.status, 200, 'other users are not affected');
  await s.api.as(s.demo.member1).ok('DELETE', '/events', { queue_id: other.body.queue_id });
  // The rest expire on their own: deleting 100 more would pass the user's rate limit (200 a minute).
});

t.test('caps - channels created per period: a budget per user, 429 with retry-after past it', async (t) => {
  const own = await serverFor(t, { env: { PARLEY_CHANNEL_CREATION_LIMIT: '3/600', PARLEY_MAX_QUEUES_PER_USER: '2' } });
  const member = own.api.as(own.demo.member1);
  const create = (api: Api, names: string[]) => api.call('POST', '/users/me/subscriptions', { subscriptions: names.map((name) => ({ name })) });
  const tooMany = await create(member, [uniq('a'), uniq('b'), uniq('c'), uniq('d')]);
  t.equal(tooMany.status, 400, 'more than the whole budget in one request');
  t.match(tooMany.body, { code: 'BAD_REQUEST', msg: 'Too many new channels in one request: at most 3 may be created per 10 minutes' });
  t.equal((await create(member, [uniq('a'), uniq('b')])).status, 200);
  const existing = uniq('kept');
  t.equal((await create(member, [existing])).status, 200, 'the third');
  const refused = await create(member, [uniq('e')]);
  t.equal(refused.status, 429);
  t.match(refused.body, { result: 'error', code: 'RATE_LIMIT_HIT', msg: /^Too many channels created: at most 3 per 10 minutes; try again in \d+ seconds$/ });
  t.ok(refused.body['retry-after'] > 100 && refused.body['retry-after'] <= 200, `retry-after ${refused.body['retry-after']} s: one channel every 200 s`);
  t.equal(refused.headers.get('retry-after'), String(refused.body['retry-after']));
  const subs = (await member.ok('GET', '/users/me/subscriptions')).subscriptions as Array<{ name: string }>;
  t.notOk(subs.some((c) => c.name.startsWith('e-')), 'the refused channel was not made');
  const joinOnly = await own.api.as(own.demo.member2).call('POST', '/users/me/subscriptions', { subscriptions: [{ name: existing }] });
  t.equal(joinOnly.status, 200, 'subscribing to existing channels costs nothing');
  t.equal((await member.call('POST', '/users/me/subscriptions', { subscriptions: [{ name: existing }] })).status, 200, 'not even for a user with no budget left');
  t.equal((await create(own.api.as(own.demo.admin), [uniq('f')])).status, 200, 'another user has a budget of their own');

  // The queue cap is configurable too.
  const queues = [];
  for (let i = 0; i < 3; i++) queues.push((await member.ok('POST', '/register', { fetch_event_types: ['realm'] })).queue_id as string);
  const alive = await Promise.all(queues.map(async (queue_id) => (await member.call('GET', '/events', { queue_id, last_event_id: -1, dont_block: true })).status));
  t.same(alive, [400, 200, 200], 'PARLEY_MAX_QUEUES_PER_USER=2: the third register ended the first queue');
});
