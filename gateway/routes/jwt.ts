/** Sign-in by token (FL 160): POST /jwt/fetch_api_key. No credentials: the token is the credential. */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { verifyJwt } from '../../lib/jwt.ts';
import { bool, str } from '../params.ts';
import { route, serverCaller } from '../route.ts';

export const jwtFetchApiKey = route({
  method: 'POST',
  path: '/jwt/fetch_api_key',
  auth: 'none',
  checksCredentials: true,
  params: { token: str().optional(), include_profile: bool().optional() },
  async handle(ctx, p) {
    const claims = await verifyJwt(ctx.realmId, p.token ?? '');
    return ctx.actors.raw(realmRef, realmActorId(ctx.realmId), { type: 'apiKeyForToken', caller: serverCaller(ctx), email: claims.email, includeProfile: p.include_profile ?? false, userAgent: ctx.userAgent ?? '', ip: ctx.ip ?? '' });
  },
});
