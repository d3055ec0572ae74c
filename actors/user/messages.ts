/**
 * GET /messages for one user: the realm actor says which recipients' history
 * the user may read and resolves the narrow to IDs; this reads those
 * partitions (messages are stored once per recipient), applies the user's
 * flags and the narrow, and pages around the anchor.
 */
import { matchesNarrow, type MessageView, type NarrowTerm } from '../../lib/narrow.ts';
import type { Store } from '../../storage/store.ts';
import { type StoredMessage, T } from '../../storage/tables.ts';
import { defaultFlags } from '../format.ts';
import type { MessageSource } from '../realm/messages.ts';

/** Anchor reported when `first_unread` finds nothing (Zulip's LARGER_THAN_MAX_MESSAGE_ID). */
export const LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000;
const CHUNK = 200;
/** How many of the newest readable messages the register's unread summary looks at. */
const UNREAD_SCAN = 1000;

export function messageView(m: StoredMessage, flags: string[]): MessageView {
  return { id: m.id, type: m.type, streamId: m.streamId, topic: m.topic, senderId: m.senderId, dmUserIds: m.dmUserIds, content: m.content, flags };
}

export interface Page {
  messages: StoredMessage[];
  anchor: number;
  foundAnchor: boolean;
  foundOldest: boolean;
  foundNewest: boolean;
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
    const buckets = await T.recipientBuckets.partition(this.realmId, src.recipientKey).range(this.store, { reverse });
    const out: StoredMessage[] = [];
    for (const { ck } of buckets) {
      const partition = T.messages.partition(this.realmId, src.recipientKey, Number(ck));
      let cursorLo = lo;
      let cursorHi = hi;
      for (;;) {
        const rows = await partition.values(this.store, { gte: cursorLo, lte: cursorHi, reverse, limit: CHUNK });
        for (const m of rows) {
          if (matchesNarrow(narrow, messageView(m, this.flagsOf(m)))) {
            out.push(m);
            if (out.length >= limit) return out;
          }
        }
        if (rows.length < CHUNK) break;
        // Long scans read synchronously from lmdb: let other requests in between chunks.
        await new Promise((r) => setImmediate(r));
        const last = rows[rows.length - 1]!.id;
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
    const group = <K>(key: (m: StoredMessage) => K | null) => {
      const map = new Map<string, { key: K; ids: number[] }>();
      for (const m of unread) {
        const k = key(m);
        if (k === null) continue;
        const id = JSON.stringify(k);
        const entry = map.get(id) ?? { key: k, ids: [] };
        entry.ids.push(m.id);
        map.set(id, entry);
      }
      return [...map.values()];
    };
    const participants = (m: StoredMessage) => m.dmUserIds ?? [];
    const oneToOne = (m: StoredMessage) => participants(m).length <= 2;
    return {
      count: unread.length,
      pms: group((m) => (m.type === 'private' && oneToOne(m) ? (participants(m).find((id) => id !== this.userId) ?? this.userId) : null)).map((g) => ({ other_user_id: g.key, sender_id: g.key, unread_message_ids: g.ids })),
      streams: group((m) => (m.type === 'stream' ? { streamId: m.streamId!, topic: m.topic } : null)).map((g) => ({ stream_id: g.key.streamId, topic: g.key.topic, unread_message_ids: g.ids })),
      huddles: group((m) => (m.type === 'private' && !oneToOne(m) ? participants(m).join(',') : null)).map((g) => ({ user_ids_string: g.key, unread_message_ids: g.ids })),
      mentions: unread.filter((m) => this.flagsOf(m).some((f) => f === 'mentioned' || f.endsWith('wildcard_mentioned'))).map((m) => m.id),
      old_unreads_missing: recent.length >= UNREAD_SCAN,
    };
  }

  /** The page of messages around `anchor` (Zulip's fetch_messages and post_process_limited_query). */
  async page(q: { anchor: number | 'newest' | 'oldest' | 'first_unread'; numBefore: number; numAfter: number; includeAnchor: boolean }, narrow: NarrowTerm[], sources: MessageSource[]): Promise<Page> {
    let anchor: number;
    if (q.anchor === 'newest') anchor = LARGER_THAN_MAX_MESSAGE_ID;
    else if (q.anchor === 'oldest') anchor = 0;
    else if (q.anchor === 'first_unread') {
      const unread = await this.collect(sources, [...narrow, { operator: 'is', operand: 'unread', negated: false }], 0, Number.MAX_SAFE_INTEGER, false, 1);
      anchor = unread[0]?.id ?? LARGER_THAN_MAX_MESSAGE_ID;
    } else anchor = Math.min(q.anchor, LARGER_THAN_MAX_MESSAGE_ID);
    const before = await this.collect(sources, narrow, 0, anchor - 1, true, q.numBefore + 1);
    const at = q.includeAnchor && anchor > 0 && anchor < LARGER_THAN_MAX_MESSAGE_ID ? await this.collect(sources, narrow, anchor, anchor, false, 1) : [];
    const after = await this.collect(sources, narrow, anchor + 1, Number.MAX_SAFE_INTEGER, false, q.numAfter + 1);
    return {
      messages: [...before.slice(0, q.numBefore).reverse(), ...at, ...after.slice(0, q.numAfter)],
      anchor,
      foundAnchor: at.length === 1,
      foundOldest: before.length <= q.numBefore,
      foundNewest: after.length <= q.numAfter,
    };
  }
}
