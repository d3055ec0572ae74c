/** Channels and subscriptions: POST and GET /users/me/subscriptions. */
import { armRetention } from '../messages/retention.ts';
import { z } from 'zod';
import { ApiError, badRequest, rateLimitHit } from '../../../../lib/errors.ts';
import { type ChannelGroupSetting, type ChannelRecord, GroupSettingValue, type StoredMessage, type SubscriptionRecord, T, TopicsPolicy, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toUsers } from '../../../events/delivery.ts';
import type { SubscriptionObject } from '../../../events/schema.ts';
import { formatChannel, formatSubscription, type SubscriberLists } from '../../../format.ts';
import { GROUP_ID, isAdmin, isGuest, Role, SYSTEM_GROUPS } from '../../../model.ts';
import { defineAction, defineQuery, type Tx } from '../../../runtime/action.ts';
import { actingUser, canAccess, canSeeUser, channelAudience, resolvePerson, restrictedViews, toChannelAudience } from '../../rules/access.ts';
import { accessChangeEvents } from '../../rules/people.ts';
import { ensureSystemBots, sendAsSystemBot, systemBotDeliveries } from '../organization/system_bots.ts';
import { silentMention } from '../../rules/people.ts';
import { channelEventsNotice, createdNotice } from './channel_events.ts';
import { renderDescription } from '../../rules/markdown.ts';
import type { RealmState } from '../../state/state.ts';
import { canSetDeletePolicy, canSetTopicsPolicy, channelActivity, channelObject, CHANNEL_PERMISSIONS, checkChannelName, checkTopicCreationAllowedWithHistory, checkGroupValue, DELETE_POLICY_SETTINGS, defaultStreamsDelivery, hasMetadataAccess, realmPermission, sameGroupValue } from './streams.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

export const MAX_STREAM_NAME_LENGTH = 60;
export const MAX_STREAM_DESCRIPTION_LENGTH = 1024;

export const COLORS = ['#76ce90', '#fae589', '#a6c7e5', '#e79ab5', '#bfd56f', '#f4ae55', '#b0a5fd', '#addfe5', '#f5ce6e', '#c2726a', '#94c849', '#bd86e5', '#ee7e4a', '#a6dcbf', '#95a5fd', '#53a063'];

export const IncludeSubscribers = z.enum(['true', 'false', 'partial']);
export type IncludeSubscribers = z.infer<typeof IncludeSubscribers>;

/**
 * The fewest subscribers of a channel whose list a client that asks for
 * `partial` subscriber data gets as `partial_subscribers` (FL 412). The API
 * promises complete lists below 250 subscribers, and this server keeps to
 * that bound (Zulip's own starts at 1,000, MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE;
 * Zulip's web app counts on complete lists up to 75 only).
 * `PARLEY_PARTIAL_SUBSCRIBERS_MIN` changes it, for tests.
 */
export const PARTIAL_SUBSCRIBERS_MIN = Number(process.env.PARLEY_PARTIAL_SUBSCRIBERS_MIN) || 250;

/**
 * The subscriber list a channel object carries for a client that asked
 * `include` (`include_subscribers`): none; the complete list, O(the channel's
 * subscriptions); or, for a channel of `PARTIAL_SUBSCRIBERS_MIN` subscribers or
 * more and `partial`, the bots and recently active users among them
 * (`RealmState.partialSubscribers`), O(those), whatever the channel's size.
 * A viewer who may not see the subscribers (`visible` false) gets an empty
 * list of the same kind (FL 37).
 */
export function subscriberLists(state: Readonly<RealmState>, streamId: number, include: IncludeSubscribers, visible: boolean): SubscriberLists {
  if (include === 'false') return {};
  if (include === 'partial' && state.subscriberCount(streamId) >= PARTIAL_SUBSCRIBERS_MIN) return { partial_subscribers: visible ? state.partialSubscribers(streamId) : [] };
  return { subscribers: visible ? state.activeSubscribers(streamId) : [] };
}

/** Realm administrators act as members of every channel's administration groups. */
function canAddSubscribers(state: Readonly<RealmState>, c: ChannelRecord, user: UserRecord): boolean {
  if (isAdmin(user)) return true;
  if (state.can(c.groups.can_administer_channel_group, user) || state.can(c.groups.can_add_subscribers_group, user)) return true;
  if (c.inviteOnly) return state.isSubscribed(c.id, user.id);
  return !isGuest(user);
}

