/**
 * Message retention (Zulip's `zerver/lib/retention.py` `archive_messages`,
 * run daily by its cron job): messages older than their retention period
 * are deleted, and the users who had them get `delete_message` events
 * (FL 452).
 *
 * The period: a channel's `message_retention_days`, or the organization's
 * when the channel's is null (the realm default); -1 ("unlimited") keeps
 * everything. Direct messages follow the organization's setting. A message
 * is old when it was sent more than that many days before the run
 * (`PARLEY_RETENTION_DAY_SECS` shortens a day, for tests).
 *
 * When: a durable timer of the realm, armed while the organization or any
 * channel has a limited period (a change of either arms it), due a day after
 * each run. An operator may run it now (`parley org retention <org> --now`,
 * the `runRetentionNow` action): the same timer, due at once.
 *
 * How, off the realm's mailbox: the timer's `effect` (outside the mailbox)
 * reads each limited recipient's oldest messages from the store, up to
 * `BATCH` in all; the commit deletes them as `DELETE /messages/{id}` does
 * (the message, its locator, its topic's count, the channel's
 * first_message_id) and re-arms the timer at once while more may be old, so
 * a large backlog goes in bounded commits with other requests in between.
 */
import { z } from 'zod';
import { ApiError } from '../../../../lib/errors.ts';
import { type StoredMessage, T } from '../../../../storage/tables.ts';
import { channelRecipientKey, dmRecipientKey } from '../../../model.ts';
import { defineAction, defineTimer, type Tx } from '../../../runtime/action.ts';
import type { ActorContext } from '../../../runtime/context.ts';
import { deletedMessagesEvents } from './deleted_messages.ts';
import { type RealmState, type StoredNow, storedNow } from '../../state/state.ts';

const action = defineAction<RealmState>();
const timer = defineTimer<RealmState>();

const RETENTION = 'retention';
/** Messages deleted by one commit (Zulip archives in chunks of 100 per transaction). */
const BATCH = Number(process.env.PARLEY_RETENTION_BATCH ?? 500);
const RUN_EVERY_MS = 86_400_000;
const daySecs = (): number => Number(process.env.PARLEY_RETENTION_DAY_SECS) || 86_400;

/** The retention period in days of a channel (its own, else the organization's), or null for unlimited. */
export function channelRetentionDays(state: Readonly<RealmState>, channelId: number): number | null {
  const c = state.channels.get(channelId);
  const days = c?.messageRetentionDays ?? state.org.settings.messageRetentionDays ?? -1;
  return days > 0 ? days : null;
}

const realmDays = (state: Readonly<RealmState>): number | null => {
  const d = state.org.settings.messageRetentionDays ?? -1;
  return d > 0 ? d : null;
};

/** Whether any message of the organization has a limited period. */
const limited = (state: Readonly<RealmState>): boolean => realmDays(state) !== null || [...state.channels.keys()].some((id) => channelRetentionDays(state, id) !== null);

function setAt(state: RealmState, tx: Tx, at: number | null): void {
  if (state.retentionAt !== null) tx.clearTimer(RETENTION, state.retentionAt, 0);
  // The payload names the time the timer is due at, as setTimer will record it (a past time becomes now).
  const when = at === null ? null : Math.max(at, Date.now());
  state.retentionAt = when === null ? null : tx.setTimer(RETENTION, when, { at: when }, 0);
  tx.write(state.retentionAt === null ? T.retentionRuns.at(state.realmId).delete() : T.retentionRuns.at(state.realmId).put({ at: state.retentionAt }));
}

/** Arms the daily run when some period is limited and none is armed; clears it when none is (a change of a retention setting). */
export function armRetention(state: RealmState, tx: Tx, now = Date.now()): void {
  if (!limited(state)) {
    if (state.retentionAt !== null) setAt(state, tx, null);
  } else if (state.retentionAt === null) setAt(state, tx, now + RUN_EVERY_MS);
}

