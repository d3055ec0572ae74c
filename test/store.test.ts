/**
 * One suite, every Store implementation: EmbeddedStore on a temp directory and
 * CassandraStore on a real Cassandra (PARLEY_CASSANDRA_CONTACT_POINTS, default
 * 127.0.0.1:9042) in a throwaway keyspace that is dropped afterwards.
 *
 * Without a reachable Cassandra the Cassandra half is skipped, unless
 * PARLEY_TEST_CASSANDRA=1, which makes it a failure.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import cassandra from 'cassandra-driver';
import { loadConfig } from '../lib/config.ts';
import { CassandraStore, type CassandraStoreOptions } from '../storage/cassandra.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import type { Key, Store, WriteOp } from '../storage/store.ts';

// Creating a Cassandra keyspace and ten tables takes several seconds on 2 cores.
t.setTimeout(180_000);

const put = (table: WriteOp['table'], pk: string, ck: Key, value: unknown): WriteOp => ({ op: 'put', table, pk, ck, value });
const del = (table: WriteOp['table'], pk: string, ck: Key): WriteOp => ({ op: 'delete', table, pk, ck });
const cks = (rows: { ck: Key }[]) => rows.map((r) => r.ck);

/** The behaviour every Store must have. */
async function storeSuite(t: Test, store: Store): Promise<void> {
  await t.test('store - put/get round trip of JSON values in a bigint and a text table', async (t) => {
    const message = { id: 42, content: 'héllo 👋 "quoted"', flags: ['read'], topic: null, nested: { a: [1, 2.5, -3], b: true } };
    const meta = { name: 'Zulip Dev', ids: { next: 7 } };
    await store.write([put('messages', 'rt:1:0', 42, message), put('messages', 'rt:1:0', 2 ** 40, 'big id'), put('messages', 'rt:1:0', 0, 0), put('realm_meta', 'rt', 'meta', meta)]);
    t.strictSame(await store.get('messages', 'rt:1:0', 42), message);
    t.equal(await store.get('messages', 'rt:1:0', 2 ** 40), 'big id');
    t.equal(await store.get('messages', 'rt:1:0', 0), 0);
    t.strictSame(await store.get('realm_meta', 'rt', 'meta'), meta);
    t.strictSame(cks(await store.range('messages', 'rt:1:0')), [0, 42, 2 ** 40], 'bigint keys come back as JS numbers');
    const [first] = await store.range('messages', 'rt:1:0', { limit: 1 });
    t.equal(typeof first?.ck, 'number');
    const [text] = await store.range('realm_meta', 'rt');
    t.equal(text?.ck, 'meta');
    await store.write([put('realm_meta', 'rt', 'meta', { ...meta, name: 'renamed' }), put('user_state', 'rt:1', 'settings', false)]);
    t.equal((await store.get<typeof meta>('realm_meta', 'rt', 'meta'))?.name, 'renamed', 'a put overwrites');
    t.equal(await store.get('user_state', 'rt:1', 'settings'), false, 'a falsy value is not a missing row');
  });

  await t.test('store - a missing row reads as undefined', async (t) => {
    t.equal(await store.get('users', 'missing-realm', 1), undefined);
    t.equal(await store.get('realm_meta', 'missing-realm', 'meta'), undefined);
    await store.write([put('users', 'mr', 1, { id: 1 })]);
    t.equal(await store.get('users', 'mr', 2), undefined, 'another key of an existing partition');
  });

  await t.test('store - range forward with inclusive gte/lte and limit', async (t) => {
    await store.write([1, 2, 3, 4, 5, 6, 7, 8].map((id) => put('messages', 'fw', id, { id })));
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
    await store.write([1, 2, 3, 4, 5, 6, 7, 8].map((id) => put('messages', 'rv', id, { id })));
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
    await store.write(keys.map((k) => put('subscriptions', 'tx', k, { k })));
    // Code-unit (for these keys also byte) order: '0' < ':', so '10:1' sorts before '1:1'.
    t.strictSame(cks(await store.range('subscriptions', 'tx')), ['10:1', '1:1', '1:10', '1:2', '2:1']);
    t.strictSame(cks(await store.range('subscriptions', 'tx', { gte: '1:', lte: '1:\uffff' })), ['1:1', '1:10', '1:2'], 'a prefix range');
    t.strictSame(cks(await store.range('subscriptions', 'tx', { gte: '1:10', lte: '2:1' })), ['1:10', '1:2', '2:1'], 'both bounds included');
    t.strictSame(cks(await store.range('subscriptions', 'tx', { reverse: true, limit: 2 })), ['2:1', '1:2']);
    t.strictSame(cks(await store.range('subscriptions', 'tx', { reverse: true, lte: '1:2', limit: 2 })), ['1:2', '1:10']);
  });

  await t.test('store - an empty partition ranges to nothing', async (t) => {
    t.strictSame(await store.range('messages', 'empty'), []);
    t.strictSame(await store.range('messages', 'empty', { reverse: true, limit: 5 }), []);
    t.strictSame(await store.range('messages', 'empty', { gte: 1, lte: 10 }), []);
    t.strictSame(await store.range('realm_meta', 'empty'), []);
  });

  await t.test('store - partitions and tables do not leak into each other', async (t) => {
    const pks = ['a', 'ab', 'a:1', 'a:', 'b'];
    await store.write(pks.flatMap((pk, i) => [put('user_flags', pk, 1, { pk }), put('user_flags', pk, 100 + i, { pk })]));
    await store.write([put('users', 'a', 1, { table: 'users' }), put('channels', 'a', 1, { table: 'channels' })]);
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
    await store.write([put('channels', 'del', 1, 'one'), put('channels', 'del', 2, 'two'), put('channels', 'del', 3, 'three')]);
    await store.write([del('channels', 'del', 2), del('channels', 'del', 99), del('channels', 'nowhere', 1)]);
    t.equal(await store.get('channels', 'del', 2), undefined);
    t.strictSame(cks(await store.range('channels', 'del')), [1, 3]);
    t.strictSame(cks(await store.range('channels', 'del', { reverse: true, gte: 2, lte: 2 })), []);
    await store.write([put('channels', 'del', 2, 'again')]);
    t.equal(await store.get('channels', 'del', 2), 'again', 'a deleted row can be written again');
  });

  await t.test('store - ops of one write apply in order', async (t) => {
    await store.write([put('dm_conversations', 'ord', '1,2', 'first'), put('dm_conversations', 'ord', '1,2', 'second')]);
    t.equal(await store.get('dm_conversations', 'ord', '1,2'), 'second', 'put then put: the last wins');
    await store.write([put('dm_conversations', 'ord', '1,3', 'x'), del('dm_conversations', 'ord', '1,3')]);
    t.equal(await store.get('dm_conversations', 'ord', '1,3'), undefined, 'put then delete: deleted');
    await store.write([del('dm_conversations', 'ord', '1,2'), put('dm_conversations', 'ord', '1,2', 'third')]);
    t.equal(await store.get('dm_conversations', 'ord', '1,2'), 'third', 'delete then put: present');
    // 'b' (a greater value) first: Cassandra would let the greater value win a tie in one batch.
    await store.write([put('dm_conversations', 'ord', '2,3', 'b'), put('users', 'ord', 5, {}), put('dm_conversations', 'ord', '2,3', 'a')]);
    t.equal(await store.get('dm_conversations', 'ord', '2,3'), 'a', 'across partitions too');
  });

  await t.test('store - a multi-op write is entirely visible once it resolves', async (t) => {
    const realm = 'mw';
    await store.write([
      put('realm_meta', realm, 'ids', { message: 11 }),
      put('recipient_buckets', `${realm}:s1`, 0, 1),
      put('messages', `${realm}:s1:0`, 10, { id: 10 }),
      put('user_flags', `${realm}:1`, 10, ['read']),
    ]);
    t.strictSame(await store.get('realm_meta', realm, 'ids'), { message: 11 });
    t.strictSame(cks(await store.range('recipient_buckets', `${realm}:s1`)), [0]);
    t.strictSame(await store.get('messages', `${realm}:s1:0`, 10), { id: 10 });
    t.strictSame(await store.get('user_flags', `${realm}:1`, 10), ['read']);

    // Larger than one Cassandra batch (~600 ops, ~300 KB over 30 partitions), with a row overwritten near the end.
    const body = 'x'.repeat(400);
    const ops: WriteOp[] = [put('realm_meta', realm, 'big', 'early')];
    for (let id = 1; id <= 600; id++) ops.push(put('messages', `${realm}:big:${id % 30}`, id, { id, body }));
    ops.push(put('realm_meta', realm, 'big', 'late'));
    await store.write(ops);
    let count = 0;
    for (let b = 0; b < 30; b++) count += (await store.range('messages', `${realm}:big:${b}`)).length;
    t.equal(count, 600, 'every row of a large write');
    t.strictSame(await store.get('messages', `${realm}:big:17`, 17), { id: 17, body });
    t.equal(await store.get('realm_meta', realm, 'big'), 'late', 'the later op on a row wins across batches');
    t.resolves(store.write([]), 'an empty write');
  });

  await t.test('store - claimFence keeps the greatest token', async (t) => {
    const scope = `realm:${randomBytes(4).toString('hex')}`;
    t.equal(await store.fence(scope), 0, 'no claim yet');
    t.equal(await store.claimFence(scope, 5), true, 'first claim');
    t.equal(await store.fence(scope), 5);
    t.equal(await store.claimFence(scope, 3), false, 'a lower token is refused');
    t.equal(await store.fence(scope), 5, '... and changes nothing');
    t.equal(await store.claimFence(scope, 5), true, 'the same token again');
    t.equal(await store.claimFence(scope, 9), true, 'a higher token');
    t.equal(await store.fence(scope), 9);
    t.equal(await store.fence(`${scope}:other`), 0, 'scopes are independent');

    const raced = `user:${randomBytes(4).toString('hex')}`;
    const tokens = [4, 9, 1, 7, 3, 8, 2, 6, 5];
    const results = await Promise.all(tokens.map((token) => store.claimFence(raced, token)));
    t.equal(results[tokens.indexOf(9)], true, 'the greatest of racing claims wins');
    t.equal(await store.fence(raced), 9);
    t.equal(await store.claimFence(raced, 8), false);
  });

  await t.test('store - init() again is harmless', async (t) => {
    await store.write([put('users', 'again', 1, { kept: true })]);
    await store.init();
    await store.init();
    t.strictSame(await store.get('users', 'again', 1), { kept: true });
  });
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
  ran.push('embedded');
});

