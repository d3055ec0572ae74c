/** The Unicode emoji names (GET `server_emoji_data_url`): no credentials, as Zulip serves it as a static file. */
import { EMOJI_DATA_PATH, emojiCodeToNames } from '../../lib/emoji.ts';
import type { Page } from './page.ts';

let body: string | null = null;

export const emojiData: Page = {
  method: 'GET',
  path: EMOJI_DATA_PATH,
  async handle() {
    body ??= JSON.stringify({ code_to_names: emojiCodeToNames() });
    return { status: 200, contentType: 'application/json', body, headers: { 'Cache-Control': 'public, max-age=86400' } };
  },
};
