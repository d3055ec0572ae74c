/**
 * Reading a message the user was sent a mobile push notification about
 * removes the notification from their devices (Zulip's
 * `do_clear_mobile_push_notifications_for_ids`). The flag change's commit
 * sets `pushRead`; its effect, after the commit and retried until it
 * succeeds, tells the realm, which sends the removal through the push
 * service (`actors/realm/actions/notifications/push.ts`).
 */
import type { StoredMessage } from '../../storage/tables.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { defineTimer, type Tx } from '../runtime/action.ts';
import type { UserState } from './actor.ts';

const timer = defineTimer<UserState>();
const READ = 'pushRead';

/** Call in the commit that marks `messages` read (flags, mark_stream/topic_as_read): those the user was pushed about are reported. */
export function notePushedRead(state: UserState, messages: Iterable<StoredMessage>, tx: Tx): void {
  const ids: number[] = [];
  for (const m of messages) if (m.pushed?.includes(state.userId)) ids.push(m.id);
  if (ids.length) tx.setTimer(READ, Date.now(), { ids }, ids[0]!);
}

/** Call in the commit of POST /mark_all_as_read: every message below `below` is read (the realm knows which were pushed). */
export function notePushedReadBelow(state: UserState, below: number, tx: Tx): void {
  tx.setTimer(READ, Date.now(), { below }, below);
}

export const pushRead = timer({
  name: READ,
  async effect(state, p: { ids?: number[]; below?: number }, ctx): Promise<undefined> {
    const caller = { realmId: state.realmId, userId: state.userId };
    await ctx.actors.call(realmRef, realmActorId(state.realmId), { type: 'removePushNotifications', caller, userId: state.userId, ids: p.ids ?? [], below: p.below ?? null });
    return undefined;
  },
  check: () => null,
  apply: () => null,
});
