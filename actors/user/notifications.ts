/**
 * What the realm's missed-message email asks a user's actor: which of the
 * messages it is about are still unread (`actors/realm/actions/notifications/notifications.ts`).
 * A read of the user's own flags, outside the realm's mailbox.
 */
import { z } from 'zod';
import type { StoredMessage } from '../../storage/tables.ts';
import { defineQuery, later } from '../runtime/action.ts';
import type { UserState } from './actor.ts';
import { readMessages } from './flags.ts';
import { MessageReader } from './messages.ts';

const query = defineQuery<UserState>();

export const unreadMessages = query({
  type: 'unreadMessages',
  fields: z.object({ ids: z.array(z.number().int()).max(5000) }),
  run(s, msg, ctx) {
    const r = new MessageReader(ctx.store, s.realmId, s.userId, s.marks.readBelow, new Set(s.marks.unreadRows));
    return later(async () => {
      const out: StoredMessage[] = [];
      for (const m of await readMessages(ctx.store, s.realmId, msg.ids)) {
        // The flags of a message the user received (DM participant or subscriber at send).
        const flags = await r.flagsFor(m, { recipientKey: m.recipientKey, minId: 0, receivedFrom: 0 });
        if (!flags.includes('read')) out.push(m);
      }
      return { messages: out };
    });
  },
});