/** The operator's "run the retention policy now" (`parley org retention <org> --now`): the timer, due at once. */
export const runRetentionNow = action({
  type: 'runRetentionNow',
  fields: z.object({}),
  check(state, msg) {
    if (msg.caller.userId !== null) throw new ApiError('UNAUTHORIZED', 'Only the server runs the retention policy', 403);
    if (!limited(state)) throw new ApiError('BAD_REQUEST', 'No retention period is set in this organization (message_retention_days is unlimited everywhere)', 400);
    return Date.now();
  },
  apply(state, now, tx) {
    setAt(state, tx, now);
    return { run: now };
  },
});

/** What one run found: the old messages to delete, and for each channel whose first message goes, its next first message. */
interface Found {
  current: boolean;
  old: StoredMessage[];
  /** Those of `old` still stored when the commit is made (`settle`). */
  stored: StoredNow[];
  firstIds: Map<number, number | null>;
  more: boolean;
}

/** A recipient's messages sent before `cutoffSecs`, oldest first, up to `room`; and the ID of the first message after them (null: none). */
async function oldMessages(ctx: ActorContext, realmId: number, recipientKey: string, cutoffSecs: number, room: number): Promise<{ old: StoredMessage[]; next: number | null }> {
  const old: StoredMessage[] = [];
  for (const { ck } of await T.recipientBuckets.partition(realmId, recipientKey).range(ctx.store)) {
    let lo = 0;
    for (;;) {
      const rows = await T.messages.partition(realmId, recipientKey, Number(ck)).values(ctx.store, { gte: lo, limit: 200 });
      for (const m of rows) {
        if (m.timestamp >= cutoffSecs || old.length >= room) return { old, next: m.id };
        old.push(m);
      }
      if (rows.length < 200) break;
      lo = rows[rows.length - 1]!.id + 1;
    }
  }
  return { old, next: null };
}

export const retentionRun = timer({
  name: RETENTION,
  async effect(state, p: { at: number }, ctx): Promise<Found> {
    const found: Found = { current: state.retentionAt === p.at, old: [], stored: [], firstIds: new Map(), more: false };
    if (!found.current) return found;
    const nowSecs = Date.now() / 1000;
    const recipients: Array<{ key: string; days: number; channelId: number | null }> = [];
    for (const id of state.channels.keys()) {
      const days = channelRetentionDays(state, id);
      if (days !== null) recipients.push({ key: channelRecipientKey(id), days, channelId: id });
    }
    const dmDays = realmDays(state);
    if (dmDays !== null) for (const key of state.dms.keys()) recipients.push({ key: dmRecipientKey(key), days: dmDays, channelId: null });
    for (const r of recipients) {
      const room = BATCH - found.old.length;
      if (room <= 0) {
        found.more = true;
        break;
      }
      const { old, next } = await oldMessages(ctx, state.realmId, r.key, nowSecs - r.days * daySecs(), room);
      found.old.push(...old);
      if (old.length >= room && next !== null) found.more = true;
      const c = r.channelId === null ? undefined : state.channels.get(r.channelId);
      if (c && c.firstMessageId !== null && old.some((m) => m.id === c.firstMessageId)) found.firstIds.set(c.id, next);
    }
    ctx.log.info({ realm: state.realmId, deleting: found.old.length, more: found.more }, 'retention batch');
    return found;
  },
  // Those of them still stored now: a message deleted meanwhile (DELETE /messages/{id}) is not counted out twice.
  settle: async (state, _p, ctx, found: Found): Promise<Found> => (found.current ? { ...found, stored: await storedNow(ctx.store, state.realmId, found.old) } : found),
  check(_state, p: { at: number }, _ctx, found: Found) {
    return { p, found };
  },
  apply(state, { p, found }, tx) {
    if (!found.current || state.retentionAt !== p.at) return null;
    const firstChanged = state.deleteStoredMessages(tx, found.stored, found.firstIds);
    // More old messages: the next batch at once (other requests first); else tomorrow, while a period is limited.
    setAt(state, tx, found.more ? Date.now() : limited(state) ? Date.now() + RUN_EVERY_MS : null);
    return firstChanged;
  },
  events(state, { found }, firstChanged) {
    if (firstChanged === null) return [];
    return deletedMessagesEvents(state, found.stored, firstChanged);
  },
});
