/**
 * The sign-in page (GET /login/, POST /accounts/login/): a form for email
 * and password, the only sign-in backend this server has. Its purpose is
 * Zulip's mobile login flow (FL 108): a mobile app opens
 * `/login/?mobile_flow_otp=<64 hex digits>` in a browser; once the password
 * is right, the page answers with a redirect to
 * `zulip://login?otp_encrypted_api_key=...&email=...&user_id=...&realm=...`
 * (Zulip's `create_response_for_otp_flow`), the new API key XORed with the
 * one-time pad so that only the app that made the pad can read it.
 *
 * Without `mobile_flow_otp` this server has no web app to go to: the page
 * shows the zuliprc of the new key (as the invitation page does). A wrong
 * password shows the form again with 401 and counts against the address's
 * credential budget, as POST /fetch_api_key does (`checksCredentials`).
 */
import { authenticationFailed } from '../../actors/realm/actions/people/api_keys.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { ApiError } from '../../lib/errors.ts';
import { hashPassword, verifyPassword } from '../../lib/secrets.ts';
import type { RawParams } from '../params.ts';
import { document, escapeHtml, html, type Page, type PageContext, redirect } from './page.ts';

/** Zulip's `is_valid_otp`: 64 hexadecimal digits (32 bytes, as long as a hex-encoded API key). */
export const isValidOtp = (otp: string): boolean => /^[0-9a-fA-F]{64}$/.test(otp);

/**
 * Zulip's `otp_encrypt_api_key`: the key's ASCII as hex, XORed digit by digit
 * with the pad. The same operation decrypts.
 */
export function otpEncryptApiKey(apiKey: string, otp: string): string {
  const hex = Buffer.from(apiKey, 'ascii').toString('hex');
  if (hex.length !== otp.length) throw new Error('the API key and the one-time pad differ in length');
  return [...hex].map((d, i) => (parseInt(d, 16) ^ parseInt(otp[i]!, 16)).toString(16)).join('');
}

const value = (params: RawParams, name: string): string => {
  const v = params.get(name);
  return typeof v === 'string' ? v : '';
};

function form(ctx: PageContext, otp: string, email: string, error: string | null): string {
  return document(
    'Log in',
    `<h1>Log in to ${escapeHtml(ctx.realmUrl)}</h1>
${error ? `<p class="error" id="error">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/accounts/login/">
${otp ? `<input type="hidden" name="mobile_flow_otp" value="${escapeHtml(otp)}">` : ''}
<label for="username">Email</label><input id="username" name="username" type="email" required autocomplete="username" value="${escapeHtml(email)}">
<label for="password">Password</label><input id="password" name="password" type="password" required autocomplete="current-password">
<button id="submit" type="submit">Log in</button>
</form>`,
  );
}

/** A `mobile_flow_otp` that is not 64 hex digits: Zulip's "Invalid OTP" (400). */
const invalidOtp = () => html(document('Log in', '<h1>Log in</h1><p class="error" id="error">Invalid OTP</p>'), 400);

export const loginPage: Page = {
  method: 'GET',
  path: '/login',
  async handle(ctx, params) {
    const otp = value(params, 'mobile_flow_otp');
    if (otp && !isValidOtp(otp)) return invalidOtp();
    return html(form(ctx, otp, value(params, 'email'), null));
  },
};

/** A stored hash to verify against when the user does not exist, so that both cases take as long. */
let decoy: Promise<string> | null = null;

export const loginSubmit: Page = {
  method: 'POST',
  path: '/accounts/login',
  checksCredentials: true,
  async handle(ctx, params) {
    const otp = value(params, 'mobile_flow_otp');
    if (otp && !isValidOtp(otp)) return invalidOtp();
    const email = value(params, 'username').trim();
    const realm = realmActorId(ctx.realmId);
    const server = { realmId: ctx.realmId, userId: null };
    let issued: { api_key: string; email: string; user_id: number };
    try {
      const found = email ? await ctx.actors.call(realmRef, realm, { type: 'passwordCheck', caller: server, email }) : { userId: null, passwordHash: null };
      decoy ??= hashPassword('not a password anyone has');
      const ok = await verifyPassword(found.passwordHash ?? (await decoy), value(params, 'password'));
      if (!ok || found.userId === null || found.passwordHash === null) throw authenticationFailed();
      issued = await ctx.actors.call(realmRef, realm, { type: 'issueApiKey', caller: server, userId: found.userId, passwordHash: found.passwordHash, userAgent: ctx.userAgent, ip: ctx.ip });
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      return html(form(ctx, otp, email, err.message), err.status);
    }
    if (otp) {
      const query = new URLSearchParams({ otp_encrypted_api_key: otpEncryptApiKey(issued.api_key, otp), email: issued.email, user_id: String(issued.user_id), realm: ctx.realmUrl });
      return redirect(`zulip://login?${query}`);
    }
    const zuliprc = `[api]\nemail=${issued.email}\nkey=${issued.api_key}\nsite=${ctx.realmUrl}\n`;
    return html(document('Logged in', `<h1>Logged in</h1><p>Save this as <code>~/.zuliprc</code> to use your account from API clients:</p><pre id="zuliprc">${escapeHtml(zuliprc)}</pre>`));
  },
};
