/**
 * Generated avatars (FL 456): the Jdenticon of a user whose avatar source is
 * 'J', at `jdenticonPath` of the organization's URL, as Zulip makes them
 * (`generate_avatar_jdenticon`): a PNG of 100 pixels (500 for `-medium`), no
 * padding, lightness 0.3 to 0.7, from `<realm uuid>:<user id>` (the key
 * clients that draw Jdenticons themselves use, with register's `realm_uuid`).
 * No credentials, as Zulip serves avatars: the image depends only on the
 * organization and the ID, so it is made here without asking the realm, and
 * kept in a small cache. The package is loaded on the first image, not with
 * the gateway.
 */
import { realmUuidOf } from '../../actors/format.ts';
import type { Page } from './page.ts';

const SIZE = 100;
const MEDIUM_SIZE = 500;
const CONFIG = { padding: 0, lightness: { color: [0.3, 0.7], grayscale: [0.3, 0.7] } };
const CACHED = 256;

/** Recently served images by realm, user and size; the oldest is dropped first. */
const cache = new Map<string, Buffer>();

/** The image of `key` at `size` pixels. */
export async function jdenticonPng(key: string, size: number): Promise<Buffer> {
  const id = `${key}:${size}`;
  let png = cache.get(id);
  if (png) {
    cache.delete(id);
  } else {
    const { toPng } = await import('jdenticon');
    png = toPng(key, size, CONFIG);
    if (cache.size >= CACHED) cache.delete(cache.keys().next().value!);
  }
  cache.set(id, png);
  return png;
}

export const jdenticonAvatar: Page = {
  method: 'GET',
  path: '/user_avatars/jdenticon/{filename}',
  async handle(ctx, params) {
    const m = /^([1-9][0-9]{0,9})(-medium)?\.png$/.exec(params.get('filename') ?? '');
    if (!m) return { status: 404, contentType: 'text/plain; charset=utf-8', body: 'Not Found' };
    const png = await jdenticonPng(`${realmUuidOf(ctx.realmId)}:${m[1]}`, m[2] ? MEDIUM_SIZE : SIZE);
    return { status: 200, contentType: 'image/png', body: png, headers: { 'Cache-Control': 'public, max-age=86400', 'X-Content-Type-Options': 'nosniff' } };
  },
};
