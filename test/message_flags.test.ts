// Personal message flags: by ID, by narrow, mark-as-read, and the register's unread_msgs and starred_messages.
import t, { type Test } from 'tap';
import { type Api, type Params, uniq } from './helpers/api.ts';
import { applyEvent, normalizeUnread } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { newPerson, ROLE } from './helpers/people.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
// test/messages.test.ts counts the owner's direct messages with Mateo (and with Maria and Mateo): these tests use the administrator.
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);
const channel = uniq('flags');
const everyone = DEMO_KEYS.map((k) => s.demo[k].userId);
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: everyone });
const streamId = ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === channel).stream_id as number;

const send = async (api: Api, topic: string, content = 'hi') => (await api.ok('POST', '/messages', { type: 'stream', to: channel, topic, content })).id as number;
const flagsOf = async (api: Api, id: number) => (await api.ok('GET', '/messages', { anchor: id, num_before: 0, num_after: 0, narrow: [] })).messages[0]?.flags as string[];
const FETCH = { fetch_event_types: ['message', 'update_message_flags', 'starred_messages', 'realm_user'] };

t.test('message flags - star and unstar by ID, with the event and starred_messages', async (t) => {
  const id = await send(owner, uniq('t'));
  const q = await register(maria, { event_types: ['update_message_flags'] });
  const r = await maria.ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'starred' });
  t.same(r.messages, [id]);
  t.notOk('ignored_because_not_subscribed_channels' in r);
  t.same(await flagsOf(maria, id), ['starred']);
  const e = await waitFor(q, (x) => x.type === 'update_message_flags');
  t.same({ ...e, id: 0 }, { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'starred', messages: [id], all: false, id: 0 });
  t.ok((await maria.ok('POST', '/register', { fetch_event_types: ['starred_messages'] })).starred_messages.includes(id));
  // Adding again changes nothing: the event lists no message.
  await maria.ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'starred' });
  t.same((await waitFor(q, (x) => x.type === 'update_message_flags')).messages, []);
  await maria.ok('POST', '/messages/flags', { messages: [id], op: 'remove', flag: 'starred' });
  t.same(await flagsOf(maria, id), []);
  t.notOk((await maria.ok('POST', '/register', { fetch_event_types: ['starred_messages'] })).starred_messages.includes(id));
});

t.test('message flags - read and unread by ID; the event for unread carries message_details', async (t) => {
  const topic = uniq('t');
  const id = await send(owner, topic, `@**${'Maria Member'}** look`);
  const q = await register(maria, { event_types: ['update_message_flags'] });
  t.same(await flagsOf(maria, id), ['mentioned']);
  await maria.ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'read' });
  t.same(await flagsOf(maria, id), ['read', 'mentioned']);
  const r = await maria.ok('POST', '/messages/flags', { messages: [id], op: 'remove', flag: 'read' });
  t.same(r.ignored_because_not_subscribed_channels, []);
  await waitFor(q, (x) => x.op === 'add');
  const e = await waitFor(q, (x) => x.op === 'remove');
  t.same(e.message_details, { [String(id)]: { type: 'stream', stream_id: streamId, topic, unmuted_stream_msg: true, mentioned: true } });
  const dm = (await mateo.ok('POST', '/messages', { type: 'direct', to: [s.demo.member1.userId], content: 'psst' })).id;
  await maria.ok('POST', '/messages/flags', { messages: [dm], op: 'add', flag: 'read' });
  await maria.ok('POST', '/messages/flags', { messages: [dm], op: 'remove', flag: 'read' });
  t.same((await waitFor(q, (x) => x.op === 'remove' && x.messages.includes(dm))).message_details, { [String(dm)]: { type: 'private', user_ids: [s.demo.member2.userId] } });
});

