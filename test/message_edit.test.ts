// Editing, moving and deleting messages, with edit history and events.
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { applyEvent, normalizeUnread } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);
const channel = uniq('edits');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });
const streamIdOf = async (name: string) => ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === name).stream_id as number;
const streamId = await streamIdOf(channel);
const send = async (api: Api, topic: string, content = 'hi') => (await api.ok('POST', '/messages', { type: 'stream', to: channel, topic, content })).id as number;
const get = async (api: Api, id: number) => (await api.ok('GET', `/messages/${id}`)).message;
/** Zulip's silent mention of a user, as Notification Bot's notices name who moved messages. */
const silent = async (api: Api) => {
  const u = await api.ok('GET', '/users/me');
  return `@_**${u.full_name}|${u.user_id}**`;
};

t.test('message edit - the sender edits content; history, event and every other role refused', async (t) => {
  const id = await send(maria, uniq('t'), 'first *draft*');
  const q = await register(mateo, { event_types: ['update_message'] });
  await maria.ok('PATCH', `/messages/${id}`, { content: 'second **draft**' });
  const m = await get(mateo, id);
  t.equal(m.content, '<p>second <strong>draft</strong></p>');
  t.ok(m.last_edit_timestamp > 0);
  t.equal(m.edit_history[0].prev_content, 'first *draft*');
  const e = await waitFor(q, (x) => x.type === 'update_message');
  t.same([e.message_id, e.message_ids, e.orig_content, e.content, e.rendered_content, e.user_id, e.stream_id], [id, [id], 'first *draft*', 'second **draft**', '<p>second <strong>draft</strong></p>', s.demo.member1.userId, streamId]);
  for (const key of DEMO_KEYS.filter((k) => k !== 'member1')) {
    const r = await s.api.as(s.demo[key]).call('PATCH', `/messages/${id}`, { content: 'hijack' });
    t.equal(r.status, 400, key);
    t.equal(r.body.msg, "You don't have permission to edit this message", key);
  }
  t.equal((await s.api.call('PATCH', `/messages/${id}`, { content: 'x' }, { creds: null })).status, 401);
  const history = (await mateo.ok('GET', `/messages/${id}/history`)).message_history;
  t.same(history.map((h: any) => h.content), ['first *draft*', 'second **draft**']);
  t.equal(history[1].prev_content, 'first *draft*');
  t.equal((await maria.call('PATCH', `/messages/${id}`, {})).body.msg, 'Nothing to change');
});

t.test('message edit - topic moves with propagate_mode one, later and all', async (t) => {
  const topic = uniq('t');
  const ids = [await send(owner, topic), await send(maria, topic), await send(owner, topic)];
  const q = await register(mateo, { event_types: ['update_message'] });
  const t1 = uniq('renamed');
  await maria.ok('PATCH', `/messages/${ids[1]}`, { topic: t1, propagate_mode: 'change_later' });
  t.same(await Promise.all(ids.map(async (id) => (await get(mateo, id)).subject)), [topic, t1, t1]);
  const e = await waitFor(q, (x) => x.type === 'update_message');
  t.same([e.propagate_mode, e.orig_subject, e.subject, e.message_ids], ['change_later', topic, t1, [ids[1], ids[2]]]);
  const t2 = uniq('all');
  await mateo.ok('PATCH', `/messages/${ids[2]}`, { topic: t2, propagate_mode: 'change_all' });
  t.same((await get(mateo, ids[1]!)).subject, t2);
  t.same((await get(mateo, ids[0]!)).subject, topic, 'another topic by then');
  const one = uniq('one');
  await owner.ok('PATCH', `/messages/${ids[0]}`, { topic: one });
  const got = await mateo.ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, apply_markdown: false, narrow: [{ operator: 'channel', operand: channel }, { operator: 'topic', operand: one }] });
  // The moved message, then Notification Bot's notice in the new thread (send_notification_to_new_thread defaults to true).
  t.same(got.messages.map((m: any) => m.id).slice(0, 1), [ids[0]]);
  t.same(got.messages.slice(1).map((m: any) => [m.sender_email, m.content]), [['notification-bot@zulip.com', `A message was moved here from #**${channel}>${topic}** by ${await silent(owner)}.`]]);
  t.ok(got.messages[0].last_moved_timestamp > 0);
  const dm = (await maria.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: 'x' })).id;
  t.equal((await maria.call('PATCH', `/messages/${dm}`, { topic: 'no' })).body.msg, 'Direct messages cannot have topics.');
  t.equal((await maria.call('PATCH', `/messages/${ids[1]}`, { topic: 'x'.repeat(61) })).status, 400);
  t.equal((await maria.call('PATCH', `/messages/${ids[1]}`, { topic: 'y', propagate_mode: 'sideways' })).body.var_name, 'propagate_mode');
  // A guest may rename topics (can_move_messages_between_topics_group is everyone by default).
  await s.api.as(s.demo.guest).ok('PATCH', `/messages/${ids[1]}`, { topic: uniq('guest') });
});

