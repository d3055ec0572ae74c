import t from 'tap';
import { uniq } from './helpers/api.ts';
import { poll, register, waitFor } from './helpers/events.ts';
import { serverFor } from './helpers/server.ts';
import { ADVERTISED } from './helpers/features.ts';

// Heartbeats every ~2 s and a fast idle sweep keep these tests short.
const s = await serverFor(t, process.env.PARLEY_TEST_GATEWAYS ? {} : { env: { PARLEY_HEARTBEAT_SECS: '2' } });
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);
const channel = uniq('events');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [s.demo.owner.userId, s.demo.member1.userId, s.demo.member2.userId] });

t.test('events - a message reaches another user\'s long poll in well under a second', async (t) => {
  const q = await register(maria, { event_types: ['message'] });
  const waiting = poll(q);
  await new Promise((r) => setTimeout(r, 100)); // the poll is parked before the send
  const started = performance.now();
  const sent = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'fast', content: 'ping' });
  const events = await waiting;
  const elapsed = performance.now() - started;
  t.equal(events.length, 1);
  t.equal(events[0]!.type, 'message');
  t.equal(events[0]!.message.id, sent.id);
  t.ok(elapsed < 500, `delivered in ${elapsed.toFixed(1)} ms`);
});

t.test('events - register snapshot: always-present keys, limits and fetch_event_types filtering', async (t) => {
  const full = await register(mateo);
  for (const key of ['queue_id', 'last_event_id', 'service_feature_level', 'max_message_length', 'max_topic_length', 'max_stream_name_length', 'max_stream_description_length', 'realm_empty_topic_display_name', 'realm_users', 'subscriptions', 'user_settings', 'max_message_id', 'idle_queue_timeout_secs', 'realm_user_groups', 'unsubscribed', 'never_subscribed']) {
    t.ok(key in full.snapshot, `has ${key}`);
  }
  t.equal(full.snapshot.last_event_id, -1);
  t.equal(full.snapshot.service_feature_level, ADVERTISED, 'the level derived from the feature table (lib/features.ts)');
  t.equal(full.snapshot.max_message_length, 10000);
  t.equal(full.snapshot.max_topic_length, 60);
  t.equal(full.snapshot.realm_empty_topic_display_name, 'general chat');
  t.equal(full.snapshot.user_id, s.demo.member2.userId);
  t.ok(full.snapshot.subscriptions.some((x: any) => x.name === channel));
  t.ok(full.snapshot.realm_users.some((u: any) => u.email === s.demo.owner.email));
  const only = await register(mateo, { fetch_event_types: ['message'] });
  t.ok('max_message_id' in only.snapshot);
  t.notOk('realm_users' in only.snapshot);
  t.notOk('subscriptions' in only.snapshot);
  t.ok('queue_id' in only.snapshot && 'service_feature_level' in only.snapshot && 'max_message_length' in only.snapshot);
  const byEventTypes = await register(mateo, { event_types: ['subscription'] });
  t.ok('subscriptions' in byEventTypes.snapshot);
  t.notOk('realm_users' in byEventTypes.snapshot);
  const nullTypes = await register(mateo, { event_types: null });
  t.ok('realm_users' in nullTypes.snapshot, 'event_types=null means all');
  const withSubs = await register(mateo, { fetch_event_types: ['subscription'], include_subscribers: true });
  const sub = withSubs.snapshot.subscriptions.find((x: any) => x.name === channel);
  t.same([...sub.subscribers].sort(), [s.demo.owner.userId, s.demo.member1.userId, s.demo.member2.userId].sort());
});

t.test('events - event_types, narrow and all_public_streams filter message events', async (t) => {
  const other = uniq('other');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: other }] });
  const onlyChannel = await register(maria, { event_types: ['message'], narrow: [['stream', channel]] });
  const noMessages = await register(maria, { event_types: ['subscription'] });
  const everything = await register(mateo, { event_types: ['message'], all_public_streams: true });
  const dms = await register(maria, { event_types: ['message'], narrow: [['is', 'dm']] });
  const a = await owner.ok('POST', '/messages', { type: 'stream', to: other, topic: 't', content: 'not subscribed' });
  const b = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 't', content: 'subscribed' });
  const c = await owner.ok('POST', '/messages', { type: 'direct', to: [s.demo.member1.userId], content: 'dm' });
  const got = await waitFor(onlyChannel, (e) => e.type === 'message');
  t.equal(got.message.id, b.id);
  t.same((await poll(onlyChannel, { dontBlock: true })).filter((e) => e.type === 'message'), [], 'the DM is outside the narrow');
  const all = [await waitFor(everything, (e) => e.type === 'message'), await waitFor(everything, (e) => e.type === 'message')];
  t.same(all.map((e) => e.message.id), [a.id, b.id], 'all_public_streams adds unsubscribed public channels');
  t.equal((await waitFor(dms, (e) => e.type === 'message')).message.id, c.id);
  t.same((await poll(noMessages, { dontBlock: true })).filter((e) => e.type === 'message'), []);
});

