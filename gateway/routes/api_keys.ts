/**
 * API keys: POST /fetch_api_key (no credentials: email and password) and
 * POST /users/me/api_key/regenerate. The password is checked here, off the
 * realm's mailbox, against the hash the realm returns.
 */
import { z } from 'zod';
import { authenticationFailed } from '../../actors/realm/actions/people/api_keys.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { hashPassword, verifyPassword } from '../../lib/secrets.ts';
import { announceRevocation } from '../auth.ts';
import { str } from '../params.ts';
import { caller, me, route, serverCaller } from '../route.ts';

/** A stored hash to verify against when the user does not exist, so that both cases take as long. */
let decoy: Promise<string> | null = null;

export const fetchApiKey = route({
  method: 'POST',
  path: '/fetch_api_key',
  auth: 'none',
  checksCredentials: true,
  params: { username: str().pipe(z.string().min(1)), password: str() },
  async handle(ctx, p) {
    const realm = realmActorId(ctx.realmId);
    const found = await ctx.actors.call(realmRef, realm, { type: 'passwordCheck', caller: serverCaller(ctx), email: p.username });
    decoy ??= hashPassword('not a password anyone has');
    const ok = await verifyPassword(found.passwordHash ?? (await decoy), p.password);
    if (!ok || found.userId === null || found.passwordHash === null) throw authenticationFailed();
    return ctx.actors.raw(realmRef, realm, { type: 'issueApiKey', caller: serverCaller(ctx), userId: found.userId, passwordHash: found.passwordHash, userAgent: ctx.userAgent ?? '', ip: ctx.ip ?? '' });
  },
});

export const regenerateApiKey = route({
  method: 'POST',
  path: '/users/me/api_key/regenerate',
  auth: 'required',
  params: {},
  async handle(ctx) {
    const reply = await ctx.actors.call(realmRef, realmActorId(me(ctx).realmId), { type: 'regenerateApiKey', caller: caller(ctx) });
    await announceRevocation(me(ctx).realmId, reply.revoked);
    return { api_key: reply.api_key };
  },
});
