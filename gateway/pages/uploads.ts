/**
 * Uploaded files at the URLs message content links to, outside /api/v1
 * (Zulip's `serve_file_backend` and `serve_file_unauthed_from_token`):
 *
 * - `/user_uploads/<realm>/<dir>/<name>/<filename>`: for a client with the
 *   user's credentials (HTTP Basic email:key, as the mobile and terminal
 *   clients send, or `?api_key=` alone, as Zulip accepts for clients that
 *   cannot set headers on images); served to the uploader and to anyone who
 *   may read a message linking to it; no credentials or bad ones: 401 as the
 *   API answers (Zulip redirects a browser without a session to its login
 *   page, which this server does not have); no such file: 404; not theirs
 *   to see: 403.
 * - `/user_uploads/temporary/<token>/<filename>`: no credentials, while the
 *   token that GET /api/v1/user_uploads/... made is valid (60 s); the user
 *   actor that signed it checks it, so any gateway serves it (once the realm
 *   says the token's user is an active member).
 */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { tokenUser } from '../../actors/user/uploads.ts';
import { badRequest } from '../../lib/errors.ts';
import { FILE_TIMEOUT_MS } from '../../storage/files.ts';
import type { RawParams } from '../params.ts';
import type { Page, PageReply } from './page.ts';

/** A path segment as the API route takes it: no separators, not `.` or `..`. */
function segment(params: RawParams, name: string): string {
  const v = params.get(name);
  const s = typeof v === 'string' ? v : '';
  if (!s || /[/\\]/.test(s) || s === '.' || s === '..') throw badRequest(`Invalid ${name}`);
  return s;
}

function fileReply(file: { contentType: string; filename: string; data: string }): PageReply {
  const inline = /^(image|video|audio)\//.test(file.contentType) || file.contentType === 'application/pdf';
  return {
    status: 200,
    contentType: file.contentType,
    body: Buffer.from(file.data, 'base64'),
    headers: {
      'Content-Disposition': `${inline ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(file.filename)}`,
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': "default-src 'none'",
      'Cache-Control': 'private, max-age=3600',
    },
  };
}

export const userUpload: Page = {
  method: 'GET',
  path: '/user_uploads/{realm_id}/{dir}/{name}/{filename}',
  async handle(ctx, params) {
    const path = ['realm_id', 'dir', 'name', 'filename'].map((k) => segment(params, k)).join('/');
    const apiKey = params.get('api_key');
    const user = await ctx.authenticate(typeof apiKey === 'string' ? apiKey : null);
    const file = await ctx.actors.call(userRef, userActorId(user.realmId, user.userId), { type: 'downloadFile', caller: { realmId: user.realmId, userId: user.userId }, path }, FILE_TIMEOUT_MS);
    return fileReply(file);
  },
};

export const temporaryUpload: Page = {
  method: 'GET',
  path: '/user_uploads/temporary/{token}/{filename}',
  async handle(ctx, params) {
    const token = segment(params, 'token');
    const userId = tokenUser(token);
    if (userId === null) throw badRequest('Invalid token');
    // A forged token may name any ID: only an active member's actor is asked to check it.
    const { active } = await ctx.actors.call(realmRef, realmActorId(ctx.realmId), { type: 'isActiveUser', caller: { realmId: ctx.realmId, userId: null }, userId });
    if (!active) throw badRequest('Invalid token');
    const file = await ctx.actors.call(userRef, userActorId(ctx.realmId, userId), { type: 'temporaryFile', caller: { realmId: ctx.realmId, userId: null }, token, filename: segment(params, 'filename') }, FILE_TIMEOUT_MS);
    return fileReply(file);
  },
};
