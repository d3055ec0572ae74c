/**
 * Deleting a deactivated user's messages (FL 459: DELETE /users/{user_id}
 * with `actions`; Zulip's `delete_deactivated_user_messages`): the messages
 * the user and their bots sent in public channels, in private channels and
 * in direct message conversations, each kind when asked for.
 *
 * The deactivation's commit sets this durable timer (a follow-up, run at
 * least once, also after a restart). Messages are stored by conversation,
 * not by sender, so finding a user's messages reads conversations: each run's
 * `effect`, outside the realm's mailbox, reads from where the previous run
 * stopped, at most `SCAN` stored messages, and keeps the target users' (at
 * most `BATCH`); its commit deletes them as `DELETE /messages/{id}` does (the
 * message, its locator, its topic's count, the channel's first_message_id),
 * sends the `delete_message` events, and sets the timer again at once with the
 * position reached while conversations are left. So the realm's mailbox runs
 * one bounded batch at a time, with other requests in between, whatever the
 * size of the organization: O(BATCH) per turn, O(the organization's messages
 * in the kinds asked for) in all, read off the mailbox.
 *
 * Which channels are public is read when each channel is reached (Zulip reads
 * it at the deactivation): a channel made private in between counts as
 * private.
 */
import { z } from 'zod';
import { type StoredMessage, messageBucket, T } from '../../../../storage/tables.ts';
import { channelRecipientKey, dmRecipientKey, inSource } from '../../../model.ts';
import { defineTimer, FOLLOW_UP_DELAY_MS, type Tx } from '../../../runtime/action.ts';
import type { ActorContext } from '../../../runtime/context.ts';
import { deletedMessagesEvents } from '../messages/deleted_messages.ts';
import { readerView } from '../messages/reading.ts';
import { type RealmState, type StoredNow, storedNow } from '../../state/state.ts';

const timer = defineTimer<RealmState>();

export const DELETE_USER_MESSAGES = 'deleteUserMessages';
/** Messages deleted by one commit (Zulip archives in chunks of 100 per transaction). */
const BATCH = Number(process.env.PARLEY_USER_MESSAGES_BATCH ?? 500);
/** Stored messages read by one run, so that a run's reads are bounded even where the users sent little. */
const SCAN = Number(process.env.PARLEY_USER_MESSAGES_SCAN ?? 5000);
const PAGE = 200;

/** The kinds of messages DELETE /users/{user_id} deletes (its `actions`). */
export const MessageKinds = z.object({ publicChannels: z.boolean(), privateChannels: z.boolean(), direct: z.boolean() });
export type MessageKinds = z.infer<typeof MessageKinds>;

export const anyKind = (k: MessageKinds): boolean => k.publicChannels || k.privateChannels || k.direct;

/** A run's instructions: whose messages, which kinds, who asked (for their events), and where the previous run stopped. */
interface Payload {
  userIds: number[];
  kinds: MessageKinds;
  actorId: number | null;
  /** The conversation being read (a recipient key) and the last message ID read there; null: from the start. */
  at: { key: string; after: number } | null;
}

/** Sets the timer that deletes `userIds`' messages of `kinds`, in the deactivation's commit. */
export function deleteMessagesLater(tx: Tx, userIds: number[], kinds: MessageKinds, actorId: number | null): void {
  const p: Payload = { userIds, kinds, actorId, at: null };
  tx.setTimer(DELETE_USER_MESSAGES, Date.now() + FOLLOW_UP_DELAY_MS, p, userIds[userIds.length - 1]!);
}

/**
 * The conversations to read, in a fixed order: channels by ID (public or
 * private as asked, by what they are now), then the users' direct message
 * conversations. O(channels + the users' conversations).
 */
function conversations(state: Readonly<RealmState>, p: Payload): string[] {
  const out: string[] = [];
  for (const id of [...state.channels.keys()].sort((a, b) => a - b)) {
    const c = state.channels.get(id)!;
    if (c.inviteOnly ? p.kinds.privateChannels : p.kinds.publicChannels) out.push(channelRecipientKey(id));
  }
  if (p.kinds.direct) {
    const keys = new Set<string>();
    for (const id of p.userIds) for (const k of state.dmsByUser.get(id) ?? []) keys.add(k);
    out.push(...[...keys].sort().map(dmRecipientKey));
  }
  return out;
}

/** What one run found: the messages to delete, each channel's next first message where it goes, and where to go on from. */
interface Found {
  doomed: StoredMessage[];
  /** Those of `doomed` still stored when the commit is made (`settle`). */
  stored: StoredNow[];
  firstIds: Map<number, number | null>;
  next: Payload['at'] | 'done';
}

