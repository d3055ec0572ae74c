/**
 * What each API route answers: the fields of its success body (inside the
 * envelope of `envelope.ts`) and the errors it may give beyond the common
 * ones, keyed `METHOD /path` as the routes declare them
 * (`gateway/routes/index.ts`). The OpenAPI document (`document.ts`) is built
 * from this catalog, and in check mode every reply is validated against it
 * (`check.ts`). A route without an entry here fails `test/openapi.test.ts`.
 */
import { z } from 'zod';
import {
  AttachmentObject,
  ChannelFolderObject,
  ChannelObject,
  DraftObject,
  FetchedMessage,
  ClientEvent,
  LinkifierObject,
  MessageObject,
  ProfileFieldObject,
  RealmDomainObject,
  RealmEmojiObject,
  NavigationViewObject,
  RealmExportObject,
  SavedSnippetObject,
  ReminderObject,
  ScheduledMessageObject,
  SubscriptionObject,
  UserGroupObject,
  UserObject,
} from '../../actors/events/schema.ts';
import { PLAIN, REALM_GROUP_SETTINGS } from '../../actors/realm/actions/organization/realm_settings.ts';
import { GroupSettingValue } from '../../storage/tables.ts';
import type { Route } from '../route.ts';
import { AUTH_ERRORS, COMMON_ERRORS, type ErrorCase, Id, success } from './envelope.ts';
import { InviteObject, LegacyPresence, MessageHistoryEntry, ModernPresence, Presences, RegisterFields, StatusObject } from './objects.ts';

/** What one route answers. */
export interface RouteResponses {
  /** The success body (envelope included); absent for a route that answers bytes. */
  success?: z.ZodType;
  /** A route that answers bytes of this media type instead of JSON. */
  binary?: string;
  /** Errors beyond the common ones (`COMMON_ERRORS`, and `AUTH_ERRORS` for routes with credentials). */
  errors: readonly ErrorCase[];
}

const fields = (shape: z.ZodRawShape, ...errors: ErrorCase[]): RouteResponses => ({ success: success(shape), errors });
/** A success with nothing but the envelope. */
const empty = (...errors: ErrorCase[]): RouteResponses => fields({}, ...errors);
const bytes = (type: string, ...errors: ErrorCase[]): RouteResponses => ({ binary: type, errors });

const ADMIN: ErrorCase = ['UNAUTHORIZED_PRINCIPAL', 400];
const NO_STREAM: ErrorCase = ['STREAM_DOES_NOT_EXIST', 400];
const NARROW: ErrorCase = ['BAD_NARROW', 400];
const QUEUE: ErrorCase = ['BAD_EVENT_QUEUE_ID', 400];
const MISMATCH: ErrorCase = ['EXPECTATION_MISMATCH', 400];
const NOT_FOUND: ErrorCase = ['BAD_REQUEST', 404];
const FORBIDDEN: ErrorCase = ['BAD_REQUEST', 403];

const Ids = z.array(Id);
/** `subscribed` / `already_subscribed`: channel names by user (ID or email, as the request named them). */
const NamesByUser = z.record(z.string(), z.array(z.string()));
const { user_id: _userId, ...userFields } = UserObject.shape;
void _userId;
/** A fetched message without search highlights (`GET /messages/{message_id}`). */
const SingleMessage = MessageObject.extend({ flags: z.array(z.string()) }).strict();

