/**
 * Organization settings: PATCH /realm, the `realm_*` register keys and the
 * organization part of GET /server_settings. Plain settings change with a
 * `realm` `update` event, group-setting permissions with `update_dict`
 * (Zulip's `do_set_realm_property` / `do_change_realm_permission_group_setting`).
 */
import { realmUuid } from '../notifications/push.ts';
import { realmUrl } from '../../../../lib/hosts.ts';
import { z } from 'zod';
import { pushConfigured } from '../../../../lib/push.ts';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { GroupSettingValue, type RealmMeta, type RealmSettings, T, USER_GROUP_SETTINGS, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toRealm, toUsers } from '../../../events/delivery.ts';
import type { ClientEventBody } from '../../../events/schema.ts';
import { realmIconUrl } from '../../../format.ts';
import { GROUP_ID, isAdmin, isOrgType, isSystemGroupId, Role, SYSTEM_GROUPS } from '../../../model.ts';
import { defineAction } from '../../../runtime/action.ts';
import { actingUser, restrictedViews } from '../../rules/access.ts';
import { accessChangeEvents } from '../../rules/people.ts';
import { renderDescription } from '../../rules/markdown.ts';
import type { RealmState } from '../../state/state.ts';
import { checkGroupValue, hasContentAccess, sameGroupValue } from '../channels/streams.ts';
import { permission, type PermissionConfig, recursiveSubgroups, settingForApi } from '../../rules/groups.ts';
import { MAX_WELCOME_MESSAGE_LENGTH } from '../people/invites.ts';
import { moveLimit } from '../messages/message_edit.ts';
import { armDigest } from '../notifications/digest.ts';
import { armRetention } from '../messages/retention.ts';
import { videoProvider } from '../../../../lib/videoprovider.ts';

const action = defineAction<RealmState>();

export const MAX_REALM_NAME_LENGTH = 40;
export const MAX_REALM_DESCRIPTION_LENGTH = 1000;

const G = GROUP_ID;
const groupName = (id: number) => SYSTEM_GROUPS.find((g) => g.id === id)!.name;

/** An organization permission: its default, whether only owners change it, and what values it takes (Zulip's `Realm.REALM_PERMISSION_GROUP_SETTINGS`). */
interface RealmPermission {
  default: number;
  ownerOnly?: true;
  config: PermissionConfig;
}

/** `nobody`, `everyone`: whether `role:nobody` and `role:everyone` are allowed; `only`: the system groups it must be one of. */
function realmPermission(def: number, nobody: boolean, everyone: boolean, extra: { ownerOnly?: true; only?: number[] } = {}): RealmPermission {
  const config = permission(nobody, everyone, groupName(def), extra.only ? { require_system_group: true, allowed_system_groups: extra.only.map(groupName) } : {});
  return { default: def, ...(extra.ownerOnly ? { ownerOnly: true as const } : {}), config };
}

/** The organization's group-setting permissions, with Zulip's defaults and configuration, and whether only owners may change them. */
export const REALM_GROUP_SETTINGS: Readonly<Record<string, RealmPermission>> = {
  // Zulip allows only these two system groups: everyone sees everyone, or guests see only some users.
  can_access_all_users_group: realmPermission(G['role:everyone'], false, true, { only: [G['role:everyone'], G['role:members']] }),
  can_add_custom_emoji_group: realmPermission(G['role:members'], true, false),
  can_add_subscribers_group: realmPermission(G['role:members'], true, false),
  can_create_bots_group: realmPermission(G['role:members'], true, false),
  can_create_groups: realmPermission(G['role:members'], true, false),
  can_create_private_channel_group: realmPermission(G['role:members'], true, false),
  can_create_public_channel_group: realmPermission(G['role:members'], true, false),
  // Not in Zulip's table: configured as the other creation permissions are.
  can_create_users_group: realmPermission(G['role:nobody'], true, false, { ownerOnly: true }),
  can_create_web_public_channel_group: realmPermission(G['role:owners'], true, false, { ownerOnly: true, only: [G['role:moderators'], G['role:administrators'], G['role:owners'], G['role:nobody']] }),
  can_create_write_only_bots_group: realmPermission(G['role:members'], true, false),
  can_delete_any_message_group: realmPermission(G['role:administrators'], true, false),
  can_delete_own_message_group: realmPermission(G['role:everyone'], true, true),
  can_invite_users_group: realmPermission(G['role:members'], true, false),
  can_manage_all_groups: realmPermission(G['role:owners'], false, false),
  can_manage_billing_group: realmPermission(G['role:administrators'], false, false, { ownerOnly: true }),
  can_mention_many_users_group: realmPermission(G['role:administrators'], true, true),
  can_move_messages_between_channels_group: realmPermission(G['role:members'], true, false),
  can_move_messages_between_topics_group: realmPermission(G['role:everyone'], true, true),
  can_resolve_topics_group: realmPermission(G['role:everyone'], true, true),
  can_set_delete_message_policy_group: realmPermission(G['role:moderators'], true, false),
  can_set_topics_policy_group: realmPermission(G['role:members'], true, true),
  can_summarize_topics_group: realmPermission(G['role:everyone'], true, true),
  create_multiuse_invite_group: realmPermission(G['role:administrators'], true, false, { ownerOnly: true }),
  direct_message_initiator_group: realmPermission(G['role:everyone'], true, true),
  direct_message_permission_group: realmPermission(G['role:everyone'], true, true),
  // FL 477: the users Zulip counts as workplace users for billing (this server bills nobody: it is kept and reported).
  workplace_users_group: realmPermission(G['role:everyone'], true, true),
};

