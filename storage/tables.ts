/**
 * The table catalog: every table Parley stores, with its partition and
 * clustering keys and a zod codec for its rows. No key string is built
 * anywhere else.
 *
 * Codecs give every field added after a table was first written a default, so
 * old rows read as current records. Rows are decoded on every read; writes are
 * typed by the codec's output type (and checked against it in check mode).
 *
 * Partitions stay bounded as an organization grows: objects the realm numbers
 * itself (users, channels, scheduled messages) live in partitions of
 * OBJECT_BUCKET IDs, subscriptions in one partition per channel, direct-message
 * conversations in one per participant, messages in buckets of MESSAGE_BUCKET
 * IDs per recipient, and the message locator (message ID -> recipient) in
 * buckets of MESSAGE_BUCKET IDs per realm.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { Key, RangeOptions, Store, TableSchema, WriteOp } from './store.ts';

/** Objects numbered by the realm are stored in partitions of this many IDs. */
export const OBJECT_BUCKET = 1000;
/** Messages are stored per recipient in partitions of this many message IDs. */
export const MESSAGE_BUCKET = 10_000;
export const objectBucket = (id: number): number => Math.floor(id / OBJECT_BUCKET);
export const messageBucket = (id: number): number => Math.floor(id / MESSAGE_BUCKET);

/** Decodes a stored value; a row that no longer decodes is a bug, reported with its key. */
function decode<V>(table: string, codec: z.ZodType<V>, pk: string, ck: Key, raw: unknown): V {
  const r = codec.safeParse(raw);
  if (!r.success) throw new Error(`${table}/${pk}/${ck}: stored row does not decode: ${r.error.issues[0]?.message}`);
  return r.data;
}

/** Check mode (tests): values written are validated against their codec. */
const checkWrites = process.env.PARLEY_CHECK === '1';

/** One row of a table. */
export class RowRef<V> {
  constructor(
    readonly table: Table<V, never[], never[]>,
    readonly pk: string,
    readonly ck: Key,
  ) {}

  put(value: z.input<z.ZodType<V>> & V): WriteOp {
    if (checkWrites) decode(this.table.schema.name, this.table.codec, this.pk, this.ck, value);
    return { op: 'put', table: this.table.schema.name, pk: this.pk, ck: this.ck, value };
  }

  delete(): WriteOp {
    return { op: 'delete', table: this.table.schema.name, pk: this.pk, ck: this.ck };
  }

  async get(store: Store): Promise<V | undefined> {
    const name = this.table.schema.name;
    const raw = await store.get<unknown>(name, this.pk, this.ck);
    if (raw === undefined || store.decodedTables?.has(name)) return raw as V | undefined;
    return decode(name, this.table.codec, this.pk, this.ck, raw);
  }
}

/** One partition of a table. */
export class PartitionRef<V> {
  constructor(
    readonly table: Table<V, never[], never[]>,
    readonly pk: string,
  ) {}

  async range(store: Store, opts?: RangeOptions): Promise<Array<{ ck: Key; value: V }>> {
    const name = this.table.schema.name;
    const rows = await store.range<unknown>(name, this.pk, opts);
    if (store.decodedTables?.has(name)) return rows as Array<{ ck: Key; value: V }>;
    return rows.map((r) => ({ ck: r.ck, value: decode(name, this.table.codec, this.pk, r.ck, r.value) }));
  }

  /** The decoded values of `range`. */
  async values(store: Store, opts?: RangeOptions): Promise<V[]> {
    return (await this.range(store, opts)).map((r) => r.value);
  }
}

export interface Table<V, R extends unknown[], P extends unknown[]> {
  readonly schema: TableSchema;
  readonly codec: z.ZodType<V>;
  /** A row, from the arguments that identify it. */
  at(...args: R): RowRef<V>;
  /** A partition, from the arguments that identify it. */
  partition(...args: P): PartitionRef<V>;
}

interface TableDef<V, R extends unknown[], P extends unknown[]> {
  name: string;
  ck: TableSchema['ck'];
  codec: z.ZodType<V>;
  /** The partition key. */
  pk: (...args: P) => string;
  /** The partition and clustering key of a row. */
  row: (...args: R) => { pk: string; ck: Key };
}

const catalog: Table<unknown, never[], never[]>[] = [];

export function defineTable<V, R extends unknown[], P extends unknown[]>(def: TableDef<V, R, P>): Table<V, R, P> {
  const table: Table<V, R, P> = {
    schema: { name: def.name, ck: def.ck },
    codec: def.codec,
    at: (...args: R) => {
      const { pk, ck } = def.row(...args);
      return new RowRef<V>(table as unknown as Table<V, never[], never[]>, pk, ck);
    },
    partition: (...args: P) => new PartitionRef<V>(table as unknown as Table<V, never[], never[]>, def.pk(...args)),
  };
  catalog.push(table as unknown as Table<unknown, never[], never[]>);
  return table;
}

// ---- records ---------------------------------------------------------------

const Id = z.number().int();

/** A group-setting value: a group ID or an explicit set of members and subgroups. */
export const GroupSettingValue = z.union([Id, z.object({ direct_members: z.array(Id), direct_subgroups: z.array(Id) }).strict()]);
export type GroupSettingValue = z.infer<typeof GroupSettingValue>;

export const TopicsPolicy = z.enum(['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only']);
export type TopicsPolicy = z.infer<typeof TopicsPolicy>;

export const RealmMeta = z.object({
  name: z.string(),
  stringId: z.string().default(''),
  dateCreated: Id,
  topicsPolicy: z.enum(['allow_empty_topic', 'disable_empty_topic']).default('allow_empty_topic'),
  emptyTopicDisplayName: z.string().default('general chat'),
  canMentionManyUsersGroup: GroupSettingValue.default(6),
  // Message editing and deletion (Zulip's realm settings; absent means Zulip's default, see actors/realm/actions/messages/message_edit.ts).
  allowMessageEditing: z.boolean().optional(),
  messageContentEditLimitSeconds: Id.nullable().optional(),
  messageContentDeleteLimitSeconds: Id.nullable().optional(),
  moveMessagesWithinStreamLimitSeconds: Id.nullable().optional(),
  moveMessagesBetweenStreamsLimitSeconds: Id.nullable().optional(),
  canDeleteAnyMessageGroup: GroupSettingValue.optional(),
  canDeleteOwnMessageGroup: GroupSettingValue.optional(),
  canMoveMessagesBetweenTopicsGroup: GroupSettingValue.optional(),
  canMoveMessagesBetweenChannelsGroup: GroupSettingValue.optional(),
  /** A deactivated organization keeps everything; its users get REALM_DEACTIVATED until it is reactivated. */
  deactivated: z.boolean().default(false),
  /** When an owner who deactivated the organization allowed its data to be deleted (POST /realm/deactivate `deletion_delay_days`, FL 332); this server deletes nothing by itself. */
  deletionAllowedAfter: z.number().nullable().optional(),
  /** A demo organization's scheduled deletion (Unix seconds; FL 94); null for any other, and once converted (FL 104). */
  demoOrganizationScheduledDeletionDate: Id.nullable().default(null),
});
export type RealmMeta = z.infer<typeof RealmMeta>;

/** The realm's ID counters: each kind of object is numbered on its own. */
export const Allocator = z.object({
  user: Id.default(100),
  channel: Id.default(1),
  /** Recipients (channels and direct-message conversations) share one sequence, as clients group messages by recipient_id. */
  recipient: Id.default(1),
  scheduled: Id.default(1),
  /** User-defined groups: the system groups hold the IDs below 100. */
  group: Id.default(100),
  profileField: Id.default(1),
  emoji: Id.default(1),
  /** Message IDs below this were reserved by some owner; a new owner starts here. */
  messageBlockEnd: Id.default(1),
  /** Bytes of the files the realm's users uploaded (Zulip's `currently_used_upload_space_bytes`), kept by `actors/realm/actions/organization/upload_space.ts`. */
  uploadBytes: Id.default(0),
  /** Client devices (POST /register_client_device). */
  device: Id.default(1),
});
export type Allocator = z.infer<typeof Allocator>;