const Retention = z.union([z.number().int(), z.literal('realm_default'), z.literal('unlimited'), z.literal('forever')]);

/** A channel to create: everything but its IDs, which `apply` takes. */
type NewChannel = Omit<ChannelRecord, 'id' | 'recipientId'>;

interface SubscribePlan {
  actorId: number;
  /** This step's principals (all of them when the request fits in one step). */
  principals: number[];
  /** The principals of the steps after this one (resolved and checked by the first step). */
  rest: number[];
  /** In request order: an existing channel's ID, or a channel to create. */
  targets: Array<{ existing: number } | { create: NewChannel }>;
  unauthorized: string[];
  reportUnauthorized: boolean;
  /** Who saw whom before (`can_access_all_users_group`): a shared channel lets a guest see its subscribers. */
  accessBefore: Map<number, Set<number>>;
  /** Whether Notification Bot announces the created channels (`announce`). */
  announce: boolean;
  /** Whether Notification Bot tells the users subscribed by someone else (`send_new_subscription_messages`, FL 397), when they are few enough. */
  notify: boolean;
  /** Whether the reply says if they were told: only when the request asked to tell them. */
  reportNotified: boolean;
  /** The creator's channel-creation budget after this request, when it creates channels. */
  creationTat: number | null;
  /** Existing channels and the principals who could not see them before (a guest and a public channel, a member and a private one). */
  unseen: Record<number, number[]>;
  /** POST /channels/create: the reply is the created channel's `id`. */
  createOnly: boolean;
  /** Filled by `apply`, read by `events`. */
  done?: { channelIds: number[]; created: number[]; added: Array<{ channelId: number; userId: number }>; announcement: StoredMessage | null; notices: Array<StoredMessage | null> };
}

/**
 * The most subscriptions made in one step of a request (principals × channels): a request of more
 * is done in steps, each one turn of the realm's mailbox with its own commit and events, so that
 * the organization's other requests run in between (`ActionDef.rest`). A request of at most this
 * many is one step (all or nothing). About 10–30 µs of realm time each on an idle machine (check,
 * apply, events; bench/subscribe-bulk.ts), several times that on a loaded one, hence
 * `SUBSCRIBE_STEP_MS`.
 */
export const SUBSCRIBE_STEP = Number(process.env.PARLEY_SUBSCRIBE_STEP ?? 1000);

/**
 * The CPU time a step's turn should take (ms): each next step is sized from the CPU time of the one
 * before (its principals × this / its time, at most twice as many, at most `SUBSCRIBE_STEP`
 * subscriptions, at least `MIN_STEP`), so that a step's work stays about this much whatever the
 * work per subscription (channels, guests, the subscriber list sent to the newcomers).
 */
export const SUBSCRIBE_STEP_MS = Number(process.env.PARLEY_SUBSCRIBE_STEP_MS ?? 25);

/**
 * The fewest subscriptions of a step: each step also sends the channel's whole subscriber list to
 * its newcomers (O(subscribers)), so steps much smaller than this would cost more in those lists
 * than in their own work.
 */
const MIN_STEP = Math.min(250, SUBSCRIBE_STEP);

/** Principals per step for a request naming `channels` channels: at most, and at least. */
const principalsPerStep = (channels: number): number => Math.max(1, Math.floor(SUBSCRIBE_STEP / Math.max(1, channels)));
const fewestPerStep = (channels: number): number => Math.max(1, Math.floor(MIN_STEP / Math.max(1, channels)));

/** The next step's principals after a step of `size` that took `turnMs` (`SUBSCRIBE_STEP_MS`). */
export function nextStepSize(size: number, turnMs: number, channels: number): number {
  const fit = Math.floor((size * SUBSCRIBE_STEP_MS) / Math.max(turnMs, 0.1));
  return Math.max(fewestPerStep(channels), Math.min(fit, 2 * size, principalsPerStep(channels)));
}

/** Set by the first step of a request done in steps, for the steps after it: what the first decided for the whole request. */
const NextStep = z.object({
  /** The request's channels (those created by the first step included), in request order. */
  channelIds: z.array(z.number().int()),
  unauthorized: z.array(z.string()),
  notify: z.boolean(),
  /** The principals of the next step (`nextStepSize`). */
  size: z.number().int().positive(),
});

/** Whether `u` is in `c`'s audience (`channelAudience`) before the change: who could see the channel. */
function inAudience(state: Readonly<RealmState>, c: ChannelRecord, u: UserRecord): boolean {
  if (state.isSubscribed(c.id, u.id)) return true;
  return c.inviteOnly ? u.role <= Role.ADMIN || state.can(c.groups.can_administer_channel_group, u) : u.role !== Role.GUEST;
}

