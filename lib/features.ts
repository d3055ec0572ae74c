/**
 * What this server implements, by feature level, and the level it therefore
 * advertises.
 *
 * Clients read `service_feature_level` to choose between encodings and code
 * paths: a level of N promises every feature of every level up to N. The
 * table lists each feature-level note of the API contract
 * (`../shared/spec/api-spec.md`, plus `with` from Zulip's narrow language),
 * each with what implements it: routes of the gateway (implemented when the
 * gateway serves all of them) or a behaviour already in place (`done`).
 *
 * The rule: the advertised level is one below the lowest level that has a
 * feature not implemented; when every listed feature is implemented, it is
 * the highest level listed. So the level rises as routes land, and never
 * claims a feature that answers 404.
 */

export interface Feature {
  level: number;
  what: string;
  /** Implemented when the gateway serves every one of these (`METHOD /path` as routes declare them). */
  routes?: string[];
  /** Implemented by behaviour already in place. An entry with neither `routes` nor `done` is not implemented yet. */
  done?: true;
}

export const FEATURES: readonly Feature[] = [
  // Level 0: operations from before feature levels that this server added since.
  { level: 0, what: 'POST /messages/render', routes: ['POST /messages/render'] },
  { level: 1, what: 'is_announcement_only on channel objects (deprecated)', done: true },
  // GET /api/v1/user_uploads/... answers 404 for a path naming no file, so the route check of features.test.ts does not
  // fit; test/uploads.test.ts shows it (the URL, its use on every gateway, its expiry).
  { level: 1, what: 'temporary upload URLs: GET /user_uploads/{realm_id}/{dir}/{name}/{filename} gives /user_uploads/temporary/...', done: true },
  { level: 9, what: 'principals as user IDs', done: true },
  { level: 12, what: 'GET /users/{user_id}/subscriptions/{stream_id}', routes: ['GET /users/{user_id}/subscriptions/{stream_id}'] },
  { level: 30, what: 'date_created on channels', done: true },
  { level: 36, what: 'POST /users needs can_create_users', routes: ['POST /users'] },
  { level: 78, what: 'unsupported parameters are not silently accepted', done: true },
  { level: 80, what: 'PATCH /settings/display and /settings/notifications as aliases of PATCH /settings', routes: ['PATCH /settings', 'PATCH /settings/display', 'PATCH /settings/notifications'] },
  { level: 86, what: 'status emoji', routes: ['POST /users/me/status'] },
  { level: 91, what: "message_retention_days 'unlimited'", done: true },
  { level: 98, what: 'is_web_public on subscribe (refused while web-public channels are off)', done: true },
  { level: 126, what: 'invite_expires_in_minutes', routes: ['POST /invites', 'POST /invites/multiuse', 'GET /invites', 'DELETE /invites/{invite_id}', 'DELETE /invites/multiuse/{invite_id}', 'POST /invites/{invite_id}/resend'] },
  { level: 148, what: 'away replaced by presence_enabled', routes: ['POST /users/me/status', 'PATCH /settings', 'GET /users/{user_id}/status'] },
  { level: 149, what: 'unauthenticated POST /register (spectators)' },
  { level: 151, what: 'pronouns custom profile fields', routes: ['POST /realm/profile_fields'] },
  { level: 155, what: 'POST /messages/flags/narrow', routes: ['POST /messages/flags/narrow'] },
  { level: 160, what: 'POST /jwt/fetch_api_key', routes: ['POST /jwt/fetch_api_key'] },
  { level: 165, what: 'user group name and description optional on update', routes: ['PATCH /user_groups/{user_group_id}', 'POST /user_groups/create', 'GET /user_groups'] },
  { level: 167, what: 'ignored_parameters_unsupported', done: true },
  { level: 174, what: "message type 'direct'", done: true },
  { level: 176, what: 'linkifier url_template', routes: ['POST /realm/filters', 'GET /realm/linkifiers', 'PATCH /realm/linkifiers', 'DELETE /realm/filters/{filter_id}'] },
  { level: 179, what: 'scheduled messages', routes: ['POST /scheduled_messages', 'GET /scheduled_messages', 'PATCH /scheduled_messages/{scheduled_message_id}', 'DELETE /scheduled_messages/{scheduled_message_id}'] },
  { level: 191, what: 'can_mention_group', routes: ['PATCH /user_groups/{user_group_id}'] },
  { level: 200, what: 'is_default_stream on subscribe (default channels)', routes: ['GET /default_streams', 'POST /default_streams', 'DELETE /default_streams', 'PATCH /streams/{stream_id}'] },
  { level: 208, what: 'an invalid principal is a 400 BAD_REQUEST', done: true },
  { level: 209, what: 'reusable invitation links for non-administrators', routes: ['POST /invites/multiuse', 'DELETE /invites/multiuse/{invite_id}'] },
  { level: 229, what: 'STREAM_ and TOPIC_WILDCARD_MENTION_NOT_ALLOWED', done: true },
  { level: 236, what: 'read_by_sender', done: true },
  { level: 244, what: 'required custom profile fields', routes: ['POST /realm/profile_fields'] },
  { level: 248, what: "message type 'channel'", done: true },
  { level: 254, what: 'creator_id on channels', done: true },
  { level: 260, what: 'can_mention_group as {new, old}', routes: ['PATCH /user_groups/{user_group_id}'] },
  { level: 261, what: 'include_realm_default_subscriptions', routes: ['POST /invites', 'POST /invites/multiuse'] },
  // Notification Bot tells the referrer (actors/realm/system_bots.ts).
  { level: 267, what: 'notify_referrer_on_join', routes: ['POST /invites'] },
  { level: 271, what: "the 'with' narrow operator", done: true },
  { level: 283, what: 'can_manage_group', routes: ['PATCH /user_groups/{user_group_id}'] },
  { level: 285, what: 'can_change_user_emails', routes: ['PATCH /users/{user_id}', 'GET /users/{user_id}', 'GET /users/me'] },
  { level: 288, what: 'presence_history_limit_days', routes: ['POST /users/me/presence'] },
  { level: 296, what: 'editable_by_user on custom profile fields', routes: ['POST /realm/profile_fields', 'PATCH /users/me/profile_data', 'GET /realm/profile_fields', 'DELETE /realm/profile_fields/{field_id}', 'PATCH /realm/profile_fields'] },
  { level: 297, what: 'saved snippets', routes: ['POST /saved_snippets'] },
  { level: 301, what: 'can_join_group', routes: ['POST /user_groups/{user_group_id}/members'] },
  { level: 303, what: 'direct_members leave out deactivated users', routes: ['DELETE /users/{user_id}', 'POST /users/{user_id}/reactivate', 'DELETE /users/me'] },
  { level: 305, what: 'can_add_members_group', routes: ['POST /user_groups/{user_group_id}/members'] },
  { level: 308, what: 'can_leave_group', routes: ['POST /user_groups/{user_group_id}/members'] },
  { level: 311, what: 'user group subgroups', routes: ['POST /user_groups/{user_group_id}/members', 'GET /user_groups/{user_group_id}/subgroups', 'GET /user_groups/{user_group_id}/members', 'GET /user_groups/{user_group_id}/members/{user_id}'] },
  { level: 323, what: 'is_recently_active on channels', routes: ['GET /streams'] },
  { level: 324, what: 'can_remove_members_group', routes: ['POST /user_groups/{user_group_id}/members'] },
  { level: 325, what: 'can_administer_channel_group', done: true },
  { level: 333, what: 'can_send_message_group', done: true },
  { level: 340, what: 'settings of deactivated groups editable', routes: ['PATCH /user_groups/{user_group_id}'] },
  { level: 342, what: 'can_add_subscribers_group', done: true },
  { level: 349, what: 'adding subscribers to a private channel without being subscribed', done: true },
  { level: 355, what: 'ignored_because_not_subscribed_channels', routes: ['POST /messages/flags/narrow'] },
  { level: 362, what: 'archived channels', routes: ['DELETE /streams/{stream_id}', 'PATCH /streams/{stream_id}', 'DELETE /users/me/subscriptions'] },
  { level: 364, what: 'dense_mode removed', done: true },
  { level: 370, what: "'(no topic)' read as the empty topic", done: true },
  { level: 384, what: 'user_ids on GET /users', done: true },
  { level: 386, what: 'reactivating user groups', routes: ['PATCH /user_groups/{user_group_id}', 'POST /user_groups/{user_group_id}/deactivate'] },
  // Zulip lets spectators list users only where web-public access is on, which needs the server's
  // WEB_PUBLIC_STREAMS_ENABLED and a web-public channel. This server has neither (server_web_public_streams_enabled
  // and realm_web_public_access_enabled are false), so, as Zulip on such a server, every organization answers 401.
  { level: 387, what: 'unauthenticated GET /users (public access option): refused, as no organization here has web-public access', done: true },
  { level: 389, what: 'channel folders', routes: ['POST /channel_folders/create', 'GET /channel_folders', 'PATCH /channel_folders/{channel_folder_id}', 'PATCH /streams/{stream_id}'] },
  { level: 390, what: 'navigation views', routes: ['GET /navigation_views'] },
  { level: 391, what: 'members of deactivated groups editable', routes: ['POST /user_groups/{user_group_id}/members'] },
  { level: 403, what: 'url_options of integrations', routes: ['GET /bots'] },
  { level: 404, what: "topics_policy 'empty_topic_only'", done: true },
  { level: 407, what: 'can_delete_any_message_group and can_delete_own_message_group', routes: ['DELETE /messages/{message_id}'] },
  { level: 412, what: "include_subscribers 'partial'", done: true },
  // The realm setting and the invitations' text (administrators only), sent by Welcome Bot.
  { level: 416, what: 'welcome_message_custom_text', routes: ['POST /invites', 'POST /invites/multiuse', 'PATCH /realm'] },
  { level: 433, what: 'is_imported_stub', done: true },
  { level: 439, what: 'legacy settings events only for old clients', routes: ['PATCH /settings'] },
  { level: 444, what: 'target_users on PATCH /settings', routes: ['PATCH /settings', 'PATCH /realm/user_settings_defaults'] },
  { level: 454, what: "web_home_view 'recent'", routes: ['PATCH /settings'] },
  { level: 455, what: 'use_for_user_matching', routes: ['POST /realm/profile_fields'] },
  { level: 471, what: 'linkifier example_input reset by an empty string', routes: ['PATCH /realm/filters/{filter_id}'] },
  { level: 475, what: 'date_joined becomes the first login', routes: ['POST /fetch_api_key', 'POST /users/me/api_key/regenerate'] },
  { level: 476, what: 'long-text custom profile fields in the profile summary', routes: ['POST /realm/profile_fields', 'PATCH /realm/profile_fields/{field_id}'] },
  { level: 481, what: 'idle_queue_timeout', done: true },
  { level: 485, what: "url_options 'input_type'", routes: ['GET /bots'] },
  // No operation deletes a user yet, so no user object carries is_deleted (it is only present when true).
  { level: 490, what: 'is_deleted users', routes: ['DELETE /users/me'] },
  { level: 491, what: 'individual_emoji_changes', routes: ['POST /realm/emoji/{emoji_name}'] },
  { level: 493, what: 'video-call provider', routes: ['POST /calls/videoprovider/create', 'POST /calls/videoprovider/register'] },
  { level: 496, what: 'bots may edit user groups', routes: ['PATCH /user_groups/{user_group_id}'] },
];

