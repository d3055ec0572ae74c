/**
 * The realm actor's state: the realm's members, channels, subscriptions,
 * direct-message conversations and scheduled messages, loaded from the store
 * when the actor starts (every partition named by the catalog, read with
 * bounded concurrency) and kept in memory with the indexes handlers need.
 *
 * Handlers read it in `check` and change it only in `apply`; every change to
 * a stored record goes with its write into the action's `Tx`.
 */
import { DEFAULT_ACTOR_LIMITS } from '../../runtime/context.ts';
import { Budgets, type Rule } from '../../../lib/gcra.ts';
import type { Store } from '../../../storage/store.ts';
import { sha256Hex } from '../../../lib/secrets.ts';
import {
  type Allocator,
  Allocator as AllocatorCodec,
  type ChannelRecord,
  type ChannelTopic,
  type DigestRun,
  type DmConversation,
  type GroupSettingValue,
  messageBucket,
  objectBucket,
  type ProfileFieldRecord,
  type RealmEmojiRecord,
  type RealmMeta,
  type ScheduledMessage,
  type StoredMessage,
  type SubscriptionRecord,
  T,
  type UserGroupRecord,
  type UserRecord,
  type UserTopicRecord,
  type ActivePush,
  type ClientDevice,
  type PushDeviceRecord,
} from '../../../storage/tables.ts';
import { dmKey, type GroupMembership, inGroupSetting, inSystemGroup, isSystemGroupId, Role } from '../../model.ts';
import type { SettingValue } from '../../user/settings.ts';
import type { Tx } from '../../runtime/action.ts';
import { AlertWords } from './alert_words.ts';
import { OrgState } from './org_state.ts';
import { RealmImage } from './checkpoint.ts';

/** Message IDs are reserved in blocks, so that a send does not write the counter. */
const MESSAGE_ID_BLOCK = 1000;
/** The timer that delivers a scheduled message or reminder, by its ID (`actors/realm/actions/messages/scheduled_messages.ts`). */
export const DELIVER_SCHEDULED = 'deliverScheduledMessage';
/** How lately a user must have been seen active to be named in a `partial_subscribers` list (the API's 14 days, FL 412). */
export const RECENT_ACTIVITY_MS = 14 * 24 * 3600_000;
/** Partitions read at once while loading. */
const LOAD_CONCURRENCY = 32;

export type Counter = 'user' | 'channel' | 'recipient' | 'scheduled' | 'group' | 'profileField' | 'emoji' | 'device';

