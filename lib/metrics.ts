/**
 * Metrics in Prometheus' text format (prom-client), served by every process
 * on a listener of its own (`PARLEY_METRICS_PORT`), never on the API port, so
 * a load balancer in front of the gateways cannot expose them.
 *
 * Series on a hot path (a request, a bus call, a mailbox message, a commit)
 * are kept by `CounterFamily` and `HistogramFamily`: each label set gets a
 * child once, which the caller keeps, and a count or an observation is a few
 * number updates with no allocation. prom-client's own labelled metrics hash
 * the label set into a string and allocate an object on every call
 * (`bench/metrics.ts`: 0.4–1.2 µs a call against 4–40 ns here); here
 * prom-client formats these families at scrape time through its registry,
 * which takes any object with `name` and `get()`. Series off the hot path
 * (shard moves, lease renewals, rate-limit hits) and gauges read at scrape
 * time use prom-client's classes directly.
 */
import { createServer, type Server } from 'node:http';
import { FencedError } from '../storage/store.ts';
import { collectDefaultMetrics, Counter, Gauge, Histogram, type Metric, register } from 'prom-client';

export { Counter, Gauge, Histogram, register };

/** Seconds buckets for request-like latencies: 0.5 ms … 60 s (a long poll). */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Sizes (operations per commit, changes per batch). */
export const SIZE_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000];

type Labels = Record<string, string>;

/** One label set of a counter; the caller keeps it and calls `inc`. */
export class CounterChild {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(n = 1): void {
    this.value += n;
  }
}

/** One label set of a histogram; `observe` finds the bucket and adds, nothing else. */
export class HistogramChild {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(v: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

abstract class Family<C extends { labels: Labels }> {
  private children = new Map<string, C>();
  abstract readonly type: 'counter' | 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {
    register.registerMetric(this as unknown as Metric);
  }

  protected abstract make(labels: Labels): C;

  /** The child of these label values (in `labelNames` order), made on first use: look it up once and keep it. */
  child(...values: string[]): C {
    const key = values.join('\u0000');
    let c = this.children.get(key);
    if (!c) {
      if (values.length !== this.labelNames.length) throw new Error(`${this.name}: ${this.labelNames.length} label values expected`);
      const labels: Labels = {};
      this.labelNames.forEach((n, i) => (labels[n] = values[i]!));
      this.children.set(key, (c = this.make(labels)));
    }
    return c;
  }

  protected all(): Iterable<C> {
    return this.children.values();
  }

  /** prom-client's registry formats what this returns. */
  abstract get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: { value: number; labels: Labels; metricName?: string }[] }>;
}

/** A counter family kept without allocation per increment. */
export class CounterFamily extends Family<CounterChild> {
  readonly type = 'counter';
  protected make(labels: Labels): CounterChild {
    return new CounterChild(labels);
  }

  async get() {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: [...this.all()].map((c) => ({ value: c.value, labels: c.labels })) };
  }
}

