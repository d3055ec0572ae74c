/**
 * Personal lists the realm needs when a message is sent: muted users (their
 * messages arrive read, Zulip's `actions/muted_users.py`) and alert words
 * (`has_alert_word`, `actions/alert_words.py`).
 *
 * Muting marks what the muted user already sent read, as Zulip does in the
 * mute's transaction. That is the muter's user actor's work, so the mute's
 * commit sets a durable timer (`markMutedRead`) whose effect asks the user
 * actor, after the commit, retried until it answers, also across restarts.
 */
import { z } from 'zod';
import { badRequest } from '../../../../lib/errors.ts';
import { T } from '../../../../storage/tables.ts';
import { toUsers } from '../../../events/delivery.ts';
import { userActorId, userRef } from '../../../user/ref.ts';
import { defineAction, defineQuery, defineTimer, FOLLOW_UP_DELAY_MS } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();
const timer = defineTimer<RealmState>();

const MARK_MUTED_READ = 'markMutedRead';
/** Rounds of 5,000 messages marked read when a user is muted (bounded; the rest stays unread). */
const MARK_READ_ROUNDS = 20;
/** The timer's ref: one per muter and muted user (user IDs are below 2^26 in a realm). */
const muteRef = (userId: number, mutedUserId: number): number => userId * 2 ** 26 + mutedUserId;

/** The `muted_users` register key and event list. */
export function mutedUsersOf(state: Readonly<RealmState>, userId: number) {
  return [...(state.mutedUsers.get(userId) ?? [])].sort((a, b) => a[1] - b[1] || a[0] - b[0]).map(([id, timestamp]) => ({ id, timestamp }));
}

export const alertWordsOf = (state: Readonly<RealmState>, userId: number): string[] => [...(state.alertWords.get(userId) ?? [])];

export const muteUser = action({
  type: 'muteUser',
  fields: z.object({ mutedUserId: z.number().int(), mute: z.boolean() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    if (msg.mutedUserId === user.id) throw badRequest(msg.mute ? 'Cannot mute self' : 'Cannot unmute self');
    if (!state.users.has(msg.mutedUserId)) throw badRequest('No such user');
    const muted = state.mutedUsers.get(user.id)?.has(msg.mutedUserId) === true;
    if (msg.mute && muted) throw badRequest('User already muted');
    if (!msg.mute && !muted) throw badRequest('User is not muted');
    return { userId: user.id, mutedUserId: msg.mutedUserId, mute: msg.mute };
  },
  apply(state, p, tx) {
    const timestamp = Math.floor(Date.now() / 1000);
    state.setMuted(p.userId, p.mutedUserId, p.mute ? timestamp : null);
    const row = T.mutedUsers.at(state.realmId, p.userId, p.mutedUserId);
    tx.write(p.mute ? row.put({ userId: p.userId, mutedUserId: p.mutedUserId, timestamp }) : row.delete());
    if (p.mute) tx.setTimer(MARK_MUTED_READ, Date.now() + FOLLOW_UP_DELAY_MS, { userId: p.userId, mutedUserId: p.mutedUserId }, muteRef(p.userId, p.mutedUserId));
    return {};
  },
  events: (state, p) => [toUsers(state.realmId, [p.userId], { type: 'muted_users', muted_users: mutedUsersOf(state, p.userId) })],
});

/**
 * The mute's follow-up: the muter's user actor marks the muted user's unread
 * messages read (the user actor sends its `update_message_flags` event). Marking
 * read is idempotent, so a run repeated after a failure does no harm; a user
 * unmuted in the meantime is left alone.
 */
export const markMutedRead = timer({
  name: MARK_MUTED_READ,
  async effect(state, p: { userId: number; mutedUserId: number }, ctx): Promise<undefined> {
    if (state.mutedUsers.get(p.userId)?.has(p.mutedUserId) !== true || !state.users.get(p.userId)?.isActive) return undefined;
    const narrow = [
      { operator: 'sender', operand: p.mutedUserId, negated: false },
      { operator: 'is', operand: 'unread', negated: false },
    ];
    const caller = { realmId: state.realmId, userId: p.userId };
    for (let round = 0; round < MARK_READ_ROUNDS; round++) {
      const r = await ctx.actors.call(userRef, userActorId(state.realmId, p.userId), { type: 'updateMessageFlagsForNarrow', caller, op: 'add', flag: 'read', anchor: 'oldest' as const, includeAnchor: true, numBefore: 0, numAfter: 5000, narrow });
      if (r.found_newest || r.processed_count === 0) break;
    }
    return undefined;
  },
  check: () => null,
  apply: () => null,
});

export const listAlertWords = query({
  type: 'listAlertWords',
  fields: z.object({}),
  run(state, msg) {
    return { alert_words: alertWordsOf(state, actingUser(state, msg.caller).id) };
  },
});

export const MAX_ALERT_WORD_LENGTH = 100;

export const changeAlertWords = action({
  type: 'changeAlertWords',
  fields: z.object({ words: z.array(z.string()), add: z.boolean() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    msg.words.forEach((w, i) => {
      if ([...w].length > MAX_ALERT_WORD_LENGTH) throw badRequest(`alert_words[${i}] is too long (limit: ${MAX_ALERT_WORD_LENGTH} characters)`);
    });
    const words = msg.words.map((w) => w.trim().toLowerCase()).filter(Boolean);
    const current = alertWordsOf(state, user.id);
    const next = msg.add ? [...new Set([...current, ...words])] : current.filter((w) => !words.includes(w));
    return { userId: user.id, next };
  },
  apply(state, p, tx) {
    if (p.next.length) state.alertWords.set(p.userId, p.next);
    else state.alertWords.delete(p.userId);
    tx.write(p.next.length ? T.alertWords.at(state.realmId, p.userId).put(p.next) : T.alertWords.at(state.realmId, p.userId).delete());
    return { alert_words: p.next };
  },
  events: (state, p) => [toUsers(state.realmId, [p.userId], { type: 'alert_words', alert_words: p.next })],
});
