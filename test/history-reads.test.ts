// History reads and authentication beside the realm's mailbox (issue 20):
// the realm answers `messageSources`, `directory` and `authenticate` at once
// (`QueryDef.concurrent`) instead of behind the organization's writes. What
// clients get: every change answered before the read was asked is in it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { z } from 'zod';
import { log } from '../lib/log.ts';
import { defineAction, defineQuery } from '../actors/runtime/action.ts';
import { ActorClient } from '../actors/runtime/client.ts';
import { LocalLeases } from '../actors/runtime/leases.ts';
import { LocalBus } from '../actors/runtime/local-bus.ts';
import { ActorNode } from '../actors/runtime/node.ts';
import { actorRef, defineActor } from '../actors/runtime/registry.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { T } from '../storage/tables.ts';
import { uniq } from './helpers/api.ts';
import { newPerson } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

// ---- the runtime: a concurrent query does not wait behind the mailbox --------

interface Slow {
  id: string;
  value: number;
}
const action = defineAction<Slow>();
const query = defineQuery<Slow>();
let gate: Promise<void> = Promise.resolve();
const slowAdd = action({
  type: 'slowAdd',
  fields: z.object({ by: z.number().int() }),
  // Holds the mailbox until the test opens the gate.
  prepare: () => gate,
  check: (_s, msg) => msg.by,
  apply(s, by, tx) {
    s.value += by;
    tx.write(T.userSettings.at(998, Number(s.id)).put({ value: s.value }));
    return { value: s.value };
  },
});
const peek = query({ type: 'peek', fields: z.object({}), concurrent: true, run: (s) => ({ value: s.value }) });
const read = query({ type: 'read', fields: z.object({}), run: (s) => ({ value: s.value }) });
const slowHandlers = { slowAdd, peek, read };
const slowRef = actorRef<typeof slowHandlers>('slowreads', (id) => `slowreads:${id}`);
defineActor({ ref: slowRef, durable: true, handlers: slowHandlers, load: async (_ctx, id) => ({ id, value: 0 }) });

t.test('runtime - a concurrent query answers while the mailbox is busy; a plain one waits its turn', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-reads-'));
  const store = new EmbeddedStore(dir);
  const bus = new LocalBus();
  const actors = new ActorClient(bus, 1, 5000);
  const node = new ActorNode(bus, new LocalLeases(), store, actors, { nodeId: 'test', shards: 1, siteUrl: 'http://x', heartbeatSecs: 50 }, log.child({ test: 'reads' }));
  await node.start();
  t.teardown(async () => {
    await node.stop();
    await bus.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const caller = { realmId: 998, userId: null };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const call = (msg: Record<string, unknown>): Promise<any> => actors.call(slowRef, '1', { ...msg, caller } as never);
  t.same(await call({ type: 'slowAdd', by: 1 }), { value: 1 }, 'a first change, answered');
  let open!: () => void;
  gate = new Promise<void>((r) => (open = r));
  const done: string[] = [];
  const change = call({ type: 'slowAdd', by: 10 }).then((r) => done.push(`slowAdd:${r.value}`));
  const queued = call({ type: 'read' }).then((r) => done.push(`read:${r.value}`));
  const beside = await call({ type: 'peek' });
  t.same(beside, { value: 1 }, 'the concurrent query answers at once, with every change answered before it');
  t.same(done, [], 'while the change and the plain query still wait in the mailbox');
  open();
  await Promise.all([change, queued]);
  t.same(done, ['slowAdd:11', 'read:11'], 'the mailbox then runs in order');
  t.same(await call({ type: 'peek' }), { value: 11 }, 'a concurrent query asked after the change shows it');
});

// ---- through the API ------------------------------------------------------------

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);

t.test('history reads - a message sent and then fetched is there, also while other sends are in flight', async (t) => {
  const name = uniq('reads');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const sender = s.api.as(s.demo.member1);
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.member1.userId] });
  for (let round = 0; round < 5; round++) {
    // Writes of others queue in the realm's mailbox meanwhile.
    const others = Array.from({ length: 10 }, (_, i) => owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'noise', content: `noise ${round}.${i}` }));
    const sent = await sender.ok('POST', '/messages', { type: 'stream', to: name, topic: 'mine', content: `mine ${round}` });
    const page = await sender.ok('GET', '/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [{ operator: 'channel', operand: name }, { operator: 'topic', operand: 'mine' }] });
    t.ok(
      page.messages.some((m: { id: number }) => m.id === sent.id),
      `round ${round}: the message just sent is in the history read made after its answer`,
    );
    const one = await sender.ok('GET', `/messages/${sent.id}`);
    t.equal(one.message.content.includes(`mine ${round}`), true, `round ${round}: and by ID`);
    await Promise.all(others);
  }
});

