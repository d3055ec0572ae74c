/**
 * The emoji a reaction may use: unicode emoji from the `emoji-datasource`
 * table (iamcal's names, which Zulip's names started from), a few names Zulip
 * spells its own way, the realm's custom emoji (none can be uploaded yet),
 * and the service's extra emoji.
 *
 * Known gaps against Zulip's table: Zulip renamed some emoji
 * (`emoji_names.py`); the common ones are aliased below, others answer to
 * their iamcal short names (`+1`, `slightly_smiling_face`) or to their
 * Unicode name in snake case (`thumbs_up_sign`).
 */
import { createRequire } from 'node:module';
import { badRequest } from '../../../lib/errors.ts';

interface DatasourceEmoji {
  name: string | null;
  unified: string;
  non_qualified: string | null;
  short_names: string[];
}

const require = createRequire(import.meta.url);
const TABLE = require('emoji-datasource/emoji.json') as DatasourceEmoji[];

/** Zulip's names for emoji iamcal names otherwise. */
const ZULIP_NAMES: Record<string, string> = {
  thumbs_up: '1f44d',
  thumbs_down: '1f44e',
  slight_smile: '1f642',
  working_on_it: '1f6e0',
  check: '2714',
  heart: '2764',
  party_popper: '1f389',
  smile: '1f604',
  joy: '1f602',
  octopus: '1f419',
};

/** The service's own emoji (Zulip's `zulip_extra_emoji`): the code is the name. */
export const SERVICE_EXTRA_EMOJI = new Set(['parley', 'zulip']);

const byName = new Map<string, string>();
const codes = new Set<string>();
for (const e of TABLE) {
  const code = (e.non_qualified ?? e.unified).toLowerCase();
  codes.add(code);
  for (const n of e.short_names) if (!byName.has(n)) byName.set(n, code);
  if (e.name) {
    const snake = e.name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, '');
    if (!byName.has(snake)) byName.set(snake, code);
  }
}
for (const [n, code] of Object.entries(ZULIP_NAMES)) byName.set(n, code);

export type ReactionType = 'unicode_emoji' | 'realm_emoji' | 'service_extra_emoji';

export interface Emoji {
  name: string;
  code: string;
  type: ReactionType;
}

/** The unicode code of a name, if the table has it. */
export const unicodeCode = (name: string): string | undefined => byName.get(name);

/**
 * Resolves a reaction's emoji as Zulip's check_emoji_request does: a name
 * alone is looked up (realm emoji first, then unicode, then the extra
 * emoji); a code is checked against the name and type.
 */
export function resolveEmoji(name: string, code: string | null, type: string | null, realmEmoji: ReadonlyMap<string, { id: string; deactivated: boolean }>): Emoji {
  if (code === null) {
    const custom = realmEmoji.get(name);
    if (custom && !custom.deactivated) return { name, code: custom.id, type: 'realm_emoji' };
    const unicode = byName.get(name);
    if (unicode) return { name, code: unicode, type: 'unicode_emoji' };
    if (SERVICE_EXTRA_EMOJI.has(name)) return { name, code: name, type: 'service_extra_emoji' };
    throw badRequest(`Emoji '${name}' does not exist`);
  }
  const t = type ?? 'unicode_emoji';
  if (t === 'realm_emoji') {
    const custom = realmEmoji.get(name);
    if (!custom || custom.id !== code) throw badRequest('Invalid custom emoji.');
    return { name, code, type: t };
  }
  if (t === 'service_extra_emoji') {
    if (!SERVICE_EXTRA_EMOJI.has(code)) throw badRequest('Invalid emoji code.');
    if (name !== code) throw badRequest('Invalid emoji name.');
    return { name, code, type: t };
  }
  if (t !== 'unicode_emoji') throw badRequest('Invalid emoji type.');
  if (!codes.has(code)) throw badRequest('Invalid emoji code.');
  // Any name is accepted for a valid code only if it names that code (Zulip: "Invalid emoji name.").
  if (byName.get(name) !== code) throw badRequest('Invalid emoji name.');
  return { name, code, type: t };
}
