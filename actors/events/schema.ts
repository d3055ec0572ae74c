/**
 * The strict schema of every event a client can receive, and of the objects
 * nested in them (users, channels, subscriptions, messages): extra keys are
 * rejected at every level (Zulip's `event_schema.py`). Actions build their
 * events typed by these schemas; in check mode (`PARLEY_CHECK=1`, the test
 * suites) every event is validated where it is made (`check.ts`).
 *
 * Adding an event kind: add its body to `EVENT_BODIES` below.
 */
import { z } from 'zod';
import { GroupSettingValue } from '../../storage/tables.ts';

const Id = z.number().int();
/** A group-setting value: a group's ID, or its direct members and subgroups (the stored form). */
const GroupSetting = GroupSettingValue;

/** A user object (`realm_users`, `GET /users`, `realm_user` events). */
export const UserObject = z
  .object({
    user_id: Id,
    delivery_email: z.string().nullable(),
    email: z.string(),
    full_name: z.string(),
    date_joined: z.string(),
    is_active: z.boolean(),
    is_owner: z.boolean(),
    is_admin: z.boolean(),
    is_guest: z.boolean(),
    is_bot: z.boolean(),
    bot_type: Id.nullable(),
    /** Bots only. */
    bot_owner_id: Id.nullable().optional(),
    /** Only present, and true, for system bots (Notification Bot, Welcome Bot: `cross_realm_bots`). */
    is_system_bot: z.boolean().optional(),
    role: z.union([z.literal(100), z.literal(200), z.literal(300), z.literal(400), z.literal(600)]),
    timezone: z.string(),
    avatar_url: z.string().nullable(),
    avatar_version: Id,
    is_imported_stub: z.boolean(),
    /** Only present, and true, for deleted users (FL 490). */
    is_deleted: z.literal(true).optional(),
    profile_data: z.record(z.string(), z.object({ value: z.string(), rendered_value: z.string().optional() }).strict()).optional(),
  })
  .strict();
export type UserObject = z.infer<typeof UserObject>;

const channelFields = {
  stream_id: Id,
  name: z.string(),
  description: z.string(),
  rendered_description: z.string(),
  date_created: Id,
  creator_id: Id.nullable(),
  invite_only: z.boolean(),
  is_web_public: z.boolean(),
  is_announcement_only: z.boolean(),
  stream_post_policy: z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)]),
  message_retention_days: Id.nullable(),
  history_public_to_subscribers: z.boolean(),
  first_message_id: Id.nullable(),
  folder_id: Id.nullable(),
  topics_policy: z.enum(['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only']),
  is_archived: z.boolean(),
  is_recently_active: z.boolean(),
  stream_weekly_traffic: Id.nullable(),
  /** Active users subscribed (FL 394). */
  subscriber_count: Id,
  can_add_subscribers_group: GroupSetting,
  can_remove_subscribers_group: GroupSetting,
  can_administer_channel_group: GroupSetting,
  can_delete_any_message_group: GroupSetting,
  can_delete_own_message_group: GroupSetting,
  can_send_message_group: GroupSetting,
  can_move_messages_out_of_channel_group: GroupSetting,
  can_move_messages_within_channel_group: GroupSetting,
  can_resolve_topics_group: GroupSetting,
  can_subscribe_group: GroupSetting,
  can_create_topic_group: GroupSetting,
};

/** A channel object (`streams`, `never_subscribed`, `stream` events). */
export const ChannelObject = z.object(channelFields).strict();
export type ChannelObject = z.infer<typeof ChannelObject>;

/** A channel with its subscriber list (`never_subscribed`). */
export const NeverSubscribedObject = z.object({ ...channelFields, subscribers: z.array(Id).optional(), partial_subscribers: z.array(Id).optional() }).strict();

/** A subscription object (`subscriptions`, `unsubscribed`, `subscription` add events). */
export const SubscriptionObject = z
  .object({
    ...channelFields,
    subscribers: z.array(Id).optional(),
    partial_subscribers: z.array(Id).optional(),
    desktop_notifications: z.boolean().nullable(),
    email_notifications: z.boolean().nullable(),
    wildcard_mentions_notify: z.boolean().nullable(),
    push_notifications: z.boolean().nullable(),
    audible_notifications: z.boolean().nullable(),
    pin_to_top: z.boolean(),
    is_muted: z.boolean(),
    in_home_view: z.boolean(),
    color: z.string(),
  })
  .strict();
