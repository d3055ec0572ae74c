/** Custom profile fields: GET/POST/PATCH /realm/profile_fields, PATCH and DELETE /realm/profile_fields/{field_id}, PATCH /users/me/profile_data. */
import { z } from 'zod';
import { ProfileDataEntry } from '../../actors/realm/actions/people/profile_fields.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { bool, int, json, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

const realmOf = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);
const FieldId = int().pipe(z.number().int().nonnegative());
const FieldData = json(z.unknown());

const fieldParams = {
  name: str().optional(),
  hint: str().optional(),
  field_data: FieldData.optional(),
  display_in_profile_summary: bool().optional(),
  required: bool().optional(),
  editable_by_user: bool().optional(),
  use_for_user_matching: bool().optional(),
};

const fieldFields = (p: { name?: string; hint?: string; field_data?: unknown; display_in_profile_summary?: boolean; required?: boolean; editable_by_user?: boolean; use_for_user_matching?: boolean }) => ({
  name: p.name ?? null,
  hint: p.hint ?? null,
  fieldData: p.field_data ?? null,
  displayInProfileSummary: p.display_in_profile_summary ?? null,
  required: p.required ?? null,
  editableByUser: p.editable_by_user ?? null,
  useForUserMatching: p.use_for_user_matching ?? null,
});

export const listProfileFields = route({
  method: 'GET',
  path: '/realm/profile_fields',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'listProfileFields', caller: caller(ctx) });
  },
});

export const createProfileField = route({
  method: 'POST',
  path: '/realm/profile_fields',
  auth: 'required',
  params: { field_type: int(), ...fieldParams },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'createProfileField', caller: caller(ctx), fieldType: p.field_type, ...fieldFields(p) });
  },
});

export const reorderProfileFields = route({
  method: 'PATCH',
  path: '/realm/profile_fields',
  auth: 'required',
  params: { order: json(z.array(z.number().int())) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'reorderProfileFields', caller: caller(ctx), order: p.order });
  },
});

export const updateProfileField = route({
  method: 'PATCH',
  path: '/realm/profile_fields/{field_id}',
  auth: 'required',
  params: { field_id: FieldId, ...fieldParams },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'updateProfileField', caller: caller(ctx), id: p.field_id, ...fieldFields(p) });
  },
});

export const deleteProfileField = route({
  method: 'DELETE',
  path: '/realm/profile_fields/{field_id}',
  auth: 'required',
  params: { field_id: FieldId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'deleteProfileField', caller: caller(ctx), id: p.field_id });
  },
});

export const updateOwnProfileData = route({
  method: 'PATCH',
  path: '/users/me/profile_data',
  auth: 'required',
  params: { data: json(z.array(ProfileDataEntry)) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'updateOwnProfileData', caller: caller(ctx), data: p.data });
  },
});
