/**
 * Whether an email domain belongs to a disposable-address provider (Zulip's
 * `is_disposable_domain`, which reads the PyPI `disposable-email-domains`
 * list; the npm package of the same name carries that community list). The
 * ~120,000 domains are read on first use, once per process (~50 ms, a few MB).
 */
import { createRequire } from 'node:module';

let domains: ReadonlySet<string> | null = null;

export function isDisposableDomain(domain: string): boolean {
  domains ??= new Set(createRequire(import.meta.url)('disposable-email-domains') as string[]);
  return domains.has(domain.toLowerCase());
}