export type SubscriptionObject = z.infer<typeof SubscriptionObject>;

const ReactionType = z.enum(['unicode_emoji', 'realm_emoji', 'service_extra_emoji']);

/** One reaction on a message. */
export const ReactionObject = z.object({ emoji_name: z.string(), emoji_code: z.string(), reaction_type: ReactionType, user_id: Id }).strict();

/** One entry of a message's `edit_history` (newest first). */
export const EditHistoryEntry = z
  .object({
    user_id: Id.nullable(),
    timestamp: Id,
    prev_content: z.string().optional(),
    prev_rendered_content: z.string().optional(),
    prev_topic: z.string().optional(),
    topic: z.string().optional(),
    prev_stream: Id.optional(),
    stream: Id.optional(),
  })
  .strict();
export type EditHistoryEntry = z.infer<typeof EditHistoryEntry>;

const DmRecipient = z.object({ id: Id, email: z.string(), full_name: z.string(), is_mirror_dummy: z.boolean() }).strict();

/** A message object (`GET /messages`, `message` events). */
export const MessageObject = z
  .object({
    id: Id,
    sender_id: Id,
    sender_email: z.string(),
    sender_full_name: z.string(),
    sender_realm_str: z.string(),
    avatar_url: z.string().nullable(),
    client: z.string(),
    content: z.string(),
    content_type: z.enum(['text/html', 'text/x-markdown']),
    subject: z.string(),
    topic_links: z.array(z.object({ text: z.string(), url: z.string() }).strict()),
    timestamp: Id,
    type: z.enum(['stream', 'private']),
    stream_id: Id.optional(),
    display_recipient: z.union([z.string(), z.array(DmRecipient)]),
    recipient_id: Id,
    reactions: z.array(ReactionObject),
    submessages: z.array(z.never()),
    is_me_message: z.boolean(),
    last_edit_timestamp: Id.optional(),
    last_moved_timestamp: Id.optional(),
    edit_history: z.array(EditHistoryEntry).optional(),
  })
  .strict();
export type MessageObject = z.infer<typeof MessageObject>;

/** A message with the reader's flags (`GET /messages`). */
export const FetchedMessage = MessageObject.extend({ flags: z.array(z.string()), match_content: z.string().optional(), match_subject: z.string().optional() }).strict();

/** A scheduled message object (`GET /scheduled_messages`, `scheduled_messages` events). */
export const ScheduledMessageObject = z
  .object({
    scheduled_message_id: Id,
    type: z.enum(['stream', 'private']),
    to: z.union([Id, z.array(Id)]),
    topic: z.string().optional(),
    content: z.string(),
    rendered_content: z.string(),
    scheduled_delivery_timestamp: Id,
    failed: z.boolean(),
  })
  .strict();
export type ScheduledMessageObject = z.infer<typeof ScheduledMessageObject>;

/** A reminder object (`GET /reminders`, `reminders` events; FL 381, 399). */
export const ReminderObject = z
  .object({
    reminder_id: Id,
    type: z.literal('private'),
    to: z.array(Id),
    content: z.string(),
    rendered_content: z.string(),
    scheduled_delivery_timestamp: Id,
    failed: z.boolean(),
    reminder_target_message_id: Id,
  })
  .strict();
export type ReminderObject = z.infer<typeof ReminderObject>;


// ---- channel administration, subscriptions, organization (issue 9) --------

const streamUpdate = <P extends string, V extends z.ZodTypeAny>(property: P, value: V, extra: z.ZodRawShape = {}) =>
  z.object({ type: z.literal('stream'), op: z.literal('update'), stream_id: Id, name: z.string(), property: z.literal(property), value, ...extra }).strict();

