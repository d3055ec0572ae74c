/**
 * What every change of an account's address owes the server-wide address
 * index (the directory's, `actors/directory/accounts.ts`): a follow-up,
 * set in the change's commit, that sends the accounts' current addresses
 * (`accountAddresses`, `actors/realm/actions/notifications/account_addresses.ts`).
 * Here, in the state layer, so that each area that makes or changes users
 * can owe it without importing another area.
 */
import { FOLLOW_UP_DELAY_MS, type Tx } from '../../runtime/action.ts';
import type { UserRecord } from '../../../storage/tables.ts';

export const ACCOUNT_ADDRESSES = 'accountAddresses';

/** Call in the commit that creates users, changes their address or deletes them for good: the index learns their current addresses after it. */
export function noteAccountAddresses(tx: Tx, userIds: number[]): void {
  if (userIds.length) tx.setTimer(ACCOUNT_ADDRESSES, Date.now() + FOLLOW_UP_DELAY_MS, { userIds }, userIds[0]!);
}

/**
 * The address an account is indexed under (Zulip's `delivery_email`,
 * case-insensitive): none for a user deleted for good (Zulip scrubs their
 * address) nor for the realm's system bots (Zulip's live in its internal
 * realm, with one address for the whole server). Deactivated users keep
 * theirs: Zulip counts them.
 */
export const indexedAddress = (u: UserRecord | undefined): string | null => (!u || u.isDeleted || u.isSystemBot ? null : u.email.toLowerCase());
