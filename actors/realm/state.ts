/**
 * The realm actor's state: the realm's members, channels, subscriptions and
 * direct-message conversations, loaded from the store when the actor starts
 * and kept in memory with the indexes its handlers need.
 */
import type { Store, WriteOp } from '../../storage/store.ts';
import { dmKey, type ChannelRecord, type SubscriptionRecord, type UserRecord } from '../model.ts';

export interface RealmMeta {
  name: string;
  stringId: string;
  dateCreated: number;
  topicsPolicy: 'allow_empty_topic' | 'disable_empty_topic';
  emptyTopicDisplayName: string;
  canMentionManyUsersGroup: number;
}

/** Next free IDs. Message IDs are handed out from blocks so that a send writes no counter. */
interface Allocator {
  nextObjectId: number;
  messageBlockEnd: number;
}

export interface DmConversation {
  key: string;
  recipientId: number;
  userIds: number[];
  /** Newest message in the conversation (for recent_private_conversations). */
  maxMessageId?: number;
}

const MESSAGE_ID_BLOCK = 1000;

export class RealmState {
  meta: RealmMeta | null = null;
  readonly users = new Map<number, UserRecord>();
  readonly usersByEmail = new Map<string, UserRecord>();
  readonly usersByKey = new Map<string, UserRecord>();
  /** Lower-cased full name -> users (for mentions). */
  readonly usersByName = new Map<string, Set<UserRecord>>();
  readonly channels = new Map<number, ChannelRecord>();
  readonly channelsByName = new Map<string, ChannelRecord>();
  /** streamId -> userId -> subscription */
  readonly subs = new Map<number, Map<number, SubscriptionRecord>>();
  readonly dms = new Map<string, DmConversation>();
  readonly dmsByUser = new Map<number, Set<string>>();
  /** `${recipientKey}:${bucket}` already recorded in recipient_buckets. */
  readonly knownBuckets = new Set<string>();
  private alloc: Allocator = { nextObjectId: 100, messageBlockEnd: 0 };
  private nextMessageId = 1;
  /** Upper bound of the message IDs handed out (exact until a restart skips a block's rest). */
  maxMessageId = 0;

  constructor(readonly realmId: number) {}

  get pk(): string {
    return String(this.realmId);
  }

  static async load(store: Store, realmId: number): Promise<RealmState> {
    const s = new RealmState(realmId);
    const pk = s.pk;
    s.meta = (await store.get<RealmMeta>('realm_meta', pk, 'meta')) ?? null;
    const alloc = await store.get<Allocator>('realm_meta', pk, 'ids');
    if (alloc) {
      s.alloc = alloc;
      // IDs of a block that was reserved but not used are skipped: IDs only need to grow.
      s.nextMessageId = alloc.messageBlockEnd;
      s.maxMessageId = alloc.messageBlockEnd - 1;
    }
    for (const { value } of await store.range<UserRecord>('users', pk)) s.indexUser(value);
    for (const { value } of await store.range<ChannelRecord>('channels', pk)) s.indexChannel(value);
    for (const { value } of await store.range<SubscriptionRecord>('subscriptions', pk)) s.indexSub(value);
    for (const { value } of await store.range<DmConversation>('dm_conversations', pk)) s.indexDm(value);
    return s;
  }

  indexUser(u: UserRecord): void {
    const old = this.users.get(u.id);
    if (old) {
      this.usersByKey.delete(old.apiKey);
      this.usersByName.get(old.fullName.toLowerCase())?.delete(old);
    }
    this.users.set(u.id, u);
    this.usersByEmail.set(u.email.toLowerCase(), u);
    this.usersByKey.set(u.apiKey, u);
    const name = u.fullName.toLowerCase();
    let named = this.usersByName.get(name);
    if (!named) this.usersByName.set(name, (named = new Set()));
    named.add(u);
  }

  indexChannel(c: ChannelRecord): void {
    this.channels.set(c.id, c);
    this.channelsByName.set(c.name.toLowerCase(), c);
  }

  indexSub(s: SubscriptionRecord): void {
    let m = this.subs.get(s.streamId);
    if (!m) this.subs.set(s.streamId, (m = new Map()));
    m.set(s.userId, s);
  }

  indexDm(d: DmConversation): void {
    this.dms.set(d.key, d);
    for (const id of d.userIds) {
      let set = this.dmsByUser.get(id);
      if (!set) this.dmsByUser.set(id, (set = new Set()));
      set.add(d.key);
    }
  }

  activeSubscribers(streamId: number): number[] {
    const out: number[] = [];
    for (const s of this.subs.get(streamId)?.values() ?? []) if (s.active && this.users.get(s.userId)?.isActive) out.push(s.userId);
    return out;
  }

  isSubscribed(streamId: number, userId: number): boolean {
    return this.subs.get(streamId)?.get(userId)?.active === true;
  }

  dmConversation(userIds: number[]): DmConversation | undefined {
    return this.dms.get(dmKey(userIds));
  }

  /** Reserves an object ID (user, channel, conversation); returns it with the write that records it. */
  takeObjectId(): { id: number; op: WriteOp } {
    const id = this.alloc.nextObjectId++;
    return { id, op: this.allocOp() };
  }

  /** The next message ID, and the allocator write when a new block had to be reserved. */
  takeMessageId(): { id: number; op: WriteOp | null } {
    let op: WriteOp | null = null;
    if (this.nextMessageId >= this.alloc.messageBlockEnd) {
      this.alloc.messageBlockEnd = Math.max(this.alloc.messageBlockEnd, this.nextMessageId) + MESSAGE_ID_BLOCK;
      op = this.allocOp();
    }
    const id = this.nextMessageId++;
    this.maxMessageId = id;
    return { id, op };
  }

  private allocOp(): WriteOp {
    return { op: 'put', table: 'realm_meta', pk: this.pk, ck: 'ids', value: { ...this.alloc } };
  }
}
