/**
 * The ceiling for durable writes: `EmbeddedStore.write` of one message-sized
 * row, awaited one after another (every write pays a commit and its sync) and
 * with N in flight (lmdb folds concurrent writes into shared commits, as the
 * journal's group commit does for one actor).
 *
 *   node --import tsx bench/baseline/store.ts [--count 5000] [--in-flight 64] [--dir DIR]
 *
 * Prints one JSON line: {"sequential":{"ops","secs","perSec"},"concurrent":{...}}.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { EmbeddedStore } from '../../storage/embedded.ts';

export interface StoreLoop {
  ops: number;
  secs: number;
  perSec: number;
}

/** A row shaped like a stored channel message. */
function message(id: number): Record<string, unknown> {
  return {
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
}

const put = (id: number) => ({ op: 'put' as const, table: 'messages' as const, pk: `1:s106:${Math.floor(id / 10_000)}`, ck: id, value: message(id) });

export async function storeBaseline(dir: string, count: number, inFlight: number): Promise<{ sequential: StoreLoop; concurrent: StoreLoop; inFlight: number }> {
  const store = new EmbeddedStore(dir);
  await store.init();
  try {
    let id = 1;
    let t0 = performance.now();
    for (let i = 0; i < count; i++) await store.write([put(id++)]);
    const seqSecs = (performance.now() - t0) / 1000;

    const total = count * 4;
    let next = 0;
    t0 = performance.now();
    await Promise.all(Array.from({ length: inFlight }, async () => {
      while (next < total) {
        next++;
        await store.write([put(id++)]);
      }
    }));
    const conSecs = (performance.now() - t0) / 1000;
    return {
      inFlight,
      sequential: { ops: count, secs: seqSecs, perSec: count / seqSecs },
      concurrent: { ops: total, secs: conSecs, perSec: total / conSecs },
    };
  } finally {
    await store.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { count: { type: 'string', default: '5000' }, 'in-flight': { type: 'string', default: '64' }, dir: { type: 'string' } } });
  const dir = values.dir ?? mkdtempSync(join(tmpdir(), 'parley-store-'));
  try {
    const r = await storeBaseline(dir, Number(values.count), Number(values['in-flight']));
    process.stdout.write(`${JSON.stringify(r)}\n`);
  } finally {
    if (!values.dir) rmSync(dir, { recursive: true, force: true });
  }
}
