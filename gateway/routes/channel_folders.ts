/** Channel folders (FL 389): create, list, update, reorder. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { bool, int, json, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const createChannelFolder = route({
  method: 'POST',
  path: '/channel_folders/create',
  auth: 'required',
  params: { name: str(), description: str() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'createChannelFolder', caller: caller(ctx), name: p.name, description: p.description });
  },
});

export const listChannelFolders = route({
  method: 'GET',
  path: '/channel_folders',
  auth: 'required',
  params: { include_archived: bool().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'listChannelFolders', caller: caller(ctx), includeArchived: p.include_archived ?? false });
  },
});

export const updateChannelFolder = route({
  method: 'PATCH',
  path: '/channel_folders/{channel_folder_id}',
  auth: 'required',
  params: { channel_folder_id: int(), name: str().optional(), description: str().optional(), is_archived: bool().optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'updateChannelFolder', caller: caller(ctx), id: p.channel_folder_id, name: p.name, description: p.description, isArchived: p.is_archived });
  },
});

export const reorderChannelFolders = route({
  method: 'PATCH',
  path: '/channel_folders',
  auth: 'required',
  params: { order: json(z.array(z.number().int())) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'reorderChannelFolders', caller: caller(ctx), order: p.order });
  },
});