t.test('message edit - moving to another channel moves the rows; members may, guests may not', async (t) => {
  const dest = uniq('dest');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: dest }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });
  const destId = await streamIdOf(dest);
  const topic = uniq('t');
  const ids = [await send(owner, topic), await send(owner, topic)];
  await maria.ok('POST', '/messages/flags', { messages: [ids[0]], op: 'add', flag: 'starred' });
  t.equal((await s.api.as(s.demo.guest).call('PATCH', `/messages/${ids[0]}`, { stream_id: destId })).body.msg, "You don't have permission to move this message");
  t.equal((await maria.call('PATCH', `/messages/${ids[0]}`, { stream_id: destId, content: 'x' })).body.msg, 'Cannot change message content while changing channel');
  t.equal((await maria.call('PATCH', `/messages/${ids[0]}`, { stream_id: 999_999 })).body.msg, 'Invalid channel ID');
  await maria.ok('PATCH', `/messages/${ids[0]}`, { stream_id: destId, propagate_mode: 'change_all' });
  const moved = await mateo.ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'channel', operand: dest }, { operator: 'topic', operand: topic }] });
  t.same(moved.messages.slice(0, 2).map((m: any) => [m.id, m.stream_id, m.display_recipient]), ids.map((id) => [id, destId, dest]));
  t.same(moved.messages.slice(2).map((m: any) => m.sender_email), ['notification-bot@zulip.com'], 'the notice in the new thread');
  const left = await mateo.ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'channel', operand: channel }, { operator: 'topic', operand: topic }] });
  t.same(left.messages, []);
  t.same((await get(maria, ids[0]!)).flags, ['starred'], 'flags follow the message');
  t.same((await get(maria, ids[0]!)).edit_history[0], { user_id: s.demo.member1.userId, timestamp: (await get(maria, ids[0]!)).edit_history[0].timestamp, prev_stream: streamId, stream: destId });
});

t.test('message delete - sender, administrators and the channel permission; events for both capabilities', async (t) => {
  const topic = uniq('t');
  const q = await register(mateo, { event_types: ['delete_message'], client_capabilities: { bulk_message_deletion: true } });
  const legacy = await register(mateo, { event_types: ['delete_message'] });
  const own = await send(maria, topic);
  await maria.ok('DELETE', `/messages/${own}`);
  t.equal((await mateo.call('GET', `/messages/${own}`)).body.msg, 'Invalid message(s)');
  t.same(await waitFor(q, (e) => e.type === 'delete_message'), { type: 'delete_message', message_type: 'stream', message_ids: [own], stream_id: streamId, topic, id: 0 });
  t.same(await waitFor(legacy, (e) => e.type === 'delete_message'), { type: 'delete_message', message_type: 'stream', message_id: own, stream_id: streamId, topic, id: 0 });
  // Someone else's message: only administrators (can_delete_any_message_group) may.
  const expected: Record<string, boolean> = { owner: true, admin: true, moderator: false, member1: false, member2: false, guest: false, bot: false };
  for (const key of DEMO_KEYS) {
    const id = await send(key === 'member2' ? maria : mateo, topic);
    const r = await s.api.as(s.demo[key]).call('DELETE', `/messages/${id}`);
    t.equal(r.status === 200, expected[key], key);
    if (!expected[key]) t.equal(r.body.msg, "You don't have permission to delete this message", key);
  }
  // Everyone may delete their own (can_delete_own_message_group is everyone by default).
  for (const key of DEMO_KEYS) await s.api.as(s.demo[key]).ok('DELETE', `/messages/${await send(s.api.as(s.demo[key]), topic)}`);
  t.equal((await maria.call('DELETE', '/messages/999999999')).body.msg, 'Invalid message(s)');
  t.equal((await s.api.call('DELETE', `/messages/${own}`, {}, { creds: null })).status, 401);
});

