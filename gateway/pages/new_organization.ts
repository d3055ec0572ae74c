/**
 * The organization-creation page of a one-time link (GET and POST
 * /new/{token}, Zulip's `generate_realm_creation_link` → `/new/<key>`): a
 * form for the organization's name, type and subdomain and its owner's name,
 * email and password; on success the organization exists at its own host,
 * and the page links to it and says how the owner signs in. Served on any
 * host (`organization: 'none'`): the site may have no organization yet.
 *
 * The directory checks the subdomain (Zulip's messages) and uses the link up
 * in the same commit as the creation; the page shows its refusals on the
 * form with the values kept (the passwords are never written back). The
 * owner's API key is made by the directory and is neither shown nor logged:
 * the owner signs in with the email and password (POST /api/v1/fetch_api_key
 * at the new organization's host).
 */
import { DIRECTORY_ID, directoryRef, SERVER_CALLER } from '../../actors/directory/ref.ts';
import { ORG_TYPES, Role } from '../../actors/model.ts';
import { ApiError, badRequest } from '../../lib/errors.ts';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../lib/secrets.ts';
import type { RawParams } from '../params.ts';
import { document, escapeHtml, html, type Page, type PageContext } from './page.ts';

/** The invitation's address rule (actors/realm/actions/people/invites.ts). */
const EMAIL = /^[^\s@,<>]+@[^\s@,<>]+\.[^\s@,<>]+$/;
/** The directory's limit on an organization's name. */
const MAX_NAME_LENGTH = 40;

interface Values {
  name: string;
  /** Zulip's org_type (0: unspecified); the directory checks it. */
  orgType: number;
  subdomain: string;
  fullName: string;
  email: string;
}

const valuesOf = (params: RawParams): Values => ({
  name: (params.get('name') ?? '').trim(),
  orgType: Number.isInteger(Number(params.get('org_type') || 0)) ? Number(params.get('org_type') || 0) : -1,
  subdomain: (params.get('subdomain') ?? '').trim().toLowerCase(),
  fullName: (params.get('full_name') ?? '').trim(),
  email: (params.get('email') ?? '').trim(),
});

const attr = (s: string) => escapeHtml(s);

/** The form; `error` is shown above it, next to the field it names when it names one. */
function form(ctx: PageContext, token: string, values: Values, error: { message: string; field: string | null } | null): string {
  const site = new URL(ctx.hosts.siteUrl);
  const fieldError = (field: string) => (error?.field === field ? `<p class="error" id="${field}_error">${escapeHtml(error.message)}</p>` : '');
  return document(
    'Create your organization',
    `<h1>Create your organization</h1>
${error && error.field === null ? `<p class="error" id="error">${escapeHtml(error.message)}</p>` : ''}
<form method="post" action="/new/${encodeURIComponent(token)}">
<label for="name">Organization name</label><input id="name" name="name" required maxlength="${MAX_NAME_LENGTH}" value="${attr(values.name)}">
${fieldError('name')}
<label for="org_type">Organization type</label><select id="org_type" name="org_type">${ORG_TYPES.map((o) => `<option value="${o.id}"${o.id === values.orgType ? ' selected' : ''}>${escapeHtml(o.name)}</option>`).join('')}</select>
${fieldError('org_type')}
<label for="subdomain">Organization URL</label>
<div style="display:flex;align-items:center;gap:.2rem"><span>${escapeHtml(site.protocol)}//</span><input id="subdomain" name="subdomain" maxlength="40" autocapitalize="none" spellcheck="false" value="${attr(values.subdomain)}" style="flex:1"><span>.${escapeHtml(site.host)}</span></div>
<p><small>Lowercase letters, numbers and '-', at least 3. Empty: the site's own address, ${escapeHtml(ctx.hosts.realmUrl(''))}, if no organization has it.</small></p>
${fieldError('subdomain')}
<label for="full_name">Your full name</label><input id="full_name" name="full_name" required value="${attr(values.fullName)}">
${fieldError('full_name')}
<label for="email">Your email</label><input id="email" name="email" type="email" required value="${attr(values.email)}">
${fieldError('email')}
<label for="password">Password (at least ${MIN_PASSWORD_LENGTH} characters)</label><input id="password" name="password" type="password" required minlength="${MIN_PASSWORD_LENGTH}" autocomplete="new-password">
<label for="password2">Password again</label><input id="password2" name="password2" type="password" required autocomplete="new-password">
${fieldError('password')}
<button id="submit" type="submit">Create organization</button>
</form>`,
  );
}

