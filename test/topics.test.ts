// Topics: GET /users/me/{stream_id}/topics and topic visibility (POST /user_topics).
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const channel = uniq('topics');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });
const streamIdOf = async (name: string) => ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === name).stream_id as number;
const streamId = await streamIdOf(channel);

t.test('topics - a channel\'s topics, newest first, grouped case-insensitively, for every role', async (t) => {
  const send = async (topic: string) => (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'x' })).id as number;
  await send('Alpha');
  const beta = await send('beta');
  const alpha = await send('ALPHA');
  for (const key of DEMO_KEYS) {
    const got = await s.api.as(s.demo[key]).ok('GET', `/users/me/${streamId}/topics`);
    t.same(got.topics, [{ name: 'ALPHA', max_id: alpha }, { name: 'beta', max_id: beta }], key);
  }
  t.equal((await s.api.get(`/users/me/${streamId}/topics`, {}, { creds: null })).status, 401);
  t.equal((await maria.get('/users/me/999999/topics')).body.msg, 'Invalid channel ID');
  // A private channel one is not in does not exist for one.
  const secret = uniq('secret');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], invite_only: true });
  const secretId = await streamIdOf(secret);
  t.same([(await maria.get(`/users/me/${secretId}/topics`)).status, (await maria.get(`/users/me/${secretId}/topics`)).body.msg], [400, 'Invalid channel ID']);
  // A guest cannot see a public channel it is not in.
  const open = uniq('open');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: open }] });
  t.equal((await s.api.as(s.demo.guest).get(`/users/me/${await streamIdOf(open)}/topics`)).body.msg, 'Invalid channel ID');
  t.same((await maria.ok('GET', `/users/me/${await streamIdOf(open)}/topics`)).topics, []);
});

t.test('topics - user_topics: mute, follow, inherit; events and snapshot plus events', async (t) => {
  const FETCH = { fetch_event_types: ['user_topic', 'muted_topics'] };
  const q = await register(maria, FETCH);
  const snap = structuredClone(q.snapshot);
  const [a, b] = [uniq('a'), uniq('b')];
  await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: a, visibility_policy: 1 });
  const e = await waitFor(q, (x) => x.type === 'user_topic');
  t.same([e.stream_id, e.topic_name, e.visibility_policy], [streamId, a, 1]);
  applyEvent(snap, e);
  applyEvent(snap, await waitFor(q, (x) => x.type === 'muted_topics'));
  await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: b, visibility_policy: 3 });
  await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: a.toUpperCase(), visibility_policy: 2 });
  await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: b, visibility_policy: 0 });
  let n = 0;
  await waitFor(q, (x) => {
    applyEvent(snap, x);
    if (x.type === 'user_topic') n++;
    return n === 3;
  });
  const fresh = (await register(maria, FETCH)).snapshot;
  const sort = (l: any[]) => [...l].sort((x, y) => `${x.stream_id}:${x.topic_name}`.localeCompare(`${y.stream_id}:${y.topic_name}`));
  t.same(sort(snap.user_topics), sort(fresh.user_topics));
  t.same(snap.muted_topics, fresh.muted_topics);
  t.same(fresh.user_topics.find((x: any) => x.topic_name === a)?.visibility_policy, 2, 'the name first used is kept');
  t.notOk(fresh.user_topics.some((x: any) => x.topic_name === b));
});

t.test('topics - user_topics errors and roles', async (t) => {
  const topic = uniq('t');
  for (const key of DEMO_KEYS) await s.api.as(s.demo[key]).ok('POST', '/user_topics', { stream_id: streamId, topic, visibility_policy: 3 });
  t.equal((await s.api.post('/user_topics', { stream_id: streamId, topic, visibility_policy: 1 }, { creds: null })).status, 401);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ stream_id: 999_999, topic, visibility_policy: 1 }, 'Invalid channel ID'],
    [{ stream_id: 999_999, topic, visibility_policy: 0 }, 'Nothing to be done'],
    [{ stream_id: streamId, topic: uniq('never'), visibility_policy: 0 }, 'Nothing to be done'],
    [{ stream_id: streamId, topic: 'x'.repeat(61), visibility_policy: 1 }, 'Topic too long (limit: 60 characters)'],
  ];
  for (const [params, msg] of cases) {
    const r = await maria.post('/user_topics', params as any);
    t.same([r.status, r.body.code, r.body.msg], [400, 'BAD_REQUEST', msg]);
  }
  t.equal((await maria.post('/user_topics', { stream_id: streamId, topic, visibility_policy: 7 })).body.var_name, 'visibility_policy');
});