/**
 * A user may create `PARLEY_CHANNEL_CREATION_LIMIT` channels (100 per 10
 * minutes by default: 100 at once, then one every 6 s): one member creating
 * tens of thousands makes every register slow for everyone. Returns the
 * budget to keep once the channels are made; throws 429 RATE_LIMIT_HIT with
 * `retry-after` when they do not fit yet, 400 when they never can.
 */
function checkChannelCreation(state: Readonly<RealmState>, userId: number, count: number): number {
  const rule = state.channelCreationRule;
  const per = rule.windowSecs % 60 === 0 ? `${rule.windowSecs / 60} minutes` : `${rule.windowSecs} seconds`;
  if (count > rule.max) throw badRequest(`Too many new channels in one request: at most ${rule.max} may be created per ${per}`);
  const { verdict, tat } = state.channelCreation.look(userId, rule, count);
  if (tat === null) {
    const retryAfter = Math.ceil(verdict.retryAfterSecs);
    throw rateLimitHit(`Too many channels created: at most ${rule.max} per ${per}; try again in ${retryAfter} seconds`, retryAfter);
  }
  return tat;
}

export const subscribe = action({
  type: 'subscribe',
  fields: z.object({
    subscriptions: z.array(z.object({ name: z.string(), description: z.string().optional() })),
    principals: z.array(z.union([z.string(), z.number().int()])).nullable(),
    authorizationErrorsFatal: z.boolean(),
    inviteOnly: z.boolean(),
    isWebPublic: z.boolean(),
    isDefaultStream: z.boolean(),
    historyPublicToSubscribers: z.boolean().nullable(),
    messageRetentionDays: Retention.nullable(),
    topicsPolicy: TopicsPolicy.nullable(),
    /** The folder of the channels created (FL 389); null: none. */
    folderId: z.number().int().nullable().default(null),
    groups: z.record(z.string(), GroupSettingValue),
    announce: z.boolean(),
    /** `send_new_subscription_messages` (FL 397); absent is true, as in Zulip. */
    sendNewSubscriptionMessages: z.boolean().optional(),
    /** Set on the steps after the first of a request done in steps (`rest`), never by the gateway. */
    step: NextStep.optional(),
    /**
     * POST /channels/create (FL 417): the one channel of `subscriptions` is made, with `principals`
     * (user IDs, none allowed) subscribed, or the request fails if it exists; the reply gives its `id`.
     */
    createOnly: z.boolean().default(false),
  }),
  check(state, msg): SubscribePlan {
    const actor = actingUser(state, msg.caller);
    if (msg.step) return checkNextStep(state, msg.step, actor, msg.principals as number[], msg);
    // Zulip's create_channel view: guests create no channels; subscribers are active users by ID.
    if (msg.createOnly && isGuest(actor)) throw badRequest('Not allowed for guest users');
    const person = (p: string | number) => {
      if (!msg.createOnly) return resolvePerson(state, p);
      const u = typeof p === 'number' ? state.users.get(p) : undefined;
      if (!u || !u.isActive || u.isSystemBot) throw badRequest('No such user');
      return u;
    };
    const principals = msg.principals === null ? [actor] : [...new Map(msg.principals.map(person).map((u) => [u.id, u])).values()];
    if (principals.length === 0 && !msg.createOnly) throw badRequest('Nothing to do. Specify at least one user.');
    const addingOthers = principals.some((u) => u.id !== actor.id);
    if (addingOthers && isGuest(actor)) throw badRequest('Not allowed for guest users');
    if (msg.subscriptions.length === 0) throw badRequest('Nothing to do. Specify at least one channel.');
    if (msg.isWebPublic) throw badRequest('Web-public channels are not enabled.');
    const groups: Partial<Record<ChannelGroupSetting, GroupSettingValue>> = {};
    for (const [k, v] of Object.entries(msg.groups)) groups[k as ChannelGroupSetting] = checkGroupValue(state, k, v, CHANNEL_PERMISSIONS[k as ChannelGroupSetting]);
    // A channel's deletion permissions other than nobody need can_set_delete_message_policy_group (FL 407).
    for (const k of DELETE_POLICY_SETTINGS) {
      const v = groups[k];
      if (v !== undefined && !sameGroupValue(v, GROUP_ID['role:nobody']) && !canSetDeletePolicy(state, actor)) throw badRequest('Insufficient permission');
    }
    if (groups.can_create_topic_group !== undefined) checkTopicCreationAllowedWithHistory(msg.inviteOnly, msg.historyPublicToSubscribers ?? !msg.inviteOnly, groups.can_create_topic_group);
    const retention = msg.messageRetentionDays;
    if (retention !== null && retention !== 'realm_default' && actor.role !== Role.OWNER) throw badRequest('Must be an organization owner');
    if (typeof retention === 'number' && retention < 1) throw badRequest("Bad value for 'message_retention_days': must be at least 1", { var_name: 'message_retention_days' });

    const targets: SubscribePlan['targets'] = [];
    const unauthorized: string[] = [];
    const seen = new Set<string>();
    for (const spec of msg.subscriptions) {
      const name = checkChannelName(spec.name);
      const description = spec.description ?? '';
      if ([...description].length > MAX_STREAM_DESCRIPTION_LENGTH) throw badRequest(`Channel description too long (limit: ${MAX_STREAM_DESCRIPTION_LENGTH} characters).`);
      if (seen.has(name.toLowerCase())) continue;
      seen.add(name.toLowerCase());
      const existing = state.channelsByName.get(name.toLowerCase());
      if (existing && msg.createOnly) throw new ApiError('CHANNEL_ALREADY_EXISTS', `Channel '${existing.name}' already exists`, 409);
      if (existing) {
        // can_subscribe_group (FL 357): its members, guests excepted, subscribe themselves to a private channel.
        const joins = !addingOthers && existing.inviteOnly && (state.isSubscribed(existing.id, actor.id) || (!isGuest(actor) && state.can(existing.groups.can_subscribe_group, actor)));
        if (canAddSubscribers(state, existing, actor) || joins) targets.push({ existing: existing.id });
        else if (!canAccess(state, existing, actor)) unauthorized.push(existing.name);
        else if (addingOthers) throw badRequest(`Insufficient permission to add subscribers to channel ${existing.name}`);
        else targets.push({ existing: existing.id });
        continue;
      }
      if (isGuest(actor)) throw badRequest('Insufficient permission to create channels');
      // Zulip's list_to_streams: can_create_private_channel_group or can_create_public_channel_group (FL 264, 266).
      const creators = msg.inviteOnly ? realmPermission(state, 'can_create_private_channel_group', GROUP_ID['role:members']) : realmPermission(state, 'can_create_public_channel_group', GROUP_ID['role:members']);
      if (!state.can(creators, actor)) throw badRequest('Insufficient permission');
      if (msg.isDefaultStream && !isAdmin(actor)) throw badRequest('Insufficient permission');
      if (msg.isDefaultStream && msg.inviteOnly) throw badRequest('A default channel cannot be private.');
      if (msg.topicsPolicy !== null && !canSetTopicsPolicy(state, actor)) throw badRequest('Insufficient permission');
      if (msg.folderId !== null && !state.org.folders.has(msg.folderId)) throw badRequest('Invalid channel folder ID');
      targets.push({
        create: {
          name,
          description,
          renderedDescription: renderDescription(description),
          inviteOnly: msg.inviteOnly,
          isWebPublic: false,
          historyPublicToSubscribers: msg.historyPublicToSubscribers ?? !msg.inviteOnly,
          messageRetentionDays: retention === null || retention === 'realm_default' ? null : retention === 'unlimited' || retention === 'forever' ? -1 : retention,
          topicsPolicy: msg.topicsPolicy ?? 'inherit',
          dateCreated: Math.floor(Date.now() / 1000),
          creatorId: actor.id,
          isDefault: msg.isDefaultStream,
          firstMessageId: null,
          folderId: msg.folderId,
          isArchived: false,
          groups: {
            can_add_subscribers_group: GROUP_ID['role:nobody'],
            can_remove_subscribers_group: GROUP_ID['role:administrators'],
            can_administer_channel_group: { direct_members: [actor.id], direct_subgroups: [] },
            can_delete_any_message_group: GROUP_ID['role:nobody'],
            // Zulip's default: the organization's can_delete_own_message_group decides unless the channel grants more.
            can_delete_own_message_group: GROUP_ID['role:nobody'],
            can_send_message_group: GROUP_ID['role:everyone'],
            can_move_messages_out_of_channel_group: GROUP_ID['role:nobody'],
            can_move_messages_within_channel_group: GROUP_ID['role:nobody'],
            can_resolve_topics_group: GROUP_ID['role:nobody'],
            can_subscribe_group: GROUP_ID['role:nobody'],
            can_create_topic_group: GROUP_ID['role:everyone'],
            ...groups,
          },
        },
      });
    }
    if (unauthorized.length && msg.authorizationErrorsFatal) throw new ApiError('BAD_REQUEST', `Unable to access channel (${unauthorized[0]}).`, 400);
    const creating = targets.filter((t) => 'create' in t).length;
    const creationTat = creating ? checkChannelCreation(state, actor.id, creating) : null;
    // A request of more than one step starts with a quarter step: this one also resolves and checks
    // every principal (O(principals)); the next steps are sized from its time (`nextStepSize`).
    const most = principalsPerStep(targets.length);
    const now = principals.slice(0, principals.length <= most ? most : Math.max(fewestPerStep(targets.length), Math.floor(most / 4)));
    return {
      actorId: actor.id,
      principals: now.map((u) => u.id),
      rest: principals.slice(now.length).map((u) => u.id),
      targets,
      unauthorized,
      reportUnauthorized: !msg.authorizationErrorsFatal,
      accessBefore: restrictedViews(state),
      announce: msg.announce,
      notify: (msg.sendNewSubscriptionMessages ?? true) && principals.length <= MAX_BULK_NEW_SUBSCRIPTION_MESSAGES,
      reportNotified: msg.sendNewSubscriptionMessages ?? true,
      creationTat,
      unseen: unseenBefore(state, targets, now),
      createOnly: msg.createOnly,
    };
  },
  apply(state, plan, tx) {
    if (plan.creationTat !== null) {
      state.channelCreation.sweep();
      state.channelCreation.keep(plan.actorId, plan.creationTat);
    }
    const created: number[] = [];
    const channelIds: number[] = [];
    const added: Array<{ channelId: number; userId: number }> = [];
    const subscribed: Record<string, string[]> = {};
    const already: Record<string, string[]> = {};
    for (const target of plan.targets) {
      let channel: ChannelRecord;
      if ('existing' in target) channel = state.channels.get(target.existing)!;
      else {
        channel = { ...target.create, id: state.take('channel', tx), recipientId: state.take('recipient', tx) };
        state.indexChannel(channel);
        tx.write(T.channels.at(state.realmId, channel.id).put(channel));
        if (channel.messageRetentionDays !== null) armRetention(state, tx);
        created.push(channel.id);
      }
      channelIds.push(channel.id);
      for (const userId of plan.principals) {
        const key = String(userId);
        const current = state.subs.get(channel.id)?.get(userId);
        if (current?.active) {
          (already[key] ??= []).push(channel.name);
          continue;
        }
        const sub: SubscriptionRecord = {
          streamId: channel.id,
          userId,
          active: true,
          color: current?.color ?? pickColor(state, userId),
          pinToTop: current?.pinToTop ?? false,
          isMuted: current?.isMuted ?? false,
          startMessageId: state.maxMessageId + 1,
          endMessageId: null,
          // A resubscription keeps the notification settings of the old subscription.
          desktopNotifications: current?.desktopNotifications ?? null,
          emailNotifications: current?.emailNotifications ?? null,
          pushNotifications: current?.pushNotifications ?? null,
          audibleNotifications: current?.audibleNotifications ?? null,
          wildcardMentionsNotify: current?.wildcardMentionsNotify ?? null,
        };
        state.indexSub(sub);
        tx.write(T.subscriptions.at(state.realmId, channel.id, userId).put(sub));
        (subscribed[key] ??= []).push(channel.name);
        added.push({ channelId: channel.id, userId });
      }
    }
    const notices = plan.notify ? notifyNewSubscribers(state, tx, plan.actorId, added, new Set(created)) : [];
    // Each new channel's "channel events" notice (FL 434), after its subscriptions, read by its creator.
    const actor = state.users.get(plan.actorId)!;
    const unreadFor = plan.principals.filter((id) => id !== plan.actorId);
    const createdNotices = created.map((id) => (state.org.settings.sendChannelEventsMessages ? channelEventsNotice(state, tx, state.channels.get(id)!, createdNotice(state.channels.get(id)!, actor), unreadFor) : null));
    plan.done = { channelIds, created, added, announcement: plan.announce ? announceChannels(state, tx, plan.actorId, created) : null, notices: [...createdNotices, ...notices] };
    if (plan.createOnly) return { id: created[0]! };
    return {
      subscribed,
      already_subscribed: already,
      ...(plan.reportUnauthorized ? { unauthorized: plan.unauthorized } : {}),
      ...(plan.reportNotified ? { new_subscription_messages_sent: plan.notify } : {}),
    };
  },
  // A request of more subscriptions than a step's goes on with the next principals, as many as fit
  // in `SUBSCRIBE_STEP_MS` of CPU by this step's.
  rest(plan, _applied, msg, turnMs) {
    if (!plan.rest.length) return null;
    const { channelIds } = plan.done!;
    const size = nextStepSize(plan.principals.length, turnMs, channelIds.length);
    return { ...msg, principals: plan.rest, step: { channelIds, unauthorized: plan.unauthorized, notify: plan.notify, size } };
  },
  // One reply for the whole request: each principal is in one step, with every channel.
  merge(replies) {
    // POST /channels/create answers the channel's id, which the first step made.
    if ('id' in replies[0]!) return replies[0]!;
    const out = { ...replies[0]!, subscribed: {} as Record<string, string[]>, already_subscribed: {} as Record<string, string[]> };
    for (const r of replies) {
      if ('id' in r) continue;
      Object.assign(out.subscribed, r.subscribed);
      Object.assign(out.already_subscribed, r.already_subscribed);
    }
    return out;
  },
  events(state, plan) {
    const { created, added, announcement, notices } = plan.done!;
    const realmId = state.realmId;
    // Users a guest now sees come first, so that the subscribers below are known users.
    const out: Delivery[] = accessChangeEvents(state, plan.accessBefore);
    // A new channel is told with no subscribers: the peer_add events below count them in (FL 394).
    for (const id of created) {
      const c = state.channels.get(id)!;
      const audience = channelAudience(state, c);
      if (audience.length) out.push(toUsers(realmId, audience, { type: 'stream', op: 'create', streams: [formatChannel(c, { ...channelActivity(state, c), subscriberCount: 0 })] }));
    }
    const byChannel = new Map<number, number[]>();
    for (const { channelId, userId } of added) {
      let ids = byChannel.get(channelId);
      if (!ids) byChannel.set(channelId, (ids = []));
      ids.push(userId);
    }
    // A channel the user could not see before is created for them first, as Zulip's
    // send_stream_creation_events_for_previously_inaccessible_streams does (FL 192).
    for (const [channelId, userIds] of Object.entries(plan.unseen)) {
      const joined = new Set(byChannel.get(Number(channelId)) ?? []);
      const newcomers = userIds.filter((id) => joined.has(id));
      if (newcomers.length) out.push(toUsers(realmId, newcomers, { type: 'stream', op: 'create', streams: [channelObject(state, state.channels.get(Number(channelId))!)] }));
    }
    // Each newcomer's `subscription` add, one event per channel: newcomers whose subscription
    // objects are alike (a new subscription differs only by its color) share one delivery, so
    // the channel's subscriber list goes once per kind, not once per newcomer (the events of
    // 33,000 newcomers to a 33,000-member channel were 33,000 copies of that list):
    // O(newcomers + colors × subscribers) in time and memory.
    for (const [channelId, userIds] of byChannel) {
      const c = state.channels.get(channelId)!;
      const subscribers = state.activeSubscribers(channelId);
      const activity = channelActivity(state, c);
      const alike = new Map<string, { sub: SubscriptionRecord; userIds: number[] }>();
      for (const userId of userIds) {
        const sub = state.subs.get(channelId)!.get(userId)!;
        const key = personalPart(sub);
        const kind = alike.get(key);
        if (kind) kind.userIds.push(userId);
        else alike.set(key, { sub, userIds: [userId] });
      }
      for (const kind of alike.values()) out.push(toUsers(realmId, kind.userIds, { type: 'subscription', op: 'add', subscriptions: [formatSubscription(c, kind.sub, { subscribers }, activity)] }));
    }
    // Their peers hear of them in one event per channel (realm-wide for a public channel).
    for (const [channelId, userIds] of byChannel) out.push(toChannelAudience(state, state.channels.get(channelId)!, { type: 'subscription', op: 'peer_add', stream_ids: [channelId], user_ids: userIds }, userIds));
    if (created.some((id) => state.channels.get(id)!.isDefault)) out.push(defaultStreamsDelivery(state));
    // After the channel events, so that clients know the channel the announcement links to.
    out.push(...systemBotDeliveries(state, [announcement, ...notices]));
    return out;
  },
});

