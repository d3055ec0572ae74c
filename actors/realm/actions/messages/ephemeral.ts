/**
 * What the ephemeral actor (typing, presence) asks the realm: who a typing
 * notification goes to, and who is in the realm. Read-only queries: they
 * never touch the journal.
 */
import { z } from 'zod';
import { badRequest, missingParam } from '../../../../lib/errors.ts';
import { defineQuery, later } from '../../../runtime/action.ts';
import { accessibleUsers, actingUser, activeUsers, canAccess, seesEveryone, usersWhoSee } from '../../rules/access.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';
import type { RealmState } from '../../state/state.ts';
import { apiEmail } from '../../rules/emails.ts';
import { partsStats } from '../../state/register_parts.ts';
import { accessMessage, checkCanEditContent, readMessage } from './message_edit.ts';
import { normalizeTopic } from './messages.ts';

const query = defineQuery<RealmState>();

/**
 * Whether `can_access_all_users_group` limits presence too (Zulip's server
 * setting CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE, off by default): a
 * restricted guest then gets only the presence of the users they see, and
 * a user's presence events go only to those who see them. Off, everyone
 * gets everyone's presence, as in Zulip.
 */
export const ACCESS_LIMITS_PRESENCE = /^(1|true|yes)$/i.test(process.env.PARLEY_CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE ?? '');

/** Channels with more subscribers than this get no typing notifications (Zulip's max_stream_size_for_typing_notifications). */
export const MAX_STREAM_SIZE_FOR_TYPING = 100;

const person = (state: Readonly<RealmState>, id: number) => ({ user_id: id, email: apiEmail(state, state.users.get(id)!) });

/** Zulip notifies only recipients whose receives_typing_notifications is on, read at each notice (FL 253). */
const receivesTyping = (state: Readonly<RealmState>, id: number) => state.setting(id, 'receives_typing_notifications', DEFAULT_USER_SETTINGS.receives_typing_notifications!) !== false;

/**
 * Whether the sender lets their typing be announced (FL 105): Zulip refuses a
 * notice when the setting is off rather than dropping it. The ephemeral actor
 * reuses an answer for `AUDIENCE_TTL_MS` (10 s), so turning the setting off
 * takes effect within that for a conversation just typed in.
 */
const sendsTyping = (state: Readonly<RealmState>, id: number, name: 'send_private_typing_notifications' | 'send_stream_typing_notifications') =>
  state.setting(id, name, DEFAULT_USER_SETTINGS[name]!) !== false;

export const typingAudience = query({
  type: 'typingAudience',
  fields: z.object({ messageType: z.enum(['direct', 'stream']), to: z.array(z.number().int()).nullable(), streamId: z.number().int().nullable(), topic: z.string().nullable() }),
  run(state, msg) {
    const sender = actingUser(state, msg.caller);
    if (msg.messageType === 'direct') {
      if (!msg.to) throw missingParam('to');
      if (msg.to.length === 0) throw badRequest("Empty 'to' list");
      if (!sendsTyping(state, sender.id, 'send_private_typing_notifications')) throw badRequest('User has disabled typing notifications for direct messages');
      for (const id of msg.to) if (!state.users.get(id)?.isActive) throw badRequest(`Invalid user ID ${id}`);
      const ids = [...new Set([...msg.to, sender.id])].sort((a, b) => a - b);
      return { sender: person(state, sender.id), recipients: ids.map((id) => person(state, id)), userIds: ids.filter((id) => receivesTyping(state, id)) };
    }
    if (msg.streamId === null) throw missingParam('stream_id');
    if (msg.topic === null) throw missingParam('topic');
    if (!sendsTyping(state, sender.id, 'send_stream_typing_notifications')) throw badRequest('User has disabled typing notifications for channel messages');
    const channel = state.channels.get(msg.streamId);
    if (!channel || !canAccess(state, channel, sender)) throw badRequest('Invalid channel ID');
    const subscribers = state.activeSubscribers(channel.id);
    const userIds = subscribers.length > MAX_STREAM_SIZE_FOR_TYPING ? [] : subscribers.filter((id) => id !== sender.id && receivesTyping(state, id));
    // '(no topic)' and the empty topic's display name are the empty topic (FL 372), as in a send.
    return { sender: person(state, sender.id), recipients: null, userIds, topic: normalizeTopic(state, msg.topic) };
  },
});

