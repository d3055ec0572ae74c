/**
 * The sign-up page of an invitation (GET and POST /join/{token}): a form for
 * the new user's name (and email, for a reusable link) and password; on
 * success, the account exists with the invited role and channels, and the
 * page shows the user's zuliprc.
 */
import { badRequest } from '../../lib/errors.ts';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../lib/secrets.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { ApiError } from '../../lib/errors.ts';
import { document, escapeHtml, html, type Page, type PageContext } from './page.ts';

const server = (ctx: PageContext) => ({ realmId: ctx.realmId, userId: null });

function form(token: string, realmName: string, email: string | null, error: string | null, values: { fullName?: string; email?: string } = {}): string {
  return document(
    `Join ${realmName}`,
    `<h1>Join ${escapeHtml(realmName)}</h1>
${error ? `<p class="error" id="error">${escapeHtml(error)}</p>` : ''}
<form method="post" action="/join/${encodeURIComponent(token)}">
${email ? `<p>Your account: <strong id="email">${escapeHtml(email)}</strong></p>` : `<label for="email">Email</label><input id="email" name="email" type="email" required value="${escapeHtml(values.email ?? '')}">`}
<label for="full_name">Full name</label><input id="full_name" name="full_name" required value="${escapeHtml(values.fullName ?? '')}">
<label for="password">Password</label><input id="password" name="password" type="password" required minlength="6">
<button id="submit" type="submit">Create my account</button>
</form>`,
  );
}

const invalid = (realmName: string) => html(document('Invitation', `<h1>${escapeHtml(realmName)}</h1><p class="error" id="error">This invitation link is invalid or has expired.</p>`), 404);

export const joinPage: Page = {
  method: 'GET',
  path: '/join/{token}',
  async handle(ctx, params) {
    const token = params.get('token') ?? '';
    const info = await ctx.actors.call(realmRef, realmActorId(ctx.realmId), { type: 'inviteInfo', caller: server(ctx), token });
    if (!info.valid) return invalid(info.realmName);
    return html(form(token, info.realmName, info.email, null));
  },
};

export const joinSubmit: Page = {
  method: 'POST',
  path: '/join/{token}',
  async handle(ctx, params) {
    const token = params.get('token') ?? '';
    const realm = realmActorId(ctx.realmId);
    const info = await ctx.actors.call(realmRef, realm, { type: 'inviteInfo', caller: server(ctx), token });
    if (!info.valid) return invalid(info.realmName);
    const fullName = params.get('full_name') ?? '';
    const email = params.get('email') ?? null;
    try {
      const password = params.get('password') ?? '';
      if ([...password].length < MIN_PASSWORD_LENGTH) throw badRequest(`The password is too weak (at least ${MIN_PASSWORD_LENGTH} characters).`);
      if ([...password].length > MAX_PASSWORD_LENGTH) throw badRequest(`The password is too long (at most ${MAX_PASSWORD_LENGTH} characters).`);
      const u = await ctx.actors.call(realmRef, realm, { type: 'acceptInvite', caller: server(ctx), token, email, fullName, passwordHash: await hashPassword(password) });
      const zuliprc = `[api]\nemail=${u.email}\nkey=${u.apiKey}\nsite=${ctx.realmUrl}\n`;
      return html(
        document(
          `Welcome to ${info.realmName}`,
          `<h1>Welcome, ${escapeHtml(u.fullName)}!</h1><p>Your account in ${escapeHtml(info.realmName)} is ready. Save this as <code>~/.zuliprc</code> to use it from API clients:</p><pre id="zuliprc">${escapeHtml(zuliprc)}</pre>`,
        ),
      );
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      return html(form(token, info.realmName, info.email, err.message, { fullName, email: email ?? '' }), 400);
    }
  },
};
