/**
 * Channel folders (FL 389): POST /channel_folders/create, GET
 * /channel_folders, PATCH /channel_folders/{id} (rename, describe, archive)
 * and PATCH /channel_folders (reorder). Administrators manage them; everyone
 * sees them (register key `channel_folders`, `channel_folder` events).
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { type ChannelFolderRecord, T } from '../../../../storage/tables.ts';
import { toRealm } from '../../../events/delivery.ts';
import type { ChannelFolderObject } from '../../../events/schema.ts';
import { isAdmin } from '../../../model.ts';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { renderDescription } from '../../rules/markdown.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const MAX_CHANNEL_FOLDER_NAME_LENGTH = 60;
export const MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH = 1024;

export function formatFolder(f: ChannelFolderRecord): ChannelFolderObject {
  return { id: f.id, name: f.name, description: f.description, rendered_description: f.renderedDescription, order: f.order, creator_id: f.creatorId, date_created: f.dateCreated, is_archived: f.isArchived };
}

/** Every folder, in their order (the register key and GET /channel_folders). */
export function foldersOf(state: Readonly<RealmState>, includeArchived = true): ChannelFolderObject[] {
  return [...state.org.folders.values()].filter((f) => includeArchived || !f.isArchived).sort((a, b) => a.order - b.order || a.id - b.id).map(formatFolder);
}

function requireAdmin(state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }) {
  const user = actingUser(state, caller);
  if (!isAdmin(user)) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
  return user;
}

function checkName(state: Readonly<RealmState>, raw: string, except: number | null): string {
  const name = raw.trim();
  if (!name) throw badRequest("Channel folder name can't be empty.");
  if ([...name].length > MAX_CHANNEL_FOLDER_NAME_LENGTH) throw badRequest(`Channel folder name too long (limit: ${MAX_CHANNEL_FOLDER_NAME_LENGTH} characters).`);
  const bad = [...name].findIndex((ch) => /[\u0000-\u001f\u007f-\u009f]/.test(ch));
  if (bad !== -1) throw badRequest(`Invalid character in channel folder name, at position ${bad + 1}.`);
  for (const f of state.org.folders.values()) if (f.id !== except && f.name.toLowerCase() === name.toLowerCase()) throw badRequest('Channel folder name already in use');
  return name;
}

function checkDescription(raw: string): string {
  if ([...raw].length > MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH) throw badRequest(`Channel folder description too long (limit: ${MAX_CHANNEL_FOLDER_DESCRIPTION_LENGTH} characters).`);
  return raw;
}

function folderOf(state: Readonly<RealmState>, id: number): ChannelFolderRecord {
  const f = state.org.folders.get(id);
  if (!f) throw badRequest('Invalid channel folder ID');
  return f;
}

export const createFolder = action({
  type: 'createChannelFolder',
  fields: z.object({ name: z.string(), description: z.string() }),
  check(state, msg) {
    const user = requireAdmin(state, msg.caller);
    const description = checkDescription(msg.description);
    const order = Math.max(-1, ...[...state.org.folders.values()].map((f) => f.order)) + 1;
    return { name: checkName(state, msg.name, null), description, creatorId: user.id, order };
  },
  apply(state, p, tx) {
    const folder: ChannelFolderRecord = {
      id: state.org.take('folder', state.realmId, tx),
      name: p.name,
      description: p.description,
      renderedDescription: renderDescription(p.description),
      order: p.order,
      creatorId: p.creatorId,
      dateCreated: Math.floor(Date.now() / 1000),
      isArchived: false,
    };
    state.org.folders.set(folder.id, folder);
    tx.write(T.channelFolders.at(state.realmId, folder.id).put(folder));
    return folder;
  },
  events: (state, _p, folder) => [toRealm(state.realmId, { type: 'channel_folder', op: 'add', channel_folder: formatFolder(folder) })],
  reply: (folder) => ({ channel_folder_id: folder.id }),
});

export const listFolders = query({
  type: 'listChannelFolders',
  fields: z.object({ includeArchived: z.boolean() }),
  run(state, msg) {
    actingUser(state, msg.caller);
    return { channel_folders: foldersOf(state, msg.includeArchived) };
  },
});

export const updateFolder = action({
  type: 'updateChannelFolder',
  fields: z.object({ id: z.number().int(), name: z.string().optional(), description: z.string().optional(), isArchived: z.boolean().optional() }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    const old = folderOf(state, msg.id);
    if (msg.name === undefined && msg.description === undefined && msg.isArchived === undefined) throw badRequest('No fields to update');
    const next = { ...old };
    const data: { name?: string; description?: string; rendered_description?: string; is_archived?: boolean } = {};
    if (msg.name !== undefined) {
      next.name = checkName(state, msg.name, old.id);
      if (next.name !== old.name) data.name = next.name;
    }
    if (msg.description !== undefined) {
      next.description = checkDescription(msg.description);
      next.renderedDescription = renderDescription(next.description);
      if (next.description !== old.description) Object.assign(data, { description: next.description, rendered_description: next.renderedDescription });
    }
    if (msg.isArchived !== undefined) {
      if (msg.isArchived && [...state.channels.values()].some((c) => c.folderId === old.id && !c.isArchived)) {
        throw badRequest('You need to remove all the channels from this folder to archive it.');
      }
      next.isArchived = msg.isArchived;
      if (next.isArchived !== old.isArchived) data.is_archived = next.isArchived;
    }
    return { folder: next, data };
  },
  apply(state, p, tx) {
    state.org.folders.set(p.folder.id, p.folder);
    tx.write(T.channelFolders.at(state.realmId, p.folder.id).put(p.folder));
    return {};
  },
  events(state, p) {
    if (!Object.keys(p.data).length) return [];
    return [toRealm(state.realmId, { type: 'channel_folder', op: 'update', channel_folder_id: p.folder.id, data: p.data })];
  },
});

export const reorderFolders = action({
  type: 'reorderChannelFolders',
  fields: z.object({ order: z.array(z.number().int()) }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    const ids = new Set(state.org.folders.keys());
    if (msg.order.length !== ids.size || new Set(msg.order).size !== ids.size || msg.order.some((id) => !ids.has(id))) throw badRequest('Invalid order mapping.');
    return msg.order;
  },
  apply(state, order, tx) {
    order.forEach((id, i) => {
      const f = { ...state.org.folders.get(id)!, order: i };
      state.org.folders.set(id, f);
      tx.write(T.channelFolders.at(state.realmId, id).put(f));
    });
    return {};
  },
  events(state, order) {
    return [toRealm(state.realmId, { type: 'channel_folder', op: 'reorder', order })];
  },
});
