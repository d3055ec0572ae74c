/**
 * What the user actor asks the realm before it reads or flags messages by
 * ID: every recipient whose history the user may read (subscriptions, direct
 * messages, and channels whose history is open to them: public ones, and
 * private ones their permission groups let them read, FL 354), the channels they
 * are subscribed to, and the newest message ID.
 */
import { z } from 'zod';
import { channelRecipientKey } from '../../../model.ts';
import { defineQuery } from '../../../runtime/action.ts';
import { actingUser, readsSharedHistory } from '../../rules/access.ts';
import { emptyTopicDisplayName, type MessageSource, sourcesFor } from './messages.ts';
import type { RealmState } from '../../state/state.ts';

const query = defineQuery<RealmState>();

export interface ReaderView {
  /** Keyed by recipient key (`s<channel>`, `d<participants>`). */
  sources: MessageSource[];
  /** Channels the user is subscribed to now. */
  subscribed: number[];
  maxMessageId: number;
}

export function readerView(state: Readonly<RealmState>, userId: number): ReaderView {
  const user = state.users.get(userId)!;
  const sources = sourcesFor(state, user, []);
  const known = new Set(sources.map((s) => s.recipientKey));
  for (const c of state.channels.values()) {
    const key = channelRecipientKey(c.id);
    if (known.has(key) || !readsSharedHistory(state, c, user)) continue;
    sources.push({ recipientKey: key, minId: 0, receivedFrom: null });
  }
  const subscribed: number[] = [];
  for (const [channelId, subs] of state.subs) if (subs.get(userId)?.active) subscribed.push(channelId);
  return { sources, subscribed, maxMessageId: state.maxMessageId };
}

export const readerViewQuery = query({
  type: 'readerView',
  fields: z.object({}),
  run(state, msg): ReaderView & { emptyTopicDisplayName: string } {
    return { ...readerView(state, actingUser(state, msg.caller).id), emptyTopicDisplayName: emptyTopicDisplayName(state) };
  },
});
