/** Channels and subscriptions: POST and GET /users/me/subscriptions. */
import { ApiError, badRequest } from '../../lib/errors.ts';
import { fnv1a } from '../../lib/hash.ts';
import { formatChannel, formatSubscription } from '../format.ts';
import { type ChannelGroupSetting, type ChannelRecord, GROUP_ID, inGroupSetting, Role, SYSTEM_GROUPS, type SubscriptionRecord, type UserRecord } from '../model.ts';
import type { GroupSettingValue, RealmMsg } from '../protocol.ts';
import type { ActorContext } from '../runtime/context.ts';
import { Parked } from '../runtime/mailbox.ts';
import { renderDescription } from './markdown.ts';
import type { RealmState } from './state.ts';
import { requireUser } from './users.ts';

type SubscribeMsg = Extract<RealmMsg, { type: 'subscribe' }>;

export const MAX_STREAM_NAME_LENGTH = 60;
export const MAX_STREAM_DESCRIPTION_LENGTH = 1024;

const COLORS = ['#76ce90', '#fae589', '#a6c7e5', '#e79ab5', '#bfd56f', '#f4ae55', '#b0a5fd', '#addfe5', '#f5ce6e', '#c2726a', '#94c849', '#bd86e5', '#ee7e4a', '#a6dcbf', '#95a5fd', '#53a063'];

/** Finds a principal by user ID or API email; unknown or deactivated principals are a 400. */
export function resolvePerson(state: RealmState, p: string | number): UserRecord {
  const asId = typeof p === 'number' ? p : /^\d+$/.test(p) ? Number(p) : null;
  const user = asId !== null ? state.users.get(asId) : state.usersByEmail.get(String(p).trim().toLowerCase());
  if (!user || !user.isActive) throw badRequest(asId !== null ? `Invalid user ID ${asId}` : `No such user: '${p}'`);
  return user;
}

function checkChannelName(raw: string): string {
  const name = raw.trim();
  if (!name) throw badRequest("Channel name can't be empty.");
  if ([...name].length > MAX_STREAM_NAME_LENGTH) throw badRequest(`Channel name too long (limit: ${MAX_STREAM_NAME_LENGTH} characters).`);
  const bad = [...name].findIndex((ch) => /[\u0000-\u001f\u007f-\u009f]/.test(ch));
  if (bad !== -1) throw badRequest(`Invalid character in channel name, at position ${bad + 1}.`);
  return name;
}

function checkGroupSetting(state: RealmState, name: string, v: GroupSettingValue): GroupSettingValue {
  const known = (g: number) => SYSTEM_GROUPS.some((x) => x.id === g);
  if (typeof v === 'number') {
    if (!known(v)) throw badRequest(`Invalid user group ID: ${v}`, { var_name: name });
    return v;
  }
  for (const id of v.direct_members) if (!state.users.get(id)?.isActive) throw badRequest(`Invalid user ID: ${id}`, { var_name: name });
  for (const id of v.direct_subgroups) if (!known(id)) throw badRequest(`Invalid user group ID: ${id}`, { var_name: name });
  return v;
}

/** Realm administrators act as members of every channel's administration groups. */
function canAddSubscribers(state: RealmState, c: ChannelRecord, user: UserRecord): boolean {
  if (user.role <= Role.ADMIN) return true;
  if (inGroupSetting(c.groups.can_administer_channel_group, user) || inGroupSetting(c.groups.can_add_subscribers_group, user)) return true;
  if (c.inviteOnly) return state.isSubscribed(c.id, user.id);
  return user.role !== Role.GUEST;
}

/** Whether the user may see the channel exists (public, or private and subscribed). */
export function canAccess(state: RealmState, c: ChannelRecord, user: UserRecord): boolean {
  if (!c.inviteOnly) return user.role !== Role.GUEST || state.isSubscribed(c.id, user.id);
  return state.isSubscribed(c.id, user.id) || inGroupSetting(c.groups.can_administer_channel_group, user);
}

