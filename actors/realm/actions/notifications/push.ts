/**
 * Mobile push (Zulip's `zerver/views/push_notifications.py` and
 * `zerver/lib/push_notifications.py`, as a server that uses the mobile push
 * notification service): devices register their APNs or FCM tokens
 * (`POST/DELETE /users/me/apns_device_token`, `/users/me/android_gcm_reg_id`),
 * and a message a user is notified of (the same rules as missed-message
 * email, with the push settings: `notifications.ts`) goes to the service,
 * which forwards it to the user's devices.
 *
 * Everything that talks to the service runs in a durable timer's `effect`
 * (outside the mailbox, retried until it succeeds, at least once):
 * `pushRegister` tells the service a new device (set in the registration's
 * commit), `pushNotify` sends one message's notifications (set in the
 * message's commit, `decidePush`). Reading a notified message removes its
 * notification: the user's actor sends that (`actors/user/push.ts`).
 *
 * Without the service configured (`lib/push.ts`), tokens are still stored
 * (as Zulip stores them), nothing is sent, and `push_notifications_enabled`
 * is false.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ApiError, badRequest, missingParam } from '../../../../lib/errors.ts';
import { realmUrl } from '../../../../lib/hosts.ts';
import { callService, pushConfigured, pushContent, pushService, TokenKind } from '../../../../lib/push.ts';
import { type ActivePush, type PushDeviceRecord, type StoredMessage, T } from '../../../../storage/tables.ts';
import { avatarUrl, jdenticonPath, realmUuidOf } from '../../../format.ts';
import { defineAction, defineQuery, defineTimer, later, type Tx } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { groupMembersRecursive } from '../../rules/groups.ts';
import { e2eeMessagePayload, e2eeRemovePayload, e2eeTargets, sendE2ee } from './push_e2ee.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();
const timer = defineTimer<RealmState>();

/** Zulip's ApnsAppId: a bundle ID. */
const APP_ID = /^[.a-zA-Z0-9-]+$/;

/** Zulip's validate_token. */
function checkToken(token: string, kind: number): void {
  if (token === '' || token.length > 4096) throw badRequest('Empty or invalid length token');
  if (kind === TokenKind.APNS && !/^([0-9a-fA-F]{2})+$/.test(token)) throw badRequest('Invalid APNS token');
}

function humanUser(state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }) {
  const user = actingUser(state, caller);
  if (user.isBot) throw badRequest('This endpoint does not accept bot requests.');
  return user;
}

/** Registers a device token for the caller (Zulip's add_push_device_token); the service learns it from the `pushRegister` timer. */
export const addPushDevice = action({
  type: 'addPushDevice',
  fields: z.object({ kind: z.union([z.literal(1), z.literal(2)]), token: z.string(), appId: z.string().nullable() }),
  check(state, msg) {
    const user = humanUser(state, msg.caller);
    checkToken(msg.token, msg.kind);
    if (msg.kind === TokenKind.APNS && (msg.appId === null || !APP_ID.test(msg.appId))) throw (msg.appId === null ? missingParam('appid') : badRequest('Invalid app ID'));
    const existing = state.pushDevices.get(user.id)?.get(`${msg.kind}:${msg.token}`);
    return { record: { userId: user.id, kind: msg.kind, token: msg.token, iosAppId: msg.kind === TokenKind.APNS ? msg.appId : null, registered: false } as PushDeviceRecord, existing };
  },
  apply(state, p, tx) {
    // Registering the same token again changes nothing (Zulip's ignore_conflicts).
    if (p.existing) return {};
    state.indexPushDevice(p.record);
    tx.write(T.pushDevices.at(state.realmId, p.record.userId, p.record.kind, p.record.token).put(p.record));
    if (pushConfigured()) tx.setTimer(REGISTER, Date.now(), { userId: p.record.userId }, p.record.userId);
    return {};
  },
});