/** A histogram family kept without allocation per observation. */
export class HistogramFamily extends Family<HistogramChild> {
  readonly type = 'histogram';
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[] = LATENCY_BUCKETS,
  ) {
    super(name, help, labelNames);
  }

  protected make(labels: Labels): HistogramChild {
    return new HistogramChild(labels, this.buckets);
  }

  async get() {
    const values: { value: number; labels: Labels; metricName: string }[] = [];
    for (const c of this.all()) {
      // A child nothing observed yet (a store's series on a process that has none) is left out.
      if (c.count === 0) continue;
      let acc = 0;
      this.buckets.forEach((le, i) => {
        acc += c.counts[i]!;
        values.push({ value: acc, labels: { ...c.labels, le: String(le) }, metricName: `${this.name}_bucket` });
      });
      values.push({ value: c.count, labels: { ...c.labels, le: '+Inf' }, metricName: `${this.name}_bucket` });
      values.push({ value: c.sum, labels: c.labels, metricName: `${this.name}_sum` });
      values.push({ value: c.count, labels: c.labels, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** Seconds since `start` (a `performance.now()` reading). */
export const secondsSince = (start: number): number => (performance.now() - start) / 1000;

/** Reports a gauge's values at scrape time: `set(value)`, or `set(value, labels)` per label set. */
export type GaugeSource = (set: (value: number, labels?: Labels) => void) => void;

/**
 * A gauge read at scrape time from the objects that report it (gateways,
 * actor nodes, queue shards: several may live in one process, as in tests),
 * summed per label set. Nothing is counted on the hot path, and a process
 * with no such object (a gateway has no shards) exports no series.
 */
export class SourcedGauge {
  private sources = new Set<GaugeSource>();
  readonly type = 'gauge';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[] = [],
  ) {
    register.registerMetric(this as unknown as Metric);
  }

  /** Adds a source; the returned function removes it. */
  add(read: GaugeSource): () => void {
    this.sources.add(read);
    return () => this.sources.delete(read);
  }

  async get() {
    const sums = new Map<string, { value: number; labels: Labels }>();
    for (const read of this.sources) {
      read((value, labels = {}) => {
        const key = this.labelNames.map((n) => labels[n] ?? '').join('\u0000');
        const v = sums.get(key);
        if (v) v.value += value;
        else sums.set(key, { value, labels });
      });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: [...sums.values()] };
  }
}

let defaultsOn = false;

/** Process metrics (CPU, memory, file descriptors), event-loop lag and GC, once per process. */
export function collectProcessMetrics(info: { role: string; mode: string; version: string }): void {
  if (defaultsOn) return;
  defaultsOn = true;
  collectDefaultMetrics({ register, eventLoopMonitoringPrecision: 20 });
  new Gauge({ name: 'parley_info', help: 'This process: its role, mode and version (always 1)', labelNames: ['role', 'mode', 'version'] }).set(info, 1);
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Serves GET /metrics (and nothing else) on `host:port`. A port that is taken
 * is logged by the caller and the process runs on without metrics: chat
 * matters more than its figures.
 */
export function serveMetrics(host: string, port: number): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not Found: this listener serves GET /metrics only\n');
      return;
    }
    register.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': register.contentType }).end(text),
      (err: Error) => res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`metrics failed: ${err.message}\n`),
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const addr = server.address();
      resolve({
        port: typeof addr === 'object' && addr ? addr.port : port,
        close: () =>
          new Promise<void>((r) => {
            server.close(() => r());
            // A scraper keeps its connection open between scrapes.
            server.closeAllConnections();
          }),
      });
    });
  });
}

// ---- the catalog: every series Parley exports (docs/architecture.md, "Metrics"; k8s/grafana/parley.json) ----

/** HTTP requests by route template (`/api/v1/messages/{message_id}`, never the raw path) and status. */
export const httpRequests = new CounterFamily('parley_http_requests_total', 'HTTP requests answered, by route template, method and status (499: the client went away first)', ['route', 'method', 'status']);
export const httpDuration = new HistogramFamily('parley_http_request_duration_seconds', 'Time from reading a request to writing its answer, by route template and method (long polls included)', ['route', 'method']);

/** Bus requests as their callers see them (gateways, and actors calling actors), by the target actor kind. */
export const busDuration = new HistogramFamily('parley_bus_request_duration_seconds', 'Bus request time as the caller sees it, retries included, by target actor kind', ['kind']);
export const busErrors = new CounterFamily('parley_bus_request_errors_total', 'Bus requests that got no answer from their actor, by target kind and error (timeout, no_responders, busy, closed, shard_moving); retried ones included', ['kind', 'error']);

/**
 * One message in this many has its mailbox wait timed (`parley_actor_mailbox_wait_seconds`): every
 * message timed cost two clock reads and an observation per message on the send path (~2.3 messages
 * per send, `bench/RESULTS.md`). A uniform sample keeps the distribution's shape (quantiles, mean);
 * the exact number of messages is `parley_actor_mailbox_messages_total`.
 */
export const MAILBOX_SAMPLE_EVERY = 16;
export const mailboxWait = new HistogramFamily('parley_actor_mailbox_wait_seconds', `Time a message waited in its actor's mailbox before it ran (0 for an idle mailbox), by actor kind: a uniform sample of one message in ${MAILBOX_SAMPLE_EVERY} (its count is sampled messages; all messages: parley_actor_mailbox_messages_total)`, ['kind']);
/** Messages waiting in mailboxes, per kind: kept as numbers, read at scrape. */
export const mailboxDepth = new Map<string, { depth: number }>();
new Gauge({
  name: 'parley_actor_mailbox_depth',
  help: 'Messages waiting in the mailboxes of this process\'s actors, by actor kind',
  labelNames: ['kind'],
  collect() {
    for (const [kind, d] of mailboxDepth) this.set({ kind }, d.depth);
  },
});

/** A kind's mailbox series, shared by its actors: the depth and message counts, the wait histogram's child and the sampling countdown. */
export interface MailboxStats {
  queued: { depth: number };
  /** Messages posted (every one), read at scrape. */
  posted: { count: number };
  wait: HistogramChild;
  /** Time one message in this many. */
  sampleEvery: number;
  /** Messages until the next timed one. */
  untilSample: number;
}

