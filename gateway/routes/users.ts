/**
 * Users: GET /users, /users/me, /users/{user_id} (or an email), POST /users,
 * PATCH /users/{user_id}, DELETE /users/{user_id} and /users/me, POST
 * /users/{user_id}/reactivate; and GET /server_settings.
 *
 * Routes under /users/me are listed before the /users/{user_id} ones
 * (`gateway/routes/index.ts`): the router takes the first match.
 */
import { z } from 'zod';
import { pushConfigured } from '../../lib/push.ts';
import { clientExtavatar } from '../../actors/format.ts';
import { ProfileDataEntry } from '../../actors/realm/actions/people/profile_fields.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { hashPassword } from '../../lib/secrets.ts';
import { SERVER_VERSION } from '../../lib/version.ts';
import { announceRevocation } from '../auth.ts';
import { bool, fullName, int, json, role, str, unsupported } from '../params.ts';
import { caller, me, route, serverCaller } from '../route.ts';

const realmOf = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);
const UserId = int().pipe(z.number().int().nonnegative());
const ReadParams = {
  client_extavatar: bool().optional(),
  client_gravatar: bool().optional(),
  include_custom_profile_fields: bool().optional(),
};
const Email = str().pipe(z.string().trim().email({ message: 'is not a valid email address' }).max(254));

export const listUsers = route({
  method: 'GET',
  path: '/users',
  auth: 'required',
  params: { ...ReadParams, user_ids: json(z.array(z.number().int())).optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), {
      type: 'listUsers',
      caller: caller(ctx),
      userIds: p.user_ids ?? null,
      clientExtavatar: clientExtavatar(p),
      includeCustomProfileFields: p.include_custom_profile_fields ?? false,
    });
  },
});

export const getOwnUser = route({
  method: 'GET',
  path: '/users/me',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'getOwnUser', caller: caller(ctx) });
  },
});

/** GET /users/{user_id} and GET /users/{email}: one route, as both are one path segment. */
export const getUser = route({
  method: 'GET',
  path: '/users/{user_id}',
  auth: 'required',
  params: { user_id: str().pipe(z.string().min(1)), ...ReadParams },
  async handle(ctx, p) {
    const user = /^\d+$/.test(p.user_id) ? Number(p.user_id) : p.user_id;
    return ctx.actors.raw(realmRef, realmOf(ctx), {
      type: 'getUser',
      caller: caller(ctx),
      user,
      clientExtavatar: clientExtavatar(p),
      includeCustomProfileFields: p.include_custom_profile_fields ?? false,
    });
  },
});

export const createUser = route({
  method: 'POST',
  path: '/users',
  auth: 'required',
  params: {
    email: Email,
    password: str().pipe(z.string().max(1024)),
    full_name: str().pipe(z.string().max(1024)),
  },
  async handle(ctx, p) {
    // Hashing is slow by design: it runs here, never in the realm's mailbox.
    const passwordHash = await hashPassword(p.password);
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'createUser', caller: caller(ctx), email: p.email, passwordHash, fullName: p.full_name });
  },
});

/** PATCH /users/{user_id} and PATCH /users/{email} (FL 313): one route, as both are one path segment. */
export const updateUser = route({
  method: 'PATCH',
  path: '/users/{user_id}',
  auth: 'required',
  params: {
    user_id: str().pipe(z.string().min(1)),
    full_name: fullName().optional(),
    role: role().optional(),
    profile_data: json(z.array(ProfileDataEntry)).optional(),
    new_email: Email.optional(),
  },
  async handle(ctx, p) {
    const reply = await ctx.actors.call(realmRef, realmOf(ctx), {
      type: 'updateUser',
      caller: caller(ctx),
      userId: /^\d+$/.test(p.user_id) ? Number(p.user_id) : p.user_id,
      fullName: p.full_name ?? null,
      role: p.role ?? null,
      profileData: p.profile_data ?? null,
      newEmail: p.new_email ?? null,
    });
    await announceRevocation(me(ctx).realmId, reply.revoked);
    return {};
  },
});

export const deactivateSelf = route({
  method: 'DELETE',
  path: '/users/me',
  auth: 'required',
  params: {},
  async handle(ctx) {
    const reply = await ctx.actors.call(realmRef, realmOf(ctx), { type: 'deactivateSelf', caller: caller(ctx) });
    await announceRevocation(me(ctx).realmId, reply.revoked);
    return {};
  },
});

/** DELETE /users/{user_id}'s `actions` (FL 459): an object of these booleans, each false when absent; another name is refused. */
const DeactivationActions = z
  .object({
    delete_profile: z.boolean().optional(),
    delete_public_channel_messages: z.boolean().optional(),
    delete_private_channel_messages: z.boolean().optional(),
    delete_direct_messages: z.boolean().optional(),
  })
  .strict();

export const deactivateUser = route({
  method: 'DELETE',
  path: '/users/{user_id}',
  auth: 'required',
  // The notification email is not sent: there is no outgoing email yet.
  params: { user_id: UserId, actions: json(DeactivationActions).optional(), deactivation_notification_comment: unsupported(str().pipe(z.string().max(2000))) },
  async handle(ctx, p) {
    const a = p.actions ?? {};
    const actions = {
      deleteProfile: a.delete_profile ?? false,
      deletePublicChannelMessages: a.delete_public_channel_messages ?? false,
      deletePrivateChannelMessages: a.delete_private_channel_messages ?? false,
      deleteDirectMessages: a.delete_direct_messages ?? false,
    };
    const reply = await ctx.actors.call(realmRef, realmOf(ctx), { type: 'deactivateUser', caller: caller(ctx), userId: p.user_id, actions });
    await announceRevocation(me(ctx).realmId, reply.revoked);
    return {};
  },
});

export const reactivateUser = route({
  method: 'POST',
  path: '/users/{user_id}/reactivate',
  auth: 'required',
  params: { user_id: UserId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmOf(ctx), { type: 'reactivateUser', caller: caller(ctx), userId: p.user_id });
  },
});

/** The server's part of GET /server_settings, the same for every organization. */
const SERVER_SETTINGS = {
  // Zulip's deprecated map of every backend it knows (gitlab since FL 1): only email and password are enabled here.
  authentication_methods: { password: true, dev: false, email: true, ldap: false, remoteuser: false, github: false, azuread: false, gitlab: false, apple: false, google: false, saml: false, 'openid connect': false },
  // Email and password is the one way in; no single sign-on provider is configured.
  email_auth_enabled: true,
  external_authentication_methods: [],
  require_email_format_usernames: true,
};

export const serverSettings = route({
  method: 'GET',
  path: '/server_settings',
  auth: 'none',
  // Zulip answers a host with no organization too, with the server's part only (no realm_* keys).
  organization: 'optional',
  params: {},
  async handle(ctx) {
    const realm = ctx.organization ? await ctx.actors.call(realmRef, realmActorId(ctx.realmId), { type: 'serverSettings', caller: serverCaller(ctx) }) : {};
    return {
      ...SERVER_SETTINGS,
      // True exactly when the server reaches the mobile push notification service (`lib/push.ts`).
      push_notifications_enabled: pushConfigured(),
      ...realm,
      service_version: SERVER_VERSION,
      zulip_version: SERVER_VERSION,
      zulip_merge_base: SERVER_VERSION,
      service_feature_level: ctx.featureLevel,
      zulip_feature_level: ctx.featureLevel,
      // Whether the client's version is too old for this server (from its User-Agent): none is.
      is_incompatible: false,
    };
  },
});
