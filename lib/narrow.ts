/**
 * The narrow language shared by GET /messages, POST /register and the queue
 * actors: parsing (with legacy `[operator, operand]` pairs and legacy operator
 * names) and matching a message against a narrow.
 *
 * Matching works on resolved narrows: the realm actor first turns every
 * operand that names a channel or a person into IDs (`resolveNarrow` in
 * `actors/realm/messages.ts`), so a message is matched by its IDs alone and a
 * rename changes nothing.
 */
import { z } from 'zod';
import { badNarrow } from './errors.ts';

export const NarrowTermSchema = z.object({
  operator: z.string(),
  operand: z.union([z.string(), z.number().int(), z.array(z.number().int())]),
  negated: z.boolean(),
});
export type NarrowTerm = z.infer<typeof NarrowTermSchema>;

/** What the matcher needs to know of a message (built from a stored row). */
export interface MessageView {
  id: number;
  type: 'stream' | 'private';
  streamId: number | null;
  topic: string;
  senderId: number;
  /** Every participant of a direct message, the sender included. */
  dmUserIds: number[] | null;
  content: string;
  flags: string[];
  /** Whether anyone reacted to the message (`has:reaction`). */
  hasReaction?: boolean;
}

const ALIASES: Record<string, string> = {
  stream: 'channel',
  streams: 'channels',
  subject: 'topic',
  'pm-with': 'dm',
  'group-pm-with': 'dm-including',
};

const OPERATORS = new Set([
  'channel', 'channels', 'topic', 'sender', 'dm', 'dm-including', 'is', 'has', 'search', 'id', 'near', 'with',
]);
/**
 * The `is:` and `has:` operands this server implements (an operand of a
 * feature not implemented would be listed in KNOWN_ELSEWHERE and be
 * BAD_NARROW rather than a filter that silently matches nothing). `is:followed`
 * and `is:muted` are rewritten by the realm into the internal `conversations`
 * term before matching.
 */
const IS_OPERANDS = new Set(['dm', 'private', 'starred', 'unread', 'mentioned', 'resolved', 'alerted', 'followed', 'muted']);
const HAS_OPERANDS = new Set(['link', 'image', 'reaction', 'attachment']);
const KNOWN_ELSEWHERE = new Set<string>();

/** Parses a decoded narrow value (a list of objects or pairs) into terms. */
export function parseNarrow(value: unknown): NarrowTerm[] {
  if (value === null || value === undefined || value === '') return [];
  if (!Array.isArray(value)) throw badNarrow('Invalid narrow: expected a list');
  const terms = value.map((raw): NarrowTerm => {
    let operator: unknown;
    let operand: unknown;
    let negated: unknown = false;
    if (Array.isArray(raw)) {
      if (raw.length !== 2) throw badNarrow('Invalid narrow: each pair needs an operator and an operand');
      [operator, operand] = raw;
    } else if (raw && typeof raw === 'object') {
      ({ operator, operand, negated = false } = raw as Record<string, unknown>);
    } else {
      throw badNarrow('Invalid narrow: each element must be an object or a pair');
    }
    if (typeof operator !== 'string') throw badNarrow('Invalid narrow: operator must be a string');
    if (typeof negated !== 'boolean') throw badNarrow('Invalid narrow: negated must be a boolean');
    const op = ALIASES[operator] ?? operator;
    if (!OPERATORS.has(op)) throw badNarrow(`Invalid narrow operator: unknown operator ${operator}`);
    const ok =
      typeof operand === 'string' ||
      (typeof operand === 'number' && Number.isInteger(operand)) ||
      (Array.isArray(operand) && operand.every((n) => Number.isInteger(n)));
    if (!ok) throw badNarrow(`Invalid narrow operand for ${operator}`);
    if ((op === 'is' || op === 'has') && !(op === 'is' ? IS_OPERANDS : HAS_OPERANDS).has(String(operand))) {
      if (KNOWN_ELSEWHERE.has(`${op}:${String(operand)}`)) throw badNarrow(`Invalid narrow operator: '${op}:${String(operand)}' is not supported by this server yet`);
      throw badNarrow(`Invalid narrow operator: unknown '${op}' operand ${String(operand)}`);
    }
    if (op === 'with' && (typeof operand === 'object' || !/^\d+$/.test(String(operand)))) throw badNarrow("Invalid 'with' operator");
    if (op === 'channels' && operand !== 'public' && operand !== 'web-public') throw badNarrow(`Invalid narrow operator: unknown 'channels' operand ${String(operand)}`);
    return { operator: op, operand: operand as NarrowTerm['operand'], negated };
  });
  if (terms.filter((t) => t.operator === 'with').length > 1) throw badNarrow("Duplicate 'with' operators.");
  return terms;
}

