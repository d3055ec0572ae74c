/** Bots: POST /bots (generic, incoming-webhook and outgoing-webhook bots), GET /bots (the caller's bots with their services), PATCH /bots/{bot_id}, GET /bots/{bot_id}/api_key. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { announceRevocation } from '../auth.ts';
import { int, role, str, unsupported } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const createBot = route({
  method: 'POST',
  path: '/bots',
  auth: 'required',
  params: {
    full_name: str(),
    short_name: str(),
    bot_type: int().optional(),
    payload_url: str().optional(),
    interface_type: int().optional(),
    // Embedded bots are refused (bot_type 4), so their service is never read.
    service_name: unsupported(str()),
    config_data: unsupported(str()),
    default_sending_stream: unsupported(str()),
    default_events_register_stream: unsupported(str()),
    default_all_public_streams: unsupported(str()),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), {
      type: 'createBot',
      caller: caller(ctx),
      fullName: p.full_name,
      shortName: p.short_name,
      botType: p.bot_type ?? 1,
      payloadUrl: p.payload_url ?? null,
      interfaceType: p.interface_type ?? 1,
    });
  },
});

export const listBots = route({
  method: 'GET',
  path: '/bots',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'listBots', caller: caller(ctx) });
  },
});

export const updateBot = route({
  method: 'PATCH',
  path: '/bots/{bot_id}',
  auth: 'required',
  params: {
    bot_id: int().pipe(z.number().int().nonnegative()),
    full_name: str().optional(),
    role: role().optional(),
    bot_owner_id: int().optional(),
    short_name: str().optional(),
    service_payload_url: str().optional(),
    service_interface: int().optional(),
    // Embedded bots are refused, and bots have no default channels here.
    config_data: unsupported(str()),
    default_sending_stream: unsupported(str()),
    default_events_register_stream: unsupported(str()),
    default_all_public_streams: unsupported(str()),
  },
  async handle(ctx, p) {
    const { revoked, ...reply } = await ctx.actors.call(realmRef, realmActorId(me(ctx).realmId), {
      type: 'updateBot',
      caller: caller(ctx),
      botId: p.bot_id,
      fullName: p.full_name ?? null,
      role: p.role ?? null,
      ownerId: p.bot_owner_id ?? null,
      payloadUrl: p.service_payload_url ?? null,
      interfaceType: p.service_interface ?? null,
      shortName: p.short_name ?? null,
    });
    await announceRevocation(me(ctx).realmId, revoked);
    return reply;
  },
});

/** GET /bots/{bot_id}/api_key (FL 463): a new key of the bot, for its owner or an administrator (keys are stored as hashes only). */
export const getBotApiKey = route({
  method: 'GET',
  path: '/bots/{bot_id}/api_key',
  auth: 'required',
  params: { bot_id: int().pipe(z.number().int().nonnegative()) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'botApiKey', caller: caller(ctx), botId: p.bot_id });
  },
});