const mailboxStatsByKind = new Map<string, MailboxStats>();
new Counter({
  name: 'parley_actor_mailbox_messages_total',
  help: 'Messages run by the actors of this process, by actor kind',
  labelNames: ['kind'],
  collect() {
    this.reset();
    for (const [kind, s] of mailboxStatsByKind) this.inc({ kind }, s.posted.count);
  },
});

/** The series of a kind's mailboxes; `sampleEvery` 1 times every message (tests). */
export function mailboxStats(kind: string, sampleEvery = MAILBOX_SAMPLE_EVERY): MailboxStats {
  let s = mailboxStatsByKind.get(kind);
  if (!s) {
    const queued = { depth: 0 };
    mailboxDepth.set(kind, queued);
    mailboxStatsByKind.set(kind, (s = { queued, posted: { count: 0 }, wait: mailboxWait.child(kind), sampleEvery, untilSample: 1 }));
  }
  return s;
}

export const storeDuration = new HistogramFamily('parley_store_operation_duration_seconds', 'Store operation time, by store (lmdb, cassandra) and operation (get, range, claim, commit)', ['store', 'op']);
export const storeCommitOps = new HistogramFamily('parley_store_commit_ops', 'Write operations per store commit (after the journal grouped its changes)', ['store'], SIZE_BUCKETS);
export const storeCommitFailures = new CounterFamily('parley_store_commit_failures_total', 'Store commits that failed, by store and reason (fenced: a newer owner claimed the scope; error: outcome unknown)', ['store', 'reason']);
/** A store implementation's series, made once: time per operation, ops per commit, failed commits. */
export function storeStats(store: string) {
  return {
    get: storeDuration.child(store, 'get'),
    range: storeDuration.child(store, 'range'),
    claim: storeDuration.child(store, 'claim'),
    commit: storeDuration.child(store, 'commit'),
    ops: storeCommitOps.child(store),
    fenced: storeCommitFailures.child(store, 'fenced'),
    failed: storeCommitFailures.child(store, 'error'),
  };
}
export type StoreStats = ReturnType<typeof storeStats>;

/** Runs a commit of `ops` operations, counting its size, its time and its failure. */
export async function timedCommit(s: StoreStats, ops: number, run: () => Promise<void>): Promise<void> {
  s.ops.observe(ops);
  const t0 = performance.now();
  try {
    await run();
  } catch (err) {
    (err instanceof FencedError || (err instanceof Error && err.cause instanceof FencedError) ? s.fenced : s.failed).inc();
    throw err;
  } finally {
    s.commit.observe(secondsSince(t0));
  }
}

export const journalBatch = new HistogramFamily('parley_journal_commit_changes', 'Actor changes grouped into one commit by the journal (group commit)', [], SIZE_BUCKETS);

export const shardMoves = new Counter({ name: 'parley_shard_moves_total', help: 'Shards this node took (acquired), lost (lease expired or taken) or handed over (rebalance, shutdown)', labelNames: ['move'] });
export const leaseRenewals = new Counter({ name: 'parley_lease_renewals_total', help: 'Lease renewal rounds (one Redis call renews every lease held), by result', labelNames: ['result'] });
export const leaseRenewDuration = new HistogramFamily('parley_lease_renewal_duration_seconds', 'Time of a lease renewal round (one Redis call)', []).child();

export const presenceAnswerFetches = new Counter({ name: 'parley_presence_answer_fetches_total', help: "Fetches of the web app's presence-ping answer (everyone's presence) by this gateway: at most one per second per organization and form" });
export const rateLimitHits = new Counter({ name: 'parley_rate_limit_hits_total', help: 'Requests refused with 429, by the budget that ran out (user, ip, auth_failures)', labelNames: ['limit'] });

export const heldPolls = new SourcedGauge('parley_http_long_polls_held', 'Long polls (GET /events) this gateway holds open, waiting for events');
export const requestsInFlight = new SourcedGauge('parley_http_requests_in_flight', 'HTTP requests read and not yet answered (held long polls included)');
export const liveNodes = new SourcedGauge('parley_cluster_live_nodes', 'Actor nodes alive as this node saw at its last lease renewal');
export const shardsOwned = new SourcedGauge('parley_shards_owned', 'Shards this actor node owns');
export const actorsHosted = new SourcedGauge('parley_actors', 'Actors loaded on this node, by kind', ['kind']);
export const eventQueues = new SourcedGauge('parley_event_queues', 'Event queues held on this node');
export const queuePolls = new SourcedGauge('parley_event_queue_polls_waiting', 'Long polls parked at this node\'s queues, waiting for events');