export class RealmState {
  meta: RealmMeta | null = null;
  private ids: Allocator = AllocatorCodec.parse({});
  /** The realm's members (humans and bots); system bots are not members and are not here. */
  readonly users = new Map<number, UserRecord>();
  /** Notification Bot and Welcome Bot (`system_bots.ts`): message senders only, found by ID here and by email in `usersByEmail`. */
  readonly systemBots = new Map<number, UserRecord>();
  /** IDs of the active members, kept by `indexUser` (who hears about the organization's changes). */
  readonly activeIds = new Set<number>();
  /** IDs of the active guests, kept by `indexUser` (the only ones whose view of users may be restricted). */
  readonly activeGuestIds = new Set<number>();
  /** IDs of the active owners, administrators and moderators, kept by `indexUser` (who may see addresses hidden from members). */
  readonly activeStaffIds = new Set<number>();
  /** IDs of the member bots (active or not; system bots are not members), kept by `indexUser`: an administrator's `realm_bots`. */
  readonly botIds = new Set<number>();
  /** Owner's ID -> IDs of the bots they own, kept by `indexUser`: a member's `realm_bots` without a walk of every user. */
  readonly botsByOwner = new Map<number, Set<number>>();
  readonly usersByEmail = new Map<string, UserRecord>();
  /** SHA-256 of each valid API key -> its user (keys themselves are never kept). */
  readonly usersByKeyHash = new Map<string, UserRecord>();
  /** Lower-cased full name -> users (for mentions). */
  readonly usersByName = new Map<string, Set<UserRecord>>();
  /** `uniqueNameKey` of each full name -> the users with it (Zulip's require_unique_names, checked in O(1)). */
  readonly usersByUniqueName = new Map<string, Set<number>>();
  readonly channels = new Map<number, ChannelRecord>();
  readonly channelsByName = new Map<string, ChannelRecord>();
  /** channelId -> userId -> subscription */
  readonly subs = new Map<number, Map<number, SubscriptionRecord>>();
  /**
   * Channels' active subscribers as `activeSubscribers` lists them, kept between changes: a new
   * active subscription is appended (`indexSub`), any other change to who is an active subscriber
   * drops the channel's list, made again by the next read. The steps of a bulk subscription each
   * send the list to their newcomers: a copy per step instead of a walk of the channel's
   * subscriptions with a user lookup each.
   */
  private readonly subscriberLists = new Map<number, number[]>();
  /** userId -> the channels they have a subscription record of (active or not), kept by `indexSub`. */
  readonly channelsByUser = new Map<number, Set<number>>();
  /**
   * channelId -> its active subscriptions of active users (`subscriber_count`, FL 394; Zulip's
   * `Stream.subscriber_count`, which leaves deactivated users out), kept by `indexSub` and `indexUser`
   * so that formatting a channel is O(1). Channels without any are absent.
   */
  private readonly subscriberCounts = new Map<number, number>();
  /**
   * channelId -> the subscribers a `partial_subscribers` list names (FL 412;
   * `partialSubscribers`): active subscriptions of active users who are bots,
   * were seen active within `RECENT_ACTIVITY_MS` when the realm loaded or
   * since (`noteRecentActivity`), or whose subscription (or account) became
   * active since the realm loaded. The last rule keeps a client exact: every
   * peer_add it applies names someone a fresh register lists too. A user who
   * goes idle stays listed until the realm is loaded again (the list may hold
   * more than the API promises, never less). Kept by `indexSub` and
   * `indexUser`: O(1) per subscription change, O(the user's channels) per
   * (de)activation or return from idleness.
   */
  private readonly listed = new Map<number, Set<number>>();
  /** True while `load` indexes the stored rows: `listed` is built once they are all in (it needs `lastActive`). */
  private loading = false;
  readonly dms = new Map<string, DmConversation>();
  readonly dmsByUser = new Map<number, Set<string>>();
  readonly scheduled = new Map<number, ScheduledMessage>();
  /** Organization settings, channel traffic, folders, linkifiers, invitations (`org_state.ts`). */
  readonly org = new OrgState();
  /**
   * userId -> channels created lately, against `PARLEY_CHANNEL_CREATION_LIMIT`
   * (set at load). Memory only: a reload of the realm starts everyone afresh.
   */
  readonly channelCreation = new Budgets(() => Date.now());
  channelCreationRule: Rule = DEFAULT_ACTOR_LIMITS.channelCreation;
  /** The site's URL (set when the actor loads): the host of the made-up addresses of hidden emails (`emails.ts`). */
  siteUrl = 'http://localhost';
  /** userId -> the settings stored for the user (the others have the server's defaults). */
  readonly settings = new SettingsMap(this);
  /**
   * Who a channel message may mail besides those it mentions
   * (`decideMissedEmails`), so that a send looks at them and not at every
   * subscriber: channelId -> subscribers whose subscription turned its email
   * on; `${streamId}:${lower-cased topic}` -> users who followed the topic;
   * users who turned enable_stream_email_notifications on (off by default).
   * Supersets: an entry is made when a record may make its user one and is
   * never taken out (a user who turns it off again stays listed, until the
   * realm is loaded again); every candidate is then checked in full.
   */
  readonly emailCandidates = { byChannel: new Map<number, Set<number>>(), byTopic: new Map<string, Set<number>>(), streamEmailUsers: new Set<number>() };
  /** userId -> the settings the user changed themselves (for `skip_if_already_edited`). */
  readonly settingsEdited = new Map<number, Set<string>>();
  /** The organization's defaults for new users: only what an administrator changed. */
  userDefaults: Record<string, SettingValue> = {};
  /** User-defined groups (the system groups are derived from roles). */
  readonly groups = new Map<number, UserGroupRecord>();
  readonly profileFields = new Map<number, ProfileFieldRecord>();
  /** channelId -> lower-cased topic -> the topic (its name, newest message, count). */
  readonly topics = new Map<number, Map<string, ChannelTopic>>();
  /** Custom emoji by ID (deactivated ones stay, as in Zulip). */
  readonly emoji = new Map<number, RealmEmojiRecord>();
  /** userId -> muted user ID -> when. */
  readonly mutedUsers = new Map<number, Map<number, number>>();
  /** muted user ID -> users who muted them (to flag their messages read at send). */
  readonly mutedBy = new Map<number, Set<number>>();
  /** userId -> alert words (users without any are absent), indexed by word for sends (`alert_words.ts`). */
  readonly alertWords = new AlertWords((id) => this.users.get(id)?.isActive === true);
  /** userId -> `${streamId}:${lower-cased topic}` -> visibility policy (user_topics). */
  readonly userTopics = new Map<number, Map<string, UserTopicRecord>>();
  /** userId -> message ID -> trigger: missed-message emails waiting for their batch (`notifications.ts`). */
  readonly missedEmails = new Map<number, Map<number, string>>();
  /** userId -> `${kind}:${token}` -> device registered for mobile push (`push.ts`). */
  readonly pushDevices = new Map<number, Map<string, PushDeviceRecord>>();
  /** userId -> device ID -> client device and its E2EE push registration (`push_e2ee.ts`, FL 468). */
  readonly clientDevices = new Map<number, Map<number, ClientDevice>>();
  /** userId -> message ID -> a push notification their devices may still show (`push.ts`). */
  readonly activePushes = new Map<number, Map<number, ActivePush>>();
  /** userId -> when a queue of theirs was last seen polling (memory only: reported by the queue actors). */
  readonly activeAt = new Map<number, number>();
  /** userId -> when they were last seen active, as stored (hourly at most): the digest's rule (`digest.ts`). */
  readonly lastActive = new Map<number, number>();
  /** userId -> when their last digest was composed (`digest.ts`). */
  readonly lastDigest = new Map<number, number>();
  /** The armed digest timer, while one is (`digest.ts`). */
  digestPending: DigestRun | null = null;
  /** When the armed message retention timer is due, while one is (`retention.ts`). */
  retentionAt: number | null = null;
  /** The key unsubscribe links are signed with (`notifications.ts`); null until the first missed-message email. */
  unsubscribeKey: string | null = null;
  /** `${recipientKey}:${bucket}` already recorded in recipient_buckets (rewriting one is harmless). */
  readonly knownBuckets = new Set<string>();
  /** The rows the state is built from, the journal position and the checkpoint (`checkpoint.ts`). */
  readonly image: RealmImage;
  private nextMessageId = 1;
  /** The newest message ID handed out (0 before the first). */
  maxMessageId = 0;

