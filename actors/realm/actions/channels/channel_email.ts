/**
 * GET /streams/{stream_id}/email_address (FL 226): a channel's email
 * address. Parley has no email gateway (Zulip's EMAIL_GATEWAY_PATTERN
 * empty), so the address is "" after the same checks Zulip makes:
 * the channel is one the caller may post to (FL 448), and the sender, if
 * given, is the caller or a bot they administer.
 */
import { z } from 'zod';
import { badRequest } from '../../../../lib/errors.ts';
import { isAdmin } from '../../../model.ts';
import { defineQuery } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { hasMetadataAccess } from './streams.ts';
import type { RealmState } from '../../state/state.ts';

const query = defineQuery<RealmState>();

export const channelEmailAddress = query({
  type: 'channelEmailAddress',
  fields: z.object({ streamId: z.number().int(), senderId: z.number().int().nullable() }),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    const c = state.channels.get(msg.streamId);
    if (!c || !hasMetadataAccess(state, c, user)) throw badRequest('Invalid channel ID');
    if (!state.can(c.groups.can_send_message_group, user) && !isAdmin(user)) throw badRequest('You do not have permission to post in this channel.');
    if (msg.senderId !== null && msg.senderId !== user.id) {
      const bot = state.users.get(msg.senderId);
      if (!bot?.isBot || !bot.isActive || bot.isSystemBot || (!isAdmin(user) && bot.botOwnerId !== user.id)) throw badRequest('No such bot');
    }
    // Zulip's encode_email_address_helper without an email gateway.
    return { email: '' };
  },
});
