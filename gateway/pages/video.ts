/** The end of the video-call provider's OAuth step: GET /calls/videoprovider/complete?code=...&state=... */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { ProviderError, verifyState, videoProvider } from '../../lib/videoprovider.ts';
import { redirectUri } from '../routes/video_calls.ts';
import { document, html, type Page } from './page.ts';

const fail = (why: string) => html(document('Video calls', `<h1>Video calls</h1><p class="error" id="error">${why}</p>`), 400);

export const videoProviderComplete: Page = {
  method: 'GET',
  path: '/calls/videoprovider/complete',
  async handle(ctx, params) {
    const configured = videoProvider();
    if (!configured) return fail('Video calls are not configured on this server.');
    const who = verifyState(configured.secret, params.get('state') ?? '');
    if (!who || who.realmId !== ctx.realmId) return fail('This authorization link is invalid or has expired.');
    const code = params.get('code');
    if (!code) return fail(params.get('error') ? 'The provider did not authorize this server.' : 'The provider sent no authorization code.');
    let accessToken: string;
    try {
      accessToken = await configured.provider.exchangeCode(code, redirectUri());
    } catch (err) {
      if (err instanceof ProviderError || err instanceof TypeError) return fail('The provider refused the authorization code.');
      throw err;
    }
    await ctx.actors.call(realmRef, realmActorId(ctx.realmId), { type: 'setVideoProviderToken', caller: { realmId: ctx.realmId, userId: null }, userId: who.userId, accessToken });
    return html(document('Video calls', '<h1>Video calls</h1><p id="done">Your account is connected. You can close this window.</p>'));
  },
};
