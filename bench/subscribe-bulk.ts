/**
 * The realm actor's CPU for one `POST /users/me/subscriptions` that adds
 * every user of an organization of N to a new channel, in process: each
 * phase of the action (check, apply, events) and what the node does with
 * the deliveries before they leave (its schema check, which copies them),
 * with the deliveries' total size. No store, no HTTP.
 *
 *   node --import tsx bench/subscribe-bulk.ts [--sizes 100,5000,33645]  (the first size warms up: code loaded on first use)
 */
import { parseArgs } from 'node:util';
import { Delivery } from '../actors/events/delivery.ts';
import { Tx } from '../actors/runtime/action.ts';
import { RealmState } from '../actors/realm/state.ts';
import { subscribe } from '../actors/realm/subscriptions.ts';
import { RealmMeta, UserRecord } from '../storage/tables.ts';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '100,5000,33645' } } });

for (const n of values.sizes.split(',').map(Number)) {
  const s = new RealmState(1);
  s.meta = RealmMeta.parse({ name: 'Bench', dateCreated: 0 });
  for (let id = 1; id <= n; id++) s.indexUser(UserRecord.parse({ id, email: `u${id}@bench.example`, fullName: `User ${id}`, role: id === 1 ? 100 : 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: '' }));
  for (let i = 0; i <= n; i++) s.take('user', new Tx({ kind: 'realm', id: '1', shard: 0 }));
  const principals = Array.from({ length: n }, (_, i) => i + 1);
  const msg = { type: 'subscribe', caller: { realmId: 1, userId: 1 }, subscriptions: [{ name: `everyone-${n}` }], principals, authorizationErrorsFatal: true, inviteOnly: false, isWebPublic: false, isDefaultStream: false, historyPublicToSubscribers: null, messageRetentionDays: null, topicsPolicy: null, groups: {}, announce: false };
  const t0 = performance.now();
  const plan = subscribe.check(s, msg as never, undefined, undefined as never);
  const t1 = performance.now();
  const tx = new Tx({ kind: 'realm', id: '1', shard: 0 });
  const reply = subscribe.apply(s, plan, tx, undefined as never);
  const t2 = performance.now();
  const events = subscribe.events!(s, plan, reply);
  const t3 = performance.now();
  let bytes = 0;
  for (const d of events) bytes += JSON.stringify(Delivery.parse(d)).length;
  const t4 = performance.now();
  const heap = process.memoryUsage().heapUsed / 2 ** 20;
  console.log(`${n.toLocaleString('en')} principals: check ${(t1 - t0).toFixed(0)} ms, apply ${(t2 - t1).toFixed(0)} ms (${tx.ops.length} writes), events ${(t3 - t2).toFixed(0)} ms (${events.length} deliveries, ${(bytes / 2 ** 20).toFixed(1)} MB as JSON), schema check + encoding ${(t4 - t3).toFixed(0)} ms; heap ${heap.toFixed(0)} MB`);
}