/** A link that is unknown, used or expired: a page that says so (404, as the invitation page). */
const invalid = () =>
  html(document('Organization creation link', `<h1>Create your organization</h1><p class="error" id="error">This organization creation link is invalid, has expired or has already been used. Ask the server's administrator for a new one.</p>`), 404);

/** Whether the directory accepts the link now (unknown, used and expired links are refused with 400). */
async function linkUsable(ctx: PageContext, token: string): Promise<boolean> {
  try {
    await ctx.actors.call(directoryRef, DIRECTORY_ID, { type: 'checkOrganizationLink', caller: SERVER_CALLER, token });
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.status === 400) return false;
    throw err;
  }
}

/** The form's own rules, checked before the directory is asked; the subdomain's are the directory's. */
function checkForm(v: Values, password: string, password2: string): void {
  const fail = (field: string, message: string) => {
    throw badRequest(message, { var_name: field });
  };
  if (!v.name) fail('name', 'Enter a name for the organization.');
  if ([...v.name].length > MAX_NAME_LENGTH) fail('name', `The organization's name can be at most ${MAX_NAME_LENGTH} characters long.`);
  if (!v.fullName) fail('full_name', 'Enter your full name.');
  if (!EMAIL.test(v.email)) fail('email', 'Enter a valid email address.');
  if ([...password].length < MIN_PASSWORD_LENGTH) fail('password', `The password is too weak (at least ${MIN_PASSWORD_LENGTH} characters).`);
  if ([...password].length > MAX_PASSWORD_LENGTH) fail('password', `The password is too long (at most ${MAX_PASSWORD_LENGTH} characters).`);
  if (password !== password2) fail('password', 'The two passwords do not match.');
}

/** The field an error from the form or the directory is about (`var_name`), when the form has it. */
function fieldOf(err: ApiError): string | null {
  const field = err.extra.var_name;
  return typeof field === 'string' && ['name', 'org_type', 'subdomain', 'full_name', 'email', 'password'].includes(field) ? field : null;
}

function created(name: string, realmUrl: string, email: string): string {
  return document(
    `${name} is ready`,
    `<h1 id="created">${escapeHtml(name)} is ready</h1>
<p>Your organization is at <a id="realm_url" href="${attr(realmUrl)}">${escapeHtml(realmUrl)}</a>, and you are its owner.</p>
<p>Sign in there with your email, <strong id="email">${escapeHtml(email)}</strong>, and the password you chose. An API client gets your API key from it:</p>
<pre id="sign_in">curl -sS -X POST \\
  ${escapeHtml(realmUrl)}/api/v1/fetch_api_key \\
  --data-urlencode username=${escapeHtml(email)} \\
  --data-urlencode password='your password'</pre>
<p>and a <code>~/.zuliprc</code> with <code>email=</code>, that <code>key=</code> and <code>site=${escapeHtml(realmUrl)}</code> under <code>[api]</code> lets Zulip's clients use it.</p>`,
  );
}

export const newOrganizationPage: Page = {
  method: 'GET',
  path: '/new/{token}',
  organization: 'none',
  async handle(ctx, params) {
    const token = params.get('token') ?? '';
    if (!(await linkUsable(ctx, token))) return invalid();
    return html(form(ctx, token, valuesOf(params), null));
  },
};

export const newOrganizationSubmit: Page = {
  method: 'POST',
  path: '/new/{token}',
  organization: 'none',
  async handle(ctx, params) {
    const token = params.get('token') ?? '';
    if (!(await linkUsable(ctx, token))) return invalid();
    const values = valuesOf(params);
    const password = params.get('password') ?? '';
    try {
      checkForm(values, password, params.get('password2') ?? '');
      // The directory checks the subdomain and the link again, creates the realm with its owner and uses the link up, in one commit.
      const r = await ctx.actors.call(directoryRef, DIRECTORY_ID, {
        type: 'createOrganization',
        caller: SERVER_CALLER,
        subdomain: values.subdomain,
        name: values.name,
        orgType: values.orgType,
        users: [{ email: values.email, fullName: values.fullName, role: Role.OWNER, canCreateUsers: true, canChangeUserEmails: true, password }],
        link: token,
      });
      return html(created(r.organization.name, ctx.hosts.realmUrl(r.organization.subdomain), values.email));
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500) throw err;
      // Another request may have used the link since it was checked above.
      if (!(await linkUsable(ctx, token))) return invalid();
      return html(form(ctx, token, values, { message: err.message, field: fieldOf(err) }), 400);
    }
  },
};
