// One shape for every change: a request rejected at its first, middle or last
// entry changes nothing, in memory (what the API shows, at once and to later
// requests) and in the store (every row, compared after the server stopped),
// also across a restart.
import { join } from 'node:path';
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { register } from './helpers/events.ts';
import { serverFor, type TestServer } from './helpers/server.ts';
import { dumpStore } from './helpers/store-dump.ts';

const embedded = !process.env.PARLEY_TEST_GATEWAYS;
let s = await serverFor(t);
const FETCH = { include_subscribers: 'true', fetch_event_types: ['realm_user', 'subscription', 'stream', 'message', 'recent_private_conversations', 'scheduled_messages'] };

/** What a user sees of the realm, without the queue's own IDs. */
async function view(api: Api): Promise<Record<string, unknown>> {
  const { queue_id: _q, last_event_id: _l, ...snapshot } = (await register(api, FETCH)).snapshot;
  const subs = await api.ok('GET', '/users/me/subscriptions', { include_subscribers: true });
  return { snapshot, subscriptions: subs.subscriptions };
}

/**
 * Stops the embedded server, reads its store, starts it again. Without the
 * event queues the stop kept for the next start (`shard_handoffs` and their
 * fences): each `view` registers a queue, so they differ, and they are the
 * process's, not the organization's.
 */
async function restartWithDump(): Promise<ReturnType<typeof dumpStore>> {
  await s.stop();
  const { shard_handoffs: _kept, _fences, ...dump } = dumpStore(join(s.dataDir!, 'data'));
  dump._fences = _fences!.filter(([scope]) => !String(scope).startsWith('handoff:'));
  const next: TestServer = await s.restart();
  t.teardown(() => next.stop());
  s = next;
  return dump;
}

const owner = () => s.api.as(s.demo.owner);

const existing = uniq('existing');
await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: existing }] });

const bad = { name: '' };
const cases: Array<[string, Array<{ name: string }>, unknown[] | undefined]> = [
  ['first', [bad, { name: uniq('new') }, { name: uniq('new') }], undefined],
  ['middle', [{ name: uniq('new') }, bad, { name: existing }], undefined],
  ['last', [{ name: uniq('new') }, { name: existing }, { name: 'x'.repeat(61) }], undefined],
  ['last principal', [{ name: uniq('new') }], ['PRINCIPALS']],
];

t.test('rollback - a subscribe rejected at its first, middle or last entry changes nothing the API shows', async (t) => {
  const before = await view(owner());
  for (const [where, subscriptions, principals] of cases) {
    const p = principals ? [s.demo.member1.userId, s.demo.member2.email, 999_999] : undefined;
    const r = await owner().post('/users/me/subscriptions', { subscriptions, ...(p ? { principals: p } : {}) });
    t.equal(r.status, 400, `rejected at the ${where} entry: ${r.body.msg}`);
    t.equal(r.body.code, 'BAD_REQUEST');
    t.same(await view(owner()), before, `nothing changed after a rejection at the ${where} entry`);
  }
  // A later request must not find any channel the rejected ones named.
  const later = uniq('later');
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: later }] });
  const names = (await owner().ok('GET', '/users/me/subscriptions')).subscriptions.map((x: any) => x.name);
  t.ok(names.includes(later));
  for (const [, subscriptions] of cases) for (const { name } of subscriptions) if (name.startsWith('new-')) t.notOk(names.includes(name), `${name} was never created`);
  const streams = (await register(owner(), { fetch_event_types: ['stream'] })).snapshot.streams.map((x: any) => x.name);
  for (const [, subscriptions] of cases) for (const { name } of subscriptions) if (name.startsWith('new-')) t.notOk(streams.includes(name), `${name} is not a channel`);
});

t.test('rollback - the store holds exactly what it held before rejected requests, across a restart', { skip: embedded ? false : 'reads the embedded data directory' }, async (t) => {
  const viewBefore = await view(owner());
  const dumpBefore = await restartWithDump();
  t.same(await view(owner()), viewBefore, 'a restart alone changes nothing');
  for (const [where, subscriptions, principals] of cases) {
    const p = principals ? [s.demo.member1.userId, 999_999] : undefined;
    const r = await owner().post('/users/me/subscriptions', { subscriptions, ...(p ? { principals: p } : {}) });
    t.equal(r.status, 400, `rejected at the ${where} entry`);
  }
  const r = await owner().post('/messages', { type: 'direct', to: [s.demo.member1.userId, 999_999], content: 'never stored' });
  t.equal(r.status, 400, 'a direct message to a list with one unknown user is rejected');
  const sched = await owner().post('/scheduled_messages', { type: 'stream', to: 999_999, topic: 't', content: 'x', scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) + 60 });
  t.equal(sched.body.code, 'STREAM_DOES_NOT_EXIST');
  const dumpAfter = await restartWithDump();
  t.same(dumpAfter, dumpBefore, 'every row of every table (and the fences) is as it was');
  t.same(await view(owner()), viewBefore, 'and so is what the API shows after a restart');
});
