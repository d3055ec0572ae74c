/**
 * Video calls (FL 493): POST /calls/videoprovider/create, and POST
 * /calls/videoprovider/register, which gives the URL where the user
 * authorizes this server with the provider (the OAuth step; the provider
 * sends the browser back to the /calls/videoprovider/complete page).
 */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { ApiError, badRequest } from '../../lib/errors.ts';
import { siteUrl } from '../../lib/mail.ts';
import { ProviderError, signState, videoProvider } from '../../lib/videoprovider.ts';
import { caller, me, route } from '../route.ts';

export const redirectUri = (): string => `${siteUrl()}/calls/videoprovider/complete`;

function configured() {
  const p = videoProvider();
  if (!p) throw badRequest('videoprovider credentials have not been configured');
  return p;
}

export const invalidToken = () => new ApiError('INVALID_VIDEOPROVIDER_TOKEN', 'Invalid videoprovider access token', 400);

export const registerVideoProvider = route({
  method: 'POST',
  path: '/calls/videoprovider/register',
  auth: 'required',
  params: {},
  async handle(ctx) {
    const { provider, secret } = configured();
    const user = me(ctx);
    return { url: provider.authorizeUrl(signState(secret, user.realmId, user.userId), redirectUri()) };
  },
});

export const createVideoCall = route({
  method: 'POST',
  path: '/calls/videoprovider/create',
  auth: 'required',
  params: {},
  async handle(ctx) {
    const { provider } = configured();
    const realm = realmActorId(me(ctx).realmId);
    const { userId, accessToken } = await ctx.actors.call(realmRef, realm, { type: 'videoProviderToken', caller: caller(ctx) });
    if (accessToken === null) throw invalidToken();
    let meeting: { url: string } | null;
    try {
      meeting = await provider.createMeeting(accessToken);
    } catch (err) {
      if (err instanceof ProviderError || err instanceof TypeError || (err as Error).name === 'TimeoutError') throw new ApiError('BAD_REQUEST', 'Failed to create videoprovider call', 400);
      throw err;
    }
    if (!meeting) {
      // The provider no longer accepts the token: forget it, so the client asks the user to authorize again.
      await ctx.actors.call(realmRef, realm, { type: 'setVideoProviderToken', caller: { realmId: ctx.realmId, userId: null }, userId, accessToken: null });
      throw invalidToken();
    }
    return { url: meeting.url };
  },
});