t.test('topics - the official Python client lists topics and mutes one', async (t) => {
  const topic = uniq('py');
  await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'x' });
  const out = runPython(s.urls[0]!, s.demo.member2, `
topics = client.get_stream_topics(${streamId})
muted = client.call_endpoint("user_topics", method="POST", request={"stream_id": ${streamId}, "topic": ${JSON.stringify(topic)}, "visibility_policy": 1})
print(json.dumps({"names": [x["name"] for x in topics["topics"]], "muted": muted["result"]}))`) as any;
  t.ok(out.names.includes(topic));
  t.equal(out.muted, 'success');
});

t.test('topics - is:followed and is:muted narrows follow the user\'s topic visibility', async (t) => {
  const [followed, muted, plain] = [uniq('f'), uniq('m'), uniq('p')];
  const ids: Record<string, number> = {};
  for (const topic of [followed, muted, plain]) ids[topic] = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'x' })).id;
  await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: followed, visibility_policy: 3 });
  await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: muted, visibility_policy: 1 });
  const get = async (narrow: unknown[]) => ((await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 200, num_after: 0, narrow: [{ operator: 'channel', operand: channel }, ...narrow] })).messages as any[]).map((m) => m.id);
  const f = await get([{ operator: 'is', operand: 'followed' }]);
  t.ok(f.includes(ids[followed]) && !f.includes(ids[muted]) && !f.includes(ids[plain]));
  const m = await get([{ operator: 'is', operand: 'muted' }]);
  t.ok(m.includes(ids[muted]) && !m.includes(ids[followed]) && !m.includes(ids[plain]));
  const notMuted = await get([{ operator: 'is', operand: 'muted', negated: true }]);
  t.ok(notMuted.includes(ids[plain]) && !notMuted.includes(ids[muted]));
});

t.test('topics - sending starts following: automatic_new_visibility_policy, user_topic events, mentions', async (t) => {
  const topic = uniq('auto');
  const q = await register(maria, { event_types: ['user_topic'] });
  const mentioned = await register(s.api.as(s.demo.member2), { event_types: ['user_topic'] });
  // Maria starts the topic (policy "topics the user starts"): she follows it, and Mateo, mentioned, too.
  const first = await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'hi @**Mateo Member**' });
  t.equal(first.automatic_new_visibility_policy, 3);
  const e = await waitFor(q, (x) => x.type === 'user_topic' && x.topic_name === topic);
  t.same([e.stream_id, e.visibility_policy], [streamId, 3]);
  t.equal((await waitFor(mentioned, (x) => x.type === 'user_topic' && x.topic_name === topic)).visibility_policy, 3);
  const again = await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'again' });
  t.notOk('automatic_new_visibility_policy' in again, 'already followed');
  // Someone joining an existing topic does not follow it (they did not start it).
  const joined = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'me too' });
  t.notOk('automatic_new_visibility_policy' in joined);
  const mine = (await maria.ok('POST', '/register', { fetch_event_types: ['user_topic'] })).user_topics.find((x: any) => x.topic_name === topic);
  t.equal(mine.visibility_policy, 3);
  // Direct messages have no topics.
  t.notOk('automatic_new_visibility_policy' in (await maria.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: 'x' })));
});

t.test('topics - the topic list follows moves and deletes', async (t) => {
  const [a, b] = [uniq('a'), uniq('b')];
  const x = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: a, content: 'x' })).id;
  const y = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: a, content: 'y' })).id;
  const names = async () => ((await maria.ok('GET', `/users/me/${streamId}/topics`)).topics as any[]).map((z) => z.name);
  t.ok((await names()).includes(a));
  await owner.ok('PATCH', `/messages/${x}`, { topic: b, propagate_mode: 'change_all' });
  t.ok((await names()).includes(b) && !(await names()).includes(a), 'moved');
  await owner.ok('DELETE', `/messages/${x}`);
  t.ok((await names()).includes(b), 'one message left');
  await owner.ok('DELETE', `/messages/${y}`);
  t.ok((await names()).includes(b), "Notification Bot's notice of the move is left");
  const notice = await owner.ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'channel', operand: channel }, { operator: 'topic', operand: b }] });
  t.same(notice.messages.map((m: any) => m.sender_email), ['notification-bot@zulip.com']);
  await owner.ok('DELETE', `/messages/${notice.messages[0].id}`);
  t.notOk((await names()).includes(b), 'gone with its last message');
});

t.test('topics - unread_msgs count leaves out muted topics, the lists keep them', async (t) => {
  const mateo = s.api.as(s.demo.member2);
  await mateo.ok('POST', '/mark_all_as_read');
  const [loud, quiet] = [uniq('loud'), uniq('quiet')];
  await mateo.ok('POST', '/user_topics', { stream_id: streamId, topic: quiet, visibility_policy: 1 });
  const a = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: loud, content: 'x' })).id;
  const b = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: quiet, content: 'y' })).id;
  const u = (await mateo.ok('POST', '/register', { fetch_event_types: ['message', 'update_message_flags'] })).unread_msgs;
  t.equal(u.count, 1);
  t.same(u.streams.map((x: any) => x.unread_message_ids).flat().sort(), [a, b].sort());
});