/**
 * A step after the first of a request done in steps: the first resolved and checked every
 * principal and channel, and created the new channels; this step checks again what may have
 * changed since (its principals still active, the actor still allowed to add subscribers).
 * O(the step's principals × channels).
 */
function checkNextStep(state: Readonly<RealmState>, step: z.infer<typeof NextStep>, actor: UserRecord, ids: number[], msg: { authorizationErrorsFatal: boolean; sendNewSubscriptionMessages?: boolean | undefined }): SubscribePlan {
  const now = ids.slice(0, step.size).map((id) => resolvePerson(state, id));
  const targets = step.channelIds.map((id) => {
    const c = state.channels.get(id)!;
    if (!canAddSubscribers(state, c, actor)) throw badRequest(`Insufficient permission to add subscribers to channel ${c.name}`);
    return { existing: id };
  });
  return {
    actorId: actor.id,
    principals: now.map((u) => u.id),
    rest: ids.slice(now.length),
    targets,
    unauthorized: step.unauthorized,
    reportUnauthorized: !msg.authorizationErrorsFatal,
    accessBefore: restrictedViews(state),
    announce: false,
    notify: step.notify,
    reportNotified: msg.sendNewSubscriptionMessages ?? true,
    creationTat: null,
    unseen: unseenBefore(state, targets, now),
    createOnly: false,
  };
}