t.test('events - subscription and stream events, checked against their schemas', async (t) => {
  const q = await register(maria, { event_types: ['subscription', 'stream'] });
  const watcher = await register(mateo, { event_types: ['subscription', 'stream'] });
  const name = uniq('fresh');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name, description: 'A *new* channel' }], principals: [s.demo.member1.email] });
  const create = await waitFor(q, (e) => e.type === 'stream' && e.op === 'create');
  t.equal(create.streams[0].name, name);
  t.equal(create.streams[0].rendered_description, '<p>A <em>new</em> channel</p>');
  const add = await waitFor(q, (e) => e.type === 'subscription' && e.op === 'add');
  t.equal(add.subscriptions[0].name, name);
  t.same(add.subscriptions[0].subscribers, [s.demo.member1.userId]);
  const peer = await waitFor(watcher, (e) => e.type === 'subscription' && e.op === 'peer_add');
  t.same(peer.user_ids, [s.demo.member1.userId]);
});

t.test('events - dont_block, last_event_id acknowledgement and pruning', async (t) => {
  const q = await register(maria, { event_types: ['message'] });
  t.same(await poll(q, { dontBlock: true }), [], 'dont_block returns at once when empty');
  await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'ack', content: 'one' });
  await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'ack', content: 'two' });
  await new Promise((r) => setTimeout(r, 200));
  const first = await maria.ok('GET', '/events', { queue_id: q.queueId, last_event_id: -1, dont_block: true });
  t.same(first.events.map((e: any) => e.id), [0, 1]);
  t.equal(first.queue_id, q.queueId);
  const again = await maria.ok('GET', '/events', { queue_id: q.queueId, last_event_id: 0, dont_block: true });
  t.same(again.events.map((e: any) => e.id), [1], 'events at or below last_event_id are dropped');
  await maria.ok('GET', '/events', { queue_id: q.queueId, last_event_id: 1, dont_block: true });
  const old = await maria.get('/events', { queue_id: q.queueId, last_event_id: 0, dont_block: true });
  t.equal(old.status, 400);
  t.match(old.body.msg, /already been pruned/);
});

t.test('events - a newer poll ends the waiting one; heartbeats arrive while waiting', async (t) => {
  const q = await register(maria, { event_types: ['message'] });
  const firstPoll = maria.ok('GET', '/events', { queue_id: q.queueId, last_event_id: -1 });
  await new Promise((r) => setTimeout(r, 200));
  const secondPoll = maria.ok('GET', '/events', { queue_id: q.queueId, last_event_id: -1 }, { signal: AbortSignal.timeout(15_000) });
  const ended = await firstPoll;
  t.same(ended.events, [], 'the older poll returns empty');
  const hb = await secondPoll;
  t.equal(hb.events[0].type, 'heartbeat', 'a heartbeat ends a quiet poll, whatever the event_types');
});

t.test('events - BAD_EVENT_QUEUE_ID for unknown, foreign, deleted and idle queues', async (t) => {
  const unknown = await maria.get('/events', { queue_id: 'no-such-queue', last_event_id: -1 });
  t.equal(unknown.status, 400);
  t.equal(unknown.body.code, 'BAD_EVENT_QUEUE_ID');
  t.equal(unknown.body.queue_id, 'no-such-queue');
  t.equal(unknown.body.msg, 'Bad event queue ID: no-such-queue');
  // The released zulip-terminal recognizes the error only by Zulip's pre-2022 text (gateway/routes/events.ts).
  const old = await maria.get('/events', { queue_id: 'no-such-queue', last_event_id: -1 }, { headers: { 'user-agent': 'ZulipTerminal/0.7.0 Linux-6.1 (Debian GNU/Linux; 12)' } });
  t.same([old.status, old.body.code, old.body.queue_id, old.body.msg], [400, 'BAD_EVENT_QUEUE_ID', 'no-such-queue', 'Bad event queue id: no-such-queue'], 'zulip-terminal gets the text it recognizes');
  const q = await register(maria);
  const foreign = await mateo.get('/events', { queue_id: q.queueId, last_event_id: -1, dont_block: true });
  t.equal(foreign.body.code, 'BAD_EVENT_QUEUE_ID', "another user's queue is unknown to you");
  await maria.ok('DELETE', '/events', { queue_id: q.queueId });
  const deleted = await maria.get('/events', { queue_id: q.queueId, last_event_id: -1, dont_block: true });
  t.equal(deleted.body.code, 'BAD_EVENT_QUEUE_ID');
  t.equal((await maria.delete('/events', { queue_id: q.queueId })).body.code, 'BAD_EVENT_QUEUE_ID');
  const idle = await register(maria, { idle_queue_timeout: 1 });
  t.equal(idle.snapshot.idle_queue_timeout_secs, 1);
  await new Promise((r) => setTimeout(r, 2500));
  const gone = await maria.get('/events', { queue_id: idle.queueId, last_event_id: -1, dont_block: true });
  t.equal(gone.body.code, 'BAD_EVENT_QUEUE_ID', 'discarded after idle_queue_timeout_secs');
});
