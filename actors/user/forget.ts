/**
 * A deleted user's rows in the user actor's tables go (`parley users
 * delete`; Zulip deletes the UserProfile and its rows cascade): drafts,
 * saved snippets, navigation views, a bot's storage, the read watermark and
 * starred list, the ID counters, and every per-message flag row. The realm
 * asks for it in a durable follow-up of the deletion
 * (`actors/realm/actions/people/deleted_user_data.ts`), which runs again
 * after a crash: every step is idempotent.
 *
 * Flag rows are kept per message bucket and no table lists which buckets a
 * user has rows in, so the realm names the range of buckets its messages
 * span and each call reads and deletes at most `BUCKETS_PER_STEP` of them:
 * O(the organization's messages / MESSAGE_BUCKET) partition reads for the
 * whole deletion, a bounded number per turn of this actor's mailbox. The
 * uploaded files (`attachments`, `tus_uploads`) are not deleted here: Zulip
 * keeps a deleted user's uploads that messages still link to.
 */
import { z } from 'zod';
import { unauthorized } from '../../lib/errors.ts';
import { T, UserCounters } from '../../storage/tables.ts';
import { defineAction } from '../runtime/action.ts';
import type { UserState } from './actor.ts';
import { BotStorageIndex } from './bot_storage.ts';
import { marksFromRow } from './flags.ts';

const action = defineAction<UserState>();

/** Flag-row buckets (partitions) one call reads and deletes. */
const BUCKETS_PER_STEP = Number(process.env.PARLEY_FORGET_BUCKETS_PER_STEP ?? 20);

export const forgetUserData = action({
  type: 'forgetUserData',
  fields: z.object({
    /** The first message bucket whose flag rows this call deletes. */
    fromBucket: z.number().int().nonnegative(),
    /** The last bucket the organization's messages reach. */
    lastBucket: z.number().int().nonnegative(),
  }),
  async prepare(s, msg, ctx) {
    const to = Math.min(msg.lastBucket, msg.fromBucket + BUCKETS_PER_STEP - 1);
    const flagRows: number[] = [];
    for (let b = msg.fromBucket; b <= to; b++) for (const { ck } of await T.userFlags.partition(s.realmId, s.userId, b).range(ctx.store)) flagRows.push(Number(ck));
    return { flagRows, next: to < msg.lastBucket ? to + 1 : null };
  },
  check(_s, msg, facts) {
    if (msg.caller.userId !== null) throw unauthorized("Only the server deletes a user's data");
    return facts;
  },
  apply(s, p, tx) {
    for (const id of p.flagRows) tx.write(T.userFlags.at(s.realmId, s.userId, id).delete());
    s.flags.clear();
    // The rows memory holds whole: gone at every step (a step repeated after a crash finds none).
    for (const id of s.drafts.keys()) tx.write(T.userDrafts.at(s.realmId, s.userId, id).delete());
    s.drafts.clear();
    for (const id of s.snippets.keys()) tx.write(T.savedSnippets.at(s.realmId, s.userId, id).delete());
    s.snippets.clear();
    for (const fragment of s.navigationViews.keys()) tx.write(T.navigationViews.at(s.realmId, s.userId, fragment).delete());
    s.navigationViews.clear();
    for (const key of s.botStorage.keys()) tx.write(T.botStorage.at(s.realmId, s.userId, key).delete());
    s.botStorage = new BotStorageIndex();
    tx.write(T.userMarks.at(s.realmId, s.userId).delete(), T.userCounters.at(s.realmId, s.userId).delete());
    s.marks = marksFromRow(undefined);
    s.counters = UserCounters.parse({});
    return { next: p.next, flagRows: p.flagRows.length };
  },
});
