// A real Prometheus (Debian's package; scripts/install-prometheus.sh) scrapes
// a running cluster (two gateways, two actor nodes) on 127.0.0.1, and what its
// HTTP API answers is the traffic this test made: per gateway, per node.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { diesWithThisProcess, freePort, ROOT } from '../../scripts/cluster-launcher.ts';
import { Api } from '../helpers/api.ts';
import { SHARDS, startTestCluster } from './helpers.ts';

const PROMETHEUS = '/usr/bin/prometheus';

// A small IP budget, so the rate limiter refuses this test's anonymous requests.
const c = await startTestCluster({ PARLEY_RATE_LIMIT_IP: '5/60' });
t.teardown(() => c.stop());

const dir = mkdtempSync(join(tmpdir(), 'parley-prometheus-'));
const port = await freePort();
const targets = c.procs.map((p) => `      - targets: ['${new URL(p.metricsUrl).host}']\n        labels: { node: '${p.name}', role: '${p.role}' }`).join('\n');
writeFileSync(
  join(dir, 'prometheus.yml'),
  `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: parley\n    static_configs:\n${targets}\n`,
);
const prometheus = spawn(PROMETHEUS, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
diesWithThisProcess(prometheus);
let promLog = '';
prometheus.stderr!.on('data', (d: Buffer) => (promLog = (promLog + d.toString()).slice(-10_000)));
t.teardown(async () => {
  if (prometheus.exitCode === null && prometheus.signalCode === null) {
    const exited = new Promise((r) => prometheus.once('exit', r));
    prometheus.kill('SIGTERM');
    await exited;
  }
  rmSync(dir, { recursive: true, force: true });
});
const base = `http://127.0.0.1:${port}`;

type Vector = Array<{ metric: Record<string, string>; value: [number, string] }>;

/** An instant query through Prometheus' HTTP API. */
async function query(q: string): Promise<Vector> {
  const r = await fetch(`${base}/api/v1/query?${new URLSearchParams({ query: q })}`);
  const body = (await r.json()) as { status: string; data: { resultType: string; result: Vector }; error?: string };
  if (body.status !== 'success') throw new Error(`${q}: ${body.error}`);
  return body.data.result;
}

/** Values of a query by one label (e.g. `node`). */
async function byLabel(q: string, label: string): Promise<Record<string, number>> {
  return Object.fromEntries((await query(q)).map((s) => [s.metric[label] ?? '', Number(s.value[1])]));
}

/** Polls until `check` accepts what `q` gives; returns that, or fails with the last answer. */
async function eventually<T>(what: string, get: () => Promise<T>, check: (v: T) => boolean, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: T = await get();
  while (!check(last)) {
    if (Date.now() > deadline) throw new Error(`${what}: last answer ${JSON.stringify(last)}\n${promLog}`);
    await new Promise((r) => setTimeout(r, 250));
    last = await get();
  }
  return last;
}

await eventually('Prometheus ready', () => fetch(`${base}/-/ready`).then((r) => r.status, () => 0), (s) => s === 200);

t.test('prometheus - scrapes all four processes', async (t) => {
  const up = await eventually('every target up', () => byLabel('up{job="parley"}', 'node'), (v) => Object.values(v).filter((x) => x === 1).length === 4);
  t.same(up, { 'gateway-1': 1, 'gateway-2': 1, 'actors-1': 1, 'actors-2': 1 });
  const info = await byLabel('parley_info', 'node');
  t.same(Object.keys(info).sort(), ['actors-1', 'actors-2', 'gateway-1', 'gateway-2']);
  t.same(await byLabel('count by (node) (nodejs_eventloop_lag_seconds)', 'node'), { 'gateway-1': 1, 'gateway-2': 1, 'actors-1': 1, 'actors-2': 1 }, 'event-loop lag from every process');
});

t.test('prometheus - the requests this test made, per gateway, by route template', async (t) => {
  const q = 'sum by (node) (parley_http_requests_total{route="/api/v1/users/me",method="GET",status="200"})';
  // Scraped at least once since the start, so what follows is this test's own traffic.
  await eventually('a scrape after the start', () => query('up{job="parley"} == 1'), (v) => v.length === 4);
  const before = await byLabel(q, 'node');
  const viaFirst = c.owner; // gateway-1
  const viaSecond = c.member; // gateway-2
  for (let i = 0; i < 5; i++) await viaFirst.ok('GET', '/users/me');
  for (let i = 0; i < 3; i++) await viaSecond.ok('GET', '/users/me');
  const want = { 'gateway-1': (before['gateway-1'] ?? 0) + 5, 'gateway-2': (before['gateway-2'] ?? 0) + 3 };
  const seen = await eventually('the requests counted per gateway', () => byLabel(q, 'node'), (v) => v['gateway-1'] === want['gateway-1'] && v['gateway-2'] === want['gateway-2']);
  t.same(seen, want);
  // The median from the buckets as scraped (over the series' life: its first sample already
  // held these requests, so a rate() over it would see no increase).
  const p50 = await eventually(
    'a latency quantile',
    async () => Number((await query('histogram_quantile(0.5, sum by (le) (parley_http_request_duration_seconds_bucket{route="/api/v1/users/me"}))'))[0]?.value[1]),
    (v) => Number.isFinite(v),
  );
  t.ok(p50 > 0 && p50 < 1, `median GET /users/me latency ${p50} s`);
  const bus = await byLabel('sum by (node) (parley_bus_request_duration_seconds_count{role="gateway"})', 'node');
  t.ok(bus['gateway-1']! >= 5 && bus['gateway-2']! >= 3, `gateways timed their bus requests: ${JSON.stringify(bus)}`);
});

t.test('prometheus - actor nodes: shards, leases, mailboxes and the Cassandra store', async (t) => {
  const owned = await eventually('shards owned', () => byLabel('parley_shards_owned', 'node'), (v) => (v['actors-1'] ?? 0) + (v['actors-2'] ?? 0) === SHARDS);
  t.same(owned, { 'actors-1': SHARDS / 2, 'actors-2': SHARDS / 2 }, 'a fair share each');
  const moves = await byLabel('sum by (move) (parley_shard_moves_total)', 'move');
  const acquired = moves['acquired'] ?? 0;
  t.ok(acquired >= SHARDS, `${acquired} shards acquired in all`);
  // The first node took every shard, then handed half over to the second as it joined.
  t.equal(acquired - (moves['handed_over'] ?? 0) - (moves['lost'] ?? 0), SHARDS, `every move accounted for: ${JSON.stringify(moves)}`);
  const renewals = await byLabel('parley_lease_renewals_total{result="ok"}', 'node');
  t.ok(renewals['actors-1']! > 0 && renewals['actors-2']! > 0, `leases renewed on both nodes: ${JSON.stringify(renewals)}`);
  t.same(await byLabel('parley_cluster_live_nodes', 'node'), { 'actors-1': 2, 'actors-2': 2 });
  await c.owner.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([c.memberId]), content: 'counted by Prometheus' });
  const realm = await eventually('the realm\'s mailbox', () => query('sum(parley_actor_mailbox_wait_seconds_count{kind="realm"})'), (v) => Number(v[0]?.value[1]) > 0);
  t.ok(Number(realm[0]!.value[1]) > 0);
  const commits = await eventually('Cassandra commits', () => query('sum(parley_store_operation_duration_seconds_count{store="cassandra",op="commit"})'), (v) => Number(v[0]?.value[1]) > 0);
  t.ok(Number(commits[0]!.value[1]) > 0, 'commits timed');
  t.same((await query('parley_store_operation_duration_seconds_count{role="gateway"}')).length, 0, 'gateways have no store');
});

