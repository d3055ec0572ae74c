// The action runtime itself (actors/runtime), in one process with the real
// in-process bus, leases and embedded store, and a counter actor kind made
// for these tests: the order check -> apply -> durable -> events -> reply,
// replies that wait for earlier changes to be durable, a failed commit that
// no client ever saw, and durable timers across a restart.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { z } from 'zod';
import { badRequest } from '../lib/errors.ts';
import { log } from '../lib/log.ts';
import { defineAction, defineQuery, defineTimer } from '../actors/runtime/action.ts';
import { ActorClient } from '../actors/runtime/client.ts';
import { LocalLeases } from '../actors/runtime/leases.ts';
import { LocalBus } from '../actors/runtime/local-bus.ts';
import { ActorNode } from '../actors/runtime/node.ts';
import { actorRef, defineActor } from '../actors/runtime/registry.ts';
import { latestPerRow } from '../actors/runtime/journal.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import type { Store, Writer, WriteOp } from '../storage/store.ts';
import { T } from '../storage/tables.ts';

/** A store whose commits a test can hold or fail. */
class ControlledStore implements Store {
  hold: Promise<void> | null = null;
  failNext = false;
  commits = 0;
  constructor(readonly inner: Store) {}
  init = () => this.inner.init();
  get = <V>(table: string, pk: string, ck: number | string) => this.inner.get<V>(table, pk, ck);
  range = <V>(table: string, pk: string, opts?: Parameters<Store['range']>[2]) => this.inner.range<V>(table, pk, opts);
  close = () => this.inner.close();
  async claim(scope: string, token: number): Promise<Writer | null> {
    const w = await this.inner.claim(scope, token);
    if (!w) return null;
    return {
      scope,
      token,
      commit: async (ops: WriteOp[]) => {
        this.commits++;
        if (this.hold) await this.hold;
        if (this.failNext) {
          this.failNext = false;
          throw new Error('injected commit failure');
        }
        return w.commit(ops);
      },
    };
  }
}

interface Counter {
  id: string;
  value: number;
  fired: string[];
}

// The counter's value is stored in the user_settings table under a test realm (999).
const row = (id: string) => T.userSettings.at(999, Number(id));
const action = defineAction<Counter>();
const query = defineQuery<Counter>();
const timer = defineTimer<Counter>();

const add = action({
  type: 'add',
  fields: z.object({ by: z.number().int() }),
  check(s, msg) {
    if (msg.by <= 0) throw badRequest('must add a positive amount');
    return msg.by;
  },
  apply(s, by, tx) {
    s.value += by;
    tx.write(row(s.id).put({ value: s.value }));
    return { value: s.value };
  },
});
const get = query({ type: 'get', fields: z.object({}), run: (s) => ({ value: s.value, fired: s.fired }) });
const remind = action({
  type: 'remind',
  fields: z.object({ name: z.string(), inMs: z.number().int() }),
  check: (_s, msg) => msg,
  apply(s, m, tx) {
    tx.setTimer('ring', Date.now() + m.inMs, { name: m.name }, 1);
    return {};
  },
});
const ring = timer({
  name: 'ring',
  check: (s, payload: { name: string }) => payload,
  apply(s, p, tx) {
    s.fired.push(p.name);
    tx.write(T.userSettings.at(999, 0).put({ fired: s.fired.join(',') }));
    return null;
  },
});
const handlers = { add, get, remind };
const counterRef = actorRef<typeof handlers>('counter', (id) => `counter:${id}`);
defineActor({
  ref: counterRef,
  durable: true,
  handlers,
  timers: { ring },
  async load(ctx, id) {
    const stored = await row(id).get(ctx.store);
    const fired = await T.userSettings.at(999, 0).get(ctx.store);
    return { id, value: Number(stored?.value ?? 0), fired: fired?.fired ? String(fired.fired).split(',') : [] };
  },
});

async function startNode(dir: string) {
  const store = new ControlledStore(new EmbeddedStore(dir));
  const bus = new LocalBus();
  const actors = new ActorClient(bus, 1, 5000);
  const node = new ActorNode(bus, new LocalLeases(), store, actors, { nodeId: 'test', shards: 1, siteUrl: 'http://x', heartbeatSecs: 50 }, log.child({ test: 'runtime' }));
  await node.start();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const call = (msg: Record<string, unknown>): Promise<any> => actors.call(counterRef, '1', { ...msg, caller: { realmId: 999, userId: null } } as never);
  return { store, node, call, stop: async () => { await node.stop(); await bus.close(); await store.close(); } };
}