export const ApiKeyEntry = z.object({ hash: z.string(), created: Id });
export type ApiKeyEntry = z.infer<typeof ApiKeyEntry>;

/** A user's status (POST /users/me/status); empty strings mean unset. */
export const UserStatus = z.object({ text: z.string(), emojiName: z.string(), emojiCode: z.string(), reactionType: z.string() });
export type UserStatus = z.infer<typeof UserStatus>;

export const UserRecord = z.object({
  id: Id,
  email: z.string(),
  fullName: z.string(),
  role: Id,
  isBot: z.boolean(),
  botType: Id.nullable(),
  botOwnerId: Id.nullable(),
  isActive: z.boolean(),
  /** Legacy: the plain API key of rows written before keys were hashed; `RealmState` turns it into `apiKeys` on load. */
  apiKey: z.string().default(''),
  /** A slow salted hash (argon2id; older rows: scrypt), or null when the user cannot log in with a password. */
  passwordHash: z.string().nullable(),
  dateJoined: z.string(),
  timezone: z.string().default(''),
  canCreateUsers: z.boolean().default(false),
  /** SHA-256 (hex) of each valid API key, oldest first; the keys themselves are never stored. */
  apiKeys: z.array(ApiKeyEntry).default([]),
  /** False for users created through the API until their first login (`date_joined` then becomes that time, FL 475). */
  loggedIn: z.boolean().default(true),
  canChangeUserEmails: z.boolean().default(false),
  /** Custom profile field ID (as text) -> value: text, or user IDs for fields of type 6. */
  profileData: z.record(z.string(), z.union([z.string(), z.array(Id)])).default({}),
  status: UserStatus.default({ text: '', emojiName: '', emojiCode: '', reactionType: '' }),
  /** An email change waiting for its confirmation link. */
  pendingEmail: z.object({ email: z.string(), key: z.string() }).nullable().default(null),
  /** An outgoing-webhook bot's service: where messages that mention it are posted, and the token sent with them. */
  service: z.object({ baseUrl: z.string(), interfaceType: Id, token: z.string() }).nullable().default(null),
  /** One of the realm's system bots (Notification Bot, Welcome Bot): kept apart from its members (`RealmState.systemBots`). */
  isSystemBot: z.boolean().default(false),
  /** Legacy: the time of the one onboarding email rows written before there were several; `RealmState` turns it into `onboarding` on load. */
  onboardingAt: z.number().nullable().default(null),
  /** The onboarding emails still due, each with its timer's time (ms since the epoch; 0: the topics email waiting for the address index, no timer yet): `actors/realm/actions/notifications/signup_email.ts`. */
  onboarding: z.array(z.object({ email: z.enum(['topics', 'guide', 'team']), at: z.number() })).default([]),
  /** Deleted by the operator (`parley users delete`): deactivated, its data removed, for good (FL 490 `is_deleted`). */
  isDeleted: z.boolean().optional(),
  /** Where the avatar comes from (Zulip's `avatar_source`): 'G' Gravatar, 'J' a Jdenticon made here (FL 456); the organization's default when the user was created. */
  avatarSource: z.enum(['G', 'J']).default('G'),
});
export type UserRecord = z.infer<typeof UserRecord>;
/** Zulip's onboarding emails: onboarding_zulip_topics, onboarding_zulip_guide, onboarding_team_to_zulip. */
export type OnboardingEmail = UserRecord['onboarding'][number]['email'];

export const CHANNEL_GROUP_SETTINGS = [
  'can_add_subscribers_group',
  'can_remove_subscribers_group',
  'can_administer_channel_group',
  'can_delete_any_message_group',
  'can_delete_own_message_group',
  'can_send_message_group',
  'can_move_messages_out_of_channel_group',
  'can_move_messages_within_channel_group',
  'can_resolve_topics_group',
  'can_subscribe_group',
  'can_create_topic_group',
] as const;
export type ChannelGroupSetting = (typeof CHANNEL_GROUP_SETTINGS)[number];
/** Channel permissions added after channels were first stored: rows written before them read as role:nobody (group 8), Zulip's default. */
const LATER_CHANNEL_GROUP_SETTINGS: ReadonlySet<ChannelGroupSetting> = new Set(['can_move_messages_out_of_channel_group', 'can_move_messages_within_channel_group', 'can_resolve_topics_group', 'can_subscribe_group']);
/** Later channel permissions whose Zulip default is another group: can_create_topic_group (FL 441) reads as role:everyone (group 2). */
const LATER_DEFAULTS: Partial<Record<ChannelGroupSetting, number>> = { can_create_topic_group: 2 };
const channelGroupField = (k: ChannelGroupSetting) => {
  const fallback = LATER_DEFAULTS[k] ?? (LATER_CHANNEL_GROUP_SETTINGS.has(k) ? 8 : undefined);
  return fallback === undefined ? GroupSettingValue : GroupSettingValue.default(fallback);
};

export const ChannelRecord = z.object({
  id: Id,
  recipientId: Id,
  name: z.string(),
  description: z.string(),
  renderedDescription: z.string(),
  inviteOnly: z.boolean(),
  isWebPublic: z.boolean(),
  historyPublicToSubscribers: z.boolean(),
  messageRetentionDays: Id.nullable(),
  topicsPolicy: TopicsPolicy.default('inherit'),
  dateCreated: Id,
  creatorId: Id.nullable(),
  isDefault: z.boolean().default(false),
  firstMessageId: Id.nullable().default(null),
  folderId: Id.nullable().default(null),
  isArchived: z.boolean().default(false),
  groups: z.object(Object.fromEntries(CHANNEL_GROUP_SETTINGS.map((k) => [k, channelGroupField(k)])) as Record<ChannelGroupSetting, typeof GroupSettingValue>),
});
export type ChannelRecord = z.infer<typeof ChannelRecord>;

export const SubscriptionRecord = z.object({
  streamId: Id,
  userId: Id,
  active: z.boolean(),
  color: z.string(),
  pinToTop: z.boolean().default(false),
  isMuted: z.boolean().default(false),
  /** First message ID the subscriber received through this subscription. */
  startMessageId: Id,
  /** The newest message ID when the subscription ended (null while active, and for subscriptions ended before it was kept). */
  endMessageId: Id.nullable().default(null),
  /** Per-channel notification settings; null inherits the user's global setting. */
  desktopNotifications: z.boolean().nullable().default(null),
  emailNotifications: z.boolean().nullable().default(null),
  pushNotifications: z.boolean().nullable().default(null),
  audibleNotifications: z.boolean().nullable().default(null),
  wildcardMentionsNotify: z.boolean().nullable().default(null),
});
export type SubscriptionRecord = z.infer<typeof SubscriptionRecord>;

export const DmConversation = z.object({
  /** The participants' IDs, sorted, joined by commas. */
  key: z.string(),
  recipientId: Id,
  userIds: z.array(Id),
  /** Newest message in the conversation (for recent_private_conversations). */
  maxMessageId: Id.nullable().default(null),
});
export type DmConversation = z.infer<typeof DmConversation>;

/**
 * A message as stored. It holds IDs only (sender, channel, participants):
 * names are resolved when the message is formatted, so a rename shows in the
 * whole history.
 */