/** The user IDs or emails named by a `dm`/`dm-including`/`sender` operand. */
export function operandPeople(operand: NarrowTerm['operand']): { ids: number[]; emails: string[] } {
  if (Array.isArray(operand)) return { ids: operand, emails: [] };
  if (typeof operand === 'number') return { ids: [operand], emails: [] };
  const parts = operand.split(',').map((s) => s.trim()).filter(Boolean);
  const ids = parts.filter((p) => /^\d+$/.test(p)).map(Number);
  const emails = parts.filter((p) => !/^\d+$/.test(p)).map((e) => e.toLowerCase());
  return { ids, emails };
}

/** The IDs of a resolved operand (`resolveNarrow` leaves only IDs where people or channels are named). */
const ids = (operand: NarrowTerm['operand']): number[] => (Array.isArray(operand) ? operand : typeof operand === 'number' ? [operand] : []);

function termMatches(t: NarrowTerm, m: MessageView): boolean {
  const s = String(t.operand);
  switch (t.operator) {
    case 'channel':
      return m.type === 'stream' && m.streamId === Number(t.operand);
    case 'channels':
      return m.type === 'stream' && ids(t.operand).includes(m.streamId!);
    case 'topic':
      return m.type === 'stream' && m.topic.toLowerCase() === s.toLowerCase();
    case 'sender':
      return ids(t.operand).includes(m.senderId);
    case 'dm': {
      // `dm:` names the other participants (the viewer may be left out): every
      // participant is named, or all but one.
      if (m.type !== 'private') return false;
      const named = ids(t.operand);
      const participants = m.dmUserIds ?? [];
      return named.every((id) => participants.includes(id)) && participants.length - new Set(named).size <= 1;
    }
    case 'dm-including':
      return m.type === 'private' && ids(t.operand).every((id) => (m.dmUserIds ?? []).includes(id));
    case 'is':
      switch (s) {
        case 'dm':
        case 'private':
          return m.type === 'private';
        case 'starred':
          return m.flags.includes('starred');
        case 'unread':
          return !m.flags.includes('read');
        case 'mentioned':
          return m.flags.some((f) => f === 'mentioned' || f.endsWith('wildcard_mentioned'));
        case 'alerted':
          return m.flags.includes('has_alert_word');
        case 'resolved':
          return m.type === 'stream' && m.topic.startsWith('✔ ');
        default:
          return false;
      }
    case 'has':
      if (s === 'link') return /https?:\/\//i.test(m.content);
      if (s === 'reaction') return m.hasReaction === true;
      if (s === 'attachment') return /\/user_uploads\/\d+\//.test(m.content);
      return /\.(png|jpe?g|gif|webp)\b/i.test(m.content);
    case 'search':
      return s.toLowerCase().split(/\s+/).filter(Boolean).every((w) => m.content.toLowerCase().includes(w) || m.topic.toLowerCase().includes(w));
    case 'conversations': {
      // Internal (made by the realm from is:followed / is:muted): channels and `<channel>:<topic>` keys, with exceptions.
      if (m.type !== 'stream') return false;
      const set = JSON.parse(s) as { channels: number[]; topics: string[]; except: string[] };
      const key = `${m.streamId}:${m.topic.toLowerCase()}`;
      if (set.except.includes(key)) return false;
      return set.topics.includes(key) || set.channels.includes(m.streamId!);
    }
    case 'near':
      // As in Zulip, `near` only suggests where to anchor a view; it does not filter.
      return true;
    case 'id':
      return m.id === Number(t.operand);
    default:
      // `with` is rewritten into its conversation before any matching; nothing else parses.
      throw new Error(`narrow operator ${t.operator} reached the matcher unresolved`);
  }
}

/** True when the message matches every term of a resolved narrow. */
export function matchesNarrow(terms: NarrowTerm[], m: MessageView): boolean {
  for (const t of terms) if (termMatches(t, m) === t.negated) return false;
  return true;
}
