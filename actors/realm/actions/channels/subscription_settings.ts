/**
 * Leaving channels (DELETE /users/me/subscriptions, for oneself or, with
 * permission, for `principals`), a subscription's personal settings (POST
 * /users/me/subscriptions/properties), and the channel part of the register
 * snapshot (`subscriptions`, `unsubscribed`, `never_subscribed`, `streams`,
 * `realm_default_streams`).
 */
import { removeChannelPushes } from '../notifications/push.ts';
import { z } from 'zod';
import { badRequest } from '../../../../lib/errors.ts';
import { type ChannelRecord, type SubscriptionRecord, T, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toUsers } from '../../../events/delivery.ts';
import type { ChannelObject, NeverSubscribedObject, SubscriptionObject } from '../../../events/schema.ts';
import { formatSubscription } from '../../../format.ts';
import { type IncludeSubscribers, subscriberLists } from './subscriptions.ts';
import { isAdmin, isGuest } from '../../../model.ts';
import { defineAction } from '../../../runtime/action.ts';
import { actingUser, channelAudience, resolvePerson, restrictedViews } from '../../rules/access.ts';
import { accessChangeEvents } from '../../rules/people.ts';
import type { RealmState } from '../../state/state.ts';
import { channelActivity, channelObject, checkChannelName, defaultStreamIds, hasContentAccess, hasMetadataAccess, shownTo } from './streams.ts';

const action = defineAction<RealmState>();

/** The channel keys of the register snapshot, for `user`. */
export function channelSnapshot(state: Readonly<RealmState>, user: UserRecord, want: (t: string) => boolean, include: IncludeSubscribers, archivedChannels: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const visible = [...state.channels.values()].filter((c) => shownTo(c, archivedChannels)).sort((a, b) => a.id - b.id);
  if (want('subscription')) {
    const subscriptions: SubscriptionObject[] = [];
    const unsubscribed: SubscriptionObject[] = [];
    const never: Array<z.infer<typeof NeverSubscribedObject>> = [];
    for (const c of visible) {
      const sub = state.subs.get(c.id)?.get(user.id);
      const metadata = hasMetadataAccess(state, c, user);
      // With include_subscribers every channel has its list, empty where the user may not see it (FL 37);
      // with `partial`, a large channel's list is its bots and recently active users (FL 412).
      const lists = subscriberLists(state, c.id, include, sub?.active === true || metadata);
      if (sub?.active) subscriptions.push(formatSubscription(c, sub, lists, channelActivity(state, c)));
      else if (sub) unsubscribed.push(formatSubscription(c, sub, lists, channelActivity(state, c)));
      else if (metadata) never.push({ ...channelObject(state, c), ...lists });
    }
    Object.assign(out, { subscriptions, unsubscribed, never_subscribed: never });
  }
  if (want('stream')) out.streams = visible.filter((c) => hasMetadataAccess(state, c, user)).map((c): ChannelObject => channelObject(state, c));
  if (want('default_streams')) out.realm_default_streams = isGuest(user) ? [] : defaultStreamIds(state);
  return out;
}

// ---- DELETE /users/me/subscriptions ----------------------------------------

/**
 * Whether `user` may remove others from `c` (Zulip's `can_remove_subscribers_from_stream`):
 * organization and channel administrators always (FL 349: a channel administrator need not be
 * subscribed), members of its can_remove_subscribers_group where they may reach the channel.
 */
function canRemoveSubscribers(state: Readonly<RealmState>, c: ChannelRecord, user: UserRecord): boolean {
  if (isAdmin(user) || state.can(c.groups.can_administer_channel_group, user)) return true;
  const basic = (!c.inviteOnly && !isGuest(user)) || state.isSubscribed(c.id, user.id);
  return basic && state.can(c.groups.can_remove_subscribers_group, user);
}

interface UnsubscribePlan {
  channels: ChannelRecord[];
  targets: number[];
  removed: Array<{ channelId: number; userId: number }>;
  notRemoved: Array<{ channelId: number; userId: number }>;
  /** Who saw whom before (`can_access_all_users_group`): leaving a channel may hide its subscribers from a guest. */
  accessBefore: Map<number, Set<number>>;
}

