// The empty topic ("general chat") for clients with and without the
// empty_topic_name capability (Zulip FL 334): clients that do not declare it,
// and reads without allow_empty_topic_name, get realm_empty_topic_display_name
// wherever a channel topic is empty.
import t from 'tap';
import { type Params, uniq } from './helpers/api.ts';
import { catchUp, normalizeUnread, type Snap } from './helpers/apply.ts';
import { type Queue, register, waitFor } from './helpers/events.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const channel = uniq('generalchat');
// The channel allows the empty topic whatever the organization's default (topics_policy).
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [s.demo.owner.userId, s.demo.member1.userId], topics_policy: 'allow_empty_topic' });
const streamId = ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === channel).stream_id as number;
/** A register whose queue is deleted at once (only its snapshot is wanted). */
async function snapshotOf(params: Params): Promise<Record<string, any>> {
  const reg = await maria.ok('POST', '/register', params);
  await maria.ok('DELETE', '/events', { queue_id: reg.queue_id });
  return reg;
}
const NAME = (await snapshotOf({ fetch_event_types: ['realm'] })).realm_empty_topic_display_name as string;

const CAPS = { bulk_message_deletion: true, stream_typing_notifications: true, notification_settings_null: true };
const EVENTS = ['message', 'update_message_flags', 'update_message', 'delete_message', 'typing', 'user_topic'];
/** A queue of Maria's: with the capability (the empty topic is "") or without (it is the display name). */
async function queueOf(capable: boolean, extra: Params = {}): Promise<Queue> {
  return queued(await register(maria, { event_types: EVENTS, client_capabilities: { ...CAPS, empty_topic_name: capable }, ...extra }));
}
/** Deletes the queue when the tests end (a user may hold only so many). */
function queued(q: Queue): Queue {
  t.teardown(() => maria.call('DELETE', '/events', { queue_id: q.queueId }));
  return q;
}
const send = async (topic: string, content = 'hello'): Promise<number> => (await owner.ok('POST', '/messages', { type: 'stream', to: streamId, topic, content })).id;

t.test('empty topic - the display name is what the register says, and sending to it is sending to ""', async (t) => {
  t.equal(NAME, 'general chat');
  const reg = await snapshotOf({ fetch_event_types: ['realm'], client_capabilities: { empty_topic_name: true } });
  t.notOk((reg.ignored_parameters_unsupported ?? []).includes('client_capabilities.empty_topic_name'), 'the capability is honoured, not reported');
  const id = await send(NAME);
  const got = await maria.ok('GET', `/messages/${id}`, { allow_empty_topic_name: true });
  t.equal(got.message.subject, '');
});

t.test('empty topic - message, typing, user_topic, unread, edit and delete events follow the capability', async (t) => {
  const capable = await queueOf(true);
  const legacy = await queueOf(false);
  const both = async (pred: (e: Record<string, any>) => boolean) => [await waitFor(capable, pred), await waitFor(legacy, pred)];

  const id = await send('');
  const [m1, m2] = await both((e) => e.type === 'message' && e.message.id === id);
  t.equal(m1!.message.subject, '', 'capable client: the empty topic is ""');
  t.equal(m2!.message.subject, NAME, 'other clients: the display name');

  await owner.ok('POST', '/typing', { type: 'stream', op: 'start', stream_id: streamId, topic: '' });
  const [ty1, ty2] = await both((e) => e.type === 'typing' && e.stream_id === streamId);
  t.equal(ty1!.topic, '');
  t.equal(ty2!.topic, NAME);

  await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: '', visibility_policy: 3 });
  const [ut1, ut2] = await both((e) => e.type === 'user_topic' && e.stream_id === streamId);
  t.equal(ut1!.topic_name, '');
  t.equal(ut2!.topic_name, NAME);
  await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: '', visibility_policy: 0 });

  await maria.ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'read' });
  await maria.ok('POST', '/messages/flags', { messages: [id], op: 'remove', flag: 'read' });
  const [f1, f2] = await both((e) => e.type === 'update_message_flags' && e.op === 'remove');
  t.equal(f1!.message_details[id].topic, '');
  t.equal(f2!.message_details[id].topic, NAME);

  await owner.ok('PATCH', `/messages/${id}`, { topic: 'named', propagate_mode: 'change_one' });
  const [u1, u2] = await both((e) => e.type === 'update_message' && e.message_id === id);
  t.match(u1, { orig_subject: '', subject: 'named' });
  t.match(u2, { orig_subject: NAME, subject: 'named' });
  await owner.ok('PATCH', `/messages/${id}`, { topic: NAME, propagate_mode: 'change_one' });
  const [b1, b2] = await both((e) => e.type === 'update_message' && e.message_id === id);
  t.match(b1, { orig_subject: 'named', subject: '' }, 'moving to the display name moves to the empty topic');
  t.match(b2, { orig_subject: 'named', subject: NAME });

  await owner.ok('DELETE', `/messages/${id}`);
  const [d1, d2] = await both((e) => e.type === 'delete_message');
  t.equal(d1!.topic, '');
  t.equal(d2!.topic, NAME);

  // A client without bulk_message_deletion gets one event per message, named the same way.
  const single = queued(await register(maria, { event_types: ['delete_message'], client_capabilities: {} }));
  const other = await send('');
  await owner.ok('DELETE', `/messages/${other}`);
  t.match(await waitFor(single, (e) => e.type === 'delete_message'), { message_id: other, topic: NAME });
});

