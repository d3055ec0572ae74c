// subscriber_count (FL 394) is kept by the realm's state, not counted per channel formatted: it stays
// equal to a walk of the channel's subscriptions (GET /streams/{id}/members, `activeSubscribers`) and to
// what GET /streams and register report, through subscribe, unsubscribe, deactivation and reactivation
// of a subscriber (a deactivated user's subscription does not count, as in Zulip), archive and
// unarchive, a restart, and both ways of loading the realm (checkpoint + journal, tables).
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { DEMO_REALM_ID } from '../lib/demo.ts';
import { RealmState } from '../actors/realm/state.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { NO_LIMITS } from './helpers/backup-org.ts';
import { serverFor } from './helpers/server.ts';
import type { Api } from './helpers/api.ts';

// A checkpoint every few changes, so that the restart loads from one and the journal after it.
let s = await serverFor(t, { env: { ...NO_LIMITS, PARLEY_CHECKPOINT_EVERY: '5' } });
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
