// Scheduled messages (FL 179): create, list, edit, delete with their errors,
// events and register key; delivery at their time as a message with a new
// ID, through the durable timers, also when the time passed while the server
// was down.
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { serverFor, type TestServer } from './helpers/server.ts';

let s: TestServer = await serverFor(t);
const as = (k: keyof TestServer['demo']) => s.api.as(s.demo[k]);
const now = () => Math.floor(Date.now() / 1000);

async function channelFor(api: Api, ...userIds: number[]): Promise<{ name: string; id: number }> {
  const name = uniq('sched');
  await api.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], ...(userIds.length ? { principals: userIds } : {}) });
  return { name, id: (await api.ok('GET', '/get_stream_id', { stream: name })).stream_id };
}

async function history(api: Api, channel: string) {
  return (await api.ok('GET', '/messages', { anchor: 'newest', num_before: 100, num_after: 0, narrow: [['stream', channel]], apply_markdown: false })).messages;
}

t.test('scheduled messages - errors: unknown channel, bad user, past time, wrong recipients', async (t) => {
  const maria = as('member1');
  const future = now() + 3600;
  let r = await maria.post('/scheduled_messages', { type: 'stream', to: 999_999, topic: 't', content: 'x', scheduled_delivery_timestamp: future });
  t.equal(r.status, 400);
  t.same([r.body.code, r.body.stream_id], ['STREAM_DOES_NOT_EXIST', 999_999], 'with the stream_id asked for');
  r = await maria.post('/scheduled_messages', { type: 'direct', to: [999_999], content: 'x', scheduled_delivery_timestamp: future });
  t.same([r.status, r.body.code], [400, 'BAD_REQUEST'], 'an unknown user ID');
  r = await maria.post('/scheduled_messages', { type: 'stream', to: 1, topic: 't', content: 'x', scheduled_delivery_timestamp: now() - 10 });
  t.same([r.status, r.body.code, r.body.msg], [400, 'BAD_REQUEST', 'Scheduled delivery time must be in the future.']);
  r = await maria.post('/scheduled_messages', { type: 'stream', to: 1, topic: 't', content: '', scheduled_delivery_timestamp: future });
  t.same([r.status, r.body.code], [400, 'BAD_REQUEST'], 'an empty message');
  r = await maria.post('/scheduled_messages', { type: 'stream', to: 1, topic: 't', content: 'x' });
  t.same([r.status, r.body.var_name], [400, 'scheduled_delivery_timestamp'], 'the time is required');
  r = await maria.call('PATCH', '/scheduled_messages/999999', { content: 'x' });
  t.same([r.status, r.body.msg], [400, 'Scheduled message does not exist']);
  r = await maria.delete('/scheduled_messages/999999');
  t.same([r.status, r.body.msg], [400, 'Scheduled message does not exist']);
  t.equal((await s.api.post('/scheduled_messages', { type: 'stream', to: 1, topic: 't', content: 'x', scheduled_delivery_timestamp: future })).status, 401, 'no credentials');
});

t.test("scheduled messages - every role schedules its own; nobody sees, edits or deletes another's", async (t) => {
  for (const role of ['owner', 'admin', 'moderator', 'member1', 'guest', 'bot'] as const) {
    const api = as(role);
    const ch = await channelFor(as('owner'), s.demo[role].userId);
    const made = await api.post('/scheduled_messages', { type: 'stream', to: ch.id, topic: 't', content: `by ${role}`, scheduled_delivery_timestamp: now() + 3600 });
    t.equal(made.status, 200, `${role} may schedule to a channel they are in`);
    const id = made.body.scheduled_message_id;
    const mine = (await api.ok('GET', '/scheduled_messages')).scheduled_messages.map((m: any) => m.scheduled_message_id);
    t.ok(mine.includes(id), `${role} lists it`);
    const other = role === 'member1' ? as('member2') : as('member1');
    t.notOk((await other.ok('GET', '/scheduled_messages')).scheduled_messages.some((m: any) => m.scheduled_message_id === id), 'another user does not list it');
    t.equal((await other.call('PATCH', `/scheduled_messages/${id}`, { content: 'hijack' })).status, 400, 'nor edits it');
    t.equal((await other.delete(`/scheduled_messages/${id}`)).status, 400, 'nor deletes it');
    t.equal((await api.delete(`/scheduled_messages/${id}`)).status, 200, `${role} deletes it`);
  }
  const secret = uniq('secret');
  await as('owner').ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], invite_only: true });
  const subs = (await as('owner').ok('GET', '/users/me/subscriptions')).subscriptions;
  const sid = subs.find((x: any) => x.name === secret).stream_id;
  const r = await as('member1').post('/scheduled_messages', { type: 'stream', to: sid, topic: 't', content: 'x', scheduled_delivery_timestamp: now() + 3600 });
  t.equal(r.body.code, 'STREAM_DOES_NOT_EXIST', 'a private channel one is not in cannot be told from a missing one');
});

