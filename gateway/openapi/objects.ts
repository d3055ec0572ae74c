/**
 * Objects that replies carry and events do not (the events' objects are in
 * `actors/events/schema.ts` and reused from there), and the register
 * snapshot. Strict like the event schemas: extra keys are rejected at every
 * level.
 */
import { z } from 'zod';
import { REALM_GROUP_SETTINGS } from '../../actors/realm/actions/organization/realm_settings.ts';
import { DEFAULTS_SETTING_NAMES, LEGACY_DISPLAY_SETTINGS, LEGACY_NOTIFICATION_SETTINGS, SETTING_NAMES, USER_SETTINGS } from '../../actors/user/settings.ts';
import {
  ChannelFolderObject,
  ChannelObject,
  DraftObject,
  LinkifierObject,
  OnboardingStep,
  PlaygroundObject,
  DefaultChannelGroupObject,
  RealmDomainObject,
  NeverSubscribedObject,
  ProfileFieldObject,
  RealmBotObject,
  NavigationViewObject,
  RealmEmojiObject,
  SavedSnippetObject,
  ReminderObject,
  ScheduledMessageObject,
  SubscriptionObject,
  UserGroupObject,
  UserObject,
} from '../../actors/events/schema.ts';
import { GroupSettingValue } from '../../storage/tables.ts';
import { Id } from './envelope.ts';


/** A user's status (`GET /users/{user_id}/status`, `user_status` of register): only what is set. */
export const StatusObject = z
  .object({
    away: z.literal(true).optional(),
    status_text: z.string().optional(),
    emoji_name: z.string().optional(),
    emoji_code: z.string().optional(),
    reaction_type: z.enum(['unicode_emoji', 'realm_emoji', 'service_extra_emoji']).optional(),
  })
  .strict();

/** One client's presence in Zulip's legacy form. */
const LegacyClientPresence = z.object({ client: z.string(), status: z.enum(['active', 'idle']), timestamp: Id, pushable: z.boolean() }).strict();
/** A user's presence in the legacy form: the aggregate and the one client Parley reports ("website"). */
export const LegacyPresence = z
  .object({ aggregated: z.object({ client: z.string(), status: z.enum(['active', 'idle']), timestamp: Id }).strict(), website: LegacyClientPresence })
  .strict();
/** A user's presence in the modern form (slim_presence, by user ID). */
export const ModernPresence = z.object({ active_timestamp: Id, idle_timestamp: Id }).strict();
/** Everyone's presence: by email (legacy) or by user ID (slim_presence). */
export const Presences = z.union([z.record(z.string(), LegacyPresence), z.record(z.string(), ModernPresence)]);

/** An invitation (`GET /invites`). */
export const InviteObject = z
  .object({
    id: Id,
    invited_by_user_id: Id,
    /** When it was made, in UTC seconds. */
    invited: Id,
    expiry_date: Id.nullable(),
    invited_as: Id,
    /** Email invitations only. */
    email: z.string().optional(),
    notify_referrer_on_join: z.boolean(),
    is_multiuse: z.boolean(),
    /** Reusable links only. */
    link_url: z.string().optional(),
  })
  .strict();

/** One state of a message in its history (`GET /messages/{message_id}/history`), oldest first. */
export const MessageHistoryEntry = z
  .object({
    topic: z.string(),
    content: z.string(),
    rendered_content: z.string(),
    timestamp: Id,
    user_id: Id.nullable(),
    prev_content: z.string().optional(),
    prev_rendered_content: z.string().optional(),
    content_html_diff: z.string().optional(),
    prev_topic: z.string().optional(),
    prev_stream: Id.optional(),
    stream: Id.optional(),
  })
  .strict();

const settingSchema = (name: string) => {
  const t = USER_SETTINGS[name]!.type;
  return t === 'bool' ? z.boolean() : t === 'int' ? Id : z.string();
};
const EmojisetChoices = z.array(z.object({ key: z.string(), text: z.string() }).strict());
/** The choices register adds to both settings objects (Zulip's `emojiset_choices`, `available_notification_sounds`). */
const SettingChoices = { emojiset_choices: EmojisetChoices, available_notification_sounds: z.array(z.string()) };
/** Every personal setting with its value (`user_settings` of register). */
export const UserSettingsObject = z.object({ ...Object.fromEntries(SETTING_NAMES.map((k) => [k, settingSchema(k)])), ...SettingChoices }).strict();
/** The organization's defaults for new users (`realm_user_settings_defaults`). */
export const UserSettingsDefaultsObject = z.object({ ...Object.fromEntries(DEFAULTS_SETTING_NAMES.map((k) => [k, settingSchema(k)])), ...SettingChoices }).strict();