const requireCassandra = process.env['PARLEY_TEST_CASSANDRA'] === '1';
const cassandraConfig = loadConfig({
  PARLEY_CASSANDRA_CONTACT_POINTS: process.env['PARLEY_CASSANDRA_CONTACT_POINTS'],
  PARLEY_CASSANDRA_DC: process.env['PARLEY_CASSANDRA_DC'],
}).cassandra;
const cassandraOptions: CassandraStoreOptions = { ...cassandraConfig, keyspace: `parley_test_${randomBytes(5).toString('hex')}`, replicationFactor: 1 };

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
    t.comment(`cassandra at ${where}, keyspace ${cassandraOptions.keyspace}`);
    // Two stores creating the schema at once, as two processes starting together would.
    const [store, racer] = await Promise.all([CassandraStore.connect(cassandraOptions), CassandraStore.connect(cassandraOptions)]);
    t.teardown(async () => {
      await Promise.allSettled([store.close(), racer.close()]);
      const admin = new cassandra.Client({ contactPoints: cassandraOptions.contactPoints, localDataCenter: cassandraOptions.localDataCenter });
      try {
        await admin.execute(`DROP KEYSPACE IF EXISTS ${cassandraOptions.keyspace}`);
      } finally {
        await admin.shutdown();
      }
    });
    await Promise.all([store.init(), racer.init()]);
    await storeSuite(t, store);

    await t.test('cassandra - another client reads what one wrote', async (t) => {
      await store.write([put('users', 'x-client', 1, { v: 1 })]);
      t.strictSame(await racer.get('users', 'x-client', 1), { v: 1 });
      t.equal(await racer.claimFence('shared-scope', 2), true);
      t.equal(await store.claimFence('shared-scope', 1), false, 'a fence is shared by every client');
    });

    await t.test('cassandra - split writes keep units whole and the last op on a row wins', async (t) => {
      const small = await CassandraStore.connect({ ...cassandraOptions, maxBatchBytes: 1024, maxBatchOps: 4 });
      t.teardown(() => small.close());
      const units: WriteOp[][] = [];
      for (let id = 1; id <= 40; id++) {
        units.push([put('messages', `split:${id % 5}`, id, { id, pad: 'p'.repeat(100) }), put('realm_meta', 'split', 'ids', { next: id + 1 })]);
      }
      await small.write(units.flat(), units.map((u) => u.length));
      t.strictSame(await small.get('realm_meta', 'split', 'ids'), { next: 41 });
      let count = 0;
      for (let b = 0; b < 5; b++) count += (await small.range('messages', `split:${b}`)).length;
      t.equal(count, 40);
      await t.rejects(small.write([put('users', 'split', 1, 1)], [2]), RangeError, 'units must cover the ops');
    });

    await t.test('cassandra - clustering keys of the wrong type are refused', async (t) => {
      await t.rejects(store.write([put('users', 'k', 'one', 1)]), TypeError);
      await t.rejects(store.write([put('realm_meta', 'k', 1, 1)]), TypeError);
      await t.rejects(store.get('messages', 'k', 1.5), TypeError);
      await t.rejects(store.write([put('users', 'k', 1, undefined)]), TypeError, 'undefined is not JSON');
    });
    ran.push('cassandra');
  });
}

t.comment(`store backends run: ${ran.join(', ') || 'none'}`);
