/**
 * The events of stored messages deleted together, off a request's path
 * (retention, a deleted or deactivated user's messages): the batch's
 * messages went in one commit (`RealmState.deleteStoredMessages`), and
 * clients hear of them as Zulip's bulk deletions tell them.
 */
import type { StoredMessage } from '../../../../storage/tables.ts';
import { type Delivery, toChannelSubscribers, toUsers } from '../../../events/delivery.ts';
import type { ClientEventBody } from '../../../events/schema.ts';
import { toChannelViewers } from '../../rules/access.ts';
import type { RealmState } from '../../state/state.ts';

/**
 * One `delete_message` event per conversation (channel and topic, or direct
 * message conversation) with its messages' IDs, to the users who had them and
 * to those `alsoTo` adds for that conversation's messages; then a `stream`
 * update of `first_message_id` for each channel of `firstIds` (its new value
 * is the state's, as the commit set it). O(the messages + DM participants
 * + alsoTo) in the realm: a channel's subscribers and audience are found by
 * the queue shards (`toChannelSubscribers`, `toChannelViewers`).
 */
export function deletedMessagesEvents(state: Readonly<RealmState>, messages: readonly StoredMessage[], firstIds: Iterable<number>, alsoTo: (ms: readonly StoredMessage[]) => number[] = () => []): Delivery[] {
  const groups = new Map<string, StoredMessage[]>();
  for (const m of messages) {
    const key = `${m.recipientKey}\u0000${m.streamId !== null ? m.topic : ''}`;
    const g = groups.get(key);
    if (g) g.push(m);
    else groups.set(key, [m]);
  }
  const out: Delivery[] = [...groups.values()].map((ms) => {
    const m = ms[0]!;
    const ids = ms.map((x) => x.id).sort((a, b) => a - b);
    const event: ClientEventBody = { type: 'delete_message', message_type: m.type, message_ids: ids, ...(m.streamId !== null ? { stream_id: m.streamId, topic: m.topic } : {}) };
    // A channel's subscribers are found by the queue shards; a conversation's participants are listed.
    if (m.streamId !== null) return toChannelSubscribers(state.realmId, m.streamId, event, alsoTo(ms));
    return toUsers(state.realmId, [...new Set([...m.dmUserIds!, ...alsoTo(ms)])], event);
  });
  for (const id of firstIds) {
    const c = state.channels.get(id);
    if (c) out.push(toChannelViewers(state, c, { type: 'stream', op: 'update', stream_id: c.id, name: c.name, property: 'first_message_id', value: c.firstMessageId }));
  }
  return out;
}
