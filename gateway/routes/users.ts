/** GET /users, POST /users and GET /server_settings. */
import { z } from 'zod';
import { bool, json, str } from '../params.ts';
import { me, route } from '../route.ts';

export const listUsers = route({
  method: 'GET',
  path: '/users',
  auth: 'required',
  params: {
    client_extavatar: bool().optional(),
    client_gravatar: bool().optional(),
    include_custom_profile_fields: bool().optional(),
    user_ids: json(z.array(z.number().int())).optional(),
  },
  async handle(ctx, p) {
    const caller = me(ctx);
    return ctx.actors.realmRaw(caller.realmId, { type: 'listUsers', userId: caller.userId, userIds: p.user_ids ?? null, clientExtavatar: p.client_extavatar ?? p.client_gravatar ?? true });
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
    const caller = me(ctx);
    return ctx.actors.realmRaw(caller.realmId, { type: 'createUser', actorId: caller.userId, email: p.email, password: p.password, fullName: p.full_name });
  },
});

export const serverSettings = route({
  method: 'GET',
  path: '/server_settings',
  auth: 'none',
  params: {},
  async handle(ctx) {
    return ctx.actors.realmRaw(ctx.realmId, { type: 'serverSettings' });
  },
});
