/**
 * Resumable uploads (the tus 1.0.0 protocol at /api/v1/tus, FL 295), kept by
 * the uploader's user actor so that every gateway reaches them: Zulip runs
 * tusd for the protocol and records the file in tusd's hooks
 * (`zerver/views/tusd.py`: pre-create checks the size, pre-finish creates
 * the attachment); here the protocol is `gateway/tus.ts` and these actions
 * are the hooks and tusd's storage together.
 *
 * An upload in progress is a `tus_uploads` row of its user (its length,
 * offset, file name and type, and the parts received so far) and the parts'
 * bytes in the FileStore (`<realm>/tus/<id>/<n>`), so any gateway continues
 * it at its offset. The bytes that complete it are joined with the parts
 * into the file at the path POST /user_uploads would have used, and the
 * upload is recorded exactly as POST /user_uploads records it
 * (`recordUpload`): the attachment rows, the upload-space follow-up and its
 * `attachment` event; its row stays, marked done, so that a client that
 * lost the last answer sees it complete. TUS_EXPIRY_SECS after its
 * creation an upload expires, finished or not: a durable timer set in the
 * creating commit deletes its parts' bytes and its row.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ApiError } from '../../lib/errors.ts';
import { fileStoreFor, MAX_UPLOAD_MIB } from '../../storage/files.ts';
import { T, type TusUploadRecord } from '../../storage/tables.ts';
import { defineAction, defineQuery, defineTimer, later, type Tx } from '../runtime/action.ts';
import type { ActorContext } from '../runtime/context.ts';
import type { UserState } from './actor.ts';
import { attachmentRecord, newUploadPath, recordUpload } from './uploads.ts';

const action = defineAction<UserState>();
const query = defineQuery<UserState>();
const timer = defineTimer<UserState>();

/** How long an unfinished upload is kept after its creation: a day (`PARLEY_TUS_EXPIRY_SECS` shortens it for tests). */
export const TUS_EXPIRY_SECS = Number(process.env.PARLEY_TUS_EXPIRY_SECS) || 24 * 3600;
/** The largest upload, in bytes (`Tus-Max-Size`): POST /user_uploads's limit. */
export const TUS_MAX_BYTES = MAX_UPLOAD_MIB * 1024 * 1024;

const EXPIRE = 'tusExpire';
const PARTS = 'tusParts';

/** tus's statuses, as tusd answers them: the gateway writes them as they are. */
const notFound = () => new ApiError('BAD_REQUEST', 'Upload not found', 404);
const gone = () => new ApiError('BAD_REQUEST', 'Upload has expired', 410);
const offsetMismatch = (want: number) => new ApiError('BAD_REQUEST', `Upload-Offset does not match the upload's offset (${want})`, 409);
const sizeExceeded = () => new ApiError('BAD_REQUEST', "Upload's size exceeded", 413);

/** What the client is told of an upload: its offset and length, and when it expires (HEAD, and the answers to POST and PATCH). */
export interface TusStatus {
  offset: number;
  length: number;
  expiresAt: number;
  /** Set once the upload is finished: POST /user_uploads's answer (`url`, `filename`). */
  done?: { url: string; filename: string };
}

/** What `stage` wrote before the commit: nothing, one more part, or the whole file at the upload's path. */
type Staged = { kind: 'none' } | { kind: 'part'; path: string; size: number } | { kind: 'file'; size: number };

const partPath = (realmId: number, id: string, n: number) => `${realmId}/tus/${id}/${n}`;

/**
 * Writes `data`, sent at `offset`, where only the planned commit will name
 * it: one more part, or (when it completes the upload) the parts and it
 * joined into the file. Writes nothing when `check` will refuse (wrong
 * offset, too long, expired), so a refusal leaves nothing to discard.
 * Runs in `prepare`: inside the mailbox, so the row it read is current.
 */
