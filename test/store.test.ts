/**
 * One suite, every Store implementation: EmbeddedStore on a temp directory and
 * CassandraStore on a real Cassandra (PARLEY_CASSANDRA_CONTACT_POINTS, default
 * 127.0.0.1:9042) in a throwaway keyspace that is dropped afterwards.
 *
 * Without a reachable Cassandra the Cassandra half is skipped, unless
 * PARLEY_TEST_CASSANDRA=1, which makes it a failure. The fault-injection
 * wrapper (storage/faulty.ts) is tested when Redis (PARLEY_REDIS_URL, default
 * redis://127.0.0.1:6379) is reachable, under a throwaway key prefix.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import cassandra from 'cassandra-driver';
import { open } from 'lmdb';
import { Redis } from 'ioredis';
import { loadConfig } from '../lib/config.ts';
import { type ApplyHook, CassandraStore, type CassandraStoreOptions } from '../storage/cassandra.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { FaultyStore, maybeFaulty } from '../storage/faulty.ts';
import { FencedError, type Key, type Store, type Writer, type WriteOp } from '../storage/store.ts';

// Creating a Cassandra keyspace and its tables takes a few seconds on 2 cores.
t.setTimeout(180_000);

const put = (table: string, pk: string, ck: Key, value: unknown): WriteOp => ({ op: 'put', table, pk, ck, value });
const del = (table: string, pk: string, ck: Key): WriteOp => ({ op: 'delete', table, pk, ck });
const cks = (rows: { ck: Key }[]) => rows.map((r) => r.ck);
const newScope = (what: string) => `test:${what}:${randomBytes(4).toString('hex')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function claimed(store: Store, scope: string, token: number): Promise<Writer> {
  const w = await store.claim(scope, token);
  if (!w) throw new Error(`claim(${scope}, ${token}) resolved null`);
  return w;
}

/** The behaviour every Store must have. */
async function storeSuite(t: Test, store: Store): Promise<void> {
  // One owner writes everything the read tests need.
  const writer = await claimed(store, newScope('rw'), 1);
  const write = (ops: WriteOp[]) => writer.commit(ops);

  await t.test('store - put/get round trip of JSON values in a bigint and a text table', async (t) => {
    const message = { id: 42, content: 'héllo 👋 "quoted"', flags: ['read'], topic: null, nested: { a: [1, 2.5, -3], b: true } };
    const meta = { name: 'Zulip Dev', ids: { next: 7 } };
    await write([put('messages', 'rt:1:0', 42, message), put('messages', 'rt:1:0', 2 ** 40, 'big id'), put('messages', 'rt:1:0', 0, 0), put('realms', 'rt', 'meta', meta)]);
    t.strictSame(await store.get('messages', 'rt:1:0', 42), message);
    t.equal(await store.get('messages', 'rt:1:0', 2 ** 40), 'big id');
    t.equal(await store.get('messages', 'rt:1:0', 0), 0);
    t.strictSame(await store.get('realms', 'rt', 'meta'), meta);
    t.strictSame(cks(await store.range('messages', 'rt:1:0')), [0, 42, 2 ** 40], 'bigint keys come back as JS numbers');
    const [first] = await store.range('messages', 'rt:1:0', { limit: 1 });
    t.equal(typeof first?.ck, 'number');
    const [text] = await store.range('realms', 'rt');
    t.equal(text?.ck, 'meta');
    await write([put('realms', 'rt', 'meta', { ...meta, name: 'renamed' }), put('user_settings', 'rt:1', 'settings', false), put('user_settings', 'rt:2', 'settings', null)]);
    t.equal((await store.get<typeof meta>('realms', 'rt', 'meta'))?.name, 'renamed', 'a put overwrites');
    t.equal(await store.get('user_settings', 'rt:1', 'settings'), false, 'a falsy value is not a missing row');
    t.equal(await store.get('user_settings', 'rt:2', 'settings'), null, 'null is a value');
  });

  await t.test('store - a missing row reads as undefined', async (t) => {
    t.equal(await store.get('users', 'missing-realm', 1), undefined);
    t.equal(await store.get('realms', 'missing-realm', 'meta'), undefined);
    await write([put('users', 'mr', 1, { id: 1 })]);
    t.equal(await store.get('users', 'mr', 2), undefined, 'another key of an existing partition');
  });

  await t.test('store - a key longer than any stored key reads as missing (reads take user input)', async (t) => {
    const long = 'é'.repeat(3_000);
    t.equal(await store.get('attachments', 'lk:1', long), undefined, 'a long clustering key');
    t.equal(await store.get('attachments', long, 'a'), undefined, 'a long partition key');
    t.strictSame(await store.range('attachment_messages', long), [], 'a range of a long partition');
    t.strictSame(await store.range('attachments', 'lk:1', { gte: long }), [], 'a range from a long bound');
  });

  await t.test('store - range forward with inclusive gte/lte and limit', async (t) => {
    await write([1, 2, 3, 4, 5, 6, 7, 8].map((id) => put('messages', 'fw', id, { id })));
    t.strictSame(cks(await store.range('messages', 'fw')), [1, 2, 3, 4, 5, 6, 7, 8]);
    t.strictSame(await store.range('messages', 'fw', { gte: 2, lte: 3 }), [{ ck: 2, value: { id: 2 } }, { ck: 3, value: { id: 3 } }], 'rows carry their values');
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 2, lte: 5 })), [2, 3, 4, 5], 'both bounds included');
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 6 })), [6, 7, 8]);
    t.strictSame(cks(await store.range('messages', 'fw', { lte: 3 })), [1, 2, 3]);
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 1, lte: 8 })), [1, 2, 3, 4, 5, 6, 7, 8], 'bounds on the first and last row');
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 0, lte: 100 })), [1, 2, 3, 4, 5, 6, 7, 8], 'bounds outside the data');
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 4, lte: 4 })), [4], 'gte = lte');
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 6, lte: 5 })), [], 'gte > lte');
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 9 })), [], 'past the end');
    t.strictSame(cks(await store.range('messages', 'fw', { limit: 3 })), [1, 2, 3]);
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 3, limit: 2 })), [3, 4]);
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 7, limit: 5 })), [7, 8], 'limit beyond the rows');
    t.strictSame(cks(await store.range('messages', 'fw', { limit: 0 })), []);
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 7, lte: 1e16 - 1 })), [7, 8], 'a bound beyond 2^53 (an anchor past every id)');
    t.strictSame(cks(await store.range('messages', 'fw', { gte: -Infinity, lte: Infinity, limit: 2 })), [1, 2], 'infinite bounds');
    t.strictSame(cks(await store.range('messages', 'fw', { gte: 2.5, lte: 4.5 })), [3, 4], 'fractional bounds');
  });

  await t.test('store - range reverse with inclusive bounds and limit', async (t) => {
    await write([1, 2, 3, 4, 5, 6, 7, 8].map((id) => put('messages', 'rv', id, { id })));
    t.strictSame(cks(await store.range('messages', 'rv', { reverse: true })), [8, 7, 6, 5, 4, 3, 2, 1]);
    t.strictSame(cks(await store.range('messages', 'rv', { reverse: true, gte: 2, lte: 5 })), [5, 4, 3, 2], 'both bounds included');
    t.strictSame(cks(await store.range('messages', 'rv', { reverse: true, limit: 3 })), [8, 7, 6], 'the newest first');
    t.strictSame(cks(await store.range('messages', 'rv', { reverse: true, lte: 5, limit: 2 })), [5, 4]);
    t.strictSame(cks(await store.range('messages', 'rv', { reverse: true, gte: 7 })), [8, 7]);
    t.strictSame(cks(await store.range('messages', 'rv', { reverse: true, gte: 2, lte: 3, limit: 10 })), [3, 2]);
    t.strictSame(cks(await store.range('messages', 'rv', { reverse: true, lte: 0 })), []);
  });

  await t.test('store - range over a text clustering key in string order', async (t) => {
    const keys = ['2:1', '1:2', '10:1', '1:1', '1:10'];
    await write(keys.map((k) => put('timers', 'tx', k, { k })));
    // Code-unit (for these keys also byte) order: '0' < ':', so '10:1' sorts before '1:1'.
    t.strictSame(cks(await store.range('timers', 'tx')), ['10:1', '1:1', '1:10', '1:2', '2:1']);
    t.strictSame(cks(await store.range('timers', 'tx', { gte: '1:', lte: '1:\uffff' })), ['1:1', '1:10', '1:2'], 'a prefix range');
    t.strictSame(cks(await store.range('timers', 'tx', { gte: '1:10', lte: '2:1' })), ['1:10', '1:2', '2:1'], 'both bounds included');
    t.strictSame(cks(await store.range('timers', 'tx', { reverse: true, limit: 2 })), ['2:1', '1:2']);
    t.strictSame(cks(await store.range('timers', 'tx', { reverse: true, lte: '1:2', limit: 2 })), ['1:2', '1:10']);
  });

  await t.test('store - text keys beyond U+FFFF (emoji) are in every range, in code point order', async (t) => {
    const keys = ['🔑 key', 'b', '\uffff', '\ue000x', 'a🔑'];
    await write(keys.map((k) => put('timers', 'cp', k, { k })));
    const order = ['a🔑', 'b', '\ue000x', '\uffff', '🔑 key'];
    t.strictSame(cks(await store.range('timers', 'cp')), order, 'an unbounded range gives them all, as UTF-8 bytes order');
    t.strictSame(cks(await store.range('timers', 'cp', { reverse: true })), [...order].reverse(), 'reversed');
    t.strictSame(cks(await store.range('timers', 'cp', { gte: '\uffff' })), ['\uffff', '🔑 key'], 'from a lower bound');
    t.strictSame(cks(await store.range('timers', 'cp', { lte: '\uffff', reverse: true, limit: 2 })), ['\uffff', '\ue000x'], 'back from an upper bound');
    t.strictSame(cks(await store.range('timers', 'cp', { gte: 'b', lte: '🔑' })), ['b', '\ue000x', '\uffff'], 'both bounds');
  });

  await t.test('store - an empty partition ranges to nothing', async (t) => {
    t.strictSame(await store.range('messages', 'empty'), []);
    t.strictSame(await store.range('messages', 'empty', { reverse: true, limit: 5 }), []);
    t.strictSame(await store.range('messages', 'empty', { gte: 1, lte: 10 }), []);
    t.strictSame(await store.range('realms', 'empty'), []);
  });

  await t.test('store - partitions and tables do not leak into each other', async (t) => {
    const pks = ['a', 'ab', 'a:1', 'a:', 'b'];
    await write(pks.flatMap((pk, i) => [put('user_flags', pk, 1, { pk }), put('user_flags', pk, 100 + i, { pk })]));
    await write([put('users', 'a', 1, { table: 'users' }), put('channels', 'a', 1, { table: 'channels' })]);
    for (const [i, pk] of pks.entries()) {
      t.strictSame(await store.range('user_flags', pk), [{ ck: 1, value: { pk } }, { ck: 100 + i, value: { pk } }], `partition ${pk}`);
      t.strictSame(await store.range('user_flags', pk, { reverse: true }), [{ ck: 100 + i, value: { pk } }, { ck: 1, value: { pk } }], `partition ${pk} reversed`);
      t.strictSame(await store.get('user_flags', pk, 1), { pk });
    }
    t.strictSame(await store.range('user_flags', 'a:1:'), [], 'a prefix of nothing');
    t.strictSame(await store.get('users', 'a', 1), { table: 'users' });
    t.strictSame(await store.get('channels', 'a', 1), { table: 'channels' });
  });

  await t.test('store - delete removes a row; deleting a missing row is harmless', async (t) => {
    await write([put('channels', 'del', 1, 'one'), put('channels', 'del', 2, 'two'), put('channels', 'del', 3, 'three')]);
    await write([del('channels', 'del', 2), del('channels', 'del', 99), del('channels', 'nowhere', 1)]);
    t.equal(await store.get('channels', 'del', 2), undefined);
    t.strictSame(cks(await store.range('channels', 'del')), [1, 3]);
    t.strictSame(cks(await store.range('channels', 'del', { reverse: true, gte: 2, lte: 2 })), []);
    await write([put('channels', 'del', 2, 'again')]);
    t.equal(await store.get('channels', 'del', 2), 'again', 'a deleted row can be written again');
  });

  await t.test('store - ops of one commit apply in order', async (t) => {
    await write([put('dm_conversations', 'ord', '1,2', 'first'), put('dm_conversations', 'ord', '1,2', 'second')]);
    t.equal(await store.get('dm_conversations', 'ord', '1,2'), 'second', 'put then put: the last wins');
    await write([put('dm_conversations', 'ord', '1,3', 'x'), del('dm_conversations', 'ord', '1,3')]);
    t.equal(await store.get('dm_conversations', 'ord', '1,3'), undefined, 'put then delete: deleted');
    await write([del('dm_conversations', 'ord', '1,2'), put('dm_conversations', 'ord', '1,2', 'third')]);
    t.equal(await store.get('dm_conversations', 'ord', '1,2'), 'third', 'delete then put: present');
    // 'b' (a greater value) first: Cassandra would let the greater value win a tie in one batch.
    await write([put('dm_conversations', 'ord', '2,3', 'b'), put('users', 'ord', 5, {}), put('dm_conversations', 'ord', '2,3', 'a')]);
    t.equal(await store.get('dm_conversations', 'ord', '2,3'), 'a', 'across partitions too');
    await write([put('dm_conversations', 'ord', '3,4', 'x')]);
    await write([del('dm_conversations', 'ord', '3,4')]);
    await write([put('dm_conversations', 'ord', '3,4', 'y')]);
    t.equal(await store.get('dm_conversations', 'ord', '3,4'), 'y', 'put, delete, put in successive commits');
  });

  await t.test('store - a multi-op commit is entirely visible once it resolves', async (t) => {
    const realm = 'mw';
    await write([
      put('realms', realm, 'ids', { message: 11 }),
      put('recipient_buckets', `${realm}:s1`, 0, 1),
      put('messages', `${realm}:s1:0`, 10, { id: 10 }),
      put('user_flags', `${realm}:1`, 10, ['read']),
    ]);
    t.strictSame(await store.get('realms', realm, 'ids'), { message: 11 });
    t.strictSame(cks(await store.range('recipient_buckets', `${realm}:s1`)), [0]);
    t.strictSame(await store.get('messages', `${realm}:s1:0`, 10), { id: 10 });
    t.strictSame(await store.get('user_flags', `${realm}:1`, 10), ['read']);

    // Larger than one Cassandra batch (~600 ops, ~300 KB over 30 partitions), with a row overwritten near the end.
    const body = 'x'.repeat(400);
    const ops: WriteOp[] = [put('realms', realm, 'big', 'early')];
    for (let id = 1; id <= 600; id++) ops.push(put('messages', `${realm}:big:${id % 30}`, id, { id, body }));
    ops.push(put('realms', realm, 'big', 'late'));
    await write(ops);
    let count = 0;
    for (let b = 0; b < 30; b++) count += (await store.range('messages', `${realm}:big:${b}`)).length;
    t.equal(count, 600, 'every row of a large commit');
    t.strictSame(await store.get('messages', `${realm}:big:17`, 17), { id: 17, body });
    t.equal(await store.get('realms', realm, 'big'), 'late', 'the later op on a row wins across batches');
    await t.resolves(write([]), 'an empty commit');
  });

  // ---- fencing ---------------------------------------------------------------

  await t.test('fencing - a claim returns a writer for its scope and token', async (t) => {
    const scope = newScope('w');
    const w = await claimed(store, scope, 7);
    t.equal(w.scope, scope);
    t.equal(w.token, 7);
    await w.commit([put('users', scope, 1, 'v')]);
    t.equal(await store.get('users', scope, 1), 'v');
    await t.rejects(store.claim(scope, -1), TypeError, 'a negative token');
    await t.rejects(store.claim(scope, 1.5), TypeError, 'a fractional token');
  });

  await t.test('fencing - a greater claim fences older writers; a smaller claim resolves null', async (t) => {
    const scope = newScope('fence');
    const w1 = await claimed(store, scope, 1);
    await w1.commit([put('users', scope, 1, 'by 1')]);
    const w5 = await claimed(store, scope, 5);
    t.equal(await store.claim(scope, 3), null, 'a smaller token after a greater one');
    t.equal(await store.claim(scope, 4), null, '... any smaller one');
    await t.rejects(w1.commit([put('users', scope, 2, 'late'), put('users', scope, 1, 'late')]), FencedError, 'the older writer is fenced');
    t.equal(await store.get('users', scope, 2), undefined, 'none of its ops is visible');
    t.equal(await store.get('users', scope, 1), 'by 1');
    await t.rejects(w1.commit([]), FencedError, 'an empty commit is fenced too');
    await w5.commit([put('users', scope, 1, 'by 5')]);
    const again = await claimed(store, scope, 5);
    await again.commit([put('users', scope, 3, 'by 5 again')]);
    t.equal(await store.get('users', scope, 3), 'by 5 again', 'claiming again with the same token works');
    t.equal(await store.get('users', scope, 1), 'by 5');
    const w9 = await claimed(store, scope, 9);
    await t.rejects(again.commit([put('users', scope, 4, 'x')]), FencedError);
    t.equal(await store.get('users', scope, 4), undefined);
    await w9.commit([del('users', scope, 1)]);
    t.equal(await store.get('users', scope, 1), undefined);
    const other = await claimed(store, `${scope}:other`, 1);
    await t.resolves(other.commit([put('users', scope, 5, 'other scope')]), 'scopes are independent');
  });

  await t.test('fencing - a commit held until after a newer claim is refused and leaves no trace', async (t) => {
    const scope = newScope('held');
    const old = await claimed(store, scope, 1);
    await old.commit([put('users', scope, 1, 'committed')]);
    const ops = [put('users', scope, 1, 'stale'), put('users', scope, 2, 'old only'), put('realms', scope, 'meta', 'old only'), del('users', scope, 1)];
    const newer = await claimed(store, scope, 2);
    // The old owner's commit is sent only now, as if held in a paused process.
    await t.rejects(old.commit(ops), FencedError);
    t.equal(await store.get('users', scope, 1), 'committed', 'its delete did not happen');
    t.equal(await store.get('users', scope, 2), undefined, 'rows the new owner never wrote stay absent');
    t.equal(await store.get('realms', scope, 'meta'), undefined);
    await newer.commit([put('users', scope, 3, 'new')]);
    t.equal(await store.get('users', scope, 3), 'new');
  });

  await t.test('fencing - racing claims: only the greatest token can commit', async (t) => {
    for (let round = 0; round < 3; round++) {
      const scope = newScope('race2');
      const [a, b] = await Promise.all([store.claim(scope, 1), store.claim(scope, 2)]);
      t.ok(b, 'the greater claim gets a writer');
      const results = await Promise.allSettled([a ? a.commit([put('users', scope, 1, 'a')]) : Promise.reject(new FencedError(scope)), b!.commit([put('users', scope, 2, 'b')])]);
      t.equal(results[0].status, 'rejected', 'the smaller cannot commit');
      if (results[0].status === 'rejected') t.type(results[0].reason, FencedError);
      t.equal(results[1].status, 'fulfilled', 'the greater can');
      t.equal(await store.get('users', scope, 1), undefined);
      t.equal(await store.get('users', scope, 2), 'b');
    }
    const scope = newScope('race9');
    const tokens = [4, 9, 1, 7, 3, 8, 2, 6, 5];
    const writers = await Promise.all(tokens.map((token) => store.claim(scope, token)));
    t.ok(writers[tokens.indexOf(9)], 'the greatest of nine racing claims gets a writer');
    const commits = await Promise.allSettled(writers.map((w, i) => (w ? w.commit([put('users', scope, tokens[i]!, 'x')]) : Promise.resolve(null))));
    const committed = tokens.filter((_, i) => writers[i] && commits[i]!.status === 'fulfilled');
    t.strictSame(committed, [9], 'only its writer commits');
    t.strictSame(cks(await store.range('users', scope)), [9]);
    t.equal(await store.claim(scope, 8), null);
  });

  await t.test('store - init() again is harmless', async (t) => {
    await write([put('users', 'again', 1, { kept: true })]);
    await store.init();
    await store.init();
    t.strictSame(await store.get('users', 'again', 1), { kept: true });
  });
}

