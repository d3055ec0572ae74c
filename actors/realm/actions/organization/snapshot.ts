/** The realm's part of the POST /register snapshot, filtered by fetch_event_types, and GET /server_settings. */
import { devicesOf } from '../notifications/push_e2ee.ts';
import { realmUrl } from '../../../../lib/hosts.ts';
import { z } from 'zod';
import { MAX_UPLOAD_MIB } from '../../../../storage/files.ts';
import { wants } from '../../../events/fetch.ts';
import { EMOJI_DATA_PATH } from '../../../../lib/emoji.ts';
import { SERVER_GENERATION } from '../../../../lib/version.ts';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../../../lib/secrets.ts';
import { OFFLINE_THRESHOLD_SECS, TYPING_EXPIRY_MS } from '../../../ephemeral/actor.ts';
import { realmIconUrl, userAvatarUrl } from '../../../format.ts';
import { GROUP_ID, isGuest, Role } from '../../../model.ts';
import { defineQuery } from '../../../runtime/action.ts';
import { actingUser, seesEveryone } from '../../rules/access.ts';
import { type CachedPart, encodedPart, withParts } from '../../state/register_parts.ts';
import { channelSnapshot } from '../channels/subscription_settings.ts';
import { realmGroupSetting, realmSnapshot } from './realm_settings.ts';
import { supportedPermissionSettings } from './permission_settings.ts';
import { MIN_DEACTIVATED_REALM_DELETION_DAYS } from './organization.ts';
import { moveLimit } from '../messages/message_edit.ts';
import { foldersOf } from '../channels/channel_folders.ts';
import { linkifiersOf } from './linkifiers.ts';
import { playgroundsOf } from './playgrounds.ts';
import { domainsOf } from './realm_domains.ts';
import { defaultChannelGroupsOf } from '../channels/default_channel_groups.ts';
import { renderDescription } from '../../rules/markdown.ts';
import { emptyTopicDisplayName, MAX_MESSAGE_LENGTH, MAX_TOPIC_LENGTH } from '../messages/messages.ts';
import { scheduledOf } from '../messages/scheduled_messages.ts';
import { MAX_REMINDER_NOTE_LENGTH, remindersOf } from '../messages/reminders.ts';
import { defaultExternalAccounts, FIELD_TYPE_DESCRIPTIONS, fieldObjects } from '../people/profile_fields.ts';
import { usersFor } from '../../rules/people.ts';
import { legacySettingsOf, SETTING_CHOICES, settingsOf, userDefaultsOf } from '../people/settings.ts';
import { mutedTopicsOf, userTopicsOf } from '../messages/user_topics.ts';
import { alertWordsOf, mutedUsersOf } from '../people/personal.ts';
import { realmEmojiOf } from './realm_emoji.ts';
import type { RealmState } from '../../state/state.ts';
import { apiEmail } from '../../rules/emails.ts';
import type { UserRecord } from '../../../../storage/tables.ts';
import { IncludeSubscribers, MAX_BULK_NEW_SUBSCRIPTION_MESSAGES, MAX_STREAM_DESCRIPTION_LENGTH, MAX_STREAM_NAME_LENGTH } from '../channels/subscriptions.ts';
import { groupObjects } from '../../rules/groups.ts';
import { realmBotsOf } from '../people/bots.ts';
import { systemBotObjects } from './system_bots.ts';
import { statusesOf } from '../people/user_status.ts';
import { DEFAULT_USER_SETTINGS } from '../../../user/settings.ts';
import { digestsOnServer } from '../notifications/digest.ts';

const query = defineQuery<RealmState>();

/** Limits and names every register response carries. */
function limits(state: Readonly<RealmState>): Record<string, unknown> {
  return {
    max_message_length: MAX_MESSAGE_LENGTH,
    max_topic_length: MAX_TOPIC_LENGTH,
    max_stream_name_length: MAX_STREAM_NAME_LENGTH,
    max_stream_description_length: MAX_STREAM_DESCRIPTION_LENGTH,
    max_channel_folder_name_length: 60,
    max_channel_folder_description_length: 1024,
    max_bulk_new_subscription_messages: MAX_BULK_NEW_SUBSCRIPTION_MESSAGES,
    max_reminder_note_length: MAX_REMINDER_NOTE_LENGTH,
    realm_empty_topic_display_name: emptyTopicDisplayName(state),
    realm_topics_policy: state.meta?.topicsPolicy ?? 'allow_empty_topic',
    max_file_upload_size_mib: MAX_UPLOAD_MIB,
  };
}

