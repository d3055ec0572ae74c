/**
 * Memory per event queue (issue 12, finding 2): one user registers N event
 * queues, then M channel messages reach every one of them, and the server's
 * resident memory is read before and after (after a pause, so what remains is
 * what the queues keep).
 *
 *   node --import tsx bench/queues.ts [--queues 20000] [--messages 100] [--repo DIR ...] [--heap]
 *
 * Each `--repo` is another checkout measured the same way in the same run
 * (a baseline); without one, this checkout only. The per-user queue cap is
 * lifted for the run (`loadTestLimits`), so one user can hold N queues, as in
 * the finding. With `--heap`, the server also writes a heap snapshot once the
 * queues are registered (after a full collection), and the run prints what
 * the live heap holds by constructor: resident memory counts the heap's free
 * space and the allocator's too, the snapshot only what is reachable.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { api, REPO, startParley } from './lib/server.ts';

const { values } = parseArgs({
  options: {
    queues: { type: 'string', default: '20000' },
    messages: { type: 'string', default: '100' },
    repo: { type: 'string', multiple: true, default: [] },
    heap: { type: 'boolean', default: false },
  },
});
const QUEUES = Number(values.queues);
const MESSAGES = Number(values.messages);
const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measure(repo: string): Promise<Record<string, number | string | Record<string, number>>> {
  const server = await startParley({ repo, readyTimeoutMs: 120_000, nodeArgs: values.heap ? ['--heapsnapshot-signal=SIGUSR2'] : [] });
  try {
    const owner = server.users.owner!;
    const started = server.rss();
    const heap0 = values.heap ? await liveHeap(server.pid, repo) : null;
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < QUEUES) {
          next++;
          const r = await api<{ result: string; msg?: string }>(server.url, owner, 'POST', '/register', { event_types: ['message'], fetch_event_types: ['realm'] });
          if (r.result !== 'success') throw new Error(`register: ${r.msg}`);
        }
      }),
    );
    const registerSecs = (performance.now() - t0) / 1000;
    await sleep(3000);
    const withQueues = server.rss();
    const heap = values.heap ? await liveHeap(server.pid, repo) : null;
    const t1 = performance.now();
    for (let i = 0; i < MESSAGES; i++) {
      const r = await api<{ result: string; msg?: string }>(server.url, owner, 'POST', '/messages', { type: 'stream', to: 'general', topic: 'queues', content: `message ${i} of the queue bench, about a chat line long` });
      if (r.result !== 'success') throw new Error(`send: ${r.msg}`);
    }
    const sendSecs = (performance.now() - t1) / 1000;
    await sleep(3000);
    const after = server.rss();
    return {
      repo: repo === REPO ? '(this checkout)' : repo,
      queues: QUEUES,
      messages: MESSAGES,
      rssStartMiB: +(started / MiB).toFixed(1),
      rssWithQueuesMiB: +(withQueues / MiB).toFixed(1),
      rssAfterMessagesMiB: +(after / MiB).toFixed(1),
      bytesPerQueue: Math.round((withQueues - started) / QUEUES),
      bytesPerQueuedEvent: Math.round((after - withQueues) / (QUEUES * MESSAGES)),
      registersPerSec: Math.round(QUEUES / registerSecs),
      sendsPerSec: +(MESSAGES / sendSecs).toFixed(1),
      ...(heap && heap0 ? { liveHeapMiB: +(heap.total / MiB).toFixed(1), liveBytesPerQueue: Math.round((heap.total - heap0.total) / QUEUES), liveBytesPerQueueByKind: perQueue(heap0.by, heap.by) } : {}),
    };
  } finally {
    await server.dispose();
  }
}

/**
 * The live heap of process `pid` by constructor (V8's heap snapshot, written
 * on SIGUSR2 into the server's working directory, `repo`).
 */
async function liveHeap(pid: number, repo: string): Promise<{ total: number; by: Map<string, number> }> {
  const before = new Set(readdirSync(repo));
  process.kill(pid, 'SIGUSR2');
  let file: string | undefined;
  for (let i = 0; i < 600 && !file; i++) {
    await sleep(500);
    file = readdirSync(repo).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
  }
  if (!file) throw new Error('no heap snapshot was written');
  // V8 writes it in pieces: read it once it parses.
  let snap: { snapshot: { meta: { node_fields: string[]; node_types: [string[]] } }; nodes: number[]; strings: string[] } | null = null;
  for (let i = 0; i < 300 && !snap; i++) {
    await sleep(1000);
    try {
      snap = JSON.parse(readFileSync(join(repo, file), 'utf8'));
    } catch {
      snap = null;
    }
  }
  if (!snap) throw new Error(`the heap snapshot ${file} never became whole`);
  rmSync(join(repo, file));
  const fields = snap.snapshot.meta.node_fields;
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const types = snap.snapshot.meta.node_types[0];
  const by = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < snap.nodes.length; i += fields.length) {
    const type = types[snap.nodes[i + typeAt]!]!;
    const key = type === 'object' || type === 'closure' ? snap.strings[snap.nodes[i + nameAt]!]! : `(${type})`;
    const bytes = snap.nodes[i + sizeAt]!;
    by.set(key, (by.get(key) ?? 0) + bytes);
    total += bytes;
  }
  return { total, by };
}

/** What the queues added to the live heap, per queue, by kind (the largest 12). */
function perQueue(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const grown = [...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / QUEUES] as const);
  return Object.fromEntries(grown.sort((a, b) => b[1] - a[1]).slice(0, 12).map(([k, v]) => [k, Math.round(v)]));
}

for (const repo of [...values.repo, REPO]) {
  process.stdout.write(`${JSON.stringify(await measure(repo))}\n`);
}
