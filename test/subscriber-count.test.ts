// subscriber_count (FL 394) is kept by the realm's state, not counted per channel formatted: it stays
// equal to the channel's subscriber list (GET /streams/{id}/members, `activeSubscribers`, kept between changes) and to
// what GET /streams and register report, through subscribe, unsubscribe, deactivation and reactivation
// of a subscriber (a deactivated user's subscription does not count, as in Zulip), archive and
// unarchive, a restart, and both ways of loading the realm (checkpoint + journal, tables). And the
// channel permissions as the same objects show them: deactivated direct members left out (FL 303).
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { DEMO_REALM_ID } from '../lib/demo.ts';
import { RealmState } from '../actors/realm/state/state.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { NO_LIMITS } from './helpers/backup-org.ts';
import { serverFor } from './helpers/server.ts';
import type { Api } from './helpers/api.ts';
import { applyEvent, catchUp, type Snap } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { GROUP_ID } from '../actors/model.ts';
import { COLORS } from '../actors/realm/actions/channels/subscriptions.ts';

// And partial_subscribers (FL 412) through a restart: who the realm lists when it loads (bots, the recently active),
// who it lists since (new subscriptions, users back from idleness), with snapshot plus events equal to a fresh register.
// A checkpoint every few changes, so that the restart loads from one and the journal after it.
// Channels of 5 subscribers or more get partial lists (FL 412) here, so that a test needs few users.
let s = await serverFor(t, { env: { ...NO_LIMITS, PARLEY_CHECKPOINT_EVERY: '5', PARLEY_PARTIAL_SUBSCRIBERS_MIN: '5' } });
t.teardown(() => s.stop()); // the restarted process (serverFor stops the first)
const owner = () => s.api.as(s.demo.owner);
const name = `counted-${process.pid}`;
let streamId = 0;
let extra = 0;

/** The channel's subscriber_count as GET /streams, GET /streams/{id}, and the owner's register (streams, subscriptions) give it. */
async function reported(api: Api): Promise<Record<string, number | undefined>> {
  const listed = (await api.ok('GET', '/streams', { include_all: true, exclude_archived: false })).streams.find((c: any) => c.stream_id === streamId);
  const one = (await api.ok('GET', `/streams/${streamId}`)).stream;
  const reg = await api.ok('POST', '/register', { fetch_event_types: ['stream', 'subscription'], client_capabilities: { archived_channels: true } });
  const sub = [...reg.subscriptions, ...reg.unsubscribed, ...reg.never_subscribed].find((c: any) => c.stream_id === streamId);
  const stream = reg.streams.find((c: any) => c.stream_id === streamId);
  return { list: listed?.subscriber_count, one: one.subscriber_count, registerStreams: stream?.subscriber_count, registerSubscriptions: sub?.subscriber_count };
}

/** Every report equals `expected`, and so does a walk of the channel's subscribers (GET /streams/{id}/members). */
async function expectCount(t: Test, expected: number, label: string): Promise<void> {
  const members = (await owner().ok('GET', `/streams/${streamId}/members`)).subscribers as number[];
  t.equal(members.length, expected, `${label}: the walk`);
  t.same(await reported(owner()), { list: expected, one: expected, registerStreams: expected, registerSubscriptions: expected }, `${label}: GET /streams, GET /streams/{id}, register`);
}