export const unsubscribe = action({
  type: 'unsubscribe',
  fields: z.object({ names: z.array(z.string()), principals: z.array(z.union([z.string(), z.number().int()])).nullable() }),
  check(state, msg): UnsubscribePlan {
    const actor = actingUser(state, msg.caller);
    const targets = msg.principals && msg.principals.length ? [...new Map(msg.principals.map((p) => resolvePerson(state, p)).map((u) => [u.id, u])).values()] : [actor];
    const others = targets.some((t) => t.id !== actor.id && !(t.isBot && t.botOwnerId === actor.id));
    if (msg.names.length === 0) throw badRequest('Nothing to do. Specify at least one channel.');
    const names = [...new Set(msg.names.map((n) => checkChannelName(n)))];
    const found = names.map((n) => state.channelsByName.get(n.toLowerCase()));
    if (others) for (const c of found) if (c && !canRemoveSubscribers(state, c, actor)) throw badRequest('Insufficient permission');
    const missing = names.filter((_, i) => !found[i]);
    if (missing.length) throw badRequest(`Channel(s) (${missing.join(', ')}) do not exist`);
    const channels = [...new Map((found as ChannelRecord[]).map((c) => [c.id, c])).values()];
    const removed: UnsubscribePlan['removed'] = [];
    const notRemoved: UnsubscribePlan['notRemoved'] = [];
    for (const t of targets) for (const c of channels) (state.isSubscribed(c.id, t.id) ? removed : notRemoved).push({ channelId: c.id, userId: t.id });
    return { channels, targets: targets.map((t) => t.id), removed, notRemoved, accessBefore: restrictedViews(state) };
  },
  apply(state, p, tx) {
    for (const { channelId, userId } of p.removed) {
      // Who leaves read what was sent up to now (a channel with protected history keeps them to it, `sourcesFor`).
      const sub: SubscriptionRecord = { ...state.subs.get(channelId)!.get(userId)!, active: false, endMessageId: state.maxMessageId };
      state.indexSub(sub);
      tx.write(T.subscriptions.at(state.realmId, channelId, userId).put(sub));
      // Leaving marks the channel's messages read: their push notifications are removed.
      removeChannelPushes(state, tx, userId, channelId);
    }
    const name = (id: number) => state.channels.get(id)!.name;
    return { removed: p.removed.map((r) => name(r.channelId)), not_removed: p.notRemoved.map((r) => name(r.channelId)) };
  },
  events(state, p) {
    const out: Delivery[] = [];
    const byUser = new Map<number, number[]>();
    const byChannel = new Map<number, number[]>();
    for (const { channelId, userId } of p.removed) {
      byUser.set(userId, [...(byUser.get(userId) ?? []), channelId]);
      byChannel.set(channelId, [...(byChannel.get(channelId) ?? []), userId]);
    }
    for (const [userId, ids] of byUser) {
      out.push(toUsers(state.realmId, [userId], { type: 'subscription', op: 'remove', subscriptions: ids.map((id) => ({ name: state.channels.get(id)!.name, stream_id: id })) }));
    }
    for (const [channelId, userIds] of byChannel) {
      const gone = new Set(userIds);
      const peers = channelAudience(state, state.channels.get(channelId)!).filter((id) => !gone.has(id));
      if (peers.length) out.push(toUsers(state.realmId, peers, { type: 'subscription', op: 'peer_remove', stream_ids: [channelId], user_ids: userIds }));
    }
    out.push(...accessChangeEvents(state, p.accessBefore));
    return out;
  },
});

// ---- POST /users/me/subscriptions/properties --------------------------------

const BOOLEAN_PROPERTIES = ['is_muted', 'in_home_view', 'pin_to_top', 'desktop_notifications', 'audible_notifications', 'push_notifications', 'email_notifications', 'wildcard_mentions_notify'] as const;
type BooleanProperty = (typeof BOOLEAN_PROPERTIES)[number];

/** Where each boolean property lives in the subscription record (`in_home_view` is the negation of `isMuted`). */
const FIELD: Record<Exclude<BooleanProperty, 'in_home_view'>, keyof SubscriptionRecord> = {
  is_muted: 'isMuted',
  pin_to_top: 'pinToTop',
  desktop_notifications: 'desktopNotifications',
  audible_notifications: 'audibleNotifications',
  push_notifications: 'pushNotifications',
  email_notifications: 'emailNotifications',
  wildcard_mentions_notify: 'wildcardMentionsNotify',
};

const PropertyChange = z.object({ stream_id: z.number().int(), property: z.string(), value: z.union([z.boolean(), z.string()]) });
type Change = { streamId: number; property: 'color'; value: string } | { streamId: number; property: BooleanProperty; value: boolean };

export const updateSubscriptionProperties = action({
  type: 'updateSubscriptionProperties',
  fields: z.object({ changes: z.array(PropertyChange) }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    if (msg.changes.length === 0) throw badRequest('Nothing to do. Specify at least one change.');
    const changes: Change[] = [];
    for (const ch of msg.changes) {
      let change: Change;
      if (ch.property === 'color') {
        if (typeof ch.value !== 'string' || !/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(ch.value)) throw badRequest('color is not a valid hex color code', { var_name: 'color' });
        change = { streamId: ch.stream_id, property: 'color', value: ch.value };
      } else if ((BOOLEAN_PROPERTIES as readonly string[]).includes(ch.property)) {
        if (typeof ch.value !== 'boolean') throw badRequest(`${ch.property} is not a boolean`);
        change = { streamId: ch.stream_id, property: ch.property as BooleanProperty, value: ch.value };
      } else throw badRequest(`Unknown subscription property: ${ch.property}`);
      const c = state.channels.get(ch.stream_id);
      if (!c || c.isArchived || !hasContentAccess(state, c, user)) throw badRequest('Invalid channel ID');
      if (!state.isSubscribed(c.id, user.id)) throw badRequest(`Not subscribed to channel ID ${c.id}`);
      changes.push(change);
    }
    return { userId: user.id, changes };
  },
  apply(state, p, tx) {
    for (const ch of p.changes) {
      const sub: SubscriptionRecord = { ...state.subs.get(ch.streamId)!.get(p.userId)! };
      if (ch.property === 'color') sub.color = ch.value;
      else if (ch.property === 'in_home_view') sub.isMuted = !ch.value;
      else (sub as Record<string, unknown>)[FIELD[ch.property]] = ch.value;
      state.indexSub(sub);
      tx.write(T.subscriptions.at(state.realmId, ch.streamId, p.userId).put(sub));
    }
    return {};
  },
  events(state, p) {
    const out: Delivery[] = [];
    const send = (streamId: number, property: Change['property'], value: string | boolean) =>
      out.push(toUsers(state.realmId, [p.userId], { type: 'subscription', op: 'update', stream_id: streamId, property, value } as never));
    for (const ch of p.changes) {
      // Zulip sends the legacy in_home_view alongside is_muted, whichever was changed.
      if (ch.property === 'is_muted' || ch.property === 'in_home_view') {
        const muted = ch.property === 'is_muted' ? ch.value : !ch.value;
        send(ch.streamId, 'in_home_view', !muted);
        send(ch.streamId, 'is_muted', muted);
      } else send(ch.streamId, ch.property, ch.value);
    }
    return out;
  },
});