/** `stream` update events, one variant per property (extra keys as Zulip sends them). */
const STREAM_UPDATES = [
  streamUpdate('name', z.string()),
  streamUpdate('description', z.string(), { rendered_description: z.string() }),
  streamUpdate('invite_only', z.boolean(), { history_public_to_subscribers: z.boolean(), is_web_public: z.boolean() }),
  streamUpdate('message_retention_days', Id.nullable()),
  streamUpdate('topics_policy', z.enum(['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only'])),
  streamUpdate('folder_id', Id.nullable()),
  streamUpdate('first_message_id', Id.nullable()),
  streamUpdate('is_archived', z.boolean()),
  streamUpdate('stream_post_policy', z.union([z.literal(1), z.literal(2), z.literal(3), z.literal(4)])),
  streamUpdate('is_announcement_only', z.boolean()),
  ...(['can_add_subscribers_group', 'can_remove_subscribers_group', 'can_administer_channel_group', 'can_delete_any_message_group', 'can_delete_own_message_group', 'can_send_message_group', 'can_move_messages_out_of_channel_group', 'can_move_messages_within_channel_group', 'can_resolve_topics_group', 'can_subscribe_group', 'can_create_topic_group'] as const).map((k) => streamUpdate(k, GroupSetting)),
] as const;

const subscriptionUpdate = <P extends string, V extends z.ZodTypeAny>(property: P, value: V) =>
  z.object({ type: z.literal('subscription'), op: z.literal('update'), stream_id: Id, property: z.literal(property), value }).strict();

/** `subscription` update events, one variant per property. */
const SUBSCRIPTION_UPDATES = [
  subscriptionUpdate('color', z.string()),
  ...(['is_muted', 'in_home_view', 'pin_to_top', 'desktop_notifications', 'audible_notifications', 'push_notifications', 'email_notifications', 'wildcard_mentions_notify'] as const).map((k) => subscriptionUpdate(k, z.boolean())),
] as const;

/** A channel folder object (`channel_folders`, `channel_folder` events). */
export const ChannelFolderObject = z
  .object({ id: Id, name: z.string(), description: z.string(), rendered_description: z.string(), order: Id, creator_id: Id.nullable(), date_created: Id, is_archived: z.boolean() })
  .strict();
export type ChannelFolderObject = z.infer<typeof ChannelFolderObject>;

/** A linkifier object (`realm_linkifiers`, GET /realm/linkifiers). */
export const LinkifierObject = z
  .object({ id: Id, pattern: z.string(), url_template: z.string(), example_input: z.string().nullable(), reverse_template: z.string().nullable(), alternative_url_templates: z.array(z.string()) })
  .strict();
export type LinkifierObject = z.infer<typeof LinkifierObject>;

/** A code playground (`realm_playgrounds` at register and in its event). */
export const PlaygroundObject = z.object({ id: Id, name: z.string(), pygments_language: z.string(), url_template: z.string() }).strict();
export type PlaygroundObject = z.infer<typeof PlaygroundObject>;
/** An organization export (GET /export/realm and `realm_export` events). */
export const RealmExportObject = z
  .object({
    id: Id,
    export_time: z.number(),
    acting_user_id: Id,
    export_url: z.string().nullable(),
    deleted_timestamp: z.number().nullable(),
    failed_timestamp: z.number().nullable(),
    pending: z.boolean(),
    export_type: z.enum(['public', 'full_with_consent', 'full_without_consent']),
  })
  .strict();
export type RealmExportObject = z.infer<typeof RealmExportObject>;

/** A default channel group (`realm_default_stream_groups` at register and its event): its channels by ID. */
export const DefaultChannelGroupObject = z.object({ name: z.string(), id: Id, description: z.string(), streams: z.array(Id) }).strict();
export type DefaultChannelGroupObject = z.infer<typeof DefaultChannelGroupObject>;

/** One of the organization's email domains (`realm_domains` at register, GET /realm/domains and its events). */
export const RealmDomainObject = z.object({ domain: z.string(), allow_subdomains: z.boolean() }).strict();

/** A bot as its administrators see it (`realm_bots`, `realm_bot` add): since FL 474 what realm_users lacks. */
export const RealmBotObject = z
  .object({
    user_id: Id,
    default_sending_stream: z.string().nullable(),
    default_events_register_stream: z.string().nullable(),
    default_all_public_streams: z.boolean(),
    services: z.array(z.object({ base_url: z.string(), interface: Id, token: z.string() }).strict()),
  })
  .strict();
export type RealmBotObject = z.infer<typeof RealmBotObject>;