// ---------------------------------------------------------------------------
// Fault injection (storage/faulty.ts), when Redis is there
// ---------------------------------------------------------------------------

const redisUrl = process.env['PARLEY_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

async function redisUnreachable(): Promise<string | null> {
  const r = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000 });
  r.on('error', () => {});
  try {
    await r.connect();
    await r.ping();
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    r.disconnect();
  }
}
const redisDown = await redisUnreachable();

/** Arms a fault and waits until the wrapper has polled it (or reported it unusable); returns readers of its state and outcome. */
async function arm(store: FaultyStore, redis: Redis, prefix: string, fault: { scope: string; stage: 'commit' | 'apply'; action: 'delay' | 'duplicate'; ms: number }) {
  const id = randomBytes(4).toString('hex');
  await redis.set(`${prefix}:faults`, JSON.stringify({ id, ...fault }));
  const deadline = Date.now() + 5000;
  while (store.armedFault?.id !== id && !(await redis.exists(`${prefix}:faults:${id}:outcome`)) && Date.now() < deadline) await sleep(20);
  return {
    /** The state key once it has this value (or whatever it holds after a second). */
    state: async (expected: string) => {
      const deadline = Date.now() + 1000;
      for (;;) {
        const v = await redis.get(`${prefix}:faults:${id}:state`);
        if (v === expected || Date.now() > deadline) return v;
        await sleep(20);
      }
    },
    outcome: async (timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const v = await redis.get(`${prefix}:faults:${id}:outcome`);
        if (v !== null || Date.now() > deadline) return v;
        await sleep(50);
      }
    },
  };
}