t.test('subscriber_count - follows subscribe, unsubscribe, deactivation, reactivation, archive and unarchive', async (t) => {
  const { member1, member2, guest } = s.demo;
  const created = await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [member1.userId, member2.userId, guest.userId] });
  t.ok(created.subscribed);
  streamId = (await owner().ok('GET', '/get_stream_id', { stream: name })).stream_id;
  await expectCount(t, 3, 'three subscribed');
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  await expectCount(t, 4, 'the owner joins');
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [member1.userId] });
  await expectCount(t, 4, 'subscribing a subscriber again changes nothing');
  await owner().ok('DELETE', '/users/me/subscriptions', { subscriptions: [name], principals: [member2.userId] });
  await expectCount(t, 3, 'member2 unsubscribed');
  await owner().ok('DELETE', `/users/${member1.userId}`);
  await expectCount(t, 2, 'member1 deactivated: their subscription does not count');
  await owner().ok('DELETE', '/users/me/subscriptions', { subscriptions: [name], principals: [guest.userId] });
  await expectCount(t, 1, 'the guest unsubscribed');
  await owner().ok('POST', `/users/${member1.userId}/reactivate`);
  await expectCount(t, 2, 'member1 reactivated: counted again');
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [member2.userId, guest.userId] });
  await expectCount(t, 4, 'member2 and the guest subscribed again');
  await owner().ok('DELETE', `/streams/${streamId}`);
  const archived = await reported(owner());
  t.same(archived, { list: 4, one: 4, registerStreams: 4, registerSubscriptions: 4 }, 'archived: the subscriptions stay and still count');
  await owner().ok('PATCH', `/streams/${streamId}`, { is_archived: false });
  await expectCount(t, 4, 'unarchived');
  // The demo seeding at start-up subscribes the demo users by email: the one left deactivated is a user of this test.
  const { user_id } = await owner().ok('POST', '/users', { email: `${name}@parley.example`, password: 'long enough pw', full_name: `Counted ${process.pid}` });
  extra = user_id;
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [user_id] });
  await expectCount(t, 5, 'a new user subscribed');
  await owner().ok('DELETE', `/users/${user_id}`);
  await expectCount(t, 4, 'the new user deactivated');
  await owner().ok('DELETE', '/users/me/subscriptions', { subscriptions: [name], principals: [member2.userId] });
  await expectCount(t, 3, 'member2 unsubscribed');
});

t.test('subscriber_count - the same after a restart, and from either way of loading the realm', async (t) => {
  await s.stop();
  const store = new EmbeddedStore(join(s.dataDir!, 'data'));
  try {
    const fromCheckpoint = await RealmState.load(store, DEMO_REALM_ID);
    const fromTables = await RealmState.load(store, DEMO_REALM_ID, { fromTables: true });
    t.equal(fromCheckpoint.image.stats.loadedFrom, 'checkpoint', 'a checkpoint was written (and the journal after it replayed)');
    for (const [label, state] of [['checkpoint', fromCheckpoint], ['tables', fromTables]] as const) {
      t.equal(state.subscriberCount(streamId), 3, `from the ${label}: the channel's count`);
      const walked = [...state.channels.keys()].map((id) => [id, state.activeSubscribers(id).length]);
      t.same([...state.channels.keys()].map((id) => [id, state.subscriberCount(id)]), walked, `from the ${label}: every channel's count equals a walk`);
    }
  } finally {
    await store.close();
  }
  s = await s.restart();
  await expectCount(t, 3, 'after the restart');
  await owner().ok('POST', `/users/${extra}/reactivate`);
  await expectCount(t, 4, 'after the restart, the new user reactivated');
});