t.test('empty topic - register: unread_msgs and user_topics follow the capability', async (t) => {
  const id = await send('', 'unread for Maria');
  await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: '', visibility_policy: 3 });
  t.teardown(() => maria.ok('POST', '/user_topics', { stream_id: streamId, topic: '', visibility_policy: 0 }));
  const fetch = ['message', 'update_message_flags', 'user_topic'];
  const withCap = await snapshotOf({ fetch_event_types: fetch, client_capabilities: { empty_topic_name: true } });
  const without = await snapshotOf({ fetch_event_types: fetch });
  const entry = (reg: any) => reg.unread_msgs.streams.find((x: any) => x.stream_id === streamId && x.unread_message_ids.includes(id));
  t.equal(entry(withCap).topic, '');
  t.equal(entry(without).topic, NAME);
  t.match(withCap.user_topics.find((x: any) => x.stream_id === streamId), { topic_name: '', visibility_policy: 3 });
  t.match(without.user_topics.find((x: any) => x.stream_id === streamId), { topic_name: NAME, visibility_policy: 3 });
  await maria.ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'read' });
});

t.test('empty topic - reads: allow_empty_topic_name on GET /messages, a message, its history and topic history', async (t) => {
  const id = await send('');
  const page = (params: Params) => maria.ok('GET', '/messages', { anchor: id, num_before: 0, num_after: 0, ...params });
  t.equal((await page({})).messages[0].subject, NAME, 'default: the display name');
  t.equal((await page({ allow_empty_topic_name: false })).messages[0].subject, NAME);
  const allowed = await page({ allow_empty_topic_name: true });
  t.equal(allowed.messages[0].subject, '');
  t.equal(allowed.ignored_parameters_unsupported, undefined, 'the parameter is honoured, not reported');
  t.equal((await maria.ok('GET', `/messages/${id}`)).message.subject, NAME);
  t.equal((await maria.ok('GET', `/messages/${id}`, { allow_empty_topic_name: true })).message.subject, '');

  await owner.ok('PATCH', `/messages/${id}`, { topic: 'renamed', propagate_mode: 'change_one' });
  const history = (await maria.ok('GET', `/messages/${id}/history`)).message_history;
  t.match(history, [{ topic: NAME }, { topic: 'renamed', prev_topic: NAME }]);
  const raw = await maria.ok('GET', `/messages/${id}/history`, { allow_empty_topic_name: true });
  t.match(raw.message_history, [{ topic: '' }, { topic: 'renamed', prev_topic: '' }]);
  t.equal(raw.ignored_parameters_unsupported, undefined);

  await send('', 'keeps the empty topic in the channel');
  const names = async (params: Params) => ((await maria.ok('GET', `/users/me/${streamId}/topics`, params)).topics as any[]).map((x) => x.name);
  t.ok((await names({})).includes(NAME));
  t.notOk((await names({})).includes(''));
  t.ok((await names({ allow_empty_topic_name: true })).includes(''));
  t.notOk((await names({ allow_empty_topic_name: true })).includes(NAME));
});