t.test('history reads - a user removed from a private channel with shared history no longer reads it', async (t) => {
  const name = uniq('private-reads');
  const reader = await newPerson(s);
  const who = s.api.as(reader);
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], invite_only: true, history_public_to_subscribers: true, principals: [reader.userId, s.demo.owner.userId] });
  const sent = await owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 't', content: 'for subscribers only' });
  const narrow = [{ operator: 'channel', operand: name }];
  const ids = async (params: Record<string, unknown>) => {
    const r = await who.call('GET', '/messages', { anchor: 'newest', num_before: 50, num_after: 0, ...params });
    return r.status === 200 ? (r.body.messages as Array<{ id: number }>).map((m) => m.id) : [];
  };
  t.ok((await ids({ narrow })).includes(sent.id), 'a subscriber reads the channel');
  t.equal((await who.call('GET', `/messages/${sent.id}`)).status, 200, 'and fetches its message by ID');
  await owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [name], principals: [reader.userId] });
  const later = await owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 't', content: 'after the removal' });
  for (const [what, params] of [['narrowed to the channel', { narrow }], ['unnarrowed', {}]] as const) {
    const seen = await ids(params);
    t.notOk(seen.includes(later.id), `${what}: a message sent after the removal is not read`);
    t.notOk(seen.includes(sent.id), `${what}: nor the history it read before`);
  }
  t.equal((await who.call('GET', `/messages/${later.id}`)).status, 400, 'nor fetched by ID');
  t.equal((await who.call('GET', `/messages/${sent.id}`)).status, 400, 'the old message neither');
});

t.test('history reads - a former subscriber of a private channel with protected history reads only what was sent while subscribed', async (t) => {
  const name = uniq('protected-reads');
  const reader = await newPerson(s);
  const who = s.api.as(reader);
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], invite_only: true, history_public_to_subscribers: false, principals: [reader.userId, s.demo.owner.userId] });
  const channelId = (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  const narrow = [{ operator: 'channel', operand: name }];
  const ids = async (params: Record<string, unknown>) => {
    const r = await who.call('GET', '/messages', { anchor: 'newest', num_before: 100, num_after: 0, ...params });
    return r.status === 200 ? (r.body.messages as Array<{ id: number }>).map((m) => m.id) : [];
  };
  const topics = async () => {
    const r = await who.call('GET', `/users/me/${channelId}/topics`);
    return r.status === 200 ? (r.body.topics as Array<{ name: string }>).map((x) => x.name) : [];
  };
  const before = await owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'while subscribed', content: 'received' });
  await owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [name], principals: [reader.userId] });
  const later = await owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'after leaving', content: 'after the removal' });
  for (const [what, params] of [['narrowed to the channel', { narrow }], ['unnarrowed', {}]] as const) {
    t.notOk((await ids(params)).includes(later.id), `${what}: a message sent after the removal is not read`);
  }
  t.ok((await ids({})).includes(before.id), 'unnarrowed: a message received while subscribed is still read (Zulip keeps its UserMessage row)');
  t.equal((await who.call('GET', `/messages/${later.id}`)).status, 400, 'a message sent after the removal is not fetched by ID');
  t.equal((await who.call('GET', `/messages/${before.id}`)).status, 200, 'one received while subscribed is');
  const found = await topics();
  t.notOk(found.includes('after leaving'), 'a topic begun after the removal is not listed');
  // Subscribed again: what is sent from then on is theirs; the gap stays closed.
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [reader.userId] });
  const back = await owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'after leaving', content: 'after rejoining' });
  const seen = await ids({});
  t.ok(seen.includes(back.id), 'subscribed again: a new message is read');
  t.notOk(seen.includes(later.id), 'the message of the gap is still not read');
  t.equal((await who.call('GET', `/messages/${later.id}`)).status, 400, 'nor fetched by ID');
  // A public channel's history stays open to a former subscriber (as to any member).
  const open = uniq('public-reads');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: open }], principals: [reader.userId, s.demo.owner.userId] });
  await owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [open], principals: [reader.userId] });
  const pub = await owner.ok('POST', '/messages', { type: 'stream', to: open, topic: 't', content: 'public, after leaving' });
  t.equal((await who.call('GET', `/messages/${pub.id}`)).status, 200, 'a public channel message sent after leaving is still readable by ID');
});

t.test('authentication - a revoked API key is refused at once, a new one accepted', async (t) => {
  const person = await newPerson(s);
  const api = s.api.as(person);
  await api.ok('GET', '/users/me');
  const fresh = await api.ok('POST', '/users/me/api_key/regenerate');
  const old = await api.call('GET', '/users/me');
  t.equal(old.status, 401, 'the old key is refused right after the regeneration was answered');
  const renewed = await s.api.as({ email: person.email, apiKey: fresh.api_key }).ok('GET', '/users/me');
  t.equal(renewed.user_id, person.userId, 'the new key works');
});
