/**
 * The unsubscribe links of mail (GET /accounts/unsubscribe/<type>/{token}, for
 * missed_messages, digest, welcome and login): one click, no login, as Zulip's.
 * The token is checked by the realm actor, which turns the user's
 * `enable_offline_email_notifications` (missed-message emails),
 * `enable_digest_emails` (digests) or `enable_login_emails` (login) off, or cancels the pending onboarding emails (welcome) (`actors/realm/actions/notifications/notifications.ts`).
 */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import type { UnsubscribeKind } from '../../actors/realm/actions/notifications/notifications.ts';
import { ApiError } from '../../lib/errors.ts';
import { DIGEST_UNSUBSCRIBE_PATH, LOGIN_UNSUBSCRIBE_PATH, UNSUBSCRIBE_PATH, WELCOME_UNSUBSCRIBE_PATH } from '../../lib/mail.ts';
import { document, escapeHtml, html, type Page } from './page.ts';

const WHAT: Record<UnsubscribeKind, string> = { missed_messages: 'emails about missed messages', digest: 'digest emails', welcome: 'onboarding emails', login: 'new-login emails' };

function unsubscribe(path: string, kind: UnsubscribeKind): Page {
  return {
    method: 'GET',
    path: `${path}/{token}`,
    async handle(ctx, params) {
      try {
        const r = await ctx.actors.call(realmRef, realmActorId(ctx.realmId), { type: 'unsubscribeMissedEmails', caller: { realmId: ctx.realmId, userId: null }, token: params.get('token') ?? '', kind });
        return html(document('Unsubscribed', `<h1>Unsubscribed</h1><p id="done">${escapeHtml(r.email)} will no longer get ${WHAT[kind]}. You can turn them on again in your notification settings.</p>`));
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        return html(document('Unsubscribe', `<h1>Unsubscribe</h1><p class="error" id="error">${escapeHtml(err.message)}</p>`), 404);
      }
    },
  };
}

export const unsubscribePage: Page = unsubscribe(UNSUBSCRIBE_PATH, 'missed_messages');
export const digestUnsubscribePage: Page = unsubscribe(DIGEST_UNSUBSCRIBE_PATH, 'digest');
export const welcomeUnsubscribePage: Page = unsubscribe(WELCOME_UNSUBSCRIBE_PATH, 'welcome');
export const loginUnsubscribePage: Page = unsubscribe(LOGIN_UNSUBSCRIBE_PATH, 'login');