t.test('channel permissions - deactivated direct members are left out of new subscriptions, channel updates and their events as in register (FL 303)', async (t) => {
  const { owner: o, member1, member2, guest } = s.demo;
  const person = async (tag: string) => (await owner().ok('POST', '/users', { email: `${tag}-${process.pid}@parley.example`, password: 'long enough pw', full_name: `${tag} ${process.pid}` })).user_id as number;
  const gone = await person('perm-gone');
  const later = await person('perm-later');
  const perms = `perm-${process.pid}`;
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: perms }], principals: [o.userId, guest.userId], can_administer_channel_group: { direct_members: [o.userId, gone, later], direct_subgroups: [] } });
  const id = (await owner().ok('GET', '/get_stream_id', { stream: perms })).stream_id;
  await owner().ok('DELETE', `/users/${gone}`);
  const shown = { direct_members: [o.userId, later], direct_subgroups: [] };
  t.same((await owner().ok('GET', `/streams/${id}`)).stream.can_administer_channel_group, shown, 'GET /streams/{id} leaves the deactivated user out');

  // A new subscription: its event's permissions are the register's.
  const FETCH = { fetch_event_types: ['stream', 'subscription'], event_types: ['stream', 'subscription'], client_capabilities: { notification_settings_null: true } };
  const q = await register(s.api.as(member1), FETCH);
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: perms }], principals: [member1.userId], send_new_subscription_messages: false });
  const add = await waitFor(q, (e) => e.type === 'subscription' && e.op === 'add');
  t.same(add.subscriptions[0].can_administer_channel_group, shown, 'the subscription add leaves the deactivated user out');

  // A channel update whose `old` is the value as clients see it; its event is the register's value.
  await owner().ok('PATCH', `/streams/${id}`, { can_administer_channel_group: { old: shown, new: { direct_members: [o.userId, later, member2.userId], direct_subgroups: [] } } });
  const update = await waitFor(q, (e) => e.type === 'stream' && e.op === 'update' && e.property === 'can_administer_channel_group');
  const now = { direct_members: [o.userId, later, member2.userId].sort((a, b) => a - b), direct_subgroups: [] };
  t.same(update.value, now, 'the stream update carries the new value');
  const snap = q.snapshot;
  const fresh = (await register(s.api.as(member1), FETCH)).snapshot;
  applyEvent(snap, add);
  applyEvent(snap, update);
  const pick = (x: Snap) => x.subscriptions.find((c: any) => c.stream_id === id);
  t.same(pick(snap).can_administer_channel_group, pick(fresh).can_administer_channel_group, 'the snapshot with the events applied equals a fresh register');

  // Where guests see only the users they share a channel with, a guest who sees the channel hears
  // that a deactivated user left its permissions (Zulip's stream/update for group settings).
  const before = (await owner().ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_access_all_users_group;
  await owner().ok('PATCH', '/realm', { can_access_all_users_group: { new: GROUP_ID['role:members'] } });
  t.teardown(() => s.api.as(s.demo.owner).ok('PATCH', '/realm', { can_access_all_users_group: { new: before } }));
  // The user shares no channel with the guest (new users join the default channels): the guest does not see them.
  const joined = (await owner().ok('POST', '/register', { fetch_event_types: ['subscription'], include_subscribers: true })).subscriptions.filter((c: any) => c.subscribers.includes(later)).map((c: any) => c.name);
  if (joined.length) await owner().ok('DELETE', '/users/me/subscriptions', { subscriptions: joined, principals: [later] });
  const gq = await register(s.api.as(guest), FETCH);
  t.equal((await s.api.as(guest).call('GET', `/users/${later}`)).status, 400, 'the guest does not see the user');
  await owner().ok('DELETE', `/users/${later}`);
  const told = await waitFor(gq, (e) => e.type === 'stream' && e.op === 'update' && e.stream_id === id);
  t.match(told, { property: 'can_administer_channel_group', value: { direct_members: [o.userId, member2.userId].sort((a, b) => a - b), direct_subgroups: [] } }, 'the guest is told the value without the deactivated user');
  const guestFresh = (await register(s.api.as(guest), FETCH)).snapshot;
  t.same(guestFresh.subscriptions.find((c: any) => c.stream_id === id).can_administer_channel_group, told.value, "the guest's fresh register agrees");
});

t.test('subscriptions - a new subscription takes the first palette color the user does not use yet, as Zulip\'s pick_colors', async (t) => {
  const email = `colors-${process.pid}@parley.example`;
  const password = 'long enough pw';
  const { user_id } = await owner().ok('POST', '/users', { email, password, full_name: `Colors ${process.pid}` });
  const { api_key } = await s.api.ok('POST', '/fetch_api_key', { username: email, password });
  const me = s.api.as({ email, apiKey: api_key });
  const used = new Set(((await me.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).map((c) => c.color));
  const names = [`colors-a-${process.pid}`, `colors-b-${process.pid}`];
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: names.map((name) => ({ name })), principals: [user_id] });
  const mine = (await me.ok('GET', '/users/me/subscriptions')).subscriptions as any[];
  const [a, b] = names.map((n) => mine.find((c) => c.name === n)!.color);
  const first = COLORS.find((c) => !used.has(c));
  t.equal(a, first, `the first channel: the first color not among the user's (${[...used].join(', ')})`);
  t.equal(b, COLORS.find((c) => !used.has(c) && c !== first), 'the second: the next one');
});

