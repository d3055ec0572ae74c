/**
 * An organization export's archive at its `export_url`
 * (`/user_avatars/exports/<realm>/<token>/<file>`, Zulip's path for exports
 * on local uploads), for an administrator of that organization with their
 * credentials (HTTP Basic, or `?api_key=` alone, as uploads take them).
 * Zulip serves the URL to anyone who has it; the archive holds every
 * member's data, so this server also asks who fetches it.
 */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { ApiError } from '../../lib/errors.ts';
import { FILE_TIMEOUT_MS } from '../../storage/files.ts';
import type { Page } from './page.ts';

export const exportArchive: Page = {
  method: 'GET',
  path: '/user_avatars/exports/{realm_id}/{token}/{filename}',
  async handle(ctx, params) {
    const apiKey = params.get('api_key');
    const user = await ctx.authenticate(typeof apiKey === 'string' ? apiKey : null);
    if (params.get('realm_id') !== String(user.realmId)) throw new ApiError('BAD_REQUEST', 'Not Found', 404);
    const caller = { realmId: user.realmId, userId: user.userId };
    const file = await ctx.actors.call(realmRef, realmActorId(user.realmId), { type: 'exportFile', caller, token: params.get('token') ?? '', filename: params.get('filename') ?? '' }, FILE_TIMEOUT_MS);
    return {
      status: 200,
      contentType: file.contentType,
      body: Buffer.from(file.data, 'base64'),
      headers: { 'Content-Disposition': `attachment; filename*=UTF-8''${encodeURIComponent(file.filename)}`, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'private, no-store' },
    };
  },
};