/** The oldest message ID of `key` not in `gone` (reads at most |gone| + 1 rows of it). */
async function firstLeft(ctx: ActorContext, realmId: number, key: string, gone: Set<number>): Promise<number | null> {
  for (const { ck } of await T.recipientBuckets.partition(realmId, key).range(ctx.store)) {
    let lo = 0;
    for (;;) {
      const rows = await T.messages.partition(realmId, key, Number(ck)).values(ctx.store, { gte: lo, limit: PAGE });
      for (const m of rows) if (!gone.has(m.id)) return m.id;
      if (rows.length < PAGE) break;
      lo = rows[rows.length - 1]!.id + 1;
    }
  }
  return null;
}

/** Reads from `p.at` on: the users' messages, up to BATCH of them and SCAN messages read. */
async function scan(state: Readonly<RealmState>, p: Payload, ctx: ActorContext): Promise<Found> {
  const senders = new Set(p.userIds);
  const keys = conversations(state, p);
  // The conversation being read is no longer one to read (a channel made public, say, or deleted): from the
  // start again, which finds no message already deleted and no longer reaches that one.
  const i0 = p.at === null ? 0 : Math.max(0, keys.indexOf(p.at.key));
  const doomed: StoredMessage[] = [];
  let read = 0;
  for (let i = i0; i < keys.length; i++) {
    const key = keys[i]!;
    const after = p.at !== null && p.at.key === key ? p.at.after : 0;
    for (const { ck } of await T.recipientBuckets.partition(state.realmId, key).range(ctx.store)) {
      if (Number(ck) < messageBucket(after + 1)) continue;
      let lo = after + 1;
      for (;;) {
        const rows = await T.messages.partition(state.realmId, key, Number(ck)).values(ctx.store, { gte: lo, limit: PAGE });
        for (const m of rows) {
          read++;
          if (senders.has(m.senderId)) doomed.push(m);
          if (doomed.length >= BATCH || read >= SCAN) return finish(state, ctx, doomed, { key, after: m.id });
        }
        if (rows.length < PAGE) break;
        lo = rows[rows.length - 1]!.id + 1;
      }
    }
  }
  return finish(state, ctx, doomed, 'done');
}

async function finish(state: Readonly<RealmState>, ctx: ActorContext, doomed: StoredMessage[], next: Found['next']): Promise<Found> {
  const firstIds = new Map<number, number | null>();
  const gone = new Set(doomed.map((m) => m.id));
  for (const m of doomed) {
    const c = m.streamId === null ? undefined : state.channels.get(m.streamId);
    if (c && c.firstMessageId === m.id && !firstIds.has(c.id)) firstIds.set(c.id, await firstLeft(ctx, state.realmId, m.recipientKey, gone));
  }
  return { doomed, stored: [], firstIds, next };
}

export const deleteUserMessages = timer({
  name: DELETE_USER_MESSAGES,
  async effect(state, p: Payload, ctx): Promise<Found> {
    const found = await scan(state, p, ctx);
    ctx.log.info({ realm: state.realmId, users: p.userIds, deleting: found.doomed.length, done: found.next === 'done' }, 'deactivated user messages batch');
    return found;
  },
  // Those of them still stored now: a message deleted meanwhile (DELETE /messages/{id}) is not counted out twice.
  settle: async (state, _p: Payload, ctx, found: Found): Promise<Found> => ({ ...found, stored: await storedNow(ctx.store, state.realmId, found.doomed) }),
  check: (_state, p: Payload, _ctx, found: Found) => ({ p, found }),
  apply(state, { p, found }, tx) {
    const firstChanged = state.deleteStoredMessages(tx, found.stored, found.firstIds);
    if (found.next !== 'done') {
      const next: Payload = { ...p, at: found.next };
      tx.setTimer(DELETE_USER_MESSAGES, Date.now(), next, p.userIds[p.userIds.length - 1]!);
    }
    return firstChanged;
  },
  events(state, { p, found }, firstChanged) {
    // The users who had the messages, and the administrator who asked when they may read a conversation's (FL 457).
    const actor = p.actorId !== null ? state.users.get(p.actorId) : undefined;
    const sources = actor?.isActive ? readerView(state, actor.id).sources : [];
    const mayRead = (ms: readonly StoredMessage[]): boolean => sources.some((s) => s.recipientKey === ms[0]!.recipientKey && ms.every((x) => inSource(s, x.id)));
    return deletedMessagesEvents(state, found.stored, firstChanged, (ms) => (actor && mayRead(ms) ? [actor.id] : []));
  },
});