export const isImplemented = (f: Feature, served: ReadonlySet<string>): boolean => f.done === true || (f.routes !== undefined && f.routes.every((r) => served.has(r)));

/** The feature level a server serving `served` (`METHOD /path`) advertises. */
export function featureLevel(served: ReadonlySet<string>): number {
  const missing = FEATURES.filter((f) => !isImplemented(f, served)).map((f) => f.level);
  return missing.length ? Math.min(...missing) - 1 : Math.max(...FEATURES.map((f) => f.level));
}

/**
 * Client capabilities (`client_capabilities` of POST /register) this server
 * acts on. A capability listed false is reported in
 * `ignored_parameters_unsupported` as `client_capabilities.<name>` when a
 * client declares it, since it changes nothing here yet.
 */
export const CLIENT_CAPABILITIES: Readonly<Record<string, boolean>> = {
  /** Avatar URLs may be left out; leaving them in is always allowed. */
  user_avatar_url_field_optional: true,
  /** No effect on modern servers (settings are always in user_settings). */
  user_settings_object: true,
  /** Without it, a channel's inherited notification settings are given as the user's defaults (register). */
  notification_settings_null: true,
  bulk_message_deletion: true,
  stream_typing_notifications: true,
  linkifier_url_template: true,
  /** Users the client may not see are left out of realm_users and of realm_user adds, instead of given as "Unknown user". */
  user_list_incomplete: true,
  include_deactivated_groups: true,
  archived_channels: true,
  /** Without it, the empty topic is given as realm_empty_topic_display_name in events and the register. */
  empty_topic_name: true,
  simplified_presence_events: true,
  individual_emoji_changes: true,
};
