/**
 * POST /streams/{stream_id}/delete_topic (Zulip's `delete_in_topic`): an
 * administrator deletes every message of a channel's topic that they can
 * read.
 *
 * Zulip deletes a large topic in batches, committing after each, and answers
 * `complete: false` when its time budget runs out so that the client repeats
 * the request (FL 147, 154, 211). Here one request is one batch: the newest
 * `DELETE_TOPIC_BATCH` readable messages of the topic in one commit of the
 * realm actor, answered `complete: true` only when none is left. A batch keeps
 * the realm's mailbox busy for a bounded time, whatever the topic's size.
 *
 * Growth: prepare reads the channel's messages from the store (O(channel
 * messages)), as a topic move's `change_all` does; apply is O(batch).
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { channelRecipientKey, inSource, isAdmin } from '../../../model.ts';
import { type StoredMessage, T } from '../../../../storage/tables.ts';
import { toChannelSubscribers } from '../../../events/delivery.ts';
import { defineAction } from '../../../runtime/action.ts';
import type { ActorContext } from '../../../runtime/context.ts';
import { actingUser, canAccess, toChannelViewers } from '../../rules/access.ts';
import { emptyTopicDisplayName } from './messages.ts';
import { readerView } from './reading.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();

/** Messages deleted by one request (Zulip commits batches of 100 and stops after 50 s). */
const DELETE_TOPIC_BATCH = Number(process.env.PARLEY_DELETE_TOPIC_BATCH ?? 1000);

/** The channel's messages, oldest first: those of `topic` (case-insensitively), and the IDs of the others. */
async function channelMessages(ctx: ActorContext, realmId: number, recipientKey: string, topic: string): Promise<{ inTopic: StoredMessage[]; others: number[] }> {
  const lower = topic.toLowerCase();
  const inTopic: StoredMessage[] = [];
  const others: number[] = [];
  for (const { ck } of await T.recipientBuckets.partition(realmId, recipientKey).range(ctx.store)) {
    for (const x of await T.messages.partition(realmId, recipientKey, Number(ck)).values(ctx.store)) {
      if (x.topic.toLowerCase() === lower) inTopic.push(x);
      else others.push(x.id);
    }
  }
  return { inTopic, others };
}

export const deleteTopic = action({
  type: 'deleteTopic',
  fields: z.object({ streamId: z.number().int(), topic: z.string() }),
  async prepare(state, msg, ctx) {
    const c = state.channels.get(msg.streamId);
    if (!c) return null;
    const topic = msg.topic === emptyTopicDisplayName(state) ? '' : msg.topic;
    return channelMessages(ctx, state.realmId, channelRecipientKey(c.id), topic);
  },
  check(state, msg, found) {
    const user = actingUser(state, msg.caller);
    if (!isAdmin(user)) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
    const c = state.channels.get(msg.streamId);
    if (!c || !found || !canAccess(state, c, user)) throw badRequest('Invalid channel ID');
    // Only what the administrator can read: a channel with protected history only from when they were subscribed.
    const key = channelRecipientKey(c.id);
    const sources = readerView(state, user.id).sources.filter((s) => s.recipientKey === key);
    const readable = found.inTopic.filter((m) => sources.some((s) => inSource(s, m.id)));
    const batch = readable.slice(-DELETE_TOPIC_BATCH);
    const deleted = new Set(batch.map((m) => m.id));
    // The channel's first message, if this batch deletes it: the oldest one left.
    let firstMessageId: number | null | undefined;
    if (c.firstMessageId !== null && deleted.has(c.firstMessageId)) {
      const left = [...found.others, ...found.inTopic.map((m) => m.id).filter((id) => !deleted.has(id))];
      firstMessageId = left.length ? Math.min(...left) : null;
    }
    return { c, user, batch, firstMessageId, complete: readable.length <= DELETE_TOPIC_BATCH };
  },
  apply(state, p, tx) {
    for (const m of p.batch) {
      tx.write(T.messages.at(state.realmId, m.recipientKey, m.id).delete(), T.messageLocator.at(state.realmId, m.id).delete());
      state.countTopic(tx, p.c.id, m.topic, m.id, -1);
    }
    if (p.firstMessageId !== undefined) {
      p.c.firstMessageId = p.firstMessageId;
      tx.write(T.channels.at(state.realmId, p.c.id).put(p.c));
    }
    return { complete: p.complete };
  },
  events(state, p) {
    if (!p.batch.length) return [];
    // One event for each stored spelling of the topic (a topic is matched case-insensitively), to the subscribers (found by the queue shards) and the deleter (FL 274).
    const byTopic = new Map<string, number[]>();
    for (const m of p.batch) {
      const ids = byTopic.get(m.topic);
      if (ids) ids.push(m.id);
      else byTopic.set(m.topic, [m.id]);
    }
    const out = [...byTopic].map(([topic, ids]) => toChannelSubscribers(state.realmId, p.c.id, { type: 'delete_message', message_type: 'stream', message_ids: ids.sort((a, b) => a - b), stream_id: p.c.id, topic }, [p.user.id]));
    if (p.firstMessageId !== undefined) {
      out.push(toChannelViewers(state, p.c, { type: 'stream', op: 'update', stream_id: p.c.id, name: p.c.name, property: 'first_message_id', value: p.c.firstMessageId }));
    }
    return out;
  },
});