t.test('prometheus - rate-limit hits', async (t) => {
  const anonymous = new Api(c.gateways[0]);
  let refused = 0;
  for (let i = 0; i < 10; i++) if ((await anonymous.get('/server_settings')).status === 429) refused++;
  t.ok(refused >= 4, `${refused} of 10 anonymous requests refused`);
  const hits = await eventually('hits counted', () => query('sum(parley_rate_limit_hits_total{limit="ip"})'), (v) => Number(v[0]?.value[1]) >= refused);
  t.equal(Number(hits[0]!.value[1]), refused);
  const answered = await eventually('429s counted', () => query('sum(parley_http_requests_total{status="429"})'), (v) => Number(v[0]?.value[1]) >= refused);
  t.equal(Number(answered[0]!.value[1]), refused);
});

t.test('prometheus - every series the Grafana dashboard queries is scraped from the cluster', async (t) => {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'k8s/monitoring/grafana/parley.json'), 'utf8')) as { panels: Array<{ title: string; targets?: Array<{ expr: string }> }> };
  const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((x) => ({ panel: p.title, expr: x.expr })));
  t.ok(exprs.length >= 20, `${exprs.length} queries`);
  const scraped = new Set((await query('group by (__name__) ({job="parley"})')).map((s) => s.metric.__name__));
  for (const { panel, expr } of exprs) {
    const names = new Set([...expr.matchAll(/\b((?:parley|nodejs|process)_[a-z0-9_]+)\b/g)].map((m) => m[1]!));
    t.ok(names.size > 0, `${panel}: queries a series`);
    for (const name of names) t.ok(scraped.has(name), `${panel}: ${name} is scraped`);
    // Each query is valid PromQL and answers (an empty vector is fine for a counter of rare events).
    const r = await fetch(`${base}/api/v1/query?${new URLSearchParams({ query: expr.replaceAll('$__rate_interval', '1m') })}`);
    t.equal(r.status, 200, `${panel}: ${expr}`);
  }
});