export const RESPONSES: Readonly<Record<string, RouteResponses>> = {
  // ---- messages
  'POST /messages': fields(
    {
      id: Id,
      /** The sender's new visibility policy for the topic, when this send changed it. */
      automatic_new_visibility_policy: Id.optional(),
    },
    NO_STREAM,
    ['STREAM_WILDCARD_MENTION_NOT_ALLOWED', 400],
    ['TOPIC_WILDCARD_MENTION_NOT_ALLOWED', 400],
  ),
  'GET /messages': fields(
    {
      messages: z.array(FetchedMessage),
      /** 'newest' past the last message is Zulip's LARGER_THAN_MAX_MESSAGE_ID (10^16): beyond the safe integers, so not checked as one. None for a fetch by `message_ids` (FL 300). */
      anchor: z.number().optional(),
      found_anchor: z.boolean(),
      found_oldest: z.boolean(),
      found_newest: z.boolean(),
      history_limited: z.boolean(),
    },
    NARROW,
  ),
  'GET /messages/matches_narrow': fields({ messages: z.record(z.string(), z.object({ match_content: z.string(), match_subject: z.string() }).strict()) }, NARROW),
  'GET /messages/{message_id}': fields({ raw_content: z.string(), message: SingleMessage }),
  'PATCH /messages/{message_id}': fields(
    {
      /** The sender's uploads the edit unlinked from their last message (FL 285): reachable only through the edit history now. */
      detached_uploads: z.array(AttachmentObject),
    },
    ['MOVE_MESSAGES_TIME_LIMIT_EXCEEDED', 400],
    MISMATCH,
  ),
  'DELETE /messages/{message_id}': empty(),
  /** complete: false when topic messages are left for the client to delete by repeating the request (FL 211). */
  'POST /streams/{stream_id}/delete_topic': fields({ complete: z.boolean() }, ADMIN),
  'GET /messages/{message_id}/history': fields({ message_history: z.array(MessageHistoryEntry) }),
  'GET /messages/{message_id}/read_receipts': fields({ user_ids: Ids }),
  'POST /messages/{message_id}/report': empty(),
  'POST /messages/{message_id}/reactions': empty(['REACTION_ALREADY_EXISTS', 400]),
  'DELETE /messages/{message_id}/reactions': empty(['REACTION_DOES_NOT_EXIST', 400]),
  'POST /messages/render': fields({ rendered: z.string() }),
  'POST /messages/flags': fields({ messages: Ids, ignored_because_not_subscribed_channels: Ids.optional() }),
  'POST /messages/flags/narrow': fields(
    {
      processed_count: Id,
      updated_count: Id,
      first_processed_id: Id.nullable(),
      last_processed_id: Id.nullable(),
      found_oldest: z.boolean(),
      found_newest: z.boolean(),
      ignored_because_not_subscribed_channels: Ids.optional(),
    },
    NARROW,
  ),
  'POST /mark_all_as_read': fields({ complete: z.boolean() }),
  'POST /mark_stream_as_read': empty(),
  'POST /mark_topic_as_read': empty(),
  'GET /users/me/{stream_id}/topics': fields({ topics: z.array(z.object({ name: z.string(), max_id: Id }).strict()) }),
  'POST /user_topics': empty(),
  'PATCH /users/me/subscriptions/muted_topics': empty(),
  'POST /scheduled_messages': fields({ scheduled_message_id: Id }, NO_STREAM),
  'GET /scheduled_messages': fields({ scheduled_messages: z.array(ScheduledMessageObject) }),
  'PATCH /scheduled_messages/{scheduled_message_id}': empty(NO_STREAM),
  'DELETE /scheduled_messages/{scheduled_message_id}': empty(),
  'POST /reminders': fields({ reminder_id: Id }),
  'GET /reminders': fields({ reminders: z.array(ReminderObject) }),
  'DELETE /reminders/{reminder_id}': empty(NOT_FOUND),

  // ---- events
  'POST /register': fields(RegisterFields, NARROW),
  'GET /events': fields({ events: z.array(ClientEvent), queue_id: z.string() }, QUEUE),
  'DELETE /events': empty(QUEUE),

  // ---- channels and subscriptions
  'POST /users/me/subscriptions': fields(
    {
      subscribed: NamesByUser,
      already_subscribed: NamesByUser,
      /** Private channels the caller may not subscribe to (with authorization_errors_fatal=false). */
      unauthorized: z.array(z.string()).optional(),
      /** Whether Notification Bot told the users subscribed by someone else (FL 397); only when the request asked it to. */
      new_subscription_messages_sent: z.boolean().optional(),
    },
  ),
  /** FL 417: the new channel's ID; 409 when a channel of that name exists. */
  'POST /channels/create': fields({ id: Id }, ['CHANNEL_ALREADY_EXISTS', 409]),
  'GET /users/me/subscriptions': fields({ subscriptions: z.array(SubscriptionObject) }),
  'GET /users/{user_id}/subscriptions/{stream_id}': fields({ is_subscribed: z.boolean() }),
  'DELETE /users/me/subscriptions': fields({ removed: z.array(z.string()), not_removed: z.array(z.string()) }),
  'POST /users/me/subscriptions/properties': empty(),
  'POST /users/me/subscriptions/{stream_id}': empty(),
  'GET /streams': fields({ streams: z.array(ChannelObject.extend({ is_default: z.boolean().optional() }).strict()) }),
  'GET /streams/{stream_id}': fields({ stream: ChannelObject }),
  // Changing the retention period is for owners.
  'PATCH /streams/{stream_id}': empty(ADMIN),
  'DELETE /streams/{stream_id}': empty(),
  'GET /streams/{stream_id}/members': fields({ subscribers: Ids }),
  'GET /get_stream_id': fields({ stream_id: Id }),
  'GET /default_streams': fields({ default_streams: z.array(ChannelObject) }),
  'POST /default_streams': empty(ADMIN),
  'DELETE /default_streams': empty(ADMIN),
  'POST /default_stream_groups/create': empty(ADMIN),
  'PATCH /default_stream_groups/{group_id}': empty(ADMIN),
  'PATCH /default_stream_groups/{group_id}/streams': empty(ADMIN),
  'DELETE /default_stream_groups/{group_id}': empty(ADMIN),
  'POST /channel_folders/create': fields({ channel_folder_id: Id }, ADMIN),
  'GET /channel_folders': fields({ channel_folders: z.array(ChannelFolderObject) }),
  'PATCH /channel_folders/{channel_folder_id}': empty(ADMIN),
  'PATCH /channel_folders': empty(ADMIN),

  // ---- organization
  // The settings that changed (FL 150): "updated" for a string, else the value; a permission as its group-setting value.
  'POST /realm/test_welcome_bot_custom_message': fields({ message_id: Id }, ADMIN),
  'PATCH /realm': fields({ ...Object.fromEntries([...Object.keys(PLAIN), ...Object.keys(REALM_GROUP_SETTINGS)].map((k) => [k, z.union([z.string(), z.number(), z.boolean(), z.null(), GroupSettingValue]).optional()])), realm_uri: z.string().optional(), realm_url: z.string().optional() }, ADMIN),
  'POST /realm/deactivate': empty(ADMIN),
  'GET /realm/linkifiers': fields({ linkifiers: z.array(LinkifierObject) }),
  'POST /realm/filters': fields({ id: Id }, ADMIN),
  'PATCH /realm/filters/{filter_id}': empty(ADMIN),
  'DELETE /realm/filters/{filter_id}': empty(ADMIN),
  'PATCH /realm/linkifiers': empty(ADMIN),
  'GET /realm/domains': fields({ domains: z.array(RealmDomainObject) }),
  // Zulip's `new_domain`: [the new row's ID, the domain].
  'POST /realm/domains': fields({ new_domain: z.tuple([Id, z.string()]) }, ADMIN),
  'PATCH /realm/domains/{domain}': empty(ADMIN),
  'DELETE /realm/domains/{domain}': empty(ADMIN),
  'POST /realm/playgrounds': fields({ id: Id }, ADMIN),
  'DELETE /realm/playgrounds/{playground_id}': empty(ADMIN),
  'POST /export/realm': fields({ id: Id }, ADMIN),
  'GET /export/realm': fields({ exports: z.array(RealmExportObject) }, ADMIN),
  'DELETE /export/realm/{export_id}': empty(ADMIN),
  'GET /export/realm/consents': fields({ export_consents: z.array(z.object({ user_id: Id, consented: z.boolean(), email_address_visibility: Id }).strict()) }, ADMIN),
  'POST /invites': empty(['INVITATION_FAILED', 400]),
  'POST /invites/multiuse': fields({ invite_link: z.string() }),
  'GET /invites': fields({ invites: z.array(InviteObject) }),
  'DELETE /invites/{invite_id}': empty(ADMIN),
  'DELETE /invites/multiuse/{invite_id}': empty(ADMIN),
  'POST /invites/{invite_id}/resend': empty(ADMIN),
  'POST /calls/videoprovider/register': fields({ url: z.string() }),
  'POST /calls/videoprovider/create': fields({ url: z.string() }, ['INVALID_VIDEOPROVIDER_TOKEN', 400]),
  'GET /server_settings': fields({
    push_notifications_enabled: z.boolean(),
    authentication_methods: z
      .object({
        password: z.boolean(),
        dev: z.boolean(),
        email: z.boolean(),
        ldap: z.boolean(),
        remoteuser: z.boolean(),
        github: z.boolean(),
        azuread: z.boolean(),
        gitlab: z.boolean(),
        apple: z.boolean(),
        google: z.boolean(),
        saml: z.boolean(),
        'openid connect': z.boolean(),
      })
      .strict(),
    email_auth_enabled: z.boolean(),
    /** Single sign-on providers; Parley has none. */
    external_authentication_methods: z.array(z.never()),
    // The organization's keys: absent for a host that names no organization (as Zulip answers).
    realm_name: z.string().optional(),
    realm_description: z.string().optional(),
    realm_icon: z.string().optional(),
    realm_web_public_access_enabled: z.boolean().optional(),
    realm_uri: z.string().optional(),
    realm_url: z.string().optional(),
    require_email_format_usernames: z.boolean(),
    service_version: z.string(),
    zulip_version: z.string(),
    zulip_merge_base: z.string(),
    service_feature_level: Id,
    zulip_feature_level: Id,
    /** Whether the client (by its User-Agent) is too old for this server. */
    is_incompatible: z.boolean(),
  }),
  'GET /openapi.json': bytes('application/json'),

  // ---- people
  'GET /users': fields({ members: z.array(UserObject) }),
  'POST /users': fields({ user_id: Id }, ADMIN),
  'POST /bots': fields({
    user_id: Id,
    api_key: z.string(),
    avatar_url: z.string().nullable(),
    default_sending_stream: z.string().nullable(),
    default_events_register_stream: z.string().nullable(),
    default_all_public_streams: z.boolean(),
  }),
  'GET /bots': fields({
    bots: z.array(
      z
        .object({
          user_id: Id,
          full_name: z.string(),
          username: z.string(),
          avatar_url: z.string().nullable(),
          bot_type: Id.nullable(),
          owner_id: Id.nullable(),
          is_active: z.boolean(),
          /** An outgoing-webhook bot's service: where messages go, and the token they carry. */
          services: z.array(z.object({ base_url: z.string(), interface: Id, token: z.string() }).strict()),
        })
        .strict(),
    ),
  }),
  'PATCH /bots/{bot_id}': fields(
    {
      full_name: z.string(),
      avatar_url: z.string().nullable(),
      service_interface: Id,
      service_payload_url: z.string().nullable(),
      config_data: z.null(),
      default_sending_stream: z.string().nullable(),
      default_events_register_stream: z.string().nullable(),
      default_all_public_streams: z.boolean(),
      /** Present when bot_owner_id was given: the new owner's email. */
      bot_owner: z.string().optional(),
    },
    ADMIN,
  ),
  'GET /bots/{bot_id}/api_key': fields({ api_key: z.string() }),
  'GET /users/{user_id}/channels': fields({ subscribed_channel_ids: z.array(Id) }),
  'GET /users/me': fields({ user_id: Id, ...userFields, max_message_id: Id }),
  'DELETE /users/me': empty(['CANNOT_DEACTIVATE_LAST_USER', 400]),
  'GET /users/{user_id}': fields({ user: UserObject }),
  'PATCH /users/{user_id}': empty(ADMIN),
  'DELETE /users/{user_id}': empty(ADMIN),
  'POST /users/{user_id}/reactivate': empty(),
  'POST /fetch_api_key': fields({ api_key: z.string(), email: z.string(), user_id: Id }, ['AUTHENTICATION_FAILED', 401], ['USER_DEACTIVATED', 401]),
  'POST /jwt/fetch_api_key': fields({ api_key: z.string(), email: z.string(), user: UserObject.optional() }, ['AUTHENTICATION_FAILED', 401], ['USER_DEACTIVATED', 401]),
  'POST /users/me/api_key/regenerate': fields({ api_key: z.string() }),
  // target_users is for administrators.
  'PATCH /settings': empty(ADMIN),
  'PATCH /settings/display': empty(ADMIN),
  'PATCH /settings/notifications': empty(ADMIN),
  'PATCH /realm/user_settings_defaults': empty(ADMIN),
  'POST /users/me/status': empty(),
  'GET /users/{user_id}/status': fields({ status: StatusObject }),
  'POST /users/{user_id}/status': empty(ADMIN),
  'POST /user_groups/create': fields({ group_id: Id }),
  'GET /user_groups': fields({ user_groups: z.array(UserGroupObject) }),
  'PATCH /user_groups/{user_group_id}': empty(MISMATCH),
  'POST /user_groups/{user_group_id}/deactivate': empty(['CANNOT_DEACTIVATE_GROUP_IN_USE', 400]),
  'POST /user_groups/{user_group_id}/members': empty(),
  'POST /user_groups/{user_group_id}/subgroups': empty(),
  'GET /user_groups/{user_group_id}/members': fields({ members: Ids }),
  'GET /user_groups/{user_group_id}/members/{user_id}': fields({ is_user_group_member: z.boolean() }),
  'GET /user_groups/{user_group_id}/subgroups': fields({ subgroups: Ids }),
  'GET /realm/profile_fields': fields({ custom_fields: z.array(ProfileFieldObject) }),
  'POST /realm/profile_fields': fields({ id: Id }, ADMIN),
  'PATCH /realm/profile_fields': empty(ADMIN),
  'PATCH /realm/profile_fields/{field_id}': empty(ADMIN),
  'DELETE /realm/profile_fields/{field_id}': empty(ADMIN),
  'PATCH /users/me/profile_data': empty(),

  // ---- typing and presence
  'POST /typing': empty(),
  'POST /messages/{message_id}/typing': empty(),
  'POST /users/me/presence': fields({
    server_timestamp: z.number(),
    zephyr_mirror_active: z.boolean(),
    /** Absent for a ping_only update. */
    presences: Presences.optional(),
    presence_last_update_id: Id.optional(),
  }),
  'GET /realm/presence': fields({ presences: Presences, server_timestamp: z.number() }),
  'GET /users/{user_id_or_email}/presence': fields({ presence: LegacyPresence.extend(ModernPresence.shape) }),

  // ---- the user's own lists
  'GET /drafts': fields({ count: Id, drafts: z.array(DraftObject) }),
  'POST /drafts': fields({ ids: Ids }),
  'PATCH /drafts/{draft_id}': empty(),
  'DELETE /drafts/{draft_id}': empty(),
  'POST /users/me/apns_device_token': empty(),
  'DELETE /users/me/apns_device_token': empty(),
  'POST /users/me/android_gcm_reg_id': empty(),
  'DELETE /users/me/android_gcm_reg_id': empty(),
  'POST /mobile_push/test_notification': empty(['INVALID_PUSH_DEVICE_TOKEN', 400], ['NO_ACTIVE_PUSH_DEVICE', 400], ['PUSH_SERVICE_NOT_CONFIGURED', 400]),
  'POST /mobile_push/register': empty(['PUSH_SERVICE_NOT_CONFIGURED', 400]),
  'POST /mobile_push/e2ee/test_notification': empty(['NO_ACTIVE_PUSH_DEVICE', 400], ['PUSH_SERVICE_NOT_CONFIGURED', 400]),
  'POST /register_client_device': fields({ device_id: Id }),
  'POST /remove_client_device': empty(),
  'GET /saved_snippets': fields({ saved_snippets: z.array(SavedSnippetObject) }),
  'POST /saved_snippets': fields({ saved_snippet_id: Id }),
  'PATCH /saved_snippets/{saved_snippet_id}': empty(),
  'DELETE /saved_snippets/{saved_snippet_id}': empty(),
  'GET /navigation_views': fields({ navigation_views: z.array(NavigationViewObject) }),
  'POST /navigation_views': empty(),
  'PATCH /navigation_views/{fragment}': empty(NOT_FOUND),
  'DELETE /navigation_views/{fragment}': empty(NOT_FOUND),
  'GET /users/me/alert_words': fields({ alert_words: z.array(z.string()) }),
  'POST /users/me/alert_words': fields({ alert_words: z.array(z.string()) }),
  'DELETE /users/me/alert_words': fields({ alert_words: z.array(z.string()) }),
  'POST /users/me/muted_users/{muted_user_id}': empty(),
  'DELETE /users/me/muted_users/{muted_user_id}': empty(),

  // ---- files and custom emoji
  'POST /user_uploads': fields({ uri: z.string(), url: z.string(), filename: z.string() }),
  'GET /user_uploads/{realm_id}/{dir}/{name}/{filename}': fields({ url: z.string() }, NOT_FOUND, FORBIDDEN),
  'GET /thumbnail/status/{realm_id}/{dir}/{name}/{filename}': fields({ has_thumbnail: z.boolean() }, NOT_FOUND, FORBIDDEN),
  'POST /users/me/onboarding_steps': empty(),
  'GET /bot_storage': fields({ storage: z.record(z.string(), z.string()) }),
  'PUT /bot_storage': empty(),
  'DELETE /bot_storage': empty(),
  'POST /calls/zoom/create': fields({ url: z.string() }),
  'POST /calls/constructorgroups/create': fields({ url: z.string() }),
  'POST /calls/nextcloud_talk/create': fields({ url: z.string() }),
  'POST /calls/bigbluebutton/create': fields({ url: z.string() }),
  'GET /streams/{stream_id}/email_address': fields({ email: z.string() }),
  'GET /attachments': fields({ attachments: z.array(AttachmentObject), upload_space_used: Id }),
  'DELETE /attachments/{attachment_id}': empty(),
  'POST /realm/emoji/{emoji_name}': empty(),
  'DELETE /realm/emoji/{emoji_name}': empty(['BAD_REQUEST', 404]),
  'GET /realm/emoji': fields({ emoji: z.record(z.string(), RealmEmojiObject) }),
  'GET /realm/emoji/{emoji_id}/image': bytes('application/octet-stream', NOT_FOUND),
};

/** The catalog key of a route. */
export const routeKey = (r: { method: string; path: string }): string => `${r.method} ${r.path}`;

/** Every error a route may answer: the common ones, the credential ones, its own. */
export function errorCases(route: Pick<Route, 'auth'>, responses: RouteResponses): ErrorCase[] {
  const all = [...COMMON_ERRORS, ...(route.auth === 'required' ? AUTH_ERRORS : []), ...responses.errors];
  const seen = new Set<string>();
  return all.filter(([code, status]) => {
    const key = `${code} ${status}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

