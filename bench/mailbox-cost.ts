/**
 * What the mailbox's metrics cost per message, in one process, rounds
 * alternating so that each variant sees the same machine: no stats at all,
 * every message timed (as before sampling), and one in MAILBOX_SAMPLE_EVERY
 * timed (now). Messages are posted in bursts of 4 behind a running one, so
 * three of four take the queued path (two clock reads when timed), as a busy
 * actor's do. The figure is this process's CPU time (user + system) per
 * message. `node --import tsx bench/mailbox-cost.ts [--rounds 10]`;
 * figures in bench/RESULTS.md.
 */
import { parseArgs } from 'node:util';
import { Mailbox } from '../actors/runtime/mailbox.ts';
import { MAILBOX_SAMPLE_EVERY, mailboxStats, type MailboxStats } from '../lib/metrics.ts';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '10' } } });
const rounds = Number(values.rounds);
const BURSTS = 50_000;

async function run(stats: MailboxStats | null): Promise<number> {
  const m = new Mailbox(stats);
  const nothing = () => undefined;
  const t0 = process.cpuUsage();
  for (let b = 0; b < BURSTS; b++) {
    const first = m.post(() => Promise.resolve());
    m.post(nothing);
    m.post(nothing);
    await m.post(nothing);
    await first;
  }
  const used = process.cpuUsage(t0);
  // CPU time, not wall time: on a shared machine a round's wall time counts the time others ran.
  return ((used.user + used.system) * 1000) / (BURSTS * 4);
}

const variants: Array<[string, MailboxStats | null]> = [
  ['no stats', null],
  ['every message timed', mailboxStats('bench_every', 1)],
  [`1 in ${MAILBOX_SAMPLE_EVERY} timed`, mailboxStats('bench_sampled')],
];
const ns = new Map<string, number[]>(variants.map(([n]) => [n, []]));
for (const [, s] of variants) await run(s);
for (let r = 0; r < rounds; r++) {
  for (const [name, s] of r % 2 ? [...variants].reverse() : variants) ns.get(name)!.push(await run(s));
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const base = median(ns.get('no stats')!);
for (const [name] of variants) {
  const m = median(ns.get(name)!);
  console.log(`${name.padEnd(22)} ${m.toFixed(1)} ns per message (median of ${rounds}), metrics ${(m - base).toFixed(1)} ns`);
}
