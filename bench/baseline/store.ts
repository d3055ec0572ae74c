/**
 * The ceiling for durable writes: commits of one message-sized row through a
 * claimed Writer, awaited one after another (every commit pays its full cost)
 * and with N scopes in flight (one writer each, since a writer's commits are
 * sequential; lmdb folds concurrent commits into shared transactions, as the
 * journal's group commit does for one actor).
 *
 *   node --import tsx bench/baseline/store.ts [--count 5000] [--in-flight 64] [--dir DIR]
 *   node --import tsx bench/baseline/store.ts --cassandra [--bytes 2000] [--count 500] [--in-flight 16]
 *
 * Embedded by default (a temp directory unless --dir). With --cassandra it
 * runs against PARLEY_CASSANDRA_CONTACT_POINTS / PARLEY_CASSANDRA_DC in a
 * throwaway keyspace (dropped afterwards) and also times a plain single-row
 * INSERT at LOCAL_QUORUM, the cost of an unfenced write, for comparison.
 * --bytes pads the row to about that many bytes of JSON.
 *
 * Prints one JSON line: {"sequential":{"ops","secs","perSec","p50Ms","p99Ms"},"concurrent":{...},"inFlight",
 * and with --cassandra "plainSequential", "plainConcurrent"}.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import cassandra from 'cassandra-driver';
import { loadConfig } from '../../lib/config.ts';
import { CassandraStore, type CassandraStoreOptions } from '../../storage/cassandra.ts';
import { EmbeddedStore } from '../../storage/embedded.ts';
import type { Store, WriteOp } from '../../storage/store.ts';

export interface StoreLoop {
  ops: number;
  secs: number;
  perSec: number;
  p50Ms: number;
  p99Ms: number;
}

/** A row shaped like a stored channel message (as the baseline always used), padded to about `bytes` of JSON. */
function message(id: number, bytes: number): Record<string, unknown> {
  const m: Record<string, unknown> = {
    id,
    type: 'stream',
    streamId: 106,
    streamName: 'bench',
    streamIsPublic: true,
    topic: 'store baseline',
    recipientId: 106,
    recipientKey: 's106',
    senderId: 100,
    senderEmail: 'olivia@parley.example',
    senderFullName: 'Olivia Owner',
    senderRealmStr: '',
    content: `bench message ${id} t=${Date.now()}`,
    renderedContent: `<p>bench message ${id} t=${Date.now()}</p>`,
    timestamp: Math.floor(Date.now() / 1000),
    client: 'parley-bench',
    readBySender: false,
    mentions: [],
    wildcard: null,
    dmRecipients: null,
  };
  const pad = bytes - JSON.stringify(m).length;
  if (pad > 0) m['content'] = `${m['content'] as string} ${'x'.repeat(pad)}`;
  return m;
}

const put = (id: number, bytes: number): WriteOp => ({ op: 'put', table: 'messages', pk: `1:s106:${Math.floor(id / 10_000)}`, ck: id, value: message(id, bytes) });

function loop(latencies: number[], secs: number): StoreLoop {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { ops: latencies.length, secs, perSec: latencies.length / secs, p50Ms: at(0.5), p99Ms: at(0.99) };
}

/** `count` calls of `fn` one after another, then `total` spread over `inFlight` workers. */
async function measure(count: number, total: number, inFlight: number, fn: (worker: number, i: number) => Promise<void>): Promise<{ sequential: StoreLoop; concurrent: StoreLoop }> {
  let lat: number[] = [];
  let t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const s = performance.now();
    await fn(0, i);
    lat.push(performance.now() - s);
  }
  const sequential = loop(lat, (performance.now() - t0) / 1000);
  lat = [];
  let next = 0;
  t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async (_, worker) => {
      while (next < total) {
        const i = next++;
        const s = performance.now();
        await fn(worker, count + i);
        lat.push(performance.now() - s);
      }
    }),
  );
  return { sequential, concurrent: loop(lat, (performance.now() - t0) / 1000) };
}

/** Commits through claimed writers: scope `bench:<w>` for worker w. */
async function commits(store: Store, count: number, total: number, inFlight: number, bytes: number) {
  const writers = await Promise.all(Array.from({ length: inFlight }, (_, w) => store.claim(`bench:${w}`, 1)));
  let id = 1;
  return measure(count, total, inFlight, (w) => writers[w]!.commit([put(id++, bytes)]));
}

export async function storeBaseline(dir: string, count: number, inFlight: number, bytes = 0): Promise<{ sequential: StoreLoop; concurrent: StoreLoop; inFlight: number }> {
  const store = new EmbeddedStore(dir);
  await store.init();
  try {
    return { inFlight, ...(await commits(store, count, count * 4, inFlight, bytes)) };
  } finally {
    await store.close();
  }
}

export async function cassandraBaseline(count: number, inFlight: number, bytes: number) {
  const config = loadConfig().cassandra;
  const opts: CassandraStoreOptions = { ...config, keyspace: `parley_bench_${randomBytes(4).toString('hex')}`, replicationFactor: 1 };
  const store = await CassandraStore.connect(opts);
  const raw = new cassandra.Client({ contactPoints: config.contactPoints, localDataCenter: config.localDataCenter });
  try {
    await store.init();
    const total = count * 4;
    const fenced = await commits(store, count, total, inFlight, bytes);
    const insert = `INSERT INTO ${opts.keyspace}.messages (pk, ck, v) VALUES (?, ?, ?)`;
    const q = { prepare: true, consistency: cassandra.types.consistencies.localQuorum, isIdempotent: true };
    let id = 1_000_000;
    const plain = await measure(count, total, inFlight, async () => {
      const op = put(id++, bytes) as Extract<WriteOp, { op: 'put' }>;
      await raw.execute(insert, [op.pk, op.ck, JSON.stringify(op.value)], q);
    });
    return { inFlight, bytes, ...fenced, plainSequential: plain.sequential, plainConcurrent: plain.concurrent };
  } finally {
    await store.close();
    await raw.execute(`DROP KEYSPACE IF EXISTS ${opts.keyspace}`).catch(() => {});
    await raw.shutdown();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      count: { type: 'string' },
      'in-flight': { type: 'string' },
      dir: { type: 'string' },
      cassandra: { type: 'boolean', default: false },
      bytes: { type: 'string', default: '0' },
    },
  });
  if (values.cassandra) {
    const r = await cassandraBaseline(Number(values.count ?? 500), Number(values['in-flight'] ?? 16), Number(values.bytes));
    process.stdout.write(`${JSON.stringify(r)}\n`);
  } else {
    const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'parley-store-'));
    try {
      const r = await storeBaseline(dir, Number(values.count ?? 5000), Number(values['in-flight'] ?? 64), Number(values.bytes));
      process.stdout.write(`${JSON.stringify(r)}\n`);
    } finally {
      if (!values.dir) rmSync(dir, { recursive: true, force: true });
    }
  }
}
