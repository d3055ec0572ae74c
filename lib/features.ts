/**
 * What this server implements, by feature level, and the level it therefore
 * advertises.
 *
 * Clients read `service_feature_level` (and `zulip_feature_level`) to choose
 * between encodings and code paths: a level of N promises every change of
 * every level up to N of Zulip's API changelog (`api_docs/changelog.md`).
 * So the table has an entry for every feature level of that changelog from 1
 * up (a level with several changes has several entries), each naming the
 * routes, parameters, events or behaviour it stands for and the test case that
 * shows it, or what is missing.
 *
 * The rule, by construction: the advertised level is the highest L such that
 * every level 1..L has an entry and every entry at or below L is implemented.
 * A level without an entry stops it as a missing entry does, so levels the
 * table does not cover (above the changelog entries written down here) are
 * never claimed. test/features.test.ts fails if an entry at or below the
 * advertised level is not implemented or names a test case that does not
 * exist.
 *
 * An entry is implemented when it is `done` (or gives `routes`, all served)
 * and names no `missing`. Where Zulip later replaced what a level added (a
 * policy by a permission group, a field by another), the entry is done when
 * this server implements the replacement, and says so.
 */

export interface Feature {
  level: number;
  what: string;
  /** Implemented only when the gateway serves every one of these (`METHOD /path` as routes declare them). */
  routes?: string[];
  /** Implemented by behaviour in place, shown by `test`. */
  done?: true;
  /** A test case that shows it: a file under test/ and the exact name of a `t.test` in it. */
  test?: { file: string; name: string };
  /** What is not implemented: an entry with `missing` is not done, whatever else it says. */
  missing?: string;
  /** A level Zulip used for a release or reserved: no API change to implement. */
  noChange?: true;
}

const T = (file: string, name: string) => ({ file: `test/${file}.test.ts`, name });
const NO_TEST = 'no test shows it';

