/**
 * How a reaction event to a channel message is addressed (issue 20), in
 * process: as it was, the channel's active subscribers listed by the realm
 * (`activeSubscribers`, a copy of the kept list) and one placement and shard
 * hash per recipient when the node publishes it (`deliveryPlacements`,
 * `shardOf`, as `ActorNode.publish` does); and as it is, one delivery naming
 * the channel (`toChannelSubscribers`), which the node publishes on the
 * realm's broadcast subject alone. Only the addressing: the reaction's check
 * and commit are the same in both. A realm of N users all subscribed to the
 * channel, 64 shards.
 *
 *   node --import tsx bench/realm-reaction.ts [--sizes 1000,10000,50000] [--events 500]
 */
import { parseArgs } from 'node:util';
import { deliveryPlacements, isRealmWide, toChannelSubscribers, toUsers } from '../actors/events/delivery.ts';
import { RealmState } from '../actors/realm/state/state.ts';
import { shardOf } from '../actors/subjects.ts';
import { SubscriptionRecord, UserRecord } from '../storage/tables.ts';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000,50000' }, events: { type: 'string', default: '500' } } });
const count = Number(values.events);
const SHARDS = 64;

const event = { type: 'reaction', op: 'add', message_id: 1, user_id: 1, user: { user_id: 1, email: 'u1@x', full_name: 'User 1' }, emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' } as const;

/** The subjects a delivery goes to, as `ActorNode.publish` finds them. */
function subjectsOf(d: ReturnType<typeof toUsers>): number {
  const shards = new Set<number>();
  for (const p of deliveryPlacements(d)) shards.add(shardOf(p, SHARDS));
  return shards.size + (isRealmWide(d) ? 1 : 0);
}

const time = (f: () => void): number => {
  for (let i = 0; i < 20; i++) f();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) f();
  return ((performance.now() - t0) * 1000) / count;
};

console.log(`load average at start: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
for (const n of values.sizes!.split(',').map(Number)) {
  const s = new RealmState(1);
  for (let id = 1; id <= n; id++) {
    s.indexUser(UserRecord.parse({ id, email: `u${id}@x`, fullName: `User ${id}`, role: 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: '' }));
    s.indexSub(SubscriptionRecord.parse({ streamId: 1, userId: id, active: true, color: '#fff', startMessageId: 0 }));
  }
  const listed: number[] = [];
  const named: number[] = [];
  for (let round = 0; round < 3; round++) {
    listed.push(time(() => subjectsOf(toUsers(1, s.activeSubscribers(1), event))));
    named.push(time(() => subjectsOf(toChannelSubscribers(1, 1, event))));
  }
  console.log(`${n.toLocaleString('en-US')} subscribers: listed ${Math.min(...listed).toFixed(1)} µs (${subjectsOf(toUsers(1, s.activeSubscribers(1), event))} subjects), by channel ${Math.min(...named).toFixed(2)} µs (1 subject) per reaction event`);
}
console.log(`load average at end: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