export const StoredMessage = z.object({
  id: Id,
  type: z.enum(['stream', 'private']),
  streamId: Id.nullable(),
  topic: z.string(),
  recipientId: Id,
  /** `s<streamId>` or `d<sorted participant IDs>`: where the message is stored. */
  recipientKey: z.string(),
  senderId: Id,
  content: z.string(),
  renderedContent: z.string(),
  timestamp: Id,
  client: z.string(),
  readBySender: z.boolean(),
  /** Users mentioned by name. */
  mentions: z.array(Id),
  /** @all / @everyone / @channel, or @topic. */
  wildcard: z.enum(['stream', 'topic']).nullable(),
  /**
   * Who a topic wildcard mention reaches (its `topic_wildcard_mentioned`
   * flag): the topic's participants before the message and its sender, as
   * Zulip's `topic_participant_user_ids`; null without one; absent on
   * messages stored before it was kept (then every recipient, as before).
   */
  topicWildcardUsers: z.array(Id).nullish(),
  /** Every participant of a direct message (sender included), sorted. */
  dmUserIds: z.array(Id).nullable(),
  /** The topic's links (linkifier matches and URLs), found when the message was sent. */
  topicLinks: z.array(z.object({ text: z.string(), url: z.string() })).default([]),
  /** Edits and moves, oldest first (Zulip's edit_history, which lists them newest first). */
  editHistory: z.array(z.lazy(() => EditRecord)).default([]),
  lastEditTimestamp: Id.nullable().default(null),
  lastMovedTimestamp: Id.nullable().default(null),
  /** Recipients who muted the sender: the message is read for them from the start. */
  mutedBy: z.array(Id).default([]),
  /**
   * When set, the only recipients for whom the message starts unread
   * (Zulip's `limit_unread_user_ids`): a resolved-topic notice is read for
   * everyone else (`resolved_topic_notice_auto_read_policy`, FL 385).
   */
  unreadOnlyFor: z.array(Id).nullish(),
  /** Recipients one of whose alert words the message contains (`has_alert_word`). */
  alerted: z.array(Id).default([]),
  /** Emoji reactions, in the order they were added. */
  reactions: z.array(z.object({ emojiName: z.string(), emojiCode: z.string(), reactionType: z.enum(['unicode_emoji', 'realm_emoji', 'service_extra_emoji']), userId: Id })).default([]),
  /** Recipients sent a mobile push notification about it (Zulip's active_mobile_push_notification flag): reading it removes the notification. */
  pushed: z.array(Id).optional(),
});
export type StoredMessage = z.infer<typeof StoredMessage>;

/** One edit or move of a message: what changed, by whom, when. */
export const EditRecord = z.object({
  userId: Id.nullable(),
  timestamp: Id,
  prevContent: z.string().optional(),
  prevRenderedContent: z.string().optional(),
  prevTopic: z.string().optional(),
  topic: z.string().optional(),
  prevStream: Id.optional(),
  stream: Id.optional(),
});
export type EditRecord = z.infer<typeof EditRecord>;

export const MessageLocation = z.object({ recipientKey: z.string() });
export type MessageLocation = z.infer<typeof MessageLocation>;

export const ScheduledMessage = z.object({
  id: Id,
  senderId: Id,
  type: z.enum(['stream', 'private']),
  /** A channel ID, or the recipients' user IDs. */
  to: z.union([Id, z.array(Id)]),
  topic: z.string(),
  content: z.string(),
  renderedContent: z.string(),
  deliverAt: Id,
  readBySender: z.boolean().nullable(),
  failed: z.boolean().default(false),
  /** Why delivery failed, when it did. */
  failure: z.string().nullable().default(null),
  /**
   * A reminder (FL 381, Zulip's `delivery_type` REMIND): the message it is
   * about. Notification Bot delivers it to the sender; null: an ordinary
   * scheduled message, sent as its sender.
   */
  reminderTargetMessageId: Id.nullable().default(null),
});
export type ScheduledMessage = z.infer<typeof ScheduledMessage>;

export const TimerRecord = z.object({
  /** The actor that set it and whose handler runs: its kind and ID. */
  kind: z.string(),
  actor: z.string(),
  /** The handler's name, and what the timer is about (e.g. a scheduled message's ID). */
  name: z.string(),
  ref: Id,
  /** When it is due, ms since the epoch. */
  at: Id,
  payload: z.unknown(),
});
export type TimerRecord = z.infer<typeof TimerRecord>;

/** Why a user is mailed about a message (Zulip's `trigger`: private_message, mentioned, stream_wildcard_mentioned, followed_topic_email_notify, stream_email_notify). */
export const MissedEmail = z.object({ trigger: z.string() });
/** A time (ms since the epoch): a user's last activity, their last digest. */
export const WhenRecord = z.object({ at: z.number() });
/** The realm's armed digest timer: when it is due, the run it belongs to (its scheduled time) and the last user of the run done before it. */
export const DigestRun = z.object({ at: z.number(), run: z.number(), after: z.number() });
export type DigestRun = z.infer<typeof DigestRun>;
/** A digest composed and recorded, waiting for SMTP (`actors/realm/actions/notifications/digest.ts`). */
export const DigestMail = z.object({ subject: z.string(), text: z.string(), html: z.string(), messageId: z.string(), unsubscribe: z.string() });
export type DigestMail = z.infer<typeof DigestMail>;
export type MissedEmail = z.infer<typeof MissedEmail>;

/** A mobile device registered for push notifications (Zulip's PushDeviceToken). */
export const PushDeviceRecord = z.object({
  userId: Id,
  /** 1: APNs, 2: FCM. */
  kind: z.union([z.literal(1), z.literal(2)]),
  token: z.string(),
  iosAppId: z.string().nullable(),
  /** Whether the push notification service knows it yet (registered by the `pushRegister` timer). */
  registered: z.boolean(),
});
export type PushDeviceRecord = z.infer<typeof PushDeviceRecord>;

/**
 * A push notification a user's devices may still show (Zulip's
 * `active_mobile_push_notification` flag): its conversation, so a read of a
 * whole channel or topic finds it, and whether its removal is on its way.
 */
export const ActivePush = z.object({
  streamId: Id.nullable(),
  /** The lower-cased topic (empty for a direct message). */
  topic: z.string(),
  removing: z.boolean().default(false),
});
export type ActivePush = z.infer<typeof ActivePush>;

/**
 * A logged-in client device (Zulip 12's Device, FL 468: POST
 * /register_client_device) and its end-to-end encrypted push registration
 * (POST /mobile_push/register with `device_id`): the `push_key` and its
 * `push_key_id`, the token's ID (`token_id`, base64 of 8 bytes) registered
 * with the service (`pushTokenId`, by which the service knows the device)
 * or on its way (`pendingPushTokenId`, with the sealed registration the
 * service opens), and the service's error code.
 */
export const ClientDevice = z.object({
  userId: Id,
  deviceId: Id,
  pushKeyId: Id.nullable().default(null),
  pushKey: z.string().nullable().default(null),
  tokenKind: z.enum(['fcm', 'apns']).nullable().default(null),
  pushTokenId: z.string().nullable().default(null),
  pendingPushTokenId: z.string().nullable().default(null),
  pushTokenLastUpdated: Id.nullable().default(null),
  errorCode: z.string().nullable().default(null),
  bouncerPublicKey: z.string().nullable().default(null),
  encryptedPushRegistration: z.string().nullable().default(null),
});
export type ClientDevice = z.infer<typeof ClientDevice>;

export const TimerCursor = z.object({ hour: Id });

/**
 * A user's read watermark and the flag rows it needs to find without
 * scanning: every message below `readBelow` is read unless its flag row says
 * otherwise; `unreadRows` lists the messages whose flag row lacks `read`, and
 * `starred` the starred messages (few, chosen one by one).
 */
export const UserMarks = z.object({
  readBelow: Id.default(0),
  unreadRows: z.array(Id).default([]),
  starred: z.array(Id).default([]),
});
export type UserMarks = z.infer<typeof UserMarks>;

/** A user's visibility policy for one topic (Zulip's UserTopic): 1 muted, 2 unmuted, 3 followed. */
export const UserTopicRecord = z.object({ userId: Id, streamId: Id, topic: z.string(), policy: Id, lastUpdated: Id });
export type UserTopicRecord = z.infer<typeof UserTopicRecord>;

