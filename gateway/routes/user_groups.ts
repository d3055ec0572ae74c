/**
 * User groups: POST /user_groups/create, GET /user_groups, PATCH
 * /user_groups/{user_group_id}, POST .../deactivate, POST .../members, POST
 * .../subgroups, and the membership reads GET .../members,
 * .../members/{user_id} and .../subgroups.
 */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { GroupSettingValue, USER_GROUP_SETTINGS, type UserGroupSetting } from '../../storage/tables.ts';
import { bool, int, json, str, type ParamShape } from '../params.ts';
import { caller, me, route } from '../route.ts';

const realmOf = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);
const GroupId = int().pipe(z.number().int().nonnegative());
const Ids = json(z.array(z.number().int()));
const Change = json(z.object({ new: GroupSettingValue, old: GroupSettingValue.optional() }).strict());

export const createGroup = route({
  method: 'POST',
  path: '/user_groups/create',
  auth: 'required',
  params: {
    name: str(),
    description: str(),
    members: Ids.optional(),
    subgroups: Ids.optional(),
    ...(Object.fromEntries(USER_GROUP_SETTINGS.map((k) => [k, json(GroupSettingValue).optional()])) as ParamShape),
  },
  async handle(ctx, params) {
    const p = params as Record<string, unknown> & { name: string; description: string; members?: number[]; subgroups?: number[] };
    const settings = Object.fromEntries(USER_GROUP_SETTINGS.filter((k) => p[k] !== undefined).map((k) => [k, p[k]])) as Partial<Record<UserGroupSetting, z.infer<typeof GroupSettingValue>>>;
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'createGroup', caller: caller(ctx), name: p.name, description: p.description, members: p.members ?? [], subgroups: p.subgroups ?? [], settings });
  },
});

export const listGroups = route({
  method: 'GET',
  path: '/user_groups',
  auth: 'required',
  params: { include_deactivated_groups: bool().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'listGroups', caller: caller(ctx), includeDeactivated: p.include_deactivated_groups ?? false });
  },
});

export const updateGroup = route({
  method: 'PATCH',
  path: '/user_groups/{user_group_id}',
  auth: 'required',
  params: {
    user_group_id: GroupId,
    name: str().optional(),
    description: str().optional(),
    deactivated: bool().optional(),
    ...(Object.fromEntries(USER_GROUP_SETTINGS.map((k) => [k, Change.optional()])) as ParamShape),
  },
  async handle(ctx, params) {
    const p = params as Record<string, unknown> & { user_group_id: number; name?: string; description?: string; deactivated?: boolean };
    const settings = Object.fromEntries(USER_GROUP_SETTINGS.filter((k) => p[k] !== undefined).map((k) => [k, p[k]])) as Partial<Record<UserGroupSetting, { new: z.infer<typeof GroupSettingValue>; old?: z.infer<typeof GroupSettingValue> }>>;
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'updateGroup', caller: caller(ctx), groupId: p.user_group_id, name: p.name ?? null, description: p.description ?? null, settings, deactivated: p.deactivated ?? null });
  },
});

export const deactivateGroup = route({
  method: 'POST',
  path: '/user_groups/{user_group_id}/deactivate',
  auth: 'required',
  params: { user_group_id: GroupId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'deactivateGroup', caller: caller(ctx), groupId: p.user_group_id });
  },
});

export const updateGroupMembers = route({
  method: 'POST',
  path: '/user_groups/{user_group_id}/members',
  auth: 'required',
  params: { user_group_id: GroupId, add: Ids.optional(), delete: Ids.optional(), add_subgroups: Ids.optional(), delete_subgroups: Ids.optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), {
      type: 'updateGroupMembers',
      caller: caller(ctx),
      groupId: p.user_group_id,
      add: p.add ?? [],
      remove: p.delete ?? [],
      addSubgroups: p.add_subgroups ?? [],
      removeSubgroups: p.delete_subgroups ?? [],
    });
  },
});

/** The older way to change subgroups: `add` and `delete` are subgroup IDs. */
export const updateGroupSubgroups = route({
  method: 'POST',
  path: '/user_groups/{user_group_id}/subgroups',
  auth: 'required',
  params: { user_group_id: GroupId, add: Ids.optional(), delete: Ids.optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'updateGroupMembers', caller: caller(ctx), groupId: p.user_group_id, add: [], remove: [], addSubgroups: p.add ?? [], removeSubgroups: p.delete ?? [] });
  },
});

export const groupMembers = route({
  method: 'GET',
  path: '/user_groups/{user_group_id}/members',
  auth: 'required',
  params: { user_group_id: GroupId, direct_member_only: bool().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'groupMembers', caller: caller(ctx), groupId: p.user_group_id, directOnly: p.direct_member_only ?? false });
  },
});

export const isGroupMember = route({
  method: 'GET',
  path: '/user_groups/{user_group_id}/members/{user_id}',
  auth: 'required',
  params: { user_group_id: GroupId, user_id: int(), direct_member_only: bool().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'isGroupMember', caller: caller(ctx), groupId: p.user_group_id, userId: p.user_id, directOnly: p.direct_member_only ?? false });
  },
});

export const groupSubgroups = route({
  method: 'GET',
  path: '/user_groups/{user_group_id}/subgroups',
  auth: 'required',
  params: { user_group_id: GroupId, direct_subgroup_only: bool().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'groupSubgroups', caller: caller(ctx), groupId: p.user_group_id, directOnly: p.direct_subgroup_only ?? false });
  },
});
