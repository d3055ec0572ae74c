// A queue shard's subscriber index (actors/queue/subscribers.ts) in the window the API cannot reach on
// purpose: subscription changes that arrive between the gateway's read of a user's channels and the
// registration of their first queue, and their expiry. Through the QueueShard, as deliveries reach it.
import t from 'tap';
import { QueueOptions, QueueShard } from '../actors/queue/actor.ts';
import { EventQueue } from '../actors/queue/event-queue.ts';
import { RECENT_MS, SubscriberIndex } from '../actors/queue/subscribers.ts';
import type { Delivery } from '../actors/events/delivery.ts';
import { log } from '../lib/log.ts';
import type { StoredMessage } from '../storage/tables.ts';

const REALM = 7;

const subscription = (userId: number, op: 'add' | 'remove', channelIds: number[]): Delivery => ({
  kind: 'event',
  realmId: REALM,
  userIds: [userId],
  event: op === 'add' ? ({ type: 'subscription', op, subscriptions: channelIds.map((id) => ({ stream_id: id })) } as never) : { type: 'subscription', op, subscriptions: channelIds.map((id) => ({ stream_id: id, name: `c${id}` })) },
});

const message = (id: number, channelId: number, allPublic = false): Delivery => ({
  kind: 'message',
  realmId: REALM,
  userIds: null,
  allPublic,
  message: { id, type: 'stream', streamId: channelId, topic: 't', recipientId: channelId, recipientKey: `s${channelId}`, senderId: 1, content: 'x', renderedContent: '<p>x</p>', timestamp: 0, client: 'test', readBySender: false, mentions: [], wildcard: null, dmUserIds: null, topicLinks: [], editHistory: [], lastEditTimestamp: null, lastMovedTimestamp: null, mutedBy: [], alerted: [], reactions: [] } as StoredMessage,
  names: { realmStr: 'r', users: { 1: { email: 'a@x', full_name: 'A' } }, channels: { [channelId]: `c${channelId}` } },
  localEcho: null,
});

let queueIds = 0;
function queueOf(shard: QueueShard, userId: number, channelIds: number[], options: Partial<QueueOptions> = {}): EventQueue {
  const q = new EventQueue(`q${++queueIds}`, REALM, userId, QueueOptions.parse({ eventTypes: ['message'], narrow: [], allPublicStreams: false, applyMarkdown: true, clientExtavatar: true, bulkMessageDeletion: true, idleSecs: 600, ...options }));
  shard.add(q, channelIds);
  return q;
}

const messageIds = (q: EventQueue): number[] => (JSON.parse(q.reply().text).events as Array<{ message: { id: number } }>).map((e) => e.message.id);

t.test('subscribers - changes received before the first queue registers are applied over the channels the gateway read', async (t) => {
  const shard = new QueueShard(60, 10, log);
  // Read by the gateway (user 10 in channel 1), then, before the queue is made: subscribed to 2, unsubscribed from 1.
  shard.deliver(subscription(10, 'add', [2]), false);
  shard.deliver(subscription(10, 'remove', [1]), false);
  const q = queueOf(shard, 10, [1]);
  for (const [id, channel] of [[100, 1], [101, 2], [102, 3]] as const) shard.deliver(message(id, channel), true);
  t.same(messageIds(q), [101], 'only the channel subscribed to after the read');
  // A change the seed already shows (in flight when the channels were read) changes nothing.
  const q2 = queueOf(shard, 11, [2]);
  shard.deliver(subscription(11, 'add', [2]), false);
  shard.deliver(message(103, 2), true);
  t.same(messageIds(q2), [103]);
  shard.closeAll();
});

t.test('subscribers - a channel message is delivered only as a broadcast, to subscribed queues and unsubscribed all_public_streams ones', async (t) => {
  const shard = new QueueShard(60, 10, log);
  const member = queueOf(shard, 20, [5]);
  const watcher = queueOf(shard, 21, [], { allPublicStreams: true });
  shard.deliver(message(200, 5, true), false);
  t.same([messageIds(member), messageIds(watcher)], [[], []], 'not on a shard subject (it is never published there)');
  shard.deliver(message(201, 5, true), true);
  shard.deliver(message(202, 5, false), true);
  t.same(messageIds(member), [201, 202]);
  t.same(messageIds(watcher), [201], 'a private channel\'s message is not for all_public_streams');
  const flags = (JSON.parse(watcher.reply().text).events as Array<{ flags: string[] }>).map((e) => e.flags);
  t.same(flags, [['read']]);
  shard.closeAll();
});

t.test('subscribers - a user\'s entry lives as long as their queues here; changes are kept RECENT_MS', async (t) => {
  const index = new SubscriberIndex();
  index.seed(REALM, 30, [1, 2]);
  index.seed(REALM, 30, [3]);
  t.same([...(index.subscribers(REALM, 1) ?? [])], [30], 'a second queue keeps the entry made for the first');
  t.equal(index.subscribers(REALM, 3), undefined);
  index.note(REALM, 30, [2], false, Date.now());
  t.equal(index.subscribers(REALM, 2), undefined);
  index.forget(REALM, 30);
  t.equal(index.subscribers(REALM, 1), undefined);
  t.same(index.size, { users: 0, recent: 1 });
  index.prune(Date.now() + RECENT_MS + 1);
  t.same(index.size, { users: 0, recent: 0 }, 'old changes dropped');
  const shard = new QueueShard(60, 10, log);
  const q = queueOf(shard, 31, [4]);
  shard.drop(q);
  t.equal(shard.subscribers.subscribers(REALM, 4), undefined, 'the last queue dropped takes the entry');
  shard.closeAll();
});