/** Existing channels and those of `principals` who could not see them before: O(principals × channels). */
function unseenBefore(state: Readonly<RealmState>, targets: SubscribePlan['targets'], principals: UserRecord[]): Record<number, number[]> {
  const unseen: Record<number, number[]> = {};
  for (const target of targets) {
    if (!('existing' in target)) continue;
    const c = state.channels.get(target.existing)!;
    const ids = principals.filter((u) => !inAudience(state, c, u)).map((u) => u.id);
    if (ids.length) unseen[target.existing] = ids;
  }
  return unseen;
}

/**
 * A new subscription's color, as Zulip's `pick_colors`: the first color of the palette that none of
 * the user's subscriptions (former ones included) has, else the palette in turn. Called as each
 * subscription is indexed, so a request's second new channel gets the next free color. Users alike
 * get the same color, so a bulk subscription's newcomers share a few deliveries (one per color,
 * each with the subscriber list). O(the user's subscriptions).
 */
function pickColor(state: Readonly<RealmState>, userId: number): string {
  const used = new Set<string>();
  for (const channelId of state.channelsByUser.get(userId) ?? []) {
    const color = state.subs.get(channelId)?.get(userId)?.color;
    if (color) used.add(color);
  }
  return COLORS.find((c) => !used.has(c)) ?? COLORS[used.size % COLORS.length]!;
}

