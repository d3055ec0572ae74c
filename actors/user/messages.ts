/**
 * GET /messages for one user: the realm actor says which recipients' history
 * the user may read; this reads those partitions (messages are immutable once
 * stored), applies the user's flags and the narrow, and pages around the anchor.
 */
import { matchesNarrow, type MessageView, type NarrowTerm } from '../../lib/narrow.ts';
import type { Store } from '../../storage/store.ts';
import { defaultFlags, formatMessage } from '../format.ts';
import type { StoredMessage } from '../model.ts';
import type { UserMsg } from '../protocol.ts';

type GetMessages = Extract<UserMsg, { type: 'getMessages' }>;

export interface MessageSource {
  recipientKey: string;
  minId: number;
}

/** Anchor reported when `first_unread` finds nothing (Zulip's LARGER_THAN_MAX_MESSAGE_ID). */
export const LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000;
const CHUNK = 200;
/** How many of the newest readable messages the register's unread summary looks at. */
const UNREAD_SCAN = 1000;

export function messageView(m: StoredMessage, flags: string[]): MessageView {
  return {
    id: m.id,
    type: m.type,
    streamId: m.streamId,
    streamName: m.streamName,
    topic: m.topic,
    senderId: m.senderId,
    senderEmail: m.senderEmail,
    dmUserIds: m.dmRecipients?.map((r) => r.id) ?? [],
    dmEmails: m.dmRecipients?.map((r) => r.email) ?? [],
    content: m.content,
    flags,
    streamIsPublic: m.streamIsPublic,
  };
}

export class MessageReader {
  constructor(
    private readonly store: Store,
    private readonly realmId: number,
    private readonly userId: number,
    private readonly storedFlags: Map<number, string[]>,
  ) {}

  flagsOf(m: StoredMessage): string[] {
    return this.storedFlags.get(m.id) ?? defaultFlags(m, this.userId);
  }

  /** Up to `limit` matching messages of one source within [lo, hi], in the given direction. */
  private async scan(src: MessageSource, narrow: NarrowTerm[], lo: number, hi: number, reverse: boolean, limit: number): Promise<StoredMessage[]> {
    lo = Math.max(lo, src.minId);
    if (limit <= 0 || lo > hi) return [];
    const buckets = await this.store.range<number>('recipient_buckets', `${this.realmId}:${src.recipientKey}`, { reverse });
    const out: StoredMessage[] = [];
    for (const { ck } of buckets) {
      const bucket = Number(ck);
      let cursorLo = lo;
      let cursorHi = hi;
      for (;;) {
        const rows = await this.store.range<StoredMessage>('messages', `${this.realmId}:${src.recipientKey}:${bucket}`, { gte: cursorLo, lte: cursorHi, reverse, limit: CHUNK });
        for (const { value } of rows) {
          if (matchesNarrow(narrow, messageView(value, this.flagsOf(value)))) {
            out.push(value);
            if (out.length >= limit) return out;
          }
        }
        if (rows.length < CHUNK) break;
        // Long scans read synchronously from lmdb: let other requests in between chunks.
        await new Promise((r) => setImmediate(r));
        const last = Number(rows[rows.length - 1]!.ck);
        if (reverse) cursorHi = last - 1;
        else cursorLo = last + 1;
      }
    }
    return out;
  }

  /** Merges per-source scans: the `limit` nearest matching messages in (lo..hi). */
  async collect(sources: MessageSource[], narrow: NarrowTerm[], lo: number, hi: number, reverse: boolean, limit: number): Promise<StoredMessage[]> {
    const all = (await Promise.all(sources.map((s) => this.scan(s, narrow, lo, hi, reverse, limit)))).flat();
    all.sort((a, b) => (reverse ? b.id - a.id : a.id - b.id));
    return all.slice(0, limit);
  }

  /**
   * The register's `unread_msgs`: unread messages among the newest
   * UNREAD_SCAN messages the user can read. Older unreads are not counted and
   * `old_unreads_missing` says so (Zulip caps the same way).
   */
  async unreads(sources: MessageSource[]) {
    const recent = await this.collect(sources, [], 0, Number.MAX_SAFE_INTEGER, true, UNREAD_SCAN);
    const unread = recent.filter((m) => !this.flagsOf(m).includes('read')).reverse();
    const group = <K>(key: (m: StoredMessage) => K) => {
      const map = new Map<string, { key: K; ids: number[] }>();
      for (const m of unread) {
        const k = key(m);
        const id = JSON.stringify(k);
        const entry = map.get(id) ?? { key: k, ids: [] };
        entry.ids.push(m.id);
        map.set(id, entry);
      }
      return [...map.values()];
    };
    const participants = (m: StoredMessage) => m.dmRecipients?.map((r) => r.id) ?? [];
    const oneToOne = (m: StoredMessage) => participants(m).length <= 2;
    const pms = group((m) => (oneToOne(m) && m.type === 'private' ? participants(m).find((id) => id !== this.userId) ?? this.userId : null)).filter((g) => g.key !== null);
    return {
      count: unread.length,
      pms: pms.map((g) => ({ other_user_id: g.key, sender_id: g.key, unread_message_ids: g.ids })),
      streams: group((m) => (m.type === 'stream' ? `${m.streamId}\u0000${m.topic}` : null))
        .filter((g) => g.key !== null)
        .map((g) => {
          const [streamId, topic] = g.key!.split('\u0000') as [string, string];
          return { stream_id: Number(streamId), topic, unread_message_ids: g.ids };
        }),
      huddles: group((m) => (m.type === 'private' && !oneToOne(m) ? participants(m).join(',') : null))
        .filter((g) => g.key !== null)
        .map((g) => ({ user_ids_string: g.key, unread_message_ids: g.ids })),
      mentions: unread.filter((m) => this.flagsOf(m).some((f) => f === 'mentioned' || f.endsWith('wildcard_mentioned'))).map((m) => m.id),
      old_unreads_missing: recent.length >= UNREAD_SCAN,
    };
  }

  async fetch(msg: GetMessages, sources: MessageSource[]) {
    const narrow = msg.narrow;
    let anchor: number;
    if (msg.anchor === 'newest') anchor = LARGER_THAN_MAX_MESSAGE_ID;
    else if (msg.anchor === 'oldest') anchor = 0;
    else if (msg.anchor === 'first_unread') {
      const unread = await this.collect(sources, [...narrow, { operator: 'is', operand: 'unread', negated: false }], 0, Number.MAX_SAFE_INTEGER, false, 1);
      anchor = unread[0]?.id ?? LARGER_THAN_MAX_MESSAGE_ID;
    } else anchor = msg.anchor;

    const before = await this.collect(sources, narrow, 0, anchor - 1, true, msg.numBefore + 1);
    const at = msg.includeAnchor && anchor > 0 && anchor < LARGER_THAN_MAX_MESSAGE_ID ? await this.collect(sources, narrow, anchor, anchor, false, 1) : [];
    const after = await this.collect(sources, narrow, anchor + 1, Number.MAX_SAFE_INTEGER, false, msg.numAfter + 1);
    const foundOldest = before.length <= msg.numBefore;
    const foundNewest = after.length <= msg.numAfter;
    const page = [...before.slice(0, msg.numBefore).reverse(), ...at, ...after.slice(0, msg.numAfter)];
    return {
      messages: page.map((m) => ({ ...formatMessage(m, msg), flags: this.flagsOf(m) })),
      anchor,
      found_anchor: at.length === 1,
      found_oldest: foundOldest,
      found_newest: foundNewest,
      history_limited: false,
    };
  }
}