/**
 * Permissions the organization stores and reports but nothing here reads yet
 * (per-user `can_create_users` decides POST /users; no billing, topic
 * summaries): PATCH /realm reports a change of them in
 * `ignored_parameters_unsupported` and does not make it, and
 * `server_supported_permission_settings` does not list them.
 */
export const NO_EFFECT_GROUP_SETTINGS: ReadonlySet<string> = new Set([
  'can_create_users_group',
  'can_manage_billing_group',
  'can_summarize_topics_group',
]);

/** The current value of an organization permission (`can_mention_many_users_group` lives in `RealmMeta`). */
export function realmGroupSetting(state: Readonly<RealmState>, name: string): GroupSettingValue {
  if (name === 'can_mention_many_users_group') return state.meta?.canMentionManyUsersGroup ?? G['role:administrators'];
  return state.org.settings.groups[name] ?? REALM_GROUP_SETTINGS[name]?.default ?? G['role:nobody'];
}

/**
 * After a deactivation or reactivation: the organization permissions whose
 * explicit members name the user, as the API now shows them (deactivated
 * users left out, FL 303), in one `update_dict` to `audience`.
 */
export function realmSettingsNamingUser(state: Readonly<RealmState>, userId: number, audience?: number[]): Delivery[] {
  const data: Record<string, GroupSettingValue> = {};
  for (const name of Object.keys(REALM_GROUP_SETTINGS)) {
    const v = realmGroupSetting(state, name);
    if (typeof v !== 'number' && v.direct_members.includes(userId)) data[name] = settingForApi(state, v);
  }
  if (!Object.keys(data).length || audience?.length === 0) return [];
  const event: ClientEventBody = { type: 'realm', op: 'update_dict', property: 'default', data };
  return [audience ? toUsers(state.realmId, audience, event) : toRealm(state.realmId, event)];
}

/** Values of a permission that only administrators hold: administrators, owners or nobody, and administrators by name. */
function adminsOnly(state: Readonly<RealmState>, v: GroupSettingValue): boolean {
  const adminGroups = new Set([G['role:administrators'], G['role:owners'], G['role:nobody']]);
  if (typeof v === 'number') return adminGroups.has(v);
  return v.direct_subgroups.every((g) => adminGroups.has(g)) && v.direct_members.every((id) => isAdmin(state.users.get(id)!));
}

/**
 * Zulip's validate_workplace_users_group (FL 477): the group's membership
 * changes only by administrators. A system group's does (with a role); a
 * user-defined group and every user-defined group under it must let only
 * administrators add, remove, join, leave or manage it, and the
 * organization's can_manage_all_groups must be administrators'.
 * O(groups under it).
 */
function checkWorkplaceUsersGroup(state: Readonly<RealmState>, v: GroupSettingValue): void {
  const top = typeof v === 'number' ? [v] : v.direct_subgroups;
  const named = top.filter((g) => !isSystemGroupId(g));
  if (!named.length) return;
  const groups = [...named, ...recursiveSubgroups(state, named)].filter((g) => !isSystemGroupId(g));
  const ok = adminsOnly(state, realmGroupSetting(state, 'can_manage_all_groups')) && groups.every((id) => USER_GROUP_SETTINGS.filter((k) => k !== 'can_mention_group').every((k) => adminsOnly(state, state.groups.get(id)!.settings[k])));
  if (!ok) throw badRequest("'workplace_users_group' must be a group whose membership can only be managed by organization administrators.");
}