/** What differs between two users' subscriptions to one channel (what `formatSubscription` takes from the record). */
function personalPart(s: SubscriptionRecord): string {
  return `${s.color}|${s.pinToTop}|${s.isMuted}|${s.desktopNotifications}|${s.emailNotifications}|${s.pushNotifications}|${s.audibleNotifications}|${s.wildcardMentionsNotify}`;
}

/** Zulip's MAX_BULK_NEW_SUBSCRIPTION_MESSAGES: a request subscribing more users tells none of them (`max_bulk_new_subscription_messages`). */
export const MAX_BULK_NEW_SUBSCRIPTION_MESSAGES = 100;

/**
 * Notification Bot's direct message to each user someone else subscribed
 * (Zulip's `send_messages_for_new_subscribers`): not to the actor, not to
 * bots, and not about the channels this request created. O(added).
 */
function notifyNewSubscribers(state: RealmState, tx: Tx, actorId: number, added: Array<{ channelId: number; userId: number }>, created: ReadonlySet<number>): Array<StoredMessage | null> {
  const byUser = new Map<number, string[]>();
  for (const { channelId, userId } of added) {
    if (userId === actorId || created.has(channelId) || state.users.get(userId)!.isBot) continue;
    byUser.set(userId, [...(byUser.get(userId) ?? []), state.channels.get(channelId)!.name]);
  }
  if (!byUser.size) return [];
  ensureSystemBots(state, tx);
  const who = silentMention(state.users.get(actorId)!);
  return [...byUser].map(([userId, names]) => {
    const sorted = [...names].sort();
    const content = sorted.length === 1 ? `${who} subscribed you to #**${sorted[0]}**.` : `${who} subscribed you to the following channels:\n\n${sorted.map((n) => `* #**${n}**\n`).join('')}`;
    return sendAsSystemBot(state, tx, 'notification', { recipientType: 'private', to: [userId], topic: null, content });
  });
}

