/**
 * What metrics cost the send path: two embedded servers side by side, this
 * tree's (or `--head DIR`'s) and another checkout's (`--base DIR`, e.g. main
 * before metrics),
 * each with the quick bench's fan-out (a channel of 10 subscribers, 10
 * queues drained by long polls). Rounds send at one fixed rate to each in
 * turn (ABBA order), so both see the same machine over the same minutes;
 * the figure is server CPU (user + system, /proc) per message sent, and
 * the send p99, per build: medians over the rounds.
 *
 *   node --import tsx bench/metrics-ab.ts --base DIR [--head DIR] [--rate 600] [--secs 10] [--rounds 10]
 */
import { parseArgs } from 'node:util';
import { Drainer, sendAtRate, setupFanout } from './lib/fanout.ts';
import { procCpuSeconds, startParley, type ParleyServer } from './lib/server.ts';

const { values } = parseArgs({ options: { base: { type: 'string' }, head: { type: 'string' }, rate: { type: 'string', default: '600' }, secs: { type: 'string', default: '10' }, rounds: { type: 'string', default: '10' } } });
if (!values.base) throw new Error('--base DIR: the checkout to compare against');
const rate = Number(values.rate);
const secs = Number(values.secs);
const rounds = Number(values.rounds);

interface Side {
  name: string;
  server: ParleyServer;
  drainer: Drainer;
  cpuUsPerMsg: number[];
  sendP99: number[];
}

async function side(name: string, repo: string | undefined): Promise<Side> {
  const server = await startParley({ repo });
  const setup = await setupFanout(server, { extraUsers: 5, queues: 10 });
  const drainer = new Drainer(server.url, setup);
  await drainer.start();
  return { name, server, drainer, cpuUsPerMsg: [], sendP99: [] };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sides = [await side('base', values.base), await side('head', values.head)];
const dispose = async () => {
  for (const s of sides) {
    await s.drainer.stop();
    await s.server.dispose();
  }
};
process.once('SIGINT', () => void dispose().then(() => process.exit(130)));
try {
  // A warm-up burst each: JIT and caches, not counted.
  for (const s of sides) await sendAtRate(s.server.url, s.server.users.owner!, s.drainer, rate, 3);
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 ? [...sides].reverse() : sides) {
      const cpu0 = procCpuSeconds(s.server.pid);
      const res = await sendAtRate(s.server.url, s.server.users.owner!, s.drainer, rate, secs);
      const cpu = procCpuSeconds(s.server.pid) - cpu0;
      s.cpuUsPerMsg.push((cpu * 1e6) / res.sent);
      s.sendP99.push(res.send.p99);
      process.stdout.write(`round ${r + 1} ${s.name.padEnd(9)} ${res.sent} sent (${res.failed} failed), ${((cpu * 1e6) / res.sent).toFixed(1)} µs CPU/msg, send p99 ${res.send.p99.toFixed(1)} ms, load ${(await import('node:os')).loadavg()[0]!.toFixed(1)}\n`);
    }
  }
  const [base, mine] = sides as [Side, Side];
  const ratio = median(mine.cpuUsPerMsg) / median(base.cpuUsPerMsg);
  process.stdout.write(`\nmedian CPU per message: base ${median(base.cpuUsPerMsg).toFixed(1)} µs, head ${median(mine.cpuUsPerMsg).toFixed(1)} µs (${((ratio - 1) * 100).toFixed(1)}%)\n`);
  process.stdout.write(`median send p99: base ${median(base.sendP99).toFixed(1)} ms, head ${median(mine.sendP99).toFixed(1)} ms\n`);
  const paired = base.cpuUsPerMsg.map((b, i) => mine.cpuUsPerMsg[i]! / b);
  process.stdout.write(`per-round ratios (head / base): ${paired.map((x) => x.toFixed(3)).join(' ')}; median ${median(paired).toFixed(3)}\n`);
} finally {
  await dispose();
}