async function stage(row: TusUploadRecord, offset: number, data: Buffer, ctx: ActorContext, realmId: number): Promise<Staged> {
  if (row.done || offset !== row.offset || offset + data.length > row.length || Date.now() >= row.expiresAt) return { kind: 'none' };
  const files = fileStoreFor(ctx.store);
  if (offset + data.length === row.length) {
    const parts = await Promise.all(row.parts.map((p) => files.get(p.path)));
    // Only an imported organization's upload (its parts stay behind) can lack one: it cannot be finished.
    if (parts.some((p) => !p)) throw gone();
    await files.put(row.path, { contentType: row.contentType, filename: row.filename, data: Buffer.concat([...parts.map((p) => p!.data), data]) });
    return { kind: 'file', size: row.length };
  }
  if (data.length === 0) return { kind: 'none' };
  const path = partPath(realmId, row.id, row.parts.length);
  await files.put(path, { contentType: 'application/octet-stream', filename: String(row.parts.length), data });
  return { kind: 'part', path, size: data.length };
}

/** Undoes `stage` when the request is refused after it. */
async function unstage(row: TusUploadRecord | null, staged: Staged, ctx: ActorContext): Promise<void> {
  if (staged.kind === 'part') await fileStoreFor(ctx.store).delete(staged.path);
  else if (staged.kind === 'file' && row) await fileStoreFor(ctx.store).delete(row.path);
}

/** Refuses bytes that do not continue the upload (check step). */
function checkAppend(row: TusUploadRecord, offset: number, size: number): void {
  if (Date.now() >= row.expiresAt) throw gone();
  if (offset !== row.offset) throw offsetMismatch(row.offset);
  if (offset + size > row.length) throw sizeExceeded();
}

/**
 * The commit of staged bytes (and of a new upload's row): the row's new
 * offset, or, once complete, the upload recorded as POST /user_uploads
 * records it, the row marked done (its expiry timer deletes it), and a
 * follow-up that deletes the parts.
 */
function applyStaged(s: UserState, row: TusUploadRecord, staged: Staged, tx: Tx, isNew = false): TusStatus {
  let next = row;
  if (staged.kind === 'file') {
    if (row.parts.length) tx.setTimer(PARTS, Date.now(), { paths: row.parts.map((p) => p.path) }, row.ref);
    const a = attachmentRecord(s, { path: row.path, filename: row.filename, contentType: row.contentType, size: row.length });
    const { url, filename } = recordUpload(s, a, tx);
    next = { ...row, offset: row.length, parts: [], done: { url, filename } };
  } else if (staged.kind === 'part') next = { ...row, offset: row.offset + staged.size, parts: [...row.parts, { path: staged.path, size: staged.size }] };
  if (next !== row || isNew) tx.write(T.tusUploads.at(s.realmId, s.userId, row.id).put(next));
  return { offset: next.offset, length: next.length, expiresAt: next.expiresAt, ...(next.done ? { done: next.done } : {}) };
}

/** The largest-upload error, as Zulip's pre-create hook words it. */
export const tusTooLarge = (): ApiError => new ApiError('BAD_REQUEST', `Uploaded file is larger than the allowed limit of ${MAX_UPLOAD_MIB} MiB`, 413);

/**
 * POST /api/v1/tus: a new upload of `length` bytes (Zulip's pre-create hook:
 * the size limit; this server has no realm upload quota,
 * `realm_upload_quota_mib` is null), with the bytes of `data` already
 * (creation-with-upload). A zero-length upload, or one whose first bytes
 * are all of it, is finished at once.
 */