/**
 * Notification Bot's announcement of new channels in the organization's
 * new-channel announcements channel, as Zulip's `announce` does (every
 * created channel, in one message); nothing when that channel is unset.
 */
function announceChannels(state: RealmState, tx: Tx, actorId: number, created: number[]): StoredMessage | null {
  const target = state.org.settings.newStreamAnnouncementsStreamId;
  if (!created.length || target === null) return null;
  ensureSystemBots(state, tx);
  const links = created.map((id) => `#**${state.channels.get(id)!.name}**`).join(', ');
  const who = silentMention(state.users.get(actorId)!);
  const content = created.length > 1 ? `${who} created the following channels: ${links}.` : `${who} created a new channel ${links}.`;
  return sendAsSystemBot(state, tx, 'notification', { recipientType: 'stream', to: target, topic: 'new channels', content });
}

/**
 * The user's subscriptions (`active`) or former subscriptions (`!active`),
 * without archived channels: Zulip's GET /users/me/subscriptions leaves them
 * out (`gather_subscriptions` does not include archived channels; only the
 * register gives them, to clients with the `archived_channels` capability).
 */
export function subscriptionObjects(state: Readonly<RealmState>, userId: number, include: IncludeSubscribers, active = true): SubscriptionObject[] {
  const out: SubscriptionObject[] = [];
  for (const [streamId, subs] of state.subs) {
    const s = subs.get(userId);
    const c = state.channels.get(streamId)!;
    if (!s || s.active !== active || c.isArchived) continue;
    out.push(formatSubscription(c, s, subscriberLists(state, streamId, include, true), channelActivity(state, c)));
  }
  return out;
}