/** A draft kept for a user (Zulip's drafts synchronization). */
export const DraftRecord = z.object({ id: Id, type: z.enum(['', 'stream', 'private']), to: z.array(Id), topic: z.string(), content: z.string(), timestamp: Id });
export type DraftRecord = z.infer<typeof DraftRecord>;

export const SavedSnippetRecord = z.object({ id: Id, title: z.string(), content: z.string(), dateCreated: Id });
export type SavedSnippetRecord = z.infer<typeof SavedSnippetRecord>;

/** A navigation view of a user's (FL 390): a built-in view's settings, or a custom view with its name. `id` keeps the order they were made in. */
export const NavigationViewRecord = z.object({ id: Id, fragment: z.string(), isPinned: z.boolean(), name: z.string().nullable() });
export type NavigationViewRecord = z.infer<typeof NavigationViewRecord>;

/** A value a bot keeps in its storage (`/bot_storage`); the row's clustering key is its key. */
export const BotStorageRow = z.object({ value: z.string() });
export type BotStorageRow = z.infer<typeof BotStorageRow>;

/** Numbers a user's own objects (drafts, saved snippets). */
export const UserCounters = z.object({
  draft: Id.default(1),
  snippet: Id.default(1),
  navigationView: Id.default(1),
  /** The key that signs this user's temporary file URLs (random, made on first use; '' until then). */
  fileUrlKey: z.string().default(''),
  /** The next ID of an upload of this user's (`user_attachments`). */
  attachment: Id.default(1),
  /** The onboarding steps (one-time notices) the user has seen (POST /users/me/onboarding_steps). */
  onboardingSeen: z.array(z.string()).default([]),
  /** The next number of a resumable upload of this user's (`tus_uploads`: its timers' ref). */
  tusUpload: Id.default(1),
});
export type UserCounters = z.infer<typeof UserCounters>;

export const MutedUserRecord = z.object({ userId: Id, mutedUserId: Id, timestamp: Id });
export type MutedUserRecord = z.infer<typeof MutedUserRecord>;

/** An uploaded file: who uploaded it and what it is (its bytes are in the FileStore under `path`). */
export const AttachmentRecord = z.object({
  path: z.string(),
  filename: z.string(),
  contentType: z.string(),
  size: Id,
  ownerId: Id,
  createTime: Id,
  /** Its ID among its owner's uploads (GET /attachments); 0 for uploads made before uploads were numbered. */
  id: Id.default(0),
});
export type AttachmentRecord = z.infer<typeof AttachmentRecord>;

/**
 * A resumable upload (`/api/v1/tus`, `actors/user/tus.ts`): the bytes
 * received so far are `parts` in the FileStore, in order; once `offset`
 * reaches `length` they become the file at `path` and the row says `done`
 * until it expires.
 */
export const TusUploadRecord = z.object({
  /** The random ID in its URL (`/api/v1/tus/<id>`). */
  id: z.string(),
  /** Its number among the user's resumable uploads: the ref of its timers. */
  ref: Id,
  /** Where the finished file goes (as POST /user_uploads would put it). */
  path: z.string(),
  filename: z.string(),
  contentType: z.string(),
  length: Id,
  offset: Id,
  parts: z.array(z.object({ path: z.string(), size: Id }).strict()),
  /** When it expires (ms): its `tusExpire` timer's time. */
  expiresAt: Id,
  /** Once finished (kept until it expires, so a client that lost the last answer finds it complete): POST /user_uploads's answer. */
  done: z.object({ url: z.string(), filename: z.string() }).strict().nullable().default(null),
});
export type TusUploadRecord = z.infer<typeof TusUploadRecord>;

/** A chunk of a file in the chunked file store: the first row (index -1) describes the file. */
export const FileChunk = z.union([z.object({ contentType: z.string(), filename: z.string(), size: Id, chunks: Id }).strict(), z.object({ data: z.string() }).strict()]);

/** A row of `shard_handoffs`: the description (the writer's token, how many chunks) or a chunk of JSON text. */
export const HandoffRow = z.union([z.object({ token: Id, chunks: Id }).strict(), z.object({ data: z.string() }).strict()]);

/** A custom emoji of the realm. */
export const RealmEmojiRecord = z.object({ id: Id, name: z.string(), fileName: z.string(), authorId: Id.nullable(), deactivated: z.boolean() });
export type RealmEmojiRecord = z.infer<typeof RealmEmojiRecord>;

/** One topic of a channel: its name (as in its newest message), newest message and message count. */
/** A channel's topic: its name (as in its newest message), its newest and first message, and how many it has (minId: unknown once the first was deleted or moved away). */
export const ChannelTopic = z.object({ name: z.string(), maxId: Id, minId: Id.optional(), count: Id });
export type ChannelTopic = z.infer<typeof ChannelTopic>;

export const UserSettingsRow = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));

/**
 * Organization settings beyond `RealmMeta` (PATCH /realm): each field has its
 * default, so a realm created before a setting existed reads it.
 */
export const RealmSettings = z.object({
  description: z.string().default(''),
  /** Days messages are kept; -1 keeps them forever. */
  messageRetentionDays: Id.default(-1),
  enableSpectatorAccess: z.boolean().default(false),
  inviteRequired: z.boolean().default(true),
  emailsRestrictedToDomains: z.boolean().default(false),
  /** Refuse addresses of disposable-email providers when domains are not restricted (Zulip's default: true). */
  disallowDisposableEmailAddresses: z.boolean().default(true),
  waitingPeriodThreshold: Id.default(0),
  defaultLanguage: z.string().default('en'),
  enableReadReceipts: z.boolean().default(true),
  /** Whether missed-message emails may carry messages' content (`actors/realm/actions/notifications/notifications.ts`). */
  messageContentAllowedInEmailNotifications: z.boolean().default(true),
  /** Whether the weekly digest email goes out (`actors/realm/actions/notifications/digest.ts`), and on which weekday (0: Monday, as Python's). */
  digestEmailsEnabled: z.boolean().default(false),
  digestWeekday: Id.default(1),
  /** Whether new users get the onboarding emails (`actors/realm/actions/notifications/signup_email.ts`); on by default, as Zulip's. */
  sendWelcomeEmails: z.boolean().default(true),
  mandatoryTopics: z.boolean().default(false),
  messageContentEditLimitSeconds: Id.nullable().default(600),
  messageContentDeleteLimitSeconds: Id.nullable().default(null),
  allowMessageEditing: z.boolean().default(true),
  /** Where Notification Bot announces new channels (`announce`); null: nowhere. */
  newStreamAnnouncementsStreamId: Id.nullable().default(null),
  /** What Welcome Bot adds to its welcome message for new users ('' adds nothing). */
  welcomeMessageCustomText: z.string().default(''),
  /** The video-call provider of the compose box's call button, by Zulip's ID (`VIDEO_CHAT_PROVIDERS`); Jitsi Meet by default. */
  videoChatProvider: Id.default(1),
  /** Whether clients mark guests' names with "(guest)" (FL 216). */
  enableGuestUserIndicator: z.boolean().default(true),
  /** Whether clients warn a user composing a direct message to a guest (FL 348). */
  enableGuestUserDmWarning: z.boolean().default(true),
  /** Whether Notification Bot posts in a channel's "channel events" topic when it is made or changed (FL 434). */
  sendChannelEventsMessages: z.boolean().default(true),
  /** The private channel moderation requests go to (FL 331); null: none. */
  moderationRequestChannelId: Id.nullable().default(null),
  /** Where Zulip update announcements would go (FL 242); this server sends none. Null: nowhere. */
  zulipUpdateAnnouncementsStreamId: Id.nullable().default(null),
  /** The language code blocks without one are highlighted as ('' for none; FL 52). */
  defaultCodeBlockLanguage: z.string().default(''),
  /** The highest GIPHY rating the compose box's GIF picker may offer, by Zulip's ID (2: G; FL 55). */
  giphyRating: Id.default(2),
  /** The avatar source of new users (FL 456): 'G' Gravatar or 'J' Jdenticon. New organizations get 'J' (`bootstrap`); older rows read 'G', what their users have. */
  defaultAvatarSource: z.enum(['G', 'J']).default('G'),
  /** The size of image and video previews in messages, in percent of the normal height: 100, 150 or 200 (FL 469). */
  mediaPreviewSize: Id.default(100),
  /** Zulip's organization type (`ORG_TYPES`; 0: unspecified; FL 128). */
  orgType: Id.default(0),
  /** Whether the organization asks to be listed in Zulip's communities directory (FL 129). */
  wantAdvertiseInCommunitiesDirectory: z.boolean().default(false),
  /** Where Notification Bot announces new users (FL 241); null: nowhere. */
  signupAnnouncementsStreamId: Id.nullable().default(null),
  /** Whether two users may not share a name, compared as Zulip does (FL 246). */
  requireUniqueNames: z.boolean().default(false),
  /** Zulip's require_e2ee_push_notifications (FL 409): legacy push notifications carry no message content. */
  requireE2eePushNotifications: z.boolean().default(false),
  /** The organization's Jitsi server; null: the server's (FL 212). */
  jitsiServerUrl: z.string().nullable().default(null),
  /** Who sees what of a message's edit history (FL 358): every change, moves only, or none. */
  messageEditHistoryVisibilityPolicy: z.enum(['all', 'moves', 'none']).default('all'),
  /** The organization's email domains (`realm_domains`, FL 63): few, so kept in this row. */
  domains: z.array(z.object({ domain: z.string(), allowSubdomains: z.boolean() })).default([]),
  /** Default channel groups new users may pick from at sign-up (`realm_default_stream_groups`): few, so kept in this row. */
  defaultChannelGroups: z.array(z.object({ id: Id, name: z.string(), description: z.string(), streamIds: z.array(Id) })).default([]),
  /** Group-setting permissions of the organization, by their API name. */
  groups: z.record(z.string(), GroupSettingValue).default({}),
});
export type RealmSettings = z.infer<typeof RealmSettings>;

