/**
 * The share of a server's CPU profile spent on metrics: the self and callee
 * time of the functions that count (lib/metrics.ts's `observe`, `inc`,
 * `secondsSince`, `timedCommit`'s own frame, the gateway's and the bus
 * client's `record`/`statsOf`/`knownStats`, prom-client), and every
 * `performance.now()` read by the instrumented callers (a request's start,
 * a bus call, a mailbox post, a store read). A sampling profile's shares do
 * not depend on how busy the machine is, unlike a throughput figure.
 *
 *   npm run bench -- --profile --skip hello,store,holder --no-k6
 *   node --import tsx bench/metrics-share.ts .parley/bench/prof/<largest>.cpuprofile
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
const file = process.argv[2];
if (!file) throw new Error('usage: bench/metrics-share.ts FILE.cpuprofile');
const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const ours = (n: Node) => n.callFrame.url.endsWith('/main.mjs') || n.callFrame.url.includes('/lib/metrics.ts');
/** Functions whose whole time (with callees) is counting. */
const COUNTING = new Set(['observe', 'inc', 'record', 'secondsSince', 'statsOf', 'knownStats', 'mailboxStats', 'storeStats']);
/** Callers whose own `performance.now()` reads are for metrics only. */
const TIMED = new Set(['Reply', '<instance_members_initializer>', 'request', 'post', 'get', 'range', 'claim', 'timedCommit', 'rangeNow', 'claimNow', 'commitNow']);

function isMetrics(id: number): boolean {
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const n = byId.get(cur)!;
    if (ours(n) && COUNTING.has(n.callFrame.functionName)) return true;
    if (n.callFrame.url.includes('prom-client')) return true;
  }
  const n = byId.get(id)!;
  if (ours(n) && n.callFrame.functionName === 'timedCommit') return true; // its own frame, not the commit it runs
  if (n.callFrame.functionName === 'now') {
    // performance.now is a JS wrapper around a native `now`: the caller is the first frame above both.
    let up = parent.get(id);
    while (up !== undefined && byId.get(up)!.callFrame.functionName === 'now') up = parent.get(up);
    const p = up === undefined ? undefined : byId.get(up);
    if (p && ours(p) && TIMED.has(p.callFrame.functionName)) return true;
  }
  return false;
}

let total = 0;
let idle = 0;
let metrics = 0;
const memo = new Map<number, boolean>();
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  total += dt;
  const name = byId.get(id)!.callFrame.functionName;
  if (name === '(idle)') {
    idle += dt;
    return;
  }
  let m = memo.get(id);
  if (m === undefined) memo.set(id, (m = isMetrics(id)));
  if (m) metrics += dt;
});
const busy = total - idle;
process.stdout.write(`${file}: ${(busy / 1e6).toFixed(2)} s busy of ${(total / 1e6).toFixed(2)} s; metrics ${(metrics / 1e3).toFixed(1)} ms = ${((metrics / busy) * 100).toFixed(2)}% of busy CPU\n`);