/** Removes a device token (Zulip's remove_push_device_token): the service is told by the `pushRegister` timer. */
export const removePushDevice = action({
  type: 'removePushDevice',
  fields: z.object({ kind: z.union([z.literal(1), z.literal(2)]), token: z.string() }),
  check(state, msg) {
    const user = humanUser(state, msg.caller);
    checkToken(msg.token, msg.kind);
    const existing = state.pushDevices.get(user.id)?.get(`${msg.kind}:${msg.token}`);
    if (!existing) throw badRequest('Token does not exist');
    return existing;
  },
  apply(state, d, tx) {
    dropPushDevice(state, d, tx);
    return {};
  },
});

/** Forgets a legacy device token; one the service knows is unregistered there too (a timer of its own: the payload names it). */
export function dropPushDevice(state: RealmState, d: PushDeviceRecord, tx: Tx): void {
  state.pushDevices.get(d.userId)?.delete(`${d.kind}:${d.token}`);
  tx.write(T.pushDevices.at(state.realmId, d.userId, d.kind, d.token).delete());
  if (pushConfigured() && d.registered) tx.setTimer(UNREGISTER, Date.now(), { device: d }, d.userId);
}

/** Zulip's InvalidPushDeviceTokenError / NoActivePushDeviceError. */
const deviceNotRecognized = () => new ApiError('INVALID_PUSH_DEVICE_TOKEN', 'Device not recognized', 400);
const noActiveDevice = () => new ApiError('NO_ACTIVE_PUSH_DEVICE', 'No active registered push device', 400);

/**
 * POST /mobile_push/test_notification: a test notification to one of the
 * caller's devices, or to all of them, through the service's
 * `push/test_notification` (outside the mailbox). Without the service,
 * nothing can be sent: PUSH_SERVICE_NOT_CONFIGURED.
 */
export const sendTestPush = query({
  type: 'sendTestPush',
  fields: z.object({ token: z.string().nullable() }),
  run(state, msg, ctx) {
    const user = humanUser(state, msg.caller);
    const mine = [...(state.pushDevices.get(user.id)?.values() ?? [])];
    const devices = msg.token === null ? mine : mine.filter((d) => d.token === msg.token);
    if (msg.token !== null && !devices.length) throw deviceNotRecognized();
    if (!devices.length) throw noActiveDevice();
    if (!pushConfigured()) throw pushServiceNotConfigured();
    const base = basePayload(state, ctx.siteUrl, user.id);
    return later(async () => {
      for (const d of devices) {
        await callService('push/test_notification', { json: { token: d.token, token_kind: d.kind, user_id: user.id, user_uuid: userUuid(state, user.id), base_payload: base } });
      }
      return {};
    });
  },
});

export const pushServiceNotConfigured = () => new ApiError('PUSH_SERVICE_NOT_CONFIGURED', 'Server is not configured to use push notification service.', 400);

/**
 * A stable UUID for a user as the service knows them (Zulip's
 * UserProfile.uuid): derived from the realm and user IDs, as Parley keeps no
 * UUID per user.
 */