/** Messages sent to a channel on one day (UTC), for its weekly traffic and recent activity. */
export const ChannelTraffic = z.object({ count: Id });
export type ChannelTraffic = z.infer<typeof ChannelTraffic>;

export const ChannelFolderRecord = z.object({
  id: Id,
  name: z.string(),
  description: z.string(),
  renderedDescription: z.string(),
  order: Id,
  creatorId: Id.nullable(),
  dateCreated: Id,
  isArchived: z.boolean().default(false),
});
export type ChannelFolderRecord = z.infer<typeof ChannelFolderRecord>;

export const LinkifierRecord = z.object({
  id: Id,
  pattern: z.string(),
  urlTemplate: z.string(),
  exampleInput: z.string().nullable().default(null),
  reverseTemplate: z.string().nullable().default(null),
  alternativeUrlTemplates: z.array(z.string()).default([]),
  order: Id,
});
export type LinkifierRecord = z.infer<typeof LinkifierRecord>;

/** A code playground: where code blocks of a language may be opened (`url_template` with the sole variable `code`). */
export const PlaygroundRecord = z.object({
  id: Id,
  name: z.string(),
  pygmentsLanguage: z.string(),
  urlTemplate: z.string(),
});
export type PlaygroundRecord = z.infer<typeof PlaygroundRecord>;

/**
 * An organization export asked for through the API (POST /export/realm):
 * `requested` until its follow-up stores the archive (`path`, in the
 * FileStore) or fails; `deleted` once an administrator removed the archive.
 * Times in seconds since the epoch.
 */
export const RealmExportRecord = z.object({
  id: Id,
  /** Zulip's `RealmExport.EXPORT_PUBLIC` (1) or `EXPORT_FULL_WITH_CONSENT` (2). */
  exportType: z.union([z.literal(1), z.literal(2)]),
  actingUserId: Id,
  status: z.enum(['requested', 'succeeded', 'failed', 'deleted']),
  requestedAt: z.number(),
  path: z.string().nullable(),
  succeededAt: z.number().nullable(),
  failedAt: z.number().nullable(),
  deletedAt: z.number().nullable(),
});
export type RealmExportRecord = z.infer<typeof RealmExportRecord>;

/** An email invitation or a reusable invitation link (`email` null). */
export const InviteRecord = z.object({
  id: Id,
  /** The secret the link carries. */
  token: z.string(),
  email: z.string().nullable(),
  referrerId: Id,
  role: Id,
  streamIds: z.array(Id),
  groupIds: z.array(Id).default([]),
  includeRealmDefaultSubscriptions: z.boolean().default(false),
  notifyReferrerOnJoin: z.boolean().default(true),
  welcomeMessageCustomText: z.string().nullable().default(null),
  invitedAt: Id,
  /** Seconds since the epoch; null never expires. */
  expiresAt: Id.nullable(),
  /** An email invitation is used once; a link any number of times until revoked or expired. */
  used: z.boolean().default(false),
  revoked: z.boolean().default(false),
});
export type InviteRecord = z.infer<typeof InviteRecord>;

/** A user's token with the configured video-call provider (OAuth access token). */
export const VideoProviderToken = z.object({ accessToken: z.string(), obtainedAt: Id });
export type VideoProviderToken = z.infer<typeof VideoProviderToken>;

export const USER_GROUP_SETTINGS = ['can_add_members_group', 'can_join_group', 'can_leave_group', 'can_manage_group', 'can_mention_group', 'can_remove_members_group'] as const;
export type UserGroupSetting = (typeof USER_GROUP_SETTINGS)[number];

/** A user-defined group (system groups are not stored: `actors/model.ts`). */
export const UserGroupRecord = z.object({
  id: Id,
  name: z.string(),
  description: z.string(),
  renderedDescription: z.string(),
  /** Direct members and direct subgroups, sorted. */
  members: z.array(Id),
  subgroups: z.array(Id),
  creatorId: Id.nullable(),
  dateCreated: Id.nullable(),
  deactivated: z.boolean().default(false),
  settings: z.object(Object.fromEntries(USER_GROUP_SETTINGS.map((k) => [k, GroupSettingValue])) as Record<UserGroupSetting, typeof GroupSettingValue>),
});
export type UserGroupRecord = z.infer<typeof UserGroupRecord>;

/** A custom profile field of the realm. */
export const ProfileFieldRecord = z.object({
  id: Id,
  name: z.string(),
  hint: z.string(),
  fieldType: Id,
  /** JSON text: dropdown choices (type 3) or the external account's subtype (type 7); '' otherwise. */
  fieldData: z.string(),
  order: Id,
  displayInProfileSummary: z.boolean().default(false),
  required: z.boolean().default(false),
  editableByUser: z.boolean().default(true),
  useForUserMatching: z.boolean().default(false),
});
export type ProfileFieldRecord = z.infer<typeof ProfileFieldRecord>;

/** An organization in the deployment's directory (the directory actor's): which host serves which realm. */
export const OrganizationRecord = z.object({
  realmId: Id,
  /** The host part before the site's domain; '' is the organization at the root domain. */
  subdomain: z.string(),
  name: z.string(),
  deactivated: z.boolean().default(false),
  dateCreated: Id,
});
export type OrganizationRecord = z.infer<typeof OrganizationRecord>;

/** A one-time organization-creation link (Zulip's generate_realm_creation_link), stored by its token's hash. */
export const OrganizationLinkRecord = z.object({
  expiresAt: Id,
  /** The realm created with it; null while unused. */
  usedBy: Id.nullable().default(null),
});
export type OrganizationLinkRecord = z.infer<typeof OrganizationLinkRecord>;

/**
 * The server-wide index of addresses (the directory actor's): one row per
 * account, in the partition of its address (lower-cased), so the accounts
 * of an address are one partition read, as small as their number
 * (`actors/directory/accounts.ts`).
 */
