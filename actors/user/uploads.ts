/**
 * Uploaded files (Zulip's `views/upload.py`): POST /user_uploads stores the
 * bytes in the FileStore under a fresh random path and records the upload;
 * GET /user_uploads/... serves them to the uploader and to whoever may read a
 * message that links to them (the realm records those links at send).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ApiError, badRequest } from '../../lib/errors.ts';
import { fileStoreFor, MAX_UPLOAD_MIB } from '../../storage/files.ts';
import { type AttachmentRecord, T } from '../../storage/tables.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { defineAction, defineQuery, later } from '../runtime/action.ts';
import type { UserState } from './actor.ts';
import { readMessages } from './flags.ts';

const action = defineAction<UserState>();
const query = defineQuery<UserState>();

/** The longest stored file name, in UTF-8 bytes: it is a path segment on disk (255 at most) and part of a store key. */
const MAX_FILENAME_BYTES = 200;

/** Zulip's sanitize_name: letters, digits, dots, dashes and underscores; spaces become dashes. A long name is cut, keeping its extension. */
export function sanitizeFilename(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? '';
  const clean = base
    .normalize('NFKC')
    .replace(/[^\p{L}\p{N}_\s.-]/gu, '')
    .trim()
    .replace(/[-\s]+/g, '-')
    .replace(/^\.+/, '');
  return truncateBytes(clean, MAX_FILENAME_BYTES) || 'uploaded-file';
}

/** `name` cut to at most `max` UTF-8 bytes at a character boundary, its extension (up to 16 characters) kept. */
function truncateBytes(name: string, max: number): string {
  if (Buffer.byteLength(name) <= max) return name;
  const ext = /\.[^.]{1,16}$/u.exec(name)?.[0] ?? '';
  let stem = '';
  for (const ch of name.slice(0, name.length - ext.length)) {
    if (Buffer.byteLength(stem + ch + ext) > max) break;
    stem += ch;
  }
  return stem + ext;
}

export const uploadFile = action({
  type: 'uploadFile',
  fields: z.object({ filename: z.string(), contentType: z.string(), data: z.string() }),
  async prepare(s, msg, ctx) {
    const data = Buffer.from(msg.data, 'base64');
    if (data.length > MAX_UPLOAD_MIB * 1024 * 1024) throw badRequest(`File is larger than this server's configured maximum upload size (${MAX_UPLOAD_MIB} MiB).`);
    const filename = sanitizeFilename(msg.filename);
    const path = `${s.realmId}/${randomBytes(1).toString('hex')}/${randomBytes(18).toString('base64url')}/${filename}`;
    // The bytes are durable before the upload is recorded; a failed request leaves only unreachable bytes.
    await fileStoreFor(ctx.store).put(path, { contentType: msg.contentType, filename: msg.filename, data });
    return { path, filename: msg.filename, size: data.length };
  },
  check(s, msg, f): AttachmentRecord {
    return { path: f.path, filename: f.filename, contentType: msg.contentType, size: f.size, ownerId: s.userId, createTime: Math.floor(Date.now() / 1000) };
  },
  apply(s, a, tx) {
    tx.write(T.attachments.at(s.realmId, a.path).put(a));
    const url = `/user_uploads/${a.path}`;
    return { uri: url, url, filename: a.filename };
  },
});

const notFound = () => new ApiError('BAD_REQUEST', 'File not found.', 404);

export const downloadFile = query({
  type: 'downloadFile',
  fields: z.object({ path: z.string() }),
  run(s, msg, ctx) {
    return later(async () => {
      const a = await T.attachments.at(s.realmId, msg.path).get(ctx.store);
      if (!a) throw notFound();
      if (a.ownerId !== s.userId) {
        // Anyone who may read a message linking to the file may download it.
        const ids = (await T.attachmentMessages.partition(s.realmId, msg.path).range(ctx.store)).map((r) => Number(r.ck));
        const view = ids.length ? await ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'readerView', caller: msg.caller }) : null;
        const readable = view !== null && (await readMessages(ctx.store, s.realmId, ids)).some((m) => view.sources.some((src) => src.recipientKey === m.recipientKey && m.id >= src.minId));
        if (!readable) throw new ApiError('BAD_REQUEST', 'You are not authorized to view this file.', 403);
      }
      const file = await fileStoreFor(ctx.store).get(msg.path);
      if (!file) throw notFound();
      return { contentType: file.contentType, filename: file.filename, data: file.data.toString('base64') };
    });
  },
});