t.test("message delete - a new channel leaves deleting one's own messages to the organization's can_delete_own_message_group", async (t) => {
  const name = uniq('own-deletes');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });
  const id = await streamIdOf(name);
  t.equal((await owner.ok('GET', `/streams/${id}`)).stream.can_delete_own_message_group, 8, "role:nobody, Zulip's default");
  const before = (await owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_delete_own_message_group;
  await owner.ok('PATCH', '/realm', { can_delete_own_message_group: { new: 6 } });
  t.teardown(() => owner.ok('PATCH', '/realm', { can_delete_own_message_group: { new: before } }));
  const expected: Record<string, boolean> = { owner: true, admin: true, moderator: false, member1: false, member2: false, guest: false, bot: false };
  for (const key of DEMO_KEYS) {
    const api = s.api.as(s.demo[key]);
    const mid = (await api.ok('POST', '/messages', { type: 'stream', to: name, topic: 'x', content: 'mine' })).id as number;
    const r = await api.call('DELETE', `/messages/${mid}`);
    t.equal(r.status === 200, expected[key], `${key} with the organization's setting at administrators`);
  }
  // The channel may grant it on its own.
  await owner.ok('PATCH', `/streams/${id}`, { can_delete_own_message_group: { new: 3 } });
  const mid = (await maria.ok('POST', '/messages', { type: 'stream', to: name, topic: 'x', content: 'mine' })).id as number;
  await maria.ok('DELETE', `/messages/${mid}`);
});

t.test('message delete - the deleter gets the delete_message event even when not subscribed (FL 274)', async (t) => {
  const name = uniq('not-admins');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.member1.userId, s.demo.member2.userId] });
  await owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [name] });
  const { id } = await maria.ok('POST', '/messages', { type: 'stream', to: name, topic: 'x', content: 'to delete' });
  const admin = s.api.as(s.demo.admin);
  const q = await register(admin, { event_types: ['delete_message'], client_capabilities: { bulk_message_deletion: true } });
  const bystander = await register(s.api.as(s.demo.moderator), { event_types: ['delete_message', 'message'] });
  t.notOk((await admin.ok('GET', '/users/me/subscriptions')).subscriptions.some((x: any) => x.name === name), 'the administrator is not subscribed');
  await admin.ok('DELETE', `/messages/${id}`);
  t.same((await waitFor(q, (e) => e.type === 'delete_message')).message_ids, [id]);
  // A user neither subscribed nor deleting hears nothing of it: the next event they get is a later message.
  await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'after', content: 'later' });
  t.equal((await waitFor(bystander, () => true)).type, 'message', 'no delete_message to an unsubscribed bystander');
});

t.test('message edit - snapshot plus update and delete events equals a fresh register', async (t) => {
  await mateo.ok('POST', '/mark_all_as_read');
  const FETCH = { fetch_event_types: ['message', 'update_message_flags', 'realm_user'] };
  const q = await register(mateo, FETCH);
  const snap = structuredClone(q.snapshot);
  const topic = uniq('t');
  const ids = [await send(owner, topic, '@**Mateo Member** hi'), await send(owner, topic), await send(owner, topic)];
  await owner.ok('PATCH', `/messages/${ids[0]}`, { topic: uniq('moved'), propagate_mode: 'change_all' });
  await owner.ok('DELETE', `/messages/${ids[1]}`);
  await owner.ok('PATCH', `/messages/${ids[2]}`, { content: 'edited' });
  let n = 0;
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    if (e.type === 'update_message' || e.type === 'delete_message') n++;
    return n === 3;
  });
  t.same(normalizeUnread(snap.unread_msgs), normalizeUnread((await register(mateo, FETCH)).snapshot.unread_msgs));
});