/** Plain settings: API name -> where it lives, and whether only owners may change it. */
export const PLAIN = {
  name: { owner: false },
  description: { owner: false },
  message_retention_days: { owner: true },
  topics_policy: { owner: false },
  enable_spectator_access: { owner: false },
  invite_required: { owner: true },
  emails_restricted_to_domains: { owner: true },
  disallow_disposable_email_addresses: { owner: true },
  // Zulip 6.0 (FL 143) made these owner-only.
  waiting_period_threshold: { owner: true },
  default_language: { owner: false },
  allow_message_editing: { owner: false },
  message_content_edit_limit_seconds: { owner: false },
  message_content_delete_limit_seconds: { owner: false },
  enable_read_receipts: { owner: false },
  message_content_allowed_in_email_notifications: { owner: false },
  digest_emails_enabled: { owner: false },
  send_welcome_emails: { owner: false },
  digest_weekday: { owner: false },
  welcome_message_custom_text: { owner: false },
  new_stream_announcements_stream_id: { owner: false },
  video_chat_provider: { owner: false },
  move_messages_within_stream_limit_seconds: { owner: false },
  move_messages_between_streams_limit_seconds: { owner: false },
  enable_guest_user_indicator: { owner: false },
  enable_guest_user_dm_warning: { owner: false },
  send_channel_events_messages: { owner: false },
  moderation_request_channel_id: { owner: false },
  zulip_update_announcements_stream_id: { owner: false },
  default_code_block_language: { owner: false },
  gif_rating_policy: { owner: false },
  default_avatar_source: { owner: false },
  media_preview_size: { owner: false },
  org_type: { owner: false },
  want_advertise_in_communities_directory: { owner: false },
  signup_announcements_stream_id: { owner: false },
  require_unique_names: { owner: false },
  require_e2ee_push_notifications: { owner: false },
  jitsi_server_url: { owner: false },
  message_edit_history_visibility_policy: { owner: false },
} as const;
type Plain = keyof typeof PLAIN;

/** A plain setting's value as clients see it (register key `realm_<name>`, event value). */
function plainValue(state: Readonly<RealmState>, name: Plain): string | number | boolean | null {
  const m = state.meta;
  const st = state.org.settings;
  switch (name) {
    case 'name':
      return m?.name ?? '';
    case 'description':
      return renderDescription(st.description);
    case 'message_retention_days':
      return st.messageRetentionDays;
    case 'topics_policy':
      return m?.topicsPolicy ?? 'allow_empty_topic';
    case 'enable_spectator_access':
      return st.enableSpectatorAccess;
    case 'invite_required':
      return st.inviteRequired;
    case 'emails_restricted_to_domains':
      return st.emailsRestrictedToDomains;
    case 'disallow_disposable_email_addresses':
      return st.disallowDisposableEmailAddresses;
    case 'waiting_period_threshold':
      return st.waitingPeriodThreshold;
    case 'default_language':
      return st.defaultLanguage;
    case 'allow_message_editing':
      return st.allowMessageEditing;
    case 'message_content_edit_limit_seconds':
      return st.messageContentEditLimitSeconds;
    case 'message_content_delete_limit_seconds':
      return st.messageContentDeleteLimitSeconds;
    case 'enable_read_receipts':
      return st.enableReadReceipts;
    case 'message_content_allowed_in_email_notifications':
      return st.messageContentAllowedInEmailNotifications;
    case 'digest_emails_enabled':
      return st.digestEmailsEnabled;
    case 'send_welcome_emails':
      return st.sendWelcomeEmails;
    case 'digest_weekday':
      return st.digestWeekday;
    case 'welcome_message_custom_text':
      return st.welcomeMessageCustomText;
    case 'new_stream_announcements_stream_id':
      // Unset is -1, as in Zulip.
      return st.newStreamAnnouncementsStreamId ?? -1;
    case 'video_chat_provider':
      return st.videoChatProvider;
    case 'move_messages_within_stream_limit_seconds':
      return moveLimit(state, 'moveMessagesWithinStreamLimitSeconds');
    case 'move_messages_between_streams_limit_seconds':
      return moveLimit(state, 'moveMessagesBetweenStreamsLimitSeconds');
    case 'enable_guest_user_indicator':
      return st.enableGuestUserIndicator;
    case 'enable_guest_user_dm_warning':
      return st.enableGuestUserDmWarning;
    case 'send_channel_events_messages':
      return st.sendChannelEventsMessages;
    case 'moderation_request_channel_id':
      // Unset is -1, as in Zulip.
      return st.moderationRequestChannelId ?? -1;
    case 'zulip_update_announcements_stream_id':
      // This server posts no Zulip update announcements; the channel is kept for when it does. Unset is -1.
      return st.zulipUpdateAnnouncementsStreamId ?? -1;
    case 'default_code_block_language':
      return st.defaultCodeBlockLanguage;
    case 'gif_rating_policy':
      return st.giphyRating;
    case 'default_avatar_source':
      return st.defaultAvatarSource;
    case 'media_preview_size':
      return st.mediaPreviewSize;
    case 'org_type':
      return st.orgType;
    case 'want_advertise_in_communities_directory':
      return st.wantAdvertiseInCommunitiesDirectory;
    case 'signup_announcements_stream_id':
      return st.signupAnnouncementsStreamId ?? -1;
    case 'require_unique_names':
      return st.requireUniqueNames;
    case 'require_e2ee_push_notifications':
      return st.requireE2eePushNotifications;
    case 'jitsi_server_url':
      // Null: the server's (`server_jitsi_server_url`).
      return st.jitsiServerUrl;
    case 'message_edit_history_visibility_policy':
      return st.messageEditHistoryVisibilityPolicy;
  }
}

