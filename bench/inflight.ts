/**
 * What a server holds while it sends: the live heap in the middle of a
 * steady send load against the same server idle, by kind (V8 heap snapshots,
 * `bench/lib/heap.ts`). The quick bench's fan-out (10 subscribers, 10 queues
 * drained by long polls); the load is open-loop at one rate.
 *
 *   node --import tsx bench/inflight.ts [--rate 6500] [--repo DIR]
 *
 * With `--repo`, another checkout's server is measured (a baseline). The
 * difference is what is in flight at that instant plus what the server's
 * state gained from the messages sent in the first 5 s of load (indexes that
 * grow with history); not how long each piece lives (run the send step with
 * `--server-node-args --trace-gc` for the promotion rate).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Drainer, sendAtRate, setupFanout } from './lib/fanout.ts';
import { growth, HEAP_SNAPSHOT_ARGS, liveHeap } from './lib/heap.ts';
import { REPO, startParley } from './lib/server.ts';

const { values } = parseArgs({ options: { rate: { type: 'string', default: '6500' }, repo: { type: 'string' } } });
const RATE = Number(values.rate);
const repo = values.repo ?? REPO;
const MiB = 1024 * 1024;

const server = await startParley({ repo, nodeArgs: HEAP_SNAPSHOT_ARGS });
try {
  const setup = await setupFanout(server, { extraUsers: 5, queues: 10 });
  const drainer = new Drainer(server.url, setup);
  await drainer.start();
  const owner = server.users.owner!;
  await sendAtRate(server.url, owner, drainer, RATE / 2, 3); // warm up
  await sleep(2000);
  const idle = await liveHeap(server.pid, repo);
  const load = sendAtRate(server.url, owner, drainer, RATE, 12);
  await sleep(5000);
  const busy = await liveHeap(server.pid, repo);
  const r = await load;
  await drainer.stop();
  const out = {
    repo: repo === REPO ? '(this checkout)' : repo,
    rate: RATE,
    achieved: Math.round(r.achievedRate),
    liveHeapIdleMiB: +(idle.total / MiB).toFixed(1),
    liveHeapUnderLoadMiB: +(busy.total / MiB).toFixed(1),
    inFlightKiB: Math.round((busy.total - idle.total) / 1024),
    inFlightKiBByKind: growth(idle.by, busy.by, 1024),
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
} finally {
  await server.dispose();
}
