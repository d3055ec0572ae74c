/** POST /user_uploads and GET /user_uploads/{realm_id}/{dir}/{name}/{filename}: files, served to those who may see them. */
import { z } from 'zod';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { badRequest } from '../../lib/errors.ts';
import { MAX_UPLOAD_MIB } from '../../storage/files.ts';
import { str } from '../params.ts';
import { BinaryReply, caller, me, route } from '../route.ts';

/** Multipart framing around the file is small; the file itself is checked against MAX_UPLOAD_MIB by the actor. */
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
    const u = me(ctx);
    return ctx.actors.raw(userRef, userActorId(u.realmId, u.userId), { type: 'uploadFile', caller: caller(ctx), filename: file.filename || 'uploaded-file', contentType: file.contentType, data: file.data.toString('base64') });
  },
});

const Segment = str().pipe(z.string().regex(/^[^/\\]+$/, { message: 'is not a valid path segment' }).refine((x) => x !== '.' && x !== '..', { message: 'is not a valid path segment' }));

export const downloadFile = route({
  method: 'GET',
  path: '/user_uploads/{realm_id}/{dir}/{name}/{filename}',
  auth: 'required',
  params: { realm_id: Segment, dir: Segment, name: Segment, filename: Segment },
  async handle(ctx, p) {
    const u = me(ctx);
    const file = await ctx.actors.call(userRef, userActorId(u.realmId, u.userId), { type: 'downloadFile', caller: caller(ctx), path: `${p.realm_id}/${p.dir}/${p.name}/${p.filename}` });
    const inline = /^(image|video|audio)\//.test(file.contentType) || file.contentType === 'application/pdf';
    return new BinaryReply(file.contentType, Buffer.from(file.data, 'base64'), {
      'Content-Disposition': `${inline ? 'inline' : 'attachment'}; filename*=UTF-8''${encodeURIComponent(file.filename)}`,
      'X-Content-Type-Options': 'nosniff',
      'Content-Security-Policy': "default-src 'none'",
    });
  },
});