/**
 * The reply of PATCH /realm: each setting that changed, and only those (FL 150), as Zulip's
 * update_realm gives them: a string value as "updated", the edit and delete limits and the
 * channel IDs as their value (null for no limit), a permission as its new group-setting value.
 */
function changedData(updates: ReadonlyArray<{ property: string; value: unknown }>, groups: Readonly<Record<string, GroupSettingValue>>): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  const asValue = new Set(['message_content_edit_limit_seconds', 'message_content_delete_limit_seconds', 'move_messages_within_stream_limit_seconds', 'move_messages_between_streams_limit_seconds', 'new_stream_announcements_stream_id', 'zulip_update_announcements_stream_id', 'signup_announcements_stream_id', 'moderation_request_channel_id']);
  for (const { property, value } of updates) data[property] = typeof value === 'string' && !asValue.has(property) ? 'updated' : value;
  return { ...data, ...groups };
}

/** Every `realm_*` register key of the settings this server implements. */
export function realmSnapshot(state: Readonly<RealmState>, siteUrl: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(PLAIN) as Plain[]) out[`realm_${name}`] = plainValue(state, name);
  for (const name of Object.keys(REALM_GROUP_SETTINGS)) out[`realm_${name}`] = settingForApi(state, realmGroupSetting(state, name));
  Object.assign(out, {
    realm_date_created: state.meta?.dateCreated ?? 0,
    realm_uri: realmUrl(siteUrl, state.meta?.stringId ?? ''),
    realm_url: realmUrl(siteUrl, state.meta?.stringId ?? ''),
    // FL 466: the organization's UUID, the one the push service knows it by.
    realm_uuid: realmUuid(state),
    // Only a demo organization has it (Zulip's fetch_initial_state_data; FL 94).
    ...(state.meta?.demoOrganizationScheduledDeletionDate != null ? { demo_organization_scheduled_deletion_date: state.meta.demoOrganizationScheduledDeletionDate } : {}),
    // Zulip's web_public_streams_enabled(): the organization's option and the server's; this server has no web-public channels.
    realm_web_public_access_enabled: false,
    // Zulip's owner_full_content_access (FL 438), set only by a server administrator there: owners here
    // read only what their channels and conversations give them, and no full export bypasses consent.
    realm_owner_full_content_access: false,
    realm_presence_disabled: false,
    realm_icon_url: realmIconUrl(state.meta?.stringId ?? ''),
    realm_icon_source: 'G',
    realm_plan_type: 1,
    realm_available_video_chat_providers: videoChatProviders(),
    gif_rating_policy_options: GIPHY_RATING_OPTIONS,
    server_jitsi_server_url: serverJitsiUrl(),
    // The URL calls are made at (deprecated since FL 212): the organization's, else the server's.
    jitsi_server_url: state.org.settings.jitsiServerUrl ?? serverJitsiUrl(),
    ...FIXED_REALM_PROPERTIES,
    // Deprecated forms of two settings, derived from their replacements as Zulip does: edit history shown
    // at all (FL 358), and topics required (FL 392).
    realm_allow_edit_history: state.org.settings.messageEditHistoryVisibilityPolicy !== 'none',
    realm_mandatory_topics: mandatoryTopics(state),
    // True exactly when the server reaches the mobile push notification service (`lib/push.ts`).
    realm_push_notifications_enabled: pushConfigured(),
  });
  return out;
}