  constructor(readonly realmId: number) {
    this.image = new RealmImage(realmId);
  }

  /**
   * Loads the realm: from its checkpoint and the journal since when it has
   * one (`checkpoint.ts`; the reads below are then answered from memory),
   * else from its tables. `fromTables` ignores the checkpoint (tests compare
   * the two).
   */
  static async load(realStore: Store, realmId: number, opts: { fromTables?: boolean } = {}): Promise<RealmState> {
    const s = new RealmState(realmId);
    s.loading = true;
    const store = await s.image.open(realStore, opts);
    s.meta = (await T.realms.at(realmId).get(store)) ?? null;
    s.ids = (await T.allocators.at(realmId).get(store)) ?? s.ids;
    // IDs of a block that was reserved but not used are skipped: IDs only need to grow.
    s.nextMessageId = s.ids.messageBlockEnd;
    s.maxMessageId = await newestMessageId(store, realmId, s.ids.messageBlockEnd - 1);
    const buckets = (next: number) => Array.from({ length: objectBucket(Math.max(0, next - 1)) + 1 }, (_, b) => b);
    for (const users of await eachLimited(buckets(s.ids.user), (b) => T.users.partition(realmId, b).values(store))) for (const u of users) s.indexUser(withLegacyOnboarding(withHashedLegacyKey(u)));
    for (const channels of await eachLimited(buckets(s.ids.channel), (b) => T.channels.partition(realmId, b).values(store))) for (const c of channels) s.indexChannel(c);
    for (const subs of await eachLimited([...s.channels.keys()], (id) => T.subscriptions.partition(realmId, id).values(store))) for (const sub of subs) s.indexSub(sub);
    for (const list of await eachLimited(buckets(s.ids.scheduled), (b) => T.scheduledMessages.partition(realmId, b).values(store))) for (const m of list) s.scheduled.set(m.id, m);
    // Each user's rows of the per-user tables, in one pass over the users; after a checkpoint, only
    // the users the image holds rows of (most have none) are asked for them.
    const refs = (id: number) =>
      [T.dmConversations.partition(realmId, id), T.userSettings.at(realmId, id), T.userTopics.partition(realmId, id), T.mutedUsers.partition(realmId, id), T.alertWords.at(realmId, id)] as const;
    const fromImage = s.image.stats.loadedFrom === 'checkpoint';
    const userIds = [...s.users.keys()].filter((id) => !fromImage || refs(id).some((r) => s.image.partition(r.table.schema.name, r.pk)));
    const perUser = await eachLimited(userIds, (id) => {
      const [dms, settings, topics, muted, words] = refs(id);
      return Promise.all([dms.values(store), settings.get(store), topics.values(store), muted.values(store), words.get(store)]);
    });
    perUser.forEach(([convs, settings, topics, muted, words], i) => {
      const id = userIds[i]!;
      for (const d of convs) s.indexDm(d);
      if (settings) s.settings.set(id, settings);
      for (const r of topics) s.indexUserTopic(r);
      for (const r of muted) s.setMuted(r.userId, r.mutedUserId, r.timestamp);
      if (words?.length) s.alertWords.set(id, words);
    });
    await s.org.load(store, realmId, [...s.channels.keys()], [...s.users.keys()], eachLimited);
    for (const rows of await eachLimited(buckets(s.ids.user), (b) => T.userSettingsEdited.partition(realmId, b).range(store))) for (const r of rows) s.settingsEdited.set(Number(r.ck), new Set(r.value));
    s.userDefaults = (await T.realmUserDefaults.at(realmId).get(store)) ?? {};
    for (const list of await eachLimited(buckets(s.ids.group), (b) => T.userGroups.partition(realmId, b).values(store))) for (const g of list) s.groups.set(g.id, g);
    for (const f of await T.profileFields.partition(realmId).values(store)) s.profileFields.set(f.id, f);
    for (const e of await T.realmEmoji.partition(realmId).values(store)) s.emoji.set(e.id, e);
    for (const [i, list] of (await eachLimited([...s.channels.keys()], (id) => T.channelTopics.partition(realmId, id).range(store))).entries()) {
      const channelId = [...s.channels.keys()][i]!;
      s.topics.set(channelId, new Map(list.map((r) => [String(r.ck), r.value])));
    }
    s.unsubscribeKey = (await T.unsubscribeKeys.at(realmId).get(store))?.key ?? null;
    for (const r of await T.missedEmails.partition(realmId).range(store)) {
      const [userId, messageId] = String(r.ck).split(':').map(Number) as [number, number];
      let mine = s.missedEmails.get(userId);
      if (!mine) s.missedEmails.set(userId, (mine = new Map()));
      mine.set(messageId, r.value.trigger);
    }
    for (const r of await T.userActivity.partition(realmId).range(store)) s.lastActive.set(Number(r.ck), r.value.at);
    for (const r of await T.userDigests.partition(realmId).range(store)) s.lastDigest.set(Number(r.ck), r.value.at);
    s.digestPending = (await T.digestRuns.at(realmId).get(store)) ?? null;
    s.retentionAt = (await T.retentionRuns.at(realmId).get(store))?.at ?? null;
    for (const d of await T.pushDevices.partition(realmId).values(store)) s.indexPushDevice(d);
    for (const d of await T.clientDevices.partition(realmId).values(store)) s.indexClientDevice(d);
    for (const r of await T.activePushes.partition(realmId).range(store)) {
      const [userId, messageId] = String(r.ck).split(':').map(Number) as [number, number];
      let mine = s.activePushes.get(userId);
      if (!mine) s.activePushes.set(userId, (mine = new Map()));
      mine.set(messageId, r.value);
    }
    s.relistSubscribers(Date.now());
    s.loading = false;
    s.image.loaded();
    return s;
  }

