/**
 * Uploaded files (Zulip's `views/upload.py`): POST /user_uploads stores the
 * bytes in the FileStore under a fresh random path and records the upload;
 * GET /user_uploads/... serves them to the uploader and to whoever may read a
 * message that links to them (the realm records those links at send).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ApiError, badRequest } from '../../lib/errors.ts';
import { fileStoreFor, MAX_UPLOAD_MIB, tooLarge } from '../../storage/files.ts';
import { type AttachmentRecord, T } from '../../storage/tables.ts';
import { inSource } from '../model.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { type AttachmentObject } from '../events/schema.ts';
import { toUsers } from '../events/delivery.ts';
import { type Caller, defineAction, defineQuery, defineTimer, later, type Tx } from '../runtime/action.ts';
import type { ActorContext } from '../runtime/context.ts';
import type { UserState } from './actor.ts';
import { readMessages } from './flags.ts';

const action = defineAction<UserState>();
const query = defineQuery<UserState>();
const timer = defineTimer<UserState>();

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
    if (data.length > MAX_UPLOAD_MIB * 1024 * 1024) throw badRequest(tooLarge());
    const path = newUploadPath(s.realmId, msg.filename);
    // The bytes are durable before the upload is recorded, under a fresh name only its row will know:
    // a refused request's bytes are discarded; a crash before the commit leaves unreachable bytes.
    await fileStoreFor(ctx.store).put(path, { contentType: msg.contentType, filename: msg.filename, data });
    return { path, filename: msg.filename, size: data.length };
  },
  discard: (f, ctx) => fileStoreFor(ctx.store).delete(f.path),
  check: (s, msg, f) => attachmentRecord(s, { ...f, contentType: msg.contentType }),
  apply: (s, a, tx) => recordUpload(s, a, tx),
});

/** A path for a new upload's bytes, as Zulip's: `<realm>/<random byte>/<random>/<sanitized name>`. */
export const newUploadPath = (realmId: number, filename: string): string => `${realmId}/${randomBytes(1).toString('hex')}/${randomBytes(18).toString('base64url')}/${sanitizeFilename(filename)}`;

/** The row of a finished upload of this user's, numbered next (check step: reads the state only). */
export function attachmentRecord(s: Readonly<UserState>, f: { path: string; filename: string; contentType: string; size: number }): AttachmentRecord {
  return { path: f.path, filename: f.filename, contentType: f.contentType, size: f.size, ownerId: s.userId, createTime: Math.floor(Date.now() / 1000), id: s.counters.attachment };
}

/**
 * Records a finished upload whose bytes are durable at `a.path` (POST
 * /user_uploads and the last bytes of a resumable upload): its rows, and
 * the upload-space follow-up with its `attachment` event. The reply is
 * POST /user_uploads's.
 */
export function recordUpload(s: UserState, a: AttachmentRecord, tx: Tx): { uri: string; url: string; filename: string } {
  s.counters.attachment = a.id + 1;
  tx.write(T.userCounters.at(s.realmId, s.userId).put({ ...s.counters }), T.attachments.at(s.realmId, a.path).put(a), T.userAttachments.at(s.realmId, s.userId, a.id).put(a.path));
  noteUploadSpace(tx, { op: 'add', delta: a.size, attachment: attachmentObject(a, []) });
  const url = `/user_uploads/${a.path}`;
  return { uri: url, url, filename: a.filename };
}

// ---- GET /attachments, DELETE /attachments/{id} and `attachment` events ----------

/** Zulip's `Attachment.to_dict`: times in seconds (FL 443; milliseconds before); the linking messages as `message_ids` (FL 472, was `messages` of `{id, date_sent}`). */
export function attachmentObject(a: AttachmentRecord, messages: Array<{ id: number }>): AttachmentObject {
  return { id: a.id, name: a.filename, path_id: a.path, size: a.size, create_time: a.createTime, message_ids: messages.map((m) => m.id) };
}

type SpaceChange = { op: 'add'; delta: number; attachment: AttachmentObject } | { op: 'remove'; delta: number; attachment: { id: number }; path: string };
const SPACE = 'uploadSpace';

/** In the commit of an upload or a deletion: after it, the realm's total changes and the owner's clients hear of it (and a deleted file's bytes go). */
function noteUploadSpace(tx: Tx, change: SpaceChange): void {
  tx.setTimer(SPACE, Date.now(), change, change.attachment.id);
}