/** The deprecated `mandatory_topics` (FL 392): the organization refuses the empty topic. */
const mandatoryTopics = (state: Readonly<RealmState>) => (state.meta?.topicsPolicy ?? 'allow_empty_topic') === 'disable_empty_topic';

/**
 * Organization properties Zulip's register has that no Parley API changes:
 * each value is what this server does for every organization (sign-in by
 * email and password only, no avatar uploads, no push notifications
 * or previews; Notification Bot posts no new-user
 * notices; names and emails may be changed). An unset channel
 * is -1, as in Zulip.
 */
const FIXED_REALM_PROPERTIES: Readonly<Record<string, unknown>> = {
  realm_authentication_methods: { Email: { enabled: true, available: true } },
  realm_email_auth_enabled: true,
  realm_password_auth_enabled: true,
  realm_avatar_changes_disabled: true,
  realm_name_changes_disabled: false,
  realm_email_changes_disabled: false,
  realm_push_notifications_enabled_end_timestamp: null,
  realm_inline_image_preview: false,
  realm_inline_url_embed_preview: false,
  realm_upload_quota_mib: null,
};

/**
 * The video-call providers an organization may choose (Zulip's
 * `get_enabled_video_chat_providers`): none and Jitsi Meet (whose calls the
 * client makes at the Jitsi server), and the OAuth provider
 * (`lib/videoprovider.ts`, Zulip's Zoom, ID 3) only when the server is
 * configured with one, as Zulip leaves Zoom out without its credentials.
 */
export function videoChatProviders(): Record<string, { name: string; id: number }> {
  return {
    disabled: { name: 'None', id: 0 },
    jitsi_meet: { name: 'Jitsi Meet', id: 1 },
    ...(videoProvider() ? { videoprovider: { name: 'Video provider', id: 3 } } : {}),
  };
}

/**
 * GIPHY ratings an organization may allow (Zulip's `GIPHY_RATING_OPTIONS`).
 * The setting is kept and given to clients; this server has no GIPHY API
 * key (`giphy_api_key` is ''), so clients offer no GIF picker, as on a Zulip
 * server without one.
 */
export const GIPHY_RATING_OPTIONS: Readonly<Record<string, { name: string; id: number }>> = {
  disabled: { name: 'GIPHY integration disabled', id: 0 },
  y: { name: 'Allow GIFs rated Y (Very young audience)', id: 1 },
  g: { name: 'Allow GIFs rated G (General audience)', id: 2 },
  pg: { name: 'Allow GIFs rated PG (Parental guidance)', id: 3 },
  'pg-13': { name: 'Allow GIFs rated PG-13 (Parental guidance - under 13)', id: 4 },
  r: { name: 'Allow GIFs rated R (Restricted)', id: 5 },
};

/** Zulip's media preview sizes (FL 469): a preview's height in percent of the normal one. */
const MEDIA_PREVIEW_SIZES = new Set([100, 150, 200]);


/** The Jitsi server of this installation (Zulip's `JITSI_SERVER_URL`, meet.jit.si by default). */
export function serverJitsiUrl(): string {
  return process.env.PARLEY_JITSI_SERVER_URL || 'https://meet.jit.si';
}

/** Zulip's `check_jitsi_url`: 'default' (the server's: null) or an http(s) URL of at most 200 characters. */
function checkJitsiUrl(value: string): string | null {
  if (value === 'default') return null;
  let ok = value.length <= 200;
  try {
    ok &&= ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    ok = false;
  }
  if (!ok) throw badRequest('jitsi_server_url is not an allowed_type', { var_name: 'jitsi_server_url' });
  return value;
}

/** The channel new channels are announced in (Zulip's `access_stream_by_id` for the administrator): null for -1. */
function announcementsChannel(state: Readonly<RealmState>, user: UserRecord, id: number, varName = 'new_stream_announcements_stream_id'): number | null {
  if (id === -1) return null;
  const c = state.channels.get(id);
  if (!c || c.isArchived || !hasContentAccess(state, c, user)) throw badRequest('Invalid channel ID', { var_name: varName });
  return c.id;
}

const Seconds = z.union([z.number().int().positive(), z.literal('unlimited')]);

