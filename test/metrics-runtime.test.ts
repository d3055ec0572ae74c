/**
 * The runtime's series as a scrape reads them (prom-client's registry, this
 * process): bus errors by target kind and reason through the real in-process
 * bus, and a mailbox's depth and wait while a message runs.
 */
import t from 'tap';
import { ActorClient } from '../actors/runtime/client.ts';
import { LocalBus } from '../actors/runtime/local-bus.ts';
import { Mailbox } from '../actors/runtime/mailbox.ts';
import { actorRef } from '../actors/runtime/registry.ts';
import { subjects } from '../actors/subjects.ts';
import { MAILBOX_SAMPLE_EVERY, mailboxStats, register } from '../lib/metrics.ts';
import { parseMetrics, Scrape } from './helpers/metrics.ts';

const scrape = async () => new Scrape(parseMetrics(await register.metrics()));

t.test('metrics - a call nobody serves counts no_responders per attempt, and a call that never answers counts a timeout', async (t) => {
  const bus = new LocalBus();
  t.teardown(() => bus.close());
  // A 3 s retry budget for a shard without an owner (a cluster's is 2 × its lease TTL).
  const client = new ActorClient(bus, 1, 200, 3000);
  const nobody = actorRef<Record<string, never>>('metrics_nobody', (id) => id);
  const err = await client.raw(nobody, '1', { type: 'x', caller: { realmId: 1, userId: null } } as never).catch((e: Error) => e);
  t.match(err, { code: 'SERVICE_UNAVAILABLE' });
  let s = await scrape();
  const attempts = s.sum('parley_bus_request_errors_total', { kind: 'metrics_nobody', error: 'no_responders' });
  t.ok(attempts >= 3, `each retry counted: ${attempts} attempts in the 3 s budget`);
  t.equal(s.sum('parley_bus_request_errors_total', { kind: 'metrics_nobody', error: 'timeout' }), 0, 'every reason starts at zero');
  t.equal(s.sum('parley_bus_request_duration_seconds_count', { kind: 'metrics_nobody' }), 1, 'the call timed once, retries included');
  t.ok(s.sum('parley_bus_request_duration_seconds_sum', { kind: 'metrics_nobody' }) >= 2.5, 'its time spans the retries');

  const silent = actorRef<Record<string, never>>('metrics_silent', (id) => id);
  await bus.serve(subjects.actor(0, 'metrics_silent', '1'), () => new Promise(() => {}));
  const late = await client.raw(silent, '1', { type: 'x', caller: { realmId: 1, userId: null } } as never).catch((e: Error) => e);
  t.match(late, { code: 'SERVICE_UNAVAILABLE' });
  s = await scrape();
  t.equal(s.sum('parley_bus_request_errors_total', { kind: 'metrics_silent', error: 'timeout' }), 1, 'a timeout is not retried');
  t.equal(s.sum('parley_bus_request_duration_seconds_bucket', { kind: 'metrics_silent', le: '0.1' }), 0, 'not in a bucket below its timeout');
  t.ok(s.sum('parley_bus_request_duration_seconds_sum', { kind: 'metrics_silent' }) >= 0.2, 'timed at its 200 ms timeout');
});

t.test('metrics - a mailbox counts the messages waiting behind a running one, and how long they waited', async (t) => {
  // Every message timed here (a kind's mailboxes time one in MAILBOX_SAMPLE_EVERY by default).
  const mailbox = new Mailbox(mailboxStats('metrics_test', 1));
  let release!: () => void;
  const running = mailbox.post(() => new Promise<void>((r) => (release = r)));
  const queued = [1, 2, 3].map((n) => mailbox.post(() => n));
  let s = await scrape();
  t.equal(s.sum('parley_actor_mailbox_depth', { kind: 'metrics_test' }), 3, 'three waiting');
  t.equal(s.sum('parley_actor_mailbox_wait_seconds_count', { kind: 'metrics_test' }), 1, 'the first ran at once');
  await new Promise((r) => setTimeout(r, 60));
  release();
  t.same(await Promise.all([running, ...queued]), [undefined, 1, 2, 3]);
  s = await scrape();
  t.equal(s.sum('parley_actor_mailbox_depth', { kind: 'metrics_test' }), 0, 'none waiting');
  t.equal(s.sum('parley_actor_mailbox_wait_seconds_count', { kind: 'metrics_test' }), 4);
  t.equal(s.sum('parley_actor_mailbox_messages_total', { kind: 'metrics_test' }), 4, 'four messages run');
  t.equal(s.sum('parley_actor_mailbox_wait_seconds_bucket', { kind: 'metrics_test', le: '0.025' }), 1, 'three waited past 25 ms');
  t.ok(s.sum('parley_actor_mailbox_wait_seconds_sum', { kind: 'metrics_test' }) >= 3 * 0.05, 'about 60 ms each');
});

t.test('metrics - a mailbox times one message in MAILBOX_SAMPLE_EVERY and counts every one', async (t) => {
  const mailbox = new Mailbox(mailboxStats('metrics_sampled'));
  const n = MAILBOX_SAMPLE_EVERY * 10;
  let release!: () => void;
  const first = mailbox.post(() => new Promise<void>((r) => (release = r)));
  const rest = Array.from({ length: n - 1 }, (_, i) => mailbox.post(() => i));
  await new Promise((r) => setTimeout(r, 30));
  release();
  await Promise.all([first, ...rest]);
  const s = await scrape();
  t.equal(s.sum('parley_actor_mailbox_messages_total', { kind: 'metrics_sampled' }), n, 'every message counted');
  t.equal(s.sum('parley_actor_mailbox_wait_seconds_count', { kind: 'metrics_sampled' }), 10, `one in ${MAILBOX_SAMPLE_EVERY} timed`);
  t.equal(s.sum('parley_actor_mailbox_wait_seconds_bucket', { kind: 'metrics_sampled', le: '0.0005' }), 1, 'the first (ran at once) waited 0; the sampled ones behind it waited for it');
});