/** Levels 1 to 148 of Zulip's API changelog (Zulip 3.0 to 6.0). */
const CHANGELOG: readonly Feature[] = [
  // Level 0: operations from before feature levels that this server added since.
  { level: 0, what: 'POST /messages/render', routes: ['POST /messages/render'], test: T('markdown', 'markdown - the Python client: render_message') },
  // Level 1 (Zulip 3.0).
  { level: 1, what: 'PATCH /messages/{message_id}: stream_id moves messages to another channel', done: true, test: T('message_edit', 'message edit - moving to another channel moves the rows; members may, guests may not') },
  { level: 1, what: 'prev_stream (and stream) in edit_history and in GET /messages/{message_id}/history snapshots', done: true, test: T('message_edit', 'message edit - moving to another channel moves the rows; members may, guests may not') },
  { level: 1, what: 'zulip_feature_level in GET /server_settings and POST /register', done: true, test: T('http', 'http - health, readiness and server settings need no credentials') },
  { level: 1, what: 'bot_owner_id on bot user objects (GET /users)', done: true, test: T('users', 'users - GET /users lists members with their roles') },
  { level: 1, what: 'GET /users/{user_id}', routes: ['GET /users/{user_id}'], test: T('people-users', 'people users - GET /users/me, /users/{id} and /users/{email} as every role') },
  { level: 1, what: 'GET /messages: string anchors (newest, oldest, first_unread)', done: true, test: T('messages', 'messages - anchors: oldest, first_unread, include_anchor and found_* flags') },
  { level: 1, what: 'topic_links on message objects', done: true, test: T('linkifiers', 'linkifiers - messages and topics are rendered with them (GET /messages and events)') },
  { level: 1, what: 'stream_post_policy on channel objects (derived from can_send_message_group, its replacement at FL 333)', done: true, test: T('streams', 'streams - PATCH /streams/{id} changes every property, with its rules') },
  // GET /api/v1/user_uploads/... answers 404 for a path naming no file, so the route check of features.test.ts does not fit.
  { level: 1, what: 'temporary upload URLs: GET /user_uploads/{realm_id}/{dir}/{name}/{filename} gives /user_uploads/temporary/...', done: true, test: T('uploads', 'uploads - a temporary URL stops working when it expires') },
  { level: 1, what: "email_address_visibility 'nobody' (a user setting since FL 163): made-up addresses in email, sender_email, presence and lookups; delivery_email only to the roles allowed", done: true, test: T('email-visibility', 'email visibility - who sees the real address, for every setting and role (FL 1)') },
  { level: 1, what: 'private_message_policy (direct_message_permission_group and direct_message_initiator_group since FL 270)', done: true, test: T('messages', 'messages - direct_message_permission_group and direct_message_initiator_group decide who may send direct messages (FL 1), for every role') },
  { level: 1, what: 'muted_topics as [channel, topic, date_muted]', done: true, test: T('topics', 'topics - user_topics: mute, follow, inherit; events and snapshot plus events') },
  { level: 1, what: 'gitlab in GET /server_settings authentication_methods (false: only email and password sign-in here)', done: true, test: T('features', 'features - GET /server_settings names every sign-in backend of Zulip, gitlab among them (FL 1)') },
  { level: 1, what: "video_chat_provider with a 'none' option (PATCH /realm, realm_video_chat_provider, realm_available_video_chat_providers)", done: true, test: T('realm', 'realm - video_chat_provider: none or Jitsi Meet, set by administrators; the OAuth provider only where configured (FL 1)') },
  // Levels 2-27 (Zulip 3.0, 3.1).
  { level: 2, what: 'POST /messages/{message_id}/reactions: reaction_type optional (custom emoji, then Unicode, guessed by name); user_id on reaction objects', done: true, test: T('realm_emoji', 'realm emoji - reactions and :name: in messages use them') },
  { level: 3, what: 'zulip_version and zulip_feature_level always in POST /register', done: true, test: T('register', 'register - the realm bundle: organization properties and what the server does') },
  { level: 3, what: 'presence_enabled user setting', done: true, test: T('people-status', 'people status - away is the negation of presence_enabled (FL 148)') },
  { level: 4, what: 'server fields in POST /register: jitsi_server_url, development_environment, server_generation, password_min_length, password_min_guesses, max_file_upload_size_mib, max_avatar_file_size_mib, server_inline_*_preview, server_*_changes_disabled', done: true, test: T('features', 'features - the server fields of POST /register (FL 4 and 72): limits, server_generation, Jitsi') },
  { level: 5, what: 'realm_bot events carry owner_id (removed at FL 474: realm_user events carry bot_owner_id)', done: true, test: T('system-bots', 'system bots - snapshot + realm_bot and realm events == a fresh register (owner of the bot, administrator, bystander)') },
  { level: 6, what: 'avatar_version on user objects and in realm_user avatar events', done: true, test: T('email-visibility', 'email visibility - events: delivery_email to who gains or loses sight, new_email and the avatar to all; snapshot plus events equals a fresh register') },
  { level: 7, what: 'PATCH /users/{user_id}: role (is_admin and is_guest removed); realm_user role events', done: true, test: T('people-users', 'people users - role changes: only owners touch the owner role, never the last owner') },
  { level: 7, what: 'custom emoji author_id', done: true, test: T('realm_emoji', 'realm emoji - add, list, image, deactivate; snapshot plus events, both formats') },
  { level: 8, what: 'is_owner on user objects', done: true, test: T('users', 'users - GET /users lists members with their roles') },
  { level: 8, what: 'time mentions in Markdown', done: true, test: T('markdown', 'markdown - channel and topic links, time, emoji, math') },
  { level: 9, what: 'principals by user ID on subscribe and unsubscribe', done: true, test: T('subscriptions', 'subscriptions - principals by ID and by email; bad principals are 400') },
  { level: 9, what: 'PATCH /messages/{message_id}: send_notification_to_old_thread and send_notification_to_new_thread', done: true, test: T('message_edit', 'message edit - Notification Bot notices of moves: send_notification_to_old_thread and _new_thread (FL 9, 152)') },
  { level: 10, what: 'GET /users/me: avatar_version, is_guest, is_active, timezone, date_joined; no client_id or short_name', done: true, test: T('features', 'features - details of early levels: GET /users/me (FL 10), update_message events (FL 114), client_gravatar by default (FL 92)') },
  { level: 11, what: 'realm_community_topic_editing_limit_seconds (replaced by move_messages_within_stream_limit_seconds at FL 162, removed at 183) and is_owner in POST /register; typing recipients by ID only', done: true, test: T('realm', 'realm - the topic-editing limit is move_messages_within_stream_limit_seconds, 3 days by default; is_owner in the register; typing to user IDs only (FL 11, 38)') },
  { level: 12, what: 'GET /users/{user_id}/subscriptions/{stream_id}', routes: ['GET /users/{user_id}/subscriptions/{stream_id}'], test: T('subscriptions', "subscriptions - GET /users/{user_id}/subscriptions/{stream_id}: is_subscribed for every role, with Zulip's errors") },
  { level: 13, what: 'bulk_message_deletion: delete_message events with message_ids', done: true, test: T('message_edit', 'message delete - sender, administrators and the channel permission; events for both capabilities') },
  { level: 14, what: 'is_old_stream left out of channel objects', done: true, test: T('openapi', 'openapi - replies validate against the document') },
  { level: 15, what: 'spoilers in Markdown', done: true, test: T('markdown', 'markdown - code blocks with a language, quotes, spoilers; HTML is escaped') },
  { level: 16, what: 'no pointer in GET /users/me; time mentions as <time>', done: true, test: T('markdown', 'markdown - channel and topic links, time, emoji, math') },
  { level: 17, what: 'message_retention_days on channel objects, subscribe and PATCH /streams/{stream_id}', done: true, test: T('streams', 'streams - PATCH /streams/{id} changes every property, with its rules') },
  { level: 18, what: 'user_avatar_url_field_optional client capability', done: true, test: T('features', 'features - parameters accepted without effect are reported in ignored_parameters_unsupported') },
  { level: 19, what: 'peer_add and peer_remove name the channel by ID', done: true, test: T('events', 'events - subscription and stream events, checked against their schemas') },
  { level: 20, what: 'inviting users as organization owners', done: true, test: T('invites', 'invites - who may send email invitations, and for which roles') },
  { level: 21, what: 'color_scheme display setting (night_mode replaced)', done: true, test: T('people-settings', 'people settings - values are checked against each setting') },
  // invited_by_user_id and -1: uploads 'attachments - the rest of FL 22: ...'.
  { level: 22, what: 'GET /attachments date_sent (replaced by message_ids at FL 472); GET /invites invited_by_user_id; unlimited realm_message_retention_days as -1', routes: ['GET /attachments', 'DELETE /attachments/{attachment_id}'], test: T('uploads', 'attachments - GET /attachments with message_ids, DELETE /attachments/{id}, attachment events with upload_space_used, by role') },
  { level: 23, what: 'the pointer routes removed', done: true, test: T('http', 'http - unknown paths are 404 and wrong methods 405, in the envelope') },
  { level: 24, what: '!avatar() and !gravatar() Markdown removed', done: true, test: T('markdown', 'markdown - !avatar() and !gravatar() are plain text (FL 24)') },
  { level: 25, what: 'Zulip 3.0 release', noChange: true, done: true },
  { level: 26, what: 'no sender_short_name, no short_name in display_recipient', done: true, test: T('openapi', 'openapi - replies validate against the document') },
  { level: 27, what: 'no short_name in display_recipient (POST /users)', done: true, test: T('openapi', 'openapi - replies validate against the document') },
  { level: 28, what: 'reserved for 3.x', noChange: true, done: true },
  { level: 29, what: 'reserved for 3.x', noChange: true, done: true },
  // Levels 30-65 (Zulip 4.0).
  { level: 30, what: 'date_created on channels; POST /users and POST /bots return the new user_id', done: true, test: T('users', 'users - POST /users: owners with can_create_users; others are refused') },
  { level: 31, what: 'role on subscription objects (removed again at FL 133)', done: true, test: T('openapi', 'openapi - replies validate against the document') },
  { level: 32, what: 'op on update_message_flags events', done: true, test: T('message_flags', 'message flags - star and unstar by ID, with the event and starred_messages') },
  { level: 33, what: 'data-code-language on code blocks', done: true, test: T('markdown', 'markdown - code blocks with a language, quotes, spoilers; HTML is escaped') },
  { level: 34, what: 'wildcard_mention_policy (can_mention_many_users_group since FL 352)', done: true, test: T('markdown', 'markdown - a topic wildcard in a topic with many participants needs permission') },
  { level: 35, what: 'peer_add and peer_remove with user_ids and stream_ids', done: true, test: T('events', 'events - subscription and stream events, checked against their schemas') },
  { level: 36, what: 'POST /users needs can_create_users', routes: ['POST /users'], test: T('users', 'users - POST /users: owners with can_create_users; others are refused') },
  { level: 36, what: 'code in rate-limit errors', done: true, test: T('rate_limits', 'rate limits - a user over the default 200 requests a minute gets 429 RATE_LIMIT_HIT, other users do not') },
  { level: 37, what: 'subscribers always given with include_subscribers', done: true, test: T('subscriptions', 'subscriptions - include_subscribers gives every channel its subscribers, empty where the user may not see them (FL 37)') },
  { level: 38, what: 'realm_community_topic_editing_limit_seconds of 3 days (its replacement move_messages_within_stream_limit_seconds defaults to 3 days)', done: true, test: T('realm', 'realm - the topic-editing limit is move_messages_within_stream_limit_seconds, 3 days by default; is_owner in the register; typing to user IDs only (FL 11, 38)') },
  { level: 39, what: 'GET /users/{email}', done: true, test: T('people-users', 'people users - GET /users/me, /users/{id} and /users/{email} as every role') },
  { level: 40, what: 'no email in subscription update events', done: true, test: T('events', 'events - subscription and stream events, checked against their schemas') },
  { level: 41, what: 'no name in subscription update events', done: true, test: T('events', 'events - subscription and stream events, checked against their schemas') },
  { level: 42, what: 'default_view setting (web_home_view since)', done: true, test: T('people-settings', 'people settings - values are checked against each setting') },
  { level: 43, what: 'GET /users/{user_id_or_email}/presence by user ID', done: true, test: T('typing_presence', "presence - a ping answers with everyone's presence; GET /realm/presence and /users/{id}/presence") },
  { level: 44, what: 'old_unreads_missing in unread_msgs', done: true, test: T('messages', 'messages - register reports unread_msgs by channel topic, direct message and mention') },
  { level: 45, what: 'no op in custom_profile_fields events', done: true, test: T('people-profile-fields', 'people profile fields - events: the field list, and realm_user updates for values') },
  { level: 46, what: 'topic_links as objects', done: true, test: T('linkifiers', 'linkifiers - messages and topics are rendered with them (GET /messages and events)') },
  { level: 47, what: 'giphy_api_key in POST /register', done: true, test: T('register', 'register - fetch_event_types selects keys as Zulip does') },
  { level: 48, what: 'muted users: POST and DELETE /users/me/muted_users/{muted_user_id}, muted_users events', routes: ['POST /users/me/muted_users/{muted_user_id}', 'DELETE /users/me/muted_users/{muted_user_id}'], test: T('personal', "muted users - mute, unmute, events; a muted user's new messages arrive read") },
  { level: 49, what: 'code playgrounds: POST /realm/playgrounds, DELETE /realm/playgrounds/{playground_id} (administrators), realm_playgrounds in POST /register and its event (url_template since FL 196; url_prefix taken as <prefix>{code})', routes: ['POST /realm/playgrounds', 'DELETE /realm/playgrounds/{playground_id}'], test: T('playgrounds', 'playgrounds - every user gets the list and its events; snapshot plus events equals a fresh register') },
  { level: 50, what: 'invite_to_realm_policy (can_invite_users_group since)', done: true, test: T('invites', 'invites - who may send email invitations, and for which roles') },
  { level: 51, what: 'can_invite_others_to_realm in POST /register', done: true, test: T('register', 'register - the own user: avatar URL, medium avatar and permissions by role') },
  { level: 52, what: 'PATCH /realm: name, description, default_language and default_code_block_language as plain strings; fenced code naming no language takes the default', done: true, test: T('realm', 'realm - default_code_block_language: a fenced block that names no language takes it (FL 52)') },
  { level: 53, what: 'max_topic_length, max_message_length, max_stream_name_length, max_stream_description_length in POST /register', done: true, test: T('events', 'events - register snapshot: always-present keys, limits and fetch_event_types filtering') },
  { level: 54, what: 'GET /realm/linkifiers and realm_linkifiers events', routes: ['GET /realm/linkifiers'], test: T('linkifiers', 'linkifiers - realm_linkifiers events only for clients with linkifier_url_template; snapshot plus events') },
  { level: 55, what: 'giphy_rating (PATCH /realm, realm_giphy_rating, giphy_rating_options); no GIPHY API key here (giphy_api_key is empty), as a Zulip server without one', done: true, test: T('realm', 'realm - settings of FL 52 to 246 by role, with their register keys and events: default_code_block_language, giphy_rating, org_type, the communities directory, the signup announcements channel, unique names, the Jitsi server') },
  { level: 56, what: 'move_messages_between_streams_policy (can_move_messages_between_channels_group since FL 310)', done: true, test: T('message_edit', 'message edit - moving to another channel moves the rows; members may, guests may not') },
  { level: 57, what: 'PATCH /realm/filters/{filter_id}', routes: ['PATCH /realm/filters/{filter_id}'], test: T('linkifiers', 'linkifiers - update, delete and reorder, with their errors') },
  { level: 58, what: 'typing notifications in channels (stream_typing_notifications)', done: true, test: T('typing_presence', 'typing - channel notices only for queues with stream_typing_notifications, not to the sender') },
  { level: 59, what: 'role on user objects and realm_user events', done: true, test: T('users', 'users - GET /users lists members with their roles') },
  { level: 59, what: 'zulip_version and zulip_feature_level in restart events (sent once to each event queue a process of another release comes to serve: lib/version.ts)', done: true, test: T('durability', 'durability - a restart under another release: kept event queues get one restart event with its version and level (FL 59, 240), new ones none') },
  { level: 60, what: 'the moderator role (is_moderator, role 300)', done: true, test: T('people-users', 'people users - role changes: only owners touch the owner role, never the last owner') },
  { level: 61, what: 'inviting users as moderators', done: true, test: T('invites', 'invites - who may send email invitations, and for which roles') },
  { level: 62, what: "wildcard_mention_policy 'moderators only' (a group since FL 352)", done: true, test: T('markdown', 'markdown - a topic wildcard in a topic with many participants needs permission') },
  { level: 63, what: 'plain strings on PATCH /settings/notifications, /settings/display, POST /users/me/tutorial_status, POST /realm/domains, PATCH /default_stream_groups/{id}, POST /users/me/hotspots (tutorial_status and hotspots replaced by POST /users/me/onboarding_steps at FL 233); default channel groups served with their default_stream_groups event and register key', routes: ['POST /default_stream_groups/create', 'PATCH /default_stream_groups/{group_id}', 'PATCH /default_stream_groups/{group_id}/streams', 'DELETE /default_stream_groups/{group_id}'], test: T('streams', "streams - default channel groups: create, change, channels and delete by role, with Zulip's errors (FL 63)") },
  { level: 64, what: 'plain strings on PATCH /streams/{stream_id} and PATCH /settings/display', done: true, test: T('http', 'http - strings are kept as sent (only a channel name may come JSON-encoded); a message with a NUL is refused') },
  { level: 65, what: 'Zulip 4.0 release', noChange: true, done: true },
  { level: 66, what: 'reserved for 4.x', noChange: true, done: true },
  { level: 67, what: 'reserved for 4.x', noChange: true, done: true },
  { level: 68, what: 'reserved for 4.x', noChange: true, done: true },
  { level: 69, what: 'reserved for 4.x', noChange: true, done: true },
  // Levels 70-122 (Zulip 5.0).
  { level: 70, what: 'server_timestamp with presences in POST /register', done: true, test: T('typing_presence', 'presence - snapshot plus presence events equals a fresh register, slim and legacy') },
  { level: 71, what: 'is_web_public on stream events changing invite_only', done: true, test: T('streams', 'streams - stream update events changing invite_only carry is_web_public and history_public_to_subscribers (FL 71)') },
  { level: 72, what: 'max_icon_file_size_mib, realm_upload_quota_mib, max_logo_file_size_mib in POST /register', done: true, test: T('features', 'features - the server fields of POST /register (FL 4 and 72): limits, server_generation, Jitsi') },
  { level: 73, what: 'is_billing_admin on user objects: Zulip removed it at FL 363 for can_manage_billing_group (done there), so user objects have none', done: true, test: T('organizations', 'cli - billing: user objects have no is_billing_admin and `users billing-admin` is retired; can_manage_billing_group is reported, not changed, as there is no billing (FL 73, 363)') },
  { level: 74, what: 'server_needs_upgrade and event_queue_longpoll_timeout_seconds in POST /register', done: true, test: T('register', 'register - the realm bundle: organization properties and what the server does') },
  { level: 75, what: 'edit_topic_policy (can_move_messages_between_topics_group since FL 310)', done: true, test: T('register', 'register - the editing settings it reports are the ones enforced') },
  { level: 76, what: '401 for authentication errors and for deactivated users and organizations', done: true, test: T('organizations', 'organizations - deactivated: clients told, every request REALM_DEACTIVATED, nothing deleted; reactivated: all back') },
  { level: 77, what: 'no recipient_id and sender_id on direct delete_message events', done: true, test: T('message_edit', 'message delete - sender, administrators and the channel permission; events for both capabilities') },
  { level: 78, what: 'PATCH /settings: ignored_parameters_unsupported', done: true, test: T('http', 'http - unsupported parameters are listed in ignored_parameters_unsupported') },
  { level: 79, what: 'subscribers as user IDs (GET /users/me/subscriptions, GET /streams/{stream_id}/members)', done: true, test: T('streams', 'streams - GET /streams/{id}, /get_stream_id and members by role') },
  { level: 80, what: 'PATCH /settings/display and /settings/notifications as aliases of PATCH /settings', routes: ['PATCH /settings', 'PATCH /settings/display', 'PATCH /settings/notifications'], test: T('people-settings', 'people settings - PATCH /settings as every role; bots are refused') },
  { level: 81, what: 'enter_sends through PATCH /settings', done: true, test: T('people-settings', 'people settings - values are checked against each setting') },
  { level: 82, what: 'email_notifications_batching_period_seconds setting', done: true, test: T('people-settings', 'people settings - values are checked against each setting') },
  { level: 83, what: 'is_system_bot in cross_realm_bots', done: true, test: T('system-bots', 'system bots - in cross_realm_bots for every role, never in realm_users; GET /users/{id} names them') },
  { level: 84, what: 'enter_sends with update_display_settings (those events replaced by user_settings events at FL 439)', done: true, test: T('people-settings', 'people settings - clients without user_settings_object get the legacy top-level settings, kept by user_settings events: no legacy events (FL 439)') },
  { level: 85, what: 'add_custom_emoji_policy (can_add_custom_emoji_group since)', done: true, test: T('realm_emoji', 'realm emoji - permissions per role and errors') },
  { level: 86, what: 'status emoji', routes: ['POST /users/me/status'], test: T('people-status', 'people status - only what is passed changes; emoji by name, code or both') },
  { level: 87, what: 'drafts: GET, POST /drafts, PATCH, DELETE /drafts/{draft_id}; enable_drafts_synchronization', routes: ['GET /drafts', 'POST /drafts', 'PATCH /drafts/{draft_id}', 'DELETE /drafts/{draft_id}'], test: T('personal', 'drafts - create, list, edit, delete, with events; errors') },
  { level: 88, what: 'zulip_merge_base', done: true, test: T('register', 'register - the realm bundle: organization properties and what the server does') },
  { level: 89, what: 'user_settings events and object; user_settings_object capability', done: true, test: T('people-settings', 'people settings - user_settings events, to the user only; a time zone also as realm_user') },
  { level: 90, what: 'no sender_ids in unread_msgs streams', done: true, test: T('messages', 'messages - register reports unread_msgs by channel topic, direct message and mention') },
  { level: 91, what: "message_retention_days 'unlimited'", done: true, test: T('realm', 'realm - settings show in register and GET /server_settings') },
  { level: 92, what: 'client_gravatar defaults to true', done: true, test: T('features', 'features - details of early levels: GET /users/me (FL 10), update_message events (FL 114), client_gravatar by default (FL 92)') },
  { level: 93, what: 'is_system_group on user groups', done: true, test: T('people-groups', 'people groups - the system groups follow roles') },
  { level: 94, what: 'demo_organization_scheduled_deletion_date in the register, for demo organizations only (created with `parley org create --demo`: 30 days, as Zulip)', done: true, test: T('organizations', 'organizations - a demo organization: demo_organization_scheduled_deletion_date in the register; its owner makes it permanent under a new subdomain with PATCH /realm string_id, and its host follows (FL 94, 104)') },
  { level: 95, what: 'realm_user_settings_defaults and its event', done: true, test: T('people-settings', 'people settings - organization defaults: administrators only; new users start from them') },
  { level: 96, what: 'PATCH /realm/user_settings_defaults; invite expiry (in minutes since FL 126)', routes: ['PATCH /realm/user_settings_defaults'], test: T('people-settings', 'people settings - organization defaults: administrators only; new users start from them') },
  { level: 97, what: 'still_url on custom emoji', done: true, test: T('realm_emoji', 'realm emoji - add, list, image, deactivate; snapshot plus events, both formats') },
  { level: 98, what: 'is_web_public on subscribe and PATCH /streams/{stream_id} (refused while web-public channels are off)', done: true, test: T('subscriptions', 'subscriptions - invalid input gets clear 400s') },
  { level: 99, what: 'twenty_four_hour_time in the organization defaults', done: true, test: T('people-settings', 'people settings - organization defaults: administrators only; new users start from them') },
  { level: 100, what: "message_content_delete_limit_seconds null and 'unlimited'", done: true, test: T('realm', 'realm - invalid settings are 400s and change nothing') },
  { level: 101, what: 'delete_own_message_policy (can_delete_own_message_group since FL 407)', done: true, test: T('message_edit', 'message delete - sender, administrators and the channel permission; events for both capabilities') },
  { level: 102, what: 'create_private_stream_policy and create_public_stream_policy (groups since)', done: true, test: T('register', 'register - permission changes and a role change: snapshot plus events equals a fresh register') },
  { level: 103, what: 'create_web_public_stream_policy and can_create_web_public_streams', done: true, test: T('register', 'register - the own user: avatar URL, medium avatar and permissions by role') },
  { level: 104, what: 'PATCH /realm: string_id, a demo organization made permanent under a new subdomain by its owner; the directory moves it to the new host', done: true, test: T('organizations', 'organizations - a demo organization: demo_organization_scheduled_deletion_date in the register; its owner makes it permanent under a new subdomain with PATCH /realm string_id, and its host follows (FL 94, 104)') },
  { level: 105, what: 'send_private_typing_notifications, send_stream_typing_notifications: POST /typing refuses a notice the setting turns off', done: true, test: T('typing_presence', 'typing - send_private_typing_notifications and send_stream_typing_notifications off refuse notices, for every role (FL 105)') },
  { level: 105, what: 'send_read_receipts: a user who turns it off is left out of read receipts', done: true, test: T('message_flags', 'message flags - GET /messages/{message_id}/read_receipts: who read it, every role, the realm setting, send_read_receipts (FL 105, 137)') },
  { level: 106, what: 'PATCH /users/{user_id}: full_name as a plain string', done: true, test: T('people-users', 'people users - full name and email changes by administrators') },
  { level: 107, what: 'escape_navigates_to_default_view setting (renamed web_escape_navigates_to_home_view at FL 219: the replacement, with its organization default)', done: true, test: T('people-settings', 'people settings - web_escape_navigates_to_home_view (escape_navigates_to_default_view of FL 107, renamed at 219): set, defaulted, announced (FL 107)') },
  { level: 108, what: "user_id in the mobile login flow's zulip:// redirect (GET /login/?mobile_flow_otp=..., POST /accounts/login/: email and password, the only sign-in backend here)", done: true, test: T('people-api-keys', 'people api keys - the mobile login flow: /login/ with mobile_flow_otp redirects to zulip:// with the key encrypted by the pad, user_id included (FL 108)') },
  { level: 109, what: 'enable_spectator_access realm setting', done: true, test: T('realm', 'realm - settings show in register and GET /server_settings') },
  { level: 110, what: 'server_web_public_streams_enabled in POST /register', done: true, test: T('people-guests', 'people guests - spectators: no organization here has web-public access, so GET /users without credentials is refused') },
  { level: 111, what: 'POST /users/me/subscriptions/properties: ignored_parameters_unsupported, no subscription_data', done: true, test: T('streams', 'streams - POST /users/me/subscriptions/properties sets personal settings') },
  { level: 112, what: 'stream_id on update_message events of channel messages', done: true, test: T('message_edit', 'message edit - snapshot plus update and delete events equals a fresh register') },
  { level: 113, what: 'still_url always present (null when not animated)', done: true, test: T('realm_emoji', 'realm emoji - add, list, image, deactivate; snapshot plus events, both formats') },
  { level: 114, what: 'rendering_only, edit_timestamp and user_id on update_message events', done: true, test: T('features', 'features - details of early levels: GET /users/me (FL 10), update_message events (FL 114), client_gravatar by default (FL 92)') },
  { level: 115, what: 'stream_id in push notifications', done: true, test: T('push', 'push - channel messages: a mention is pushed with the channel and topic, a plain message is not; settings apply') },
  { level: 116, what: 'realm_web_public_access_enabled in GET /server_settings', done: true, test: T('realm', 'realm - settings show in register and GET /server_settings') },
  { level: 117, what: 'invitations that never expire (null expiry)', done: true, test: T('invites', 'invites - invite_expires_in_minutes null: invitations and links that never expire (FL 117)') },
  { level: 118, what: 'edit_history with prev_topic/topic and prev_stream/stream; stream in history snapshots', done: true, test: T('message_edit', 'message edit - topic moves with propagate_mode one, later and all') },
  { level: 119, what: 'other_user_id in unread_msgs pms', done: true, test: T('messages', 'messages - register reports unread_msgs by channel topic, direct message and mention') },
  { level: 120, what: 'GET /messages/{message_id} gives the full message', routes: ['GET /messages/{message_id}'], test: T('message_reads', 'message reads - GET /messages/{id} for every role, raw_content and flags') },
  { level: 121, what: 'message_details on update_message_flags events removing read', done: true, test: T('message_flags', 'message flags - read and unread by ID; the event for unread carries message_details') },
  { level: 122, what: 'Zulip 5.0 release', noChange: true, done: true },
  { level: 123, what: 'reserved for 5.x', noChange: true, done: true },
  { level: 124, what: 'reserved for 5.x', noChange: true, done: true },
  // Levels 125-148 (Zulip 6.0).
  { level: 125, what: 'display_emoji_reaction_users setting', done: true, test: T('people-settings', 'people settings - values are checked against each setting') },
  { level: 126, what: 'invite_expires_in_minutes', routes: ['POST /invites', 'POST /invites/multiuse', 'GET /invites', 'DELETE /invites/{invite_id}', 'DELETE /invites/multiuse/{invite_id}', 'POST /invites/{invite_id}/resend'], test: T('invites', 'invites - listing, revoking and resending by role') },
  { level: 127, what: 'user group subgroups: POST /user_groups/{id}/subgroups, GET .../members, .../members/{user_id}, .../subgroups; add_subgroups and remove_subgroups events', routes: ['POST /user_groups/{user_group_id}/subgroups', 'GET /user_groups/{user_group_id}/members', 'GET /user_groups/{user_group_id}/members/{user_id}', 'GET /user_groups/{user_group_id}/subgroups'], test: T('people-groups', 'people groups - members and subgroups') },
  { level: 128, what: 'org_type realm setting', done: true, test: T('realm', 'realm - settings of FL 52 to 246 by role, with their register keys and events: default_code_block_language, giphy_rating, org_type, the communities directory, the signup announcements channel, unique names, the Jitsi server') },
  { level: 129, what: 'want_advertise_in_communities_directory realm setting (kept and given to clients; this server lists no directory)', done: true, test: T('realm', 'realm - settings of FL 52 to 246 by role, with their register keys and events: default_code_block_language, giphy_rating, org_type, the communities directory, the signup announcements channel, unique names, the Jitsi server') },
  { level: 130, what: "PATCH /bots/{bot_id}: the bot's role (administrators; the owner role by owners), with its name, owner and service", routes: ['PATCH /bots/{bot_id}'], test: T('bot-update', 'bot update - the role (FL 130): administrators only, the owner role by owners only') },
  { level: 131, what: 'direct_subgroup_ids on user groups', done: true, test: T('people-groups', 'people groups - members and subgroups') },
  { level: 132, what: 'GET /streams/{stream_id}', routes: ['GET /streams/{stream_id}'], test: T('streams', 'streams - GET /streams/{id}, /get_stream_id and members by role') },
  { level: 133, what: 'no role on subscription objects', done: true, test: T('openapi', 'openapi - replies validate against the document') },
  { level: 134, what: 'user_topic events and user_topics in POST /register', done: true, test: T('topics', 'topics - user_topics: mute, follow, inherit; events and snapshot plus events') },
  { level: 135, what: 'DELETE /users/{user_id}: deactivation_notification_comment', done: true, test: T('people-users', 'people users - deactivation: who may, and the key and queues end at once') },
  { level: 136, what: 'PATCH /streams/{stream_id}: history_public_to_subscribers alone; a public channel with protected history refused', done: true, test: T('streams', 'streams - PATCH /streams/{id} changes every property, with its rules') },
  { level: 137, what: 'GET /messages/{message_id}/read_receipts; enable_read_receipts realm setting', routes: ['GET /messages/{message_id}/read_receipts'], test: T('message_flags', 'message flags - GET /messages/{message_id}/read_receipts: who read it, every role, the realm setting, send_read_receipts (FL 105, 137)') },
  { level: 138, what: "message_content_edit_limit_seconds null and 'unlimited'", done: true, test: T('realm', 'realm - invalid settings are 400s and change nothing') },
  { level: 139, what: 'subscription update events for is_muted and in_home_view', done: true, test: T('streams', 'streams - POST /users/me/subscriptions/properties sets personal settings') },
  { level: 140, what: 'server_emoji_data_url in POST /register', done: true, test: T('register', 'register - server_emoji_data_url: the emoji names, without credentials') },
  { level: 141, what: 'user_list_style setting', done: true, test: T('people-settings', 'people settings - values are checked against each setting') },
  { level: 142, what: 'can_remove_subscribers_group on channel and subscription objects', done: true, test: T('streams', 'streams - DELETE /users/me/subscriptions: leaving, and removing others with permission') },
  { level: 143, what: 'owner-only realm settings (emails_restricted_to_domains, invite_required, waiting_period_threshold, disallow_disposable_email_addresses, which refuses disposable addresses as Zulip does on POST /users, POST /invites and sign-up links) and realm domains (POST, PATCH, DELETE by owners)', routes: ['GET /realm/domains', 'POST /realm/domains', 'PATCH /realm/domains/{domain}', 'DELETE /realm/domains/{domain}'], test: T('realm', 'realm - disallow_disposable_email_addresses: owners only, on by default; disposable and out-of-domain addresses refused by POST /users, POST /invites and sign-up links, as Zulip does (FL 143)') },
  { level: 144, what: 'read receipts leave out muted users', done: true, test: T('message_flags', 'message flags - read receipts leave out users who muted the requester and users the requester muted (FL 144)') },
  { level: 145, what: 'DELETE /users/me/subscriptions: members remove bots they own', done: true, test: T('bot-update', 'bot update - a member removes a bot they own from a channel; another member may not (FL 145)') },
  { level: 146, what: 'display_in_profile_summary on custom profile fields', done: true, test: T('people-profile-fields', 'people profile fields - at most two in the profile summary') },
  { level: 147, what: 'POST /streams/{stream_id}/delete_topic deletes in batches', routes: ['POST /streams/{stream_id}/delete_topic'], test: T('message_edit', 'message delete - POST /streams/{stream_id}/delete_topic: administrators only, in batches, complete (FL 147, 154, 211)') },
  { level: 148, what: 'away replaced by presence_enabled', routes: ['POST /users/me/status', 'PATCH /settings', 'GET /users/{user_id}/status'], test: T('people-status', 'people status - away is the negation of presence_enabled (FL 148)') },
];

