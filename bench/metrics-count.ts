/**
 * What metrics cost per message sent, counted: an embedded server of this
 * tree with the quick bench's fan-out takes `wrk` at its maximum send rate
 * (the bench's saturation step) while its own /metrics says how many of each
 * counted operation a message caused (HTTP answers, bus calls, mailbox
 * messages, store operations, journal batches); each operation's cost is
 * measured here (performance.now(), a histogram observation, a counter
 * increment, a Map lookup, timedCommit's extra async frame). Their product
 * against the server's CPU per message is the share of the send path that
 * metrics take, inlined code included (which a CPU profile cannot see).
 *
 *   node --import tsx bench/metrics-count.ts [--secs 10]
 */
import { parseArgs } from 'node:util';
import { CounterFamily, HistogramFamily, storeStats, timedCommit } from '../lib/metrics.ts';
import { parseMetrics } from '../test/helpers/metrics.ts';
import { CHANNEL, Drainer, setupFanout } from './lib/fanout.ts';
import { runLoad } from './lib/loadgen.ts';
import { basicAuth } from './lib/rawhttp.ts';
import { freePort, procCpuSeconds, startParley } from './lib/server.ts';

const { values } = parseArgs({ options: { secs: { type: 'string', default: '10' } } });

async function ns(n: number, f: (i: number) => void): Promise<number> {
  for (let i = 0; i < 100_000; i++) f(i);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f(i);
  return Number(process.hrtime.bigint() - t0) / n;
}

async function nsAsync(n: number, f: () => Promise<void>): Promise<number> {
  for (let i = 0; i < 10_000; i++) await f();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await f();
  return Number(process.hrtime.bigint() - t0) / n;
}

// ---- the cost of each operation, in this process ----
const h = new HistogramFamily('count_x_seconds', 'x', ['a']).child('a');
const c = new CounterFamily('count_y_total', 'y', ['a']).child('a');
const m = new Map<object, number>([[h, 1]]);
let sink = 0;
const cost = {
  now: await ns(2_000_000, () => (sink += performance.now())),
  observe: await ns(2_000_000, (i) => h.observe((i % 100) / 10000)),
  inc: await ns(2_000_000, () => c.inc()),
  lookup: await ns(2_000_000, () => (sink += m.get(h)!)),
};
const stats = storeStats('count');
const bare = await nsAsync(200_000, async () => {});
const wrapped = await nsAsync(200_000, () => timedCommit(stats, 1, async () => {}));
const commitFrame = Math.max(0, wrapped - bare - 2 * cost.now - 2 * cost.observe);

// ---- the counts per message, from the server's own /metrics ----
const metricsPort = await freePort();
const server = await startParley({ env: { PARLEY_METRICS_PORT: String(metricsPort) } });
try {
  const setup = await setupFanout(server, { extraUsers: 5, queues: 10 });
  const drainer = new Drainer(server.url, setup);
  await drainer.start();
  const owner = server.users.owner!;
  const load = (secs: number) =>
    runLoad({
      url: `${server.url}/api/v1/messages`,
      method: 'POST',
      connections: 100,
      durationSecs: secs,
      headers: { Authorization: basicAuth(owner.email, owner.apiKey), 'Content-Type': 'application/x-www-form-urlencoded' },
      body: `type=stream&to=${CHANNEL}&topic=wrk&content=${encodeURIComponent('a message from the bench, about the length of a chat line')}`,
    });
  await load(3);
  const scrape = async () => parseMetrics(await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text());
  const sum = (s: ReturnType<typeof parseMetrics>, name: string, labels: Record<string, string> = {}) =>
    s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((a, x) => a + x.value, 0);
  const before = await scrape();
  const cpu0 = procCpuSeconds(server.pid);
  const run = await load(Number(values.secs));
  const cpuUs = ((procCpuSeconds(server.pid) - cpu0) * 1e6) / run.requests;
  const after = await scrape();
  await drainer.stop();
  const per = (name: string, labels: Record<string, string> = {}) => (sum(after, name, labels) - sum(before, name, labels)) / run.requests;
  const counts = {
    http: per('parley_http_requests_total'),
    bus: per('parley_bus_request_duration_seconds_count'),
    mailbox: per('parley_actor_mailbox_wait_seconds_count'),
    store: per('parley_store_operation_duration_seconds_count'),
    commits: per('parley_store_operation_duration_seconds_count', { op: 'commit' }),
    journal: per('parley_journal_commit_changes_count'),
  };
  // What each counted operation does (upper bounds: every mailbox message as if it had queued).
  const perOp = {
    http: 2 * cost.now + cost.observe + cost.inc + 2 * cost.lookup,
    bus: 2 * cost.now + cost.observe + cost.lookup,
    mailbox: 2 * cost.now + cost.observe,
    store: 2 * cost.now + cost.observe,
    commits: cost.observe + commitFrame,
    journal: cost.observe,
  };
  let totalNs = 0;
  const lines: string[] = [];
  for (const k of Object.keys(counts) as (keyof typeof counts)[]) {
    totalNs += counts[k] * perOp[k];
    lines.push(`  ${k.padEnd(8)} ${counts[k].toFixed(2)} per message × ${perOp[k].toFixed(0)} ns = ${((counts[k] * perOp[k]) / 1000).toFixed(3)} µs`);
  }
  process.stdout.write(
    `costs (ns): performance.now ${cost.now.toFixed(1)}, observe ${cost.observe.toFixed(1)}, inc ${cost.inc.toFixed(1)}, Map.get ${cost.lookup.toFixed(1)}, timedCommit's frame ${commitFrame.toFixed(0)}\n` +
      `${run.requests} messages at ${run.rps.toFixed(0)} msg/s (${run.tool}), server CPU ${cpuUs.toFixed(1)} µs per message\n${lines.join('\n')}\n` +
      `metrics: ${(totalNs / 1000).toFixed(2)} µs per message = ${((totalNs / 1000 / cpuUs) * 100).toFixed(2)}% of the server's CPU per message\n`,
  );
} finally {
  await server.dispose();
}
void sink;
