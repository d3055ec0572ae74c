/**
 * The organization's email domains: GET, POST /realm/domains and PATCH,
 * DELETE /realm/domains/{domain} (FL 63; owners only since FL 143), with
 * `realm_domains` events to every active user (Zulip's
 * `zerver/actions/realm_domains.py`). With `emails_restricted_to_domains`,
 * only addresses of these domains may join; otherwise, with
 * `disallow_disposable_email_addresses`, no disposable address may
 * (`emailProblem`).
 */
import { z } from 'zod';
import { isDisposableDomain } from '../../../../lib/disposable.ts';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { type RealmSettings, T } from '../../../../storage/tables.ts';
import { toRealm } from '../../../events/delivery.ts';
import { Role } from '../../../model.ts';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

type Domain = RealmSettings['domains'][number];

const domainObject = (d: Domain) => ({ domain: d.domain, allow_subdomains: d.allowSubdomains });

/** The `realm_domains` register key and GET /realm/domains list. */
export const domainsOf = (state: Readonly<RealmState>) => state.org.settings.domains.map(domainObject);

/** Zulip's `validate_domain`, its messages prefixed "Invalid domain: " as its view does. */
function checkDomain(raw: string): string {
  const domain = raw.trim().toLowerCase();
  const why = (() => {
    if (!domain) return "Domain can't be empty.";
    if (!domain.includes('.')) return 'Domain must have at least one dot (.)';
    if (domain.length > 255) return 'Domain is too long';
    if (domain.startsWith('.') || domain.endsWith('.')) return 'Domain cannot start or end with a dot (.)';
    for (const part of domain.split('.')) {
      if (!part) return "Consecutive '.' are not allowed.";
      if (part.startsWith('-') || part.endsWith('-')) return "Subdomains cannot start or end with a '-'.";
      if (!/^[a-z0-9-]*$/.test(part)) return "Domain can only have letters, numbers, '.' and '-'s.";
    }
    return null;
  })();
  if (why) throw badRequest(`Invalid domain: ${why}`);
  return domain;
}

/** Why an address may not join the organization (Zulip's `DomainNotAllowedForRealmError`, `DisposableEmailError`, `EmailContainsPlusError`). */
export type EmailProblem = 'domain' | 'disposable' | 'plus';

/**
 * Zulip's `get_realm_email_validator`: when the organization restricts
 * addresses to its domains, one of them (or, where allowed, a subdomain of
 * one) without a `+` in the local part; otherwise, with
 * `disallow_disposable_email_addresses`, no disposable provider's. Null when
 * the address may join. O(domains).
 */
export function emailProblem(state: Readonly<RealmState>, email: string): EmailProblem | null {
  const at = email.lastIndexOf('@');
  const host = email.slice(at + 1).toLowerCase();
  const st = state.org.settings;
  if (!st.emailsRestrictedToDomains) return st.disallowDisposableEmailAddresses && isDisposableDomain(host) ? 'disposable' : null;
  if (email.slice(0, at).includes('+')) return 'plus';
  return st.domains.some((d) => host === d.domain || (d.allowSubdomains && host.endsWith(`.${d.domain}`))) ? null : 'domain';
}

function requireOwner(state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }): void {
  if (actingUser(state, caller).role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner', 400);
}

function existing(state: Readonly<RealmState>, domain: string): Domain {
  const d = state.org.settings.domains.find((x) => x.domain === domain);
  if (!d) throw badRequest(`No entry found for domain ${domain}.`);
  return d;
}

/** Replaces the domain list (and the restriction flag) in one write. */
function save(state: RealmState, tx: Parameters<Parameters<typeof action>[0]['apply']>[2], settings: RealmSettings): void {
  state.org.settings = settings;
  tx.write(T.realmSettings.at(state.realmId).put(settings));
}

export const listRealmDomains = query({
  type: 'listRealmDomains',
  fields: z.object({}),
  run(state, msg) {
    actingUser(state, msg.caller);
    return { domains: domainsOf(state) };
  },
});

export const addRealmDomain = action({
  type: 'addRealmDomain',
  fields: z.object({ domain: z.string(), allowSubdomains: z.boolean() }),
  check(state, msg): Domain {
    requireOwner(state, msg.caller);
    const domain = checkDomain(msg.domain);
    if (state.org.settings.domains.some((d) => d.domain === domain)) throw badRequest(`The domain ${domain} is already a part of your organization.`);
    return { domain, allowSubdomains: msg.allowSubdomains };
  },
  apply(state, d, tx) {
    save(state, tx, { ...state.org.settings, domains: [...state.org.settings.domains, d] });
    // Zulip answers the new row's ID with the domain; the list's position stands for it here.
    return { new_domain: [state.org.settings.domains.length, d.domain] };
  },
  events: (state, d) => [toRealm(state.realmId, { type: 'realm_domains', op: 'add', realm_domain: domainObject(d) })],
});

export const changeRealmDomain = action({
  type: 'changeRealmDomain',
  fields: z.object({ domain: z.string(), allowSubdomains: z.boolean() }),
  check(state, msg): Domain {
    requireOwner(state, msg.caller);
    return { domain: existing(state, msg.domain).domain, allowSubdomains: msg.allowSubdomains };
  },
  apply(state, d, tx) {
    save(state, tx, { ...state.org.settings, domains: state.org.settings.domains.map((x) => (x.domain === d.domain ? d : x)) });
    return {};
  },
  events: (state, d) => [toRealm(state.realmId, { type: 'realm_domains', op: 'change', realm_domain: domainObject(d) })],
});

export const removeRealmDomain = action({
  type: 'removeRealmDomain',
  fields: z.object({ domain: z.string() }),
  check(state, msg) {
    requireOwner(state, msg.caller);
    const d = existing(state, msg.domain);
    const domains = state.org.settings.domains.filter((x) => x.domain !== d.domain);
    // As Zulip: without domains the restriction would refuse everyone, so the last one's removal lifts it.
    return { domain: d.domain, domains, liftRestriction: domains.length === 0 && state.org.settings.emailsRestrictedToDomains };
  },
  apply(state, p, tx) {
    save(state, tx, { ...state.org.settings, domains: p.domains, emailsRestrictedToDomains: p.liftRestriction ? false : state.org.settings.emailsRestrictedToDomains });
    return {};
  },
  events(state, p) {
    return [
      ...(p.liftRestriction ? [toRealm(state.realmId, { type: 'realm', op: 'update', property: 'emails_restricted_to_domains', value: false })] : []),
      toRealm(state.realmId, { type: 'realm_domains', op: 'remove', domain: p.domain }),
    ];
  },
});
