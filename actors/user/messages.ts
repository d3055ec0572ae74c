/**
 * GET /messages for one user: the realm actor says which recipients' history
 * the user may read and resolves the narrow to IDs; this reads those
 * partitions (messages are stored once per recipient), applies the user's
 * flags and the narrow, and pages around the anchor.
 */
import { matchesNarrow, type MessageView, type NarrowTerm } from '../../lib/narrow.ts';
import type { Store } from '../../storage/store.ts';
import { messageBucket, type StoredMessage, T } from '../../storage/tables.ts';
import { defaultFlags, topicForClient } from '../format.ts';
import { inSource } from '../model.ts';
import type { MessageSource, WithTarget } from '../realm/actions/messages/messages.ts';
import { type FlagRows, readFlagRows, readMessages, userFlags } from './flags.ts';

/** Anchor reported when `first_unread` finds nothing (Zulip's LARGER_THAN_MAX_MESSAGE_ID). */
export const LARGER_THAN_MAX_MESSAGE_ID = 10000000000000000;
const CHUNK = 200;
/** At most this many unread messages in the register (Zulip's MAX_UNREAD_MESSAGES). */
export const MAX_UNREAD = 50_000;
/**
 * How many messages above the read watermark the register's unread summary
 * looks at before it gives up (and says `old_unreads_missing`): the scan
 * stays bounded for a user who has not marked everything read for a long time.
 */
const UNREAD_SCAN = 20_000;
/** How long one request's scans of history may run (the gateway waits PARLEY_REQUEST_TIMEOUT_MS, 10 s by default). */
const SCAN_MS = 5_000;

export function messageView(m: StoredMessage, flags: string[]): MessageView {
  return { id: m.id, type: m.type, streamId: m.streamId, topic: m.topic, senderId: m.senderId, dmUserIds: m.dmUserIds, content: m.content, rendered: m.renderedContent, flags, hasReaction: m.reactions.length > 0 };
}

export interface Page {
  messages: StoredMessage[];
  anchor: number;
  foundAnchor: boolean;
  foundOldest: boolean;
  foundNewest: boolean;
}

export class MessageReader {
  /** Flag rows by bucket, read once per reader (a reader serves one request). */
  private rows = new Map<number, Promise<FlagRows>>();
  /** Each source's list of buckets, read once per reader (the date anchor's search looks at them again and again). */
  private bucketLists = new Map<string, ReturnType<ReturnType<typeof T.recipientBuckets.partition>['range']>>();
  /** Flags of every message this reader looked at. */
  private flags = new Map<number, string[]>();
  /** Messages looked at so far, and how many a scan may look at before it gives up. */
  examined = 0;
  budget = Number.POSITIVE_INFINITY;
  /**
   * When scans stop, whatever they found by then (`SCAN_MS` after the reader
   * was made: before the gateway gives up on the request, so the client gets
   * a page that says it is incomplete instead of a 503 while the work goes on).
   */
  private readonly deadline = performance.now() + SCAN_MS;
  /** Whether a scan stopped at the budget or the deadline before it had looked at everything. */
  cutShort = false;

  constructor(
    private readonly store: Store,
    private readonly realmId: number,
    private readonly userId: number,
    private readonly readBelow: number,
    /** Messages whose flag row lacks `read` (`UserMarks.unreadRows`). */
    private readonly unreadRows: ReadonlySet<number>,
  ) {}

  private flagRows(bucket: number): Promise<FlagRows> {
    let p = this.rows.get(bucket);
    if (!p) this.rows.set(bucket, (p = readFlagRows(this.store, this.realmId, this.userId, bucket)));
    return p;
  }

  /** The user's flags of `m`, read through `src`. */
  async flagsFor(m: StoredMessage, src: MessageSource): Promise<string[]> {
    const known = this.flags.get(m.id);
    if (known) return known;
    const rows = await this.flagRows(messageBucket(m.id));
    const flags = userFlags(m, this.userId, src.receivedFrom, this.readBelow, rows.get(m.id));
    this.flags.set(m.id, flags);
    return flags;
  }

