/** GET, PUT and DELETE /bot_storage: a bot's own storage, kept by its user actor (`actors/user/bot_storage.ts`). */
import { z } from 'zod';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { badRequest } from '../../lib/errors.ts';
import { json } from '../params.ts';
import { type CallContext, caller, me, route } from '../route.ts';

/**
 * The caller's own actor, for bots only (FL 494; Zulip's 400 "Must be a bot
 * user"): the user's actor does not know who is a bot; the credentials do.
 */
function botActor(ctx: CallContext): string {
  const u = me(ctx);
  if (!u.isBot) throw badRequest('Must be a bot user');
  return userActorId(u.realmId, u.userId);
}

const Keys = json(z.array(z.string()));

/**
 * `storage`: a JSON object of strings, as its entries. Read from the parsed
 * object itself (zod's record would drop a `__proto__` key, which JSON gives
 * as an own property and Zulip stores as any other).
 */
const Storage = json(
  z.unknown().transform((v, ctx): Array<[string, string]> => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      ctx.addIssue({ code: 'custom', message: 'is not a dict' });
      return z.NEVER;
    }
    const entries = Object.entries(v);
    const bad = entries.find(([, value]) => typeof value !== 'string');
    if (bad) {
      ctx.addIssue({ code: 'custom', message: `storage[${JSON.stringify(bad[0])}] is not a string` });
      return z.NEVER;
    }
    return entries as Array<[string, string]>;
  }),
);

export const getBotStorage = route({
  method: 'GET',
  path: '/bot_storage',
  auth: 'required',
  params: { keys: Keys.optional() },
  handle: async (ctx, p) => ctx.actors.raw(userRef, botActor(ctx), { type: 'getBotStorage', caller: caller(ctx), keys: p.keys ?? null }),
});

export const putBotStorage = route({
  method: 'PUT',
  path: '/bot_storage',
  auth: 'required',
  params: { storage: Storage },
  handle: async (ctx, p) => ctx.actors.raw(userRef, botActor(ctx), { type: 'putBotStorage', caller: caller(ctx), entries: p.storage }),
});

export const removeBotStorage = route({
  method: 'DELETE',
  path: '/bot_storage',
  auth: 'required',
  params: { keys: Keys.optional() },
  handle: async (ctx, p) => ctx.actors.raw(userRef, botActor(ctx), { type: 'removeBotStorage', caller: caller(ctx), keys: p.keys ?? null }),
});