/** Fault tests on `inner`; `apply` ones only for a CassandraStore. */
async function faultSuite(t: Test, makeInner: () => Promise<Store>, cassandraBacked: boolean): Promise<void> {
  const prefix = `parley_test_${randomBytes(4).toString('hex')}`;
  const redis = new Redis(redisUrl);
  const store = new FaultyStore(await makeInner(), { redisUrl, prefix, log: quietLog() });
  t.teardown(async () => {
    await store.close();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  await t.test('faults - maybeFaulty wraps only when enabled', async (t) => {
    const plain = {} as Store;
    t.equal(maybeFaulty(plain, { redisUrl, prefix, enabled: false }), plain);
  });

  await t.test('faults - commit delay: held past a newer claim, then fenced', async (t) => {
    const scope = newScope('fdelay');
    const old = await claimed(store, scope, 1);
    const fault = await arm(store, redis, prefix, { scope, stage: 'commit', action: 'delay', ms: 600 });
    const held = old.commit([put('users', scope, 1, 'held')]);
    held.catch(() => {});
    await sleep(100);
    t.equal(await fault.state('holding'), 'holding');
    const newer = await claimed(store, scope, 2);
    await t.rejects(held, FencedError, 'the held commit is refused once released');
    t.equal(await fault.state('released'), 'released');
    t.equal(await fault.outcome(), 'fenced');
    t.equal(await store.get('users', scope, 1), undefined);
    await newer.commit([put('users', scope, 1, 'new')]);
    t.equal(await store.get('users', scope, 1), 'new');
  });

  await t.test('faults - commit duplicate: the repeat after a newer claim is fenced', async (t) => {
    const scope = newScope('fdup');
    const old = await claimed(store, scope, 1);
    const fault = await arm(store, redis, prefix, { scope, stage: 'commit', action: 'duplicate', ms: 500 });
    await old.commit([put('users', scope, 1, 'old')]);
    t.equal(await fault.state('holding'), 'holding');
    const newer = await claimed(store, scope, 2);
    await newer.commit([put('users', scope, 1, 'new')]);
    t.equal(await fault.outcome(), 'fenced');
    t.equal(await fault.state('released'), 'released');
    t.equal(await store.get('users', scope, 1), 'new');
  });

  if (!cassandraBacked) {
    await t.test('faults - stage apply needs a CassandraStore', async (t) => {
      const fault = await arm(store, redis, prefix, { scope: newScope('fnoapply'), stage: 'apply', action: 'delay', ms: 10 });
      t.match(await fault.outcome(), /^error: /);
    });
    return;
  }

  await t.test('faults - apply duplicate: the same data re-sent after a newer owner wrote changes nothing', async (t) => {
    const scope = newScope('fapdup');
    const old = await claimed(store, scope, 1);
    const fault = await arm(store, redis, prefix, { scope, stage: 'apply', action: 'duplicate', ms: 800 });
    await old.commit([put('users', scope, 1, 'old'), put('users', scope, 2, 'old only')]);
    t.equal(await fault.state('holding'), 'holding');
    const newer = await claimed(store, scope, 2);
    await newer.commit([put('users', scope, 1, 'new'), del('users', scope, 2)]);
    t.equal(await fault.outcome(), 'ok', 'the re-sent statements were accepted');
    t.equal(await store.get('users', scope, 1), 'new', '... and lost to the newer writes');
    t.equal(await store.get('users', scope, 2), undefined);
  });

  await t.test('faults - apply delay: a new owner claiming meanwhile sees the entry; the late apply changes nothing', async (t) => {
    const scope = newScope('fapdelay');
    const old = await claimed(store, scope, 1);
    const fault = await arm(store, redis, prefix, { scope, stage: 'apply', action: 'delay', ms: 1500 });
    const slow = old.commit([put('users', scope, 1, 'old'), put('users', scope, 2, 'old')]);
    await sleep(200);
    t.equal(await fault.state('holding'), 'holding');
    const newer = await claimed(store, scope, 2);
    t.equal(await store.get('users', scope, 1), 'old', 'the claim replayed the committed entry');
    await newer.commit([put('users', scope, 1, 'new')]);
    await t.resolves(slow, 'the old commit was committed, so it resolves');
    t.equal(await fault.outcome(), 'ok');
    t.equal(await store.get('users', scope, 1), 'new');
    t.equal(await store.get('users', scope, 2), 'old');
  });
}

function quietLog() {
  // A pino-shaped logger that drops everything (the wrapper logs loudly by design).
  const noop = () => {};
  const logger = { warn: noop, info: noop, error: noop, debug: noop, child: () => logger };
  return logger as unknown as import('pino').Logger;
}

// ---------------------------------------------------------------------------
// Backends
// ---------------------------------------------------------------------------

const ran: string[] = [];

await t.test('embedded', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-store-'));
  const store = new EmbeddedStore(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await store.init();
  await storeSuite(t, store);
  if (redisDown) {
    t.comment(`fault injection not tested: Redis not reachable at ${redisUrl}: ${redisDown}`);
  } else {
    const faultDir = mkdtempSync(join(tmpdir(), 'parley-store-faults-'));
    t.teardown(() => rmSync(faultDir, { recursive: true, force: true }));
    await t.test('embedded faults', (t) => faultSuite(t, async () => new EmbeddedStore(faultDir), false));
  }
  ran.push('embedded');
});

await t.test('embedded: rows written before shared record shapes read the same, and mix with new ones', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-store-old-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const row = (i: number) => ({ id: i, topic: `t${i}`, mentions: { users: [i], groups: [] }, editHistory: i % 2 ? [{ userId: 1, prevTopic: 'x' }] : [], wildcard: null });
  // What an older Parley wrote: each value with its record shapes inline.
  const old = open({ path: dir, maxDbs: 64, compression: false });
  const messages = old.openDB({ name: 'messages' });
  await old.transaction(() => {
    for (let i = 1; i <= 20; i++) messages.put(['r1:c:1', i], row(i));
  });
  await old.close();

  const store = new EmbeddedStore(dir);
  t.teardown(() => store.close());
  const writer = (await store.claim('old-rows', 1))!;
  await writer.commit(Array.from({ length: 20 }, (_, k) => ({ op: 'put' as const, table: 'messages', pk: 'r1:c:1', ck: 21 + k, value: row(21 + k) })));
  const rows = await store.range('messages', 'r1:c:1');
  t.strictSame(rows.map((r) => r.ck), Array.from({ length: 40 }, (_, k) => k + 1), 'every row, old and new, in order');
  t.strictSame(rows.map((r) => r.value), rows.map((r) => row(r.ck as number)), 'each decodes to what was written');
  t.strictSame(await store.get('messages', 'r1:c:1', 7), row(7));
  await store.close();
  const again = new EmbeddedStore(dir);
  t.teardown(() => again.close());
  t.strictSame((await again.range('messages', 'r1:c:1')).map((r) => r.value), Array.from({ length: 40 }, (_, k) => row(k + 1)), 'and the same after reopening');
});

await t.test('embedded: fences an older Parley kept unversioned still fence', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-store-fences-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // What an older Parley wrote: the last claim's token as the value, no version.
  const old = open({ path: dir, maxDbs: 64, compression: false });
  const fences = old.openDB({ name: '_fences' });
  await old.transaction(() => {
    fences.put('realm:1', 7);
  });
  await old.close();

  const store = new EmbeddedStore(dir);
  t.teardown(() => store.close());
  t.equal(await store.claim('realm:1', 6), null, 'a smaller token than the old fence is refused');
  const writer = (await store.claim('realm:1', 7))!;
  t.ok(writer, 'the old fence\'s own token claims');
  await writer.commit([{ op: 'put', table: 'messages', pk: 'r1:c:1', ck: 1, value: { id: 1 } }]);
  const newer = (await store.claim('realm:1', 8))!;
  await t.rejects(writer.commit([{ op: 'put', table: 'messages', pk: 'r1:c:1', ck: 2, value: { id: 2 } }]), FencedError, 'and is fenced by a newer claim');
  await newer.commit([{ op: 'put', table: 'messages', pk: 'r1:c:1', ck: 3, value: { id: 3 } }]);
  t.strictSame((await store.range('messages', 'r1:c:1')).map((r) => r.ck), [1, 3], 'only the current owner\'s writes are there');
});