/**
 * After an upload or a deletion commits, retried until it succeeds: deletes
 * the bytes of a deleted file, adds the size to the realm's total and sends
 * the `attachment` event with the new total (Zulip's
 * `notify_attachment_update`). At least once: a crash between the realm's
 * answer and this timer's own commit counts the size twice.
 */
export const uploadSpaceTimer = timer({
  name: SPACE,
  async effect(s, p: SpaceChange, ctx) {
    if (p.op === 'remove') await fileStoreFor(ctx.store).delete(p.path);
    return ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'addUploadSpace', caller: { realmId: s.realmId, userId: s.userId }, delta: p.delta });
  },
  check: (s, p, _ctx, done) => ({ p, used: done.upload_space_used }),
  apply: () => null,
  events: (s, { p, used }) => [toUsers(s.realmId, [s.userId], p.op === 'add' ? { type: 'attachment', op: 'add', attachment: p.attachment, upload_space_used: used } : { type: 'attachment', op: 'remove', attachment: p.attachment, upload_space_used: used })],
});

/** GET /attachments: the user's uploads with the messages that link them, and the realm's upload total. O(the user's uploads + their links). */
export const listAttachments = query({
  type: 'listAttachments',
  fields: z.object({}),
  run(s, msg, ctx) {
    return later(async () => {
      const paths = await T.userAttachments.partition(s.realmId, s.userId).values(ctx.store);
      const attachments: AttachmentObject[] = [];
      for (const path of paths) {
        const a = await T.attachments.at(s.realmId, path).get(ctx.store);
        if (!a) continue;
        const ids = (await T.attachmentMessages.partition(s.realmId, path).range(ctx.store)).map((r) => Number(r.ck));
        const messages = (await readMessages(ctx.store, s.realmId, ids)).sort((x, y) => x.id - y.id);
        attachments.push(attachmentObject(a, messages));
      }
      const { upload_space_used } = await ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'uploadSpace', caller: msg.caller });
      return { attachments, upload_space_used };
    });
  },
});

const invalidAttachment = () => badRequest('Invalid attachment');

/** DELETE /attachments/{id}: only the owner's own uploads (Zulip's `access_attachment_by_id(needs_owner=True)`). */
export const deleteAttachment = action({
  type: 'deleteAttachment',
  fields: z.object({ id: z.number().int() }),
  async prepare(s, msg, ctx) {
    const path = await T.userAttachments.at(s.realmId, s.userId, msg.id).get(ctx.store);
    return path ? ((await T.attachments.at(s.realmId, path).get(ctx.store)) ?? null) : null;
  },
  check(s, msg, a) {
    if (!a || a.ownerId !== s.userId || a.id !== msg.id) throw invalidAttachment();
    return a;
  },
  apply(s, a, tx) {
    tx.write(T.attachments.at(s.realmId, a.path).delete(), T.userAttachments.at(s.realmId, s.userId, a.id).delete());
    noteUploadSpace(tx, { op: 'remove', delta: -a.size, attachment: { id: a.id }, path: a.path });
    return {};
  },
});

const notFound = () => new ApiError('BAD_REQUEST', 'File not found.', 404);

/**
 * The upload at `path` if the user may see it (Zulip's `validate_attachment_request`):
 * theirs, or linked from a message they may read; 404 when there is none, 403 otherwise.
 * Reads the store: call outside the mailbox (in `later`) or in `prepare`.
 */
async function accessFile(s: Readonly<UserState>, ctx: ActorContext, path: string, caller: Caller): Promise<AttachmentRecord> {
  const a = await T.attachments.at(s.realmId, path).get(ctx.store);
  if (!a) throw notFound();
  if (a.ownerId === s.userId) return a;
  const ids = (await T.attachmentMessages.partition(s.realmId, path).range(ctx.store)).map((r) => Number(r.ck));
  const view = ids.length ? await ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'readerView', caller }) : null;
  const readable = view !== null && (await readMessages(ctx.store, s.realmId, ids)).some((m) => view.sources.some((src) => src.recipientKey === m.recipientKey && inSource(src, m.id)));
  if (!readable) throw new ApiError('BAD_REQUEST', 'You are not authorized to view this file.', 403);
  return a;
}

