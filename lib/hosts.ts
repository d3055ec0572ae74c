/**
 * Organizations by host name, as Zulip hosts one organization per subdomain
 * of the site's domain: with `PARLEY_SITE_URL=https://chat.example.com`,
 * `acme.chat.example.com` is the organization whose subdomain is `acme`, and
 * `chat.example.com` itself (or any host that is not under it, as Zulip's
 * `get_subdomain` answers) is the one whose subdomain is `''`.
 */

/** Zulip's subdomain rules (`zerver/forms.py`, `check_subdomain_available`). */
const SUBDOMAIN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const MIN_LENGTH = 3;
const MAX_LENGTH = 40;
/** Names a deployment keeps for itself (a subset of Zulip's reserved subdomains). */
const RESERVED = new Set(['www', 'api', 'static', 'chat', 'help', 'admin', 'mail', 'email', 'support', 'status', 'metrics', 'zulip', 'parley', 'login', 'signup', 'new', 'app', 'apps', 'docs', 'blog', 'dev', 'test', 'staging']);

/** Why a subdomain cannot be used (Zulip's wording), or null when it can. `''` is the root domain's organization. */
export function subdomainProblem(subdomain: string): string | null {
  if (subdomain === '') return null;
  if (!SUBDOMAIN.test(subdomain)) return "Subdomain can only have lowercase letters, numbers, and '-'s.";
  if (subdomain.length < MIN_LENGTH) return `Subdomain needs to have length ${MIN_LENGTH} or greater.`;
  if (subdomain.length > MAX_LENGTH) return `Subdomain can be at most ${MAX_LENGTH} characters long.`;
  if (RESERVED.has(subdomain)) return 'Subdomain reserved. Please choose a different one.';
  return null;
}

const hostname = (host: string): string => host.trim().toLowerCase().replace(/:\d+$/, '').replace(/\.$/, '');

/** The host names a site serves organizations under: its own, with every organization one label below it. */
export class SiteHosts {
  private readonly root: string;

  constructor(readonly siteUrl: string) {
    this.root = new URL(siteUrl).hostname.toLowerCase();
  }

  /** The subdomain a request's `Host` names (ports ignored); `''` for the root domain and for hosts not under it. */
  subdomainOf(host: string): string {
    const name = hostname(host);
    if (name.endsWith(`.${this.root}`)) {
      const sub = name.slice(0, -this.root.length - 1);
      // Only one label below the root names an organization (`a.b.root` is no organization's).
      return sub.includes('.') ? `\u0000${sub}` : sub;
    }
    return '';
  }

  /** The organization's URL: the site's with the subdomain as the first label of its host. */
  realmUrl(subdomain: string): string {
    return realmUrl(this.siteUrl, subdomain);
  }
}

/** The URL of the organization at `subdomain` of the site at `siteUrl`, without a trailing slash. */
export function realmUrl(siteUrl: string, subdomain: string): string {
  const url = new URL(siteUrl);
  // Built as text: URL's hostname setter refuses `<label>.<IPv4 address>` (a test site on 127.0.0.1).
  return subdomain ? `${url.protocol}//${subdomain}.${url.host}` : url.origin;
}