const UnreadIds = z.array(Id);
/** The register's `unread_msgs`. */
const UnreadMessages = z
  .object({
    count: Id,
    pms: z.array(z.object({ other_user_id: Id, sender_id: Id, unread_message_ids: UnreadIds }).strict()),
    streams: z.array(z.object({ stream_id: Id, topic: z.string(), unread_message_ids: UnreadIds }).strict()),
    huddles: z.array(z.object({ user_ids_string: z.string(), unread_message_ids: UnreadIds }).strict()),
    mentions: UnreadIds,
    old_unreads_missing: z.boolean(),
  })
  .strict();

/**
 * The register response beside the envelope. Every snapshot key is optional:
 * which ones come depends on `fetch_event_types` (all of them without it).
 * Strict like the rest: a key added to the snapshot is added here too.
 */
/** How a group-setting permission may be set (`server_supported_permission_settings`). */
const PermissionSettings = z.record(
  z.string(),
  z
    .object({
      require_system_group: z.boolean(),
      allow_internet_group: z.boolean(),
      allow_nobody_group: z.boolean(),
      allow_everyone_group: z.boolean(),
      default_group_name: z.string(),
      default_for_system_groups: z.string().nullable(),
      allowed_system_groups: z.array(z.string()),
    })
    .strict(),
);

