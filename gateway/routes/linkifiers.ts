/** Linkifiers: GET /realm/linkifiers, POST /realm/filters, PATCH/DELETE /realm/filters/{filter_id}, PATCH /realm/linkifiers. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { missingParam } from '../../lib/errors.ts';
import { int, json, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

const FilterId = int().pipe(z.number().int().nonnegative());
/** A string, or JSON null (clients send `null` to mean "no value"). */
const NullableStr = str().transform((s) => (s === 'null' ? null : s));
const Templates = json(z.array(z.string()));
const realm = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);

export const listLinkifiers = route({
  method: 'GET',
  path: '/realm/linkifiers',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'listLinkifiers', caller: caller(ctx) });
  },
});

/**
 * `url_format_string` is the name before FL 176, kept for compatibility (the
 * contract's Versioning): clients that read this server's feature level below
 * 176 send it (the Python client's add_realm_filter does). Its `%(name)s`
 * groups become the template's `{name}`; a value already in template form
 * passes unchanged.
 */
const fields = { pattern: str(), url_template: str().optional(), url_format_string: str().optional(), example_input: NullableStr.optional(), reverse_template: NullableStr.optional(), alternative_url_templates: Templates.optional() };
type P = { pattern: string; url_template?: string; url_format_string?: string; example_input?: string | null; reverse_template?: string | null; alternative_url_templates?: string[] };
const fromFormatString = (f: string): string => f.replace(/%\((\w+)\)s|%%/g, (m, name: string | undefined) => (name ? `{${name}}` : '%'));
function toFields(p: P) {
  const urlTemplate = p.url_template ?? (p.url_format_string === undefined ? undefined : fromFormatString(p.url_format_string));
  if (urlTemplate === undefined) throw missingParam('url_template');
  return { pattern: p.pattern, urlTemplate, exampleInput: p.example_input, reverseTemplate: p.reverse_template, alternativeUrlTemplates: p.alternative_url_templates };
}

export const createLinkifier = route({
  method: 'POST',
  path: '/realm/filters',
  auth: 'required',
  params: fields,
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'createLinkifier', caller: caller(ctx), ...toFields(p) });
  },
});

export const updateLinkifier = route({
  method: 'PATCH',
  path: '/realm/filters/{filter_id}',
  auth: 'required',
  params: { filter_id: FilterId, ...fields },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'updateLinkifier', caller: caller(ctx), id: p.filter_id, ...toFields(p) });
  },
});

export const deleteLinkifier = route({
  method: 'DELETE',
  path: '/realm/filters/{filter_id}',
  auth: 'required',
  params: { filter_id: FilterId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'deleteLinkifier', caller: caller(ctx), id: p.filter_id });
  },
});

export const reorderLinkifiers = route({
  method: 'PATCH',
  path: '/realm/linkifiers',
  auth: 'required',
  params: { ordered_linkifier_ids: json(z.array(z.number().int())) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'reorderLinkifiers', caller: caller(ctx), order: p.ordered_linkifier_ids });
  },
});