export const ORG_EVENT_BODIES = [
  z.object({ type: z.literal('realm_bot'), op: z.literal('add'), bot: RealmBotObject }).strict(),
  z
    .object({
      type: z.literal('realm_bot'),
      op: z.literal('update'),
      bot: z
        .object({ user_id: Id, services: RealmBotObject.shape.services })
        .strict(),
    })
    .strict(),
  z.object({ type: z.literal('realm_bot'), op: z.literal('delete'), bot: z.object({ user_id: Id }).strict() }).strict(),
  z.object({ type: z.literal('realm_linkifiers'), realm_linkifiers: z.array(LinkifierObject) }).strict(),
  z.object({ type: z.literal('realm_playgrounds'), realm_playgrounds: z.array(PlaygroundObject) }).strict(),
  z.object({ type: z.literal('realm_export'), exports: z.array(RealmExportObject) }).strict(),
  z.object({ type: z.literal('realm_export_consent'), user_id: Id, consented: z.boolean() }).strict(),
  z.object({ type: z.literal('realm_domains'), op: z.enum(['add', 'change']), realm_domain: RealmDomainObject }).strict(),
  z.object({ type: z.literal('realm_domains'), op: z.literal('remove'), domain: z.string() }).strict(),
  z.object({ type: z.literal('invites_changed') }).strict(),
  z.object({ type: z.literal('has_videoprovider_token'), value: z.boolean() }).strict(),
  z.object({ type: z.literal('channel_folder'), op: z.literal('add'), channel_folder: ChannelFolderObject }).strict(),
  z
    .object({
      type: z.literal('channel_folder'),
      op: z.literal('update'),
      channel_folder_id: Id,
      data: z.object({ name: z.string().optional(), description: z.string().optional(), rendered_description: z.string().optional(), is_archived: z.boolean().optional() }).strict(),
    })
    .strict(),
  z.object({ type: z.literal('channel_folder'), op: z.literal('reorder'), order: z.array(Id) }).strict(),
  ...STREAM_UPDATES,
  ...SUBSCRIPTION_UPDATES,
  z.object({ type: z.literal('stream'), op: z.literal('delete'), streams: z.array(ChannelObject), stream_ids: z.array(Id) }).strict(),
  z.object({ type: z.literal('subscription'), op: z.literal('remove'), subscriptions: z.array(z.object({ name: z.string(), stream_id: Id }).strict()) }).strict(),
  z.object({ type: z.literal('default_streams'), default_streams: z.array(Id) }).strict(),
  z.object({ type: z.literal('default_stream_groups'), default_stream_groups: z.array(DefaultChannelGroupObject) }).strict(),
  z
    .object({
      type: z.literal('realm'),
      op: z.literal('update'),
      property: z.enum([
        'name',
        'description',
        'message_retention_days',
        'topics_policy',
        'enable_spectator_access',
        'invite_required',
        'emails_restricted_to_domains',
        'disallow_disposable_email_addresses',
        'waiting_period_threshold',
        'default_language',
        'allow_message_editing',
        'message_content_edit_limit_seconds',
        'message_content_delete_limit_seconds',
        'enable_read_receipts',
        'message_content_allowed_in_email_notifications',
        'digest_emails_enabled',
        'digest_weekday',
        'send_welcome_emails',
        'mandatory_topics',
        'welcome_message_custom_text',
        'new_stream_announcements_stream_id',
        'video_chat_provider',
        'move_messages_within_stream_limit_seconds',
        'move_messages_between_streams_limit_seconds',
        'enable_guest_user_indicator',
        'enable_guest_user_dm_warning',
        'send_channel_events_messages',
        'moderation_request_channel_id',
        'zulip_update_announcements_stream_id',
        'default_code_block_language',
        'gif_rating_policy',
        'default_avatar_source',
        'media_preview_size',
        'org_type',
        'want_advertise_in_communities_directory',
        'signup_announcements_stream_id',
        'require_unique_names',
        'require_e2ee_push_notifications',
        'jitsi_server_url',
        'message_edit_history_visibility_policy',
      ]),
      value: z.union([z.string(), Id, z.boolean(), z.null()]),
    })
    .strict(),
  // The description (FL 464), rendered as register's realm_description.
  z.object({ type: z.literal('realm'), op: z.literal('update_dict'), property: z.literal('default'), data: z.object({ description: z.string() }).strict() }).strict(),
  z.object({ type: z.literal('realm'), op: z.literal('update_dict'), property: z.literal('default'), data: z.record(z.string().regex(/^(can_[a-z_]+_group|can_create_groups|can_manage_all_groups|create_multiuse_invite_group|direct_message_(initiator|permission)_group|workplace_users_group)$/), GroupSetting) }).strict(),
  /** The organization was deactivated: clients log out (Zulip's do_deactivate_realm). */
  z.object({ type: z.literal('realm'), op: z.literal('deactivated'), realm_id: Id }).strict(),
] as const;
/** A user group object (`realm_user_groups`, `GET /user_groups`, `user_group` add events). */
export const UserGroupObject = z
  .object({
    id: Id,
    name: z.string(),
    description: z.string(),
    rendered_description: z.string(),
    members: z.array(Id),
    direct_subgroup_ids: z.array(Id),
    creator_id: Id.nullable(),
    date_created: Id.nullable(),
    is_system_group: z.boolean(),
    deactivated: z.boolean(),
    can_add_members_group: GroupSetting,
    can_join_group: GroupSetting,
    can_leave_group: GroupSetting,
    can_manage_group: GroupSetting,
    can_mention_group: GroupSetting,
    can_remove_members_group: GroupSetting,
  })
  .strict();
