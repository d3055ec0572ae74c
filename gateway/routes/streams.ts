/**
 * Channel administration: GET /streams, GET/PATCH/DELETE /streams/{stream_id},
 * GET /streams/{stream_id}/members, GET /get_stream_id and the default
 * channels (GET/POST/DELETE /default_streams); leaving channels (DELETE
 * /users/me/subscriptions) and subscription settings (POST
 * /users/me/subscriptions/properties).
 */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { CHANNEL_GROUP_SETTINGS, GroupSettingValue, TopicsPolicy } from '../../storage/tables.ts';
import { bool, channelName, int, json, str, unsupported, wordOrInt } from '../params.ts';
import { caller, me, route } from '../route.ts';

const StreamId = int().pipe(z.number().int().nonnegative());
const Retention = wordOrInt(['realm_default', 'unlimited', 'forever'] as const, Number.MIN_SAFE_INTEGER, "must be a number of days, 'realm_default' or 'unlimited'");
/** A group-setting change: the new value and, optionally, the value the client expects now. */
const GroupChange = json(z.object({ new: GroupSettingValue, old: GroupSettingValue.optional() }).strict());
const Principals = json(z.union([z.array(z.string()), z.array(z.number().int())]));

const realm = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);

export const listStreams = route({
  method: 'GET',
  path: '/streams',
  auth: 'required',
  params: {
    include_public: bool().optional(),
    include_web_public: bool().optional(),
    include_subscribed: bool().optional(),
    exclude_archived: bool().optional(),
    include_all: bool().optional(),
    include_all_active: bool().optional(),
    include_default: bool().optional(),
    include_owner_subscribed: bool().optional(),
    include_can_access_content: bool().optional(),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), {
      type: 'listStreams',
      caller: caller(ctx),
      includePublic: p.include_public ?? true,
      includeWebPublic: p.include_web_public ?? false,
      includeSubscribed: p.include_subscribed ?? true,
      excludeArchived: p.exclude_archived ?? true,
      includeAll: (p.include_all ?? false) || (p.include_all_active ?? false),
      includeDefault: p.include_default ?? false,
      includeOwnerSubscribed: p.include_owner_subscribed ?? false,
      includeCanAccessContent: p.include_can_access_content ?? false,
    });
  },
});

export const getStream = route({
  method: 'GET',
  path: '/streams/{stream_id}',
  auth: 'required',
  params: { stream_id: StreamId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'getStream', caller: caller(ctx), streamId: p.stream_id });
  },
});

export const getStreamId = route({
  method: 'GET',
  path: '/get_stream_id',
  auth: 'required',
  params: { stream: channelName() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'getStreamId', caller: caller(ctx), name: p.stream });
  },
});

export const streamMembers = route({
  method: 'GET',
  path: '/streams/{stream_id}/members',
  auth: 'required',
  params: { stream_id: StreamId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'streamMembers', caller: caller(ctx), streamId: p.stream_id });
  },
});

export const updateStream = route({
  method: 'PATCH',
  path: '/streams/{stream_id}',
  auth: 'required',
  params: {
    stream_id: StreamId,
    description: str().optional(),
    new_name: str().optional(),
    is_private: bool().optional(),
    is_web_public: bool().optional(),
    history_public_to_subscribers: bool().optional(),
    is_default_stream: bool().optional(),
    message_retention_days: Retention.optional(),
    is_archived: bool().optional(),
    topics_policy: str().pipe(TopicsPolicy).optional(),
    folder_id: json(z.number().int().nullable()).optional(),
    // Deprecated since FL 333 in favour of can_send_message_group, which is what this server acts on.
    stream_post_policy: unsupported(int()),
    ...(Object.fromEntries(CHANNEL_GROUP_SETTINGS.map((k) => [k, GroupChange.optional()])) as Record<(typeof CHANNEL_GROUP_SETTINGS)[number], z.ZodOptional<typeof GroupChange>>),
  },
  async handle(ctx, p) {
    const groups: Record<string, z.output<typeof GroupChange>> = {};
    for (const key of CHANNEL_GROUP_SETTINGS) if (p[key] !== undefined) groups[key] = p[key];
    return ctx.actors.raw(realmRef, realm(ctx), {
      type: 'updateStream',
      caller: caller(ctx),
      streamId: p.stream_id,
      description: p.description,
      newName: p.new_name,
      isPrivate: p.is_private,
      isWebPublic: p.is_web_public,
      historyPublicToSubscribers: p.history_public_to_subscribers,
      isDefaultStream: p.is_default_stream,
      messageRetentionDays: p.message_retention_days,
      isArchived: p.is_archived,
      topicsPolicy: p.topics_policy,
      folderId: p.folder_id,
      groups,
    });
  },
});

export const archiveStream = route({
  method: 'DELETE',
  path: '/streams/{stream_id}',
  auth: 'required',
  params: { stream_id: StreamId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'archiveStream', caller: caller(ctx), streamId: p.stream_id });
  },
});

export const listDefaultStreams = route({
  method: 'GET',
  path: '/default_streams',
  auth: 'required',
  params: {},
  async handle(ctx) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'listDefaultStreams', caller: caller(ctx) });
  },
});

export const addDefaultStream = route({
  method: 'POST',
  path: '/default_streams',
  auth: 'required',
  params: { stream_id: StreamId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'addDefaultStream', caller: caller(ctx), streamId: p.stream_id });
  },
});

export const removeDefaultStream = route({
  method: 'DELETE',
  path: '/default_streams',
  auth: 'required',
  params: { stream_id: StreamId },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'removeDefaultStream', caller: caller(ctx), streamId: p.stream_id });
  },
});

export const unsubscribe = route({
  method: 'DELETE',
  path: '/users/me/subscriptions',
  auth: 'required',
  params: { subscriptions: json(z.array(z.string())), principals: Principals.optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'unsubscribe', caller: caller(ctx), names: p.subscriptions, principals: p.principals ?? null });
  },
});

const PropertyChange = z.object({ stream_id: z.number().int(), property: z.string(), value: z.union([z.boolean(), z.string()]) });

export const updateSubscriptionProperties = route({
  method: 'POST',
  path: '/users/me/subscriptions/properties',
  auth: 'required',
  params: { subscription_data: json(z.array(PropertyChange)) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'updateSubscriptionProperties', caller: caller(ctx), changes: p.subscription_data });
  },
});

/** One property of one subscription (the older single-change form). */
export const updateSubscriptionProperty = route({
  method: 'POST',
  path: '/users/me/subscriptions/{stream_id}',
  auth: 'required',
  params: {
    stream_id: StreamId,
    property: str(),
    value: str().transform((v): boolean | string => (v === 'true' ? true : v === 'false' ? false : v)),
  },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realm(ctx), { type: 'updateSubscriptionProperties', caller: caller(ctx), changes: [{ stream_id: p.stream_id, property: p.property, value: p.value }] });
  },
});
