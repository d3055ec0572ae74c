/** POST and GET /users/me/subscriptions, POST /channels/create. */
import { z } from 'zod';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { IncludeSubscribers as IncludeSubscribersValue, SUBSCRIBE_STEP } from '../../actors/realm/actions/channels/subscriptions.ts';
import { CHANNEL_GROUP_SETTINGS, GroupSettingValue, TopicsPolicy } from '../../storage/tables.ts';
import { bool, int, json, str, wordOrInt } from '../params.ts';
import { caller, me, route } from '../route.ts';

export const IncludeSubscribers = str().pipe(IncludeSubscribersValue);
const Retention = wordOrInt(['realm_default', 'unlimited', 'forever'] as const, Number.MIN_SAFE_INTEGER, "must be a number of days, 'realm_default' or 'unlimited'");

/** The settings a created channel takes, as POST /users/me/subscriptions and POST /channels/create both accept them. */
const creationParams = {
  // Notification Bot announces the channels created in the organization's new-channel announcements channel.
  announce: bool().optional(),
  // Notification Bot tells the users someone else subscribes (FL 397).
  send_new_subscription_messages: bool().optional(),
  invite_only: bool().optional(),
  is_web_public: bool().optional(),
  is_default_stream: bool().optional(),
  history_public_to_subscribers: bool().optional(),
  message_retention_days: Retention.optional(),
  topics_policy: str().pipe(TopicsPolicy).optional(),
  /** The channel folder the created channels go in (FL 389). */
  folder_id: int().optional(),
  ...(Object.fromEntries(CHANNEL_GROUP_SETTINGS.map((k) => [k, json(GroupSettingValue).optional()])) as Record<(typeof CHANNEL_GROUP_SETTINGS)[number], z.ZodOptional<ReturnType<typeof json<typeof GroupSettingValue>>>>),
};

/** The `subscribe` action's fields for the creation parameters. */
function creationFields(p: { [K in keyof typeof creationParams]?: z.infer<(typeof creationParams)[K]> }) {
  const groups: Record<string, GroupSettingValue> = {};
  for (const key of CHANNEL_GROUP_SETTINGS) {
    const v = p[key];
    if (v !== undefined) groups[key] = v;
  }
  return {
    inviteOnly: p.invite_only ?? false,
    isWebPublic: p.is_web_public ?? false,
    isDefaultStream: p.is_default_stream ?? false,
    historyPublicToSubscribers: p.history_public_to_subscribers ?? null,
    messageRetentionDays: p.message_retention_days ?? null,
    topicsPolicy: p.topics_policy ?? null,
    folderId: p.folder_id ?? null,
    groups,
    announce: p.announce ?? false,
    sendNewSubscriptionMessages: p.send_new_subscription_messages,
  };
}

/**
 * How long a subscription request may take: the default for a request of one step, and 2 ms more
 * per subscription past `SUBSCRIBE_STEP` (principals × channels), as the realm does a large request
 * in steps with other requests in between (`actors/realm/actions/channels/subscriptions.ts`): 33,645 principals of
 * one channel may take about 77 s on a loaded machine and are answered when done, not with a
 * timeout while the steps go on. At most ten minutes.
 */
export function subscribeTimeoutMs(defaultMs: number, subscriptions: number): number {
  return Math.min(10 * 60_000, defaultMs + 2 * Math.max(0, subscriptions - SUBSCRIBE_STEP));
}

export const subscribe = route({
  method: 'POST',
  path: '/users/me/subscriptions',
  auth: 'required',
  params: {
    subscriptions: json(z.array(z.object({ name: z.string({ message: 'each subscription needs a name' }), description: z.string().optional(), color: z.string().optional() }).passthrough())),
    principals: json(z.array(z.union([z.string(), z.number().int()]))).optional(),
    authorization_errors_fatal: bool().optional(),
    ...creationParams,
  },
  async handle(ctx, p) {
    const subscriptions = p.subscriptions.length * (p.principals?.length ?? 1);
    return ctx.actors.raw(
      realmRef,
      realmActorId(me(ctx).realmId),
      {
        type: 'subscribe',
        caller: caller(ctx),
        subscriptions: p.subscriptions.map((s) => ({ name: s.name, description: s.description })),
        principals: p.principals ?? null,
        authorizationErrorsFatal: p.authorization_errors_fatal ?? true,
        ...creationFields(p),
      },
      subscribeTimeoutMs(ctx.actors.timeoutMs, subscriptions),
    );
  },
});

/**
 * POST /channels/create (FL 417): one new channel, its `subscribers` (user
 * IDs, possibly none) subscribed; the same `subscribe` action with
 * `createOnly`, so the same rules, write and events as creating a channel by
 * subscribing to it. Answers the channel's `id`, or 409 if it exists.
 */
export const createChannel = route({
  method: 'POST',
  path: '/channels/create',
  auth: 'required',
  params: {
    name: str(),
    description: str().optional(),
    subscribers: json(z.array(z.number().int())),
    ...creationParams,
  },
  async handle(ctx, p) {
    return ctx.actors.raw(
      realmRef,
      realmActorId(me(ctx).realmId),
      {
        type: 'subscribe',
        caller: caller(ctx),
        subscriptions: [{ name: p.name, description: p.description }],
        principals: p.subscribers,
        authorizationErrorsFatal: true,
        createOnly: true,
        ...creationFields(p),
      },
      subscribeTimeoutMs(ctx.actors.timeoutMs, p.subscribers.length),
    );
  },
});

export const listSubscriptions = route({
  method: 'GET',
  path: '/users/me/subscriptions',
  auth: 'required',
  params: { include_subscribers: IncludeSubscribers.optional() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'listSubscriptions', caller: caller(ctx), includeSubscribers: p.include_subscribers ?? 'false' });
  },
});

/** GET /users/{user_id}/subscriptions/{stream_id} (FL 12): `is_subscribed`. */
export const subscriptionStatus = route({
  method: 'GET',
  path: '/users/{user_id}/subscriptions/{stream_id}',
  auth: 'required',
  params: { user_id: int(), stream_id: int() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'subscriptionStatus', caller: caller(ctx), userId: p.user_id, streamId: p.stream_id });
  },
});

/** GET /users/{user_id}/channels (FL 440): `subscribed_channel_ids`, those the caller has metadata access to. */
export const userChannels = route({
  method: 'GET',
  path: '/users/{user_id}/channels',
  auth: 'required',
  params: { user_id: int() },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'userChannels', caller: caller(ctx), userId: p.user_id });
  },
});
