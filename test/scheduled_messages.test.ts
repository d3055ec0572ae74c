// Scheduled messages (FL 179): create, list, edit, delete with their errors,
// events and register key; delivery at their time as a message with a new
// ID, through the durable timers, also when the time passed while the server
// was down. Message reminders (FL 381, 399, 415) are scheduled messages that
// Notification Bot delivers to their user: the same here, for every role.
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

/** A message in a new channel of the owner's with `userIds` subscribed: its ID, channel and topic. */
async function messageFor(content: string, ...userIds: number[]): Promise<{ id: number; channel: { name: string; id: number }; topic: string }> {
  const channel = await channelFor(as('owner'), ...userIds);
  const topic = uniq('remind');
  const { id } = await as('owner').ok('POST', '/messages', { type: 'stream', to: channel.name, topic, content });
  return { id, channel, topic };
}

t.test('reminders - every role reminds itself of a message it can read; nobody lists or deletes another\'s; errors (FL 381, 399, 415)', async (t) => {
  const roles = ['owner', 'admin', 'moderator', 'member1', 'guest', 'bot'] as const;
  const target = await messageFor('the plan', ...roles.map((r) => s.demo[r].userId));
  for (const role of roles) {
    const api = as(role);
    const made = await api.post('/reminders', { message_id: target.id, scheduled_delivery_timestamp: now() + 3600, note: `for ${role}` });
    t.equal(made.status, 200, `${role} sets a reminder`);
    const id = made.body.reminder_id;
    const mine = (await api.ok('GET', '/reminders')).reminders.find((r: any) => r.reminder_id === id);
    t.match(mine, { type: 'private', to: [s.demo[role].userId], reminder_target_message_id: target.id, failed: false }, `${role} lists it`);
    t.match(mine.content, `Note:\n > for ${role}`, 'with its note');
    t.notOk((await api.ok('GET', '/scheduled_messages')).scheduled_messages.some((m: any) => m.scheduled_message_id === id), 'it is no scheduled message');
    t.same([(await api.call('PATCH', `/scheduled_messages/${id}`, { content: 'x' })).body.msg], ['Scheduled message does not exist'], 'nor edited as one');
    const other = role === 'member1' ? as('member2') : as('member1');
    t.notOk((await other.ok('GET', '/reminders')).reminders.some((r: any) => r.reminder_id === id), 'another user does not list it');
    const stolen = await other.delete(`/reminders/${id}`);
    t.same([stolen.status, stolen.body.msg], [404, 'Reminder does not exist'], 'nor deletes it');
    t.equal((await api.delete(`/reminders/${id}`)).status, 200, `${role} deletes it`);
    t.equal((await api.delete(`/reminders/${id}`)).status, 404, 'once');
  }
  const maria = as('member1');
  let r = await maria.post('/reminders', { message_id: target.id, scheduled_delivery_timestamp: now() - 10 });
  t.same([r.status, r.body.msg], [400, 'Scheduled delivery time must be in the future.']);
  const hidden = uniq('hidden');
  await as('owner').ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: hidden }], invite_only: true });
  const secret = await as('owner').ok('POST', '/messages', { type: 'stream', to: hidden, topic: 't', content: 'not for members' });
  r = await maria.post('/reminders', { message_id: secret.id, scheduled_delivery_timestamp: now() + 3600 });
  t.same([r.status, r.body.msg], [400, 'Invalid message(s)'], 'a message of a channel one is not in');
  r = await maria.post('/reminders', { message_id: 999_999_999, scheduled_delivery_timestamp: now() + 3600 });
  t.same([r.status, r.body.msg], [400, 'Invalid message(s)'], 'a message that does not exist');
  const limit = (await maria.ok('POST', '/register', {})).max_reminder_note_length;
  t.equal(limit, 1000, 'max_reminder_note_length in the register (FL 415)');
  r = await maria.post('/reminders', { message_id: target.id, scheduled_delivery_timestamp: now() + 3600, note: 'n'.repeat(limit + 1) });
  t.same([r.status, r.body.msg], [400, `Maximum reminder note length: ${limit} characters`]);
  const longest = await maria.post('/reminders', { message_id: target.id, scheduled_delivery_timestamp: now() + 3600, note: `\n${'n'.repeat(limit)}  \n` });
  t.equal(longest.status, 200, 'the note is measured without its trailing space and leading blank lines');
  await maria.ok('DELETE', `/reminders/${longest.body.reminder_id}`);
  r = await maria.post('/reminders', { scheduled_delivery_timestamp: now() + 3600 });
  t.same([r.status, r.body.var_name], [400, 'message_id'], 'the message is required');
  t.equal((await s.api.post('/reminders', { message_id: target.id, scheduled_delivery_timestamp: now() + 3600 })).status, 401, 'no credentials');
  t.equal((await s.api.get('/reminders')).status, 401, 'no credentials');
});

