/**
 * The realm's side of the server-wide address index
 * (`actors/directory/accounts.ts`): after each commit that creates users,
 * changes an address or deletes a user for good (`noteAccountAddresses`,
 * `actors/realm/state/account_index.ts`), the `accountAddresses` follow-up
 * sends the accounts' current addresses to the directory from its effect,
 * outside the realm's mailbox; it runs again until the directory answers.
 * The answer (how many other accounts each address has, Zulip's
 * `other_account_count`) decides a new user's topics email
 * (`decideTopicsEmail`). An address that changed meanwhile is sent again,
 * so the index ends with the latest.
 *
 * The backfill (`startAddressBackfill`, asked by the directory for an
 * organization older than the index or imported): a follow-up that sends
 * the accounts by ranges of 500 user IDs (the realm numbers its
 * users densely), up to the highest ID when it started (users made since
 * are sent by their own follow-ups), each turn's commit setting the next
 * range, the last one marked `complete`: O(batch) a turn. Repeating it (a
 * directory reloaded meanwhile) rewrites the same rows.
 */
import { z } from 'zod';
import { unauthorized } from '../../../../lib/errors.ts';
import { DIRECTORY_ID, directoryRef } from '../../../directory/ref.ts';
import { defineAction, defineTimer, type Tx } from '../../../runtime/action.ts';
import type { ActorContext } from '../../../runtime/context.ts';
import { ACCOUNT_ADDRESSES, indexedAddress, noteAccountAddresses } from '../../state/account_index.ts';
import type { RealmState } from '../../state/state.ts';
import { decideTopicsEmail } from './signup_email.ts';

const action = defineAction<RealmState>();
const timer = defineTimer<RealmState>();
const BACKFILL = 'accountAddressBackfill';
/** User IDs per backfill turn: one directory turn of at most 500 row reads and writes (`PARLEY_ADDRESS_BACKFILL_BATCH`: tests make it small). */
const backfillBatch = (): number => Number(process.env.PARLEY_ADDRESS_BACKFILL_BATCH ?? 500);

interface Sent {
  userId: number;
  address: string | null;
  others: number;
}

/** Sends the accounts' addresses as the state has them now; what was sent, with each address's other accounts. */
async function send(state: Readonly<RealmState>, userIds: number[], complete: boolean, ctx: ActorContext): Promise<Sent[]> {
  const entries = userIds.map((userId) => ({ userId, address: indexedAddress(state.users.get(userId)) }));
  const { others } = await ctx.actors.call(directoryRef, DIRECTORY_ID, { type: 'setAccountAddresses', caller: { realmId: state.realmId, userId: null }, entries, complete });
  return entries.map((e, i) => ({ ...e, others: others[i] ?? 0 }));
}

/** Records the answer: accounts whose address changed since are sent again; a new user's topics email is decided. */
function settle(state: RealmState, sent: Sent[], tx: Tx): void {
  const stale: number[] = [];
  for (const e of sent) {
    if (indexedAddress(state.users.get(e.userId)) !== e.address) stale.push(e.userId);
    else if (e.address !== null) decideTopicsEmail(state, tx, e.userId, e.others);
  }
  noteAccountAddresses(tx, stale);
}

function highestUserId(state: Readonly<RealmState>): number {
  let max = 0;
  for (const id of state.users.keys()) max = Math.max(max, id);
  return max;
}

export const accountAddresses = timer({
  name: ACCOUNT_ADDRESSES,
  effect: (state, p: { userIds: number[] }, ctx) => send(state, p.userIds, false, ctx),
  check: (_state, _p, _ctx, sent: Sent[]) => sent,
  apply(state, sent, tx) {
    settle(state, sent, tx);
    return null;
  },
});

/** Internal (the directory asks it): sends every account of the organization to the index, in batches. */
export const startAddressBackfill = action({
  type: 'startAddressBackfill',
  fields: z.object({}),
  check(_state, msg) {
    if (msg.caller.userId !== null) throw unauthorized('Only the server indexes addresses');
    return null;
  },
  apply(state, _p, tx) {
    tx.setTimer(BACKFILL, Date.now(), { after: 0, upTo: highestUserId(state) }, 0);
    return {};
  },
});

export const accountAddressBackfill = timer({
  name: BACKFILL,
  async effect(state, p: { after: number; upTo: number }, ctx) {
    const { upTo } = p;
    const end = Math.min(p.after + backfillBatch(), upTo);
    const batch: number[] = [];
    for (let id = p.after + 1; id <= end; id++) {
      const u = state.users.get(id);
      if (u && !u.isSystemBot) batch.push(id);
    }
    const last = end >= upTo;
    return { sent: await send(state, batch, last, ctx), next: last ? null : { after: end, upTo } };
  },
  check: (_state, _p, _ctx, done: { sent: Sent[]; next: { after: number; upTo: number } | null }) => done,
  apply(state, done, tx) {
    settle(state, done.sent, tx);
    if (done.next !== null) tx.setTimer(BACKFILL, Date.now(), done.next, 0);
    return null;
  },
});
