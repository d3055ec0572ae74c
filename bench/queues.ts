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
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { growth, HEAP_SNAPSHOT_ARGS, liveHeap } from './lib/heap.ts';
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

async function measure(repo: string): Promise<Record<string, number | string | Record<string, number>>> {
  const server = await startParley({ repo, readyTimeoutMs: 120_000, nodeArgs: values.heap ? HEAP_SNAPSHOT_ARGS : [] });
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
      ...(heap && heap0 ? { liveHeapMiB: +(heap.total / MiB).toFixed(1), liveBytesPerQueue: Math.round((heap.total - heap0.total) / QUEUES), liveBytesPerQueueByKind: growth(heap0.by, heap.by, QUEUES) } : {}),
    };
  } finally {
    await server.dispose();
  }
}

for (const repo of [...values.repo, REPO]) {
  process.stdout.write(`${JSON.stringify(await measure(repo))}\n`);
}
