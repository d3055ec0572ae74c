/**
 * The Unicode emoji names the server knows, from `emoji-datasource` (the
 * iamcal data set Zulip's own names come from): each short name with its
 * code, written as Zulip writes codes (lower-case hex code points joined by
 * dashes, without the emoji variation selector where a form without it
 * exists, so `heart` is `2764`). Loaded once, on first use.
 */
import { createRequire } from 'node:module';

interface Entry {
  unified: string;
  non_qualified: string | null;
  short_names: string[];
}

let byName: Map<string, string> | null = null;
let codes: Set<string> | null = null;

function load(): void {
  const data = createRequire(import.meta.url)('emoji-datasource/emoji.json') as Entry[];
  byName = new Map();
  codes = new Set();
  for (const e of data) {
    const code = (e.non_qualified ?? e.unified).toLowerCase();
    codes.add(code);
    codes.add(e.unified.toLowerCase());
    for (const name of e.short_names) if (!byName.has(name)) byName.set(name, code);
  }
}

/**
 * Every Unicode emoji code with its names, the name a reaction by code gets
 * first (Zulip's `emoji_api.json`, `code_to_names`, served at
 * `EMOJI_DATA_PATH` and named by register's `server_emoji_data_url`).
 */
export function emojiCodeToNames(): Record<string, string[]> {
  if (!byName) load();
  const out: Record<string, string[]> = {};
  for (const [name, code] of byName!) (out[code] ??= []).push(name);
  return out;
}

/** Where the gateway serves the emoji names (`server_emoji_data_url`, relative to the server as in Zulip). */
export const EMOJI_DATA_PATH = '/static/generated/emoji/emoji_api.json';

/** The code of a Unicode emoji name, or undefined. */
export function unicodeEmojiCode(name: string): string | undefined {
  if (!byName) load();
  return byName!.get(name);
}

/** Whether `code` is the code of `name` (with or without variation selectors). */
export function unicodeEmojiMatches(name: string, code: string): boolean {
  const known = unicodeEmojiCode(name);
  if (known === undefined) return false;
  const strip = (c: string) => c.toLowerCase().split('-').filter((p) => p !== 'fe0f').join('-');
  return strip(known) === strip(code);
}

/** The name of the server's extra emoji (`service_extra_emoji`). */
export const EXTRA_EMOJI_NAME = 'zulip';