export const tusCreate = action({
  type: 'tusCreate',
  fields: z.object({ filename: z.string(), filetype: z.string(), length: z.number().int().nonnegative(), data: z.string() }),
  async prepare(s, msg, ctx) {
    if (msg.length > TUS_MAX_BYTES) return null;
    // As Zulip's pre-finish hook: a name clients can save the file as, and a type when none was given.
    const filename = msg.filename === '' || msg.filename === '.' || msg.filename === '..' ? 'uploaded-file' : msg.filename;
    const row: TusUploadRecord = {
      id: randomBytes(18).toString('base64url'),
      ref: s.counters.tusUpload,
      path: newUploadPath(s.realmId, filename),
      filename,
      contentType: msg.filetype || 'application/octet-stream',
      length: msg.length,
      offset: 0,
      parts: [],
      expiresAt: Date.now() + TUS_EXPIRY_SECS * 1000,
      done: null,
    };
    return { row, staged: await stage(row, 0, Buffer.from(msg.data, 'base64'), ctx, s.realmId) };
  },
  discard: (f, ctx) => (f ? unstage(f.row, f.staged, ctx) : Promise.resolve()),
  check(s, msg, f) {
    if (!f) throw tusTooLarge();
    checkAppend(f.row, 0, Buffer.byteLength(msg.data, 'base64'));
    return f;
  },
  apply(s, { row, staged }, tx) {
    s.counters.tusUpload = row.ref + 1;
    tx.write(T.userCounters.at(s.realmId, s.userId).put({ ...s.counters }));
    tx.setTimer(EXPIRE, row.expiresAt, { id: row.id }, row.ref);
    return { id: row.id, ...applyStaged(s, row, staged, tx, true) };
  },
});

/** PATCH /api/v1/tus/<id>: bytes at `offset` (409 at another offset, 413 past the length, 404 for an upload that is not this user's). */
export const tusAppend = action({
  type: 'tusAppend',
  fields: z.object({ id: z.string(), offset: z.number().int().nonnegative(), data: z.string() }),
  async prepare(s, msg, ctx) {
    const row = (await T.tusUploads.at(s.realmId, s.userId, msg.id).get(ctx.store)) ?? null;
    return { row, staged: row ? await stage(row, msg.offset, Buffer.from(msg.data, 'base64'), ctx, s.realmId) : ({ kind: 'none' } as Staged) };
  },
  discard: (f, ctx) => unstage(f.row, f.staged, ctx),
  check(s, msg, f) {
    if (!f.row) throw notFound();
    checkAppend(f.row, msg.offset, Buffer.byteLength(msg.data, 'base64'));
    return { row: f.row, staged: f.staged };
  },
  apply: (s, { row, staged }, tx) => applyStaged(s, row, staged, tx),
});

/** HEAD /api/v1/tus/<id>: the upload's offset and length (404 when it is not this user's or was removed at its expiry; 410 once expired). */
export const tusStatus = query({
  type: 'tusStatus',
  fields: z.object({ id: z.string() }),
  run(s, msg, ctx) {
    return later(async (): Promise<TusStatus> => {
      const row = await T.tusUploads.at(s.realmId, s.userId, msg.id).get(ctx.store);
      if (!row) throw notFound();
      if (Date.now() >= row.expiresAt) throw gone();
      return { offset: row.offset, length: row.length, expiresAt: row.expiresAt };
    });
  },
});

/**
 * At an upload's expiry: its parts' bytes are deleted (a finished one has
 * none), then its row. No bytes are accepted after the
 * expiry (`checkAppend`), so the parts read here are all there will be.
 */
export const tusExpireTimer = timer({
  name: EXPIRE,
  async effect(s, p: { id: string }, ctx) {
    const row = await T.tusUploads.at(s.realmId, s.userId, p.id).get(ctx.store);
    if (row) await Promise.all(row.parts.map((part) => fileStoreFor(ctx.store).delete(part.path)));
    return row !== undefined;
  },
  check: (s, p, _ctx, found) => ({ id: p.id, found }),
  apply(s, { id, found }, tx) {
    if (found) tx.write(T.tusUploads.at(s.realmId, s.userId, id).delete());
    return null;
  },
});

/** After a finished upload's commit: the parts it was joined from are deleted (retried until done). */
export const tusPartsTimer = timer({
  name: PARTS,
  async effect(s, p: { paths: string[] }, ctx) {
    await Promise.all(p.paths.map((path) => fileStoreFor(ctx.store).delete(path)));
  },
  check: () => null,
  apply: () => null,
});