/**
 * What this server is and does, in the keys Zulip's register gives with
 * `realm`: a capability Parley lacks is false (or its empty list), and the
 * presence and typing timings are the ones the ephemeral actor keeps.
 */
function serverSnapshot(state: Readonly<RealmState>): Record<string, unknown> {
  return {
    realm_move_messages_within_stream_limit_seconds: moveLimit(state, 'moveMessagesWithinStreamLimitSeconds'),
    realm_move_messages_between_streams_limit_seconds: moveLimit(state, 'moveMessagesBetweenStreamsLimitSeconds'),
    realm_default_external_accounts: defaultExternalAccounts(),
    // Zulip's SEND_DIGEST_EMAILS: whether this server sends digests (`digest.ts`).
    settings_send_digest_emails: digestsOnServer(),
    development_environment: false,
    zulip_plan_is_not_limited: true,
    password_min_length: MIN_PASSWORD_LENGTH,
    password_max_length: MAX_PASSWORD_LENGTH,
    password_min_guesses: 0,
    server_inline_image_preview: false,
    server_inline_url_embed_preview: false,
    server_thumbnail_formats: [],
    server_avatar_changes_disabled: true,
    server_name_changes_disabled: false,
    server_web_public_streams_enabled: false,
    server_needs_upgrade: false,
    server_generation: SERVER_GENERATION,
    // Zulip's default limits; no image uploads for avatars, icons or logos exist here (realm_avatar_changes_disabled).
    max_avatar_file_size_mib: 5,
    max_icon_file_size_mib: 5,
    max_logo_file_size_mib: 5,
    server_emoji_data_url: EMOJI_DATA_PATH,
    server_can_summarize_topics: false,
    // The days an owner may ask before a deactivated organization's data may be deleted (FL 332; POST /realm/deactivate).
    server_min_deactivated_realm_deletion_days: MIN_DEACTIVATED_REALM_DELETION_DAYS,
    server_max_deactivated_realm_deletion_days: null,
    server_presence_ping_interval_seconds: 60,
    server_presence_offline_threshold_seconds: OFFLINE_THRESHOLD_SECS,
    server_typing_started_expiry_period_milliseconds: TYPING_EXPIRY_MS,
    server_typing_stopped_wait_period_milliseconds: 5000,
    server_typing_started_wait_period_milliseconds: 10000,
    server_supported_permission_settings: supportedPermissionSettings(),
    // The reasons a message may be reported for (Zulip's Realm.REPORT_MESSAGE_REASONS; FL 435).
    server_report_message_types: REPORT_MESSAGE_TYPES,
  };
}

/** Zulip's report reasons, by key, with the names its clients show. */
export const REPORT_MESSAGE_TYPES: ReadonlyArray<{ key: string; name: string }> = [
  { key: 'spam', name: 'Spam' },
  { key: 'harassment', name: 'Harassment' },
  { key: 'inappropriate', name: 'Inappropriate content' },
  { key: 'norms', name: 'Violates community norms' },
  { key: 'other', name: 'Other reason' },
];

const G = GROUP_ID;
/** Zulip's SYSTEM_GROUPS_ENUM_MAP and SYSTEM_GROUPS_TO_WILDCARD_MENTION_POLICY_MAP, by system group ID. */
const POLICY_OF_GROUP: Readonly<Record<number, number>> = { [G['role:owners']]: 7, [G['role:administrators']]: 2, [G['role:moderators']]: 4, [G['role:fullmembers']]: 3, [G['role:members']]: 1, [G['role:everyone']]: 5, [G['role:nobody']]: 6 };
const WILDCARD_POLICY_OF_GROUP: Readonly<Record<number, number>> = { [G['role:everyone']]: 1, [G['role:members']]: 2, [G['role:fullmembers']]: 3, [G['role:moderators']]: 7, [G['role:administrators']]: 5, [G['role:nobody']]: 6 };
/**
 * Zulip's legacy policy values for clients that predate group settings
 * (`get_corresponding_policy_value_for_group_setting`): the policy of the
 * system group a setting names, when the policy kind has one; otherwise the
 * kind's fallback.
 */
