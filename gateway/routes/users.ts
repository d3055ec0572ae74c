/** GET /users, POST /users and GET /server_settings. */
import { z } from 'zod';
import { clientExtavatar } from '../../actors/format.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { SERVER_VERSION } from '../../lib/version.ts';
import { bool, json, str, unsupported } from '../params.ts';
import { caller, me, route, serverCaller } from '../route.ts';

export const listUsers = route({
  method: 'GET',
  path: '/users',
  auth: 'required',
  params: {
    client_extavatar: bool().optional(),
    client_gravatar: bool().optional(),
    // No custom profile fields exist yet, so there is no profile_data to add.
    include_custom_profile_fields: unsupported(bool()),
    user_ids: json(z.array(z.number().int())).optional(),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'listUsers', caller: caller(ctx), userIds: p.user_ids ?? null, clientExtavatar: clientExtavatar(p) });
  },
});

export const createUser = route({
  method: 'POST',
  path: '/users',
  auth: 'required',
  params: {
    email: str().pipe(z.string().trim().email({ message: 'is not a valid email address' }).max(254)),
    password: str().pipe(z.string().max(1024)),
    full_name: str().pipe(z.string().max(1024)),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'createUser', caller: caller(ctx), email: p.email, password: p.password, fullName: p.full_name });
  },
});

export const serverSettings = route({
  method: 'GET',
  path: '/server_settings',
  auth: 'none',
  params: {},
  async handle(ctx) {
    const realm = await ctx.actors.call(realmRef, realmActorId(ctx.realmId), { type: 'serverSettings', caller: serverCaller(ctx) });
    return { ...realm, service_version: SERVER_VERSION, zulip_version: SERVER_VERSION, service_feature_level: ctx.featureLevel, zulip_feature_level: ctx.featureLevel };
  },
});