t.test('message flags - errors: unknown flag, flag not editable, bad op, a message the user cannot read', async (t) => {
  const id = await send(owner, uniq('t'));
  const cases: Array<[Params, RegExp]> = [
    [{ messages: [id], op: 'add', flag: 'shiny' }, /Invalid flag: 'shiny'/],
    [{ messages: [id], op: 'add', flag: 'mentioned' }, /Flag not editable: 'mentioned'/],
    [{ messages: [id], op: 'toggle', flag: 'read' }, /Invalid message flag operation: 'toggle'/],
    [{ messages: [99_999_999], op: 'add', flag: 'starred' }, /Invalid message\(s\)/],
    [{ messages: 'x', op: 'add', flag: 'read' }, /Invalid messages/],
  ];
  for (const [params, msg] of cases) {
    const r = await maria.post('/messages/flags', params);
    t.equal(r.status, 400, String(msg));
    t.equal(r.body.code, 'BAD_REQUEST');
    t.match(r.body.msg, msg);
  }
  // A private conversation of others: starring it is refused, and nothing changed.
  const dm = (await admin.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: 'between us' })).id;
  t.equal((await maria.post('/messages/flags', { messages: [dm], op: 'add', flag: 'starred' })).body.msg, 'Invalid message(s)');
  t.same(await flagsOf(mateo, dm), []);
  // As in Zulip, marking an unreadable message read is a no-op (it already counts as read).
  t.same((await maria.ok('POST', '/messages/flags', { messages: [dm], op: 'add', flag: 'read' })).messages, [dm]);
  t.equal((await s.api.post('/messages/flags', { messages: [id], op: 'add', flag: 'read' }, { creds: null })).status, 401);
});

t.test('message flags - every role stars a message of a channel it reads; without credentials it is 401', async (t) => {
  const id = await send(owner, uniq('t'));
  for (const key of DEMO_KEYS) {
    const api = s.api.as(s.demo[key]);
    await api.ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'starred' });
    t.same(await flagsOf(api, id), key === 'owner' ? ['starred'] : ['starred'], key);
  }
  // A guest cannot read a public channel it is not in: the message is invalid for it.
  const other = uniq('noguest');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: other }] });
  const hidden = (await owner.ok('POST', '/messages', { type: 'stream', to: other, topic: 'x', content: 'y' })).id;
  t.equal((await s.api.as(s.demo.guest).post('/messages/flags', { messages: [hidden], op: 'add', flag: 'starred' })).body.msg, 'Invalid message(s)');
  // A member may star it: a public channel's history is open to members (a historical message).
  await maria.ok('POST', '/messages/flags', { messages: [hidden], op: 'add', flag: 'starred' });
  t.same((await maria.ok('GET', `/messages/${hidden}`)).message.flags, ['read', 'starred', 'historical']);
  const r = await s.api.post('/messages/flags', { messages: [id], op: 'add', flag: 'starred' }, { creds: null });
  t.equal(r.status, 401);
  t.equal(r.body.code, 'UNAUTHORIZED');
});

t.test('message flags - flags/narrow: counts, range, anchors and ignored channels', async (t) => {
  const topic = uniq('t');
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push(await send(owner, topic, `n${i}`));
  const narrow = [{ operator: 'channel', operand: channel }, { operator: 'topic', operand: topic }];
  await maria.ok('POST', '/messages/flags', { messages: [ids[1]], op: 'add', flag: 'read' });
  const first = await maria.ok('POST', '/messages/flags/narrow', { anchor: 'first_unread', num_before: 0, num_after: 2, narrow, op: 'add', flag: 'read' });
  t.same(first, { result: 'success', msg: '', processed_count: 3, updated_count: 2, first_processed_id: ids[0], last_processed_id: ids[2], found_oldest: true, found_newest: false });
  const rest = await maria.ok('POST', '/messages/flags/narrow', { anchor: ids[2], include_anchor: false, num_before: 0, num_after: 10, narrow, op: 'add', flag: 'read' });
  t.same([rest.processed_count, rest.updated_count, rest.first_processed_id, rest.last_processed_id, rest.found_newest], [2, 2, ids[3], ids[4], true]);
  const none = await maria.ok('POST', '/messages/flags/narrow', { anchor: 'first_unread', num_before: 0, num_after: 5, narrow, op: 'add', flag: 'read' });
  t.same([none.processed_count, none.first_processed_id, none.last_processed_id], [0, null, null]);
  const unread = await maria.ok('POST', '/messages/flags/narrow', { anchor: 'newest', num_before: 5, num_after: 0, narrow, op: 'remove', flag: 'read' });
  t.same([unread.processed_count, unread.updated_count, unread.ignored_because_not_subscribed_channels], [5, 5, []]);
  const bad = await maria.post('/messages/flags/narrow', { anchor: ids[2], include_anchor: false, num_before: 1, num_after: 1, narrow, op: 'add', flag: 'read' });
  t.equal(bad.status, 400);
  t.match(bad.body.msg, /anchor can only be excluded at an end/);
  t.equal((await maria.post('/messages/flags/narrow', { anchor: 'middle', num_before: 1, num_after: 1, narrow, op: 'add', flag: 'read' })).body.var_name, 'anchor');
  t.equal((await maria.post('/messages/flags/narrow', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'bogus', operand: 'x' }], op: 'add', flag: 'read' })).body.code, 'BAD_NARROW');
  // Marking unread in a public channel the user does not belong to is skipped and reported.
  const other = uniq('notmine');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: other }] });
  const otherId = ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === other).stream_id;
  await owner.ok('POST', '/messages', { type: 'stream', to: other, topic: 'x', content: 'y' });
  const skipped = await maria.ok('POST', '/messages/flags/narrow', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'channel', operand: other }], op: 'remove', flag: 'read' });
  t.same([skipped.processed_count, skipped.updated_count, skipped.ignored_because_not_subscribed_channels], [1, 0, [otherId]]);
});

