/**
 * /metrics through real requests: the counters and gauges a scrape reads
 * move with the traffic, by route template, on the gateway that served it
 * and on the processes that host the actors (one process in embedded mode;
 * in the cluster run the gateways' and actor nodes' listeners come from
 * PARLEY_TEST_METRICS and PARLEY_TEST_NODE_METRICS).
 */
import t from 'tap';
import { poll, register } from './helpers/events.ts';
import { MAILBOX_SAMPLE_EVERY } from '../lib/metrics.ts';
import { scrape } from './helpers/metrics.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
if (!s.metricsUrls.length || !s.nodeMetricsUrls.length) throw new Error('no /metrics URLs: the cluster run must set PARLEY_TEST_METRICS and PARLEY_TEST_NODE_METRICS');
const gateway = s.metricsUrls[0]!;
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);

const until = async <T>(what: string, fn: () => Promise<T | undefined>, ms = 10_000): Promise<T> => {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

t.test('metrics - requests are counted by route template, method and status, with their latency', async (t) => {
  const route = '/api/v1/users/{user_id}';
  const before = await scrape(gateway);
  for (let i = 0; i < 3; i++) await owner.ok('GET', `/users/${s.demo.member1.userId}`);
  const missing = await owner.get('/users/987654321');
  t.not(missing.status, 200);
  const after = await scrape(gateway);
  const delta = (status: string) => after.sum('parley_http_requests_total', { route, method: 'GET', status }) - before.sum('parley_http_requests_total', { route, method: 'GET', status });
  t.equal(delta('200'), 3, 'three answers 200');
  t.equal(delta(String(missing.status)), 1, `one answer ${missing.status}`);
  t.equal(
    after.sum('parley_http_request_duration_seconds_count', { route, method: 'GET' }) - before.sum('parley_http_request_duration_seconds_count', { route, method: 'GET' }),
    4,
    'every answer timed',
  );
  const inf = after.sum('parley_http_request_duration_seconds_bucket', { route, method: 'GET', le: '+Inf' });
  t.equal(inf, after.sum('parley_http_request_duration_seconds_count', { route, method: 'GET' }), 'the +Inf bucket holds every observation');
  t.ok(after.sum('parley_http_request_duration_seconds_sum', { route }) > before.sum('parley_http_request_duration_seconds_sum', { route }), 'latency adds up');
  const raw = after.samples.filter((x) => x.labels.route?.includes(String(s.demo.member1.userId)) || x.labels.route?.includes('987654321'));
  t.same(raw, [], 'no series is labelled with a raw path (bounded cardinality)');
  t.ok(after.sum('parley_bus_request_duration_seconds_count') >= before.sum('parley_bus_request_duration_seconds_count') + 4, 'the gateway timed its bus requests');
  t.ok(after.has('nodejs_eventloop_lag_seconds') && after.has('process_cpu_user_seconds_total'), 'process and event-loop metrics');
  t.equal(after.series('parley_info')[0]?.value, 1);
});

t.test('metrics - an unknown path is counted under one series, whatever the path', async (t) => {
  const before = await scrape(gateway);
  await owner.get('/no/such/route/1');
  await owner.get('/no/such/route/2');
  const after = await scrape(gateway);
  t.equal(after.sum('parley_http_requests_total', { route: 'unmatched', status: '404' }) - before.sum('parley_http_requests_total', { route: 'unmatched', status: '404' }), 2);
});

t.test('metrics - the held-poll gauge counts a long poll while it waits, and drops when it is answered', async (t) => {
  const held = async () => (await scrape(gateway)).sum('parley_http_long_polls_held');
  const base = await held();
  const q = await register(maria, { event_types: ['message'] });
  const waiting = poll(q, { timeoutMs: 20_000 });
  const during = await until('the poll is counted', async () => ((await held()) >= base + 1 ? await held() : undefined));
  t.ok(during >= base + 1, `held ${during} (was ${base})`);
  const nodes = await scrape(s.nodeMetricsUrls);
  t.ok(nodes.sum('parley_event_queues') >= 1, 'the queue is counted where it lives');
  t.ok(nodes.sum('parley_event_queue_polls_waiting') >= 1, 'so is the poll parked at it');
  await owner.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([s.demo.member1.userId]), content: 'wake up' });
  const events = await waiting;
  t.equal(events[0]?.type, 'message');
  const afterwards = await until('the poll is no longer counted', async () => ((await held()) <= base ? await held() : undefined));
  t.ok(afterwards <= base);
});

t.test('metrics - actor mailboxes, the store and the journal count a send where the actors live', async (t) => {
  const before = await scrape(s.nodeMetricsUrls);
  const sent = 2 * MAILBOX_SAMPLE_EVERY;
  for (let i = 0; i < sent; i++) await owner.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([s.demo.member1.userId]), content: `counted ${i}` });
  const after = await scrape(s.nodeMetricsUrls);
  const grew = (name: string, labels: Record<string, string> = {}) => after.sum(name, labels) - before.sum(name, labels);
  t.ok(grew('parley_actor_mailbox_messages_total', { kind: 'realm' }) >= sent, 'each send ran in the realm\'s mailbox');
  const timed = grew('parley_actor_mailbox_wait_seconds_count', { kind: 'realm' });
  t.ok(timed >= 2 && timed <= grew('parley_actor_mailbox_messages_total', { kind: 'realm' }) / MAILBOX_SAMPLE_EVERY + 1, `its wait timed for one message in ${MAILBOX_SAMPLE_EVERY} (${timed})`);
  t.ok(grew('parley_store_operation_duration_seconds_count', { op: 'commit' }) >= 1, 'commits timed');
  t.ok(grew('parley_store_commit_ops_sum') >= sent, 'at least a row per message committed');
  t.ok(grew('parley_journal_commit_changes_sum') >= sent, 'every change went through a journal batch');
  t.ok(after.sum('parley_actors', { kind: 'realm' }) >= 1, 'the realm actor is loaded');
  t.ok(after.sum('parley_shards_owned') >= 1, 'shards owned');
  t.ok(after.sum('parley_shard_moves_total', { move: 'acquired' }) >= after.sum('parley_shards_owned'), 'every owned shard was acquired');
  for (const kind of ['realm', 'queue']) t.equal(after.sum('parley_actor_mailbox_depth', { kind }), 0, `${kind} mailboxes idle between requests`);
});

t.test('metrics - not on the API port; the metrics listener serves nothing else', async (t) => {
  const onApi = await fetch(`${s.urls[0]}/metrics`);
  const text = await onApi.text();
  t.equal(onApi.status, 404);
  t.notMatch(text, /parley_http_requests_total/);
  const other = await fetch(gateway.replace(/\/metrics$/, '/api/v1/users/me'));
  t.equal(other.status, 404);
});