const dir = mkdtempSync(join(tmpdir(), 'parley-runtime-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));

t.test('runtime - a query made after a change is answered only once that change is durable', async (t) => {
  const n = await startNode(dir);
  t.teardown(n.stop);
  let release!: () => void;
  n.store.hold = new Promise<void>((r) => (release = r));
  const done: string[] = [];
  const write = n.call({ type: 'add', by: 5 }).then((r) => done.push(`add:${r.value}`));
  const read = n.call({ type: 'get' }).then((r) => done.push(`get:${r.value}`));
  await new Promise((r) => setTimeout(r, 100));
  t.same(done, [], 'neither the change nor the later read is answered while the commit is held');
  n.store.hold = null;
  release();
  await Promise.all([write, read]);
  t.same(done, ['add:5', 'get:5'], 'the change, then the read that shows it');
});

t.test('runtime - a change whose commit fails is never shown, and the actor reloads from the store', async (t) => {
  const n = await startNode(dir);
  t.teardown(n.stop);
  const start = (await n.call({ type: 'get' })).value;
  let release!: () => void;
  n.store.hold = new Promise<void>((r) => (release = r));
  n.store.failNext = true;
  const failed = n.call({ type: 'add', by: 100 }).then(() => 'answered', (e: Error & { code?: string }) => `error ${e.code}`);
  const read = n.call({ type: 'get' }).then((r) => `read ${r.value}`, (e: Error & { code?: string }) => `error ${e.code}`);
  n.store.hold = null;
  release();
  t.equal(await failed, 'error SERVICE_UNAVAILABLE', 'the change is answered with a 503, not success');
  t.equal(await read, 'error SERVICE_UNAVAILABLE', 'the read made after it does not show it either');
  t.equal((await n.call({ type: 'get' })).value, start, 'the next message sees the stored state: the failed change is gone');
  t.equal((await n.call({ type: 'add', by: 1 })).value, start + 1, 'and the actor writes again');
});

t.test('runtime - a rejected check changes nothing and writes nothing', async (t) => {
  const n = await startNode(dir);
  t.teardown(n.stop);
  const before = (await n.call({ type: 'get' })).value;
  const commits = n.store.commits;
  const r = await n.call({ type: 'add', by: -3 }).then(() => 'answered', (e: Error & { code?: string }) => e.code);
  t.equal(r, 'BAD_REQUEST');
  t.equal(n.store.commits, commits, 'no commit');
  t.equal((await n.call({ type: 'get' })).value, before);
});

t.test('runtime - a durable timer set before a stop fires once after the restart', async (t) => {
  let n = await startNode(dir);
  await n.call({ type: 'remind', name: 'soon', inMs: 300 });
  await n.stop();
  await new Promise((r) => setTimeout(r, 500)); // due while nothing runs
  n = await startNode(dir);
  t.teardown(n.stop);
  const deadline = Date.now() + 5000;
  let fired: string[] = [];
  while (Date.now() < deadline && !(fired = (await n.call({ type: 'get' })).fired).includes('soon')) await new Promise((r) => setTimeout(r, 50));
  t.same(fired, ['soon'], 'fired after the restart');
  await new Promise((r) => setTimeout(r, 300));
  t.same((await n.call({ type: 'get' })).fired, ['soon'], 'and only once');
  t.same(await T.timers.partition(0, Math.floor(Date.now() / 3_600_000)).values(n.store), [], 'its row is gone with the commit of its handler');
});

t.test('runtime - a commit keeps the last op on each row, in order of those last ops', async (t) => {
  const put = (pk: string, ck: number, value: unknown): WriteOp => ({ op: 'put', table: 'channels', pk, ck, value });
  const del = (pk: string, ck: number): WriteOp => ({ op: 'delete', table: 'channels', pk, ck });
  const ops = [put('1:0', 1, 'a'), put('1:0', 2, 'b'), del('1:0', 1), put('1:0', 2, 'c'), put('1:1', 1, 'd'), { ...put('1:0', 1, 'x'), table: 'users' }];
  t.same(latestPerRow(ops), [del('1:0', 1), put('1:0', 2, 'c'), put('1:1', 1, 'd'), { ...put('1:0', 1, 'x'), table: 'users' }]);
  const distinct = [put('1:0', 1, 'a'), put('1:0', 2, 'b')];
  t.equal(latestPerRow(distinct), distinct, 'distinct rows: the same list');
});
