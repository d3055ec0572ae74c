/** The organization's email domains: GET, POST /realm/domains; PATCH, DELETE /realm/domains/{domain}. */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { bool, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

const realm = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);

export const listRealmDomains = route({
  method: 'GET',
  path: '/realm/domains',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'listRealmDomains', caller: caller(ctx) });
  },
});

export const addRealmDomain = route({
  method: 'POST',
  path: '/realm/domains',
  auth: 'required',
  params: { domain: str(), allow_subdomains: bool() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'addRealmDomain', caller: caller(ctx), domain: p.domain, allowSubdomains: p.allow_subdomains });
  },
});

export const changeRealmDomain = route({
  method: 'PATCH',
  path: '/realm/domains/{domain}',
  auth: 'required',
  params: { domain: str(), allow_subdomains: bool() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'changeRealmDomain', caller: caller(ctx), domain: p.domain, allowSubdomains: p.allow_subdomains });
  },
});

export const removeRealmDomain = route({
  method: 'DELETE',
  path: '/realm/domains/{domain}',
  auth: 'required',
  params: { domain: str() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'removeRealmDomain', caller: caller(ctx), domain: p.domain });
  },
});