const requireCassandra = process.env['PARLEY_TEST_CASSANDRA'] === '1';
const cassandraConfig = loadConfig({
  PARLEY_CASSANDRA_CONTACT_POINTS: process.env['PARLEY_CASSANDRA_CONTACT_POINTS'],
  PARLEY_CASSANDRA_DC: process.env['PARLEY_CASSANDRA_DC'],
}).cassandra;
const cassandraOptions: CassandraStoreOptions = { ...cassandraConfig, keyspace: `parley_test_${randomBytes(5).toString('hex')}`, replicationFactor: 1 };
const ks = cassandraOptions.keyspace;

/** Null when reachable, else why not. */
async function cassandraUnreachable(): Promise<string | null> {
  const client = new cassandra.Client({
    contactPoints: cassandraOptions.contactPoints,
    localDataCenter: cassandraOptions.localDataCenter,
    socketOptions: { connectTimeout: 3000 },
  });
  try {
    await client.connect();
    await client.execute('SELECT release_version FROM system.local');
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  } finally {
    await client.shutdown().catch(() => {});
  }
}

const unreachable = await cassandraUnreachable();
const where = cassandraOptions.contactPoints.join(',');
if (unreachable && requireCassandra) {
  t.fail(`cassandra - not reachable at ${where} but PARLEY_TEST_CASSANDRA=1: ${unreachable}`);
} else if (unreachable) {
  await t.test('cassandra', { skip: `Cassandra not reachable at ${where} (start it: bash scripts/services.sh start cassandra; PARLEY_TEST_CASSANDRA=1 makes this a failure)` }, async () => {});
} else {
  await t.test('cassandra', async (t) => {
    t.comment(`cassandra at ${where}, keyspace ${ks}`);
    const admin = new cassandra.Client({ contactPoints: cassandraOptions.contactPoints, localDataCenter: cassandraOptions.localDataCenter });
    // Two stores creating the schema at once, as two processes starting together would.
    const [store, racer] = await Promise.all([CassandraStore.connect(cassandraOptions), CassandraStore.connect(cassandraOptions)]);
    /** Another process's store (own connection), closed at the end. */
    const other = async (extra: Partial<CassandraStoreOptions> = {}) => {
      const s = await CassandraStore.connect({ ...cassandraOptions, ...extra });
      t.teardown(() => s.close());
      return s;
    };
    t.teardown(async () => {
      await Promise.allSettled([store.close(), racer.close()]);
      try {
        await admin.execute(`DROP KEYSPACE IF EXISTS ${ks}`);
      } finally {
        await admin.shutdown();
      }
    });
    await Promise.all([store.init(), racer.init()]);
    await storeSuite(t, store);

    const writetime = async (table: string, pk: string, ck: Key) => {
      const rs = await admin.execute(`SELECT writetime(v) AS wt FROM ${ks}.${table} WHERE pk = ? AND ck = ?`, [pk, ck], { prepare: true });
      return Number(rs.first()?.['wt']);
    };
    const journalSeq = async (scope: string) => {
      const rs = await admin.execute(`SELECT seq FROM ${ks}.journal WHERE scope = ? LIMIT 1`, [scope], { prepare: true, consistency: cassandra.types.consistencies.serial });
      return Number(rs.first()?.['seq'] ?? 0);
    };

    await t.test('cassandra - another client reads what one wrote; the journal is shared', async (t) => {
      const scope = newScope('x-client');
      const w = await claimed(store, scope, 1);
      await w.commit([put('users', scope, 1, { v: 1 })]);
      t.strictSame(await racer.get('users', scope, 1), { v: 1 });
      const w2 = await claimed(racer, scope, 2);
      t.equal(await store.claim(scope, 1), null, 'a claim is seen by every client');
      await t.rejects(w.commit([put('users', scope, 1, 'late')]), FencedError);
      await w2.commit([put('users', scope, 1, { v: 2 })]);
      t.strictSame(await store.get('users', scope, 1), { v: 2 });
    });

    await t.test('cassandra - a committed entry whose data was never applied is applied by the next claim', async (t) => {
      const lost: ApplyHook = async () => {
        throw new Error('apply lost (test)');
      };
      const crashing = await other({ applyHook: lost });
      for (const [label, nextToken] of [['a greater token', 2], ['the same token', 1]] as const) {
        const scope = newScope('unapplied');
        const old = await claimed(crashing, scope, 1);
        await old.commit([put('users', scope, 1, 'before')]).catch(() => {});
        t.equal(await store.get('users', scope, 1), undefined, 'the hook really skipped the apply');
        await t.rejects(old.commit([put('users', scope, 2, 'x')]), /apply lost|unusable/, 'the writer refuses further commits');
        await t.rejects(old.commit([]), { name: 'Error' }, '... with an error that is not FencedError');
        const next = await claimed(store, scope, nextToken);
        t.equal(await store.get('users', scope, 1), 'before', `claimed again with ${label}: the entry is applied`);
        await next.commit([put('users', scope, 1, 'after')]);
        t.equal(await store.get('users', scope, 1), 'after');
      }
    });

    await t.test('cassandra - an old owner\'s data re-sent after a newer owner wrote has no effect', async (t) => {
      const captured: Array<() => Promise<void>> = [];
      const capture: ApplyHook = async (_info, send) => {
        await send();
        captured.push(send);
      };
      const oldStore = await other({ applyHook: capture });
      const scope = newScope('resend');
      const old = await claimed(oldStore, scope, 1);
      await old.commit([put('users', scope, 1, 'old'), put('users', scope, 2, 'old only'), put('realms', scope, 'meta', 'old')]);
      const newer = await claimed(store, scope, 2);
      await newer.commit([put('users', scope, 1, 'new'), del('users', scope, 2)]);
      t.equal(captured.length, 1);
      await captured[0]!(); // a driver retry or batchlog replay arriving late
      t.equal(await store.get('users', scope, 1), 'new', 'an overwritten row keeps the newer value');
      t.equal(await store.get('users', scope, 2), undefined, 'a row the newer owner deleted stays deleted');
      t.equal(await store.get('realms', scope, 'meta'), 'old', 'a row nobody changed since is as committed');
    });

    await t.test('cassandra - an old owner\'s apply held past a newer claim: the claim completes it, the late apply changes nothing', async (t) => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let holding!: () => void;
      const held = new Promise<void>((r) => (holding = r));
      const oldStore = await other({
        applyHook: async (_info, send) => {
          holding();
          await gate;
          await send();
        },
      });
      const scope = newScope('heldapply');
      const old = await claimed(oldStore, scope, 1);
      const slow = old.commit([put('users', scope, 1, 'old'), put('users', scope, 2, 'old')]);
      await held;
      const newer = await claimed(store, scope, 2);
      t.equal(await store.get('users', scope, 1), 'old', 'the new owner sees the committed entry');
      await newer.commit([put('users', scope, 1, 'new'), del('users', scope, 2)]);
      release();
      await slow;
      t.equal(await store.get('users', scope, 1), 'new');
      t.equal(await store.get('users', scope, 2), undefined);
      await t.rejects(old.commit([put('users', scope, 3, 'x')]), FencedError, 'and its next commit is fenced');
    });

    await t.test('cassandra - a new owner wins over an old owner whose clock runs an hour ahead', async (t) => {
      const hour = 3600 * 1e6;
      const ahead = await other({ clockMicros: () => Date.now() * 1000 + hour });
      const scope = newScope('clock');
      const old = await claimed(ahead, scope, 1);
      await old.commit([put('users', scope, 1, 'future'), put('users', scope, 2, 'future')]);
      const oldTs = await writetime('users', scope, 1);
      t.ok(oldTs > Date.now() * 1000 + hour / 2, 'the old owner wrote in the future');
      const newer = await claimed(store, scope, 2);
      await newer.commit([put('users', scope, 1, 'now'), del('users', scope, 2)]);
      t.equal(await store.get('users', scope, 1), 'now', 'the new owner\'s put wins');
      t.equal(await store.get('users', scope, 2), undefined, 'and its delete');
      t.ok((await writetime('users', scope, 1)) > oldTs, 'its writes carry greater timestamps than last_ts');
      await newer.commit([put('users', scope, 1, 'later')]);
      t.equal(await store.get('users', scope, 1), 'later', 'and stay increasing');
    });

    await t.test('cassandra - a claim with the same token supersedes the earlier writer', async (t) => {
      const scope = newScope('same');
      const first = await claimed(store, scope, 3);
      const second = await claimed(racer, scope, 3);
      await t.rejects(first.commit([put('users', scope, 1, 'first')]), FencedError, 'its in-flight or later appends cannot land after the re-claim');
      await second.commit([put('users', scope, 1, 'second')]);
      t.equal(await store.get('users', scope, 1), 'second');
    });

    await t.test('cassandra - overlapping commits of one writer take effect in order; a claim applies the two newest committed entries', async (t) => {
      const scope = newScope('pipe');
      const w = await claimed(store, scope, 1);
      await Promise.all([w.commit([put('users', scope, 1, 'a'), put('users', scope, 2, 'a')]), w.commit([put('users', scope, 1, 'b')]), w.commit([put('users', scope, 3, 'c')])]);
      t.same([await store.get('users', scope, 1), await store.get('users', scope, 2), await store.get('users', scope, 3)], ['b', 'a', 'c'], 'a later commit wins on a row both write');
      // Two commits whose data never lands (held by the hook): both are committed entries.
      const held: Array<() => void> = [];
      const holding: ApplyHook = (_info, send) => new Promise<void>((_res, rej) => held.push(() => rej(new Error('writer died (test)')))).then(send);
      const dying = await other({ applyHook: holding });
      const scope2 = newScope('pipe2');
      const w2 = await claimed(dying, scope2, 1);
      const first = w2.commit([put('users', scope2, 1, 'one'), put('users', scope2, 2, 'gone')]).catch((e: Error) => e.message);
      const second = w2.commit([put('users', scope2, 1, 'two'), del('users', scope2, 2)]).catch((e: Error) => e.message);
      const deadline = Date.now() + 5000;
      while (held.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      t.equal(held.length, 2, 'both entries committed, their data held');
      const third = w2.commit([put('users', scope2, 3, 'three')]).catch((e: Error) => e.message);
      await new Promise((r) => setTimeout(r, 200));
      t.equal(held.length, 2, 'a third entry waits: at most two are unapplied');
      t.equal(await store.get('users', scope2, 1), undefined, 'nothing landed');
      const next = await claimed(store, scope2, 2);
      t.same([await store.get('users', scope2, 1), await store.get('users', scope2, 2), await store.get('users', scope2, 3)], ['two', undefined, undefined], 'the claim applied both, in order (the delete after the put); the third never committed');
      for (const release of held) release();
      t.match(await first, /died/);
      t.match(await second, /died/);
      t.match(String(await third), /Fenced|lost ownership|unusable|died/);
      await next.commit([put('users', scope2, 3, 'next')]);
      t.equal(await store.get('users', scope2, 3), 'next');
    });

    await t.test('cassandra - a large commit is split into journal entries; an oversized op is refused before anything is written', async (t) => {
      const small = await other({ maxEntryBytes: 4096, maxBatchBytes: 1024, maxBatchOps: 4 });
      const scope = newScope('split');
      const w = await claimed(small, scope, 1);
      const seq0 = await journalSeq(scope);
      const ops: WriteOp[] = [];
      for (let id = 1; id <= 40; id++) ops.push(put('messages', `${scope}:${id % 5}`, id, { id, pad: 'p'.repeat(100) }), put('realms', scope, 'ids', { next: id + 1 }));
      await w.commit(ops);
      t.ok((await journalSeq(scope)) - seq0 > 1, `several entries (${(await journalSeq(scope)) - seq0})`);
      t.strictSame(await small.get('realms', scope, 'ids'), { next: 41 }, 'the last op on a row wins across entries');
      let count = 0;
      for (let b = 0; b < 5; b++) count += (await small.range('messages', `${scope}:${b}`)).length;
      t.equal(count, 40);
      const seq1 = await journalSeq(scope);
      await t.rejects(w.commit([put('users', scope, 1, 'small'), put('users', scope, 2, 'x'.repeat(5000))]), RangeError);
      t.equal(await small.get('users', scope, 1), undefined, 'nothing of it was written');
      t.equal(await journalSeq(scope), seq1, 'not even a journal entry');
      await w.commit([put('users', scope, 1, 'ok')]);
      t.equal(await small.get('users', scope, 1), 'ok', 'the writer is still usable');
      const next = await claimed(store, scope, 2);
      await next.commit([]);
      t.strictSame(await store.get('realms', scope, 'ids'), { next: 41 });
    });

    await t.test('cassandra - clustering keys of the wrong type and non-JSON values are refused', async (t) => {
      const w = await claimed(store, newScope('keys'), 1);
      await t.rejects(w.commit([put('users', 'k', 'one', 1)]), TypeError);
      await t.rejects(w.commit([put('realms', 'k', 1, 1)]), TypeError);
      await t.rejects(store.get('messages', 'k', 1.5), TypeError);
      await t.rejects(w.commit([put('users', 'k', 1, undefined)]), TypeError, 'undefined is not JSON');
      await t.rejects(w.commit([put('nonesuch', 'k', 1, 1)]), /unknown table/);
      await t.resolves(w.commit([put('users', 'k', 1, 1)]), 'refused ops leave the writer usable');
    });

    if (redisDown) {
      t.comment(`fault injection not tested: Redis not reachable at ${redisUrl}: ${redisDown}`);
    } else {
      await t.test('cassandra faults', (t) => faultSuite(t, () => CassandraStore.connect(cassandraOptions), true));
    }
    ran.push('cassandra');
  });
}

t.comment(`store backends run: ${ran.join(', ') || 'none'}`);
