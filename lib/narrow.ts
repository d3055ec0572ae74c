/**
 * The narrow language shared by GET /messages, POST /register and the queue
 * actors: parsing (with legacy `[operator, operand]` pairs and legacy operator
 * names) and matching a message against a narrow.
 *
 * Matching works on resolved narrows: the realm actor first turns every
 * operand that names a channel or a person into IDs (`resolveNarrow` in
 * `actors/realm/actions/messages/messages.ts`), so a message is matched by its IDs alone and a
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
  /** The rendered HTML (`mentions:` reads its visible personal mentions); absent, nobody is mentioned. */
  rendered?: string;
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
  'channel', 'channels', 'topic', 'sender', 'dm', 'dm-including', 'is', 'has', 'search', 'id', 'near', 'with', 'mentions',
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

/**
 * Bounds on a narrow, so a request's cost is bounded by more than the body
 * limit (a 1 MB list of 170,000 addresses was accepted): terms per narrow,
 * people or channels named by one operand, characters of a text operand.
 */
export const NARROW_LIMITS = { terms: 50, operandItems: 1000, operandChars: 10_000 } as const;

/** Parses a decoded narrow value (a list of objects or pairs) into terms. */
export function parseNarrow(value: unknown): NarrowTerm[] {
  if (value === null || value === undefined || value === '') return [];
  if (!Array.isArray(value)) throw badNarrow('Invalid narrow: expected a list');
  if (value.length > NARROW_LIMITS.terms) throw badNarrow(`Invalid narrow: at most ${NARROW_LIMITS.terms} terms`);
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
    if (Array.isArray(operand) ? operand.length > NARROW_LIMITS.operandItems : typeof operand === 'string' && (operand.length > NARROW_LIMITS.operandChars || countItems(operand) > NARROW_LIMITS.operandItems)) {
      throw badNarrow(`Invalid narrow operand for ${operator}: at most ${NARROW_LIMITS.operandItems} items or ${NARROW_LIMITS.operandChars} characters`);
    }
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

/** How many comma-separated items a text operand names (people in `dm:a,b,c`). */
function countItems(operand: string): number {
  let n = 1;
  for (let i = operand.indexOf(','); i !== -1; i = operand.indexOf(',', i + 1)) n++;
  return n;
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

type Test = (m: MessageView) => boolean;

/**
 * One term as a test, with its operand prepared once (sets of IDs, lowered
 * words, the parsed conversation list): matching a message then costs the
 * same however large the operand, instead of parsing it again per message.
 */
function compileTerm(t: NarrowTerm): Test {
  const s = String(t.operand);
  switch (t.operator) {
    case 'channel': {
      const id = Number(t.operand);
      return (m) => m.type === 'stream' && m.streamId === id;
    }
    case 'channels': {
      const set = new Set(ids(t.operand));
      return (m) => m.type === 'stream' && set.has(m.streamId!);
    }
    case 'topic': {
      const topic = s.toLowerCase();
      return (m) => m.type === 'stream' && m.topic.toLowerCase() === topic;
    }
    case 'sender': {
      const set = new Set(ids(t.operand));
      return (m) => set.has(m.senderId);
    }
    case 'mentions': {
      // A direct, visible personal mention (FL 446): the rendered `@**Name**` span, as Zulip's
      // search does; silent mentions (class `silent`), wildcards and group mentions render otherwise.
      const spans = ids(t.operand).map((id) => `<span class="user-mention" data-user-id="${id}">`);
      return (m) => spans.some((span) => m.rendered?.includes(span) === true);
    }
    case 'dm': {
      // `dm:` names the other participants (the viewer may be left out): every
      // participant is named, or all but one.
      const named = new Set(ids(t.operand));
      return (m) => {
        if (m.type !== 'private') return false;
        const participants = m.dmUserIds ?? [];
        if (participants.length - named.size > 1) return false;
        for (const id of named) if (!participants.includes(id)) return false;
        return true;
      };
    }
    case 'dm-including': {
      const named = [...new Set(ids(t.operand))];
      return (m) => m.type === 'private' && named.every((id) => (m.dmUserIds ?? []).includes(id));
    }
    case 'is':
      switch (s) {
        case 'dm':
        case 'private':
          return (m) => m.type === 'private';
        case 'starred':
          return (m) => m.flags.includes('starred');
        case 'unread':
          return (m) => !m.flags.includes('read');
        case 'mentioned':
          return (m) => m.flags.some((f) => f === 'mentioned' || f.endsWith('wildcard_mentioned'));
        case 'alerted':
          return (m) => m.flags.includes('has_alert_word');
        case 'resolved':
          return (m) => m.type === 'stream' && m.topic.startsWith('✔ ');
        default:
          return () => false;
      }
    case 'has':
      if (s === 'link') return (m) => /https?:\/\//i.test(m.content);
      if (s === 'reaction') return (m) => m.hasReaction === true;
      if (s === 'attachment') return (m) => /\/user_uploads\/\d+\//.test(m.content);
      return (m) => /\.(png|jpe?g|gif|webp)\b/i.test(m.content);
    case 'search': {
      const words = s.toLowerCase().split(/\s+/).filter(Boolean);
      return (m) => {
        const content = m.content.toLowerCase();
        const topic = m.topic.toLowerCase();
        return words.every((w) => content.includes(w) || topic.includes(w));
      };
    }
    case 'conversations': {
      // Internal (made by the realm from is:followed / is:muted): channels and `<channel>:<topic>` keys, with exceptions.
      const set = JSON.parse(s) as { channels: number[]; topics: string[]; except: string[] };
      const channels = new Set(set.channels);
      const topics = new Set(set.topics);
      const except = new Set(set.except);
      return (m) => {
        if (m.type !== 'stream') return false;
        const key = `${m.streamId}:${m.topic.toLowerCase()}`;
        return !except.has(key) && (topics.has(key) || channels.has(m.streamId!));
      };
    }
    case 'near':
      // As in Zulip, `near` only suggests where to anchor a view; it does not filter.
      return () => true;
    case 'id': {
      const id = Number(t.operand);
      return (m) => m.id === id;
    }
    default:
      // `with` is rewritten into its conversation before any matching; nothing else parses.
      throw new Error(`narrow operator ${t.operator} reached the matcher unresolved`);
  }
}

/** A resolved narrow as one test (`matchesNarrow` keeps it with the narrow). */
export function compileNarrow(terms: readonly NarrowTerm[]): Test {
  const tests = terms.map((t) => {
    const test = compileTerm(t);
    return t.negated ? (m: MessageView) => !test(m) : test;
  });
  return (m) => {
    for (const test of tests) if (!test(m)) return false;
    return true;
  };
}

const compiled = new WeakMap<readonly NarrowTerm[], Test>();

/** True when the message matches every term of a resolved narrow (compiled on first use, kept with the narrow's array). */
export function matchesNarrow(terms: readonly NarrowTerm[], m: MessageView): boolean {
  let test = compiled.get(terms);
  if (!test) compiled.set(terms, (test = compileNarrow(terms)));
  return test(m);
}