function legacyPolicies(state: Readonly<RealmState>): Record<string, number> {
  const policy = (name: string, map: Readonly<Record<number, number>>, valid: number[], fallback: number) => {
    const v = realmGroupSetting(state, name);
    const p = typeof v === 'number' ? map[v] : undefined;
    return p !== undefined && valid.includes(p) ? p : fallback;
  };
  return {
    realm_create_public_stream_policy: policy('can_create_public_channel_group', POLICY_OF_GROUP, [1, 2, 3, 4], 1),
    realm_create_private_stream_policy: policy('can_create_private_channel_group', POLICY_OF_GROUP, [1, 2, 3, 4], 1),
    realm_create_web_public_stream_policy: policy('can_create_web_public_channel_group', POLICY_OF_GROUP, [2, 4, 6, 7], 4),
    realm_wildcard_mention_policy: policy('can_mention_many_users_group', WILDCARD_POLICY_OF_GROUP, [1, 2, 3, 5, 6, 7], 1),
  };
}

/** The requesting user's own part of `realm_user`: avatar (always as a URL, as Zulip does) and permissions. */
function ownUser(state: Readonly<RealmState>, user: UserRecord): Record<string, unknown> {
  const can = (name: string) => state.can(realmGroupSetting(state, name), user);
  const canCreatePrivate = can('can_create_private_channel_group');
  const canCreatePublic = can('can_create_public_channel_group');
  return {
    avatar_source: user.avatarSource,
    avatar_url: userAvatarUrl(user, false),
    avatar_url_medium: userAvatarUrl(user, false, true),
    can_create_private_streams: canCreatePrivate,
    can_create_public_streams: canCreatePublic,
    // Web-public channels are not enabled on this server.
    can_create_web_public_streams: false,
    can_create_streams: canCreatePrivate || canCreatePublic,
    can_invite_others_to_realm: !isGuest(user) && can('can_invite_users_group'),
  };
}

/**
 * For clients without `notification_settings_null` (Zulip's
 * handle_stream_notifications_compatibility): a channel's notification
 * setting that follows the user's default (null) is given as that default.
 */
function resolveNotificationSettings(state: Readonly<RealmState>, userId: number, out: Record<string, unknown>): void {
  for (const key of ['subscriptions', 'unsubscribed']) {
    for (const sub of (out[key] as Array<Record<string, unknown>> | undefined) ?? []) {
      for (const kind of ['desktop', 'audible', 'push', 'email']) {
        const name = `${kind}_notifications`;
        if (sub[name] === null) sub[name] = state.setting(userId, `enable_stream_${name}`, DEFAULT_USER_SETTINGS[`enable_stream_${name}`]!);
      }
    }
  }
}

/**
 * The realm's part of a register, as JSON text: the parts every viewer who
 * sees everyone gets alike come pre-encoded (`register_parts.ts`), as
 * pieces of bytes when the caller asks (`parts`). Answered beside the
 * mailbox (`QueryDef.concurrent`): a register does not wait behind the
 * organization's sends.
 */
