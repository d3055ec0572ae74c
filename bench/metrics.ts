/**
 * The cost of counting one request: prom-client's labelled child against
 * lib/metrics.ts's families (what the hot paths use), per call, in one
 * process. `node --import tsx bench/metrics.ts`; figures in bench/RESULTS.md.
 */
import { Histogram, Counter, Registry } from 'prom-client';
import { HistogramFamily, CounterFamily } from '../lib/metrics.ts';
const reg = new Registry();
const ph = new Histogram({ name: 'x_seconds', help: 'x', labelNames: ['route', 'method'], buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60], registers: [reg] });
const pc = new Counter({ name: 'y_total', help: 'y', labelNames: ['route', 'method', 'status'], registers: [reg] });
const phc = ph.labels('/api/v1/messages', 'POST');
const pcc = pc.labels('/api/v1/messages', 'POST', '200');
const oh = new HistogramFamily('mb_x_seconds', 'x', ['route', 'method']).child('/api/v1/messages', 'POST');
const oc = new CounterFamily('mb_y_total', 'y', ['route', 'method', 'status']).child('/api/v1/messages', 'POST', '200');
const N = 2_000_000;
function run(name: string, f: (i: number) => void) {
  for (let i = 0; i < 100_000; i++) f(i);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) f(i);
  const ns = Number(process.hrtime.bigint() - t0) / N;
  console.log(`${name}: ${ns.toFixed(1)} ns per call`);
}
for (let r = 0; r < 2; r++) {
  run('prom-client histogram child observe', (i) => phc.observe((i % 100) / 10000));
  run('prom-client counter child inc', () => pcc.inc());
  run('HistogramFamily child observe', (i) => oh.observe((i % 100) / 10000));
  run('CounterFamily child inc', () => oc.inc());
}