  /**
   * Builds `listed` anew: bots and the users active lately, in the channels
   * they are subscribed to. O(subscriptions): the last step of `load` (and of
   * benches that build a state by hand).
   */
  relistSubscribers(now: number): void {
    this.listed.clear();
    for (const [streamId, subs] of this.subs) {
      for (const sub of subs.values()) {
        const u = this.users.get(sub.userId);
        if (sub.active && u?.isActive && (u.isBot || this.recentlyActive(u.id, now))) addTo(this.listed, streamId, u.id);
      }
    }
  }

  /** Whether the user was seen active within `RECENT_ACTIVITY_MS` of `now` (the stored hourly mark or this load's reports). */
  recentlyActive(userId: number, now: number): boolean {
    return Math.max(this.lastActive.get(userId) ?? 0, this.activeAt.get(userId) ?? 0) > now - RECENT_ACTIVITY_MS;
  }

  /**
   * A user seen active again after `RECENT_ACTIVITY_MS` or more without:
   * listed in their channels' partial lists again. Call before recording the
   * new activity (`noteActivity`). O(the user's channels), at most once per
   * return from idleness. No event tells clients (Zulip sends none either).
   */
  noteRecentActivity(userId: number, at: number): void {
    if (this.recentlyActive(userId, at)) return;
    for (const streamId of this.channelsByUser.get(userId) ?? []) if (this.subs.get(streamId)?.get(userId)?.active) addTo(this.listed, streamId, userId);
  }

  indexClientDevice(d: ClientDevice): void {
    let mine = this.clientDevices.get(d.userId);
    if (!mine) this.clientDevices.set(d.userId, (mine = new Map()));
    mine.set(d.deviceId, d);
  }

  forgetClientDevice(userId: number, deviceId: number): void {
    const mine = this.clientDevices.get(userId);
    mine?.delete(deviceId);
    if (mine?.size === 0) this.clientDevices.delete(userId);
  }

  indexPushDevice(d: PushDeviceRecord): void {
    let mine = this.pushDevices.get(d.userId);
    if (!mine) this.pushDevices.set(d.userId, (mine = new Map()));
    mine.set(`${d.kind}:${d.token}`, d);
  }