/**
 * Who hears that the caller is editing message `messageId` (Zulip's
 * send_message_edit_notification_backend, FL 351 and 361): the caller must
 * read the message and may edit its content now (no grace past the edit
 * limit); a channel message's subscribers, or a direct message's active
 * participants, the caller among them (Zulip's web app drops its own), each
 * only if they receive typing notifications.
 */
export const editTypingAudience = query({
  type: 'editTypingAudience',
  fields: z.object({ messageId: z.number().int() }),
  run(state, msg, ctx) {
    const sender = actingUser(state, msg.caller);
    return later(async () => {
      const m = accessMessage(state, sender, await readMessage(ctx, state.realmId, msg.messageId));
      // Zulip's access_message(is_modifying_message=True): a message of an archived channel is not modified.
      if (m.streamId !== null && state.channels.get(m.streamId)?.isArchived) throw badRequest('Invalid message(s)');
      checkCanEditContent(state, sender, m, 0);
      if (m.streamId !== null) {
        if (!sendsTyping(state, sender.id, 'send_stream_typing_notifications')) throw badRequest('User has disabled typing notifications for channel messages');
        const subscribers = state.activeSubscribers(m.streamId);
        const userIds = subscribers.length > MAX_STREAM_SIZE_FOR_TYPING ? [] : subscribers.filter((id) => receivesTyping(state, id));
        return { sender: person(state, sender.id), recipient: { type: 'channel' as const, channel_id: m.streamId, topic: m.topic }, userIds };
      }
      if (!sendsTyping(state, sender.id, 'send_private_typing_notifications')) throw badRequest('User has disabled typing notifications for direct messages');
      const userIds = [...new Set([...m.dmUserIds!, sender.id])].filter((id) => state.users.get(id)?.isActive && receivesTyping(state, id)).sort((a, b) => a - b);
      return { sender: person(state, sender.id), recipient: { type: 'direct' as const, user_ids: userIds }, userIds };
    });
  },
});

/** A random tag per loaded state: a version number starts again at 0 when the realm is loaded again elsewhere. */
const epochs = new WeakMap<Readonly<RealmState>, string>();
/**
 * The version of what the directory is made of (users and their addresses):
 * the register parts' count of changes to user rows, settings events about
 * users (an address hidden) and the realm's record (`register_parts.ts`).
 */
function directoryVersion(state: Readonly<RealmState>): string {
  let epoch = epochs.get(state);
  if (!epoch) epochs.set(state, (epoch = Math.random().toString(36).slice(2, 10)));
  return `${epoch}:${partsStats(state).version}`;
}

/**
 * The realm's active users with their emails (presence events go to all of
 * them). The presence actor keeps a copy and asks again every few seconds
 * with the version it has (`known`): while nothing about users changed, the
 * answer is that version alone (O(1)), not the O(users) list.
 */
export const presenceDirectory = query({
  type: 'presenceDirectory',
  fields: z.object({ known: z.string().nullable().optional() }),
  run(state, msg) {
    actingUser(state, msg.caller);
    const version = directoryVersion(state);
    if (msg.known === version) return { version, users: null };
    return { version, users: activeUsers(state).map((id) => person(state, id)) };
  },
});

/**
 * Who the caller sees and who sees the caller, for presence when
 * `ACCESS_LIMITS_PRESENCE`: `sees` is null when the caller sees everyone.
 * Asked on every presence request (never cached), so a change of access
 * shows at once.
 */
export const presenceAccess = query({
  type: 'presenceAccess',
  fields: z.object({}),
  run(state, msg) {
    const me = actingUser(state, msg.caller);
    return { sees: seesEveryone(state, me) ? null : [...accessibleUsers(state, me)], seenBy: usersWhoSee(state, me) };
  },
});
