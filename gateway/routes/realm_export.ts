/**
 * Organization exports: POST /export/realm, GET /export/realm, DELETE
 * /export/realm/{export_id}, GET /export/realm/consents
 * (`actors/realm/actions/organization/realm_export.ts`). The archive itself is a page
 * (`gateway/pages/realm_export.ts`).
 */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { int } from '../params.ts';
import { caller, me, route } from '../route.ts';

const realm = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);

export const requestExport = route({
  method: 'POST',
  path: '/export/realm',
  auth: 'required',
  // public, full_with_consent or full_without_consent (FL 449; integers before); checked by the realm after the caller's role, as Zulip does.
  params: { export_type: z.string().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'requestExport', caller: caller(ctx), exportType: p.export_type ?? 'public' });
  },
});

export const listExports = route({
  method: 'GET',
  path: '/export/realm',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'listExports', caller: caller(ctx) });
  },
});

export const deleteExport = route({
  method: 'DELETE',
  path: '/export/realm/{export_id}',
  auth: 'required',
  params: { export_id: int().pipe(z.number().int().nonnegative()) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'deleteExport', caller: caller(ctx), id: p.export_id });
  },
});

export const exportConsents = route({
  method: 'GET',
  path: '/export/realm/consents',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'exportConsents', caller: caller(ctx) });
  },
});
