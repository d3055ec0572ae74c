/** Code playgrounds: POST /realm/playgrounds, DELETE /realm/playgrounds/{playground_id}. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { badRequest, missingParam } from '../../lib/errors.ts';
import { int, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

const realm = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);

/**
 * `url_prefix` is the name before FL 196, kept for clients that read this
 * server's level below it: Zulip turned each prefix into the template
 * `<prefix>{code}`, so a prefix is taken as that template.
 */
function template(p: { url_template?: string; url_prefix?: string }): string {
  if (p.url_template !== undefined) return p.url_template;
  if (p.url_prefix === undefined) throw missingParam('url_template');
  if (/[{}]/.test(p.url_prefix)) throw badRequest('Invalid URL template.', { errors: { url_template: ['Invalid URL template.'] } });
  return `${p.url_prefix}{code}`;
}

export const createPlayground = route({
  method: 'POST',
  path: '/realm/playgrounds',
  auth: 'required',
  params: { name: str(), pygments_language: str(), url_template: str().optional(), url_prefix: str().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'createPlayground', caller: caller(ctx), name: p.name, pygmentsLanguage: p.pygments_language, urlTemplate: template(p) });
  },
});

export const deletePlayground = route({
  method: 'DELETE',
  path: '/realm/playgrounds/{playground_id}',
  auth: 'required',
  params: { playground_id: int().pipe(z.number().int().nonnegative()) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'deletePlayground', caller: caller(ctx), id: p.playground_id });
  },
});
