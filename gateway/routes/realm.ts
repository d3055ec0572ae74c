/** Organization settings: PATCH /realm. */
import { z } from 'zod';
import { NO_EFFECT_GROUP_SETTINGS, REALM_GROUP_SETTINGS } from '../../actors/realm/actions/organization/realm_settings.ts';
import { DIRECTORY_ID, directoryRef } from '../../actors/directory/ref.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { GroupSettingValue } from '../../storage/tables.ts';
import { bool, int, json, str, unsupported, wordOrInt } from '../params.ts';
import { caller, me, route } from '../route.ts';

const GroupChange = json(z.object({ new: GroupSettingValue, old: GroupSettingValue.optional() }).strict());
const Seconds = wordOrInt(['unlimited'] as const, 1, "must be a positive number of seconds or 'unlimited'");
/** Permissions stored without effect: a change is reported in `ignored_parameters_unsupported` and not made. */
const NO_EFFECT = NO_EFFECT_GROUP_SETTINGS;
const GROUP_NAMES = Object.keys(REALM_GROUP_SETTINGS).filter((k) => !NO_EFFECT.has(k));

export const updateRealm = route({
  method: 'PATCH',
  path: '/realm',
  auth: 'required',
  params: {
    name: str().optional(),
    description: str().optional(),
    message_retention_days: wordOrInt(['unlimited'] as const, Number.MIN_SAFE_INTEGER, "must be a number of days or 'unlimited'").optional(),
    topics_policy: str().pipe(z.enum(['allow_empty_topic', 'disable_empty_topic'])).optional(),
    enable_spectator_access: bool().optional(),
    invite_required: bool().optional(),
    emails_restricted_to_domains: bool().optional(),
    disallow_disposable_email_addresses: bool().optional(),
    waiting_period_threshold: int().pipe(z.number().int().nonnegative()).optional(),
    default_language: str().optional(),
    allow_message_editing: bool().optional(),
    message_content_edit_limit_seconds: Seconds.optional(),
    message_content_delete_limit_seconds: Seconds.optional(),
    enable_read_receipts: bool().optional(),
    message_content_allowed_in_email_notifications: bool().optional(),
    digest_emails_enabled: bool().optional(),
    send_welcome_emails: bool().optional(),
    digest_weekday: int().optional(),
    welcome_message_custom_text: str().optional(),
    new_stream_announcements_stream_id: int().optional(),
    video_chat_provider: int().optional(),
    move_messages_within_stream_limit_seconds: Seconds.optional(),
    move_messages_between_streams_limit_seconds: Seconds.optional(),
    enable_guest_user_indicator: bool().optional(),
    enable_guest_user_dm_warning: bool().optional(),
    send_channel_events_messages: bool().optional(),
    moderation_request_channel_id: int().optional(),
    zulip_update_announcements_stream_id: int().optional(),
    default_code_block_language: str().optional(),
    gif_rating_policy: int().optional(),
    default_avatar_source: str().optional(),
    media_preview_size: int().optional(),
    org_type: int().optional(),
    want_advertise_in_communities_directory: bool().optional(),
    signup_announcements_stream_id: int().optional(),
    require_unique_names: bool().optional(),
    require_e2ee_push_notifications: bool().optional(),
    // JSON-encoded, as Zulip takes it (`Json[str]`): a URL or "default".
    jitsi_server_url: json(z.string()).optional(),
    message_edit_history_visibility_policy: str().pipe(z.enum(['all', 'moves', 'none'])).optional(),
    /** A demo organization's new subdomain (FL 104): the directory actor owns subdomains. */
    string_id: str().optional(),
    ...(Object.fromEntries(GROUP_NAMES.map((k) => [k, GroupChange.optional()])) as Record<string, z.ZodOptional<typeof GroupChange>>),
    ...(Object.fromEntries([...NO_EFFECT].map((k) => [k, unsupported(GroupChange)])) as Record<string, typeof GroupChange>),
  },
  async handle(ctx, p) {
    const params = p as Record<string, unknown>;
    const groups: Record<string, z.output<typeof GroupChange>> = {};
    for (const k of GROUP_NAMES) if (params[k] !== undefined) groups[k] = params[k] as z.output<typeof GroupChange>;
    const { string_id: stringId, ...plain } = Object.fromEntries(Object.entries(params).filter(([k, v]) => v !== undefined && !GROUP_NAMES.includes(k) && !NO_EFFECT.has(k)));
    const update = { type: 'updateRealm' as const, caller: caller(ctx), ...plain, groups };
    if (stringId === undefined) return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), update);
    // string_id is the directory's (it owns which host serves which organization). Sent with other settings,
    // those are made first and string_id last, as Zulip's update_realm does: two calls, each one atomic.
    const settings = Object.keys(plain).length || Object.keys(groups).length ? await ctx.actors.call(realmRef, realmActorId(me(ctx).realmId), update) : {};
    const moved = await ctx.actors.call(directoryRef, DIRECTORY_ID, { type: 'changeOrganizationSubdomain', caller: caller(ctx), subdomain: String(stringId) });
    return { ...(settings as Record<string, unknown>), ...moved };
  },
});

/**
 * POST /realm/deactivate: an owner deactivates their organization (Zulip's
 * `deactivate_realm`), through the directory as the server's deactivation
 * goes; `deletion_delay_days` (FL 332) is at least
 * `server_min_deactivated_realm_deletion_days`, or null for no deletion.
 */
export const deactivateRealm = route({
  method: 'POST',
  path: '/realm/deactivate',
  auth: 'required',
  params: { deletion_delay_days: json(z.number().int().nullable()).optional() },
  async handle(ctx, p) {
    const realmId = me(ctx).realmId;
    await ctx.actors.call(directoryRef, DIRECTORY_ID, { type: 'setOrganizationDeactivated', caller: caller(ctx), realmId, deactivated: true, deletionDelayDays: p.deletion_delay_days ?? null });
    return {};
  },
});

/** Welcome Bot sends the administrator a custom welcome text to preview (FL 416). */
export const testWelcomeBotCustomMessage = route({
  method: 'POST',
  path: '/realm/test_welcome_bot_custom_message',
  auth: 'required',
  params: { welcome_message_custom_text: str() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'testWelcomeBotCustomMessage', caller: caller(ctx), text: p.welcome_message_custom_text });
  },
});