  indexUser(u: UserRecord): void {
    if (u.isSystemBot) {
      this.systemBots.set(u.id, u);
      this.usersByEmail.set(u.email.toLowerCase(), u);
      return;
    }
    const old = this.users.get(u.id);
    if (old && old.isActive !== u.isActive) {
      this.countUserSubscriptions(u.id, u.isActive ? 1 : -1);
      if (!this.loading) this.listUserSubscriptions(u.id, u.isActive);
    }
    if (!old || old.isActive !== u.isActive) for (const streamId of this.channelsByUser.get(u.id) ?? []) this.subscriberLists.delete(streamId);
    if (old && old.isActive !== u.isActive) this.alertWords.userActivity(u.id, u.isActive);
    if (old) {
      for (const k of old.apiKeys) this.usersByKeyHash.delete(k.hash);
      this.usersByEmail.delete(old.email.toLowerCase());
      this.usersByName.get(old.fullName.toLowerCase())?.delete(old);
      this.usersByUniqueName.get(uniqueNameKey(old.fullName))?.delete(old.id);
      if (old.botOwnerId !== null) this.botsByOwner.get(old.botOwnerId)?.delete(old.id);
    }
    this.users.set(u.id, u);
    if (u.isBot) this.botIds.add(u.id);
    else this.botIds.delete(u.id);
    if (u.isBot && u.botOwnerId !== null) addTo(this.botsByOwner, u.botOwnerId, u.id);
    this.usersByEmail.set(u.email.toLowerCase(), u);
    if (u.isActive) this.activeIds.add(u.id);
    else this.activeIds.delete(u.id);
    if (u.isActive && u.role === Role.GUEST) this.activeGuestIds.add(u.id);
    else this.activeGuestIds.delete(u.id);
    if (u.isActive && u.role <= Role.MODERATOR) this.activeStaffIds.add(u.id);
    else this.activeStaffIds.delete(u.id);
    for (const k of u.apiKeys) this.usersByKeyHash.set(k.hash, u);
    const name = u.fullName.toLowerCase();
    let named = this.usersByName.get(name);
    if (!named) this.usersByName.set(name, (named = new Set()));
    named.add(u);
    const unique = uniqueNameKey(u.fullName);
    let same = this.usersByUniqueName.get(unique);
    if (!same) this.usersByUniqueName.set(unique, (same = new Set()));
    same.add(u.id);
  }

  /** A member or a system bot: for naming a message's sender or participants. */
  person(id: number): UserRecord | undefined {
    return this.users.get(id) ?? this.systemBots.get(id);
  }

  indexChannel(c: ChannelRecord): void {
    const old = this.channels.get(c.id);
    if (old) this.channelsByName.delete(old.name.toLowerCase());
    this.channels.set(c.id, c);
    this.channelsByName.set(c.name.toLowerCase(), c);
  }

  indexSub(s: SubscriptionRecord): void {
    let m = this.subs.get(s.streamId);
    if (!m) this.subs.set(s.streamId, (m = new Map()));
    const userActive = this.users.get(s.userId)?.isActive === true;
    const before = m.get(s.userId);
    const delta = Number(s.active && userActive) - Number(before?.active === true && userActive);
    if (delta) this.addSubscriberCount(s.streamId, delta);
    if (!this.loading) {
      if (s.active && userActive) addTo(this.listed, s.streamId, s.userId);
      else this.listed.get(s.streamId)?.delete(s.userId);
    }
    if (delta) {
      // A new row goes last in the channel's map, where a walk would list it; a row that comes back keeps its old place.
      const list = this.subscriberLists.get(s.streamId);
      if (list && delta > 0 && !before) list.push(s.userId);
      else this.subscriberLists.delete(s.streamId);
    }
    m.set(s.userId, s);
    addTo(this.channelsByUser, s.userId, s.streamId);
    if (s.emailNotifications === true) addTo(this.emailCandidates.byChannel, s.streamId, s.userId);
  }

  indexDm(d: DmConversation): void {
    this.dms.set(d.key, d);
    for (const id of d.userIds) {
      let set = this.dmsByUser.get(id);
      if (!set) this.dmsByUser.set(id, (set = new Set()));
      set.add(d.key);
    }
  }


  /**
   * Deletes a scheduled message (or reminder) with its delivery timer, if it still has one
   * (`actors/realm/actions/messages/scheduled_messages.ts` sets it).
   */
  dropScheduled(tx: Tx, m: ScheduledMessage): void {
    this.scheduled.delete(m.id);
    tx.write(T.scheduledMessages.at(this.realmId, m.id).delete());
    if (!m.failed) tx.clearTimer(DELIVER_SCHEDULED, m.deliverAt * 1000, m.id);
  }