t.test('empty topic - narrows: a topic operand naming the display name matches the empty topic', async (t) => {
  const id = await send('');
  const named = await send('not empty');
  for (const operand of [NAME, NAME.toUpperCase(), '']) {
    for (const allow of [false, true]) {
      const got = await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 50, num_after: 0, allow_empty_topic_name: allow, narrow: [{ operator: 'channel', operand: streamId }, { operator: 'topic', operand }] });
      const ids = got.messages.map((m: any) => m.id);
      t.ok(ids.includes(id) && !ids.includes(named), `topic:${JSON.stringify(operand)} (allow_empty_topic_name ${allow}) is the empty topic`);
      t.ok(got.messages.every((m: any) => m.subject === (allow ? '' : NAME)));
    }
  }
  const matches = await maria.ok('GET', '/messages/matches_narrow', { msg_ids: [id, named], narrow: [{ operator: 'topic', operand: NAME }] });
  t.same(Object.keys(matches.messages), [String(id)]);
  // An event queue narrowed to the display name gets the empty topic's messages.
  const q = queued(await register(maria, { event_types: ['message'], narrow: [['channel', String(streamId)], ['topic', NAME]] }));
  await send('elsewhere');
  const next = await send('');
  const e = await waitFor(q, (x) => x.type === 'message');
  t.equal(e.message.id, next, 'the queue skipped the other topic');
  t.equal(e.message.subject, NAME);
});

/** What the empty topic changes in a register: unread_msgs, user_topics and the newest message. */
const normalize = (snap: Snap) => ({
  unread: normalizeUnread(snap.unread_msgs),
  user_topics: [...snap.user_topics].sort((a: any, b: any) => a.stream_id - b.stream_id || a.topic_name.localeCompare(b.topic_name)),
  max_message_id: snap.max_message_id,
});

for (const capable of [true, false]) {
  t.test(`empty topic - snapshot + events == fresh register (${capable ? 'with' : 'without'} empty_topic_name)`, async (t) => {
    const fetch = { fetch_event_types: ['message', 'update_message_flags', 'user_topic', 'update_message', 'delete_message'] };
    const q = await queueOf(capable, fetch);
    const snap = structuredClone(q.snapshot) as Snap;
    const a = await send('');
    const b = await send('moved later');
    const c = await send('', 'deleted later');
    await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: '', visibility_policy: 2 });
    await maria.ok('POST', '/messages/flags', { messages: [a], op: 'add', flag: 'read' });
    await maria.ok('POST', '/messages/flags', { messages: [a], op: 'remove', flag: 'read' });
    await owner.ok('PATCH', `/messages/${b}`, { topic: '', propagate_mode: 'change_one' });
    await owner.ok('DELETE', `/messages/${c}`);
    const marker = await send('marker', 'the end');
    const seen = await catchUp(q, snap, (e) => e.type === 'message' && e.message.id === marker);
    t.ok(['message/', 'user_topic/', 'update_message_flags/remove', 'update_message/', 'delete_message/'].every((k) => seen.has(k)), `events seen: ${[...seen].join(', ')}`);
    const fresh = await snapshotOf({ event_types: EVENTS, client_capabilities: { ...CAPS, empty_topic_name: capable }, ...fetch });
    t.same(normalize(snap), normalize(fresh));
    const topics = normalize(fresh).unread.streams.filter((x: any) => x.stream_id === streamId).map((x: any) => x.topic);
    t.ok(topics.includes(capable ? '' : NAME), 'the empty topic is listed as the client expects');
    t.notOk(topics.includes(capable ? NAME : ''));
    await maria.ok('POST', '/user_topics', { stream_id: streamId, topic: '', visibility_policy: 0 });
    await maria.ok('POST', '/mark_stream_as_read', { stream_id: streamId });
  });
}