t.test('message flags - mark_topic_as_read, mark_stream_as_read and mark_all_as_read', async (t) => {
  const [a, b] = [uniq('a'), uniq('b')];
  const inA = [await send(owner, a), await send(owner, a)];
  const inB = await send(owner, b);
  const q = await register(mateo, { event_types: ['update_message_flags'] });
  await mateo.ok('POST', '/mark_topic_as_read', { stream_id: streamId, topic_name: a });
  t.same((await waitFor(q, (e) => e.type === 'update_message_flags')).messages, inA);
  t.same(await flagsOf(mateo, inA[0]!), ['read']);
  t.same(await flagsOf(mateo, inB), []);
  t.match((await mateo.post('/mark_topic_as_read', { stream_id: streamId, topic_name: uniq('nope') })).body.msg, /No such topic/);
  t.equal((await mateo.post('/mark_stream_as_read', { stream_id: 99_999 })).body.msg, 'Invalid channel ID');
  await mateo.ok('POST', '/mark_stream_as_read', { stream_id: streamId });
  // Earlier tests left other messages of this channel unread for Mateo: those are marked too, topic A's are not again.
  const marked = (await waitFor(q, (e) => e.type === 'update_message_flags')).messages as number[];
  t.ok(marked.includes(inB) && !marked.includes(inA[0]!) && !marked.includes(inA[1]!));
  t.same([...marked].sort((x, y) => x - y), marked, 'in ID order');
  const left = await mateo.ok('GET', '/messages', { anchor: 'newest', num_before: 100, num_after: 0, narrow: [{ operator: 'channel', operand: channel }, { operator: 'is', operand: 'unread' }] });
  t.same(left.messages, []);
  await mateo.ok('POST', '/messages/flags', { messages: [inB], op: 'remove', flag: 'read' });
  await waitFor(q, (e) => e.op === 'remove');
  const dm = (await admin.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: 'unread dm' })).id;
  const all = await mateo.ok('POST', '/mark_all_as_read');
  t.equal(all.complete, true);
  const e = await waitFor(q, (x) => x.type === 'update_message_flags');
  t.same([e.op, e.flag, e.messages, e.all], ['add', 'read', [], true]);
  t.same(await flagsOf(mateo, dm), ['read']);
  t.same(await flagsOf(mateo, inB), ['read']);
  const snap = await mateo.ok('POST', '/register', FETCH);
  t.same([snap.unread_msgs.count, snap.unread_msgs.old_unreads_missing], [0, false]);
  // A message sent afterwards is unread again, and one marked unread below the watermark counts too.
  const later = await send(owner, a);
  await mateo.ok('POST', '/messages/flags', { messages: [inA[0]], op: 'remove', flag: 'read' });
  const after = await mateo.ok('POST', '/register', FETCH);
  t.same(after.unread_msgs.streams, [{ stream_id: streamId, topic: a, unread_message_ids: [inA[0], later] }]);
  t.equal(after.unread_msgs.count, 2);
});