export const snapshot = query({
  type: 'snapshot',
  concurrent: true,
  fields: z.object({
    fetch: z.array(z.string()).nullable(),
    clientExtavatar: z.boolean(),
    includeSubscribers: IncludeSubscribers,
    /** The client's `client_capabilities` (archived channels, linkifier templates, incomplete user lists). */
    capabilities: z.record(z.string(), z.boolean()).default({}),
    /** How the cached parts come: in the text, or as pieces of bytes (`utf8`, or `deflated` for a client that accepts gzip). */
    parts: z.enum(['text', 'utf8', 'deflated']).default('text'),
  }),
  run(state, msg, ctx) {
    const user = actingUser(state, msg.caller);
    const want = (t: string) => wants(msg.fetch, t);
    const out: Record<string, unknown> = { ...limits(state) };
    if (want('realm')) Object.assign(out, realmSnapshot(state, ctx.siteUrl), serverSnapshot(state), legacyPolicies(state));
    /** Members kept encoded (`register_parts.ts`), joined to the reply in the form the caller takes. */
    const encoded: Array<[string, CachedPart]> = [];
    if (want('realm_user')) {
      // Only when a part is built (or for a viewer who does not see everyone): a cached register reads no user list.
      const users = (active: boolean) => [...state.users.values()].filter((u) => u.isActive === active);
      const opts = { extavatar: msg.clientExtavatar, profile: true, incomplete: msg.capabilities.user_list_incomplete === true };
      Object.assign(out, {
        user_id: user.id,
        email: apiEmail(state, user),
        delivery_email: user.email,
        full_name: user.fullName,
        is_admin: user.role <= Role.ADMIN,
        is_owner: user.role === Role.OWNER,
        is_guest: user.role === Role.GUEST,
        // True for administrators and owners too (FL 380), as is_admin is for owners.
        is_moderator: user.role <= Role.MODERATOR,
        role: user.role,
        can_create_users: user.canCreateUsers,
        ...ownUser(state, user),
        cross_realm_bots: systemBotObjects(state, msg.clientExtavatar),
      });
      // A user the viewer may not see is left out or, for clients without user_list_incomplete, an
      // active "Unknown user" (so, as in Zulip, among realm_users even when deactivated).
      const realmUsers = () => [...usersFor(state, user, users(true), opts), ...(opts.incomplete ? [] : usersFor(state, user, users(false), opts).filter((u) => u.is_active))];
      const nonActive = () => usersFor(state, user, users(false), { ...opts, incomplete: true });
      if (seesEveryone(state, user)) {
        // The same for every viewer who sees everyone (only the avatar form differs): pre-encoded, cached.
        const form = msg.clientExtavatar ? 'extavatar' : 'url';
        encoded.push(['realm_users', encodedPart(state, `realm_users:${form}`, realmUsers)], ['realm_non_active_users', encodedPart(state, `realm_non_active_users:${form}`, nonActive)]);
      } else {
        Object.assign(out, { realm_users: realmUsers(), realm_non_active_users: nonActive() });
      }
    }
    if (want('subscription') || want('stream') || want('default_streams')) {
      Object.assign(out, channelSnapshot(state, user, want, msg.includeSubscribers, msg.capabilities.archived_channels === true));
      if (msg.capabilities.notification_settings_null !== true) resolveNotificationSettings(state, user.id, out);
    }
    if (want('realm_user_groups')) {
      const deactivated = msg.capabilities.include_deactivated_groups === true;
      encoded.push(['realm_user_groups', encodedPart(state, `realm_user_groups:${deactivated}`, () => groupObjects(state, deactivated))]);
    }
    if (want('user_settings')) out.user_settings = { ...settingsOf(state, user.id), ...SETTING_CHOICES };
    if (msg.capabilities.user_settings_object !== true) {
      for (const legacy of ['update_display_settings', 'update_global_notifications'] as const) if (want(legacy)) Object.assign(out, legacySettingsOf(state, user.id, legacy));
    }
    if (want('realm_user_settings_defaults')) out.realm_user_settings_defaults = { ...userDefaultsOf(state), ...SETTING_CHOICES };
    if (want('user_status')) {
      // Everyone's status, the same for every viewer who sees everyone (a walk of every user otherwise): cached.
      if (seesEveryone(state, user)) encoded.push(['user_status', encodedPart(state, 'user_status', () => statusesOf(state, user), 'status')]);
      else out.user_status = statusesOf(state, user);
    }
    if (want('recent_private_conversations')) {
      out.recent_private_conversations = [...(state.dmsByUser.get(user.id) ?? [])]
        .map((key) => state.dms.get(key)!)
        .filter((d) => d.maxMessageId !== null)
        .sort((a, b) => b.maxMessageId! - a.maxMessageId!)
        .slice(0, 1000)
        .map((d) => ({ max_message_id: d.maxMessageId!, user_ids: d.userIds.filter((id) => id !== user.id) }));
    }
    if (want('scheduled_messages')) out.scheduled_messages = scheduledOf(state, user.id);
    if (want('channel_folders')) out.channel_folders = foldersOf(state);
    if (want('user_topic')) out.user_topics = userTopicsOf(state, user.id, msg.capabilities.empty_topic_name === true ? null : emptyTopicDisplayName(state));
    // As in Zulip: a client that asks for user_topic as well gets only the newer form.
    if (want('muted_topics') && (msg.fetch === null || !want('user_topic'))) out.muted_topics = mutedTopicsOf(state, user.id);
    if (want('muted_users')) out.muted_users = mutedUsersOf(state, user.id);
    if (want('alert_words')) out.alert_words = alertWordsOf(state, user.id);
    if (want('realm_emoji')) out.realm_emoji = realmEmojiOf(state);
    // What this server has none of is reported as the empty collection it is.
    // onboarding_steps itself comes from the user's actor (`actors/user/onboarding.ts`); there is no tour video.
    if (want('onboarding_steps')) out.navigation_tour_video_url = null;
    if (want('reminders')) out.reminders = remindersOf(state, user.id);
    if (want('realm_domains')) out.realm_domains = domainsOf(state);
    if (want('default_stream_groups')) out.realm_default_stream_groups = defaultChannelGroupsOf(state, user);
    if (want('realm_bot')) out.realm_bots = realmBotsOf(state, user);
    if (want('realm_embedded_bots')) out.realm_embedded_bots = [];
    if (want('realm_incoming_webhook_bots')) out.realm_incoming_webhook_bots = [];
    if (want('realm_billing')) out.realm_billing = { has_pending_sponsorship_request: false };
    if (want('giphy')) out.giphy_api_key = '';
    // No Tenor key either (FL 442): clients offer no GIF picker.
    if (want('giphy') || want('tenor')) out.tenor_api_key = '';
    if (want('device')) out.devices = devicesOf(state, user.id);
    // Search matches every word: none are dropped as stop words.
    if (want('stop_words')) out.stop_words = [];
    // Legacy linkifiers: always empty in Zulip, whose url_template form they cannot carry.
    if (want('realm_filters')) out.realm_filters = [];
    if (want('realm_playgrounds')) out.realm_playgrounds = playgroundsOf(state);
    if (want('realm_linkifiers')) out.realm_linkifiers = msg.capabilities.linkifier_url_template === true ? linkifiersOf(state) : [];
    if (want('custom_profile_fields')) {
      out.custom_profile_fields = fieldObjects(state);
      out.custom_profile_field_types = FIELD_TYPE_DESCRIPTIONS;
    }
    // Zulip's fetch type is `video_calls`; the event's own type is accepted too.
    if (want('video_calls') || want('has_videoprovider_token')) out.has_videoprovider_token = state.org.videoTokens.has(user.id);
    // Everything is read now, between two changes; only compressing a part the first time waits (off this thread).
    return withParts(JSON.stringify(out), encoded, msg.parts);
  },
});

export const serverSettings = query({
  type: 'serverSettings',
  fields: z.object({}),
  run(state, _msg, ctx) {
    // The organization's part of GET /server_settings; the gateway adds the server's.
    return {
      realm_name: state.meta?.name ?? '',
      realm_description: renderDescription(state.org.settings.description),
      realm_icon: realmIconUrl(state.meta?.stringId ?? ''),
      // As in the register: the server has no web-public channels, so no organization offers spectators access.
      realm_web_public_access_enabled: false,
      realm_uri: realmUrl(ctx.siteUrl, state.meta?.stringId ?? ''),
      realm_url: realmUrl(ctx.siteUrl, state.meta?.stringId ?? ''),
    };
  },
});