  /** Flags of a message this reader has looked at. */
  flagsOf(m: StoredMessage): string[] {
    return this.flags.get(m.id) ?? defaultFlags(m, this.userId);
  }

  /** Up to `limit` matching messages of one source within [lo, hi], in the given direction. */
  private async scan(src: MessageSource, narrow: NarrowTerm[], lo: number, hi: number, reverse: boolean, limit: number): Promise<StoredMessage[]> {
    lo = Math.max(lo, src.minId);
    if (src.maxId !== undefined) hi = Math.min(hi, src.maxId);
    if (limit <= 0 || lo > hi) return [];
    const all = await T.recipientBuckets.partition(this.realmId, src.recipientKey).range(this.store, { reverse });
    const buckets = all.filter(({ ck }) => Number(ck) >= messageBucket(lo) && Number(ck) <= messageBucket(Math.min(hi, Number.MAX_SAFE_INTEGER)));
    const out: StoredMessage[] = [];
    for (const { ck } of buckets) {
      const partition = T.messages.partition(this.realmId, src.recipientKey, Number(ck));
      let cursorLo = lo;
      let cursorHi = hi;
      for (;;) {
        if (this.examined >= this.budget || performance.now() > this.deadline) {
          this.cutShort = true;
          return out;
        }
        const rows = await partition.values(this.store, { gte: cursorLo, lte: cursorHi, reverse, limit: CHUNK });
        for (const m of rows) {
          this.examined++;
          if (matchesNarrow(narrow, messageView(m, await this.flagsFor(m, src)))) {
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

  /**
   * The newest message the user received (Zulip's `max_message_id`: the
   * newest of their messages, not the organization's), or -1: per source,
   * the newest row at or above where they started receiving it, found from
   * its newest bucket down (a bucket may have lost its rows to deletes).
   */
  async newestReceived(sources: MessageSource[]): Promise<number> {
    const newest = await Promise.all(
      sources
        .filter((src) => src.receivedFrom !== null)
        .map(async (src) => {
          const lo = Math.max(src.minId, src.receivedFrom!);
          for (const { ck } of await T.recipientBuckets.partition(this.realmId, src.recipientKey).range(this.store, { reverse: true })) {
            if (Number(ck) < messageBucket(lo)) break;
            const [m] = await T.messages.partition(this.realmId, src.recipientKey, Number(ck)).values(this.store, { gte: lo, reverse: true, limit: 1 });
            if (m) return m.id;
          }
          return -1;
        }),
    );
    return Math.max(-1, ...newest);
  }

  /** The first message of `src` with an ID at or above `from`, or null: one row read per bucket it looks in. */
  private async firstFrom(src: MessageSource, from: number): Promise<StoredMessage | null> {
    const lo = Math.max(from, src.minId);
    const hi = Math.min(src.maxId ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
    if (lo > hi) return null;
    let buckets = this.bucketLists.get(src.recipientKey);
    if (!buckets) this.bucketLists.set(src.recipientKey, (buckets = T.recipientBuckets.partition(this.realmId, src.recipientKey).range(this.store)));
    for (const { ck } of await buckets) {
      if (Number(ck) < messageBucket(lo)) continue;
      if (Number(ck) > messageBucket(hi)) break;
      const [m] = await T.messages.partition(this.realmId, src.recipientKey, Number(ck)).values(this.store, { gte: lo, lte: hi, limit: 1 });
      if (m) return m;
    }
    return null;
  }

  /**
   * The first message among `sources` sent at or after `timestamp` (seconds),
   * or null (anchor `date`, FL 445). Message IDs grow with time, so this is a
   * binary search over IDs: each step reads the first message of every source
   * at or above the middle, about 50 steps whatever the history's length.
   */
  async firstSentFrom(sources: MessageSource[], timestamp: number): Promise<number | null> {
    let best: number | null = null;
    let lo = 0;
    let hi = Number.MAX_SAFE_INTEGER;
    while (lo < hi) {
      const mid = lo + Math.floor((hi - lo) / 2);
      const firsts = (await Promise.all(sources.map((src) => this.firstFrom(src, mid)))).filter((m) => m !== null);
      const first = firsts.reduce<StoredMessage | null>((a, m) => (a === null || m.id < a.id ? m : a), null);
      if (first === null) hi = mid;
      else if (first.timestamp >= timestamp) {
        best = first.id;
        hi = mid;
      } else lo = first.id + 1;
    }
    return best;
  }

  /** Merges per-source scans: the `limit` nearest matching messages in (lo..hi). */
  async collect(sources: MessageSource[], narrow: NarrowTerm[], lo: number, hi: number, reverse: boolean, limit: number): Promise<StoredMessage[]> {
    const all = (await Promise.all(sources.map((s) => this.scan(s, narrow, lo, hi, reverse, limit)))).flat();
    all.sort((a, b) => (reverse ? b.id - a.id : a.id - b.id));
    return all.slice(0, limit);
  }

  /**
   * The unread messages among `sources` matching `narrow`, newest first, at
   * most `limit`: those at or above the read watermark without `read`, and
   * those below it whose flag row lacks `read` (`unreadRows`). `complete`
   * is false when the limit or the scan budget cut the search short.
   */
  async unread(sources: MessageSource[], narrow: NarrowTerm[], limit: number, reverse = true): Promise<{ messages: StoredMessage[]; complete: boolean }> {
    const received = sources.filter((s) => s.receivedFrom !== null).map((s) => ({ ...s, minId: Math.max(s.minId, s.receivedFrom!) }));
    const unreadTerm: NarrowTerm = { operator: 'is', operand: 'unread', negated: false };
    const unreadNarrow = [...narrow, unreadTerm];
    const recent = await this.collect(received, unreadNarrow, this.readBelow, Number.MAX_SAFE_INTEGER, reverse, limit);
    // Rows that lack `read` outside the range scanned above: below the watermark, or of messages sent
    // before the user subscribed (historical ones they marked unread, as Zulip keeps a UserMessage row for).
    const bySource = new Map(sources.filter((s) => s.receivedFrom !== null).map((s) => [s.recipientKey, s]));
    const scanned = (m: StoredMessage, src: MessageSource) => m.id >= this.readBelow && m.id >= src.receivedFrom!;
    // IDs at or above the watermark and every source's start were in the scan whatever their source: not read again.
    const scannedEverywhere = Math.max(this.readBelow, ...[...bySource.values()].map((s) => s.receivedFrom!));
    const older: StoredMessage[] = [];
    for (const m of await readMessages(this.store, this.realmId, [...this.unreadRows].filter((id) => id < scannedEverywhere))) {
      const src = bySource.get(m.recipientKey);
      if (src && inSource(src, m.id) && !scanned(m, src) && matchesNarrow(unreadNarrow, messageView(m, await this.flagsFor(m, src)))) older.push(m);
    }
    const messages = (reverse ? [...recent, ...older.sort((a, b) => b.id - a.id)] : [...older.sort((a, b) => a.id - b.id), ...recent]).slice(0, limit);
    return { messages, complete: !this.cutShort && recent.length < limit && messages.length < limit };
  }

  /**
   * The register's `unread_msgs`: every unread message the user received, up
   * to MAX_UNREAD (newest first, as Zulip caps them); `old_unreads_missing`
   * says when older ones were left out.
   */
  async unreads(sources: MessageSource[], muted: NarrowTerm | null = null, emptyTopicDisplayName: string | null = null) {
    this.budget = UNREAD_SCAN;
    const found = await this.unread(sources, [], MAX_UNREAD);
    const unread = found.messages.reverse();
    // Zulip's count leaves out channel messages in muted channels and topics (the lists keep them).
    const mutedNarrow = muted ? [muted] : [];
    const counted = muted ? unread.filter((m) => !matchesNarrow(mutedNarrow, messageView(m, this.flagsOf(m)))) : unread;
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
      count: counted.length,
      pms: group((m) => (m.type === 'private' && oneToOne(m) ? (participants(m).find((id) => id !== this.userId) ?? this.userId) : null)).map((g) => ({ other_user_id: g.key, sender_id: g.key, unread_message_ids: g.ids })),
      streams: group((m) => (m.type === 'stream' ? { streamId: m.streamId!, topic: m.topic } : null)).map((g) => ({ stream_id: g.key.streamId, topic: topicForClient(g.key.topic, emptyTopicDisplayName), unread_message_ids: g.ids })),
      huddles: group((m) => (m.type === 'private' && !oneToOne(m) ? participants(m).join(',') : null)).map((g) => ({ user_ids_string: g.key, unread_message_ids: g.ids })),
      mentions: unread.filter((m) => this.flagsOf(m).some((f) => f === 'mentioned' || f.endsWith('wildcard_mentioned'))).map((m) => m.id),
      old_unreads_missing: !found.complete,
    };
  }

  /**
   * The messages of `ids` the user may read and `narrow` matches, oldest
   * first (Zulip's fetch of `message_ids`, FL 300): IDs of messages that do
   * not exist or that the user may not read are left out, not refused.
   */
  async byIds(ids: number[], narrow: NarrowTerm[], sources: MessageSource[]): Promise<Page> {
    const out: StoredMessage[] = [];
    for (const m of await readMessages(this.store, this.realmId, [...new Set(ids)])) {
      const src = sources.find((x) => x.recipientKey === m.recipientKey && inSource(x, m.id));
      if (src && matchesNarrow(narrow, messageView(m, await this.flagsFor(m, src)))) out.push(m);
    }
    return { messages: out.sort((a, b) => a.id - b.id), anchor: 0, foundAnchor: false, foundOldest: false, foundNewest: false };
  }

  /** The page of messages around `anchor` (Zulip's fetch_messages and post_process_limited_query). */
  async page(q: { anchor: number | 'newest' | 'oldest' | 'first_unread' | 'date'; anchorDate?: number | null; numBefore: number; numAfter: number; includeAnchor: boolean }, narrow: NarrowTerm[], sources: MessageSource[]): Promise<Page> {
    let anchor: number;
    if (q.anchor === 'date') anchor = (await this.firstSentFrom(sources, Math.ceil((q.anchorDate ?? 0) / 1000))) ?? LARGER_THAN_MAX_MESSAGE_ID;
    else if (q.anchor === 'newest') anchor = LARGER_THAN_MAX_MESSAGE_ID;
    else if (q.anchor === 'oldest') anchor = 0;
    else if (q.anchor === 'first_unread') {
      const unread = await this.unread(sources, narrow, 1, false);
      anchor = unread.messages[0]?.id ?? LARGER_THAN_MAX_MESSAGE_ID;
    } else anchor = Math.min(q.anchor, LARGER_THAN_MAX_MESSAGE_ID);
    this.cutShort = false;
    const before = await this.collect(sources, narrow, 0, anchor - 1, true, q.numBefore + 1);
    const beforeComplete = !this.cutShort;
    const at = q.includeAnchor && anchor > 0 && anchor < LARGER_THAN_MAX_MESSAGE_ID ? await this.collect(sources, narrow, anchor, anchor, false, 1) : [];
    this.cutShort = false;
    const after = await this.collect(sources, narrow, anchor + 1, Number.MAX_SAFE_INTEGER, false, q.numAfter + 1);
    return {
      messages: [...before.slice(0, q.numBefore).reverse(), ...at, ...after.slice(0, q.numAfter)],
      anchor,
      foundAnchor: at.length === 1,
      // A scan cut short has not seen the end of history: the client asks again from where it stopped.
      foundOldest: beforeComplete && before.length <= q.numBefore,
      foundNewest: !this.cutShort && after.length <= q.numAfter,
    };
  }
}

/** For a `with:<id>` term: the message it names, read from the store, for the realm to check and resolve. */
export async function withTarget(realmId: number, ctx: { store: Store }, narrow: NarrowTerm[]): Promise<WithTarget | null> {
  const term = narrow.find((t) => t.operator === 'with');
  if (!term) return null;
  const id = Number(term.operand);
  const located = await T.messageLocator.at(realmId, id).get(ctx.store);
  const m = located && (await T.messages.at(realmId, located.recipientKey, id).get(ctx.store));
  return { message: m ? { id: m.id, recipientKey: m.recipientKey, streamId: m.streamId, topic: m.topic, dmUserIds: m.dmUserIds } : null };
}