export type UserGroupObject = z.infer<typeof UserGroupObject>;

/** What a `user_group` update event may change. */
const UserGroupData = z
  .object({
    name: z.string(),
    description: z.string(),
    rendered_description: z.string(),
    deactivated: z.boolean(),
    can_add_members_group: GroupSetting,
    can_join_group: GroupSetting,
    can_leave_group: GroupSetting,
    can_manage_group: GroupSetting,
    can_mention_group: GroupSetting,
    can_remove_members_group: GroupSetting,
  })
  .partial()
  .strict();

/** A custom profile field object (`custom_profile_fields`). */
export const ProfileFieldObject = z
  .object({
    id: Id,
    name: z.string(),
    hint: z.string(),
    type: Id,
    field_data: z.string(),
    order: Id,
    display_in_profile_summary: z.boolean().optional(),
    required: z.boolean(),
    editable_by_user: z.boolean(),
    use_for_user_matching: z.literal(true).optional(),
  })
  .strict();
export type ProfileFieldObject = z.infer<typeof ProfileFieldObject>;

const SettingValue = z.union([z.string(), z.number(), z.boolean()]);

/** The `person` of a `realm_user` update: the user's ID and one changed property. */
const PersonUpdate = z.union([
  z.object({ user_id: Id, full_name: z.string() }).strict(),
  z.object({ user_id: Id, role: UserObject.shape.role }).strict(),
  z.object({ user_id: Id, bot_owner_id: Id }).strict(),
  z.object({ user_id: Id, is_active: z.boolean() }).strict(),
  z.object({ user_id: Id, email: z.string(), timezone: z.string() }).strict(),
  z.object({ user_id: Id, delivery_email: z.string().nullable() }).strict(),
  z.object({ user_id: Id, new_email: z.string() }).strict(),
  z.object({ user_id: Id, avatar_url: z.string().nullable(), avatar_source: z.string(), avatar_url_medium: z.string(), avatar_version: Id }).strict(),
  z.object({ user_id: Id, date_joined: z.string() }).strict(),
  z.object({ user_id: Id, custom_profile_field: z.object({ id: Id, value: z.string().nullable(), rendered_value: z.string().optional() }).strict() }).strict(),
]);

/** What a client needs to count a message marked unread again (`message_details` of update_message_flags). */
const UnreadMessageDetails = z.union([
  z.object({ type: z.literal('stream'), stream_id: Id, topic: z.string(), unmuted_stream_msg: z.boolean(), mentioned: z.literal(true).optional() }).strict(),
  z.object({ type: z.literal('private'), user_ids: z.array(Id), mentioned: z.literal(true).optional() }).strict(),
]);