t.test('message edit - each recipient gets their own flags in update_message', async (t) => {
  const name = uniq('flags');
  const early = [s.demo.owner, s.demo.member1, s.demo.member2, s.demo.moderator].map((u) => u.userId);
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: early });
  const id = (await maria.ok('POST', '/messages', { type: 'stream', to: name, topic: 'x', content: 'hi', read_by_sender: true })).id as number;
  await mateo.ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'read' });
  await mateo.ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'starred' });
  const mona = s.api.as(s.demo.moderator);
  await mona.ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'starred' });
  // Adam subscribes after the message was sent: it is historical for him.
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.admin.userId] });
  const adam = s.api.as(s.demo.admin);
  const who = { maria, mateo, mona, olivia: owner, adam };
  const queues = Object.fromEntries(await Promise.all(Object.entries(who).map(async ([k, api]) => [k, await register(api, { event_types: ['update_message'] })] as const)));
  await maria.ok('PATCH', `/messages/${id}`, { content: 'hi @**Olivia Owner** and @**Mona Moderator**' });
  const flags: Record<string, string[]> = {};
  for (const [k, q] of Object.entries(queues)) flags[k] = (await waitFor(q, (e) => e.type === 'update_message' && e.message_id === id)).flags;
  t.same(flags, {
    maria: ['read'], // the sender's own message (read_by_sender)
    mateo: ['read', 'starred'], // what he set himself
    mona: ['starred', 'mentioned'], // starred while unread; the edit mentions her and leaves it unread
    olivia: ['mentioned'], // newly mentioned: unread, as in Zulip
    adam: ['read', 'historical'], // subscribed after the message was sent
  });
  // The event says what a fetch of the message says afterwards.
  for (const [k, api] of Object.entries(who)) t.same((await get(api, id)).flags, flags[k], `GET /messages/${id} as ${k}`);
  // A move keeps each recipient's flags (Mona is no longer mentioned once the mention goes).
  await maria.ok('PATCH', `/messages/${id}`, { content: 'hi @**Olivia Owner**' });
  t.same((await waitFor(queues.mona!, (e) => e.type === 'update_message')).flags, ['starred']);
  t.same((await get(mona, id)).flags, ['starred']);
  await mateo.ok('PATCH', `/messages/${id}`, { topic: uniq('moved') });
  t.same((await waitFor(queues.mateo!, (e) => e.type === 'update_message' && e.subject !== undefined)).flags, ['read', 'starred']);
  t.same((await waitFor(queues.olivia!, (e) => e.type === 'update_message' && e.subject !== undefined)).flags, ['mentioned']);
});

t.test('message edit - snapshot plus an edit that mentions an unread reader equals a fresh register', async (t) => {
  const name = uniq('mention');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.member1.userId, s.demo.moderator.userId] });
  const mona = s.api.as(s.demo.moderator);
  const ids = [(await maria.ok('POST', '/messages', { type: 'stream', to: name, topic: 'x', content: 'one' })).id, (await maria.ok('POST', '/messages', { type: 'stream', to: name, topic: 'x', content: '@**Mona Moderator** two' })).id] as number[];
  // A flag row of her own for the first (starred while unread): the mention must still show.
  await mona.ok('POST', '/messages/flags', { messages: [ids[0]], op: 'add', flag: 'starred' });
  const FETCH = { fetch_event_types: ['message', 'update_message_flags'] };
  const q = await register(mona, FETCH);
  const snap = structuredClone(q.snapshot);
  t.ok(snap.unread_msgs.mentions.includes(ids[1]));
  await maria.ok('PATCH', `/messages/${ids[0]}`, { content: 'one, @**Mona Moderator**' });
  await maria.ok('PATCH', `/messages/${ids[1]}`, { content: 'two' });
  let n = 0;
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    return e.type === 'update_message' && ++n === 2;
  });
  const fresh = (await register(mona, FETCH)).snapshot;
  t.same(normalizeUnread(snap.unread_msgs), normalizeUnread(fresh.unread_msgs));
  t.ok(fresh.unread_msgs.mentions.includes(ids[0]), 'the mention added by the edit is unread');
  t.notOk(fresh.unread_msgs.mentions.includes(ids[1]), 'the removed mention is gone');
});

