/**
 * The unsubscribe link of a missed-message email (GET
 * /accounts/unsubscribe/missed_messages/{token}): one click, no login, as
 * Zulip's. The token is checked by the realm actor, which turns the user's
 * `enable_offline_email_notifications` off (`actors/realm/notifications.ts`).
 */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { ApiError } from '../../lib/errors.ts';
import { UNSUBSCRIBE_PATH } from '../../lib/mail.ts';
import { document, escapeHtml, html, type Page } from './page.ts';

export const unsubscribePage: Page = {
  method: 'GET',
  path: `${UNSUBSCRIBE_PATH}/{token}`,
  async handle(ctx, params) {
    try {
      const r = await ctx.actors.call(realmRef, realmActorId(ctx.realmId), { type: 'unsubscribeMissedEmails', caller: { realmId: ctx.realmId, userId: null }, token: params.get('token') ?? '' });
      return html(document('Unsubscribed', `<h1>Unsubscribed</h1><p id="done">${escapeHtml(r.email)} will no longer get emails about missed messages. You can turn them on again in your notification settings.</p>`));
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return html(document('Unsubscribe', `<h1>Unsubscribe</h1><p class="error" id="error">${escapeHtml(err.message)}</p>`), 404);
    }
  },
};
