/**
 * Topic visibility (Zulip's `actions/user_topics.py`): POST /user_topics, and
 * the `user_topics` and `muted_topics` register keys. Kept by the realm, so
 * that a send can see them.
 */
import { z } from 'zod';
import { badRequest } from '../../../../lib/errors.ts';
import { T, type UserTopicRecord } from '../../../../storage/tables.ts';
import { type Delivery, toUsers } from '../../../events/delivery.ts';
import { topicForClient } from '../../../format.ts';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { readerView } from './reading.ts';
import { channelRecipientKey, inSource } from '../../../model.ts';
import { actingUser, canAccess } from '../../rules/access.ts';
import { emptyTopicDisplayName, MAX_TOPIC_LENGTH, normalizeTopic } from './messages.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const VisibilityPolicy = { INHERIT: 0, MUTED: 1, UNMUTED: 2, FOLLOWED: 3 } as const;

/** The `user_topics` register key; `emptyTopicDisplayName` names the empty topic for clients without empty_topic_name. */
export function userTopicsOf(state: Readonly<RealmState>, userId: number, emptyTopicDisplayName: string | null = null) {
  return [...(state.userTopics.get(userId)?.values() ?? [])]
    .filter((r) => state.channels.has(r.streamId))
    .sort((a, b) => a.lastUpdated - b.lastUpdated || a.streamId - b.streamId)
    .map((r) => ({ stream_id: r.streamId, topic_name: topicForClient(r.topic, emptyTopicDisplayName), last_updated: r.lastUpdated, visibility_policy: r.policy }));
}

/** The legacy `muted_topics` register key: [channel name, topic, when]. */
export function mutedTopicsOf(state: Readonly<RealmState>, userId: number): Array<[string, string, number]> {
  return userTopicsOf(state, userId)
    .filter((t) => t.visibility_policy === VisibilityPolicy.MUTED)
    .map((t) => [state.channels.get(t.stream_id)!.name, t.topic_name, t.last_updated]);
}

export const updateUserTopic = action({
  type: 'updateUserTopic',
  fields: z.object({ streamId: z.number().int(), topic: z.string(), policy: z.number().int() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    if (![0, 1, 2, 3].includes(msg.policy)) throw badRequest('Invalid visibility_policy', { var_name: 'visibility_policy' });
    const channel = state.channels.get(msg.streamId);
    if (!channel || !canAccess(state, channel, user)) throw badRequest(msg.policy === VisibilityPolicy.INHERIT ? 'Nothing to be done' : 'Invalid channel ID');
    const topic = normalizeTopic(state, msg.topic);
    if ([...topic].length > MAX_TOPIC_LENGTH) throw badRequest(`Topic too long (limit: ${MAX_TOPIC_LENGTH} characters)`);
    const old = state.userTopics.get(user.id)?.get(`${channel.id}:${topic.toLowerCase()}`);
    if (msg.policy === VisibilityPolicy.INHERIT && !old) throw badRequest('Nothing to be done');
    return { user, channel, topic, policy: msg.policy, old };
  },
  apply(state, p, tx) {
    const record: UserTopicRecord = { userId: p.user.id, streamId: p.channel.id, topic: p.old?.topic ?? p.topic, policy: p.policy, lastUpdated: Math.floor(Date.now() / 1000) };
    const row = T.userTopics.at(state.realmId, p.user.id, p.channel.id, record.topic);
    if (p.policy === VisibilityPolicy.INHERIT) {
      state.userTopics.get(p.user.id)?.delete(`${p.channel.id}:${record.topic.toLowerCase()}`);
      tx.write(row.delete());
    } else {
      state.indexUserTopic(record);
      tx.write(row.put(record));
    }
    return record;
  },
  events(state, p, r) {
    const out: Delivery[] = [toUsers(state.realmId, [r.userId], { type: 'user_topic', stream_id: r.streamId, topic_name: r.topic, last_updated: r.lastUpdated, visibility_policy: r.policy as 0 | 1 | 2 | 3 })];
    // Clients of the legacy muted_topics key get the whole list when muting changes.
    if ((p.old?.policy === VisibilityPolicy.MUTED) !== (r.policy === VisibilityPolicy.MUTED)) out.push(toUsers(state.realmId, [r.userId], { type: 'muted_topics', muted_topics: mutedTopicsOf(state, r.userId) }));
    return out;
  },
  reply: () => ({}),
});

/**
 * GET /users/me/{stream_id}/topics: the channel's topics, newest first, from
 * the realm's topic index; a user who may read only part of the history
 * (private channel, history not public) sees the topics with messages since
 * they joined.
 */
export const topicHistory = query({
  type: 'topicHistory',
  fields: z.object({ streamId: z.number().int(), allowEmptyTopicName: z.boolean().default(false) }),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    const src = readerView(state, user.id).sources.find((x) => x.recipientKey === channelRecipientKey(msg.streamId));
    if (!src) throw badRequest('Invalid channel ID');
    const topics = [...(state.topics.get(msg.streamId)?.values() ?? [])]// A former subscriber of a channel with protected history: the topics whose newest message they received
      // (one with newer messages too is left out: listing it would tell what was said after they left).
      .filter((x) => inSource(src, x.maxId)).sort((a, b) => b.maxId - a.maxId);
    const emptyName = msg.allowEmptyTopicName ? null : emptyTopicDisplayName(state);
    return { topics: topics.map((x) => ({ name: topicForClient(x.name, emptyName), max_id: x.maxId })) };
  },
});
