/**
 * Custom emoji (Zulip's `actions/realm_emoji.py`): POST and DELETE
 * /realm/emoji/{emoji_name}, GET /realm/emoji and the image of each. The
 * image is stored in the FileStore before the check, under a fresh name that
 * only the committed row names (removed again when the check refuses);
 * deleting an emoji deactivates it (it stays listed, as reactions may still
 * use it).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { fileStoreFor, MAX_EMOJI_MIB } from '../../../../storage/files.ts';
import { type RealmEmojiRecord, T, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toRealm } from '../../../events/delivery.ts';
import type { RealmEmojiObject } from '../../../events/schema.ts';
import { isAdmin } from '../../../model.ts';
import { defineAction, defineQuery, later } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { unicodeCode } from '../../rules/emoji.ts';
import { realmGroupSetting } from './realm_settings.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const emojiImageUrl = (id: number): string => `/api/v1/realm/emoji/${id}/image`;

export function formatEmoji(e: RealmEmojiRecord): RealmEmojiObject {
  return { id: String(e.id), name: e.name, source_url: emojiImageUrl(e.id), still_url: null, deactivated: e.deactivated, author_id: e.authorId };
}

/** The `realm_emoji` register key and GET /realm/emoji: every custom emoji by ID. */
export function realmEmojiOf(state: Readonly<RealmState>): Record<string, RealmEmojiObject> {
  return Object.fromEntries([...state.emoji.values()].map((e) => [String(e.id), formatEmoji(e)]));
}

/** Active custom emoji by name, for reactions and rendering. */
export function activeEmojiByName(state: Readonly<RealmState>): Map<string, { id: string; deactivated: boolean }> {
  const out = new Map<string, { id: string; deactivated: boolean }>();
  for (const e of state.emoji.values()) if (!e.deactivated) out.set(e.name, { id: String(e.id), deactivated: false });
  return out;
}

function checkName(name: string): void {
  if (!name) throw badRequest('Emoji name is missing');
  if (!/^[0-9a-z._-]+$/.test(name) || /[._-]$/.test(name)) throw badRequest('Emoji names must contain only lowercase alphanumeric characters, dashes, underscores and periods, and must not end with a dash, underscore or period.');
}

/** Who may add custom emoji: the organization's can_add_custom_emoji_group (FL 307; members by default). */
const canAddEmoji = (state: Readonly<RealmState>, user: UserRecord) => state.can(realmGroupSetting(state, 'can_add_custom_emoji_group'), user);

function emojiEvents(state: Readonly<RealmState>, change: { op: 'add'; emoji: RealmEmojiRecord } | { op: 'edit'; emoji: RealmEmojiRecord }): Delivery[] {
  const modern = change.op === 'add' ? { type: 'realm_emoji' as const, op: 'add' as const, emoji: formatEmoji(change.emoji) } : { type: 'realm_emoji' as const, op: 'edit' as const, emoji_id: String(change.emoji.id), data: { deactivated: change.emoji.deactivated } };
  // Queues without individual_emoji_changes get the whole list (the queue picks one of the two).
  return [toRealm(state.realmId, { type: 'realm_emoji', op: 'update', realm_emoji: realmEmojiOf(state) }), toRealm(state.realmId, modern)];
}

export const addRealmEmoji = action({
  type: 'addRealmEmoji',
  fields: z.object({ name: z.string(), filename: z.string(), contentType: z.string(), data: z.string() }),
  async prepare(state, msg, ctx) {
    const user = actingUser(state, msg.caller);
    if (!canAddEmoji(state, user)) throw badRequest('Insufficient permission');
    checkName(msg.name);
    const data = Buffer.from(msg.data, 'base64');
    if (data.length > MAX_EMOJI_MIB * 1024 * 1024) throw badRequest(`Uploaded file is larger than the allowed limit of ${MAX_EMOJI_MIB} MiB`);
    if (!msg.contentType.startsWith('image/')) throw badRequest('Invalid image format');
    const path = `${state.realmId}/emoji/${randomBytes(12).toString('hex')}`;
    // Under a fresh name only the emoji's row will know: `discard` removes it if `check` refuses.
    await fileStoreFor(ctx.store).put(path, { contentType: msg.contentType, filename: msg.filename, data });
    return path;
  },
  discard: (path, ctx) => fileStoreFor(ctx.store).delete(path),
  check(state, msg, path) {
    const user = actingUser(state, msg.caller);
    if ([...state.emoji.values()].some((e) => e.name === msg.name && !e.deactivated)) throw badRequest('A custom emoji with this name already exists.');
    if (unicodeCode(msg.name) && !isAdmin(user)) throw badRequest('Only administrators can override default emoji.');
    return { name: msg.name, path, authorId: user.id };
  },
  apply(state, p, tx) {
    const e: RealmEmojiRecord = { id: state.take('emoji', tx), name: p.name, fileName: p.path, authorId: p.authorId, deactivated: false };
    state.emoji.set(e.id, e);
    tx.write(T.realmEmoji.at(state.realmId, e.id).put(e));
    return e;
  },
  events: (state, _p, e) => emojiEvents(state, { op: 'add', emoji: e }),
  reply: () => ({}),
});

export const deleteRealmEmoji = action({
  type: 'deleteRealmEmoji',
  fields: z.object({ name: z.string() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    const e = [...state.emoji.values()].find((x) => x.name === msg.name && !x.deactivated);
    // Zulip's ResourceNotFoundError: 404 since FL 190.
    if (!e) throw new ApiError('BAD_REQUEST', `Emoji '${msg.name}' does not exist`, 404);
    if (!isAdmin(user) && e.authorId !== user.id) throw badRequest('Must be an organization administrator or emoji author');
    return { ...e, deactivated: true };
  },
  apply(state, e, tx) {
    state.emoji.set(e.id, e);
    tx.write(T.realmEmoji.at(state.realmId, e.id).put(e));
    return {};
  },
  events: (state, e) => emojiEvents(state, { op: 'edit', emoji: e }),
});

export const listRealmEmoji = query({
  type: 'listRealmEmoji',
  fields: z.object({}),
  run(state, msg) {
    actingUser(state, msg.caller);
    return { emoji: realmEmojiOf(state) };
  },
});

export const realmEmojiImage = query({
  type: 'realmEmojiImage',
  fields: z.object({ id: z.number().int() }),
  run(state, msg, ctx) {
    actingUser(state, msg.caller);
    const e = state.emoji.get(msg.id);
    if (!e) throw new ApiError('BAD_REQUEST', 'Emoji not found', 404);
    return later(async () => {
      const file = await fileStoreFor(ctx.store).get(e.fileName);
      if (!file) throw new ApiError('BAD_REQUEST', 'Emoji not found', 404);
      return { contentType: file.contentType, data: file.data.toString('base64') };
    });
  },
});
