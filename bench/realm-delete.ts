/**
 * What a channel message's deletion costs the realm to address (issue 20),
 * in process: `DELETE /messages/{id}` of a channel's first message, whose
 * events are a `delete_message` (the subscribers and the deleter) and a
 * `stream` update of `first_message_id` (the channel's audience). As it was:
 * the realm lists the active subscribers (`activeSubscribers`) and the
 * audience (`channelAudience`, every user for a public channel), and the
 * node places each recipient (`deliveryPlacements`, `shardOf`, as
 * `ActorNode.publish` does). As it is: the action's own `events`
 * (`deleteMessage.events`), a delivery naming the channel and, for a public
 * channel, a realm-wide one but the unsubscribed guests; a private channel's
 * names its administrators. Only the addressing: the check's access test
 * and the commit are the same in both. A realm of N users (one owner, the
 * rest members) all subscribed to the channel, 64 shards.
 *
 *   node --import tsx bench/realm-delete.ts [--sizes 1000,10000,50000] [--events 300]
 */
import { parseArgs } from 'node:util';
import { type Delivery, deliveryPlacements, isRealmWide, toUsers } from '../actors/events/delivery.ts';
import { GROUP_ID } from '../actors/model.ts';
import { deleteMessage } from '../actors/realm/actions/messages/message_edit.ts';
import { channelAudience } from '../actors/realm/rules/access.ts';
import { RealmState } from '../actors/realm/state/state.ts';
import { shardOf } from '../actors/subjects.ts';
import { CHANNEL_GROUP_SETTINGS, ChannelRecord, type StoredMessage, SubscriptionRecord, UserRecord } from '../storage/tables.ts';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000,50000' }, events: { type: 'string', default: '300' } } });
const count = Number(values.events);
const SHARDS = 64;

/** The subjects a delivery goes to, as `ActorNode.publish` finds them. */
function subjectsOf(ds: Delivery[]): number {
  let n = 0;
  for (const d of ds) {
    const shards = new Set<number>();
    for (const p of deliveryPlacements(d)) shards.add(shardOf(p, SHARDS));
    n += shards.size + (isRealmWide(d) ? 1 : 0);
  }
  return n;
}

const time = (f: () => void): number => {
  for (let i = 0; i < 10; i++) f();
  const t0 = performance.now();
  for (let i = 0; i < count; i++) f();
  return ((performance.now() - t0) * 1000) / count;
};

function organization(n: number, inviteOnly: boolean): RealmState {
  const s = new RealmState(1);
  s.indexChannel(ChannelRecord.parse({ id: 1, recipientId: 1, name: 'general', description: '', renderedDescription: '', inviteOnly, isWebPublic: false, historyPublicToSubscribers: true, messageRetentionDays: null, isDefault: false, dateCreated: 0, creatorId: null, groups: Object.fromEntries(CHANNEL_GROUP_SETTINGS.map((k) => [k, k === 'can_administer_channel_group' ? GROUP_ID['role:nobody'] : GROUP_ID['role:everyone']])) }));
  for (let id = 1; id <= n; id++) {
    s.indexUser(UserRecord.parse({ id, email: `u${id}@x`, fullName: `User ${id}`, role: id === 1 ? 100 : 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: '' }));
    s.indexSub(SubscriptionRecord.parse({ streamId: 1, userId: id, active: true, color: '#fff', startMessageId: 0 }));
  }
  return s;
}

const m = { id: 10, type: 'stream', streamId: 1, topic: 't', recipientId: 1, recipientKey: 's1', senderId: 1, dmUserIds: null } as unknown as StoredMessage;

console.log(`load average at start: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
for (const n of values.sizes!.split(',').map(Number)) {
  for (const inviteOnly of [false, true]) {
    const s = organization(n, inviteOnly);
    const c = s.channels.get(1)!;
    const deleter = 1;
    const before = (): Delivery[] => [
      toUsers(1, [...new Set([...s.activeSubscribers(1), deleter])], { type: 'delete_message', message_type: 'stream', message_ids: [m.id], stream_id: 1, topic: m.topic }),
      toUsers(1, channelAudience(s, c), { type: 'stream', op: 'update', stream_id: 1, name: c.name, property: 'first_message_id', value: 11 }),
    ];
    const plan = { m, audience: null, deleter, firstMessageId: { channel: c, value: 11 } };
    const after = (): Delivery[] => deleteMessage.events!(s, plan as never, {} as never) as Delivery[];
    const listed: number[] = [];
    const named: number[] = [];
    for (let round = 0; round < 3; round++) {
      listed.push(time(() => subjectsOf(before())));
      named.push(time(() => subjectsOf(after())));
    }
    console.log(`${n.toLocaleString('en-US')} users, ${inviteOnly ? 'private' : 'public'} channel: listed ${Math.min(...listed).toFixed(1)} µs (${subjectsOf(before())} subjects), as now ${Math.min(...named).toFixed(2)} µs (${subjectsOf(after())} subjects) per delete`);
  }
}
console.log(`load average at end: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