t.test("message delete - deleting a channel's first message makes the next its first (stream update event)", async (t) => {
  const name = uniq('first');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.owner.userId, s.demo.member1.userId] });
  const id = ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === name).stream_id as number;
  const FETCH = { fetch_event_types: ['subscription', 'stream'], event_types: ['subscription', 'stream', 'delete_message'] };
  const q = await register(maria, FETCH);
  const snap = structuredClone(q.snapshot);
  const [a, b] = [(await owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'x', content: 'one' })).id, (await owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'x', content: 'two' })).id];
  t.equal((await owner.ok('GET', `/streams/${id}`)).stream.first_message_id, a);
  await owner.ok('DELETE', `/messages/${a}`);
  const e = await waitFor(q, (e) => {
    applyEvent(snap, e);
    return e.type === 'stream' && e.property === 'first_message_id';
  });
  t.same([e.stream_id, e.value], [id, b], 'the event names the new first message');
  t.equal((await owner.ok('GET', `/streams/${id}`)).stream.first_message_id, b);
  await owner.ok('DELETE', `/messages/${b}`);
  t.equal((await owner.ok('GET', `/streams/${id}`)).stream.first_message_id, null, 'none once the channel is empty');
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    return e.type === 'stream' && e.property === 'first_message_id' && e.value === null;
  });
  const fresh = (await register(maria, FETCH)).snapshot;
  const pick = (x: any) => (x.subscriptions as any[]).find((c) => c.stream_id === id);
  t.same(pick(snap), pick(fresh), 'snapshot plus events equals a fresh register');
});

t.test('message edit - Notification Bot notices of moves: send_notification_to_old_thread and _new_thread (FL 9, 152)', async (t) => {
  const dest = uniq('dest');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: dest }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });
  const who = await silent(maria);
  const thread = async (name: string, topic: string) =>
    ((await mateo.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, apply_markdown: false, narrow: [{ operator: 'channel', operand: name }, { operator: 'topic', operand: topic }] })).messages as any[])
      .filter((m) => m.sender_email === 'notification-bot@zulip.com')
      .map((m) => m.content);
  // Defaults (FL 152): a notice in the new thread only, also for a move within the channel.
  const [a, b] = [uniq('a'), uniq('b')];
  const ids = [await send(owner, a), await send(owner, a), await send(owner, a)];
  const r = await maria.ok('PATCH', `/messages/${ids[1]}`, { topic: b, propagate_mode: 'change_later' });
  t.notOk(r.ignored_parameters_unsupported, 'nothing reported unsupported');
  t.same(await thread(channel, a), []);
  t.same(await thread(channel, b), [`2 messages were moved here from #**${channel}>${a}** by ${who}.`]);
  // Both asked: one message, to another channel.
  const c = uniq('c');
  await maria.ok('PATCH', `/messages/${ids[0]}`, { stream_id: await streamIdOf(dest), topic: c, send_notification_to_old_thread: true, send_notification_to_new_thread: true });
  t.same(await thread(channel, a), [`A message was moved from this topic to #**${dest}>${c}** by ${who}.`]);
  t.same(await thread(dest, c), [`A message was moved here from #**${channel}>${a}** by ${who}.`]);
  // The whole topic, old thread only.
  const d = uniq('d');
  await maria.ok('PATCH', `/messages/${ids[2]}`, { topic: d, propagate_mode: 'change_all', send_notification_to_old_thread: true, send_notification_to_new_thread: false });
  t.same(await thread(channel, b), [`This topic was moved to #**${channel}>${d}** by ${who}.`]);
  t.same(await thread(channel, d), [`2 messages were moved here from #**${channel}>${a}** by ${who}.`], 'the earlier notice moved with its topic, no new one');
  // Neither asked: no notice at all.
  const e = uniq('e');
  await maria.ok('PATCH', `/messages/${ids[2]}`, { topic: e, propagate_mode: 'change_all', send_notification_to_old_thread: false, send_notification_to_new_thread: false });
  t.same(await thread(channel, d), []);
  t.same(await thread(channel, e), [`2 messages were moved here from #**${channel}>${a}** by ${who}.`]);
  t.equal((await maria.call('PATCH', `/messages/${ids[2]}`, { topic: uniq('f'), send_notification_to_old_thread: 'maybe' })).body.var_name, 'send_notification_to_old_thread');
});