  /**
   * A deleted user's rows in the realm's tables go (Zulip deletes the UserProfile and they cascade):
   * their subscription rows, topic visibility policies, scheduled messages and reminders (with their
   * timers), mobile push devices, client devices and pushes not yet removed. Call once they are
   * deactivated: they are then no channel's active subscriber nor in its partial list, so no count or
   * list clients see changes. O(the user's rows + the organization's scheduled messages).
   */
  forgetUser(tx: Tx, userId: number): void {
    for (const streamId of this.channelsByUser.get(userId) ?? []) {
      const before = this.subs.get(streamId)?.get(userId);
      if (before?.active && this.users.get(userId)?.isActive) this.addSubscriberCount(streamId, -1);
      this.subs.get(streamId)?.delete(userId);
      this.listed.get(streamId)?.delete(userId);
      this.subscriberLists.delete(streamId);
      this.emailCandidates.byChannel.get(streamId)?.delete(userId);
      tx.write(T.subscriptions.at(this.realmId, streamId, userId).delete());
    }
    this.channelsByUser.delete(userId);
    for (const [key, r] of this.userTopics.get(userId) ?? []) {
      this.emailCandidates.byTopic.get(key)?.delete(userId);
      tx.write(T.userTopics.at(this.realmId, userId, r.streamId, r.topic).delete());
    }
    this.userTopics.delete(userId);
    for (const m of [...this.scheduled.values()]) if (m.senderId === userId) this.dropScheduled(tx, m);
    for (const d of this.pushDevices.get(userId)?.values() ?? []) tx.write(T.pushDevices.at(this.realmId, userId, d.kind, d.token).delete());
    this.pushDevices.delete(userId);
    for (const deviceId of this.clientDevices.get(userId)?.keys() ?? []) tx.write(T.clientDevices.at(this.realmId, userId, deviceId).delete());
    this.clientDevices.delete(userId);
    for (const messageId of this.activePushes.get(userId)?.keys() ?? []) tx.write(T.activePushes.at(this.realmId, userId, messageId).delete());
    this.activePushes.delete(userId);
  }

  /**
   * Deletes stored messages found outside the mailbox (retention, a deleted user's messages): their rows and
   * locators, their topics' counts, and each channel's first message ID where it went (`firstIds`: channel ->
   * the new first, or null; kept only where the channel's first is one of `messages`). `messages` must be the
   * rows as stored now (`storedNow`, read in this turn of the mailbox): a message deleted or moved since it
   * was found is not counted out of its topic again. Returns the channels whose first message changed.
   * O(the messages).
   */
  deleteStoredMessages(tx: Tx, messages: readonly StoredNow[], firstIds: ReadonlyMap<number, number | null>): number[] {
    const ids = new Set<number>();
    for (const m of messages) {
      ids.add(m.id);
      tx.write(T.messages.at(this.realmId, m.recipientKey, m.id).delete(), T.messageLocator.at(this.realmId, m.id).delete());
      if (m.streamId !== null) this.countTopic(tx, m.streamId, m.topic, m.id, -1);
    }
    const changed: number[] = [];
    for (const [id, first] of firstIds) {
      const c = this.channels.get(id);
      if (!c || c.firstMessageId === null || !ids.has(c.firstMessageId)) continue;
      c.firstMessageId = first;
      tx.write(T.channels.at(this.realmId, c.id).put(c));
      changed.push(c.id);
    }
    return changed;
  }
  /**
   * Counts a message in (`delta` 1) or out of (-1) a channel's topic and
   * records the change in `tx`; the topic goes when its last message does.
   * Returns whether the topic is new.
   */
  countTopic(tx: Tx, channelId: number, topic: string, messageId: number, delta: 1 | -1): boolean {
    let m = this.topics.get(channelId);
    if (!m) this.topics.set(channelId, (m = new Map()));
    const key = topic.toLowerCase();
    const old = m.get(key);
    const row = T.channelTopics.at(this.realmId, channelId, topic);
    if (delta === 1) {
      const minId = !old ? messageId : old.minId === undefined ? undefined : Math.min(old.minId, messageId);
      const next = { name: !old || messageId >= old.maxId ? topic : old.name, maxId: Math.max(old?.maxId ?? 0, messageId), ...(minId !== undefined ? { minId } : {}), count: (old?.count ?? 0) + 1 };
      m.set(key, next);
      tx.write(row.put(next));
      return !old;
    }
    if (!old) return false;
    if (old.count <= 1) {
      m.delete(key);
      tx.write(row.delete());
    } else {
      const { minId, ...rest } = old;
      // The first message leaving: the next first is not known here (the realm keeps no message list).
      const next = { ...rest, ...(minId !== undefined && minId !== messageId ? { minId } : {}), count: old.count - 1 };
      m.set(key, next);
      tx.write(row.put(next));
    }
    return false;
  }