t.test('reminders - events, and snapshot plus events equals a fresh register (FL 399)', async (t) => {
  const maria = as('member1');
  const target = await messageFor('remember me', s.demo.member1.userId);
  const q = await register(maria, { fetch_event_types: ['reminders'] });
  const snap = structuredClone(q.snapshot);
  const a = await maria.ok('POST', '/reminders', { message_id: target.id, scheduled_delivery_timestamp: now() + 7200 });
  const b = await maria.ok('POST', '/reminders', { message_id: target.id, scheduled_delivery_timestamp: now() + 3600, note: 'sooner' });
  await maria.ok('DELETE', `/reminders/${a.reminder_id}`);
  const seen: string[] = [];
  await waitFor(q, (e) => {
    seen.push(`${e.type}/${e.op}`);
    applyEvent(snap, e);
    return e.op === 'remove';
  });
  t.same(seen, ['reminders/add', 'reminders/add', 'reminders/remove']);
  const fresh = (await register(maria, { fetch_event_types: ['reminders'] })).snapshot;
  t.same(snap.reminders, fresh.reminders);
  t.same(fresh.reminders.filter((x: any) => x.reminder_id === a.reminder_id || x.reminder_id === b.reminder_id).map((x: any) => x.reminder_id), [b.reminder_id]);
  await maria.ok('DELETE', `/reminders/${b.reminder_id}`);
});

t.test('reminders - Notification Bot sends the reminder to its user at its time, once: the note, who said it where, the message quoted (FL 381, 415)', async (t) => {
  const maria = as('member1');
  const target = await messageFor('Lunch at **noon**', s.demo.member1.userId);
  const owner = await as('owner').ok('GET', '/users/me');
  const me = await maria.ok('GET', '/users/me');
  const q = await register(maria, { event_types: ['message', 'reminders'] });
  const made = await maria.ok('POST', '/reminders', { message_id: target.id, scheduled_delivery_timestamp: now() + 2, note: '\nbring forks  ' });
  const listed = (await maria.ok('GET', '/reminders')).reminders.find((r: any) => r.reminder_id === made.reminder_id);
  let gone: Record<string, any> | undefined;
  const e = await waitFor(q, (x) => ((gone ??= x.type === 'reminders' && x.op === 'remove' ? x : undefined), x.type === 'message' && x.message.sender_email === 'notification-bot@zulip.com' && x.message.content.includes(`@${target.id}**`)), 10_000);
  const m = e.message;
  t.equal(m.type, 'private', 'a direct message');
  t.same(m.display_recipient.map((r: any) => r.id).sort(), [m.sender_id, me.user_id].sort(), 'from Notification Bot to the user');
  t.notOk(e.flags.includes('read'), 'unread for the user');
  t.equal(m.content, listed.content, 'the content it was listed with');
  const url = /\[said\]\(([^)]*)\)/.exec(m.content)?.[1] ?? '';
  t.match(url, new RegExp(`/#narrow/channel/${target.channel.id}-.*/near/${target.id}$`), 'a link to the message');
  t.equal(
    m.content.replace(url, 'URL'),
    `You requested a reminder for the following message. Note:\n > bring forks\n\n@_**${owner.full_name}|${owner.user_id}** [said](URL) in #**${target.channel.name}>${target.topic}@${target.id}**:\n\`\`\`quote\nLunch at **noon**\n\`\`\``,
    "Zulip's form",
  );
  gone ??= await waitFor(q, (x) => x.type === 'reminders' && x.op === 'remove', 5000);
  t.same(gone, { id: gone.id, type: 'reminders', op: 'remove', reminder_id: made.reminder_id }, 'a remove event');
  await new Promise((r) => setTimeout(r, 1500));
  const dms = (await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 20, num_after: 0, narrow: [['dm', 'notification-bot@zulip.com']], apply_markdown: false })).messages;
  t.equal(dms.filter((x: any) => x.content === listed.content).length, 1, 'exactly one message');
  t.notOk((await maria.ok('GET', '/reminders')).reminders.some((r: any) => r.reminder_id === made.reminder_id), 'no longer listed');
});

t.test('scheduled messages - a time that passed while the server was down is delivered at start-up, a reminder too', { skip: s.dataDir ? false : 'restarts an embedded server' }, async (t) => {
  const maria = as('member1');
  const ch = await channelFor(as('owner'), s.demo.member1.userId);
  await maria.ok('POST', '/scheduled_messages', { type: 'stream', to: ch.id, topic: 'down', content: 'while you were out', scheduled_delivery_timestamp: now() + 2 });
  const target = await messageFor('the thing to remember', s.demo.member1.userId);
  await maria.ok('POST', '/reminders', { message_id: target.id, scheduled_delivery_timestamp: now() + 2, note: 'after the restart' });
  await s.stop();
  await new Promise((r) => setTimeout(r, 3000));
  s = await s.restart();
  t.teardown(() => s.stop());
  const deadline = Date.now() + 10_000;
  let got: any[] = [];
  while (Date.now() < deadline && !(got = await history(as('member1'), ch.name)).length) await new Promise((r) => setTimeout(r, 200));
  t.same(got.map((m: any) => m.content), ['while you were out'], 'sent once after the restart');
  const reminded = async () => (await as('member1').ok('GET', '/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [['dm', 'notification-bot@zulip.com']], apply_markdown: false })).messages.filter((m: any) => m.content.includes('after the restart') && m.content.includes(`@${target.id}**`));
  let reminders: any[] = [];
  while (Date.now() < deadline && !(reminders = await reminded()).length) await new Promise((r) => setTimeout(r, 200));
  await new Promise((r) => setTimeout(r, 1000));
  t.equal((await reminded()).length, 1, 'the reminder too, once');
});