export function userUuid(state: Readonly<RealmState>, userId: number): string {
  const h = createHash('sha256').update(`parley-user:${state.realmId}:${userId}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** A stable UUID for the organization as the service knows it (Zulip's Realm.uuid), derived from its ID. */
export function realmUuid(state: Readonly<RealmState>): string {
  return realmUuidOf(state.realmId);
}

/**
 * A sender's medium avatar as an absolute URL (Zulip's `absolute_avatar_url`):
 * a notification is shown outside the organization's pages.
 */
export function absoluteAvatarUrl(state: Readonly<RealmState>, site: string, sender: Readonly<{ id: number; email: string; avatarSource: 'G' | 'J' }> | undefined): string {
  if (sender?.avatarSource === 'J') return realmUrl(site, state.meta?.stringId ?? '').replace(/\/$/, '') + jdenticonPath(sender.id, true);
  return avatarUrl(sender?.email ?? '', false, true)!;
}

/** What every payload carries: who it is for (Zulip's get_base_payload). */
export function basePayload(state: Readonly<RealmState>, site: string, userId: number): Record<string, string | number> {
  const url = realmUrl(site, state.meta?.stringId ?? '');
  return { server: new URL(site).host, realm_id: state.realmId, realm_name: state.meta?.name ?? '', realm_uri: url, realm_url: url, user_id: userId };
}

/** The base payload as APNs payloads carry it: without `server` and `realm_id` (FL 413). */
function apnsBase(base: Record<string, string | number>): Record<string, string | number> {
  const { server: _server, realm_id: _realmId, ...rest } = base;
  return rest;
}

const REGISTER = 'pushRegister';
const UNREGISTER = 'pushUnregister';
const NOTIFY = 'pushNotify';

/** The user's devices the service does not know yet are registered with it (`remotes/push/register`). */
export const pushRegister = timer({
  name: REGISTER,
  async effect(state, payload: { userId: number }): Promise<string[]> {
    const done: string[] = [];
    for (const d of state.pushDevices.get(payload.userId)?.values() ?? []) {
      if (d.registered) continue;
      const form: Record<string, string | number> = { server_uuid: pushService()!.uuid, user_id: d.userId, user_uuid: userUuid(state, d.userId), token: d.token, token_kind: d.kind };
      if (d.iosAppId) form.ios_app_id = d.iosAppId;
      await callService('push/register', { form });
      done.push(`${d.kind}:${d.token}`);
    }
    return done;
  },
  check: (_state, payload: { userId: number }, _ctx, done: string[]) => ({ userId: payload.userId, done }),
  apply(state, p, tx) {
    for (const key of p.done) {
      const d = state.pushDevices.get(p.userId)?.get(key);
      if (!d || d.registered) continue;
      d.registered = true;
      tx.write(T.pushDevices.at(state.realmId, d.userId, d.kind, d.token).put(d));
    }
    return null;
  },
});

/** A removed device is unregistered with the service (`remotes/push/unregister`). */
export const pushUnregister = timer({
  name: UNREGISTER,
  async effect(state, payload: { device: PushDeviceRecord }): Promise<undefined> {
    const d = payload.device;
    await callService('push/unregister', { form: { user_id: d.userId, user_uuid: userUuid(state, d.userId), token: d.token, token_kind: d.kind } }).catch((e: unknown) => {
      // Already gone there: done (Zulip's "Token does not exist").
      if (!(e instanceof Error && /Token does not exist/.test(e.message))) throw e;
    });
    return undefined;
  },
  check: () => null,
  apply: () => null,
});

/** Whether `userId` has a device to push to: a legacy token, or an E2EE device the service registered. */
export const hasPushDevice = (state: Readonly<RealmState>, userId: number): boolean => hasLegacyDevice(state, userId) || e2eeTargets(state, userId).length > 0;
const hasLegacyDevice = (state: Readonly<RealmState>, userId: number): boolean => (state.pushDevices.get(userId)?.size ?? 0) > 0;

/** One message's push notifications, as the send recorded them. */
interface NotifyPayload {
  messageId: number;
  recipientKey: string;
  /** [user ID, trigger]. */
  users: Array<[number, string]>;
}

/** Active notifications kept per user: beyond this, the oldest are forgotten (a device shows far fewer). */
const MAX_ACTIVE = 1000;

/**
 * Records, in the message's commit, that `users` are pushed about `m` (the
 * message's `pushed`, and each user's active notification, Zulip's
 * `active_mobile_push_notification`); the `pushNotify` timer sends it after
 * the commit.
 */
export function recordPush(state: RealmState, m: StoredMessage, users: Array<[number, string]>, tx: Tx): void {
  m.pushed = users.map(([id]) => id);
  const active: ActivePush = { streamId: m.streamId, topic: m.streamId === null ? '' : m.topic.toLowerCase(), removing: false };
  for (const [userId] of users) {
    let mine = state.activePushes.get(userId);
    if (!mine) state.activePushes.set(userId, (mine = new Map()));
    mine.set(m.id, active);
    tx.write(T.activePushes.at(state.realmId, userId, m.id).put(active));
    if (mine.size > MAX_ACTIVE) {
      const oldest = mine.keys().next().value!;
      mine.delete(oldest);
      tx.write(T.activePushes.at(state.realmId, userId, oldest).delete());
    }
  }
  tx.setTimer(NOTIFY, Date.now(), { messageId: m.id, recipientKey: m.recipientKey, users } satisfies NotifyPayload, m.id);
}

/** The message part of a notification (Zulip's get_message_payload). */
function messagePayload(state: Readonly<RealmState>, m: StoredMessage): Record<string, string | number> {
  const sender = state.users.get(m.senderId);
  const out: Record<string, string | number> = { sender_id: m.senderId, sender_email: sender?.email ?? '', time: m.timestamp };
  if (m.streamId !== null) {
    Object.assign(out, { recipient_type: 'stream', stream_id: m.streamId, stream: state.channels.get(m.streamId)?.name ?? '', topic: m.topic });
  } else {
    out.recipient_type = 'private';
    // Group DMs name everyone; a 1:1 DM is known from sender_id and user_id.
    if (m.dmUserIds!.length > 2) out.pm_users = m.dmUserIds!.join(',');
  }
  return out;
}

const nameOf = (state: Readonly<RealmState>, id: number) => state.users.get(id)?.fullName ?? 'Unknown user';

/**
 * The group a user mentioned through a group is told of (Zulip's
 * get_mentioned_user_group): none when they were also mentioned by name;
 * else, of the groups the message mentions (not silently) that they belong
 * to, the one with the fewest members.
 */
export function mentionedGroup(state: Readonly<RealmState>, m: StoredMessage, userId: number, trigger: string): { id: number; name: string } | null {
  if (trigger !== 'mentioned' || m.renderedContent.includes(`<span class="user-mention" data-user-id="${userId}">`)) return null;
  let best: { id: number; name: string; size: number } | null = null;
  for (const [, id] of m.renderedContent.matchAll(/<span class="user-group-mention" data-user-group-id="(\d+)">/g)) {
    const g = state.groups.get(Number(id));
    if (!g) continue;
    const members = groupMembersRecursive(state, g.id);
    if (!members.includes(userId)) continue;
    if (!best || members.length < best.size) best = { id: g.id, name: g.name, size: members.length };
  }
  return best && { id: best.id, name: best.name };
}

/** The APNs alert's title and subtitle (Zulip's get_apns_alert_title / _subtitle). */
function alert(state: Readonly<RealmState>, m: StoredMessage, userId: number, trigger: string): { title: string; subtitle: string } {
  const sender = nameOf(state, m.senderId);
  let title: string;
  if (m.streamId !== null) title = `#${state.channels.get(m.streamId)?.name ?? ''} > ${m.topic}`;
  else if (m.dmUserIds!.length > 2) title = m.dmUserIds!.filter((id) => id !== userId).map((id) => nameOf(state, id)).join(', ');
  else title = sender;
  let subtitle = `${sender}:`;
  const group = mentionedGroup(state, m, userId, trigger);
  if (group) subtitle = `${sender} mentioned @${group.name}:`;
  else if (trigger === 'mentioned') subtitle = `${sender} mentioned you:`;
  else if (trigger.includes('wildcard')) subtitle = `${sender} mentioned everyone:`;
  else if (m.streamId === null && m.dmUserIds!.length <= 2) subtitle = '';
  return { title, subtitle };
}

/**
 * The service's `push/notify` body for one user and message (Zulip's
 * send_notifications_to_bouncer). Where the organization requires end-to-end
 * encrypted push, the content is "New message" (Zulip's redaction for the
 * legacy path); encrypted devices get it whole.
 */
export function notifyBody(state: Readonly<RealmState>, site: string, m: StoredMessage, userId: number, trigger: string): Record<string, unknown> {
  const base = basePayload(state, site, userId);
  const msg = messagePayload(state, m);
  const group = mentionedGroup(state, m, userId, trigger);
  if (group) Object.assign(msg, { mentioned_user_group_id: group.id, mentioned_user_group_name: group.name });
  // The organization requires end-to-end encryption (FL 409): what goes through the service in clear carries no content.
  const content = state.org.settings.requireE2eePushNotifications ? 'New message' : pushContent(m.renderedContent).content;
  const sender = state.users.get(m.senderId);
  const gcm = {
    ...base,
    ...msg,
    event: 'message',
    zulip_message_id: m.id,
    content,
    sender_full_name: sender?.fullName ?? 'Unknown user',
    sender_avatar_url: absoluteAvatarUrl(state, site, sender),
  };
  // APNs payloads leave out the unused `server` and `realm_id` (FL 413) and `time` (FL 410).
  const { time: _time, ...apnsMsg } = msg;
  const apns = { alert: { ...alert(state, m, userId, trigger), body: content }, sound: 'default', badge: 0, custom: { zulip: { ...apnsBase(base), ...apnsMsg, message_ids: [m.id] } } };
  return { user_id: userId, user_uuid: userUuid(state, userId), gcm_payload: gcm, apns_payload: apns, gcm_options: { priority: 'high' } };
}

/** The service's `push/notify` body that removes notifications of read messages (Zulip's get_remove_payload_*). */
export function removeBody(state: Readonly<RealmState>, site: string, userId: number, ids: number[]): Record<string, unknown> {
  const base = basePayload(state, site, userId);
  return {
    user_id: userId,
    user_uuid: userUuid(state, userId),
    // Only `zulip_message_ids`: the pre-2019 `zulip_message_id` went at FL 413.
    gcm_payload: { ...base, event: 'remove', zulip_message_ids: ids.join(',') },
    apns_payload: { badge: 0, custom: { zulip: { ...apnsBase(base), event: 'remove', zulip_message_ids: ids } } },
    gcm_options: { priority: 'normal' },
  };
}

/** Sends one message's push notifications through the service, after the message's commit. */
export const pushNotify = timer({
  name: NOTIFY,
  async effect(state, p: NotifyPayload, ctx): Promise<undefined> {
    const m = await T.messages.at(state.realmId, p.recipientKey, p.messageId).get(ctx.store);
    if (!m) return undefined; // deleted meanwhile
    for (const [userId, trigger] of p.users) {
      // Read before it left (its removal is on its way, or done): not sent, as Zulip's handle_push_notification.
      const active = state.activePushes.get(userId)?.get(m.id);
      if (!active || active.removing) continue;
      if (hasLegacyDevice(state, userId)) await callService('push/notify', { json: notifyBody(state, ctx.siteUrl, m, userId, trigger) });
      await sendE2ee(state, e2eeTargets(state, userId), e2eeMessagePayload(state, ctx.siteUrl, m, userId, trigger), true);
    }
    ctx.log.info({ realm: state.realmId, message: m.id, users: p.users.length }, 'push notifications sent');
    return undefined;
  },
  check: () => null,
  apply: () => null,
});

/** Removals wait this long, so that reads close together leave in one batch. */
const REMOVE_DELAY_MS = Number(process.env.PARLEY_PUSH_REMOVE_DELAY_MS ?? 1000);
/** The most message IDs one removal names (Zulip's MAX_APNS_MESSAGE_IDS): the newest; the older ones are dropped all the same. */
const MAX_REMOVE_IDS = 200;

/**
 * The user's actor reports messages it marked read (`ids`, or every message
 * below `below` for POST /mark_all_as_read): those of them with an active
 * notification get a removal. Idempotent: a notification already being
 * removed, or removed, is not removed again.
 */
export const removePushNotifications = action({
  type: 'removePushNotifications',
  fields: z.object({ userId: z.number().int(), ids: z.array(z.number().int()).max(5000).default([]), below: z.number().int().nullable().default(null) }),
  check(state, msg) {
    if (msg.caller.userId !== null && msg.caller.userId !== msg.userId) throw badRequest('Only the server removes push notifications');
    const mine = state.activePushes.get(msg.userId);
    const ids: number[] = [];
    if (mine && msg.below !== null) {
      for (const [id, a] of mine) if (id < msg.below && !a.removing) ids.push(id);
    } else if (mine) {
      for (const id of msg.ids) if (mine.get(id)?.removing === false) ids.push(id);
    }
    return { userId: msg.userId, ids };
  },
  apply(state, p, tx) {
    startRemoval(state, tx, p.userId, p.ids);
    return {};
  },
});

/** Unsubscribing marks a channel's messages read: their notifications are removed (Zulip's `bulk_remove_subscriptions`). */
export function removeChannelPushes(state: RealmState, tx: Tx, userId: number, channelId: number): void {
  const mine = state.activePushes.get(userId);
  if (!mine) return;
  const ids: number[] = [];
  for (const [id, a] of mine) if (a.streamId === channelId && !a.removing) ids.push(id);
  startRemoval(state, tx, userId, ids);
}

/** Marks `ids` (active, not being removed) as being removed, and starts the user's removal batch if none is waiting. */
function startRemoval(state: RealmState, tx: Tx, userId: number, ids: number[]): void {
  const mine = state.activePushes.get(userId);
  if (!mine || !ids.length) return;
  const waiting = [...mine.values()].some((a) => a.removing);
  for (const id of ids) {
    const removing: ActivePush = { ...mine.get(id)!, removing: true };
    mine.set(id, removing);
    tx.write(T.activePushes.at(state.realmId, userId, id).put(removing));
  }
  if (!waiting) tx.setTimer(REMOVE, Date.now() + REMOVE_DELAY_MS, { userId }, userId);
}

const REMOVE = 'pushRemove';

/**
 * One user's removal batch: every notification marked removing is removed
 * from their devices in one call (the newest `MAX_REMOVE_IDS` named), then
 * forgotten. At least once: a node lost between the call and the commit
 * sends the same removal again, which changes nothing on a device.
 */
export const pushRemove = timer({
  name: REMOVE,
  async effect(state, p: { userId: number }, ctx): Promise<number[]> {
    const ids = [...(state.activePushes.get(p.userId) ?? [])].filter(([, a]) => a.removing).map(([id]) => id).sort((a, b) => a - b);
    if (ids.length && pushConfigured()) {
      const named = ids.slice(-MAX_REMOVE_IDS);
      if (hasLegacyDevice(state, p.userId)) await callService('push/notify', { json: removeBody(state, ctx.siteUrl, p.userId, named) });
      await sendE2ee(state, e2eeTargets(state, p.userId), e2eeRemovePayload(state, ctx.siteUrl, p.userId, named), false);
    }
    return ids;
  },
  check: (_state, p: { userId: number }, _ctx, ids: number[]) => ({ userId: p.userId, ids }),
  apply(state, p, tx) {
    const mine = state.activePushes.get(p.userId);
    for (const id of p.ids) {
      mine?.delete(id);
      tx.write(T.activePushes.at(state.realmId, p.userId, id).delete());
    }
    if (mine && [...mine.values()].some((a) => a.removing)) tx.setTimer(REMOVE, Date.now() + REMOVE_DELAY_MS, { userId: p.userId }, p.userId);
    if (mine?.size === 0) state.activePushes.delete(p.userId);
    return null;
  },
});