t.test('message flags - snapshot plus flag and message events equals a fresh register', async (t) => {
  await maria.ok('POST', '/mark_all_as_read');
  const topic = uniq('t');
  const q = await register(maria, FETCH);
  const snap = structuredClone(q.snapshot);
  const m1 = await send(owner, topic, '@**Maria Member** hello');
  const m2 = await send(owner, topic);
  const dm = (await mateo.ok('POST', '/messages', { type: 'direct', to: [s.demo.member1.userId], content: 'dm' })).id;
  const group = (await mateo.ok('POST', '/messages', { type: 'direct', to: [s.demo.member1.userId, s.demo.admin.userId], content: 'group' })).id;
  await maria.ok('POST', '/messages/flags', { messages: [m2, dm], op: 'add', flag: 'read' });
  await maria.ok('POST', '/messages/flags', { messages: [m1, group], op: 'add', flag: 'starred' });
  await maria.ok('POST', '/messages/flags', { messages: [dm], op: 'remove', flag: 'read' });
  await maria.ok('POST', '/mark_topic_as_read', { stream_id: streamId, topic_name: topic });
  await maria.ok('POST', '/messages/flags', { messages: [m1], op: 'remove', flag: 'starred' });
  let flagEvents = 0;
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    if (e.type === 'update_message_flags') flagEvents++;
    return flagEvents === 5;
  });
  const fresh = (await register(maria, FETCH)).snapshot;
  t.same(normalizeUnread(snap.unread_msgs), normalizeUnread(fresh.unread_msgs));
  t.same(snap.starred_messages, fresh.starred_messages);
  t.ok(fresh.starred_messages.includes(group));
  t.same(fresh.unread_msgs.pms.find((p: any) => p.other_user_id === s.demo.member2.userId)?.unread_message_ids, [dm]);
  t.same(fresh.unread_msgs.huddles.find((h: any) => h.user_ids_string.split(',').includes(String(s.demo.admin.userId)))?.unread_message_ids, [group]);
  // mark_all_as_read: the `all` event empties the client's unread state, as a fresh register does.
  await maria.ok('POST', '/mark_all_as_read');
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    return e.type === 'update_message_flags' && e.all;
  });
  t.same(normalizeUnread(snap.unread_msgs), normalizeUnread((await register(maria, FETCH)).snapshot.unread_msgs));
});

t.test('message flags - GET /messages with use_first_unread_anchor starts at the first unread message', async (t) => {
  const topic = uniq('t');
  const ids = [await send(owner, topic), await send(owner, topic), await send(owner, topic)];
  await maria.ok('POST', '/messages/flags', { messages: [ids[0]], op: 'add', flag: 'read' });
  const narrow = [{ operator: 'channel', operand: channel }, { operator: 'topic', operand: topic }];
  const got = await maria.ok('GET', '/messages', { use_first_unread_anchor: true, num_before: 0, num_after: 1, narrow });
  t.equal(got.anchor, ids[1]);
  t.same(got.messages.map((m: any) => m.id), [ids[1], ids[2]]);
});

t.test('message flags - the official Python client: update_message_flags and the mark-as-read calls', async (t) => {
  const topic = uniq('py');
  const id = await send(owner, topic);
  const out = runPython(s.urls[0]!, s.demo.member1, `
starred = client.update_message_flags({"messages": [${id}], "op": "add", "flag": "starred"})
read = client.update_message_flags({"messages": [${id}], "op": "add", "flag": "read"})
topic = client.mark_topic_as_read(${streamId}, ${JSON.stringify(topic)})
stream = client.mark_stream_as_read(${streamId})
everything = client.mark_all_as_read()
raw = client.call_endpoint(f"messages/${id}", method="GET")
print(json.dumps({"results": [starred["result"], read["result"], topic["result"], stream["result"], everything["result"]], "flags": raw["message"]["flags"]}))`) as { results: string[]; flags: string[] };
  t.same(out.results, ['success', 'success', 'success', 'success', 'success']);
  t.same(out.flags, ['read', 'starred']);
});