/** The requested changes; group settings as `{new, old?}` (Zulip's `GroupSettingChangeRequest`). */
export const RealmChanges = z.object({
  name: z.string().optional(),
  description: z.string().optional(),
  message_retention_days: z.union([z.number().int(), z.literal('unlimited')]).optional(),
  topics_policy: z.enum(['allow_empty_topic', 'disable_empty_topic']).optional(),
  enable_spectator_access: z.boolean().optional(),
  invite_required: z.boolean().optional(),
  emails_restricted_to_domains: z.boolean().optional(),
  disallow_disposable_email_addresses: z.boolean().optional(),
  waiting_period_threshold: z.number().int().nonnegative().optional(),
  default_language: z.string().optional(),
  allow_message_editing: z.boolean().optional(),
  message_content_edit_limit_seconds: Seconds.optional(),
  message_content_delete_limit_seconds: Seconds.optional(),
  move_messages_within_stream_limit_seconds: Seconds.optional(),
  move_messages_between_streams_limit_seconds: Seconds.optional(),
  enable_guest_user_indicator: z.boolean().optional(),
  enable_guest_user_dm_warning: z.boolean().optional(),
  send_channel_events_messages: z.boolean().optional(),
  /** -1: none. */
  moderation_request_channel_id: z.number().int().optional(),
  zulip_update_announcements_stream_id: z.number().int().optional(),
  enable_read_receipts: z.boolean().optional(),
  message_content_allowed_in_email_notifications: z.boolean().optional(),
  digest_emails_enabled: z.boolean().optional(),
  send_welcome_emails: z.boolean().optional(),
  digest_weekday: z.number().int().optional(),
  welcome_message_custom_text: z.string().optional(),
  /** -1: no announcements. */
  new_stream_announcements_stream_id: z.number().int().optional(),
  video_chat_provider: z.number().int().optional(),
  default_code_block_language: z.string().optional(),
  gif_rating_policy: z.number().int().optional(),
  default_avatar_source: z.string().optional(),
  media_preview_size: z.number().int().optional(),
  org_type: z.number().int().optional(),
  want_advertise_in_communities_directory: z.boolean().optional(),
  /** -1: no announcements. */
  signup_announcements_stream_id: z.number().int().optional(),
  require_unique_names: z.boolean().optional(),
  require_e2ee_push_notifications: z.boolean().optional(),
  /** A URL, or 'default' for the server's. */
  jitsi_server_url: z.string().optional(),
  message_edit_history_visibility_policy: z.enum(['all', 'moves', 'none']).optional(),
  groups: z.record(z.string(), z.object({ new: GroupSettingValue, old: GroupSettingValue.optional() })).default({}),
});
export type RealmChanges = z.infer<typeof RealmChanges>;

const LANGUAGES = new Set(['en', 'de', 'es', 'fr', 'it', 'ja', 'ko', 'nl', 'pl', 'pt', 'ru', 'sv', 'tr', 'uk', 'zh-hans', 'zh-hant']);

interface RealmPlan {
  meta: RealmMeta;
  settings: RealmSettings;
  updates: Array<{ property: Plain; value: string | number | boolean | null }>;
  groups: Record<string, GroupSettingValue>;
  /** Who saw whom before a change of `can_access_all_users_group` (null when it does not change). */
  accessBefore: Map<number, Set<number>> | null;
  /** The deprecated mandatory_topics before the change. */
  mandatoryBefore: boolean;
}

