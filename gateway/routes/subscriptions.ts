/** POST and GET /users/me/subscriptions. */
import { z } from 'zod';
import { CHANNEL_GROUP_SETTINGS } from '../../actors/model.ts';
import { GroupSetting } from '../../actors/protocol.ts';
import { bool, json, str, wordOrInt } from '../params.ts';
import { me, route } from '../route.ts';

const IncludeSubscribers = str().pipe(z.enum(['true', 'false', 'partial'], { message: "must be 'true', 'false' or 'partial'" }));
const Retention = wordOrInt(['realm_default', 'unlimited', 'forever'] as const, Number.MIN_SAFE_INTEGER, "must be a number of days, 'realm_default' or 'unlimited'");

export const subscribe = route({
  method: 'POST',
  path: '/users/me/subscriptions',
  auth: 'required',
  params: {
    subscriptions: json(z.array(z.object({ name: z.string({ message: 'each subscription needs a name' }), description: z.string().optional(), color: z.string().optional() }).passthrough())),
    principals: json(z.array(z.union([z.string(), z.number().int()]))).optional(),
    authorization_errors_fatal: bool().optional(),
    announce: bool().optional(),
    invite_only: bool().optional(),
    is_web_public: bool().optional(),
    is_default_stream: bool().optional(),
    history_public_to_subscribers: bool().optional(),
    message_retention_days: Retention.optional(),
    topics_policy: str().pipe(z.enum(['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only'])).optional(),
    can_add_subscribers_group: json(GroupSetting).optional(),
    can_remove_subscribers_group: json(GroupSetting).optional(),
    can_administer_channel_group: json(GroupSetting).optional(),
    can_delete_any_message_group: json(GroupSetting).optional(),
    can_delete_own_message_group: json(GroupSetting).optional(),
    can_send_message_group: json(GroupSetting).optional(),
  },
  async handle(ctx, p) {
    const caller = me(ctx);
    const groups: Record<string, z.infer<typeof GroupSetting>> = {};
    for (const key of CHANNEL_GROUP_SETTINGS) {
      const v = p[key];
      if (v !== undefined) groups[key] = v;
    }
    return ctx.actors.realmRaw(caller.realmId, {
      type: 'subscribe',
      actorId: caller.userId,
      subscriptions: p.subscriptions.map((s) => ({ name: s.name, description: s.description })),
      principals: p.principals ?? null,
      authorizationErrorsFatal: p.authorization_errors_fatal ?? true,
      announce: p.announce ?? false,
      inviteOnly: p.invite_only ?? false,
      isWebPublic: p.is_web_public ?? false,
      isDefaultStream: p.is_default_stream ?? false,
      historyPublicToSubscribers: p.history_public_to_subscribers ?? null,
      messageRetentionDays: p.message_retention_days ?? null,
      topicsPolicy: p.topics_policy ?? null,
      groups,
    });
  },
});

export const listSubscriptions = route({
  method: 'GET',
  path: '/users/me/subscriptions',
  auth: 'required',
  params: { include_subscribers: IncludeSubscribers.optional() },
  async handle(ctx, p) {
    const caller = me(ctx);
    return ctx.actors.realmRaw(caller.realmId, { type: 'listSubscriptions', userId: caller.userId, includeSubscribers: p.include_subscribers ?? 'false' });
  },
});