t.test('scheduled messages - events, and snapshot plus events equals a fresh register', async (t) => {
  const maria = as('member1');
  const ch = await channelFor(as('owner'), s.demo.member1.userId);
  const q = await register(maria, { fetch_event_types: ['scheduled_messages'] });
  const snap = structuredClone(q.snapshot);
  const a = await maria.ok('POST', '/scheduled_messages', { type: 'stream', to: ch.id, topic: 'later', content: 'first draft', scheduled_delivery_timestamp: now() + 3600 });
  const b = await maria.ok('POST', '/scheduled_messages', { type: 'direct', to: JSON.stringify([s.demo.member2.userId]), content: 'psst', scheduled_delivery_timestamp: now() + 1800 });
  await maria.ok('PATCH', `/scheduled_messages/${a.scheduled_message_id}`, { content: 'second draft', scheduled_delivery_timestamp: now() + 7200 });
  await maria.ok('DELETE', `/scheduled_messages/${b.scheduled_message_id}`);
  const seen: string[] = [];
  await waitFor(q, (e) => {
    seen.push(`${e.type}/${e.op}`);
    applyEvent(snap, e);
    return e.op === 'remove';
  });
  t.same(seen, ['scheduled_messages/add', 'scheduled_messages/add', 'scheduled_messages/update', 'scheduled_messages/remove']);
  const fresh = (await register(maria, { fetch_event_types: ['scheduled_messages'] })).snapshot;
  t.same(snap.scheduled_messages, fresh.scheduled_messages);
  t.same(
    fresh.scheduled_messages.filter((m: any) => m.scheduled_message_id === a.scheduled_message_id).map((m: any) => [m.content, m.type, m.to, m.topic]),
    [['second draft', 'stream', ch.id, 'later']],
  );
});

t.test('scheduled messages - sent at their time as a message with a new ID, once', async (t) => {
  const maria = as('member1');
  const ch = await channelFor(as('owner'), s.demo.member1.userId);
  const q = await register(maria, { event_types: ['message', 'scheduled_messages'] });
  const made = await maria.ok('POST', '/scheduled_messages', { type: 'stream', to: ch.id, topic: 'timed', content: 'on time', scheduled_delivery_timestamp: now() + 2 });
  const msg = await waitFor(q, (e) => e.type === 'message' && e.message.content === 'on time', 10_000);
  t.ok(Number.isInteger(msg.message.id), `sent as message ${msg.message.id} (it was scheduled message ${made.scheduled_message_id})`);
  t.ok(msg.message.timestamp >= now() - 5);
  await new Promise((r) => setTimeout(r, 1500));
  t.same((await history(maria, ch.name)).map((m: any) => m.content), ['on time'], 'exactly one message');
  t.notOk((await maria.ok('GET', '/scheduled_messages')).scheduled_messages.some((m: any) => m.scheduled_message_id === made.scheduled_message_id), 'no longer scheduled');
});

t.test('scheduled messages - a message that can no longer be sent is marked failed, not sent', async (t) => {
  const owner = as('owner');
  const ch = await channelFor(owner);
  const q = await register(owner, { event_types: ['scheduled_messages'] });
  const made = await owner.ok('POST', '/scheduled_messages', { type: 'stream', to: ch.id, topic: 't', content: 'doomed', scheduled_delivery_timestamp: now() + 2 });
  await owner.ok('DELETE', `/streams/${ch.id}`); // archived: nobody may post there
  const e = await waitFor(q, (x) => x.op === 'update' && x.scheduled_message.scheduled_message_id === made.scheduled_message_id, 10_000);
  t.equal(e.scheduled_message.failed, true, 'an update event says it failed');
  const listed = (await owner.ok('GET', '/scheduled_messages')).scheduled_messages.find((m: any) => m.scheduled_message_id === made.scheduled_message_id);
  t.equal(listed?.failed, true, 'it is listed as failed');
  const r = await owner.call('PATCH', `/scheduled_messages/${made.scheduled_message_id}`, { scheduled_delivery_timestamp: now() - 5 });
  t.same([r.status, r.body.code], [400, 'BAD_REQUEST'], `editing it checks the send again: ${r.body.msg}`);
  t.same((await history(owner, ch.name)).filter((m: any) => m.content === 'doomed'), [], 'nothing was sent');
});

t.test('scheduled messages - a time that passed while the server was down is delivered at start-up', { skip: s.dataDir ? false : 'restarts an embedded server' }, async (t) => {
  const maria = as('member1');
  const ch = await channelFor(as('owner'), s.demo.member1.userId);
  await maria.ok('POST', '/scheduled_messages', { type: 'stream', to: ch.id, topic: 'down', content: 'while you were out', scheduled_delivery_timestamp: now() + 2 });
  await s.stop();
  await new Promise((r) => setTimeout(r, 3000));
  s = await s.restart();
  t.teardown(() => s.stop());
  const deadline = Date.now() + 10_000;
  let got: any[] = [];
  while (Date.now() < deadline && !(got = await history(as('member1'), ch.name)).length) await new Promise((r) => setTimeout(r, 200));
  t.same(got.map((m: any) => m.content), ['while you were out'], 'sent once after the restart');
});
