/**
 * GET /messages/{message_id}/read_receipts (FL 137, 144): who has read a
 * message, as Zulip's `read_receipts` view answers it.
 *
 * Zulip lists the users whose UserMessage row of the message has `read`,
 * leaving out the sender, deactivated users, users whose
 * `send_read_receipts` is off, users who muted the requester and users the
 * requester muted; bots are included, and so is the requester. Here the
 * message's recipients are the direct message's participants, or the
 * channel's subscribers (current and former) who received it, plus any
 * subscriber with a flag row of it (Zulip's historical rows); their flags
 * come from their flag row and read watermark in the store, as for an edit's
 * event (`readStoredFlags`). A user who was never subscribed and starred a
 * message of a public channel has a row Zulip would count; finding those
 * would take a read per user of the organization, so they are not listed.
 *
 * Cost: O(recipients) point reads per call (two per recipient, 128 at a
 * time), what Zulip's query over UserMessage pays; nothing is added to a
 * send.
 */
import { z } from 'zod';
import { badRequest } from '../../../../lib/errors.ts';
import type { StoredMessage } from '../../../../storage/tables.ts';
import { defineQuery, later } from '../../../runtime/action.ts';
import { userFlags } from '../../../user/flags.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';
import { actingUser } from '../../rules/access.ts';
import { accessMessage, readMessage, readStoredFlags } from './message_edit.ts';
import type { RealmState } from '../../state/state.ts';

const query = defineQuery<RealmState>();

/** A possible reader of a message: where their flags count it received from (`userFlags`), and whether they received it. */
interface Recipient {
  receivedFrom: number | null;
  received: boolean;
}

/** The users whose flags may say they read `m`: the conversation's participants, or everyone with a subscription record of its channel. */
function recipients(state: Readonly<RealmState>, m: StoredMessage): Map<number, Recipient> {
  const out = new Map<number, Recipient>();
  if (m.streamId === null) {
    for (const id of m.dmUserIds ?? []) out.set(id, { receivedFrom: 0, received: true });
    return out;
  }
  for (const sub of state.subs.get(m.streamId)?.values() ?? []) {
    // As an edit's event computes flags (`recipientFlags`): an active subscription counts from its
    // start; a former subscriber's messages are read (Zulip marks them read when they leave).
    const received = sub.startMessageId <= m.id && (sub.active || (sub.endMessageId !== null && m.id <= sub.endMessageId));
    out.set(sub.userId, { receivedFrom: sub.active ? sub.startMessageId : null, received });
  }
  return out;
}

export const readReceipts = query({
  type: 'readReceipts',
  fields: z.object({ id: z.number().int() }),
  run(state, msg, ctx) {
    const requester = actingUser(state, msg.caller);
    return later(async () => {
      const m = accessMessage(state, requester, await readMessage(ctx, state.realmId, msg.id));
      if (!state.org.settings.enableReadReceipts) throw badRequest('Read receipts are disabled in this organization.');
      const mutedByMe = state.mutedUsers.get(requester.id);
      const mutedMe = state.mutedBy.get(requester.id);
      const candidates = [...recipients(state, m)].filter(
        ([id]) =>
          id !== m.senderId &&
          state.users.get(id)?.isActive === true &&
          state.setting(id, 'send_read_receipts', DEFAULT_USER_SETTINGS.send_read_receipts!) !== false &&
          !mutedByMe?.has(id) &&
          !mutedMe?.has(id),
      );
      const stored = await readStoredFlags(ctx, state.realmId, m.id, candidates.map(([id]) => id));
      const userIds: number[] = [];
      for (const [id, r] of candidates) {
        const s = stored.get(id)!;
        // One who did not receive it counts only through a row of theirs (Zulip's historical UserMessage).
        if (!r.received && !s.row) continue;
        if (userFlags(m, id, r.receivedFrom, s.readBelow, s.row).includes('read')) userIds.push(id);
      }
      return { user_ids: userIds.sort((a, b) => a - b) };
    });
  },
});