export const AccountAddressRecord = z.object({ realmId: Id, userId: Id });
export type AccountAddressRecord = z.infer<typeof AccountAddressRecord>;

/** The header of a realm's checkpoint. */
/**
 * A realm checkpoint's header: the journal seq it holds, its generation and chunk count; its format
 * (`version`; headers written before there was one are 1), the fingerprint of the codecs its rows
 * were written under (`shape`) and the SHA-256 of its chunks' bytes (`checksum`).
 */
export const RealmCheckpointHead = z.object({
  seq: Id,
  gen: z.string(),
  chunks: Id,
  version: Id.default(1),
  shape: z.string().default(''),
  checksum: z.string().default(''),
  /** The image tables it holds (absent: written before the list was kept); a table it lacks is read from the store at load. */
  tables: z.array(z.string()).optional(),
});
export type RealmCheckpointHead = z.infer<typeof RealmCheckpointHead>;
/** A journal row of a realm: its writes as [table, pk, ck, value as JSON or null for a delete]. */
export const RealmJournalRow = z.object({ ops: z.array(z.tuple([z.string(), z.string(), z.union([z.number(), z.string()]), z.string().nullable()])) });
/** Journal rows per partition of `realm_journal`. */
export const REALM_JOURNAL_BUCKET = 1024;

// ---- tables ---------------------------------------------------------------

/** Timers live in one partition per shard and hour. */
export const TIMER_HOUR_MS = 3_600_000;
export const timerHour = (at: number): number => Math.floor(at / TIMER_HOUR_MS);
/** Timer clustering keys sort by due time: a zero-padded timestamp, then the timer's identity. */
const timerCk = (t: { at: number; kind: string; actor: string; name: string; ref: number }) => `${String(t.at).padStart(15, '0')}:${t.kind}:${t.actor}:${t.name}:${t.ref}`;

