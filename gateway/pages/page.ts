/**
 * Pages: routes outside /api/v1 that answer with HTML or a redirect (the
 * sign-up page of an invitation, the video-call provider's OAuth steps).
 * They take the same parameters as API routes (query string and form body)
 * and reach actors the same way; they handle their own errors, as a page.
 */
import { PathTable } from '../path.ts';
import type { ActorClient } from '../../actors/runtime/client.ts';
import type { RawParams } from '../params.ts';
import type { SiteHosts } from '../../lib/hosts.ts';
import type { Authenticated } from '../../actors/realm/actions/people/users.ts';

export interface PageContext {
  actors: ActorClient;
  /** The organization of the request's host (0 on pages declared `organization: 'none'`). */
  realmId: number;
  /** Its URL, for links the page shows. */
  realmUrl: string;
  /** The site's host names (the creation page shows where a new organization will live). */
  hosts: SiteHosts;
  /**
   * The request's user, for pages that serve the API's clients (files):
   * from its HTTP Basic credentials, or (`apiKey`) from a key given alone;
   * throws UNAUTHORIZED as the API does.
   */
  authenticate(apiKey: string | null): Promise<Authenticated>;
  /** The request's User-Agent header and address (the new-login email names them). */
  userAgent: string;
  ip: string;
}

export interface PageReply {
  status: number;
  contentType: string;
  body: string | Buffer;
  headers?: Record<string, string>;
}

export interface Page {
  method: 'GET' | 'POST';
  /** `{name}` segments are path parameters. */
  path: string;
  /** `none`: served on any host, with or without an organization (the organization-creation page). */
  organization?: 'none';
  /** Checks a password: the address's credential budget applies, and a 401 answer counts against it (as an API route's `checksCredentials`). */
  checksCredentials?: true;
  handle(ctx: PageContext, params: RawParams): Promise<PageReply>;
}

export const html = (body: string, status = 200): PageReply => ({ status, contentType: 'text/html; charset=utf-8', body });
export const redirect = (location: string): PageReply => ({ status: 302, contentType: 'text/plain; charset=utf-8', body: `Redirecting to ${location}`, headers: { Location: location } });
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A page's HTML document. */
export function document(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title><style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;box-sizing:border-box}button{margin-top:1rem;padding:.5rem 1rem}.error{color:#b00020}pre{background:#f4f4f4;padding:1rem;overflow-x:auto}</style></head><body>${body}</body></html>`;
}

const tables = new WeakMap<readonly Page[], PathTable<Page>>();

/** Finds the page for a method and path, with its path parameters. */
export function matchPage(pages: readonly Page[], method: string, path: string): { page: Page; params: RawParams } | null {
  let table = tables.get(pages);
  if (!table) {
    table = new PathTable<Page>();
    for (const page of pages) table.add(page.path, page);
    tables.set(pages, table);
  }
  const hit = table.match(path).find((m) => m.value.method === method);
  return hit ? { page: hit.value, params: hit.params } : null;
}