  /** Records (or, with `timestamp` null, forgets) that `userId` muted `mutedId`. */
  setMuted(userId: number, mutedId: number, timestamp: number | null): void {
    let mine = this.mutedUsers.get(userId);
    if (!mine) this.mutedUsers.set(userId, (mine = new Map()));
    let by = this.mutedBy.get(mutedId);
    if (!by) this.mutedBy.set(mutedId, (by = new Set()));
    if (timestamp === null) {
      mine.delete(mutedId);
      by.delete(userId);
    } else {
      mine.set(mutedId, timestamp);
      by.add(userId);
    }
  }

  indexUserTopic(r: UserTopicRecord): void {
    let m = this.userTopics.get(r.userId);
    if (!m) this.userTopics.set(r.userId, (m = new Map()));
    const key = `${r.streamId}:${r.topic.toLowerCase()}`;
    m.set(key, r);
    if (r.policy === FOLLOWED) addTo(this.emailCandidates.byTopic, key, r.userId);
  }

  /** How many active users are subscribed to the channel (`subscriber_count`): O(1). */
  subscriberCount(streamId: number): number {
    return this.subscriberCounts.get(streamId) ?? 0;
  }

  private addSubscriberCount(streamId: number, delta: number): void {
    const n = (this.subscriberCounts.get(streamId) ?? 0) + delta;
    if (n) this.subscriberCounts.set(streamId, n);
    else this.subscriberCounts.delete(streamId);
  }

  /** A user (de)activated: their active subscriptions count in (`delta` 1) or out (-1). O(the user's subscriptions). */
  private countUserSubscriptions(userId: number, delta: 1 | -1): void {
    for (const streamId of this.channelsByUser.get(userId) ?? []) if (this.subs.get(streamId)?.get(userId)?.active) this.addSubscriberCount(streamId, delta);
  }

  /** A user (de)activated: listed in (or out of) the partial lists of the channels they are subscribed to. O(the user's subscriptions). */
  private listUserSubscriptions(userId: number, active: boolean): void {
    for (const streamId of this.channelsByUser.get(userId) ?? []) {
      if (active && this.subs.get(streamId)?.get(userId)?.active) addTo(this.listed, streamId, userId);
      else if (!active) this.listed.get(streamId)?.delete(userId);
    }
  }

  /**
   * The channel's `partial_subscribers` (FL 412): its listed subscribers (see
   * `listed`). O(the listed ones), not O(the channel's subscriptions).
   */
  partialSubscribers(streamId: number): number[] {
    return [...(this.listed.get(streamId) ?? [])];
  }

  /** A new array, the caller's: a copy of the kept list (O(subscribers), a copy), or made by a walk of the channel's subscriptions. */
  activeSubscribers(streamId: number): number[] {
    const kept = this.subscriberLists.get(streamId);
    if (kept) return kept.slice();
    const out: number[] = [];
    for (const s of this.subs.get(streamId)?.values() ?? []) if (s.active && this.users.get(s.userId)?.isActive) out.push(s.userId);
    this.subscriberLists.set(streamId, out.slice());
    return out;
  }

  /** Whether `user` holds the group-setting permission `value` (every permission check goes through here). */
  can(value: GroupSettingValue, user: { id: number; role: number }): boolean {
    return inGroupSetting(value, user, this.inGroup);
  }

  /**
   * Group membership for permissions: a system group by role; a user-defined
   * group by its direct members and, recursively, its subgroups. A
   * deactivated group (and a deactivated user) is in nothing.
   */
  inGroup: GroupMembership = (groupId, user) => this.inGroupRecursive(groupId, user, new Set());

  private inGroupRecursive(groupId: number, user: { id: number; role: number }, seen: Set<number>): boolean {
    if (isSystemGroupId(groupId)) return inSystemGroup(groupId, user);
    const g = this.groups.get(groupId);
    if (!g || g.deactivated || seen.has(groupId)) return false;
    seen.add(groupId);
    if (g.members.includes(user.id) && this.users.get(user.id)?.isActive !== false) return true;
    return g.subgroups.some((sub) => this.inGroupRecursive(sub, user, seen));
  }

  /** Whether a group may be used in a permission value: a system group, or an active user-defined group. */
  isUsableGroup(id: number): boolean {
    return isSystemGroupId(id) || this.groups.get(id)?.deactivated === false;
  }

  /** A user's effective value of a setting. */
  setting(userId: number, name: string, fallback: SettingValue): SettingValue {
    if (name === 'timezone') return this.users.get(userId)?.timezone ?? '';
    return this.settings.get(userId)?.[name] ?? fallback;
  }

  isSubscribed(streamId: number, userId: number): boolean {
    return this.subs.get(streamId)?.get(userId)?.active === true;
  }

  dmConversation(userIds: number[]): DmConversation | undefined {
    return this.dms.get(dmKey(userIds));
  }

  /** The ID the next `take(counter)` would return (for plans made in `check`). */
  peek(counter: Counter): number {
    return this.ids[counter];
  }