t.test('partial_subscribers - after a restart a large channel lists its bots and recently active users, not its idle ones; a user seen again and a new subscriber are listed; peer events keep the list exact (FL 412)', async (t) => {
  const o = owner();
  const password = 'long enough pw';
  const person = async (tag: string) => {
    const email = `${tag}-${process.pid}@parley.example`;
    const { user_id } = await owner().ok('POST', '/users', { email, password, full_name: `${tag} ${process.pid}` });
    return { id: user_id as number, email };
  };
  const idle: Array<{ id: number; email: string }> = [];
  for (let i = 0; i < 4; i++) idle.push(await person(`idle${i}`));
  const bot = (await o.ok('POST', '/bots', { full_name: `Listed Bot ${process.pid}`, short_name: `listed-${process.pid}` })).user_id as number;
  const big = `partial-big-${process.pid}`;
  const small = `partial-small-${process.pid}`;
  await o.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: big }], principals: [s.demo.owner.userId, bot, ...idle.map((p) => p.id)] });
  await o.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: small }], principals: [s.demo.owner.userId, idle[0]!.id] });
  const bigId = (await o.ok('GET', '/get_stream_id', { stream: big })).stream_id as number;
  const smallId = (await o.ok('GET', '/get_stream_id', { stream: small })).stream_id as number;
  const everyone = [s.demo.owner.userId, bot, ...idle.map((p) => p.id)].sort((a, b) => a - b);
  const FETCH = { fetch_event_types: ['subscription', 'stream'], event_types: ['subscription', 'stream'], include_subscribers: 'partial', client_capabilities: { notification_settings_null: true } };
  const pick = (snap: Snap, id: number) => snap.subscriptions.find((c: any) => c.stream_id === id);
  const sorted = (ids: number[] | undefined) => (ids ? [...ids].sort((a, b) => a - b) : ids);

  // Subscribed since the realm loaded: every one of them is listed.
  const live = pick((await register(o, FETCH)).snapshot, bigId);
  t.same([sorted(live.partial_subscribers), live.subscribers, live.subscriber_count], [everyone, undefined, 6], 'before the restart: a partial list of the six subscribed since the realm loaded');
  t.same(sorted(pick((await register(o, FETCH)).snapshot, smallId).subscribers), [s.demo.owner.userId, idle[0]!.id].sort((a, b) => a - b), 'a channel under the bound has its complete list');

  // The owner's registers are reported to the realm as activity by the queue's next tick; a stop at once, before
  // that tick, still delivers the report (the stopping node flushes it before any realm unloads), so the owner
  // is listed after the restart.
  await s.stop();
  s = await s.restart();
  const after = () => register(owner(), FETCH);
  const snap = (await after()).snapshot;
  const listedAfter = sorted(pick(snap, bigId).partial_subscribers);
  t.same(listedAfter, [s.demo.owner.userId, bot].sort((a, b) => a - b), 'after the restart: the bot and the owner (active lately), not the four who never were');
  t.equal(pick(snap, bigId).subscriber_count, 6, 'subscriber_count still counts everyone');
  t.same(sorted(pick((await owner().ok('POST', '/register', { fetch_event_types: ['subscription'], include_subscribers: true })), bigId).subscribers), everyone, 'include_subscribers=true: the complete list');
  const listed = (await owner().ok('GET', '/users/me/subscriptions', { include_subscribers: 'partial' })).subscriptions.find((c: any) => c.stream_id === bigId);
  t.same([sorted(listed.partial_subscribers), listed.subscribers], [listedAfter, undefined], 'GET /users/me/subscriptions gives the same partial list');

  // A user seen again (registering reports activity): listed from then on, without an event.
  const { api_key } = await s.api.ok('POST', '/fetch_api_key', { username: idle[1]!.email, password });
  await register(s.api.as({ email: idle[1]!.email, apiKey: api_key }), { event_types: ['message'] });
  let seen: number[] = [];
  for (let i = 0; i < 50 && !seen.includes(idle[1]!.id); i++) {
    await new Promise((r) => setTimeout(r, 200));
    seen = pick((await after()).snapshot, bigId).partial_subscribers;
  }
  t.ok(seen.includes(idle[1]!.id), 'a user back from idleness is listed');

  // Snapshot plus events equals a fresh register: a newcomer is listed, a listed user who leaves and
  // an unlisted one who is deactivated are gone from the list and the count.
  const q = await after();
  const newcomer = await person('newcomer');
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: big }], principals: [newcomer.id] });
  await owner().ok('DELETE', '/users/me/subscriptions', { subscriptions: [big], principals: [bot] });
  await owner().ok('DELETE', `/users/${idle[2]!.id}`);
  await catchUp(q, q.snapshot, (e) => e.type === 'subscription' && e.op === 'peer_remove' && e.user_ids.includes(idle[2]!.id) && e.stream_ids.includes(bigId));
  const fresh = pick((await after()).snapshot, bigId);
  const applied = pick(q.snapshot, bigId);
  t.same([sorted(applied.partial_subscribers), applied.subscriber_count], [sorted(fresh.partial_subscribers), fresh.subscriber_count], 'snapshot plus events equals a fresh register');
  t.ok(fresh.partial_subscribers.includes(newcomer.id) && !fresh.partial_subscribers.includes(bot) && !fresh.partial_subscribers.includes(idle[2]!.id), 'the newcomer in, the bot and the deactivated user out');
  t.equal(fresh.subscriber_count, 5);
});