/** A fresh member who has read everything so far (the demo users' unread state is shared by the other tests). */
async function freshReader() {
  const person = await newPerson(s, ROLE.member, uniq('Reader'));
  const api = s.api.as(person);
  await api.ok('POST', '/mark_all_as_read');
  return { person, api };
}
const channelId = async (name: string) => (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
const unreadIn = (snap: any, id: number) => (snap.unread_msgs.streams as any[]).filter((x) => x.stream_id === id).flatMap((x) => x.unread_message_ids);

t.test('message flags - marking unread sticks, also for messages sent before the user subscribed (by ID and by narrow)', async (t) => {
  const { person, api } = await freshReader();
  const name = uniq('before');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const id = await channelId(name);
  const older = [];
  for (let i = 0; i < 3; i++) older.push((await owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'old', content: `m${i}` })).id as number);
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], send_new_subscription_messages: false, principals: [person.userId] });
  t.same(await flagsOf(api, older[0]!), ['read', 'historical']);

  await api.ok('POST', '/messages/flags', { messages: [older[0]], op: 'remove', flag: 'read' });
  t.same(await flagsOf(api, older[0]!), ['historical'], 'GET /messages shows it unread');
  const byNarrow = await api.ok('POST', '/messages/flags/narrow', { anchor: older[1], num_before: 0, num_after: 0, narrow: [{ operator: 'channel', operand: id }], op: 'remove', flag: 'read' });
  t.same([byNarrow.processed_count, byNarrow.updated_count], [1, 1]);
  t.same(await flagsOf(api, older[1]!), ['historical']);
  const snap = await api.ok('POST', '/register', FETCH);
  t.same(unreadIn(snap, id), [older[0], older[1]], 'the register counts them unread');
  t.equal(snap.unread_msgs.count, 2);
  const unread = await api.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'is', operand: 'unread' }] });
  t.same(unread.messages.map((m: any) => m.id), [older[0], older[1]], 'is:unread finds them');
  t.equal((await api.ok('GET', '/messages', { anchor: 'first_unread', num_before: 0, num_after: 0, narrow: [] })).anchor, older[0], 'first_unread starts there');

  // Read again: gone from the count; and a restart of the server keeps what was stored.
  await api.ok('POST', '/messages/flags', { messages: [older[0]], op: 'add', flag: 'read' });
  t.same(unreadIn(await api.ok('POST', '/register', FETCH), id), [older[1]]);
  await api.ok('POST', '/mark_all_as_read');
  t.same(unreadIn(await api.ok('POST', '/register', FETCH), id), []);
  t.same(await flagsOf(api, older[1]!), ['read', 'historical']);
});

t.test('message flags - leaving a channel marks its messages read, also starred and marked-unread ones; for oneself and when removed', async (t) => {
  const { person, api } = await freshReader();
  const [left, removed, kept] = [uniq('left'), uniq('removed'), uniq('kept')];
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: left }, { name: removed }, { name: kept }], principals: [s.demo.owner.userId, person.userId] });
  const ids: Record<string, number[]> = {};
  for (const name of [left, removed, kept]) {
    ids[name] = [];
    for (let i = 0; i < 3; i++) ids[name]!.push((await owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 't', content: `${name} ${i}` })).id as number);
  }
  // One starred while unread (a flag row without read), one read and marked unread again (a row below the watermark).
  await api.ok('POST', '/messages/flags', { messages: [ids[left]![0], ids[removed]![0]], op: 'add', flag: 'starred' });
  await api.ok('POST', '/mark_all_as_read');
  await api.ok('POST', '/messages/flags', { messages: [ids[left]![1], ids[removed]![1], ids[kept]![1]], op: 'remove', flag: 'read' });
  const after = (await owner.ok('POST', '/messages', { type: 'stream', to: left, topic: 't', content: 'unread' })).id as number;
  const [leftId, removedId, keptId] = [await channelId(left), await channelId(removed), await channelId(kept)];
  const before = await api.ok('POST', '/register', FETCH);
  t.same([unreadIn(before, leftId), unreadIn(before, removedId)], [[ids[left]![1], after], [ids[removed]![1]]]);

  await api.ok('DELETE', '/users/me/subscriptions', { subscriptions: [left] });
  await owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [removed], principals: [person.userId] });
  for (const id of [...ids[left]!, after, ...ids[removed]!]) t.ok((await flagsOf(api, id)).includes('read'), `message ${id} is read`);
  t.same(await flagsOf(api, ids[left]![0]!), ['read', 'starred', 'historical'], 'a starred one stays starred');
  const snap = await api.ok('POST', '/register', FETCH);
  t.same([unreadIn(snap, leftId), unreadIn(snap, removedId), unreadIn(snap, keptId)], [[], [], [ids[kept]![1]]], 'only the channel still subscribed has unreads');
  t.equal(snap.unread_msgs.count, 1);
  const unread = await api.ok('GET', '/messages', { anchor: 'newest', num_before: 20, num_after: 0, narrow: [{ operator: 'is', operand: 'unread' }] });
  t.same(unread.messages.map((m: any) => m.id), [ids[kept]![1]], 'is:unread finds none of the channels left');
  t.equal((await api.ok('GET', '/messages', { anchor: 'first_unread', num_before: 0, num_after: 0, narrow: [] })).anchor, ids[kept]![1]);
  // Marking a message of a channel one left unread is skipped, as in Zulip.
  const skip = await api.ok('POST', '/messages/flags', { messages: [ids[left]![2]], op: 'remove', flag: 'read' });
  t.same(skip.ignored_because_not_subscribed_channels, [leftId]);
  t.ok((await flagsOf(api, ids[left]![2]!)).includes('read'));
});