/**
 * Levels 149 to 277 of Zulip's API changelog (Zulip 6.0 to 9.0; 277 is the
 * level below which zulip-flutter, the official mobile app, refuses a server).
 */
const CHANGELOG_149_277: readonly Feature[] = [
  // Zulip lets spectators register only where web-public access is on (the server's WEB_PUBLIC_STREAMS_ENABLED and a
  // web-public channel). No organization here has it, so an unauthenticated register is 401, as on such a Zulip server,
  // and the parameters FL 149 checks for spectators are never reached.
  { level: 149, what: 'POST /register without credentials (spectators): client_gravatar and include_subscribers checked; refused where web-public access is off', done: true, test: T('changelog', 'changelog - POST /register without credentials is 401, as on a server without web-public access (FL 149)') },
  { level: 150, what: 'separate realm update events for allow_message_editing, message_content_edit_limit_seconds and edit_topic_policy', done: true, test: T('realm', 'realm - snapshot plus realm events equals a fresh register') },
  { level: 150, what: 'PATCH /realm: the changed settings (only those) in the response', done: true, test: T('changelog', 'changelog - PATCH /realm answers with the settings that changed, and only those (FL 150)') },
  { level: 151, what: 'pronouns custom profile fields (type 8)', routes: ['POST /realm/profile_fields'], test: T('people-profile-fields', 'people profile fields - creating, updating, reordering and deleting') },
  { level: 152, what: 'PATCH /messages/{message_id}: send_notification_to_old_thread (default false) and _new_thread (default true) respected for topic moves', done: true, test: T('message_edit', 'message edit - Notification Bot notices of moves: send_notification_to_old_thread and _new_thread (FL 9, 152)') },
  { level: 153, what: 'POST /mark_all_as_read in batches (partially_completed, replaced by complete at FL 211)', done: true, test: T('message_flags', 'message flags - mark_topic_as_read, mark_stream_as_read and mark_all_as_read') },
  { level: 154, what: 'POST /streams/{stream_id}/delete_topic: partially_completed (complete since FL 211)', routes: ['POST /streams/{stream_id}/delete_topic'], test: T('message_edit', 'message delete - POST /streams/{stream_id}/delete_topic: administrators only, in batches, complete (FL 147, 154, 211)') },
  { level: 155, what: 'GET /messages include_anchor', done: true, test: T('messages', 'messages - anchors: oldest, first_unread, include_anchor and found_* flags') },
  { level: 155, what: 'update_message_flags events list only messages whose flag changed', done: true, test: T('message_flags', 'message flags - star and unstar by ID, with the event and starred_messages') },
  { level: 155, what: 'POST /messages/flags/narrow', routes: ['POST /messages/flags/narrow'], test: T('message_flags', 'message flags - flags/narrow: counts, range, anchors and ignored channels') },
  { level: 156, what: 'Zulip 6.0 release', noChange: true, done: true },
  { level: 157, what: 'POST /invites: an empty list of channels', done: true, test: T('invites', 'invites - who may send email invitations, and for which roles') },
  { level: 158, what: 'reserved for 6.x', noChange: true, done: true },
  { level: 159, what: "moving messages does not depend on allow_message_editing; 'nobody' may move (can_move_messages_* groups since FL 310/314); a sender's topic edits are time-limited", done: true, test: T('changelog', 'changelog - moving a topic does not depend on allow_message_editing, and nobody may be allowed to move (FL 159)') },
  { level: 160, what: 'POST /jwt/fetch_api_key', routes: ['POST /jwt/fetch_api_key'], test: T('jwt', 'jwt - an HS256 or RS256 token naming a user gives their API key') },
  { level: 161, what: 'can_remove_subscribers_group on subscribe and PATCH /streams/{stream_id}; members of it remove others', done: true, test: T('streams', 'streams - DELETE /users/me/subscriptions: leaving, and removing others with permission') },
  { level: 162, what: 'move_messages_within_stream_limit_seconds and move_messages_between_streams_limit_seconds realm settings, enforced on moves', done: true, test: T('changelog', 'changelog - organization settings: move time limits (FL 162), the guest indicator (FL 216), the update announcements channel (FL 242)') },
  { level: 163, what: 'email_address_visibility user setting: delivery_email always present, null without access; its events to who gains or loses sight', done: true, test: T('email-visibility', 'email visibility - who sees the real address, for every setting and role (FL 1)') },
  { level: 164, what: 'server_presence_ping_interval_seconds and server_presence_offline_threshold_seconds in POST /register', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 165, what: 'PATCH /user_groups/{user_group_id}: name and description optional', routes: ['PATCH /user_groups/{user_group_id}'], test: T('people-groups', 'people groups - PATCH: who may, and the {new, old} settings') },
  { level: 166, what: 'POST /messages: realm_str removed (reported as ignored)', done: true, test: T('changelog', 'changelog - parameters Zulip removed are reported as ignored (FL 166, 184)') },
  { level: 167, what: 'ignored_parameters_unsupported on every endpoint', done: true, test: T('http', 'http - unsupported parameters are listed in ignored_parameters_unsupported') },
  { level: 168, what: 'realm_name_in_email_notifications_policy user setting (replaces realm_name_in_notifications)', done: true, test: T('changelog', 'changelog - personal settings of levels 149-277 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 169, what: 'PATCH /users/me/subscriptions/muted_topics: muting a muted topic, or unmuting one not muted, succeeds', routes: ['PATCH /users/me/subscriptions/muted_topics'], test: T('changelog', 'changelog - PATCH /users/me/subscriptions/muted_topics mutes and unmutes, twice over without an error (FL 169)') },
  { level: 170, what: 'POST /user_topics; the unmuted visibility policy', routes: ['POST /user_topics'], test: T('topics', 'topics - user_topics: mute, follow, inherit; events and snapshot plus events') },
  { level: 171, what: 'POST /fetch_api_key: user_id', routes: ['POST /fetch_api_key'], test: T('people-api-keys', 'people api keys - fetch_api_key: email and password give a working key') },
  { level: 172, what: "PATCH /messages/{message_id}: topic rules for messages without a topic; propagate_mode change_all past the move time limit is MOVE_MESSAGES_TIME_LIMIT_EXCEEDED (the topic rules here never had an exception for the empty topic)", done: true, test: T('message_edit', 'message edit - change_all past the move time limit is MOVE_MESSAGES_TIME_LIMIT_EXCEEDED for members, not moderators (FL 172)') },
  { level: 173, what: 'GET /scheduled_messages, DELETE /scheduled_messages/{scheduled_message_id}', routes: ['GET /scheduled_messages', 'DELETE /scheduled_messages/{scheduled_message_id}'], test: T('scheduled_messages', "scheduled messages - every role schedules its own; nobody sees, edits or deletes another's") },
  { level: 174, what: "message type 'direct' on POST /messages and POST /typing", done: true, test: T('typing_presence', 'typing - direct: start and stop reach every participant, sender included') },
  { level: 175, what: 'web_mark_read_on_scroll_policy user setting', done: true, test: T('changelog', 'changelog - personal settings of levels 149-277 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 176, what: 'linkifier url_template; realm_linkifiers only for clients with linkifier_url_template; realm_filters always empty', routes: ['POST /realm/filters', 'GET /realm/linkifiers', 'DELETE /realm/filters/{filter_id}'], test: T('linkifiers', 'linkifiers - realm_linkifiers events only for clients with linkifier_url_template; snapshot plus events') },
  { level: 177, what: 'is:dm, dm and dm-including narrows (pm-with, group-pm-with and is:private kept)', done: true, test: T('messages', 'messages - narrows: search, dm-including, is:mentioned, id, sender by email, channels:public, legacy names') },
  { level: 178, what: 'presence always with aggregated and website, no client stored', done: true, test: T('typing_presence', "presence - a ping answers with everyone's presence; GET /realm/presence and /users/{id}/presence") },
  { level: 179, what: 'scheduled messages: POST /scheduled_messages, scheduled_messages events and register key', routes: ['POST /scheduled_messages', 'GET /scheduled_messages'], test: T('scheduled_messages', 'scheduled messages - events, and snapshot plus events equals a fresh register') },
  { level: 180, what: 'POST /invites: an empty list of channels (as FL 157)', done: true, test: T('invites', 'invites - who may send email invitations, and for which roles') },
  { level: 181, what: 'failed on scheduled message objects', done: true, test: T('scheduled_messages', 'scheduled messages - a message that can no longer be sent is marked failed, not sent') },
  { level: 182, what: 'POST /export/realm returns the export ID (GET /export/realm, DELETE /export/realm/{export_id}, realm_export events)', routes: ['POST /export/realm', 'GET /export/realm', 'DELETE /export/realm/{export_id}'], test: T('realm_export', 'realm export - an owner exports over HTTP: realm_export events, the archive at export_url imports into a fresh store; public data only; deleted (FL 182)') },
  { level: 183, what: 'realm_community_topic_editing_limit_seconds removed from POST /register', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 184, what: 'PATCH /scheduled_messages/{scheduled_message_id}; scheduled_message_id removed from POST /scheduled_messages', routes: ['PATCH /scheduled_messages/{scheduled_message_id}'], test: T('changelog', 'changelog - parameters Zulip removed are reported as ignored (FL 166, 184)') },
  { level: 185, what: 'Zulip 7.0 release', noChange: true, done: true },
  { level: 186, what: 'reserved for 7.x', noChange: true, done: true },
  { level: 187, what: 'reserved for 7.x', noChange: true, done: true },
  { level: 188, what: 'muting and unmuting bots', done: true, test: T('changelog', 'changelog - a bot can be muted and unmuted (FL 188)') },
  { level: 189, what: 'enable_followed_topic_{email,push,wildcard_mentions_notify,desktop,audible}_notifications user settings', done: true, test: T('notifications', "channel rules: followed topics, the channel's email setting, wildcard mentions; muted topics excluded") },
  { level: 190, what: 'DELETE /realm/emoji/{emoji_name}: 404 for an emoji that does not exist', done: true, test: T('realm_emoji', 'realm emoji - permissions per role and errors') },
  { level: 191, what: 'can_mention_group on user groups (create, update, events, register)', routes: ['PATCH /user_groups/{user_group_id}'], test: T('people-groups', 'people groups - PATCH: who may, and the {new, old} settings') },
  { level: 192, what: 'stream creation events to a guest subscribed to a public channel', done: true, test: T('changelog', 'changelog - a guest subscribed to a public channel gets its creation event and its peer events (FL 192, 220)') },
  { level: 193, what: 'REACTION_ALREADY_EXISTS and REACTION_DOES_NOT_EXIST error codes', done: true, test: T('reactions', 'reactions - add and remove a unicode emoji, with events to the channel') },
  { level: 194, what: 'id narrow operand as a string or an integer', done: true, test: T('messages', 'messages - narrows: search, dm-including, is:mentioned, id, sender by email, channels:public, legacy names') },
  { level: 195, what: "default_code_block_language always a string ('' for none)", done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 196, what: 'code playgrounds by url_template', routes: ['POST /realm/playgrounds'], test: T('playgrounds', 'playgrounds - names, languages and URL templates are checked') },
  { level: 197, what: 'can_remove_subscribers_group (renamed from _id)', done: true, test: T('streams', 'streams - DELETE /users/me/subscriptions: leaving, and removing others with permission') },
  { level: 198, what: 'can_mention_group (renamed from _id)', done: true, test: T('people-groups', 'people groups - PATCH: who may, and the {new, old} settings') },
  { level: 199, what: 'stream_weekly_traffic on channel objects', done: true, test: T('streams', 'streams - GET /streams lists what each role may see, with its filters') },
  { level: 200, what: 'is_default_stream on PATCH /streams/{stream_id} and subscribe', done: true, test: T('streams', 'streams - default channels: list, add and remove by role') },
  { level: 201, what: "outgoing webhooks: trigger 'direct_message' (was private_message)", done: true, test: T('outgoing-webhooks', 'bots - an outgoing-webhook bot answers a mention and a direct message') },
  { level: 202, what: 'PATCH /realm/linkifiers reorders linkifiers', routes: ['PATCH /realm/linkifiers'], test: T('linkifiers', 'linkifiers - update, delete and reorder, with their errors') },
  { level: 203, what: 'realm_date_created in POST /register', done: true, test: T('realm', 'realm - settings show in register and GET /server_settings') },
  { level: 204, what: 'server_typing_started_wait_period_milliseconds, _stopped_wait_period_ and _started_expiry_period_ in POST /register', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 205, what: 'channel create and delete events (and peer_add) when a role change gives or takes access', done: true, test: T('changelog', 'changelog - a guest made a member gets the public channels and their subscribers (FL 205)') },
  { level: 206, what: 'POST /calls/zoom/create: is_video_call', routes: ['POST /calls/zoom/create'], test: T('video_calls', 'video calls - POST /calls/zoom/create with is_video_call: Zoom is not configured here, as Zulip without VIDEO_ZOOM_CLIENT_ID answers (FL 206)') },
  // No incoming-webhook integrations are served, so the list is empty and no object lacks the fields.
  { level: 207, what: 'display_name and all_event_types in realm_incoming_webhook_bots', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 208, what: 'a deactivated or unknown principal is 400 BAD_REQUEST', done: true, test: T('subscriptions', 'subscriptions - principals by ID and by email; bad principals are 400') },
  { level: 209, what: 'create_multiuse_invite_group: reusable invitation links by non-administrators; invites_changed to the creator', routes: ['POST /invites/multiuse', 'DELETE /invites/multiuse/{invite_id}'], test: T('invites', 'invites - reusable links by role; revoking them') },
  { level: 210, what: 'web_stream_unreads_count_display_policy user setting', done: true, test: T('changelog', 'changelog - personal settings of levels 149-277 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 211, what: 'complete in the responses of POST /mark_all_as_read and POST /streams/{stream_id}/delete_topic', routes: ['POST /mark_all_as_read', 'POST /streams/{stream_id}/delete_topic'], test: T('message_edit', 'message delete - POST /streams/{stream_id}/delete_topic: administrators only, in batches, complete (FL 147, 154, 211)') },
  { level: 212, what: 'jitsi_server_url realm setting (PATCH /realm), server_jitsi_server_url; jitsi_server_url their result', done: true, test: T('realm', 'realm - settings of FL 52 to 246 by role, with their register keys and events: default_code_block_language, giphy_rating, org_type, the communities directory, the signup announcements channel, unique names, the Jitsi server') },
  { level: 213, what: 'unread_msgs counts with unmuted and followed topics', done: true, test: T('topics', 'topics - unread_msgs count leaves out muted topics, the lists keep them') },
  { level: 214, what: 'automatically_follow_topics_policy and automatically_unmute_topics_in_muted_streams_policy user settings', done: true, test: T('topics', 'topics - sending starts following: automatic_new_visibility_policy, user_topic events, mentions') },
  { level: 215, what: "typing: message_type 'direct' in events; stream_id and topic for channel typing", done: true, test: T('typing_presence', 'typing - channel notices only for queues with stream_typing_notifications, not to the sender') },
  { level: 216, what: 'enable_guest_user_indicator realm setting', done: true, test: T('changelog', 'changelog - organization settings: move time limits (FL 162), the guest indicator (FL 216), the update announcements channel (FL 242)') },
  { level: 217, what: 'POST /mobile_push/test_notification', routes: ['POST /mobile_push/test_notification'], done: true, test: T('push', 'push - test notifications go to the service; unknown tokens and users without devices are refused') },
  { level: 218, what: 'automatic_new_visibility_policy in the POST /messages response', done: true, test: T('topics', 'topics - sending starts following: automatic_new_visibility_policy, user_topic events, mentions') },
  { level: 219, what: 'web_home_view and web_escape_navigates_to_home_view (renamed); the followed visibility policy', done: true, test: T('topics', 'topics - user_topics: mute, follow, inherit; events and snapshot plus events') },
  { level: 220, what: 'peer_add and peer_remove to subscribed guests of public channels', done: true, test: T('changelog', 'changelog - a guest subscribed to a public channel gets its creation event and its peer events (FL 192, 220)') },
  { level: 221, what: 'server_supported_permission_settings in POST /register', done: true, test: T('realm', 'realm - server_supported_permission_settings: what each permission takes, for every role, as PATCH /realm, channels and user groups enforce it (FL 221, 225)') },
  { level: 222, what: 'deactivation and reactivation as realm_user update events with is_active (realm_bot ones too until FL 474)', done: true, test: T('people-users', 'people users - deactivation: who may, and the key and queues end at once') },
  { level: 223, what: 'POST /users/me/apns_device_token: appid required', routes: ['POST /users/me/apns_device_token'], done: true, test: T('push', 'push - device routes: tokens checked, bots refused, registered with the service, removed') },
  { level: 224, what: 'stream_wildcard_mentioned and topic_wildcard_mentioned message flags (wildcard_mentioned kept)', done: true, test: T('messages', "messages - topic_wildcard_mentioned is the topic's participants' only (FL 224), at a send and at an edit") },
  { level: 225, what: 'can_access_all_users_group realm setting', done: true, test: T('people-guests', 'people guests - can_access_all_users_group: administrators change it, to role:everyone or role:members only') },
  { level: 225, what: 'allowed_system_groups in server_supported_permission_settings', done: true, test: T('realm', 'realm - server_supported_permission_settings: what each permission takes, for every role, as PATCH /realm, channels and user groups enforce it (FL 221, 225)') },
  { level: 226, what: 'GET /streams/{stream_id}/email_address; email_address left out of subscription objects', routes: ['GET /streams/{stream_id}/email_address'], test: T('streams', 'streams - GET /streams/{id}/email_address: "" without an email gateway, for those who may post; sender_id (FL 226)') },
  { level: 227, what: "desktop_icon_count_display: 'DMs, mentions, and followed topics' option, renumbered", done: true, test: T('changelog', 'changelog - personal settings of levels 149-277 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 228, what: 'realm_user updates, user_status and presence only to users who can access the user; realm_user add and remove as a guest gains or loses access', done: true, test: T('people-guests', 'people guests - events: what a guest sees changes with channels, direct messages and the setting; snapshot + events == a fresh register') },
  { level: 229, what: 'STREAM_WILDCARD_MENTION_NOT_ALLOWED and TOPIC_WILDCARD_MENTION_NOT_ALLOWED', done: true, test: T('markdown', 'markdown - a topic wildcard in a topic with many participants needs permission') },
  // This server shows no onboarding steps: the list is always empty (FL 230, 233, 259).
  { level: 230, what: 'has_trigger on hotspots (onboarding_steps since FL 233)', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 231, what: 'realm_push_notifications_enabled true only when push works; realm_push_notifications_enabled_end_timestamp', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 232, what: 'user_list_incomplete client capability', done: true, test: T('people-guests', 'people guests - register: realm_users without the users a guest may not see, or with "Unknown user" in their place') },
  { level: 233, what: 'onboarding_steps (renamed hotspots); POST /users/me/onboarding_steps', routes: ['POST /users/me/onboarding_steps'], test: T('personal', 'onboarding steps - register lists the unseen one-time notices; POST /users/me/onboarding_steps marks one, with its event (FL 233)') },
  { level: 234, what: 'realm_name in push notifications; POST /mobile_push/test_notification sends event test', routes: ['POST /mobile_push/test_notification'], done: true, test: T('push', 'push - a direct message to a user with a device: the payloads the apps parse; reading it removes it') },
  { level: 235, what: 'automatically_follow_topics_where_mentioned user setting', done: true, test: T('topics', 'topics - sending starts following: automatic_new_visibility_policy, user_topic events, mentions') },
  { level: 236, what: 'read_by_sender on POST /messages', done: true, test: T('messages', 'messages - local echo, read_by_sender and mentions set the right flags') },
  { level: 237, what: 'Zulip 8.0 release', noChange: true, done: true },
  { level: 238, what: 'reserved for 8.x', noChange: true, done: true },
  { level: 239, what: 'reserved for 8.x', noChange: true, done: true },
  { level: 240, what: 'restart events without immediate', done: true, test: T('durability', 'durability - a restart under another release: kept event queues get one restart event with its version and level (FL 59, 240), new ones none') },
  { level: 240, what: 'web_reload_client events (sent when the operator runs parley reload-clients)', done: true, test: T('organizations', 'cli - reload-clients: a web_reload_client event to every event queue of the organization, none of another (FL 240)') },
  { level: 241, what: 'new_stream_announcements_stream_id and signup_announcements_stream_id (renamed realm settings); Notification Bot announces new users there', done: true, test: T('realm', 'realm - signup_announcements_stream_id: Notification Bot announces each new user there, and nowhere when unset (FL 241)') },
  // This server posts no Zulip update announcements; the setting is kept and reported as Zulip keeps it.
  { level: 242, what: 'zulip_update_announcements_stream_id realm setting', done: true, test: T('changelog', 'changelog - organization settings: move time limits (FL 162), the guest indicator (FL 216), the update announcements channel (FL 242)') },
  { level: 243, what: 'realm_authentication_methods as objects (enabled, available)', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 244, what: 'required on custom profile fields', routes: ['POST /realm/profile_fields'], test: T('people-profile-fields', 'people profile fields - creating, updating, reordering and deleting') },
  { level: 245, what: 'web_font_size_px and web_line_height_percent user settings', done: true, test: T('changelog', 'changelog - personal settings of levels 149-277 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 246, what: 'require_unique_names realm setting, enforced on sign-up, user and bot creation and name changes', done: true, test: T('realm', 'realm - require_unique_names refuses a name another user has, compared as Zulip does, on creation and on name changes (FL 246)') },
  { level: 247, what: '@**channel** wildcard mention', done: true, test: T('changelog', 'changelog - @**channel** is a channel wildcard mention, with stream_wildcard_mentioned (FL 247)') },
  { level: 248, what: "message type 'channel' (POST /messages, POST /typing, scheduled messages)", done: true, test: T('messages', 'messages - send to a channel by name and by ID, read back through GET /messages') },
  { level: 249, what: 'has:reaction narrow', done: true, test: T('reactions', 'reactions - has:reaction finds messages someone reacted to') },
  { level: 250, what: 'channel and channels narrow operators', done: true, test: T('messages', 'messages - narrows: search, dm-including, is:mentioned, id, sender by email, channels:public, legacy names') },
  { level: 251, what: 'realm_upload_quota_mib in MiB (null: no quota)', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 252, what: 'PATCH /realm/profile_fields/{field_id}: every field optional', routes: ['PATCH /realm/profile_fields/{field_id}'], test: T('people-profile-fields', 'people profile fields - creating, updating, reordering and deleting') },
  { level: 253, what: 'receives_typing_notifications user setting: no typing events when off', done: true, test: T('changelog', 'changelog - receives_typing_notifications off: no typing events reach the user (FL 253)') },
  { level: 254, what: 'creator_id on channel and subscription objects', done: true, test: T('subscriptions', 'subscriptions - subscribe creates missing channels with the given settings') },
  { level: 255, what: '"stream" renamed "channel" in strings only', noChange: true, done: true },
  { level: 256, what: 'stream update events with a new first_message_id when messages are deleted', done: true, test: T('message_edit', "message delete - deleting a channel's first message makes the next its first (stream update event)") },
  { level: 257, what: 'realm_url (realm_uri kept as an alias) in POST /register and GET /server_settings', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 258, what: 'can_mention_group as a group-setting value (ID or object)', done: true, test: T('people-groups', 'people groups - PATCH: who may, and the {new, old} settings') },
  { level: 259, what: 'onboarding_steps: one-time notices only', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 260, what: 'can_mention_group updated as {new, old}', routes: ['PATCH /user_groups/{user_group_id}'], test: T('people-groups', 'people groups - PATCH: who may, and the {new, old} settings') },
  { level: 261, what: 'include_realm_default_subscriptions on invitations', routes: ['POST /invites', 'POST /invites/multiuse'], test: T('invites', 'invites - accepted end to end in a browser: role, channels, default channels, zuliprc') },
  { level: 262, what: 'GET /users/{user_id}/status', routes: ['GET /users/{user_id}/status'], test: T('people-status', "people status - every role sets its own status and reads others'") },
  { level: 263, what: 'POST /users/me/presence last_update_id; presence_last_update_id in it and in POST /register', routes: ['POST /users/me/presence'], test: T('typing_presence', "presence - a ping answers with everyone's presence; GET /realm/presence and /users/{id}/presence") },
  { level: 264, what: 'can_create_public_channel_group realm setting (create_public_stream_policy derived)', done: true, test: T('register', 'register - permission changes and a role change: snapshot plus events equals a fresh register') },
  { level: 265, what: 'is:followed narrow', done: true, test: T('topics', "topics - is:followed and is:muted narrows follow the user's topic visibility") },
  { level: 266, what: 'can_create_private_channel_group realm setting (create_private_stream_policy derived)', done: true, test: T('changelog', 'changelog - can_create_private_channel_group decides who creates private channels (FL 266)') },
  { level: 267, what: 'notify_referrer_on_join on invitations', routes: ['POST /invites'], test: T('system-bots', 'system bots - notify_referrer_on_join: Notification Bot tells the referrer') },
  { level: 268, what: 'web_navigate_to_sent_message user setting', done: true, test: T('changelog', 'changelog - personal settings of levels 149-277 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 269, what: 'web_channel_default_view user setting', done: true, test: T('people-settings', 'people settings - values are checked against each setting') },
  { level: 270, what: 'direct_message_initiator_group and direct_message_permission_group realm settings, enforced on sends', done: true, test: T('messages', 'messages - direct_message_permission_group and direct_message_initiator_group decide who may send direct messages (FL 1), for every role') },
  { level: 271, what: "the 'with' narrow operator", done: true, test: T('features', 'features - every is:/has: operand of Zulip is served; anything else is BAD_NARROW; near does not filter; with names a conversation') },
  { level: 272, what: 'POST /user_uploads: url (uri kept as an alias)', routes: ['POST /user_uploads'], test: T('uploads', 'uploads - upload and download by the uploader; every role may upload; 401 without credentials') },
  // This server makes no thumbnails and no image previews (server_inline_image_preview false): the list is empty (FL 273, 276, 278).
  { level: 273, what: 'server_thumbnail_formats in POST /register', done: true, test: T('changelog', 'changelog - register keys of levels 149-277, and the ones Zulip removed') },
  { level: 274, what: 'delete_message events always to the user who deletes, subscribed or not', done: true, test: T('message_edit', 'message delete - the deleter gets the delete_message event even when not subscribed (FL 274)') },
  { level: 275, what: 'web_animate_image_previews user setting', done: true, test: T('changelog', 'changelog - personal settings of levels 149-277 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 276, what: 'data-original-dimensions on image previews', done: true, test: T('changelog', 'changelog - an image link renders no preview: this server makes none (FL 276)') },
  { level: 277, what: 'Zulip 9.0 release', noChange: true, done: true },
];

/** Levels 278 to 310 of Zulip's API changelog (Zulip 9.2 to 10.0). */
const CHANGELOG_278_310: readonly Feature[] = [
  { level: 278, what: 'data-original-dimensions on image placeholders (backported from FL 287): this server makes no image previews, so no placeholder lacks them', done: true, test: T('changelog', 'changelog - an uploaded image renders as a link, without a placeholder or its dimensions: no thumbnails are made (FL 278, 287)') },
  { level: 279, what: 'reserved for 9.x maintenance releases', noChange: true, done: true },
  { level: 280, what: "can_create_web_public_channel_group (owners only; create_web_public_stream_policy removed, realm_create_web_public_stream_policy its superset)", done: true, test: T('changelog', 'changelog - organization permissions of levels 280-310 decide who may; legacy policies are their supersets; the policies they replaced are ignored') },
  { level: 281, what: 'realm_can_delete_any_message_group, enforced on deletes', done: true, test: T('message_edit', 'message delete - sender, administrators and the channel permission; events for both capabilities') },
  { level: 282, what: 'POST /users/me/tutorial_status removed (404)', done: true, test: T('changelog', 'changelog - removed operations answer as on Zulip: tutorial_status (FL 282), DELETE of a user group (FL 294)') },
  { level: 283, what: 'can_manage_group on user groups: create, PATCH, register and events', routes: ['PATCH /user_groups/{user_group_id}'], test: T('people-groups', 'people groups - PATCH: who may, and the {new, old} settings') },
  { level: 284, what: 'prev_rendered_content_version removed from edit_history and update_message events', done: true, test: T('changelog', 'changelog - an edit reports the uploads it detaches (FL 285); edit history has no prev_rendered_content_version (FL 284)') },
  { level: 285, what: 'detached_uploads in the PATCH /messages/{message_id} reply', done: true, test: T('changelog', 'changelog - an edit reports the uploads it detaches (FL 285); edit history has no prev_rendered_content_version (FL 284)') },
  { level: 286, what: 'filename in the POST /user_uploads reply', done: true, test: T('uploads', 'uploads - upload and download by the uploader; every role may upload; 401 without credentials') },
  { level: 287, what: 'data-original-dimensions on image placeholders: no previews made here', done: true, test: T('changelog', 'changelog - an uploaded image renders as a link, without a placeholder or its dimensions: no thumbnails are made (FL 278, 287)') },
  { level: 288, what: 'presence_history_limit_days (POST /register) and history_limit_days (POST /users/me/presence)', routes: ['POST /users/me/presence'], test: T('changelog', 'changelog - presence since a number of days: history_limit_days and presence_history_limit_days (FL 288)') },
  { level: 289, what: 'POST /users/me/subscriptions: subscribed and already_subscribed keyed by user ID', done: true, test: T('subscriptions', 'subscriptions - subscribe creates missing channels with the given settings') },
  { level: 290, what: 'POST /user_groups/{user_group_id}/deactivate, deactivated on group objects, update events', routes: ['POST /user_groups/{user_group_id}/deactivate'], test: T('people-groups', 'people groups - deactivation, objections, and the include_deactivated_groups capability') },
  { level: 291, what: 'can_delete_own_message_group realm setting (delete_own_message_policy removed)', done: true, test: T('message_edit', "message delete - a new channel leaves deleting one's own messages to the organization's can_delete_own_message_group") },
  { level: 292, what: 'creator_id and date_created on user groups', done: true, test: T('people-groups', 'people groups - who may create and list groups') },
  { level: 293, what: 'allow_private_data_export user setting', done: true, test: T('realm_export', 'realm export - export types, consents (with email_address_visibility, FL 430) and their realm_export_consent events, and the limit of five a week') },
  { level: 294, what: 'include_deactivated_groups capability: deactivated groups left out, remove events instead of update; GET /user_groups include_deactivated_groups', done: true, test: T('people-groups', 'people groups - deactivation, objections, and the include_deactivated_groups capability') },
  { level: 294, what: 'DELETE /user_groups/{user_group_id} removed (405); allow_deactivated renamed (ignored)', done: true, test: T('changelog', 'changelog - removed operations answer as on Zulip: tutorial_status (FL 282), DELETE of a user group (FL 294)') },
  { level: 295, what: 'GET /export/realm/consents', routes: ['GET /export/realm/consents'], test: T('realm_export', 'realm export - export types, consents (with email_address_visibility, FL 430) and their realm_export_consent events, and the limit of five a week') },
  { level: 295, what: '/api/v1/tus: resumable uploads (the tus 1.0.0 protocol: creation, creation-with-upload, expiration), recorded as POST /user_uploads records them', done: true, test: T('tus', 'tus - tus-js-client uploads in chunks, resumes an interrupted upload at its offset through another gateway, and a recipient reads the linked file') },
  { level: 296, what: 'editable_by_user on custom profile fields', routes: ['POST /realm/profile_fields', 'GET /realm/profile_fields', 'PATCH /users/me/profile_data'], test: T('people-profile-fields', 'people profile fields - who may read and change the fields') },
  { level: 297, what: 'saved snippets: GET, POST, DELETE /saved_snippets, saved_snippet events and register key', routes: ['GET /saved_snippets', 'POST /saved_snippets', 'DELETE /saved_snippets/{saved_snippet_id}'], test: T('personal', 'saved snippets - create, edit, delete, with events; errors') },
  { level: 298, what: 'CANNOT_DEACTIVATE_GROUP_IN_USE with objections', done: true, test: T('people-groups', 'people groups - deactivation, objections, and the include_deactivated_groups capability') },
  { level: 299, what: 'can_create_groups and can_manage_all_groups realm settings (user_group_edit_policy removed)', done: true, test: T('realm', 'realm - can_create_groups decides who creates user groups; permissions nothing reads are reported, not stored') },
  { level: 299, what: 'can_manage_all_groups decides who manages every group', done: true, test: T('changelog', 'changelog - organization permissions of levels 280-310 decide who may; legacy policies are their supersets; the policies they replaced are ignored') },
  { level: 300, what: 'GET /messages message_ids', done: true, test: T('changelog', 'changelog - GET /messages by message_ids: those the user may read, oldest first; never with a range (FL 300)') },
  { level: 301, what: 'can_join_group on user groups', routes: ['POST /user_groups/{user_group_id}/members'], test: T('people-groups', 'people groups - members and subgroups') },
  { level: 302, what: 'GET /users/{email} looks users up as email_address_visibility allows', done: true, test: T('email-visibility', 'email visibility - who sees the real address, for every setting and role (FL 1)') },
  { level: 303, what: 'deactivated users in no group and no permission (register, GET members); not added or removed; events to who may not see them; permissions again on reactivation', done: true, test: T('changelog', 'changelog - a deactivated user is in no group and no permission, and back on reactivation; who may not see them is told (FL 303)') },
  { level: 304, what: 'export_type of realm exports (public or with consent)', done: true, test: T('realm_export', 'realm export - export types, consents (with email_address_visibility, FL 430) and their realm_export_consent events, and the limit of five a week') },
  { level: 305, what: 'can_manage_all_groups with its natural meaning, whatever the role', done: true, test: T('changelog', 'changelog - organization permissions of levels 280-310 decide who may; legacy policies are their supersets; the policies they replaced are ignored') },
  { level: 305, what: 'can_add_members_group on user groups', routes: ['POST /user_groups/{user_group_id}/members'], test: T('people-groups', 'people groups - members and subgroups') },
  { level: 306, what: 'max_file_upload_size_mib in the register; plan_type changes by update_dict (no operation here changes the plan)', done: true, test: T('changelog', 'changelog - organization permissions of levels 280-310 decide who may; legacy policies are their supersets; the policies they replaced are ignored') },
  { level: 307, what: 'can_add_custom_emoji_group realm setting, enforced (add_custom_emoji_policy removed)', done: true, test: T('changelog', 'changelog - organization permissions of levels 280-310 decide who may; legacy policies are their supersets; the policies they replaced are ignored') },
  { level: 308, what: 'can_leave_group on user groups', routes: ['POST /user_groups/{user_group_id}/members'], test: T('people-groups', 'people groups - members and subgroups') },
  { level: 309, what: 'anonymous group-setting values for settings not limited to system groups', done: true, test: T('changelog', 'changelog - organization permissions of levels 280-310 decide who may; legacy policies are their supersets; the policies they replaced are ignored') },
  { level: 310, what: 'can_move_messages_between_channels_group realm setting, enforced (move_messages_between_streams_policy removed)', done: true, test: T('changelog', 'changelog - organization permissions of levels 280-310 decide who may; legacy policies are their supersets; the policies they replaced are ignored') },
];

/**
 * Levels above 277 that the API contract (`../shared/spec/api-spec.md`)
 * names. The table does not cover every level above 277 yet, so none of
 * these can be advertised until the levels between them are written down.
 */
const CONTRACT: readonly Feature[] = [
  // Levels 311-350 (Zulip 10.0).
  { level: 311, what: 'add_subgroups and delete_subgroups on POST /user_groups/{id}/members; subgroups on POST /user_groups/create', routes: ['POST /user_groups/{user_group_id}/members', 'GET /user_groups/{user_group_id}/subgroups', 'GET /user_groups/{user_group_id}/members', 'GET /user_groups/{user_group_id}/members/{user_id}'], test: T('people-groups', 'people groups - members and subgroups') },
  { level: 312, what: 'realm_export_consent events to administrators', done: true, test: T('realm_export', 'realm export - export types, consents (with email_address_visibility, FL 430) and their realm_export_consent events, and the limit of five a week') },
  { level: 313, what: 'PATCH /users/{user_id} new_email (owners holding can_change_user_emails); PATCH /users/{email}', done: true, test: T('people-users', 'people users - full name and email changes by administrators') },
  { level: 314, what: 'create_multiuse_invite_group and can_access_all_users_group as group-setting values (anonymous groups)', done: true, test: T('changelog', 'changelog - anonymous groups for create_multiuse_invite_group and can_access_all_users_group (FL 314)') },
  { level: 315, what: 'is_archived on channels and subscriptions; exclude_archived on GET /streams; the archived_channels capability', done: true, test: T('streams', 'streams - DELETE /streams/{id} archives, by role; archived channels only for clients that know them') },
  { level: 316, what: 'can_move_messages_between_topics_group realm setting (edit_topic_policy removed)', done: true, test: T('changelog', 'changelog - moving a topic does not depend on allow_message_editing, and nobody may be allowed to move (FL 159)') },
  { level: 316, what: 'edit_topic_policy no longer a PATCH /realm parameter nor a register key', done: true, test: T('changelog', 'changelog - register keys of levels 311-350, and the settings Zulip removed then') },
  { level: 317, what: 'group_id in the POST /user_groups/create response', done: true, test: T('people-groups', 'people groups - who may create and list groups') },
  // This server has no incoming-webhook integrations (realm_incoming_webhook_bots is empty), so no config_options to give.
  { level: 318, what: 'config_options in realm_incoming_webhook_bots', done: true, test: T('changelog', 'changelog - register keys of levels 311-350, and the settings Zulip removed then') },
  { level: 319, what: 'message-link Markdown: #**channel>topic@id**', done: true, test: T('markdown', 'markdown - topic links follow the topic with its latest message (FL 347, 400), message links (FL 319), the empty topic (FL 346)') },
  { level: 320, what: 'can_remove_subscribers_group as a group-setting value on channels', done: true, test: T('streams', 'streams - snapshot plus channel events equals a fresh register (member and administrator)') },
  { level: 321, what: 'can_invite_users_group realm setting (invite_to_realm_policy removed)', done: true, test: T('invites', 'invites - who may send email invitations, and for which roles') },
  { level: 322, what: 'group_ids on POST /invites and POST /invites/multiuse', done: true, test: T('invites', 'invites - addresses, channels, groups and INVITATION_FAILED') },
  { level: 323, what: 'is_recently_active on channels', routes: ['GET /streams'], test: T('streams', 'streams - GET /streams lists what each role may see, with its filters') },
  { level: 324, what: 'can_remove_members_group on user groups', routes: ['POST /user_groups/{user_group_id}/members'], test: T('people-groups', 'people groups - members and subgroups') },
  { level: 325, what: 'can_administer_channel_group on channels', done: true, test: T('streams', 'streams - PATCH /streams/{id}: who may administer a channel') },
  { level: 326, what: 'server_supported_permission_settings without allow_owners_group and id_field_name', done: true, test: T('changelog', 'changelog - register keys of levels 311-350, and the settings Zulip removed then') },
  // Parley gives a direct-message conversation one recipient for both directions.
  { level: 327, what: 'recipient_id of an incoming 1:1 direct message as of an outgoing one', done: true, test: T('changelog', 'changelog - an incoming 1:1 direct message has the recipient_id of an outgoing one in the conversation (FL 327)') },
  { level: 328, what: 'no user dictionary in reactions of GET /messages (restored in reaction events at FL 339)', done: true, test: T('reactions', 'reactions - add and remove a unicode emoji, with events to the channel') },
  { level: 329, what: 'web_suggest_update_timezone user setting', done: true, test: T('changelog', 'changelog - register keys of levels 311-350, and the settings Zulip removed then') },
  { level: 330, what: 'default channels and default channel groups as channel IDs (register and events)', done: true, test: T('streams', 'streams - default channels: list, add and remove by role') },
  { level: 331, what: 'moderation_request_channel_id realm setting (a private channel)', done: true, test: T('changelog', 'changelog - moderation_request_channel_id (FL 331) and enable_guest_user_dm_warning (FL 348): administrators set them, with events; the channel is private') },
  // This server never deletes an organization's data by itself: the owner's delay is recorded, deletion is the operator's.
  { level: 332, what: 'server_min_deactivated_realm_deletion_days and _max_; POST /realm/deactivate (owners) with deletion_delay_days', routes: ['POST /realm/deactivate'], test: T('organizations', 'organizations - POST /realm/deactivate: the owner deactivates their organization, with a deletion delay of at least server_min_deactivated_realm_deletion_days (FL 332)') },
  { level: 333, what: 'can_send_message_group on channels (stream_post_policy and is_announcement_only derived, no longer parameters)', done: true, test: T('streams', 'streams - PATCH /streams/{id} changes every property, with its rules') },
  { level: 333, what: 'silent mentions of system groups', done: true, test: T('markdown', 'markdown - mentions: users, silent, wildcards; none inside code') },
  { level: 334, what: 'realm_empty_topic_display_name; the empty_topic_name capability; allow_empty_topic_name on reads', done: true, test: T('empty-topic', 'empty topic - reads: allow_empty_topic_name on GET /messages, a message, its history and topic history') },
  { level: 334, what: 'events and register without empty_topic_name give the display name', done: true, test: T('empty-topic', 'empty topic - message, typing, user_topic, unread, edit and delete events follow the capability') },
  { level: 335, what: 'sender_id on GET /streams/{id}/email_address', done: true, test: T('streams', 'streams - GET /streams/{id}/email_address: "" without an email gateway, for those who may post; sender_id (FL 226)') },
  // This server makes no image previews (server_inline_image_preview false), so no data-original-content-type.
  { level: 336, what: 'data-original-content-type and data-transcoded-image on image previews', done: true, test: T('changelog', 'changelog - an image link renders no preview: this server makes none (FL 276)') },
  // No BigBlueButton server here (not among realm_available_video_chat_providers): the join page answers "BigBlueButton is not configured.", as Zulip's.
  { level: 337, what: 'voice_only on POST /calls/bigbluebutton/create', routes: ['POST /calls/bigbluebutton/create'], test: T('changelog', 'changelog - POST /calls/bigbluebutton/create with voice_only gives a join link; joining answers that BigBlueButton is not configured here (FL 337)') },
  { level: 338, what: 'password_max_length in POST /register', done: true, test: T('changelog', 'changelog - register keys of levels 311-350, and the settings Zulip removed then') },
  { level: 339, what: 'the deprecated user object back in reaction events (removed again at FL 484, as here)', done: true, test: T('reactions', 'reactions - add and remove a unicode emoji, with events to the channel') },
  { level: 340, what: 'settings of deactivated groups editable', routes: ['PATCH /user_groups/{user_group_id}'], test: T('people-groups', 'people groups - deactivation, objections, and the include_deactivated_groups capability') },
  { level: 341, what: 'can_add_subscribers_group realm setting (can_subscribe_other_users and invite_to_stream_policy removed)', done: true, test: T('changelog', 'changelog - register keys of levels 311-350, and the settings Zulip removed then') },
  { level: 342, what: 'can_add_subscribers_group on channels', done: true, test: T('subscriptions', 'subscriptions - subscribe creates missing channels with the given settings') },
  { level: 343, what: 'stream_ids in stream delete events', done: true, test: T('changelog', 'changelog - metadata access to a private channel (FL 349): can_add_subscribers_group adds without being subscribed, a channel administrator removes others and sees it; stream delete events name stream_ids (FL 343)') },
  { level: 344, what: 'can_create_bots_group and can_create_write_only_bots_group (bot_creation_policy removed)', done: true, test: T('outgoing-webhooks', 'bots - POST /bots: who may create one, and its checks') },
  { level: 344, what: 'bot_creation_policy no longer a PATCH /realm parameter nor a register key', done: true, test: T('changelog', 'changelog - register keys of levels 311-350, and the settings Zulip removed then') },
  // The push bouncer's own endpoints (Zulip's zilencer): like a Zulip server that is not a bouncer, this one does not serve them.
  { level: 345, what: 'bouncer registration transfer endpoints (not served: this server is not a bouncer)', done: true, test: T('changelog', "changelog - the push bouncer's registration transfer endpoints are not served: this server is no bouncer (FL 345)") },
  { level: 346, what: 'the empty topic in topic and message links', done: true, test: T('markdown', 'markdown - topic links follow the topic with its latest message (FL 347, 400), message links (FL 319), the empty topic (FL 346)') },
  { level: 347, what: 'topic links with the with operator', done: true, test: T('markdown', 'markdown - topic links follow the topic with its latest message (FL 347, 400), message links (FL 319), the empty topic (FL 346)') },
  { level: 348, what: 'enable_guest_user_dm_warning realm setting', done: true, test: T('changelog', 'changelog - moderation_request_channel_id (FL 331) and enable_guest_user_dm_warning (FL 348): administrators set them, with events; the channel is private') },
  { level: 349, what: 'metadata access: can_add_subscribers_group adds unsubscribed; channel administrators remove others; events and never_subscribed for them', done: true, test: T('changelog', 'changelog - metadata access to a private channel (FL 349): can_add_subscribers_group adds without being subscribed, a channel administrator removes others and sees it; stream delete events name stream_ids (FL 343)') },
  // No AI model here: server_can_summarize_topics is false; the group is reported, and a change of it reported as ignored (nothing reads it).
  { level: 350, what: 'server_can_summarize_topics, can_summarize_topics_group, hide_ai_features', done: true, test: T('changelog', 'changelog - register keys of levels 311-350, and the settings Zulip removed then') },
  // Levels 351-392 (Zulip 10.0 to 11.0), each checked against Zulip's changelog.
  { level: 351, what: 'POST /messages/{message_id}/typing (FL 351 as POST /message_edit_typing; renamed at FL 361, the only path Zulip 12 serves) and typing_edit_message events', routes: ['POST /messages/{message_id}/typing'], test: T('typing_presence', 'typing - editing a message: POST /messages/{message_id}/typing sends typing_edit_message to who sees the message, only for who may edit it (FL 351, 361)') },
  { level: 352, what: 'can_mention_many_users_group; wildcard_mention_policy removed from PATCH /realm; realm_wildcard_mention_policy the nearest policy to the group', done: true, test: T('changelog', 'changelog - organization settings of levels 351-392: wildcard mentions by group (352), no Zoom (353), edit history visibility (358), topics_policy for mandatory_topics (392); snapshot plus events') },
  { level: 353, what: "Zoom's server-to-server integration (video_chat_provider 5): not offered and refused, as Zulip without the server's Zoom account", done: true, test: T('changelog', 'changelog - organization settings of levels 351-392: wildcard mentions by group (352), no Zoom (353), edit history visibility (358), topics_policy for mandatory_topics (392); snapshot plus events') },
  // POST /submessage is not served (no widgets here): the rule it would use is the one of every message read by ID (`readsSharedHistory`).
  { level: 354, what: 'unsubscribed private channels with shared history readable through can_subscribe_group and can_add_subscribers_group (GET /messages, GET /messages/{id}, flags by narrow, read receipts, reactions, edits, edit typing; sends with can_send_message_group)', done: true, test: T('changelog', 'changelog - content access through the groups of a private channel (FL 354): members of can_subscribe_group and can_add_subscribers_group read, react, edit and send without subscribing; nobody else does') },
  { level: 355, what: 'ignored_because_not_subscribed_channels in POST /messages/flags/narrow', routes: ['POST /messages/flags/narrow'], test: T('message_flags', 'message flags - flags/narrow: counts, range, anchors and ignored channels') },
  { level: 355, what: 'ignored_because_not_subscribed_channels in POST /messages/flags', routes: ['POST /messages/flags'], test: T('message_flags', 'message flags - read and unread by ID; the event for unread carries message_details') },
  { level: 356, what: 'GET /streams: include_can_access_content; include_all (include_all_active renamed) for every role: the channels with metadata access', done: true, test: T('streams', 'streams - GET /streams lists what each role may see, with its filters') },
  { level: 357, what: 'can_subscribe_group on channels: parameter, field, events, and who may subscribe themselves (grants metadata and content access)', done: true, test: T('changelog', 'changelog - can_subscribe_group: who may subscribe themselves to a private channel, set on creation and by PATCH, with its event (FL 357)') },
  { level: 358, what: 'message_edit_history_visibility_policy (all, moves, none) replaces allow_edit_history: PATCH /realm, events, realm_allow_edit_history derived; GET /messages/{message_id}/history and edit_history follow it', done: true, test: T('changelog', 'changelog - message edit history by policy: all, moves only, none (FL 358)') },
  { level: 358, what: 'message_edit_history_visibility_policy in PATCH /realm, the register and realm events; allow_edit_history removed', done: true, test: T('changelog', 'changelog - organization settings of levels 351-392: wildcard mentions by group (352), no Zoom (353), edit history visibility (358), topics_policy for mandatory_topics (392); snapshot plus events') },
  { level: 359, what: 'PATCH /bots/{bot_user_id}: a new owner no longer unsubscribes the bot', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 360, what: 'GET /messages/{message_id} and read receipts of archived channels', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 361, what: 'POST /message_edit_typing renamed POST /messages/{message_id}/typing', routes: ['POST /messages/{message_id}/typing'], test: T('typing_presence', 'typing - editing a message: POST /messages/{message_id}/typing sends typing_edit_message to who sees the message, only for who may edit it (FL 351, 361)') },
  { level: 362, what: 'archived channels: subscriptions and privacy editable; never_subscribed with archived_channels', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  // No billing here: can_manage_billing_group is stored and reported at Zulip's default, and PATCH /realm ignores a change of it (NO_EFFECT_GROUP_SETTINGS).
  { level: 363, what: 'can_manage_billing_group in register, realm_billing in register; is_billing_admin removed from user objects and realm_user events (the `parley users billing-admin` command that set it retired)', done: true, test: T('organizations', 'cli - billing: user objects have no is_billing_admin and `users billing-admin` is retired; can_manage_billing_group is reported, not changed, as there is no billing (FL 73, 363)') },
  { level: 364, what: 'dense_mode removed from settings and defaults', done: true, test: T('changelog', 'changelog - register fields of levels 351-392: is_moderator for administrators (380), dense_mode gone (364), navigation_tour_video_url (369)') },
  { level: 365, what: 'last_moved_timestamp; last_edit_timestamp only for content edits', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 366, what: 'is:muted narrow', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 367, what: 'can_resolve_topics_group decides who resolves topics', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 368, what: 'PATCH /saved_snippets/{saved_snippet_id} and saved_snippets update events', routes: ['PATCH /saved_snippets/{saved_snippet_id}'], test: T('personal', 'saved snippets - create, edit, delete, with events; errors') },
  { level: 369, what: 'navigation_tour_video_url in POST /register (null: no tour video here)', done: true, test: T('changelog', 'changelog - register fields of levels 351-392: is_moderator for administrators (380), dense_mode gone (364), navigation_tour_video_url (369)') },
  { level: 370, what: "'(no topic)' read as the empty topic in POST /messages and scheduled messages", done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 371, what: 'Zulip 10.0 release', noChange: true, done: true },
  { level: 372, what: "POST /typing: '(no topic)' read as the empty topic", done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 373, what: 'reserved for 10.x maintenance releases', noChange: true, done: true },
  { level: 374, what: 'reserved for 10.x maintenance releases', noChange: true, done: true },
  { level: 375, what: 'reserved for 10.x maintenance releases', noChange: true, done: true },
  { level: 376, what: 'reserved for 10.x maintenance releases', noChange: true, done: true },
  { level: 377, what: "peer_remove events to a deactivated user's channels' subscribers", done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 378, what: 'archiving and unarchiving send stream update events to clients with archived_channels (delete and create to others); streams includes archived channels for them', done: true, test: T('streams', 'streams - snapshot plus events with the archived_channels capability') },
  { level: 379, what: 'PATCH /messages/{message_id}: prev_content_sha256', done: true, test: T('changelog', 'changelog - prev_content_sha256 refuses an edit of content that changed meanwhile (FL 379)') },
  { level: 380, what: 'is_moderator true for administrators and owners', done: true, test: T('changelog', 'changelog - register fields of levels 351-392: is_moderator for administrators (380), dense_mode gone (364), navigation_tour_video_url (369)') },
  // A reminder is a scheduled message of the realm that Notification Bot sends to its user (actors/realm/reminders.ts).
  { level: 381, what: 'POST /reminders: a reminder of a message the user can read', routes: ['POST /reminders'], test: T('scheduled_messages', 'reminders - every role reminds itself of a message it can read; nobody lists or deletes another\'s; errors (FL 381, 399, 415)') },
  { level: 381, what: 'reminders delivered at their time by Notification Bot, as a direct message quoting the message', done: true, test: T('scheduled_messages', 'reminders - Notification Bot sends the reminder to its user at its time, once: the note, who said it where, the message quoted (FL 381, 415)') },
  // Notification Bot posts the report in moderation_request_channel_id (FL 331), as Zulip's send_message_report; report_type is one of server_report_message_types (FL 435).
  { level: 382, what: 'POST /messages/{message_id}/report', routes: ['POST /messages/{message_id}/report'], test: T('system-bots', 'system bots - message reports: every role reports a message it can read to the moderation channel; errors (FL 382)') },
  { level: 383, what: 'web_channel_default_view 3 (list of topics)', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 384, what: 'GET /users: user_ids', done: true, test: T('people-guests', 'people guests - who sees whom: GET /users and GET /users/{id} as every role, guests restricted and not') },
  // A toggle undone within a minute deletes the notice before instead of posting another, as Zulip's grace period.
  { level: 385, what: "resolved_topic_notice_auto_read_policy: Notification Bot's resolved-topic notices start unread only as it says", done: true, test: T('message_edit', "message edit - resolving a topic posts Notification Bot's notice; resolved_topic_notice_auto_read_policy decides who gets it unread (FL 385)") },
  { level: 386, what: 'PATCH /user_groups/{user_group_id}: deactivated false reactivates', done: true, test: T('people-groups', 'people groups - deactivation, objections, and the include_deactivated_groups capability') },
  // Zulip lets spectators list users only where web-public access is on, which needs the server's
  // WEB_PUBLIC_STREAMS_ENABLED and a web-public channel. This server has neither (server_web_public_streams_enabled
  // and realm_web_public_access_enabled are false), so, as Zulip on such a server, every organization answers 401.
  { level: 387, what: 'unauthenticated GET /users (public access option): refused, as no organization here has web-public access', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 388, what: 'PATCH /streams/{stream_id}: is_archived false unarchives', done: true, test: T('streams', 'streams - snapshot plus events with the archived_channels capability') },
  { level: 389, what: 'channel folders', routes: ['POST /channel_folders/create', 'GET /channel_folders', 'PATCH /channel_folders/{channel_folder_id}', 'PATCH /streams/{stream_id}'], test: T('channel_folders', 'channel folders - snapshot plus channel_folder events equals a fresh register') },
  { level: 389, what: 'POST /users/me/subscriptions: folder_id for the channels it creates', done: true, test: T('changelog', 'changelog - POST /users/me/subscriptions puts the channels it creates in a folder: folder_id (FL 389)') },
  { level: 390, what: 'navigation views: GET, POST, PATCH, DELETE /navigation_views (built-in fragments without a name, custom ones with one), the navigation_views register key, navigation_view events', routes: ['GET /navigation_views', 'POST /navigation_views', 'PATCH /navigation_views/{fragment}', 'DELETE /navigation_views/{fragment}'], test: T('personal', 'navigation views - built-in and custom views: add, update, remove, with events; errors; each role its own') },
  { level: 391, what: 'members and subgroups of deactivated groups editable', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  { level: 392, what: 'topics_policy on channels, can_set_topics_policy_group, the realm topics_policy; mandatory_topics derived and removed from PATCH /realm', done: true, test: T('changelog', 'changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)') },
  // Levels 393-435 (Zulip 11.0 and 12.0), checked against Zulip's changelog.
  { level: 393, what: 'update_message and delete_message events: message_ids in increasing order', done: true, test: T('changelog', 'changelog - message_ids of update_message and delete_message events in increasing order (FL 393)') },
  { level: 394, what: 'subscriber_count on channel and subscription objects', done: true, test: T('changelog', 'changelog - subscriber_count on channel and subscription objects: active subscribers, kept by peer events; snapshot plus events equals a fresh register (FL 394)') },
  // Parley makes no link previews at all (server_inline_url_embed_preview false), Dropbox albums or otherwise.
  { level: 395, what: 'no Dropbox album previews: Dropbox links as any link', done: true, test: T('changelog', 'changelog - a Dropbox folder link is a plain link: this server makes no link previews (FL 395)') },
  { level: 396, what: 'can_move_messages_within_channel_group and can_move_messages_out_of_channel_group on channels: set, reported and enforced on moves', done: true, test: T('changelog', 'changelog - channel permissions to move messages (FL 396) and resolve topics (FL 402), for every role; stream update events') },
  { level: 397, what: 'send_new_subscription_messages and new_subscription_messages_sent on POST /users/me/subscriptions (Notification Bot DMs to users subscribed by others); max_bulk_new_subscription_messages in POST /register', done: true, test: T('changelog', 'changelog - Notification Bot tells users someone else subscribed them: send_new_subscription_messages, new_subscription_messages_sent, max_bulk_new_subscription_messages (FL 397)') },
  { level: 398, what: 'web_left_sidebar_unreads_count_summary user setting', done: true, test: T('changelog', 'changelog - personal settings of levels 393-435 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 399, what: 'GET /reminders, DELETE /reminders/{reminder_id}', routes: ['GET /reminders', 'DELETE /reminders/{reminder_id}'], test: T('scheduled_messages', 'reminders - every role reminds itself of a message it can read; nobody lists or deletes another\'s; errors (FL 381, 399, 415)') },
  { level: 399, what: 'reminders events (add, remove) and register key', done: true, test: T('scheduled_messages', 'reminders - events, and snapshot plus events equals a fresh register (FL 399)') },
  { level: 400, what: 'topic links (/with/) name the latest message of the topic, not the oldest', done: true, test: T('changelog', 'changelog - a topic link follows the topic with its latest message (FL 400)') },
  { level: 401, what: 'web_channel_default_view 4 (top unread topic)', done: true, test: T('changelog', 'changelog - personal settings of levels 393-435 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  // The organization's can_resolve_topics_group (FL 367) is enforced with it: resolving needs either.
  { level: 402, what: 'can_resolve_topics_group on channels: set, reported and enforced when a topic is resolved or unresolved', done: true, test: T('changelog', 'changelog - channel permissions to move messages (FL 396) and resolve topics (FL 402), for every role; stream update events') },
  // No incoming-webhook integrations exist here (realm_incoming_webhook_bots is empty), so none lacks url_options.
  { level: 403, what: 'url_options of realm_incoming_webhook_bots', done: true, test: T('changelog', 'changelog - register keys of levels 393-435, and the ones Zulip removed') },
  { level: 404, what: "topics_policy 'empty_topic_only'", done: true, test: T('messages', 'messages - topic rules: empty-topic names, lengths and channel policies') },
  { level: 405, what: 'audio player HTML for uploaded audio files: ![name](/user_uploads/...) naming an audio file renders <audio controls preload="metadata" src title>', done: true, test: T('uploads', 'uploads - an image link to an uploaded audio file is an audio player, as Zulip renders it (FL 405); other links stay links') },
  { level: 406, what: 'POST /mobile_push/register (E2EE push devices by push_account_id), push_devices in register, push_device events', routes: ['POST /mobile_push/register'], test: T('push', 'push - E2EE: a device registers with its key, the service learns it, notifications are sealed for it') },
  { level: 407, what: 'POST /users/{user_id}/status: administrators set another user\'s status', routes: ['POST /users/{user_id}/status'], test: T('changelog', 'changelog - POST /users/{user_id}/status by administrators (FL 407), for every role') },
  { level: 407, what: 'can_delete_any_message_group and can_delete_own_message_group on channels; can_set_delete_message_policy_group decides who sets them', done: true, test: T('changelog', "changelog - can_set_delete_message_policy_group decides who sets a channel's deletion permissions (FL 407)") },
  // Zulip 11 lets twenty_four_hour_time be null (the locale's format), which no client could set at this level: a boolean is a value of that type.
  { level: 408, what: 'twenty_four_hour_time may be null', done: true, test: T('changelog', 'changelog - personal settings of levels 393-435 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 409, what: 'require_e2ee_push_notifications realm setting: legacy push notifications carry "New message" instead of the content', done: true, test: T('push', 'push - require_e2ee_push_notifications (FL 409): legacy notifications say "New message", encrypted ones carry the content; administrators set it') },
  { level: 410, what: 'max_channel_folder_name_length and max_channel_folder_description_length in POST /register', done: true, test: T('changelog', 'changelog - register keys of levels 393-435, and the ones Zulip removed') },
  { level: 410, what: 'APNs payloads without time', done: true, test: T('push', 'push - a direct message to a user with a device: the payloads the apps parse; reading it removes it') },
  { level: 411, what: 'web_left_sidebar_show_channel_folders user setting', done: true, test: T('changelog', 'changelog - personal settings of levels 393-435 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  // The server may give partial_subscribers for large channels; this one always gives the complete subscribers list.
  { level: 412, what: "include_subscribers 'partial'", done: true, test: T('changelog', 'changelog - include_subscribers partial: every channel with its complete subscribers list (FL 412)') },
  { level: 413, what: 'E2EE push payloads in the documented format (type message/remove/test, the fields zulip-flutter parses)', done: true, test: T('push', 'push - E2EE as zulip-flutter speaks it (FL 468): a client device registers its key and token; a DM, a channel mention and a removal decrypt with its key') },
  { level: 413, what: 'legacy push payloads: no content_truncated, no zulip_message_id in FCM removals, no server or realm_id in APNs', done: true, test: T('push', 'push - a direct message to a user with a device: the payloads the apps parse; reading it removes it') },
  { level: 414, what: 'order of channel folders; PATCH /channel_folders reorders them', routes: ['PATCH /channel_folders'], test: T('channel_folders', 'channel folders - update, archive, reorder; channels in folders') },
  { level: 415, what: 'POST /reminders: note; max_reminder_note_length in POST /register', done: true, test: T('scheduled_messages', 'reminders - every role reminds itself of a message it can read; nobody lists or deletes another\'s; errors (FL 381, 399, 415)') },
  { level: 415, what: 'the note in the reminder Notification Bot sends', done: true, test: T('scheduled_messages', 'reminders - Notification Bot sends the reminder to its user at its time, once: the note, who said it where, the message quoted (FL 381, 415)') },
  // The realm setting and the invitations' text (administrators only), sent by Welcome Bot.
  { level: 416, what: 'welcome_message_custom_text on POST /invites, POST /invites/multiuse and PATCH /realm', routes: ['POST /invites', 'POST /invites/multiuse', 'PATCH /realm'], test: T('system-bots', 'system bots - welcome_message_custom_text: who may set it, its limits, and which text a new user gets') },
  { level: 416, what: 'POST /realm/test_welcome_bot_custom_message', routes: ['POST /realm/test_welcome_bot_custom_message'], test: T('changelog', 'changelog - POST /realm/test_welcome_bot_custom_message: Welcome Bot sends the administrator the text (FL 416), for every role') },
  { level: 417, what: 'POST /channels/create: one channel with its subscribers (user IDs, none allowed), the creation parameters of POST /users/me/subscriptions; the reply is its id; 409 CHANNEL_ALREADY_EXISTS', routes: ['POST /channels/create'], test: T('changelog', 'changelog - POST /channels/create makes one channel with its subscribers and answers its id; an existing name is 409 (FL 417), for every role') },
  { level: 418, what: 'channel_folder reorder events', done: true, test: T('channel_folders', 'channel folders - snapshot plus channel_folder events equals a fresh register') },
  { level: 419, what: 'simplified_presence_events client capability: presence events keyed by user ID', done: true, test: T('typing_presence', 'presence - snapshot plus presence events equals a fresh register, slim and legacy') },
  { level: 420, what: 'POST /mobile_push/e2ee/test_notification', routes: ['POST /mobile_push/e2ee/test_notification'], test: T('push', 'push - E2EE as zulip-flutter speaks it (FL 468): a client device registers its key and token; a DM, a channel mention and a removal decrypt with its key') },
  { level: 421, what: 'Zulip 11.0 release', noChange: true, done: true },
  { level: 422, what: 'reserved for 11.x maintenance releases', noChange: true, done: true },
  { level: 423, what: 'reserved for 11.x maintenance releases', noChange: true, done: true },
  { level: 424, what: 'reserved for 11.x maintenance releases', noChange: true, done: true },
  { level: 425, what: 'reserved for 11.x maintenance releases', noChange: true, done: true },
  { level: 426, what: 'realm_is_zephyr_mirror_realm removed from POST /register', done: true, test: T('changelog', 'changelog - register keys of levels 393-435, and the ones Zulip removed') },
  { level: 427, what: "'channel_creator' (was stream_creator_or_nobody) in server_supported_permission_settings", done: true, test: T('changelog', 'changelog - register keys of levels 393-435, and the ones Zulip removed') },
  { level: 428, what: 'peer_remove events for archived channels when a user is deactivated', done: true, test: T('changelog', 'changelog - deactivating a user sends peer_remove for archived channels too (FL 428)') },
  { level: 429, what: 'recipient_user_ids in E2EE payloads of direct messages, 1:1 and group (replacing pm_users)', done: true, test: T('push', 'push - E2EE as zulip-flutter speaks it (FL 468): a client device registers its key and token; a DM, a channel mention and a removal decrypt with its key') },
  { level: 430, what: 'email_address_visibility in GET /export/realm/consents', done: true, test: T('realm_export', 'realm export - export types, consents (with email_address_visibility, FL 430) and their realm_export_consent events, and the limit of five a week') },
  { level: 431, what: 'web_inbox_show_channel_folders user setting', done: true, test: T('changelog', 'changelog - personal settings of levels 393-435 are taken by PATCH /settings and the organization defaults, and reported in the register') },
  { level: 432, what: 'POST /mobile_push/register: push_key (a secretbox key) replaces push_public_key', done: true, test: T('push', 'push - E2EE: a device registers with its key, the service learns it, notifications are sealed for it') },
  { level: 433, what: 'is_imported_stub on user objects (false: no import here makes stub users)', done: true, test: T('changelog', 'changelog - is_imported_stub on every user object: false, as no import here makes stub users (FL 433)') },
  // The notices of actors/realm/channel_events.ts: made, renamed, description, access and posting permissions, retention period, topics policy, archived. Unarchiving posts none here (Zulip: "un-archived").
  { level: 434, what: 'send_channel_events_messages realm setting (PATCH /realm by administrators, register, realm update events) and the Notification Bot channel events notices it turns on and off', done: true, test: T('changelog', 'changelog - send_channel_events_messages: Notification Bot notices in the "channel events" topic of a channel made, changed or archived, while the setting is on; PATCH /realm by role, with its event (FL 434)') },
  { level: 435, what: 'server_report_message_types in POST /register', done: true, test: T('changelog', 'changelog - register keys of levels 393-435, and the ones Zulip removed') },
  { level: 436, what: 'emoji-only messages shown enlarged: a client rule; the message HTML is the emoji markup alone', done: true, test: T('changelog', 'changelog - rendering and register keys of levels 436-438: emoji-only messages (436), image syntax (437), realm_owner_full_content_access (438)') },
  { level: 437, what: 'GET /users: guests get no "Unknown user" placeholders, whatever user_list_incomplete', done: true, test: T('people-guests', 'people guests - who sees whom: GET /users and GET /users/{id} as every role, guests restricted and not') },
  { level: 437, what: 'Markdown image syntax in any block: a link to the image (no image previews here, FL 276), an audio player for an uploaded audio file (FL 405)', done: true, test: T('changelog', 'changelog - rendering and register keys of levels 436-438: emoji-only messages (436), image syntax (437), realm_owner_full_content_access (438)') },
  { level: 438, what: 'realm_owner_full_content_access in POST /register (false: no owner access to all private content here)', done: true, test: T('changelog', 'changelog - rendering and register keys of levels 436-438: emoji-only messages (436), image syntax (437), realm_owner_full_content_access (438)') },
  { level: 439, what: 'update_display_settings and update_global_notifications events sent to no client; user_settings events keep the legacy top-level settings', done: true, test: T('people-settings', 'people settings - clients without user_settings_object get the legacy top-level settings, kept by user_settings events: no legacy events (FL 439)') },
  { level: 440, what: 'GET /users/{user_id}/channels: subscribed_channel_ids, the channels of the user the caller has metadata access to (built from Zulip\'s API documentation)', routes: ['GET /users/{user_id}/channels'], test: T('subscriptions', "subscriptions - GET /users/{user_id}/subscriptions/{stream_id}: is_subscribed for every role, with Zulip's errors") },
  { level: 441, what: 'can_create_topic_group channel setting', missing: 'no permission group for creating new topics in a channel (sending checks no topic existence)' },
  { level: 442, what: 'tenor_api_key in POST /register (\'\': no GIF picker here); one GIF rating for GIPHY and Tenor, named gif_rating_policy since FL 453', done: true, test: T('realm', 'realm - settings of FL 52 to 246 by role, with their register keys and events: default_code_block_language, giphy_rating, org_type, the communities directory, the signup announcements channel, unique names, the Jitsi server') },
  { level: 443, what: 'create_time of attachment objects (GET /attachments, attachment events, detached_uploads) in seconds (and date_sent, until FL 472 gave message_ids instead)', done: true, test: T('uploads', 'attachments - GET /attachments with message_ids, DELETE /attachments/{id}, attachment events with upload_space_used, by role') },
  { level: 444, what: 'PATCH /settings: target_users and skip_if_already_edited for administrators', done: true, test: T('people-settings', "people settings - target_users: administrators change other users' settings") },
  { level: 445, what: "GET /messages: anchor 'date' with anchor_date", missing: 'no date anchor: pages are found by message ID only' },
  { level: 446, what: 'mentions narrow operator', missing: 'no mentions:<user> operator in narrows' },
  { level: 447, what: 'PATCH /bots/{bot_id}: short_name changes the bot\'s email', missing: 'PATCH /bots/{bot_id} takes no short_name' },
  { level: 448, what: 'GET /streams/{stream_id}/email_address only for users who may post to the channel', done: true, test: T('streams', 'streams - GET /streams/{id}/email_address: "" without an email gateway, for those who may post; sender_id (FL 226)') },
  { level: 449, what: 'export_type as strings (public, full_with_consent, full_without_consent)', missing: 'POST /export/realm takes and GET /export/realm gives export_type as integers' },
  { level: 450, what: 'push_device events give push_account_id as an integer', done: true, test: T('push', "push - E2EE: an iOS device gets the APNs form; a registration the service refuses fails with its code") },
  { level: 451, what: 'an invalid <time:...> renders as plain escaped text, not a timestamp-error element', done: true, test: T('markdown', 'markdown - channel and topic links, time, emoji, math') },
  { level: 452, what: 'delete_message events for messages a retention policy deletes', missing: 'no retention policy deletes messages here (message_retention_days is kept, never applied)' },
  { level: 453, what: 'gif_rating_policy (PATCH /realm, events, realm_gif_rating_policy) and gif_rating_policy_options in POST /register, replacing giphy_rating', done: true, test: T('realm', 'realm - settings of FL 52 to 246 by role, with their register keys and events: default_code_block_language, giphy_rating, org_type, the communities directory, the signup announcements channel, unique names, the Jitsi server') },
  { level: 454, what: "web_home_view 'recent' (recent_topics refused)", done: true, test: T('people-settings', 'people settings - values are checked against each setting') },
  { level: 455, what: 'use_for_user_matching on custom profile fields (POST, PATCH /realm/profile_fields, register, events)', done: true, test: T('people-profile-fields', 'people profile fields - creating, updating, reordering and deleting') },
  { level: 456, what: 'default_avatar_source realm setting', missing: 'no default_avatar_source setting (avatars are Gravatar only here)' },
  { level: 457, what: 'delete_message events to the deleter only with content access, with only the message IDs they can access: a topic deletion deletes only what the deleter reads, and a single deletion needs access to the message', done: true, test: T('changelog', 'changelog - deleting a topic without content access deletes nothing and sends the deleter no delete_message event (FL 457)') },
  // Levels 479-496: no changelog text is stored here (the copies end at 478); each entry is written from the
  // "Changes" notes of a newer zulip.yaml (SDK documentation in the search index) and zulip-flutter's comments.
  { level: 479, what: 'GET /thumbnail/status/{path}: has_thumbnail of an upload the user may see (always false: no thumbnails are made here, FL 276)', routes: ['GET /thumbnail/status/{realm_id}/{dir}/{name}/{filename}'], test: T('uploads', 'uploads - by role: a file linked in a public channel is for every member who may read its history, not for a guest outside it; its thumbnail status likewise (FL 479)') },
  { level: 480, what: 'GET /users/me/{stream_id}/topics for archived channels', done: true, test: T('changelog', 'changelog - GET /users/me/{stream_id}/topics answers for an archived channel (FL 480)') },
  { level: 481, what: 'POST /register: idle_queue_timeout (seconds or mobile), idle_queue_timeout_secs in the reply', done: true, test: T('flutter', 'zulip-flutter - idle_queue_timeout: seconds or mobile; anything else is a 400') },
  // The value is opaque to clients; its meaning (one ID per 1:1 conversation, FL 327) did not change.
  { level: 482, what: 'recipient_id of 1:1 direct messages took new values (the same conversation, the same ID)', done: true, test: T('changelog', 'changelog - an incoming 1:1 direct message has the recipient_id of an outgoing one in the conversation (FL 327)') },
  { level: 483, what: 'a successful E2EE registration of a token removes the legacy registrations of that token, at the push service too', done: true, test: T('push', 'push - an E2EE registration of a token removes its legacy registration, here and at the service (FL 483)') },
  { level: 484, what: 'the deprecated user object removed from reaction events', done: true, test: T('reactions', 'reactions - add and remove a unicode emoji, with events to the channel') },
  { level: 485, what: "url_options' input_type on incoming-webhook integrations: none here (realm_incoming_webhook_bots is empty), so no url_options to carry it", done: true, test: T('changelog', 'changelog - register keys of levels 393-435, and the ones Zulip removed') },
  { level: 486, what: 'unknown', missing: 'no description of this level could be read here (the changelog copies end at 478)' },
  { level: 487, what: 'GET /users/{user_id_or_email}/presence: active_timestamp and idle_timestamp (the legacy website and aggregated, removed here, were restored beside them at FL 497)', done: true, test: T('typing_presence', 'presence - a ping answers with everyone\'s presence; GET /realm/presence and /users/{id}/presence') },
  { level: 488, what: 'unknown', missing: 'no description of this level could be read here (the changelog copies end at 478)' },
  { level: 489, what: 'unknown', missing: 'no description of this level could be read here (the changelog copies end at 478)' },
  { level: 490, what: 'is_deleted on user objects (only present when true; a deleted user is also deactivated)', missing: 'no operation deletes a user here, so no user is ever deleted and is_deleted never appears' },
  { level: 491, what: 'individual_emoji_changes client capability: realm_emoji events per emoji', done: true, test: T('realm_emoji', 'realm emoji - add, list, image, deactivate; snapshot plus events, both formats') },
  { level: 492, what: 'POST /users/me/api_key/regenerate removes every E2EE push registration of the user', done: true, test: T('push', 'push - regenerating the API key removes every E2EE registration: client devices, with remove events, and push accounts; nothing more is sent (FL 492)') },
  { level: 493, what: 'POST /calls/videoprovider/create (and /register, the OAuth step), has_videoprovider_token', routes: ['POST /calls/videoprovider/create', 'POST /calls/videoprovider/register'], test: T('video_calls', 'video calls - every role may authorize and create calls; not without credentials') },
  { level: 494, what: 'bot storage (GET, PUT and DELETE /bot_storage) only for bots', missing: 'bot storage is not served here' },
  { level: 495, what: 'unknown', missing: 'no description of this level could be read here (the changelog copies end at 478)' },
  { level: 496, what: 'bots may edit user groups (PATCH /user_groups/{id}, POST /user_groups/{id}/members) as their permissions allow', done: true, test: T('changelog', 'changelog - a bot edits a user group it may manage: PATCH and members (FL 496)') },
];

/** Levels 458 to 478 (Zulip 12.0), from the rendered changelog at https://zulip.com/api/changelog. */
const CHANGELOG_458_478: readonly Feature[] = [
  { level: 458, what: 'GET /users/{user_id}/subscriptions/{stream_id} answers for bots (not the system bots, outside the organization in Zulip)', done: true, test: T('subscriptions', "subscriptions - GET /users/{user_id}/subscriptions/{stream_id}: is_subscribed for every role, with Zulip's errors") },
  { level: 458, what: 'GET /users/{user_id}/channels (FL 440, served since this level\'s work) answers for bots', routes: ['GET /users/{user_id}/channels'], test: T('subscriptions', "subscriptions - GET /users/{user_id}/subscriptions/{stream_id}: is_subscribed for every role, with Zulip's errors") },
  { level: 458, what: 'GET /user_groups/{user_group_id}/members/{user_id} answers for bots', done: true, test: T('people-groups', 'people groups - members and subgroups') },
  { level: 459, what: 'DELETE /users/{user_id}: actions (delete_profile, delete_public_channel_messages, delete_private_channel_messages, delete_direct_messages), applied to the user\'s bots then the user', missing: 'the actions parameter is not taken: deactivation deletes no profile and no messages' },
  { level: 460, what: 'Constructor Groups video calls: not configured here, as on a Zulip server without it: not in realm_available_video_chat_providers, and POST /calls/constructorgroups/create says so', routes: ['POST /calls/constructorgroups/create'], test: T('changelog', 'changelog - Constructor Groups (FL 460) and Nextcloud Talk (FL 465) are not configured here: not offered, and their create endpoints say so, for every role') },
  { level: 461, what: "realm_bot update events for a bot's new email: replaced at FL 474, which sends none (realm_user events tell it)", done: true, test: T('system-bots', 'system bots - snapshot + realm_bot and realm events == a fresh register (owner of the bot, administrator, bystander)') },
  { level: 462, what: 'rendered_description on the realm update event of the description: replaced by the update_dict of FL 464, which this server sends', done: true, test: T('realm', 'realm - snapshot plus realm events equals a fresh register') },
  { level: 463, what: "GET /bots/{bot_id}/api_key, for the bot's owner and administrators: keys are stored as hashes only, so each call issues the bot a new key beside its others (as POST /fetch_api_key does for a user)", routes: ['GET /bots/{bot_id}/api_key'], test: T('changelog', 'changelog - GET /bots/{bot_id}/api_key: its owner and administrators get a working key, for every role (FL 463)') },
  { level: 464, what: 'realm update_dict (not update) when the description changes; data.description is rendered, as register\'s realm_description', done: true, test: T('realm', 'realm - snapshot plus realm events equals a fresh register') },
  { level: 465, what: 'Nextcloud Talk video calls: not configured here, as on a Zulip server without it: not in realm_available_video_chat_providers, and POST /calls/nextcloud_talk/create says so', routes: ['POST /calls/nextcloud_talk/create'], test: T('changelog', 'changelog - Constructor Groups (FL 460) and Nextcloud Talk (FL 465) are not configured here: not offered, and their create endpoints say so, for every role') },
  { level: 466, what: 'realm_uuid in POST /register (the UUID the push service knows the organization by)', done: true, test: T('changelog', 'changelog - register keys of levels 458-478: realm_uuid (466)') },
  { level: 467, what: 'Markdown image syntax permits only uploaded images: no image is ever loaded here (an upload is a link, no thumbnails; a third-party URL a plain link)', done: true, test: T('changelog', 'changelog - image syntax: an uploaded image is a link to the file (no thumbnails here), a third-party image URL a plain link, never an <img> (FL 467)') },
  { level: 468, what: 'POST /register_client_device; devices in POST /register; device events (add, update, remove)', routes: ['POST /register_client_device'], test: T('push', 'push - E2EE as zulip-flutter speaks it (FL 468): a client device registers its key and token; a DM, a channel mention and a removal decrypt with its key') },
  { level: 468, what: 'POST /mobile_push/register redesigned: the push key and the FCM/APNs token registered and rotated apart, by device_id', done: true, test: T('push', 'push - E2EE (FL 468): an iOS device gets the APNs form; the key and the token rotate on their own; a removed device gets nothing') },
  { level: 468, what: 'POST /mobile_push/e2ee/test_notification takes device_id (not push_account_id)', done: true, test: T('push', 'push - E2EE as zulip-flutter speaks it (FL 468): a client device registers its key and token; a DM, a channel mention and a removal decrypt with its key') },
  { level: 468, what: 'POST /remotes/push/e2ee/register takes token_id instead of push_account_id', missing: 'this server registers devices with the push service still naming them by push_account_id (the device ID), not token_id' },
  { level: 468, what: 'push_devices removed from POST /register, push_device events removed', missing: 'both are still sent, for the FL 406-467 push-account form of POST /mobile_push/register that this server still takes beside the device form' },
  { level: 469, what: 'media_preview_size realm setting (PATCH /realm, register, events)', missing: 'not implemented: its values and default were not in the stored Zulip sources' },
  { level: 470, what: 'POST /remove_client_device', routes: ['POST /remove_client_device'], test: T('push', 'push - E2EE (FL 468): an iOS device gets the APNs form; the key and the token rotate on their own; a removed device gets nothing') },
  { level: 471, what: 'example_input and reverse_template on linkifiers (POST/PATCH /realm/filters, GET /realm/linkifiers, events); an empty string resets either to null', done: true, test: T('linkifiers', 'linkifiers - patterns and templates are checked') },
  { level: 466, what: "avatar_source may be 'J' (Jdenticon): every avatar here is a Gravatar ('G'), as no Jdenticon default exists (FL 456's default_avatar_source)", done: true, test: T('changelog', 'changelog - register keys of levels 458-478: realm_uuid (466)') },
  { level: 472, what: 'attachments give message_ids (a flat array) instead of messages of {id, date_sent}: GET /attachments, attachment events, detached_uploads', done: true, test: T('uploads', 'attachments - GET /attachments with message_ids, DELETE /attachments/{id}, attachment events with upload_space_used, by role') },
  { level: 473, what: 'POST /users/{user_id}/status by bots with the administrator role', done: true, test: T('changelog', "changelog - a bot with the administrator role sets another user's status; a member's bot may not (FL 473)") },
  { level: 474, what: 'bot objects (realm_bots, realm_bot add) without api_key, avatar_url, bot_type, email, full_name, is_active, owner_id; no realm_bot update for a key, avatar, email, name, owner, deactivation or reactivation', done: true, test: T('system-bots', 'system bots - snapshot + realm_bot and realm events == a fresh register (owner of the bot, administrator, bystander)') },
  { level: 474, what: 'a new owner: realm_bot delete and add for who loses and gains the bot, realm_user bot_owner_id for everyone, no realm_bot update', done: true, test: T('bot-update', 'bot update - a new owner: realm_bot delete and add, realm_user bot_owner_id; snapshot plus events equals a fresh register') },
  { level: 475, what: 'date_joined is the creation time, then the first login for a user created through the API; a realm_user update event tells it', done: true, test: T('people-api-keys', 'people api keys - fetch_api_key: email and password give a working key') },
  { level: 475, what: 'the realm_user update event of date_joined at the first login', done: true, test: T('people-users', 'people users - realm_user events for each change') },
  { level: 476, what: 'display_in_profile_summary for Paragraph (long text) custom profile fields', done: true, test: T('people-profile-fields', 'people profile fields - at most two in the profile summary') },
  { level: 477, what: 'workplace_users_group realm setting (PATCH /realm, register, events)', missing: 'not implemented: its default group and who may set it were not in the stored Zulip sources' },
  { level: 478, what: 'alternative_url_templates on linkifiers (POST/PATCH /realm/filters, GET /realm/linkifiers, register, events), for reverse linkification only', done: true, test: T('linkifiers', 'linkifiers - patterns and templates are checked') },
];

export const FEATURES: readonly Feature[] = [...CHANGELOG, ...CHANGELOG_149_277, ...CHANGELOG_278_310, ...CONTRACT, ...CHANGELOG_458_478];

export const isImplemented = (f: Feature, served: ReadonlySet<string>): boolean =>
  f.missing === undefined && (f.routes === undefined || f.routes.every((r) => served.has(r))) && (f.done === true || f.routes !== undefined);

/**
 * The feature level a server serving `served` (`METHOD /path`) advertises:
 * the highest L such that every level 1..L has an entry and every entry at or
 * below L (level 0 included) is implemented; 0 when level 1 is not.
 */
export function featureLevel(served: ReadonlySet<string>): number {
  const byLevel = new Map<number, Feature[]>();
  for (const f of FEATURES) byLevel.set(f.level, [...(byLevel.get(f.level) ?? []), f]);
  if (!(byLevel.get(0) ?? []).every((f) => isImplemented(f, served))) return 0;
  let level = 0;
  for (;;) {
    const next = byLevel.get(level + 1);
    if (!next || !next.every((f) => isImplemented(f, served))) return level;
    level += 1;
  }
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
