/**
 * What deciding missed-message email adds to a send (`decideMissedEmails`,
 * `actors/realm/actions/notifications/notifications.ts`), in process: a 1,000-subscriber channel,
 * 900 of them active, and a message that mentions 100 idle ones or none.
 * Run: node --import tsx bench/notifications.ts
 */
import { Tx } from '../actors/runtime/action.ts';
import { RealmState } from '../actors/realm/state/state.ts';
import { decideMissedEmails } from '../actors/realm/actions/notifications/notifications.ts';
import { SubscriptionRecord, UserRecord, type StoredMessage } from '../storage/tables.ts';
const s = new RealmState(1);
for (let id = 1; id <= 1000; id++) {
  s.indexUser(UserRecord.parse({ id, email: `u${id}@x`, fullName: `U ${id}`, role: 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: '' }));
  s.indexSub(SubscriptionRecord.parse({ streamId: 7, userId: id, active: true, color: '#fff', startMessageId: 0 }));
  if (id > 100) s.activeAt.set(id, Date.now() + 3600_000); // 900 active, 100 idle
}
const mentions = Array.from({ length: 100 }, (_, i) => i + 1);
const msg = (id: number, mentioned: boolean): StoredMessage => ({ id, type: 'stream', streamId: 7, topic: 'T', recipientId: 1, recipientKey: 's7', senderId: 1000, content: 'x', renderedContent: '<p>x</p>', timestamp: 0, client: 'b', readBySender: true, mentions: mentioned ? mentions : [], wildcard: null, dmUserIds: null, topicLinks: [], editHistory: [], lastEditTimestamp: null, lastMovedTimestamp: null, mutedBy: [], alerted: [], reactions: [] } as StoredMessage);
for (const mentioned of [false, true]) {
  const N = 2000;
  let ops = 0;
  for (let i = 0; i < 200; i++) decideMissedEmails(s, msg(i, mentioned), new Tx({ kind: 'realm', id: '1', shard: 0 }));
  const t0 = performance.now();
  for (let i = 0; i < N; i++) { const tx = new Tx({ kind: 'realm', id: '1', shard: 0 }); decideMissedEmails(s, msg(1000 + i, mentioned), tx); ops += tx.ops.length; }
  const us = ((performance.now() - t0) * 1000) / N;
  console.log(`1,000 subscribers, ${mentioned ? '100 mentioned idle' : 'no mention'}: ${us.toFixed(1)} µs per send, ${ops / N} rows per send`);
}