/** Turns read receipts on for the test (other suites may have turned them off in a shared organization) and restores them after. */
async function readReceiptsOn(t: Test): Promise<void> {
  const before = (await owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_enable_read_receipts as boolean;
  await admin.ok('PATCH', '/realm', { enable_read_receipts: true });
  t.teardown(() => admin.ok('PATCH', '/realm', { enable_read_receipts: before }));
}
const receipts = async (api: Api, id: number) => ((await api.ok('GET', `/messages/${id}/read_receipts`)).user_ids as number[]).sort((a, b) => a - b);
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);
const denied = async (api: Api, mid: number) => {
  const r = await api.call('GET', `/messages/${mid}/read_receipts`);
  return [r.status, r.body.code, r.body.msg];
};

t.test('message flags - GET /messages/{message_id}/read_receipts: who read it, every role, the realm setting, send_read_receipts (FL 105, 137)', async (t) => {
  await readReceiptsOn(t);
  const sender = await newPerson(s);
  const reader = await newPerson(s);
  const watermark = await newPerson(s, ROLE.moderator);
  const quiet = await newPerson(s);
  const leaver = await newPerson(s);
  const gone = await newPerson(s);
  const late = await newPerson(s);
  const guest = await newPerson(s, ROLE.guest);
  const outsider = await newPerson(s, ROLE.member);
  const secret = uniq('receipts');
  const members = [sender, reader, watermark, quiet, leaver, gone, guest].map((p) => p.userId);
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], invite_only: true, history_public_to_subscribers: true, principals: [...members, s.demo.bot.userId] });
  const as = (p: { email: string; apiKey: string }) => s.api.as(p);
  const id = (await as(sender).ok('POST', '/messages', { type: 'stream', to: secret, topic: 'plans', content: 'who reads this?' })).id as number;
  t.same(await receipts(as(sender), id), [], 'nobody read it yet; the sender is never listed');

  await as(reader).ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'read' });
  await as(watermark).ok('POST', '/mark_all_as_read');
  await as(quiet).ok('PATCH', '/settings', { send_read_receipts: false });
  await as(quiet).ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'read' });
  await as(guest).ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'read' });
  await as(gone).ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'read' });
  await owner.ok('DELETE', `/users/${gone.userId}`);
  // Leaving a channel marks its messages read (Zulip): a former subscriber who received it has read it.
  await as(leaver).ok('DELETE', '/users/me/subscriptions', { subscriptions: [secret] });
  // Subscribed after it was sent: did not receive it, so not listed even though it counts as read for them.
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], principals: [late.userId] });
  const readers = sorted([reader.userId, watermark.userId, guest.userId, leaver.userId]);
  for (const [who, api] of [['moderator', as(watermark)], ['member', as(reader)], ['guest', as(guest)], ['bot', s.api.as(s.demo.bot)], ['sender', as(sender)], ['late subscriber', as(late)]] as const) {
    t.same(await receipts(api, id), readers, `${who} sees who read it (the requester included; not send_read_receipts off, not deactivated)`);
  }
  // Marking it unread again takes one off the list.
  await as(reader).ok('POST', '/messages/flags', { messages: [id], op: 'remove', flag: 'read' });
  t.same(await receipts(as(sender), id), sorted([watermark.userId, guest.userId, leaver.userId]));
  await as(quiet).ok('PATCH', '/settings', { send_read_receipts: true });
  t.ok((await receipts(as(sender), id)).includes(quiet.userId), 'send_read_receipts on again: listed');

  // Direct messages: their participants.
  const dm = (await as(sender).ok('POST', '/messages', { type: 'direct', to: [reader.userId, guest.userId], content: 'psst' })).id as number;
  await as(guest).ok('POST', '/messages/flags', { messages: [dm], op: 'add', flag: 'read' });
  t.same(await receipts(as(reader), dm), [guest.userId]);

  // Who may not read the message gets Zulip's error; so does a message that does not exist.
  t.same(await denied(as(outsider), id), [400, 'BAD_REQUEST', 'Invalid message(s)'], 'not a subscriber of the private channel');
  t.same(await denied(owner, id), [400, 'BAD_REQUEST', 'Invalid message(s)'], 'owners too, as they cannot read it');
  t.same(await denied(admin, id), [400, 'BAD_REQUEST', 'Invalid message(s)'], 'administrators too');
  t.same(await denied(as(leaver), id), [400, 'BAD_REQUEST', 'Invalid message(s)'], 'a former subscriber of a private channel');
  t.same(await denied(as(outsider), dm), [400, 'BAD_REQUEST', 'Invalid message(s)'], 'not a participant');
  t.same(await denied(owner, 999_999_999), [400, 'BAD_REQUEST', 'Invalid message(s)']);
  t.equal((await s.api.call('GET', `/messages/${id}/read_receipts`, {}, { creds: null })).status, 401);
  t.equal((await owner.call('GET', '/messages/-1/read_receipts')).status, 400);

  // The organization's setting: off, nobody gets receipts (access is checked first, as in Zulip).
  await admin.ok('PATCH', '/realm', { enable_read_receipts: false });
  t.same(await denied(as(sender), id), [400, 'BAD_REQUEST', 'Read receipts are disabled in this organization.']);
  t.same(await denied(as(outsider), id), [400, 'BAD_REQUEST', 'Invalid message(s)']);
  await admin.ok('PATCH', '/realm', { enable_read_receipts: true });
  t.same(await receipts(as(sender), id), sorted([watermark.userId, guest.userId, leaver.userId, quiet.userId]));
});

