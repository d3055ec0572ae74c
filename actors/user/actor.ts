/**
 * The user actor: owns one user's personal state (message flags that
 * differ from their defaults; settings are the realm's) and serves that user's history reads.
 * It calls the realm actor for what the user may see; the realm actor never
 * calls a user actor, so the two cannot wait on each other.
 */
import { z } from 'zod';
import { NarrowTermSchema } from '../../lib/narrow.ts';
import { T } from '../../storage/tables.ts';
import { wants } from '../events/fetch.ts';
import { formatMessage } from '../format.ts';
import type { WithTarget } from '../realm/messages.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { type Caller, defineQuery, later } from '../runtime/action.ts';
import type { ActorContext } from '../runtime/context.ts';
import { defineActor } from '../runtime/registry.ts';
import { MessageReader } from './messages.ts';
import { userRef } from './ref.ts';

export interface UserState {
  realmId: number;
  userId: number;
  flags: Map<number, string[]>;
}

const query = defineQuery<UserState>();

async function load(ctx: ActorContext, id: string): Promise<UserState> {
  const [realmId, userId] = id.split(':').map(Number) as [number, number];
  const flags = new Map<number, string[]>();
  for (const { ck, value } of await T.userFlags.partition(realmId, userId).range(ctx.store)) flags.set(Number(ck), value);
  return { realmId, userId, flags };
}

const reader = (s: UserState, ctx: ActorContext) => new MessageReader(ctx.store, s.realmId, s.userId, s.flags);
const realmOf = (s: UserState) => realmActorId(s.realmId);
const callerOf = (s: UserState): Caller => ({ realmId: s.realmId, userId: s.userId });

const snapshot = query({
  type: 'snapshot',
  fields: z.object({ fetch: z.array(z.string()).nullable() }),
  run(s, msg, ctx) {
    // user_settings come from the realm's snapshot: the realm owns every user's settings.
    if (!wants(msg.fetch, 'message') && !wants(msg.fetch, 'update_message_flags')) return later(async () => ({}));
    return later(async () => {
      const { sources } = await ctx.actors.call(realmRef, realmOf(s), { type: 'messageSources', caller: callerOf(s), narrow: [], with: null });
      return { unread_msgs: await reader(s, ctx).unreads(sources) };
    });
  },
});

/** For a `with:<id>` term: the message it names, read from the store, for the realm to check and resolve. */
async function withTarget(s: UserState, ctx: ActorContext, narrow: z.infer<typeof NarrowTermSchema>[]): Promise<WithTarget | null> {
  const term = narrow.find((t) => t.operator === 'with');
  if (!term) return null;
  const id = Number(term.operand);
  const located = await T.messageLocator.at(s.realmId, id).get(ctx.store);
  const m = located && (await T.messages.at(s.realmId, located.recipientKey, id).get(ctx.store));
  return { message: m ? { id: m.id, recipientKey: m.recipientKey, streamId: m.streamId, topic: m.topic, dmUserIds: m.dmUserIds } : null };
}

const getMessages = query({
  type: 'getMessages',
  fields: z.object({
    anchor: z.union([z.number().int(), z.enum(['newest', 'oldest', 'first_unread'])]),
    numBefore: z.number().int().nonnegative(),
    numAfter: z.number().int().nonnegative(),
    includeAnchor: z.boolean(),
    narrow: z.array(NarrowTermSchema),
    applyMarkdown: z.boolean(),
    clientExtavatar: z.boolean(),
  }),
  run(s, msg, ctx) {
    // Messages are immutable once stored: the read runs outside the mailbox.
    return later(async () => {
      const realm = realmOf(s);
      const { narrow, sources } = await ctx.actors.call(realmRef, realm, { type: 'messageSources', caller: msg.caller, narrow: msg.narrow, with: await withTarget(s, ctx, msg.narrow) });
      const r = reader(s, ctx);
      const page = await r.page(msg, narrow, sources);
      const userIds = new Set<number>();
      const channelIds = new Set<number>();
      for (const m of page.messages) {
        userIds.add(m.senderId);
        for (const id of m.dmUserIds ?? []) userIds.add(id);
        if (m.streamId !== null) channelIds.add(m.streamId);
      }
      const names = page.messages.length ? await ctx.actors.call(realmRef, realm, { type: 'directory', caller: msg.caller, userIds: [...userIds], channelIds: [...channelIds] }) : null;
      return {
        messages: page.messages.map((m) => ({ ...formatMessage(m, names!, msg), flags: r.flagsOf(m) })),
        anchor: page.anchor,
        found_anchor: page.foundAnchor,
        found_oldest: page.foundOldest,
        found_newest: page.foundNewest,
        history_limited: false,
      };
    });
  },
});

export const userHandlers = { snapshot, getMessages };

export const userActor = defineActor({
  ref: userRef,
  durable: true,
  load: (ctx, id) => load(ctx, id),
  handlers: userHandlers,
});