export const updateRealm = action({
  type: 'updateRealm',
  fields: RealmChanges,
  check(state, msg): RealmPlan {
    const user = actingUser(state, msg.caller);
    if (!isAdmin(user)) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
    const ownerOnly = () => {
      if (user.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner', 400);
    };
    const meta: RealmMeta = { ...state.meta! };
    const settings: RealmSettings = { ...state.org.settings, groups: { ...state.org.settings.groups } };
    const changed: Plain[] = [];
    for (const name of Object.keys(PLAIN) as Plain[]) {
      const value = msg[name];
      if (value === undefined) continue;
      if (PLAIN[name].owner) ownerOnly();
      switch (name) {
        case 'name': {
          const v = String(value).trim();
          if (!v) throw badRequest('Organization name is too short.');
          if ([...v].length > MAX_REALM_NAME_LENGTH) throw badRequest('Organization name is too long.');
          meta.name = v;
          break;
        }
        case 'description':
          if ([...String(value)].length > MAX_REALM_DESCRIPTION_LENGTH) throw badRequest('Organization description is too long.');
          settings.description = String(value);
          break;
        case 'message_retention_days':
          if (typeof value === 'number' && value < 1) throw badRequest("Bad value for 'message_retention_days': must be at least 1", { var_name: 'message_retention_days' });
          settings.messageRetentionDays = value === 'unlimited' ? -1 : Number(value);
          break;
        case 'topics_policy':
          meta.topicsPolicy = msg.topics_policy!;
          break;
        case 'default_language':
          if (!LANGUAGES.has(String(value))) throw badRequest(`Invalid language '${value}'`);
          settings.defaultLanguage = String(value);
          break;
        case 'enable_spectator_access':
          settings.enableSpectatorAccess = Boolean(value);
          break;
        case 'invite_required':
          settings.inviteRequired = Boolean(value);
          break;
        case 'emails_restricted_to_domains':
          settings.emailsRestrictedToDomains = Boolean(value);
          break;
        case 'disallow_disposable_email_addresses':
          settings.disallowDisposableEmailAddresses = Boolean(value);
          break;
        case 'waiting_period_threshold':
          settings.waitingPeriodThreshold = Number(value);
          break;
        case 'allow_message_editing':
          settings.allowMessageEditing = Boolean(value);
          break;
        case 'message_content_edit_limit_seconds':
          settings.messageContentEditLimitSeconds = value === 'unlimited' ? null : Number(value);
          break;
        case 'message_content_delete_limit_seconds':
          settings.messageContentDeleteLimitSeconds = value === 'unlimited' ? null : Number(value);
          break;
        case 'enable_read_receipts':
          settings.enableReadReceipts = Boolean(value);
          break;
        case 'message_content_allowed_in_email_notifications':
          settings.messageContentAllowedInEmailNotifications = Boolean(value);
          break;
        case 'digest_emails_enabled':
          settings.digestEmailsEnabled = Boolean(value);
          break;
        case 'send_welcome_emails':
          settings.sendWelcomeEmails = Boolean(value);
          break;
        case 'digest_weekday':
          if (!Number.isInteger(value) || Number(value) < 0 || Number(value) > 6) throw badRequest('Invalid digest_weekday', { var_name: 'digest_weekday' });
          settings.digestWeekday = Number(value);
          break;
        case 'welcome_message_custom_text':
          if ([...String(value)].length > MAX_WELCOME_MESSAGE_LENGTH) throw badRequest(`welcome_message_custom_text is too long (limit: ${MAX_WELCOME_MESSAGE_LENGTH} characters).`);
          settings.welcomeMessageCustomText = String(value);
          break;
        case 'new_stream_announcements_stream_id':
          settings.newStreamAnnouncementsStreamId = announcementsChannel(state, user, Number(value));
          break;
        case 'video_chat_provider':
          if (!Object.values(videoChatProviders()).some((p) => p.id === value)) throw badRequest(`Invalid video_chat_provider ${value}`);
          settings.videoChatProvider = Number(value);
          break;
        case 'move_messages_within_stream_limit_seconds':
          meta.moveMessagesWithinStreamLimitSeconds = value === 'unlimited' ? null : Number(value);
          break;
        case 'move_messages_between_streams_limit_seconds':
          meta.moveMessagesBetweenStreamsLimitSeconds = value === 'unlimited' ? null : Number(value);
          break;
        case 'enable_guest_user_indicator':
          settings.enableGuestUserIndicator = Boolean(value);
          break;
        case 'enable_guest_user_dm_warning':
          settings.enableGuestUserDmWarning = Boolean(value);
          break;
        case 'send_channel_events_messages':
          settings.sendChannelEventsMessages = Boolean(value);
          break;
        case 'moderation_request_channel_id': {
          // Zulip's do_set_realm_moderation_request_channel: a channel the administrator may reach, and private.
          const id = announcementsChannel(state, user, Number(value), 'moderation_request_channel_id');
          if (id !== null && !state.channels.get(id)!.inviteOnly) throw badRequest('Moderation request channel must be private.');
          settings.moderationRequestChannelId = id;
          break;
        }
        case 'zulip_update_announcements_stream_id':
          settings.zulipUpdateAnnouncementsStreamId = announcementsChannel(state, user, Number(value), 'zulip_update_announcements_stream_id');
          break;
        case 'default_code_block_language':
          // Zulip takes any string (a Pygments name or an alias, 'quote', 'math', ...); '' is none.
          settings.defaultCodeBlockLanguage = String(value);
          break;
        case 'gif_rating_policy':
          if (!Object.values(GIPHY_RATING_OPTIONS).some((o) => o.id === value)) throw badRequest(`Invalid gif_rating_policy ${value}`);
          settings.giphyRating = Number(value);
          break;
        case 'default_avatar_source':
          // For users created from now on; existing users keep theirs (Zulip: 'U', an upload, is no default).
          if (value !== 'G' && value !== 'J') throw badRequest('Invalid default_avatar_source', { var_name: 'default_avatar_source' });
          settings.defaultAvatarSource = value;
          break;
        case 'media_preview_size':
          if (!MEDIA_PREVIEW_SIZES.has(Number(value))) throw badRequest('Invalid media_preview_size', { var_name: 'media_preview_size' });
          settings.mediaPreviewSize = Number(value);
          break;
        case 'org_type':
          if (!isOrgType(Number(value))) throw badRequest('Invalid org_type', { var_name: 'org_type' });
          settings.orgType = Number(value);
          break;
        case 'want_advertise_in_communities_directory':
          settings.wantAdvertiseInCommunitiesDirectory = Boolean(value);
          break;
        case 'signup_announcements_stream_id':
          settings.signupAnnouncementsStreamId = announcementsChannel(state, user, Number(value), 'signup_announcements_stream_id');
          break;
        case 'require_unique_names':
          settings.requireUniqueNames = Boolean(value);
          break;
        case 'require_e2ee_push_notifications':
          settings.requireE2eePushNotifications = Boolean(value);
          break;
        case 'jitsi_server_url':
          settings.jitsiServerUrl = checkJitsiUrl(String(value));
          break;
        case 'message_edit_history_visibility_policy':
          settings.messageEditHistoryVisibilityPolicy = msg.message_edit_history_visibility_policy!;
          break;
      }
      changed.push(name);
    }
    const groups: Record<string, GroupSettingValue> = {};
    for (const [name, change] of Object.entries(msg.groups)) {
      const spec = REALM_GROUP_SETTINGS[name];
      if (!spec) throw badRequest(`Invalid parameter: ${name}`);
      if (spec.ownerOnly) ownerOnly();
      const current = realmGroupSetting(state, name);
      if (change.old !== undefined && !sameGroupValue(change.old, current)) throw badRequest("'old' value does not match the expected value.");
      const value = checkGroupValue(state, name, change.new, spec.config);
      if (name === 'workplace_users_group') checkWorkplaceUsersGroup(state, value);
      if (sameGroupValue(value, current)) continue;
      if (name === 'can_mention_many_users_group') meta.canMentionManyUsersGroup = value;
      else settings.groups[name] = value;
      groups[name] = value;
    }
    // Plans carry the values clients will see, computed against the planned state.
    const planned = { meta, org: { settings } } as unknown as RealmState;
    const updates = changed.map((name) => ({ property: name, value: plainValue(planned, name) })).filter((u) => u.value !== plainValue(state, u.property));
    return { meta, settings, updates, groups, accessBefore: 'can_access_all_users_group' in groups ? restrictedViews(state) : null, mandatoryBefore: mandatoryTopics(state) };
  },
  apply(state, p, tx) {
    state.meta = p.meta;
    state.org.settings = p.settings;
    tx.write(T.realms.at(state.realmId).put(p.meta), T.realmSettings.at(state.realmId).put(p.settings));
    if (p.updates.some((u) => u.property === 'digest_emails_enabled' || u.property === 'digest_weekday')) armDigest(state, tx);
    if (p.updates.some((u) => u.property === 'message_retention_days')) armRetention(state, tx);
    return changedData(p.updates, p.groups);
  },
  events(state, p) {
    // The description is told in an update_dict since FL 464 (FL 462's rendered_description on the update event went with it).
    const out: Delivery[] = p.updates.map((u) =>
      u.property === 'description'
        ? toRealm(state.realmId, { type: 'realm', op: 'update_dict', property: 'default', data: { description: String(u.value) } })
        : toRealm(state.realmId, { type: 'realm', op: 'update', property: u.property, value: u.value }),
    );
    // Clients that still read the deprecated mandatory_topics hear it change with topics_policy (FL 392).
    if (p.updates.some((u) => u.property === 'topics_policy') && p.mandatoryBefore !== mandatoryTopics(state)) {
      out.push(toRealm(state.realmId, { type: 'realm', op: 'update', property: 'mandatory_topics', value: mandatoryTopics(state) }));
    }
    if (Object.keys(p.groups).length) out.push(toRealm(state.realmId, { type: 'realm', op: 'update_dict', property: 'default', data: p.groups }));
    if (p.accessBefore) out.push(...accessChangeEvents(state, p.accessBefore));
    return out;
  },
});