async function fileBytes(ctx: ActorContext, path: string) {
  const file = await fileStoreFor(ctx.store).get(path);
  if (!file) throw notFound();
  return { contentType: file.contentType, filename: file.filename, data: file.data.toString('base64') };
}

/** GET /user_uploads/<path> at the server root, with the user's credentials: the bytes. */
export const downloadFile = query({
  type: 'downloadFile',
  fields: z.object({ path: z.string() }),
  run(s, msg, ctx) {
    return later(async () => {
      await accessFile(s, ctx, msg.path, msg.caller);
      return fileBytes(ctx, msg.path);
    });
  },
});

/**
 * GET /thumbnail/status/<path> (FL 479): whether the upload at `path` has a
 * thumbnail yet, for a user who may see the file (404 or 403 as for the file
 * itself). This server makes no thumbnails (image previews, FL 276, are
 * links), so the answer is always no.
 */
export const thumbnailStatus = query({
  type: 'thumbnailStatus',
  fields: z.object({ path: z.string() }),
  run(s, msg, ctx) {
    return later(async () => {
      await accessFile(s, ctx, msg.path, msg.caller);
      return { has_thumbnail: false };
    });
  },
});

/** How long a temporary file URL works: Zulip's 60 s (`PARLEY_FILE_URL_TTL_SECS` shortens it for tests). */
export const FILE_URL_TTL_SECS = Number(process.env.PARLEY_FILE_URL_TTL_SECS) || 60;

const signToken = (key: string, payload: string) => createHmac('sha256', Buffer.from(key, 'base64url')).update(payload).digest('base64url');

/**
 * GET /api/v1/user_uploads/<path> (FL 1): a URL that serves the file
 * without credentials for FILE_URL_TTL_SECS, for clients that cannot send
 * credentials with the request (Zulip's `generate_unauthed_file_access_url`).
 * The token names this user, the file and the expiry, signed with a key of
 * this user's kept in the store (`user_counters.fileUrlKey`, made on first
 * use), so whichever gateway the URL reaches asks this actor, which checks it.
 */
export const fileUrl = action({
  type: 'fileUrl',
  fields: z.object({ path: z.string() }),
  async prepare(s, msg, ctx) {
    await accessFile(s, ctx, msg.path, msg.caller);
    return {};
  },
  check(s, msg) {
    return { path: msg.path, key: s.counters.fileUrlKey || randomBytes(32).toString('base64url'), made: !s.counters.fileUrlKey };
  },
  apply(s, p, tx) {
    if (p.made) {
      s.counters.fileUrlKey = p.key;
      tx.write(T.userCounters.at(s.realmId, s.userId).put({ ...s.counters }));
    }
    const payload = Buffer.from(JSON.stringify({ u: s.userId, p: p.path, e: Math.floor(Date.now() / 1000) + FILE_URL_TTL_SECS })).toString('base64url');
    const filename = p.path.split('/').pop()!;
    return { url: `/user_uploads/temporary/${payload}.${signToken(p.key, payload)}/${filename}` };
  },
});

/** The user whose key signed a temporary file token (the page asks that user's actor), or null for a token that is not one. */
export function tokenUser(token: string): number | null {
  const payload = token.split('.')[0] ?? '';
  try {
    const u = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { u?: unknown }).u;
    return typeof u === 'number' && Number.isSafeInteger(u) && u > 0 ? u : null;
  } catch {
    return null;
  }
}

const invalidToken = () => badRequest('Invalid token');

/** GET /user_uploads/temporary/<token>/<filename>: the bytes, without credentials, while the token is valid (Zulip's `serve_file_unauthed_from_token`). */
export const temporaryFile = query({
  type: 'temporaryFile',
  fields: z.object({ token: z.string(), filename: z.string() }),
  run(s, msg, ctx) {
    const [payload = '', sig = '', ...rest] = msg.token.split('.');
    const key = s.counters.fileUrlKey;
    if (!key || rest.length || !payload || !sig) throw invalidToken();
    const want = Buffer.from(signToken(key, payload));
    const got = Buffer.from(sig);
    if (want.length !== got.length || !timingSafeEqual(want, got)) throw invalidToken();
    const { u, p, e } = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { u: number; p: string; e: number };
    if (u !== s.userId || e < Date.now() / 1000) throw invalidToken();
    if (p.split('/').pop() !== msg.filename) throw badRequest('Invalid filename');
    return later(() => fileBytes(ctx, p));
  },
});