t.test('message edit - resolving a topic posts Notification Bot\'s notice; resolved_topic_notice_auto_read_policy decides who gets it unread (FL 385)', async (t) => {
  const policies = { member2: 'never', admin: 'except_followed', moderator: 'except_followed', guest: 'always', member1: 'never' } as const;
  for (const [key, policy] of Object.entries(policies)) await s.api.as(s.demo[key as 'admin']).ok('PATCH', '/settings', { resolved_topic_notice_auto_read_policy: policy });
  t.teardown(async () => {
    for (const key of Object.keys(policies)) await s.api.as(s.demo[key as 'admin']).ok('PATCH', '/settings', { resolved_topic_notice_auto_read_policy: 'except_followed' });
  });
  const topic = uniq('issue');
  const first = await send(maria, topic, 'it is broken');
  const admin = s.api.as(s.demo.admin);
  await admin.ok('POST', '/user_topics', { stream_id: streamId, topic, visibility_policy: 3 });
  const FETCH = { fetch_event_types: ['message', 'update_message_flags'] };
  const queues = { member2: await register(mateo, FETCH), moderator: await register(s.api.as(s.demo.moderator), FETCH) };
  const snaps = { member2: structuredClone(queues.member2.snapshot), moderator: structuredClone(queues.moderator.snapshot) };
  await owner.ok('PATCH', `/messages/${first}`, { topic: `✔ ${topic}`, propagate_mode: 'change_all' });
  const noticeOf = async (q: (typeof queues)['member2'], snap: any) => {
    let notice: any;
    await waitFor(q, (e) => {
      applyEvent(snap, e);
      if (e.type === 'message' && e.message.sender_email === 'notification-bot@zulip.com') notice = e;
      return notice !== undefined;
    });
    return notice;
  };
  const seen = await noticeOf(queues.member2, snaps.member2);
  t.equal(seen.message.content, `${await silent(owner)} has marked this topic as resolved.`, 'in the message event');
  t.equal(seen.message.subject, `✔ ${topic}`, 'in the resolved topic');
  t.notOk(seen.flags.includes('read'), "unread for 'never'");
  t.ok((await noticeOf(queues.moderator, snaps.moderator)).flags.includes('read'), "read for 'except_followed' without following the topic");
  const id = seen.message.id;
  const raw = (await owner.ok('GET', `/messages/${id}`, { apply_markdown: false })).message;
  t.equal(raw.content, `${await silent(owner)} has marked this topic as resolved.`, "Zulip's text");
  const readFor = async (key: (typeof DEMO_KEYS)[number]) => (await get(s.api.as(s.demo[key]), id)).flags.includes('read');
  t.same(
    Object.fromEntries(await Promise.all((['owner', 'admin', 'moderator', 'member1', 'member2', 'guest'] as const).map(async (k) => [k, await readFor(k)]))),
    { owner: true, admin: false, moderator: true, member1: false, member2: false, guest: true },
    "read for the one who resolved it (owner), 'always' (guest) and 'except_followed' (moderator); unread for 'never' (member1, member2) and 'except_followed' following the topic (admin)",
  );
  for (const key of ['member2', 'moderator'] as const) {
    const fresh = (await register(s.api.as(s.demo[key]), FETCH)).snapshot;
    t.same(normalizeUnread(snaps[key].unread_msgs), normalizeUnread(fresh.unread_msgs), `${key}: snapshot plus events equals a fresh register`);
  }
  // Undone soon, with someone's message after the notice: a notice of its own.
  await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic: `✔ ${topic}`, content: 'thanks' });
  await maria.ok('PATCH', `/messages/${first}`, { topic, propagate_mode: 'change_all' });
  const back = (await owner.ok('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [['channel', channel], ['topic', topic]], apply_markdown: false })).messages[0];
  t.match(back, { sender_email: 'notification-bot@zulip.com', content: `${await silent(maria)} has marked this topic as unresolved.` }, 'unresolving posts its notice in the topic as it is again');
  t.equal((await get(maria, back.id)).flags.includes('read'), true, 'read for the one who unresolved it');
  // Undone again at once, the notice being the topic's last message: that notice is deleted, no new one (Zulip's grace period).
  const UNDO = { event_types: ['delete_message', 'message', 'update_message', 'update_message_flags'] };
  const q = await register(mateo, UNDO);
  const before = structuredClone(q.snapshot);
  t.ok(before.unread_msgs.streams.some((x: any) => x.unread_message_ids.includes(back.id)), "the notice is unread for member2 ('never')");
  await owner.ok('PATCH', `/messages/${first}`, { topic: `✔ ${topic}`, propagate_mode: 'change_all' });
  const deleted = await waitFor(q, (e) => (applyEvent(before, e), e.type === 'delete_message' || e.type === 'message'));
  t.match(deleted, { type: 'delete_message', message_id: back.id, topic: `✔ ${topic}` }, 'a delete_message event for the undone notice');
  t.same(normalizeUnread(before.unread_msgs), normalizeUnread((await register(mateo, UNDO)).snapshot.unread_msgs), 'snapshot plus the move and the deletion equals a fresh register');
  t.equal((await owner.call('GET', `/messages/${back.id}`)).status, 400, 'the notice is gone');
  const resolvedAgain = (await owner.ok('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [['channel', channel], ['topic', `✔ ${topic}`]], apply_markdown: false })).messages[0];
  t.equal(resolvedAgain.content, 'thanks', 'and no new notice');
  await owner.ok('PATCH', `/messages/${first}`, { topic: uniq('renamed'), propagate_mode: 'change_all' });
  t.equal((await get(owner, first)).subject.startsWith('✔'), false);
  const renamedTopic = (await get(owner, first)).subject;
  const after = (await owner.ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [['channel', channel], ['topic', renamedTopic]], apply_markdown: false })).messages;
  t.notOk(after.some((m: any) => m.id > resolvedAgain.id && m.content.includes('has marked this topic')), 'a rename that does not toggle the check mark posts none');
});

