/**
 * POST /messages/render (Zulip's `render_message_backend`): the HTML a
 * message with this content would have if the caller sent it now, rendered
 * by the same renderer as a send, with the organization's users, channels,
 * custom emoji and linkifiers as the caller sees them. Nothing is stored.
 */
import { z } from 'zod';
import { defineQuery } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { renderMessage } from '../../rules/markdown.ts';
import { renderOptions } from './messages.ts';
import type { RealmState } from '../../state/state.ts';

const query = defineQuery<RealmState>();

export const renderContent = query({
  type: 'renderContent',
  fields: z.object({ content: z.string() }),
  run(state, msg) {
    return { rendered: renderMessage(msg.content, renderOptions(state, actingUser(state, msg.caller))).html };
  },
});