export const T = {
  realms: defineTable({
    name: 'realms',
    ck: 'text',
    codec: RealmMeta,
    pk: (realm: number) => String(realm),
    row: (realm: number) => ({ pk: String(realm), ck: 'meta' }),
  }),
  allocators: defineTable({
    name: 'allocators',
    ck: 'text',
    codec: Allocator,
    pk: (realm: number) => String(realm),
    row: (realm: number) => ({ pk: String(realm), ck: 'ids' }),
  }),
  users: defineTable({
    name: 'users',
    ck: 'bigint',
    codec: UserRecord,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, userId: number) => ({ pk: `${realm}:${objectBucket(userId)}`, ck: userId }),
  }),
  channels: defineTable({
    name: 'channels',
    ck: 'bigint',
    codec: ChannelRecord,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, channelId: number) => ({ pk: `${realm}:${objectBucket(channelId)}`, ck: channelId }),
  }),
  subscriptions: defineTable({
    name: 'subscriptions',
    ck: 'bigint',
    codec: SubscriptionRecord,
    pk: (realm: number, channelId: number) => `${realm}:${channelId}`,
    row: (realm: number, channelId: number, userId: number) => ({ pk: `${realm}:${channelId}`, ck: userId }),
  }),
  dmConversations: defineTable({
    name: 'dm_conversations',
    ck: 'text',
    codec: DmConversation,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number, key: string) => ({ pk: `${realm}:${userId}`, ck: key }),
  }),
  recipientBuckets: defineTable({
    name: 'recipient_buckets',
    ck: 'bigint',
    codec: z.literal(1),
    pk: (realm: number, recipientKey: string) => `${realm}:${recipientKey}`,
    row: (realm: number, recipientKey: string, bucket: number) => ({ pk: `${realm}:${recipientKey}`, ck: bucket }),
  }),
  messages: defineTable({
    name: 'messages',
    ck: 'bigint',
    codec: StoredMessage,
    pk: (realm: number, recipientKey: string, bucket: number) => `${realm}:${recipientKey}:${bucket}`,
    row: (realm: number, recipientKey: string, id: number) => ({ pk: `${realm}:${recipientKey}:${messageBucket(id)}`, ck: id }),
  }),
  messageLocator: defineTable({
    name: 'message_locator',
    ck: 'bigint',
    codec: MessageLocation,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, id: number) => ({ pk: `${realm}:${messageBucket(id)}`, ck: id }),
  }),
  /** A user's flags of one message, where they differ from the message's base flags; one partition per user and message bucket. */
  userFlags: defineTable({
    name: 'user_flags',
    ck: 'bigint',
    codec: z.array(z.string()),
    pk: (realm: number, userId: number, bucket: number) => `${realm}:${userId}:${bucket}`,
    row: (realm: number, userId: number, messageId: number) => ({ pk: `${realm}:${userId}:${messageBucket(messageId)}`, ck: messageId }),
  }),
  /** What a user's flag rows do not say message by message (`UserMarks`). */
  userMarks: defineTable({
    name: 'user_marks',
    ck: 'text',
    codec: UserMarks,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number) => ({ pk: `${realm}:${userId}`, ck: 'marks' }),
  }),
  userSettings: defineTable({
    name: 'user_settings',
    ck: 'text',
    codec: UserSettingsRow,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number) => ({ pk: `${realm}:${userId}`, ck: 'settings' }),
  }),
  /** Which settings each user changed themselves (for `skip_if_already_edited`), per bucket of user IDs. */
  userSettingsEdited: defineTable({
    name: 'user_settings_edited',
    ck: 'bigint',
    codec: z.array(z.string()),
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, userId: number) => ({ pk: `${realm}:${objectBucket(userId)}`, ck: userId }),
  }),
  /** The organization's defaults for new users' settings (only those an administrator changed). */
  realmUserDefaults: defineTable({
    name: 'realm_user_defaults',
    ck: 'text',
    codec: UserSettingsRow,
    pk: (realm: number) => String(realm),
    row: (realm: number) => ({ pk: String(realm), ck: 'defaults' }),
  }),
  userGroups: defineTable({
    name: 'user_groups',
    ck: 'bigint',
    codec: UserGroupRecord,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, id: number) => ({ pk: `${realm}:${objectBucket(id)}`, ck: id }),
  }),
  /** Custom profile fields: one small partition per realm. */
  profileFields: defineTable({
    name: 'custom_profile_fields',
    ck: 'bigint',
    codec: ProfileFieldRecord,
    pk: (realm: number) => String(realm),
    row: (realm: number, id: number) => ({ pk: String(realm), ck: id }),
  }),
  /** Topic visibility policies, one partition per user (bounded by what the user chose). */
  userTopics: defineTable({
    name: 'user_topics',
    ck: 'text',
    codec: UserTopicRecord,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number, streamId: number, topic: string) => ({ pk: `${realm}:${userId}`, ck: `${streamId}:${topic.toLowerCase()}` }),
  }),
  userDrafts: defineTable({
    name: 'user_drafts',
    ck: 'bigint',
    codec: DraftRecord,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number, id: number) => ({ pk: `${realm}:${userId}`, ck: id }),
  }),
  savedSnippets: defineTable({
    name: 'saved_snippets',
    ck: 'bigint',
    codec: SavedSnippetRecord,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number, id: number) => ({ pk: `${realm}:${userId}`, ck: id }),
  }),
  /** A user's navigation views, by fragment (bounded by what the user made). */
  navigationViews: defineTable({
    name: 'navigation_views',
    ck: 'text',
    codec: NavigationViewRecord,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number, fragment: string) => ({ pk: `${realm}:${userId}`, ck: fragment }),
  }),
  /** A bot's storage (`/bot_storage`), by key: one partition per bot, bounded by the storage limit (the user actor's). */
  botStorage: defineTable({
    name: 'bot_storage',
    ck: 'text',
    codec: BotStorageRow,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number, key: string) => ({ pk: `${realm}:${userId}`, ck: key }),
  }),
  userCounters: defineTable({
    name: 'user_counters',
    ck: 'text',
    codec: UserCounters,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number) => ({ pk: `${realm}:${userId}`, ck: 'ids' }),
  }),
  /** Whom a user muted, one partition per user (bounded by their choices). */
  mutedUsers: defineTable({
    name: 'muted_users',
    ck: 'bigint',
    codec: MutedUserRecord,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number, mutedUserId: number) => ({ pk: `${realm}:${userId}`, ck: mutedUserId }),
  }),
  alertWords: defineTable({
    name: 'alert_words',
    ck: 'text',
    codec: z.array(z.string()),
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number) => ({ pk: `${realm}:${userId}`, ck: 'words' }),
  }),
  /** Uploaded files by path, in 256 partitions per realm (paths start with a random byte). */
  attachments: defineTable({
    name: 'attachments',
    ck: 'text',
    codec: AttachmentRecord,
    pk: (realm: number, shard: string) => `${realm}:${shard}`,
    row: (realm: number, path: string) => ({ pk: `${realm}:${path.split('/')[1] ?? ''}`, ck: path }),
  }),
  /** A user's uploads by ID (GET /attachments, DELETE /attachments/{id}): the upload's path, one partition per user. */
  userAttachments: defineTable({
    name: 'user_attachments',
    ck: 'bigint',
    codec: z.string(),
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number, id: number) => ({ pk: `${realm}:${userId}`, ck: id }),
  }),
  /** A user's resumable uploads in progress, by ID, one partition per user (owned by the user actor). */
  tusUploads: defineTable({
    name: 'tus_uploads',
    ck: 'text',
    codec: TusUploadRecord,
    pk: (realm: number, userId: number) => `${realm}:${userId}`,
    row: (realm: number, userId: number, id: string) => ({ pk: `${realm}:${userId}`, ck: id }),
  }),
  /** Which messages link to an uploaded file (who may download it). */
  attachmentMessages: defineTable({
    name: 'attachment_messages',
    ck: 'bigint',
    codec: z.literal(1),
    pk: (realm: number, path: string) => `${realm}:${path}`,
    row: (realm: number, path: string, messageId: number) => ({ pk: `${realm}:${path}`, ck: messageId }),
  }),
  /** File bytes in chunks, one partition per file (`ChunkedFileStore`). */
  fileChunks: defineTable({
    name: 'file_chunks',
    ck: 'bigint',
    codec: FileChunk,
    pk: (path: string) => path,
    row: (path: string, index: number) => ({ pk: path, ck: index }),
  }),
  realmEmoji: defineTable({
    name: 'realm_emoji',
    ck: 'bigint',
    codec: RealmEmojiRecord,
    pk: (realm: number) => String(realm),
    row: (realm: number, id: number) => ({ pk: String(realm), ck: id }),
  }),
  /** The topics of a channel (one partition per channel), kept by every send, move and delete. */
  channelTopics: defineTable({
    name: 'channel_topics',
    ck: 'text',
    codec: ChannelTopic,
    pk: (realm: number, channelId: number) => `${realm}:${channelId}`,
    row: (realm: number, channelId: number, topic: string) => ({ pk: `${realm}:${channelId}`, ck: topic.toLowerCase() }),
  }),
  scheduledMessages: defineTable({
    name: 'scheduled_messages',
    ck: 'bigint',
    codec: ScheduledMessage,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, id: number) => ({ pk: `${realm}:${objectBucket(id)}`, ck: id }),
  }),
  /**
   * Missed-message emails decided at send (`actors/realm/actions/notifications/notifications.ts`),
   * written in the message's commit and deleted in the commit of the timer
   * that mails them: one partition per realm, bounded by the notifications
   * waiting for their batch.
   */
  /** The key an organization signs its mails' unsubscribe links with (made with its first missed-message email). */
  unsubscribeKeys: defineTable({
    name: 'unsubscribe_keys',
    ck: 'text',
    codec: z.object({ key: z.string() }),
    pk: (realm: number) => String(realm),
    row: (realm: number) => ({ pk: String(realm), ck: 'key' }),
  }),
  /** Mobile devices registered for push (`actors/realm/actions/notifications/push.ts`): one partition per realm. */
  pushDevices: defineTable({
    name: 'push_devices',
    ck: 'text',
    codec: PushDeviceRecord,
    pk: (realm: number) => String(realm),
    // A token may be 4,096 characters (Zulip's limit), more than a key of the embedded store holds: the
    // row is keyed by its digest (the record keeps the token).
    row: (realm: number, userId: number, kind: number, token: string) => ({ pk: String(realm), ck: `${userId}:${kind}:${createHash('sha256').update(token).digest('hex')}` }),
  }),
  /** Client devices and their E2EE push registrations (`actors/realm/actions/notifications/push_e2ee.ts`): one partition per realm. */
  clientDevices: defineTable({
    name: 'client_devices',
    ck: 'text',
    codec: ClientDevice,
    pk: (realm: number) => String(realm),
    row: (realm: number, userId: number, deviceId: number) => ({ pk: String(realm), ck: `${userId}:${deviceId}` }),
  }),
  /** Push notifications not removed yet (`actors/realm/actions/notifications/push.ts`): one partition per realm. */
  activePushes: defineTable({
    name: 'active_pushes',
    ck: 'text',
    codec: ActivePush,
    pk: (realm: number) => String(realm),
    row: (realm: number, userId: number, messageId: number) => ({ pk: String(realm), ck: `${userId}:${messageId}` }),
  }),
  /** When each user was last seen active (hourly at most: `noteActivity`), for the digest's rule. One partition per realm. */
  userActivity: defineTable({
    name: 'user_activity',
    ck: 'bigint',
    codec: WhenRecord,
    pk: (realm: number) => String(realm),
    row: (realm: number, userId: number) => ({ pk: String(realm), ck: userId }),
  }),
  /** When each user's last digest was composed (`actors/realm/actions/notifications/digest.ts`). One partition per realm. */
  userDigests: defineTable({
    name: 'user_digests',
    ck: 'bigint',
    codec: WhenRecord,
    pk: (realm: number) => String(realm),
    row: (realm: number, userId: number) => ({ pk: String(realm), ck: userId }),
  }),
  /** The realm's armed digest timer, while one is. */
  digestRuns: defineTable({
    name: 'digest_runs',
    ck: 'text',
    codec: DigestRun,
    pk: (realm: number) => String(realm),
    row: (realm: number) => ({ pk: String(realm), ck: 'next' }),
  }),
  /** The realm's armed message retention timer (`actors/realm/actions/messages/retention.ts`), while one is. */
  retentionRuns: defineTable({
    name: 'retention_runs',
    ck: 'text',
    codec: WhenRecord,
    pk: (realm: number) => String(realm),
    row: (realm: number) => ({ pk: String(realm), ck: 'next' }),
  }),
  /** Digests composed and recorded, until SMTP took them: read by the sending timer, not loaded into the realm's state. */
  digestOutbox: defineTable({
    name: 'digest_outbox',
    ck: 'bigint',
    codec: DigestMail,
    pk: (realm: number) => String(realm),
    row: (realm: number, userId: number) => ({ pk: String(realm), ck: userId }),
  }),
  missedEmails: defineTable({
    name: 'missed_emails',
    ck: 'text',
    codec: MissedEmail,
    pk: (realm: number) => String(realm),
    row: (realm: number, userId: number, messageId: number) => ({ pk: String(realm), ck: `${userId}:${messageId}` }),
  }),
  timers: defineTable({
    name: 'timers',
    ck: 'text',
    codec: TimerRecord,
    pk: (shard: number, hour: number) => `${shard}:${hour}`,
    row: (shard: number, t: { at: number; kind: string; actor: string; name: string; ref: number }) => ({ pk: `${shard}:${timerHour(t.at)}`, ck: timerCk(t) }),
  }),
  timerCursors: defineTable({
    name: 'timer_cursors',
    ck: 'text',
    codec: TimerCursor,
    pk: (shard: number) => String(shard),
    row: (shard: number) => ({ pk: String(shard), ck: 'cursor' }),
  }),
  /**
   * A shard's memory-only state (its event queues) while it moves from one
   * owner to the next (`actors/runtime/handoff.ts`): ck -1 describes it,
   * 0.. are its JSON text in chunks; written by the leaving owner under the
   * scope `handoff:<shard>` with its token, deleted by the next one.
   */
  shardHandoffs: defineTable({
    name: 'shard_handoffs',
    ck: 'bigint',
    codec: HandoffRow,
    pk: (shard: number) => String(shard),
    row: (shard: number, index: number) => ({ pk: String(shard), ck: index }),
  }),
  /**
   * A realm's checkpoint (`actors/realm/state/checkpoint.ts`): ck 'head' names the
   * newest (the journal seq it holds, its generation and chunk count); ck
   * 'stale', when present, says rows were written beside the realm actor.
   */
  realmCheckpoints: defineTable({
    name: 'realm_checkpoints',
    ck: 'text',
    codec: RealmCheckpointHead,
    pk: (realm: number) => String(realm),
    row: (realm: number, which: 'head' | 'stale') => ({ pk: String(realm), ck: which }),
  }),
  /** A checkpoint's gzipped rows in base64 chunks, one partition per realm and generation. */
  realmCheckpointChunks: defineTable({
    name: 'realm_checkpoint_chunks',
    ck: 'bigint',
    codec: z.object({ data: z.string() }),
    pk: (realm: number, gen: string) => `${realm}:${gen}`,
    row: (realm: number, gen: string, index: number) => ({ pk: `${realm}:${gen}`, ck: index }),
  }),
  /** The realm's writes to the tables its state is built from since its checkpoint, one row per seq, in partitions of REALM_JOURNAL_BUCKET. */
  realmJournal: defineTable({
    name: 'realm_journal',
    ck: 'bigint',
    codec: RealmJournalRow,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, seq: number) => ({ pk: `${realm}:${Math.floor(seq / REALM_JOURNAL_BUCKET)}`, ck: seq }),
  }),
  realmSettings: defineTable({
    name: 'realm_settings',
    ck: 'text',
    codec: RealmSettings,
    pk: (realm: number) => String(realm),
    row: (realm: number) => ({ pk: String(realm), ck: 'settings' }),
  }),
  /** One partition per channel, one row per UTC day with messages (only the newest days are read). */
  channelTraffic: defineTable({
    name: 'channel_traffic',
    ck: 'bigint',
    codec: ChannelTraffic,
    pk: (realm: number, channelId: number) => `${realm}:${channelId}`,
    row: (realm: number, channelId: number, day: number) => ({ pk: `${realm}:${channelId}`, ck: day }),
  }),
  channelFolders: defineTable({
    name: 'channel_folders',
    ck: 'bigint',
    codec: ChannelFolderRecord,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, id: number) => ({ pk: `${realm}:${objectBucket(id)}`, ck: id }),
  }),
  linkifiers: defineTable({
    name: 'linkifiers',
    ck: 'bigint',
    codec: LinkifierRecord,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, id: number) => ({ pk: `${realm}:${objectBucket(id)}`, ck: id }),
  }),
  playgrounds: defineTable({
    name: 'realm_playgrounds',
    ck: 'bigint',
    codec: PlaygroundRecord,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, id: number) => ({ pk: `${realm}:${objectBucket(id)}`, ck: id }),
  }),
  invites: defineTable({
    name: 'invites',
    ck: 'bigint',
    codec: InviteRecord,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, id: number) => ({ pk: `${realm}:${objectBucket(id)}`, ck: id }),
  }),
  /** The organization's exports made through the API: one small partition per realm (Zulip keeps five a week at most). */
  realmExports: defineTable({
    name: 'realm_exports',
    ck: 'bigint',
    codec: RealmExportRecord,
    pk: (realm: number) => String(realm),
    row: (realm: number, id: number) => ({ pk: String(realm), ck: id }),
  }),
  /** The org's counters (folders, linkifiers, invitations, playgrounds, exports), apart from `allocators` so both can grow independently. */
  orgAllocators: defineTable({
    name: 'org_allocators',
    ck: 'text',
    codec: z.object({ folder: Id.default(1), linkifier: Id.default(1), invite: Id.default(1), playground: Id.default(1), channelGroup: Id.default(1), export: Id.default(1) }),
    pk: (realm: number) => String(realm),
    row: (realm: number) => ({ pk: String(realm), ck: 'ids' }),
  }),
  /** The deployment's organizations: one partition, as small as the number of organizations (the directory actor's). */
  organizations: defineTable({
    name: 'organizations',
    ck: 'bigint',
    codec: OrganizationRecord,
    pk: () => 'all',
    row: (realmId: number) => ({ pk: 'all', ck: realmId }),
  }),
  /** Accounts by address, server-wide (the directory actor's): Zulip's `other_account_count`. One partition per address. */
  accountAddresses: defineTable({
    name: 'account_addresses',
    ck: 'text',
    codec: AccountAddressRecord,
    pk: (address: string) => address,
    row: (address: string, realmId: number, userId: number) => ({ pk: address, ck: `${realmId}:${userId}` }),
  }),
  /** The address each account is indexed under (the directory actor's): what moves or removes its `account_addresses` row. */
  accountAddressOf: defineTable({
    name: 'account_address_of',
    ck: 'bigint',
    codec: z.object({ address: z.string() }),
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, userId: number) => ({ pk: `${realm}:${objectBucket(userId)}`, ck: userId }),
  }),
  /** The organizations whose accounts are all in the address index (the directory actor's; the rest are backfilled at its load). */
  accountIndexDone: defineTable({
    name: 'account_index_done',
    ck: 'bigint',
    codec: z.object({ at: Id }),
    pk: () => 'all',
    row: (realmId: number) => ({ pk: 'all', ck: realmId }),
  }),
  /** Unused and used organization-creation links, by the SHA-256 of their token (the directory actor's). */
  organizationLinks: defineTable({
    name: 'organization_links',
    ck: 'text',
    codec: OrganizationLinkRecord,
    pk: () => 'all',
    row: (tokenHash: string) => ({ pk: 'all', ck: tokenHash }),
  }),
  videoProviderTokens: defineTable({
    name: 'videoprovider_tokens',
    ck: 'bigint',
    codec: VideoProviderToken,
    pk: (realm: number, bucket: number) => `${realm}:${bucket}`,
    row: (realm: number, userId: number) => ({ pk: `${realm}:${objectBucket(userId)}`, ck: userId }),
  }),
};