/**
 * The user of `/users/{user_id}/...` as Zulip's `access_user_by_id` finds them
 * for reading: active, visible to `actor`; bots too (FL 458), not the system
 * bots, which live outside the organization in Zulip.
 */
function readableUser(state: Readonly<RealmState>, actor: UserRecord, userId: number): UserRecord {
  const target = state.users.get(userId);
  if (!target || target.isSystemBot) throw badRequest('No such user');
  if (!target.isActive) throw badRequest('User is deactivated');
  if (!canSeeUser(state, actor, target)) throw badRequest('Insufficient permission');
  return target;
}

/**
 * GET /users/{user_id}/subscriptions/{stream_id} (FL 12): whether a user is
 * subscribed to a channel, as Zulip's `get_subscription_backend` answers it:
 * the user as `access_user_by_id` finds them for reading (active, visible to
 * the caller; bots too since FL 458, not the system bots, which live outside
 * the organization in Zulip), the channel as the caller may see its metadata
 * (archived ones included); each failure the same 400 as Zulip's.
 */
export const subscriptionStatus = query({
  type: 'subscriptionStatus',
  fields: z.object({ userId: z.number().int(), streamId: z.number().int() }),
  run(state, msg) {
    const actor = actingUser(state, msg.caller);
    const target = readableUser(state, actor, msg.userId);
    const c = state.channels.get(msg.streamId);
    if (!c || !hasMetadataAccess(state, c, actor)) throw badRequest('Invalid channel ID');
    return { is_subscribed: state.isSubscribed(c.id, target.id) };
  },
});

/**
 * GET /users/{user_id}/channels (FL 440): the channels a user is subscribed
 * to that the caller has metadata access to (every one for an
 * administrator), the user found as for GET
 * /users/{user_id}/subscriptions/{stream_id} (bots too, FL 458). O(the user's
 * channels), from the user -> channels index.
 */
export const userChannels = query({
  type: 'userChannels',
  fields: z.object({ userId: z.number().int() }),
  run(state, msg) {
    const actor = actingUser(state, msg.caller);
    const target = readableUser(state, actor, msg.userId);
    const ids: number[] = [];
    for (const channelId of state.channelsByUser.get(target.id) ?? []) {
      const c = state.channels.get(channelId);
      if (c && state.subs.get(channelId)?.get(target.id)?.active && hasMetadataAccess(state, c, actor)) ids.push(channelId);
    }
    return { subscribed_channel_ids: ids.sort((a, b) => a - b) };
  },
});

export const listSubscriptions = query({
  type: 'listSubscriptions',
  fields: z.object({ includeSubscribers: IncludeSubscribers }),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    return { subscriptions: subscriptionObjects(state, user.id, msg.includeSubscribers) };
  },
});