t.test('message delete - POST /streams/{stream_id}/delete_topic: administrators only, in batches, complete (FL 147, 154, 211)', async (t) => {
  // Batches of 3 messages, so a topic of 5 takes two requests.
  const own = await serverFor(t, { env: { PARLEY_DELETE_TOPIC_BATCH: '3' } });
  const [boss, member] = [own.api.as(own.demo.admin), own.api.as(own.demo.member1)];
  const name = uniq('deltopic');
  await own.api.as(own.demo.owner).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: DEMO_KEYS.map((k) => own.demo[k].userId) });
  const id = (await member.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  const post = async (topic: string) => (await member.ok('POST', '/messages', { type: 'stream', to: name, topic, content: 'x' })).id as number;
  const ids = [await post('Doomed'), await post('doomed'), await post('Doomed'), await post('Doomed'), await post('Doomed')];
  const kept = await post('kept');
  for (const key of DEMO_KEYS.filter((k) => k !== 'owner' && k !== 'admin')) {
    const r = await own.api.as(own.demo[key]).call('POST', `/streams/${id}/delete_topic`, { topic_name: 'Doomed' });
    t.same([r.status, r.body.code, r.body.msg], [400, 'UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator'], key);
  }
  const q = await register(member, { event_types: ['delete_message'], client_capabilities: { bulk_message_deletion: true } });
  const first = await boss.ok('POST', `/streams/${id}/delete_topic`, { topic_name: 'doomed' });
  t.equal(first.complete, false, 'messages left: the client repeats the request');
  const e = await waitFor(q, (x) => x.type === 'delete_message');
  t.same([e.message_type, e.stream_id, e.topic, e.message_ids], ['stream', id, 'Doomed', [ids[2], ids[3], ids[4]]], 'the newest first');
  t.same((await boss.ok('POST', `/streams/${id}/delete_topic`, { topic_name: 'doomed' })).complete, true);
  const rest = [await waitFor(q, (x) => x.type === 'delete_message'), await waitFor(q, (x) => x.type === 'delete_message')];
  t.same(rest.map((x) => [x.topic, x.message_ids]).sort(), [['Doomed', [ids[0]]], ['doomed', [ids[1]]]], 'one event for each spelling of the topic');
  const topics = ((await member.ok('GET', `/users/me/${id}/topics`)).topics as any[]).map((x) => x.name);
  t.same(topics, ['kept'], 'the topic is gone, the other one stays');
  for (const m of ids) t.equal((await member.call('GET', `/messages/${m}`)).body.msg, 'Invalid message(s)');
  t.equal((await member.ok('GET', `/messages/${kept}`)).message.id, kept);
  t.equal((await own.api.as(own.demo.owner).ok('POST', `/streams/${id}/delete_topic`, { topic_name: 'no such topic' })).complete, true, 'an empty topic: nothing to do');
  t.equal((await boss.call('POST', '/streams/987654/delete_topic', { topic_name: 'x' })).body.msg, 'Invalid channel ID');
  t.equal((await boss.call('POST', `/streams/${id}/delete_topic`, {})).body.var_name, 'topic_name');
  t.equal((await own.api.call('POST', `/streams/${id}/delete_topic`, { topic_name: 'x' }, { creds: null })).status, 401);
});

