/**
 * The realm actor's own work for one channel send, in process and without
 * the machine's other load blurring it: `sendMessage`'s check, apply and
 * events (plan, render, store writes recorded in a Tx, missed-message email,
 * the delivery), on a realm of N members all subscribed to `big`, against a
 * channel of 2. Users are idle (no queue polled lately), as most of a large
 * organization is: the missed-message decision looks at them all if it walks
 * the subscribers.
 *
 *   node --import tsx bench/realm-send.ts [--sizes 1000,10000,33000] [--sends 2000]
 */
import { parseArgs } from 'node:util';
import { Tx } from '../actors/runtime/action.ts';
import { sendMessage } from '../actors/realm/actions/messages/messages.ts';
import { RealmState } from '../actors/realm/state/state.ts';
import { GROUP_ID } from '../actors/model.ts';
import { CHANNEL_GROUP_SETTINGS, ChannelRecord, SubscriptionRecord, UserRecord } from '../storage/tables.ts';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000,33000' }, sends: { type: 'string', default: '2000' } } });
const sends = Number(values.sends);

const channel = (id: number, name: string) =>
  ChannelRecord.parse({ id, recipientId: id, name, description: '', renderedDescription: '', inviteOnly: false, isWebPublic: false, historyPublicToSubscribers: true, messageRetentionDays: null, dateCreated: 0, creatorId: null, groups: Object.fromEntries(CHANNEL_GROUP_SETTINGS.map((k) => [k, GROUP_ID['role:everyone']])) });

function realm(n: number): RealmState {
  const s = new RealmState(1);
  for (let id = 1; id <= n; id++) {
    s.indexUser(UserRecord.parse({ id, email: `u${id}@x`, fullName: `User ${id}`, role: 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: '' }));
    s.indexSub(SubscriptionRecord.parse({ streamId: 1, userId: id, active: true, color: '#fff', startMessageId: 0 }));
    if (id <= 2) s.indexSub(SubscriptionRecord.parse({ streamId: 2, userId: id, active: true, color: '#fff', startMessageId: 0 }));
  }
  s.indexChannel(channel(1, 'big'));
  s.indexChannel(channel(2, 'pair'));
  return s;
}

/** µs of realm work per send to channel `to`. */
function perSend(s: RealmState, to: number, count: number): number {
  const run = (i: number) => {
    const msg = { type: 'sendMessage', caller: { realmId: 1, userId: 1 }, client: 'bench', recipientType: 'stream', to, topic: 'bench', content: `hello ${i}`, readBySender: null, queueId: null, localId: null } as never;
    const plan = sendMessage.check(s, msg, undefined as never, undefined as never);
    const tx = new Tx({ kind: 'realm', id: '1', shard: 0 });
    const reply = sendMessage.apply(s, plan, tx, undefined as never);
    sendMessage.events!(s, plan, reply);
  };
  for (let i = 0; i < 200; i++) run(i);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) run(i);
  return ((performance.now() - t0) * 1000) / count;
}

for (const n of values.sizes!.split(',').map(Number)) {
  const s = realm(n);
  // ABAB: the machine's load drifts.
  const big: number[] = [];
  const pair: number[] = [];
  for (let round = 0; round < 2; round++) {
    big.push(perSend(s, 1, sends));
    pair.push(perSend(s, 2, sends));
  }
  const b = Math.min(...big);
  const p = Math.min(...pair);
  console.log(`${n.toLocaleString('en-US')} members: realm work per send to big ${b.toFixed(1)} µs, to a 2-member channel ${p.toFixed(1)} µs, ratio ${(b / p).toFixed(2)}`);
}
