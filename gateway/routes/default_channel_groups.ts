/**
 * Default channel groups: POST /default_stream_groups/create, PATCH and
 * DELETE /default_stream_groups/{group_id}, PATCH
 * /default_stream_groups/{group_id}/streams (Zulip's paths). Names and
 * descriptions are plain strings (FL 63); `stream_names` is JSON.
 */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { int, json, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

const realm = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);
const GroupId = int().pipe(z.number().int().nonnegative());
const Names = json(z.array(z.string()));

export const createDefaultChannelGroup = route({
  method: 'POST',
  path: '/default_stream_groups/create',
  auth: 'required',
  params: { group_name: str(), description: str(), stream_names: Names },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'createDefaultChannelGroup', caller: caller(ctx), name: p.group_name, description: p.description, streamNames: p.stream_names });
  },
});

export const updateDefaultChannelGroup = route({
  method: 'PATCH',
  path: '/default_stream_groups/{group_id}',
  auth: 'required',
  params: { group_id: GroupId, new_group_name: str().optional(), new_description: str().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'updateDefaultChannelGroup', caller: caller(ctx), id: p.group_id, newName: p.new_group_name, newDescription: p.new_description });
  },
});

export const updateDefaultChannelGroupChannels = route({
  method: 'PATCH',
  path: '/default_stream_groups/{group_id}/streams',
  auth: 'required',
  params: { group_id: GroupId, op: str(), stream_names: Names },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'updateDefaultChannelGroupChannels', caller: caller(ctx), id: p.group_id, op: p.op, streamNames: p.stream_names });
  },
});

export const removeDefaultChannelGroup = route({
  method: 'DELETE',
  path: '/default_stream_groups/{group_id}',
  auth: 'required',
  params: { group_id: GroupId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'removeDefaultChannelGroup', caller: caller(ctx), id: p.group_id });
  },
});