  /** Takes the next ID of a kind of object; the counter's write goes into `tx`. */
  take(counter: Counter, tx: Tx): number {
    const id = this.ids[counter]++;
    tx.write(T.allocators.at(this.realmId).put({ ...this.ids }));
    return id;
  }

  /** Bytes of the files the realm's users uploaded. */
  get uploadBytes(): number {
    return this.ids.uploadBytes;
  }

  /** Adds `delta` (negative for a removed file) to the upload total; its write goes into `tx`. */
  addUploadBytes(delta: number, tx: Tx): number {
    this.ids.uploadBytes = Math.max(0, this.ids.uploadBytes + delta);
    tx.write(T.allocators.at(this.realmId).put({ ...this.ids }));
    return this.ids.uploadBytes;
  }

  /** The next message ID; reserving a new block writes the counter into `tx`. */
  takeMessageId(tx: Tx): number {
    if (this.nextMessageId >= this.ids.messageBlockEnd) {
      this.ids.messageBlockEnd = Math.max(this.ids.messageBlockEnd, this.nextMessageId) + MESSAGE_ID_BLOCK;
      tx.write(T.allocators.at(this.realmId).put({ ...this.ids }));
    }
    const id = this.nextMessageId++;
    this.maxMessageId = id;
    return id;
  }
}

/** A row written before API keys were hashed holds its key in plain text: keep only its hash. */
function withHashedLegacyKey(u: UserRecord): UserRecord {
  if (!u.apiKey) return u;
  const hash = sha256Hex(u.apiKey);
  const apiKeys = u.apiKeys.some((k) => k.hash === hash) ? u.apiKeys : [{ hash, created: 0 }, ...u.apiKeys];
  return { ...u, apiKey: '', apiKeys };
}

/** A row written when there was one onboarding email holds its time in `onboardingAt`: it is the topics email's. */
function withLegacyOnboarding(u: UserRecord): UserRecord {
  if (u.onboardingAt === null) return u;
  return { ...u, onboardingAt: null, onboarding: [{ email: 'topics', at: u.onboardingAt }] };
}

/** The greatest stored message ID at or below `atMost` (0 if none), from the message locator. */
async function newestMessageId(store: Store, realmId: number, atMost: number): Promise<number> {
  for (let b = messageBucket(Math.max(0, atMost)); b >= 0; b--) {
    const [row] = await T.messageLocator.partition(realmId, b).range(store, { lte: atMost, reverse: true, limit: 1 });
    if (row) return Number(row.ck);
    // The block holding `atMost` was reserved by the send of its first message, which is therefore
    // stored: the newest message is in this bucket or, if the block straddles two, the one before.
    if (b < messageBucket(Math.max(0, atMost))) break;
  }
  return 0;
}

/** Maps `fn` over `items` with at most `limit` in flight, keeping the order. */
export async function eachLimited<T, R>(items: T[], fn: (item: T) => Promise<R>, limit = LOAD_CONCURRENCY): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The `followed` visibility policy (`VisibilityPolicy` in user_topics.ts, which imports this module). */
const FOLLOWED = 3;

function addTo<K>(index: Map<K, Set<number>>, key: K, userId: number): void {
  let users = index.get(key);
  if (!users) index.set(key, (users = new Set()));
  users.add(userId);
}

/** The users' settings rows: one that turns channel email on lists its user as a candidate (`RealmState.emailCandidates`). */
class SettingsMap extends Map<number, Record<string, SettingValue>> {
  constructor(private readonly state: RealmState) {
    super();
  }

  override set(userId: number, row: Record<string, SettingValue>): this {
    if (row.enable_stream_email_notifications === true) this.state.emailCandidates.streamEmailUsers.add(userId);
    return super.set(userId, row);
  }
}

/** How Zulip compares full names when an organization requires unique ones: NFKC-normalized, case-folded. */
export const uniqueNameKey = (name: string): string => name.normalize('NFKC').toLowerCase();

/** A stored message as read inside the realm's mailbox after earlier writes were durable (`storedNow`). */
export type StoredNow = StoredMessage & { readonly __storedNow: true };

/**
 * Of `messages`, read outside the mailbox, those still stored, as they are
 * stored now (a message moved to another topic of its channel is counted
 * out of that one). Call inside the mailbox once earlier writes are durable
 * (a timer's `settle`), so that nothing changes them before the commit that
 * deletes them: a message another request deleted or moved to another
 * conversation in between is left out. O(the messages) point reads, made
 * concurrently.
 */
export async function storedNow(store: Store, realmId: number, messages: readonly StoredMessage[]): Promise<StoredNow[]> {
  const rows = await Promise.all(messages.map((m) => T.messages.at(realmId, m.recipientKey, m.id).get(store)));
  return rows.filter((r): r is StoredMessage => r !== undefined) as StoredNow[];
}