/** A draft (`drafts` register key and events). */
export const DraftObject = z.object({ id: Id, type: z.enum(['', 'stream', 'private']), to: z.array(Id), topic: z.string(), content: z.string(), timestamp: Id }).strict();
/** A saved snippet (FL 297). */
export const SavedSnippetObject = z.object({ id: Id, title: z.string(), content: z.string(), date_created: Id }).strict();
export type DraftObject = z.infer<typeof DraftObject>;
/** An onboarding step a user has not seen (`onboarding_steps` register key and events; one-time notices since FL 259). */
export const OnboardingStep = z.object({ type: z.literal('one_time_notice'), name: z.string() }).strict();
/** An uploaded file as GET /attachments and `attachment` events give it (Zulip's `Attachment.to_dict`); times in seconds (FL 443). */
export const AttachmentObject = z.object({ id: Id, name: z.string(), path_id: z.string(), size: Id, create_time: Id, message_ids: z.array(Id) }).strict();
export type AttachmentObject = z.infer<typeof AttachmentObject>;
export type SavedSnippetObject = z.infer<typeof SavedSnippetObject>;
/** A navigation view (FL 390): a built-in view's settings (`name` null) or a custom view. */
export const NavigationViewObject = z.object({ fragment: z.string(), is_pinned: z.boolean(), name: z.string().nullable() }).strict();
export type NavigationViewObject = z.infer<typeof NavigationViewObject>;

/** A custom emoji (`realm_emoji` register key and events). */
export const RealmEmojiObject = z.object({ id: z.string(), name: z.string(), source_url: z.string(), still_url: z.string().nullable(), deactivated: z.boolean(), author_id: Id.nullable() }).strict();
export type RealmEmojiObject = z.infer<typeof RealmEmojiObject>;

const TypingPerson = z.object({ user_id: Id, email: z.string() }).strict();
const LegacyClientPresence = z.object({ client: z.string(), status: z.enum(['active', 'idle']), timestamp: Id, pushable: z.boolean() }).strict();