t.test('message flags - read receipts leave out users who muted the requester and users the requester muted (FL 144)', async (t) => {
  await readReceiptsOn(t);
  const sender = await newPerson(s);
  const a = await newPerson(s);
  const b = await newPerson(s);
  const name = uniq('muting');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [sender.userId, a.userId, b.userId] });
  const id = (await s.api.as(sender).ok('POST', '/messages', { type: 'stream', to: name, topic: 't', content: 'hello' })).id as number;
  for (const p of [a, b]) await s.api.as(p).ok('POST', '/messages/flags', { messages: [id], op: 'add', flag: 'read' });
  t.same(await receipts(s.api.as(sender), id), sorted([a.userId, b.userId]));
  // a mutes the sender: the sender no longer learns that a reads their messages; b still sees a.
  await s.api.as(a).ok('POST', `/users/me/muted_users/${sender.userId}`);
  t.same(await receipts(s.api.as(sender), id), [b.userId], 'a muted the requester');
  t.same(await receipts(s.api.as(b), id), sorted([a.userId, b.userId]), 'b is not muted by anyone');
  // The sender mutes b: b is left out of what the sender sees.
  await s.api.as(sender).ok('POST', `/users/me/muted_users/${b.userId}`);
  t.same(await receipts(s.api.as(sender), id), [], 'the requester muted b');
  await s.api.as(a).ok('DELETE', `/users/me/muted_users/${sender.userId}`);
  await s.api.as(sender).ok('DELETE', `/users/me/muted_users/${b.userId}`);
  t.same(await receipts(s.api.as(sender), id), sorted([a.userId, b.userId]), 'unmuted: both again');
});