export const RegisterFields = {
  queue_id: z.string(),
  last_event_id: Id,
  idle_queue_timeout_secs: Id,
  service_feature_level: Id,
  zulip_feature_level: Id,
  service_version: z.string(),
  zulip_version: z.string(),
  service_merge_base: z.string(),
  zulip_merge_base: z.string(),
  event_queue_longpoll_timeout_seconds: Id,
  // Limits and names, always present.
  max_message_length: Id,
  max_topic_length: Id,
  max_stream_name_length: Id,
  max_stream_description_length: Id,
  max_channel_folder_name_length: Id,
  max_channel_folder_description_length: Id,
  max_bulk_new_subscription_messages: Id,
  max_reminder_note_length: Id,
  realm_empty_topic_display_name: z.string(),
  realm_topics_policy: z.enum(['allow_empty_topic', 'disable_empty_topic']),
  max_file_upload_size_mib: Id,
  // realm
  realm_name: z.string().optional(),
  realm_description: z.string().optional(),
  realm_uri: z.string().optional(),
  realm_url: z.string().optional(),
  realm_uuid: z.string().uuid().optional(),
  realm_date_created: Id.optional(),
  demo_organization_scheduled_deletion_date: Id.optional(),
  realm_message_retention_days: Id.nullable().optional(),
  realm_default_language: z.string().optional(),
  realm_message_content_edit_limit_seconds: Id.nullable().optional(),
  realm_message_content_delete_limit_seconds: Id.nullable().optional(),
  realm_enable_spectator_access: z.boolean().optional(),
  realm_invite_required: z.boolean().optional(),
  realm_emails_restricted_to_domains: z.boolean().optional(),
  realm_waiting_period_threshold: Id.optional(),
  realm_allow_message_editing: z.boolean().optional(),
  realm_enable_read_receipts: z.boolean().optional(),
  realm_message_content_allowed_in_email_notifications: z.boolean().optional(),
  realm_mandatory_topics: z.boolean().optional(),
  realm_web_public_access_enabled: z.boolean().optional(),
  realm_presence_disabled: z.boolean().optional(),
  realm_icon_url: z.string().optional(),
  realm_icon_source: z.string().optional(),
  realm_plan_type: Id.optional(),
  ...Object.fromEntries(Object.keys(REALM_GROUP_SETTINGS).map((k) => [`realm_${k}`, GroupSettingValue.optional()])),
  // realm: what no API changes yet, and what the server does (actors/realm/actions/organization/snapshot.ts serverSnapshot).
  realm_org_type: Id.optional(),
  realm_video_chat_provider: Id.optional(),
  realm_available_video_chat_providers: z.record(z.string(), z.object({ name: z.string(), id: Id }).strict()).optional(),
  // Legacy policy values derived from the group settings, for older clients.
  realm_create_public_stream_policy: Id.optional(),
  realm_create_private_stream_policy: Id.optional(),
  realm_create_web_public_stream_policy: Id.optional(),
  realm_wildcard_mention_policy: Id.optional(),
  realm_authentication_methods: z.record(z.string(), z.object({ enabled: z.boolean(), available: z.boolean(), unavailable_reason: z.string().optional() }).strict()).optional(),
  realm_email_auth_enabled: z.boolean().optional(),
  realm_password_auth_enabled: z.boolean().optional(),
  realm_avatar_changes_disabled: z.boolean().optional(),
  realm_name_changes_disabled: z.boolean().optional(),
  realm_email_changes_disabled: z.boolean().optional(),
  realm_push_notifications_enabled: z.boolean().optional(),
  realm_push_notifications_enabled_end_timestamp: Id.nullable().optional(),
  realm_require_e2ee_push_notifications: z.boolean().optional(),
  realm_digest_emails_enabled: z.boolean().optional(),
  realm_digest_weekday: Id.optional(),
  realm_send_welcome_emails: z.boolean().optional(),
  realm_welcome_message_custom_text: z.string().optional(),
  realm_send_channel_events_messages: z.boolean().optional(),
  realm_inline_image_preview: z.boolean().optional(),
  realm_inline_url_embed_preview: z.boolean().optional(),
  realm_default_code_block_language: z.string().optional(),
  realm_disallow_disposable_email_addresses: z.boolean().optional(),
  realm_require_unique_names: z.boolean().optional(),
  realm_enable_guest_user_indicator: z.boolean().optional(),
  realm_enable_guest_user_dm_warning: z.boolean().optional(),
  realm_want_advertise_in_communities_directory: z.boolean().optional(),
  realm_allow_edit_history: z.boolean().optional(),
  realm_message_edit_history_visibility_policy: z.enum(['all', 'moves', 'none']).optional(),
  realm_upload_quota_mib: Id.nullable().optional(),
  realm_moderation_request_channel_id: z.number().int().optional(),
  realm_new_stream_announcements_stream_id: z.number().int().optional(),
  realm_signup_announcements_stream_id: z.number().int().optional(),
  realm_zulip_update_announcements_stream_id: z.number().int().optional(),
  realm_move_messages_within_stream_limit_seconds: Id.nullable().optional(),
  realm_move_messages_between_streams_limit_seconds: Id.nullable().optional(),
  realm_default_external_accounts: z.record(z.string(), z.object({ text: z.string(), url_pattern: z.string(), name: z.string(), hint: z.string() }).strict()).optional(),
  realm_jitsi_server_url: z.string().nullable().optional(),
  server_jitsi_server_url: z.string().nullable().optional(),
  jitsi_server_url: z.string().nullable().optional(),
  settings_send_digest_emails: z.boolean().optional(),
  development_environment: z.boolean().optional(),
  zulip_plan_is_not_limited: z.boolean().optional(),
  password_min_length: Id.optional(),
  password_max_length: Id.optional(),
  password_min_guesses: Id.optional(),
  server_inline_image_preview: z.boolean().optional(),
  server_inline_url_embed_preview: z.boolean().optional(),
  realm_owner_full_content_access: z.boolean().optional(),
  server_report_message_types: z.array(z.object({ key: z.string(), name: z.string() }).strict()).optional(),
  server_thumbnail_formats: z.array(z.object({ name: z.string(), max_width: Id, max_height: Id, format: z.string(), animated: z.boolean() }).strict()).optional(),
  server_avatar_changes_disabled: z.boolean().optional(),
  server_name_changes_disabled: z.boolean().optional(),
  server_web_public_streams_enabled: z.boolean().optional(),
  server_needs_upgrade: z.boolean().optional(),
  server_generation: Id.optional(),
  max_avatar_file_size_mib: Id.optional(),
  max_icon_file_size_mib: Id.optional(),
  max_logo_file_size_mib: Id.optional(),
  server_emoji_data_url: z.string().optional(),
  server_can_summarize_topics: z.boolean().optional(),
  server_min_deactivated_realm_deletion_days: Id.nullable().optional(),
  server_max_deactivated_realm_deletion_days: Id.nullable().optional(),
  server_presence_ping_interval_seconds: Id.optional(),
  server_presence_offline_threshold_seconds: Id.optional(),
  server_typing_started_expiry_period_milliseconds: Id.optional(),
  server_typing_stopped_wait_period_milliseconds: Id.optional(),
  server_typing_started_wait_period_milliseconds: Id.optional(),
  server_supported_permission_settings: z.object({ realm: PermissionSettings, stream: PermissionSettings, group: PermissionSettings }).strict().optional(),
  // message
  max_message_id: Id.optional(),
  // realm_user
  user_id: Id.optional(),
  email: z.string().optional(),
  delivery_email: z.string().optional(),
  full_name: z.string().optional(),
  is_admin: z.boolean().optional(),
  is_owner: z.boolean().optional(),
  is_guest: z.boolean().optional(),
  is_moderator: z.boolean().optional(),
  role: UserObject.shape.role.optional(),
  can_create_users: z.boolean().optional(),
  avatar_source: z.string().optional(),
  avatar_url: z.string().nullable().optional(),
  avatar_url_medium: z.string().optional(),
  can_create_private_streams: z.boolean().optional(),
  can_create_public_streams: z.boolean().optional(),
  can_create_web_public_streams: z.boolean().optional(),
  can_create_streams: z.boolean().optional(),
  can_invite_others_to_realm: z.boolean().optional(),
  realm_users: z.array(UserObject).optional(),
  realm_non_active_users: z.array(UserObject).optional(),
  cross_realm_bots: z.array(UserObject).optional(),
  realm_bots: z.array(RealmBotObject).optional(),
  // subscription, stream, default_streams
  subscriptions: z.array(SubscriptionObject).optional(),
  unsubscribed: z.array(SubscriptionObject).optional(),
  never_subscribed: z.array(NeverSubscribedObject).optional(),
  streams: z.array(ChannelObject).optional(),
  realm_default_streams: z.array(Id).optional(),
  realm_user_groups: z.array(UserGroupObject).optional(),
  user_settings: UserSettingsObject.optional(),
  realm_user_settings_defaults: UserSettingsDefaultsObject.optional(),
  user_status: z.record(z.string(), StatusObject).optional(),
  recent_private_conversations: z.array(z.object({ max_message_id: Id, user_ids: z.array(Id) }).strict()).optional(),
  scheduled_messages: z.array(ScheduledMessageObject).optional(),
  channel_folders: z.array(ChannelFolderObject).optional(),
  user_topics: z.array(z.object({ stream_id: Id, topic_name: z.string(), last_updated: Id, visibility_policy: z.union([z.literal(0), z.literal(1), z.literal(2), z.literal(3)]) }).strict()).optional(),
  muted_topics: z.array(z.tuple([z.string(), z.string(), Id])).optional(),
  muted_users: z.array(z.object({ id: Id, timestamp: Id }).strict()).optional(),
  alert_words: z.array(z.string()).optional(),
  realm_emoji: z.record(z.string(), RealmEmojiObject).optional(),
  navigation_views: z.array(NavigationViewObject).optional(),
  realm_linkifiers: z.array(LinkifierObject).optional(),
  custom_profile_fields: z.array(ProfileFieldObject).optional(),
  custom_profile_field_types: z.record(z.string(), z.object({ id: Id, name: z.string() }).strict()).optional(),
  has_videoprovider_token: z.boolean().optional(),
  starred_messages: z.array(Id).optional(),
  drafts: z.array(DraftObject).optional(),
  saved_snippets: z.array(SavedSnippetObject).optional(),
  unread_msgs: UnreadMessages.optional(),
  // update_display_settings and update_global_notifications: the legacy top-level settings, for clients without user_settings_object.
  ...Object.fromEntries([...LEGACY_DISPLAY_SETTINGS, ...LEGACY_NOTIFICATION_SETTINGS, 'timezone'].map((k) => [k, settingSchema(k).optional()])),
  emojiset_choices: EmojisetChoices.optional(),
  available_notification_sounds: z.array(z.string()).optional(),
  // presence
  presences: Presences.optional(),
  server_timestamp: z.number().optional(),
  presence_last_update_id: Id.optional(),
  // What this server has none of: each key's empty value under its own event type.
  onboarding_steps: z.array(OnboardingStep).optional(),
  navigation_tour_video_url: z.null().optional(),
  reminders: z.array(ReminderObject).optional(),
  realm_domains: z.array(RealmDomainObject).optional(),
  realm_playgrounds: z.array(PlaygroundObject).optional(),
  realm_default_stream_groups: z.array(DefaultChannelGroupObject).optional(),
  realm_embedded_bots: z.array(z.never()).optional(),
  realm_incoming_webhook_bots: z.array(z.never()).optional(),
  realm_billing: z.object({ has_pending_sponsorship_request: z.boolean() }).strict().optional(),
  giphy_api_key: z.string().optional(),
  tenor_api_key: z.string().optional(),
  realm_gif_rating_policy: Id.optional(),
  realm_default_avatar_source: z.enum(['G', 'J']).optional(),
  realm_media_preview_size: z.union([z.literal(100), z.literal(150), z.literal(200)]).optional(),
  gif_rating_policy_options: z.record(z.string(), z.object({ name: z.string(), id: Id }).strict()).optional(),
  devices: z
    .record(
      z.string(),
      z
        .object({
          push_key_id: Id.nullable(),
          push_token_id: z.string().nullable(),
          pending_push_token_id: z.string().nullable(),
          push_token_last_updated_timestamp: Id.nullable(),
          push_registration_error_code: z.string().nullable(),
        })
        .strict(),
    )
    .optional(),
  stop_words: z.array(z.string()).optional(),
  realm_filters: z.array(z.never()).optional(),
} satisfies z.ZodRawShape;
