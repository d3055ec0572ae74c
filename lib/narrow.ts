/**
 * The narrow language shared by GET /messages, POST /register and the queue
 * actors: parsing (with legacy `[operator, operand]` pairs and legacy operator
 * names) and matching a message against a narrow.
 */
import { badNarrow } from './errors.ts';

export interface NarrowTerm {
  operator: string;
  operand: string | number | number[];
  negated: boolean;
}

/** What the matcher needs to know of a message (built from a stored row or an event). */
export interface MessageView {
  id: number;
  type: 'stream' | 'private';
  streamId: number | null;
  streamName: string | null;
  topic: string;
  senderId: number;
  senderEmail: string;
  /** Every participant of a direct message, the sender included. */
  dmUserIds: number[];
  dmEmails: string[];
  content: string;
  flags: string[];
  streamIsPublic: boolean;
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
const IS_OPERANDS = new Set(['dm', 'private', 'starred', 'unread', 'mentioned', 'resolved', 'alerted', 'followed', 'muted']);
const HAS_OPERANDS = new Set(['link', 'image', 'attachment', 'reaction']);

/** Parses a decoded narrow value (a list of objects or pairs) into terms. */
export function parseNarrow(value: unknown): NarrowTerm[] {
  if (value === null || value === undefined || value === '') return [];
  if (!Array.isArray(value)) throw badNarrow('Invalid narrow: expected a list');
  return value.map((raw): NarrowTerm => {
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
    if (op === 'is' && !IS_OPERANDS.has(String(operand))) throw badNarrow(`Invalid narrow operator: unknown 'is' operand ${String(operand)}`);
    if (op === 'has' && !HAS_OPERANDS.has(String(operand))) throw badNarrow(`Invalid narrow operator: unknown 'has' operand ${String(operand)}`);
    if (op === 'channels' && operand !== 'public' && operand !== 'web-public') throw badNarrow(`Invalid narrow operator: unknown 'channels' operand ${String(operand)}`);
    return { operator: op, operand: operand as NarrowTerm['operand'], negated };
  });
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

function personMatches(operand: NarrowTerm['operand'], id: number, email: string): boolean {
  const { ids, emails } = operandPeople(operand);
  return ids.includes(id) || emails.includes(email.toLowerCase());
}

function dmMatches(operand: NarrowTerm['operand'], m: MessageView): boolean {
  if (m.type !== 'private') return false;
  const { ids, emails } = operandPeople(operand);
  const named = new Set<string>();
  for (const id of ids) {
    const i = m.dmUserIds.indexOf(id);
    if (i === -1) return false;
    named.add(m.dmEmails[i]!.toLowerCase());
  }
  for (const e of emails) {
    if (!m.dmEmails.some((x) => x.toLowerCase() === e)) return false;
    named.add(e);
  }
  // `dm:` names the other participants (the viewer may be left out); the
  // conversation matches when every participant is named, or all but one.
  return named.size >= m.dmEmails.length - 1;
}

function termMatches(t: NarrowTerm, m: MessageView): boolean {
  const s = String(t.operand);
  switch (t.operator) {
    case 'channel':
      return m.type === 'stream' && (typeof t.operand === 'number' || /^\d+$/.test(s) ? m.streamId === Number(s) : m.streamName?.toLowerCase() === s.toLowerCase());
    case 'channels':
      return m.type === 'stream' && m.streamIsPublic;
    case 'topic':
      return m.type === 'stream' && m.topic.toLowerCase() === s.toLowerCase();
    case 'sender':
      return personMatches(t.operand, m.senderId, m.senderEmail);
    case 'dm':
      return dmMatches(t.operand, m);
    case 'dm-including':
      return m.type === 'private' && operandPeople(t.operand).ids.every((id) => m.dmUserIds.includes(id)) &&
        operandPeople(t.operand).emails.every((e) => m.dmEmails.some((x) => x.toLowerCase() === e));
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
      if (s === 'image') return /\.(png|jpe?g|gif|webp)\b/i.test(m.content);
      return false;
    case 'search':
      return s.toLowerCase().split(/\s+/).filter(Boolean).every((w) => m.content.toLowerCase().includes(w) || m.topic.toLowerCase().includes(w));
    case 'id':
    case 'near':
      return true;
    case 'with':
      return true;
    default:
      return false;
  }
}

/** True when the message matches every term of the narrow. */
export function matchesNarrow(terms: NarrowTerm[], m: MessageView): boolean {
  for (const t of terms) {
    if (t.operator === 'id') {
      if ((m.id === Number(t.operand)) === t.negated) return false;
      continue;
    }
    if (termMatches(t, m) === t.negated) return false;
  }
  return true;
}