export function subscribe(state: RealmState, ctx: ActorContext, msg: SubscribeMsg) {
  const actor = requireUser(state, msg.actorId);
  const principals = msg.principals === null ? [actor] : [...new Map(msg.principals.map((p) => resolvePerson(state, p)).map((u) => [u.id, u])).values()];
  if (principals.length === 0) throw badRequest('Nothing to do. Specify at least one user.');
  const addingOthers = principals.some((u) => u.id !== actor.id);
  if (addingOthers && actor.role === Role.GUEST) throw badRequest('Not allowed for guest users');
  if (msg.subscriptions.length === 0) throw badRequest('Nothing to do. Specify at least one channel.');
  if (msg.isWebPublic) throw badRequest('Web-public channels are not enabled.');
  const groups: Partial<Record<ChannelGroupSetting, GroupSettingValue>> = {};
  for (const [k, v] of Object.entries(msg.groups)) groups[k as ChannelGroupSetting] = checkGroupSetting(state, k, v);
  const retention = msg.messageRetentionDays;
  if (retention !== null && retention !== 'realm_default' && actor.role !== Role.OWNER) throw badRequest('Must be an organization owner');
  if (typeof retention === 'number' && retention < 1) throw badRequest('Bad value for \'message_retention_days\': must be at least 1', { var_name: 'message_retention_days' });

  const ops: Parameters<typeof ctx.journal.append>[0] = [];
  const created: ChannelRecord[] = [];
  const targets: ChannelRecord[] = [];
  const unauthorized: string[] = [];
  const seen = new Set<string>();
  for (const spec of msg.subscriptions) {
    const name = checkChannelName(spec.name);
    const description = spec.description ?? '';
    if ([...description].length > MAX_STREAM_DESCRIPTION_LENGTH) throw badRequest(`Channel description too long (limit: ${MAX_STREAM_DESCRIPTION_LENGTH} characters).`);
    if (seen.has(name.toLowerCase())) continue;
    seen.add(name.toLowerCase());
    const existing = state.channelsByName.get(name.toLowerCase());
    if (existing) {
      if (canAddSubscribers(state, existing, actor) || (!addingOthers && existing.inviteOnly && state.isSubscribed(existing.id, actor.id))) targets.push(existing);
      else if (!canAccess(state, existing, actor)) unauthorized.push(existing.name);
      else if (addingOthers) throw badRequest(`Insufficient permission to add subscribers to channel ${existing.name}`);
      else targets.push(existing);
      continue;
    }
    if (actor.role === Role.GUEST) throw badRequest('Insufficient permission to create channels');
    const { id, op } = state.takeObjectId();
    const channel: ChannelRecord = {
      id,
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
      isDefault: msg.isDefaultStream && actor.role <= Role.ADMIN,
      firstMessageId: null,
      groups: {
        can_add_subscribers_group: GROUP_ID['role:nobody'],
        can_remove_subscribers_group: GROUP_ID['role:administrators'],
        can_administer_channel_group: { direct_members: [actor.id], direct_subgroups: [] },
        can_delete_any_message_group: GROUP_ID['role:nobody'],
        can_delete_own_message_group: GROUP_ID['role:everyone'],
        can_send_message_group: GROUP_ID['role:everyone'],
        ...groups,
      },
    };
    state.indexChannel(channel);
    ops.push(op, { op: 'put', table: 'channels', pk: state.pk, ck: id, value: channel });
    created.push(channel);
    targets.push(channel);
  }
  if (unauthorized.length && msg.authorizationErrorsFatal) {
    throw new ApiError('BAD_REQUEST', `Unable to access channel (${unauthorized[0]}).`, 400);
  }

  const subscribed: Record<string, string[]> = {};
  const already: Record<string, string[]> = {};
  const added: Array<{ channel: ChannelRecord; user: UserRecord }> = [];
  for (const channel of targets) {
    for (const user of principals) {
      const key = String(user.id);
      const current = state.subs.get(channel.id)?.get(user.id);
      if (current?.active) {
        (already[key] ??= []).push(channel.name);
        continue;
      }
      const sub: SubscriptionRecord = {
        streamId: channel.id,
        userId: user.id,
        active: true,
        color: current?.color ?? COLORS[fnv1a(`${channel.id}:${user.id}`) % COLORS.length]!,
        pinToTop: current?.pinToTop ?? false,
        isMuted: current?.isMuted ?? false,
        startMessageId: state.maxMessageId + 1,
      };
      state.indexSub(sub);
      ops.push({ op: 'put', table: 'subscriptions', pk: state.pk, ck: `${channel.id}:${user.id}`, value: sub });
      (subscribed[key] ??= []).push(channel.name);
      added.push({ channel, user });
    }
  }
  return new Parked(
    ctx.journal.append(ops).then(() => {
      announce(state, ctx, created, added);
      return { subscribed, already_subscribed: already, ...(msg.authorizationErrorsFatal ? {} : { unauthorized }) };
    }),
  );
}

/** Sends stream create, subscription add and peer_add events for a subscribe call. */
function announce(state: RealmState, ctx: ActorContext, created: ChannelRecord[], added: Array<{ channel: ChannelRecord; user: UserRecord }>): void {
  const realmId = state.realmId;
  const active = [...state.users.values()].filter((u) => u.isActive);
  for (const c of created) {
    const audience = c.inviteOnly ? state.activeSubscribers(c.id) : active.filter((u) => u.role !== Role.GUEST).map((u) => u.id);
    if (audience.length) ctx.publish({ kind: 'event', realmId, userIds: audience, event: { type: 'stream', op: 'create', streams: [formatChannel(c)] } });
  }
  const byUser = new Map<number, ChannelRecord[]>();
  for (const { channel, user } of added) byUser.set(user.id, [...(byUser.get(user.id) ?? []), channel]);
  for (const [userId, channels] of byUser) {
    const subscriptions = channels.map((c) => formatSubscription(c, state.subs.get(c.id)!.get(userId)!, state.activeSubscribers(c.id)));
    ctx.publish({ kind: 'event', realmId, userIds: [userId], event: { type: 'subscription', op: 'add', subscriptions } });
  }
  const byChannel = new Map<number, number[]>();
  for (const { channel, user } of added) byChannel.set(channel.id, [...(byChannel.get(channel.id) ?? []), user.id]);
  for (const [streamId, userIds] of byChannel) {
    const c = state.channels.get(streamId)!;
    const newcomers = new Set(userIds);
    const peers = (c.inviteOnly ? state.activeSubscribers(streamId) : active.filter((u) => u.role !== Role.GUEST).map((u) => u.id)).filter((id) => !newcomers.has(id));
    if (peers.length) ctx.publish({ kind: 'event', realmId, userIds: peers, event: { type: 'subscription', op: 'peer_add', stream_ids: [streamId], user_ids: userIds } });
  }
}

export function listSubscriptions(state: RealmState, userId: number, includeSubscribers: 'true' | 'false' | 'partial') {
  requireUser(state, userId);
  return { subscriptions: subscriptionObjects(state, userId, includeSubscribers !== 'false') };
}

export function subscriptionObjects(state: RealmState, userId: number, withSubscribers: boolean, active = true): unknown[] {
  const out: unknown[] = [];
  for (const [streamId, subs] of state.subs) {
    const s = subs.get(userId);
    if (!s || s.active !== active) continue;
    const c = state.channels.get(streamId)!;
    out.push(formatSubscription(c, s, withSubscribers ? state.activeSubscribers(streamId) : undefined));
  }
  return out;
}

