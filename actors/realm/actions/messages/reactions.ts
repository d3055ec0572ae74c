/**
 * Emoji reactions (Zulip's `actions/reactions.py`): POST and DELETE
 * /messages/{message_id}/reactions. A message's reactions live in its stored
 * row, so every read of the message has them; a change rewrites the row.
 */
import { z } from 'zod';
import { ApiError, badRequest, missingParam } from '../../../../lib/errors.ts';
import { type StoredMessage, T } from '../../../../storage/tables.ts';
import { toChannelSubscribers, toUsers } from '../../../events/delivery.ts';
import { defineAction } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { apiEmail } from '../../rules/emails.ts';
import { type Emoji, resolveEmoji, unicodeCode } from '../../rules/emoji.ts';
import { accessMessage, audience, readMessage } from './message_edit.ts';
import { activeEmojiByName } from '../organization/realm_emoji.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();

const Fields = z.object({ id: z.number().int(), emojiName: z.string().nullable(), emojiCode: z.string().nullable(), reactionType: z.string().nullable() });

interface ReactionPlan {
  m: StoredMessage;
  userId: number;
  emoji: Emoji;
  /** A direct message's participants; null for a channel message (its subscribers, found by the queue shards). */
  audience: number[] | null;
}

const sameReaction = (r: StoredMessage['reactions'][number], userId: number, e: Pick<Emoji, 'code' | 'type'>) => r.userId === userId && r.emojiCode === e.code && r.reactionType === e.type;

export const addReaction = action({
  type: 'addReaction',
  fields: Fields,
  prepare: (state, msg, ctx) => readMessage(ctx, state.realmId, msg.id),
  check(state, msg, found): ReactionPlan {
    const user = actingUser(state, msg.caller);
    const m = accessMessage(state, user, found);
    if (msg.emojiName === null) throw missingParam('emoji_name');
    const emoji = resolveEmoji(msg.emojiName, msg.emojiCode, msg.reactionType, activeEmojiByName(state));
    if (m.reactions.some((r) => sameReaction(r, user.id, emoji))) throw new ApiError('REACTION_ALREADY_EXISTS', 'Reaction already exists.', 400);
    // Someone reacted with this emoji under another name: join their reaction (Zulip keeps one name per emoji).
    const joined = m.reactions.find((r) => r.emojiCode === emoji.code && r.reactionType === emoji.type);
    return { m, userId: user.id, emoji: joined ? { ...emoji, name: joined.emojiName } : emoji, audience: m.streamId !== null ? null : audience(state, m) };
  },
  apply(state, p, tx) {
    const next = { ...p.m, reactions: [...p.m.reactions, { emojiName: p.emoji.name, emojiCode: p.emoji.code, reactionType: p.emoji.type, userId: p.userId }] };
    tx.write(T.messages.at(state.realmId, next.recipientKey, next.id).put(next));
    return {};
  },
  events: (state, p) => [reactionEvent(state, 'add', p)],
});

export const removeReaction = action({
  type: 'removeReaction',
  fields: Fields,
  prepare: (state, msg, ctx) => readMessage(ctx, state.realmId, msg.id),
  check(state, msg, found): ReactionPlan {
    const user = actingUser(state, msg.caller);
    const m = accessMessage(state, user, found);
    if (msg.emojiName === null && msg.emojiCode === null) throw badRequest('At least one of the following arguments must be present: emoji_name, emoji_code');
    const type = msg.reactionType ?? 'unicode_emoji';
    const code = msg.emojiCode ?? (type === 'unicode_emoji' ? unicodeCode(msg.emojiName!) : type === 'service_extra_emoji' ? msg.emojiName : [...state.emoji.values()].find((e) => e.name === msg.emojiName)?.id.toString()) ?? null;
    const mine = m.reactions.find((r) => r.userId === user.id && r.reactionType === type && (code !== null ? r.emojiCode === code : r.emojiName === msg.emojiName));
    if (!mine) throw new ApiError('REACTION_DOES_NOT_EXIST', "Reaction doesn't exist.", 400);
    return { m, userId: user.id, emoji: { name: mine.emojiName, code: mine.emojiCode, type: mine.reactionType }, audience: m.streamId !== null ? null : audience(state, m) };
  },
  apply(state, p, tx) {
    const next = { ...p.m, reactions: p.m.reactions.filter((r) => !sameReaction(r, p.userId, p.emoji)) };
    tx.write(T.messages.at(state.realmId, next.recipientKey, next.id).put(next));
    return {};
  },
  events: (state, p) => [reactionEvent(state, 'remove', p)],
});

function reactionEvent(state: Readonly<RealmState>, op: 'add' | 'remove', p: ReactionPlan) {
  const u = state.users.get(p.userId)!;
  const event = {
    type: 'reaction',
    op,
    message_id: p.m.id,
    user_id: p.userId,
    // Zulip 12 dropped it (FL 484); zulip-terminal still reads it.
    user: { user_id: u.id, email: apiEmail(state, u), full_name: u.fullName },
    emoji_name: p.emoji.name,
    emoji_code: p.emoji.code,
    reaction_type: p.emoji.type,
  } as const;
  return p.audience ? toUsers(state.realmId, p.audience, event) : toChannelSubscribers(state.realmId, p.m.streamId!, event);
}
