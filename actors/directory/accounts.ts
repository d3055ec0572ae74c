/**
 * The server-wide index of addresses: which accounts (organization, user)
 * each email address has, as Zulip answers `other_account_count` with one
 * query over every UserProfile (`enqueue_welcome_emails`: its
 * `delivery_email`, case-insensitive, active or not, the user itself left
 * out). Addresses live in each realm actor; the realm tells the directory of
 * every account's address after the commit that made or changed it (a new
 * user, a new address, a user deleted for good: the realm's durable
 * `accountAddresses` follow-up, `actors/realm/actions/notifications/account_addresses.ts`),
 * and an organization whose accounts predate the index (or were imported)
 * is backfilled once, in batches, from the directory's load.
 *
 * Stored, not held in memory: `account_addresses` has one partition per
 * address (its accounts: the lookup is one partition read, O(accounts of
 * the address)), `account_address_of` the address each account is under
 * (what a change of address moves). Each update is a turn of the
 * directory's mailbox, so two updates of one account never interleave; it
 * writes the account's current address as the realm sent it, so a retried
 * or repeated update changes nothing more. The realm compares what it sent
 * with its state when the answer comes, and sends again if the address
 * changed meanwhile: the last update the directory applies is the latest.
 */
import { z } from 'zod';
import { unauthorized } from '../../lib/errors.ts';
import { T } from '../../storage/tables.ts';
import { type Caller, defineAction, defineQuery, later } from '../runtime/action.ts';
import type { DirectoryState } from './actor.ts';

const action = defineAction<DirectoryState>();
const query = defineQuery<DirectoryState>();

/** Most accounts one update carries (a realm's batch of new users, a backfill's step). */
export const MAX_ADDRESS_ENTRIES = 1000;

/** A realm's own accounts: the server acting for one organization (a realm's follow-up), never a user. */
function realmOnly(caller: Caller): number {
  if (caller.userId !== null || caller.realmId <= 0) throw unauthorized('Only an organization indexes its addresses');
  return caller.realmId;
}

const normalized = (address: string | null): string | null => (address === null ? null : address.trim().toLowerCase());

/**
 * Sets the address of each account of the calling organization (null: the
 * account has none any more, deleted for good) and answers, for each, how
 * many other accounts of the server have that address (Zulip's
 * `other_account_count`, read before this update in the same turn).
 * `complete`: the organization's backfill has sent its last batch.
 */
export const setAccountAddresses = action({
  type: 'setAccountAddresses',
  fields: z.object({
    entries: z.array(z.object({ userId: z.number().int().positive(), address: z.string().min(1).max(320).nullable() })).max(MAX_ADDRESS_ENTRIES),
    complete: z.boolean().default(false),
  }),
  async prepare(_state, msg, ctx) {
    const realmId = realmOnly(msg.caller);
    return Promise.all(
      msg.entries.map(async (e) => {
        const address = normalized(e.address);
        const [old, holders] = await Promise.all([T.accountAddressOf.at(realmId, e.userId).get(ctx.store), address === null ? [] : T.accountAddresses.partition(address).values(ctx.store)]);
        return { old: old?.address ?? null, holders };
      }),
    );
  },
  check(state, msg, facts) {
    const realmId = realmOnly(msg.caller);
    const entries = msg.entries.map((e, i) => {
      const f = facts[i]!;
      return { userId: e.userId, address: normalized(e.address), old: f.old, others: f.holders.filter((h) => !(h.realmId === realmId && h.userId === e.userId)).length };
    });
    return { realmId, entries, complete: msg.complete && !state.indexedRealms.has(realmId) };
  },
  apply(state, plan, tx) {
    const { realmId } = plan;
    for (const e of plan.entries) {
      if (e.old !== null && e.old !== e.address) tx.write(T.accountAddresses.at(e.old, realmId, e.userId).delete());
      if (e.address !== null) {
        tx.write(T.accountAddresses.at(e.address, realmId, e.userId).put({ realmId, userId: e.userId }));
        tx.write(T.accountAddressOf.at(realmId, e.userId).put({ address: e.address }));
      } else if (e.old !== null) tx.write(T.accountAddressOf.at(realmId, e.userId).delete());
    }
    if (plan.complete) {
      state.indexedRealms.add(realmId);
      tx.write(T.accountIndexDone.at(realmId).put({ at: Math.floor(Date.now() / 1000) }));
    }
    return { others: plan.entries.map((e) => e.others) };
  },
});

/** The accounts of an address (the operator's and the tests' view of the index). */
export const accountsWithAddress = query({
  type: 'accountsWithAddress',
  fields: z.object({ address: z.string() }),
  run(_state, msg, ctx) {
    if (msg.caller.userId !== null) throw unauthorized('Only the server reads the address index');
    const address = normalized(msg.address)!;
    return later(async () => ({ accounts: address ? await T.accountAddresses.partition(address).values(ctx.store) : [] }));
  },
});

/** Whether every account of the organization is in the index (its backfill is done, or it was created with it). */
export const addressesIndexed = query({
  type: 'addressesIndexed',
  fields: z.object({ realmId: z.number().int() }),
  run(state, msg) {
    if (msg.caller.userId !== null) throw unauthorized('Only the server reads the address index');
    return { indexed: state.indexedRealms.has(msg.realmId) };
  },
});
