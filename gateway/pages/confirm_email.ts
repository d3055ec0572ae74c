/**
 * The link mailed to a new email address (PATCH /settings with `email`):
 * following it makes the address the user's. The old address and its API
 * key pairing stop working at once (the key itself stays).
 */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { ApiError } from '../../lib/errors.ts';
import { announceRevocation } from '../auth.ts';
import { document, escapeHtml, html, type Page } from './page.ts';

export const confirmEmailLink = (realmUrl: string, key: string): string => `${realmUrl}/accounts/confirm_new_email/${key}`;

export const confirmEmailPage: Page = {
  method: 'GET',
  path: '/accounts/confirm_new_email/{key}',
  async handle(ctx, params) {
    try {
      const r = await ctx.actors.call(realmRef, realmActorId(ctx.realmId), { type: 'confirmEmailChange', caller: { realmId: ctx.realmId, userId: null }, key: params.get('key') ?? '' });
      await announceRevocation(ctx.realmId, r.revoked);
      return html(document('Email address changed', `<h1>Email address changed</h1><p id="done">Your email address is now <strong>${escapeHtml(r.email)}</strong>.</p>`));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return html(document('Email address', `<h1>Email address</h1><p class="error" id="error">${escapeHtml(err.message)}</p>`), 404);
    }
  },
};