/** Every event body a client can receive (an event without its queue `id`). */
const EVENT_BODIES = [
  z.object({ type: z.literal('heartbeat') }).strict(),
  /** A queue now served by another release (`lib/version.ts`): FL 59 fields, no `immediate` since FL 240. */
  z.object({ type: z.literal('restart'), zulip_version: z.string(), zulip_merge_base: z.string(), zulip_feature_level: Id, server_generation: Id }).strict(),
  /** The operator asks web clients to reload their code (`parley reload-clients`, FL 240). */
  z.object({ type: z.literal('web_reload_client'), immediate: z.boolean() }).strict(),
  z.object({ type: z.literal('message'), message: MessageObject, flags: z.array(z.string()), local_message_id: z.string().optional() }).strict(),
  z.object({ type: z.literal('subscription'), op: z.literal('add'), subscriptions: z.array(SubscriptionObject) }).strict(),
  z.object({ type: z.literal('subscription'), op: z.enum(['peer_add', 'peer_remove']), stream_ids: z.array(Id), user_ids: z.array(Id) }).strict(),
  z.object({ type: z.literal('stream'), op: z.literal('create'), streams: z.array(ChannelObject) }).strict(),
  z.object({ type: z.literal('stream'), op: z.literal('delete'), stream_ids: z.array(Id) }).strict(),
  z.object({ type: z.literal('realm_user'), op: z.literal('add'), person: UserObject }).strict(),
  z.object({ type: z.literal('realm_user'), op: z.literal('update'), person: PersonUpdate }).strict(),
  z.object({ type: z.literal('realm_user'), op: z.literal('remove'), person: z.object({ user_id: Id, full_name: z.string() }).strict() }).strict(),
  z.object({ type: z.literal('user_settings'), op: z.literal('update'), property: z.string(), value: SettingValue, language_name: z.string().optional() }).strict(),
  z.object({ type: z.literal('realm_user_settings_defaults'), op: z.literal('update'), property: z.string(), value: SettingValue }).strict(),
  // Legacy forms of user_settings, for clients without user_settings_object.
  z.object({ type: z.literal('update_display_settings'), user: z.string(), setting_name: z.string(), setting: SettingValue, language_name: z.string().optional() }).strict(),
  z.object({ type: z.literal('update_global_notifications'), user: z.string(), notification_name: z.string(), setting: SettingValue }).strict(),
  z
    .object({
      type: z.literal('user_status'),
      user_id: Id,
      away: z.boolean().optional(),
      status_text: z.string().optional(),
      emoji_name: z.string().optional(),
      emoji_code: z.string().optional(),
      reaction_type: z.string().optional(),
    })
    .strict(),
  z.object({ type: z.literal('user_group'), op: z.literal('add'), group: UserGroupObject }).strict(),
  z.object({ type: z.literal('user_group'), op: z.literal('update'), group_id: Id, data: UserGroupData }).strict(),
  z.object({ type: z.literal('user_group'), op: z.enum(['add_members', 'remove_members']), group_id: Id, user_ids: z.array(Id) }).strict(),
  z.object({ type: z.literal('user_group'), op: z.enum(['add_subgroups', 'remove_subgroups']), group_id: Id, direct_subgroup_ids: z.array(Id) }).strict(),
  z.object({ type: z.literal('user_group'), op: z.literal('remove'), group_id: Id }).strict(),
  z.object({ type: z.literal('custom_profile_fields'), fields: z.array(ProfileFieldObject) }).strict(),
  z.object({ type: z.literal('scheduled_messages'), op: z.literal('add'), scheduled_messages: z.array(ScheduledMessageObject) }).strict(),
  z.object({ type: z.literal('scheduled_messages'), op: z.literal('update'), scheduled_message: ScheduledMessageObject }).strict(),
  z.object({ type: z.literal('scheduled_messages'), op: z.literal('remove'), scheduled_message_id: Id }).strict(),
  z.object({ type: z.literal('reminders'), op: z.literal('add'), reminders: z.array(ReminderObject) }).strict(),
  z.object({ type: z.literal('reminders'), op: z.literal('remove'), reminder_id: Id }).strict(),
  ...ORG_EVENT_BODIES,
  z
    .object({
      type: z.literal('typing'),
      op: z.enum(['start', 'stop']),
      message_type: z.enum(['direct', 'private', 'stream']),
      sender: TypingPerson,
      recipients: z.array(TypingPerson).optional(),
      stream_id: Id.optional(),
      topic: z.string().optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('typing_edit_message'),
      op: z.enum(['start', 'stop']),
      sender_id: Id,
      message_id: Id,
      recipient: z.discriminatedUnion('type', [
        z.object({ type: z.literal('channel'), channel_id: Id, topic: z.string() }).strict(),
        z.object({ type: z.literal('direct'), user_ids: z.array(Id) }).strict(),
      ]),
    })
    .strict(),
  z.object({ type: z.literal('presence'), user_id: Id, email: z.string(), server_timestamp: Id, presence: z.record(z.string(), LegacyClientPresence) }).strict(),
  z.object({ type: z.literal('presence'), presences: z.record(z.string(), z.object({ active_timestamp: Id, idle_timestamp: Id }).strict()) }).strict(),
  z.object({ type: z.literal('realm_emoji'), op: z.literal('update'), realm_emoji: z.record(z.string(), RealmEmojiObject) }).strict(),
  z.object({ type: z.literal('realm_emoji'), op: z.literal('add'), emoji: RealmEmojiObject }).strict(),
  z.object({ type: z.literal('realm_emoji'), op: z.literal('edit'), emoji_id: z.string(), data: z.object({ deactivated: z.boolean() }).strict() }).strict(),
  z.object({ type: z.literal('muted_users'), muted_users: z.array(z.object({ id: Id, timestamp: Id }).strict()) }).strict(),
  z.object({ type: z.literal('alert_words'), alert_words: z.array(z.string()) }).strict(),
  z.object({ type: z.literal('onboarding_steps'), onboarding_steps: z.array(OnboardingStep) }).strict(),
  z.object({ type: z.literal('attachment'), op: z.enum(['add', 'update']), attachment: AttachmentObject, upload_space_used: Id }).strict(),
  z.object({ type: z.literal('attachment'), op: z.literal('remove'), attachment: z.object({ id: Id }).strict(), upload_space_used: Id }).strict(),
  z.object({ type: z.literal('drafts'), op: z.literal('add'), drafts: z.array(DraftObject) }).strict(),
  z.object({ type: z.literal('drafts'), op: z.literal('update'), draft: DraftObject }).strict(),
  z.object({ type: z.literal('drafts'), op: z.literal('remove'), draft_id: Id }).strict(),
  z.object({ type: z.literal('saved_snippets'), op: z.enum(['add', 'update']), saved_snippet: SavedSnippetObject }).strict(),
  z.object({ type: z.literal('saved_snippets'), op: z.literal('remove'), saved_snippet_id: Id }).strict(),
  z.object({ type: z.literal('navigation_view'), op: z.literal('add'), navigation_view: NavigationViewObject }).strict(),
  z.object({ type: z.literal('navigation_view'), op: z.literal('update'), fragment: z.string(), data: z.object({ name: z.string().optional(), is_pinned: z.boolean().optional() }).strict() }).strict(),
  z.object({ type: z.literal('navigation_view'), op: z.literal('remove'), fragment: z.string() }).strict(),
  z.object({ type: z.literal('device'), op: z.enum(['add', 'remove']), device_id: Id }).strict(),
  z
    .object({
      type: z.literal('device'),
      op: z.literal('update'),
      device_id: Id,
      push_key_id: Id.nullable().optional(),
      push_token_id: z.string().nullable().optional(),
      pending_push_token_id: z.string().nullable().optional(),
      push_token_last_updated_timestamp: Id.nullable().optional(),
      push_registration_error_code: z.string().nullable().optional(),
    })
    .strict(),
  z.object({ type: z.literal('user_topic'), stream_id: Id, topic_name: z.string(), last_updated: Id, visibility_policy: z.union([z.literal(0), z.literal(1), z.literal(2), z.literal(3)]) }).strict(),
  z.object({ type: z.literal('muted_topics'), muted_topics: z.array(z.tuple([z.string(), z.string(), Id])) }).strict(),
  z
    .object({
      type: z.literal('reaction'),
      op: z.enum(['add', 'remove']),
      message_id: Id,
      user_id: Id,
      /**
       * Deprecated: the reacting user. Zulip 12 removed it (FL 484); it is kept here because zulip-terminal's
       * current release reads it and crashes without it.
       */
      user: z.object({ user_id: Id, email: z.string(), full_name: z.string() }).strict(),
      emoji_name: z.string(),
      emoji_code: z.string(),
      reaction_type: ReactionType,
    })
    .strict(),
  z
    .object({
      type: z.literal('delete_message'),
      message_type: z.enum(['stream', 'private']),
      message_ids: z.array(Id).optional(),
      /** For clients without the bulk_message_deletion capability: one event per message. */
      message_id: Id.optional(),
      stream_id: Id.optional(),
      topic: z.string().optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('update_message'),
      user_id: Id.nullable(),
      rendering_only: z.boolean(),
      message_id: Id,
      message_ids: z.array(Id),
      flags: z.array(z.string()),
      edit_timestamp: Id,
      stream_name: z.string().optional(),
      stream_id: Id.optional(),
      new_stream_id: Id.optional(),
      propagate_mode: z.enum(['change_one', 'change_later', 'change_all']).optional(),
      orig_subject: z.string().optional(),
      subject: z.string().optional(),
      topic_links: z.array(z.object({ text: z.string(), url: z.string() }).strict()).optional(),
      orig_content: z.string().optional(),
      orig_rendered_content: z.string().optional(),
      content: z.string().optional(),
      rendered_content: z.string().optional(),
      is_me_message: z.boolean().optional(),
    })
    .strict(),
  z
    .object({
      type: z.literal('update_message_flags'),
      op: z.enum(['add', 'remove']),
      /** Deprecated duplicate of `op`, still sent by Zulip. */
      operation: z.enum(['add', 'remove']),
      flag: z.string(),
      messages: z.array(Id),
      all: z.boolean(),
      message_details: z.record(z.string(), UnreadMessageDetails).optional(),
    })
    .strict(),
] as const;

export const ClientEventBody = z.union(EVENT_BODIES);
export type ClientEventBody = z.infer<typeof ClientEventBody>;

/** Every event a client can receive from GET /events. */
export const ClientEvent = z.union(EVENT_BODIES.map((b) => b.extend({ id: Id }).strict()) as unknown as [z.ZodTypeAny, z.ZodTypeAny, ...z.ZodTypeAny[]]);
export type ClientEvent = ClientEventBody & { id: number };
