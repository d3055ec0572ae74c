/**
 * The realm actor's CPU for one `POST /users/me/subscriptions` that adds
 * every user of an organization of N to a new channel, in process: each
 * phase of the action (check, apply, events) and what the node does with
 * the deliveries before they leave (its schema check, which copies them),
 * with the deliveries' total size, done in steps as the realm's host does (at most `SUBSCRIBE_STEP`
 * subscriptions each, `PARLEY_SUBSCRIBE_STEP`, each sized from the CPU time of the one before to take
 * `SUBSCRIBE_STEP_MS`, `PARLEY_SUBSCRIBE_STEP_MS`): the longest step is how long the realm's other
 * requests may wait. No store, no HTTP.
 *
 *   node --import tsx bench/subscribe-bulk.ts [--sizes 100,5000,33645]  (the first size warms up: code loaded on first use)
 */
import { parseArgs } from 'node:util';
import { Delivery } from '../actors/events/delivery.ts';
import { Tx } from '../actors/runtime/action.ts';
import { RealmState } from '../actors/realm/state/state.ts';
import { subscribe, SUBSCRIBE_STEP, SUBSCRIBE_STEP_MS } from '../actors/realm/actions/channels/subscriptions.ts';
import { RealmMeta, UserRecord } from '../storage/tables.ts';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '100,5000,33645' } } });

for (const n of values.sizes.split(',').map(Number)) {
  const s = new RealmState(1);
  s.meta = RealmMeta.parse({ name: 'Bench', dateCreated: 0 });
  for (let id = 1; id <= n; id++) s.indexUser(UserRecord.parse({ id, email: `u${id}@bench.example`, fullName: `User ${id}`, role: id === 1 ? 100 : 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: '' }));
  for (let i = 0; i <= n; i++) s.take('user', new Tx({ kind: 'realm', id: '1', shard: 0 }));
  const principals = Array.from({ length: n }, (_, i) => i + 1);
  const msg = { type: 'subscribe', caller: { realmId: 1, userId: 1 }, subscriptions: [{ name: `everyone-${n}` }], principals, authorizationErrorsFatal: true, inviteOnly: false, isWebPublic: false, isDefaultStream: false, historyPublicToSubscribers: null, messageRetentionDays: null, topicsPolicy: null, folderId: null, groups: {}, announce: false };
  // The steps as the realm's host runs them (`ActionDef.rest`): check, apply, events and the node's
  // schema check of the deliveries (zod's copy, before they are handed to the queues) hold the thread;
  // the JSON encoding (done by the queues, per queue, or by the bus in a cluster) is timed apart.
  const phases = { check: 0, apply: 0, events: 0, schema: 0, encode: 0 };
  let longest = 0;
  let longestAfterFirst = 0;
  let steps = 0;
  let writes = 0;
  let deliveries = 0;
  let bytes = 0;
  const start = performance.now();
  for (let m: typeof msg | null = msg; m; steps++) {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const plan = subscribe.check(s, m as never, undefined, undefined as never);
    const t1 = performance.now();
    const tx = new Tx({ kind: 'realm', id: '1', shard: 0 });
    const reply = subscribe.apply(s, plan, tx, undefined as never);
    const t2 = performance.now();
    const events = subscribe.events!(s, plan, reply);
    const t3 = performance.now();
    const cpu = process.cpuUsage(cpu0);
    m = subscribe.rest!(plan, reply, m as never, (cpu.user + cpu.system) / 1000) as typeof msg | null;
    const parsed = events.map((d) => Delivery.parse(d));
    const t4 = performance.now();
    for (const d of parsed) bytes += JSON.stringify(d).length;
    const t5 = performance.now();
    phases.check += t1 - t0;
    phases.apply += t2 - t1;
    phases.events += t3 - t2;
    phases.schema += t4 - t3;
    phases.encode += t5 - t4;
    longest = Math.max(longest, t4 - t0);
    if (steps > 0) longestAfterFirst = Math.max(longestAfterFirst, t4 - t0);
    writes += tx.ops.length;
    deliveries += events.length;
  }
  const total = performance.now() - start;
  const heap = process.memoryUsage().heapUsed / 2 ** 20;
  console.log(`${n.toLocaleString('en')} principals in ${steps} steps (at most ${SUBSCRIBE_STEP} subscriptions, sized to ${SUBSCRIBE_STEP_MS} ms of CPU): longest step ${longest.toFixed(0)} ms (after the first ${longestAfterFirst.toFixed(0)} ms), total ${total.toFixed(0)} ms (check ${phases.check.toFixed(0)}, apply ${phases.apply.toFixed(0)}, events ${phases.events.toFixed(0)}, the node's schema check ${phases.schema.toFixed(0)}; JSON encoding ${phases.encode.toFixed(0)}); ${writes} writes, ${deliveries} deliveries, ${(bytes / 2 ** 20).toFixed(1)} MB as JSON; heap ${heap.toFixed(0)} MB`);
}