/** Every physical table, for the stores to create. */
export const TABLE_SCHEMAS: readonly TableSchema[] = catalog.map((t) => t.schema);

/** Decodes a stored value of the table named `name` (for readers below the catalog, as the realm's image). */
export function decodeRow(name: string, pk: string, ck: Key, raw: unknown): unknown {
  return decode(name, tableByName(name).codec, pk, ck, raw);
}

let byName: Map<string, Table<unknown, never[], never[]>> | null = null;
function tableByName(name: string): Table<unknown, never[], never[]> {
  byName ??= new Map(catalog.map((t) => [t.schema.name, t]));
  const table = byName.get(name);
  if (!table) throw new Error(`unknown table ${name}`);
  return table;
}

/** The codecs of the tables named, as JSON Schema: what a fingerprint of their records' shape is taken from. */
export function codecShapes(names: Iterable<string>): string {
  return [...names]
    .sort()
    .map((name) => `${name}:${JSON.stringify(z.toJSONSchema(tableByName(name).codec, { unrepresentable: 'any', io: 'output' }))}`)
    .join('\n');
}

/** The schema of a table by name (stores check keys against it). */
export function tableSchema(name: string): TableSchema {
  const s = TABLE_SCHEMAS.find((x) => x.name === name);
  if (!s) throw new Error(`unknown table ${name}`);
  return s;
}
