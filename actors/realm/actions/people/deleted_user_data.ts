/**
 * The follow-up of deleting a user (`deleteUser`, `parley users delete`):
 * their rows in the tables their user actor owns go, through that actor
 * (`actors/user/forget.ts`). The deletion's commit removes the realm's own
 * rows of them (`RealmState.forgetUser`) and sets this durable timer; its
 * `effect` asks the user actor, step by step, to delete its rows, flag rows a
 * range of message buckets at a time. A run that fails or is cut short by a
 * crash leaves the timer, which runs again (after a restart too) from the
 * start: every step is idempotent. Nothing clients see changes, so it sends
 * no event.
 */
import { messageBucket } from '../../../../storage/tables.ts';
import { defineTimer, FOLLOW_UP_DELAY_MS, type Tx } from '../../../runtime/action.ts';
import { userActorId, userRef } from '../../../user/ref.ts';
import type { RealmState } from '../../state/state.ts';

const timer = defineTimer<RealmState>();

const FORGET_USER_DATA = 'forgetUserData';

/** Sets the timer that deletes `userId`'s rows in their user actor's tables, in the deletion's commit. */
export function forgetUserDataLater(tx: Tx, userId: number): void {
  tx.setTimer(FORGET_USER_DATA, Date.now() + FOLLOW_UP_DELAY_MS, { userId }, userId);
}

export const forgetDeletedUserData = timer({
  name: FORGET_USER_DATA,
  async effect(state, p: { userId: number }, ctx): Promise<undefined> {
    // Flag rows exist only for messages sent before the deletion: up to the newest message now.
    const lastBucket = messageBucket(Math.max(0, state.maxMessageId));
    const caller = { realmId: state.realmId, userId: null };
    let steps = 0;
    let flagRows = 0;
    for (let from: number | null = 0; from !== null; steps++) {
      const r: { next: number | null; flagRows: number } = await ctx.actors.call(userRef, userActorId(state.realmId, p.userId), { type: 'forgetUserData', caller, fromBucket: from, lastBucket });
      flagRows += r.flagRows;
      from = r.next;
    }
    ctx.log.info({ realm: state.realmId, user: p.userId, steps, flagRows }, "deleted user's data deleted");
    return undefined;
  },
  check: () => null,
  apply: () => null,
});