t.test('message edit - change_all past the move time limit is MOVE_MESSAGES_TIME_LIMIT_EXCEEDED for members, not moderators (FL 172)', async (t) => {
  // No grace past the limit here, so a limit of one second passes within the test.
  const own = await serverFor(t, { env: { PARLEY_EDIT_GRACE_SECONDS: '0' } });
  const boss = own.api.as(own.demo.owner);
  const member = own.api.as(own.demo.member1);
  const name = uniq('limits');
  await boss.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: DEMO_KEYS.map((k) => own.demo[k].userId) });
  await boss.ok('PATCH', '/realm', { move_messages_within_stream_limit_seconds: 1 });
  const post = async (topic: string) => (await member.ok('POST', '/messages', { type: 'stream', to: name, topic, content: 'x' })).id as number;
  const topic = uniq('t');
  const old = await post(topic);
  await new Promise((r) => setTimeout(r, 2100));
  const recent = await post(topic);
  const r = await member.call('PATCH', `/messages/${recent}`, { topic: uniq('all'), propagate_mode: 'change_all' });
  t.same([r.status, r.body.code, r.body.msg], [400, 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED', 'You only have permission to move the 1/2 most recent messages in this topic.']);
  t.same([r.body.first_message_id_allowed_to_move, r.body.total_messages_allowed_to_move, r.body.total_messages_in_topic], [recent, 1, 2]);
  t.equal((await member.call('PATCH', `/messages/${old}`, { topic: uniq('x') })).body.msg, "The time limit for editing this message's topic has passed.", 'the old message alone');
  const later = uniq('later');
  await member.ok('PATCH', `/messages/${recent}`, { topic: later, propagate_mode: 'change_later' });
  t.equal((await member.ok('GET', `/messages/${recent}`)).message.subject, later, 'change_later moves what is within the limit');
  // Moderators (and administrators) have no time limit.
  await own.api.as(own.demo.moderator).ok('PATCH', `/messages/${old}`, { topic: later, propagate_mode: 'change_all', send_notification_to_new_thread: false });
  t.equal((await member.ok('GET', `/messages/${old}`)).message.subject, later);
});

t.test('message edit - the official Python client: update_message and delete_message', async (t) => {
  const id = await send(owner, uniq('py'), 'before');
  const out = runPython(s.urls[0]!, s.demo.owner, `
edited = client.update_message({"message_id": ${id}, "content": "after"})
raw = client.get_raw_message(${id})
deleted = client.delete_message(${id})
gone = client.get_raw_message(${id})
print(json.dumps({"edited": edited["result"], "raw": raw["raw_content"], "deleted": deleted["result"], "gone": gone["msg"]}))`) as Record<string, string>;
  t.same(out, { edited: 'success', raw: 'after', deleted: 'success', gone: 'Invalid message(s)' });
});
