/** POST /user_uploads and GET /user_uploads/{realm_id}/{dir}/{name}/{filename} (a temporary URL of a file; the files themselves are pages: `gateway/pages/uploads.ts`); custom emoji: POST, DELETE and GET /realm/emoji. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { badRequest } from '../../lib/errors.ts';
import { FILE_TIMEOUT_MS, MAX_EMOJI_MIB, MAX_UPLOAD_MIB, tooLarge } from '../../storage/files.ts';
import { int, str } from '../params.ts';
import { BinaryReply, caller, me, route } from '../route.ts';

/** Multipart framing around the file is small; the file itself is checked against MAX_UPLOAD_MIB here and by the actor. */
const UPLOAD_BODY_BYTES = MAX_UPLOAD_MIB * 1024 * 1024 + 256 * 1024;

export const uploadFile = route({
  method: 'POST',
  path: '/user_uploads',
  auth: 'required',
  files: true,
  maxBodyBytes: UPLOAD_BODY_BYTES,
  params: {},
  async handle(ctx) {
    if (ctx.files.length === 0) throw badRequest('You must specify a file.');
    if (ctx.files.length > 1) throw badRequest('You may only upload one file at a time.');
    const file = ctx.files[0]!;
    // Refused here, before its ~1.4x base64 form crosses the bus to be refused by the actor.
    if (file.data.length > MAX_UPLOAD_MIB * 1024 * 1024) throw badRequest(tooLarge());
    const u = me(ctx);
    return ctx.actors.raw(userRef, userActorId(u.realmId, u.userId), { type: 'uploadFile', caller: caller(ctx), filename: file.filename || 'uploaded-file', contentType: file.contentType, data: file.data.toString('base64') }, FILE_TIMEOUT_MS);
  },
});

export const Segment = str().pipe(z.string().regex(/^[^/\\]+$/, { message: 'is not a valid path segment' }).refine((x) => x !== '.' && x !== '..', { message: 'is not a valid path segment' }));

/**
 * GET /api/v1/user_uploads/<path> (FL 1): a temporary URL of the file
 * (`/user_uploads/temporary/<token>/<filename>`, served without credentials
 * for 60 s by `gateway/pages/uploads.ts`), as Zulip's `serve_file_url_backend`.
 * The bytes themselves are at `/user_uploads/<path>` outside /api/v1.
 */
export const fileUrl = route({
  method: 'GET',
  path: '/user_uploads/{realm_id}/{dir}/{name}/{filename}',
  auth: 'required',
  params: { realm_id: Segment, dir: Segment, name: Segment, filename: Segment },
  async handle(ctx, p) {
    const u = me(ctx);
    return ctx.actors.raw(userRef, userActorId(u.realmId, u.userId), { type: 'fileUrl', caller: caller(ctx), path: `${p.realm_id}/${p.dir}/${p.name}/${p.filename}` });
  },
});

/** GET /thumbnail/status/<path> (FL 479): `has_thumbnail` of an upload the user may see (always false: no thumbnails are made here). */
export const thumbnailStatus = route({
  method: 'GET',
  path: '/thumbnail/status/{realm_id}/{dir}/{name}/{filename}',
  auth: 'required',
  params: { realm_id: Segment, dir: Segment, name: Segment, filename: Segment },
  async handle(ctx, p) {
    const u = me(ctx);
    return ctx.actors.raw(userRef, userActorId(u.realmId, u.userId), { type: 'thumbnailStatus', caller: caller(ctx), path: `${p.realm_id}/${p.dir}/${p.name}/${p.filename}` });
  },
});

// ---- custom emoji -------------------------------------------------------------

const EMOJI_BODY_BYTES = MAX_EMOJI_MIB * 1024 * 1024 + 256 * 1024;

export const addRealmEmoji = route({
  method: 'POST',
  path: '/realm/emoji/{emoji_name}',
  auth: 'required',
  files: true,
  maxBodyBytes: EMOJI_BODY_BYTES,
  params: { emoji_name: str() },
  async handle(ctx, p) {
    if (ctx.files.length !== 1) throw badRequest('You must upload exactly one file.');
    const file = ctx.files[0]!;
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'addRealmEmoji', caller: caller(ctx), name: p.emoji_name, filename: file.filename, contentType: file.contentType, data: file.data.toString('base64') });
  },
});

export const deleteRealmEmoji = route({
  method: 'DELETE',
  path: '/realm/emoji/{emoji_name}',
  auth: 'required',
  params: { emoji_name: str() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'deleteRealmEmoji', caller: caller(ctx), name: p.emoji_name }),
});

export const listRealmEmoji = route({
  method: 'GET',
  path: '/realm/emoji',
  auth: 'required',
  params: {},
  handle: async (ctx) => ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'listRealmEmoji', caller: caller(ctx) }),
});

export const realmEmojiImage = route({
  method: 'GET',
  path: '/realm/emoji/{emoji_id}/image',
  auth: 'required',
  params: { emoji_id: int() },
  async handle(ctx, p) {
    const img = await ctx.actors.call(realmRef, realmActorId(me(ctx).realmId), { type: 'realmEmojiImage', caller: caller(ctx), id: p.emoji_id });
    return new BinaryReply(img.contentType, Buffer.from(img.data, 'base64'), { 'X-Content-Type-Options': 'nosniff', 'Content-Security-Policy': "default-src 'none'" });
  },
});

// ---- the user's uploads ------------------------------------------------------------

/** GET /attachments: the caller's uploads, with the messages that link them (their IDs, `message_ids`, since FL 472). */
export const listAttachments = route({
  method: 'GET',
  path: '/attachments',
  auth: 'required',
  params: {},
  handle: async (ctx) => ctx.actors.raw(userRef, userActorId(me(ctx).realmId, me(ctx).userId), { type: 'listAttachments', caller: caller(ctx) }),
});

export const deleteAttachment = route({
  method: 'DELETE',
  path: '/attachments/{attachment_id}',
  auth: 'required',
  params: { attachment_id: int() },
  handle: async (ctx, p) => ctx.actors.raw(userRef, userActorId(me(ctx).realmId, me(ctx).userId), { type: 'deleteAttachment', caller: caller(ctx), id: p.attachment_id }),
});
