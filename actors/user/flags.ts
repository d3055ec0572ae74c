/**
 * A user's message flags: what each flag of a message is for this user, and
 * where that is kept.
 *
 * A message's base flags follow from the message itself (`defaultFlags`: the
 * sender's own message read, mentions), from whether the user received it
 * (a message from before they subscribed, or in a channel they only read, is
 * `read` + `historical`, as in Zulip), and from the user's read watermark
 * (`UserMarks.readBelow`: POST /mark_all_as_read moves it, so marking
 * everything read writes one row). A `user_flags` row holds a message's full
 * flag list only where it differs from the base, in partitions per message
 * bucket; the user actor keeps a few recently used buckets in memory
 * (`FlagCache`), so its memory stays bounded however long the history is.
 */
import type { Store } from '../../storage/store.ts';
import { messageBucket, type StoredMessage, T, type UserMarks } from '../../storage/tables.ts';
import { defaultFlags } from '../format.ts';
import { inSource } from '../model.ts';
import type { MessageSource } from '../realm/actions/messages/messages.ts';

/** Every flag name of the API, in the order Zulip lists them. */
export const FLAG_ORDER = ['read', 'starred', 'collapsed', 'mentioned', 'stream_wildcard_mentioned', 'topic_wildcard_mentioned', 'group_mentioned', 'has_alert_word', 'historical'] as const;
/** Flags a user may change; the others follow from the message. */
export const EDITABLE_FLAGS = new Set(['read', 'starred', 'collapsed']);
const RANK = new Map<string, number>(FLAG_ORDER.map((f, i) => [f, i]));
export const sortFlags = (flags: Iterable<string>): string[] => [...new Set(flags)].sort((a, b) => (RANK.get(a) ?? 99) - (RANK.get(b) ?? 99));

/** Buckets of flag rows an actor keeps in memory. */
const CACHED_BUCKETS = 4;

/** The in-memory marks: the stored row with sets for its lists. */
export interface Marks {
  readBelow: number;
  unreadRows: Set<number>;
  starred: Set<number>;
}

export const marksFromRow = (r: UserMarks | undefined): Marks => ({ readBelow: r?.readBelow ?? 0, unreadRows: new Set(r?.unreadRows ?? []), starred: new Set(r?.starred ?? []) });
export const marksRow = (m: Marks): UserMarks => ({ readBelow: m.readBelow, unreadRows: [...m.unreadRows].sort((a, b) => a - b), starred: [...m.starred].sort((a, b) => a - b) });

/** A message's flags for `userId` when no row of theirs says otherwise. */
export function baseFlags(m: StoredMessage, userId: number, receivedFrom: number | null, readBelow: number): string[] {
  if (receivedFrom === null || m.id < receivedFrom) return ['read', 'historical'];
  const flags = defaultFlags(m, userId);
  if (m.id < readBelow && !flags.includes('read')) return ['read', ...flags];
  return flags;
}

/**
 * A message's flags for a user who may have a flag row of it: the flags the
 * user sets (`EDITABLE_FLAGS`) as the row has them, the others as `base`
 * has them. A row keeps the full list as it was when written, and an edit of
 * the message since may have changed its mentions and alert words; what
 * follows from the message is therefore always taken from the message as it
 * is now (as Zulip rewrites these flags of every UserMessage row on an edit).
 */
export function currentFlags(base: string[], row: string[] | undefined): string[] {
  if (!row) return base;
  return sortFlags([...row.filter((f) => EDITABLE_FLAGS.has(f)), ...base.filter((f) => !EDITABLE_FLAGS.has(f))]);
}

/**
 * A message's flags for a user, from the base flags and the user's row of it
 * (`currentFlags`), with Zulip's invariant that every unread message is in a
 * channel the user is subscribed to: leaving a channel marks its messages
 * read (Zulip's `bulk_remove_subscriptions` → `do_mark_stream_messages_as_read`).
 * Here that follows from the realm's subscription, which is durable with the
 * unsubscribe itself: a row that lacks `read` counts only while the user is
 * subscribed (`receivedFrom` is null for a channel they are not subscribed to),
 * so no second actor has to write anything when a user leaves.
 */
export function userFlags(m: StoredMessage, userId: number, receivedFrom: number | null, readBelow: number, row: string[] | undefined): string[] {
  const flags = currentFlags(baseFlags(m, userId, receivedFrom, readBelow), row);
  if (m.streamId !== null && receivedFrom === null && !flags.includes('read')) return sortFlags(['read', ...flags]);
  return flags;
}

/** A bucket's flag rows: message ID -> full flag list. */
export type FlagRows = Map<number, string[]>;

export async function readFlagRows(store: Store, realmId: number, userId: number, bucket: number): Promise<FlagRows> {
  const rows: FlagRows = new Map();
  for (const { ck, value } of await T.userFlags.partition(realmId, userId, bucket).range(store)) rows.set(Number(ck), value);
  return rows;
}

/**
 * The most recently used buckets of a user's flag rows. Only the actor's
 * mailbox loads and changes them (in `prepare` and `apply`), so they always
 * equal the store plus the changes applied since; reads outside the mailbox
 * read the store, which holds everything durable.
 */
export class FlagCache {
  private buckets = new Map<number, FlagRows>();

  constructor(
    private readonly store: Store,
    private readonly realmId: number,
    private readonly userId: number,
  ) {}

  /** The rows of a bucket, loaded if needed; call inside the mailbox only. */
  async load(bucket: number): Promise<FlagRows> {
    let rows = this.buckets.get(bucket);
    if (rows) this.buckets.delete(bucket);
    else rows = await readFlagRows(this.store, this.realmId, this.userId, bucket);
    this.buckets.set(bucket, rows);
    while (this.buckets.size > CACHED_BUCKETS) this.buckets.delete(this.buckets.keys().next().value!);
    return rows;
  }

  /** Forgets every cached bucket (their rows were deleted: the user was). */
  clear(): void {
    this.buckets.clear();
  }

  /** The rows of every bucket holding one of `ids`. */
  async loadFor(ids: Iterable<number>): Promise<Map<number, FlagRows>> {
    const out = new Map<number, FlagRows>();
    for (const id of ids) {
      const b = messageBucket(id);
      if (!out.has(b)) out.set(b, await this.load(b));
    }
    return out;
  }
}

/** Reads messages by ID through the locator; missing IDs are left out. */
export async function readMessages(store: Store, realmId: number, ids: Iterable<number>): Promise<StoredMessage[]> {
  const out: StoredMessage[] = [];
  for (const id of new Set(ids)) {
    const located = await T.messageLocator.at(realmId, id).get(store);
    const m = located && (await T.messages.at(realmId, located.recipientKey, id).get(store));
    if (m) out.push(m);
  }
  return out;
}

/** The source through which the user reads `m`, if any. */
export function sourceOf(sources: MessageSource[], m: StoredMessage): MessageSource | undefined {
  return sources.find((s) => s.recipientKey === m.recipientKey && inSource(s, m.id));
}
