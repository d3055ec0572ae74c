/**
 * End-to-end encrypted mobile push (Zulip 11: `POST /mobile_push/register`,
 * feature level 406; payloads of level 413; `POST
 * /mobile_push/e2ee/test_notification`, level 420).
 *
 * A device registers with its `push_public_key` (an X25519 key of libsodium's
 * `crypto_box`) and its token, which it has sealed for the push service
 * (`encrypted_push_registration`, for the service's `bouncer_public_key`):
 * this server never sees the token. The registration is stored `pending`;
 * the `pushE2eeRegister` timer hands it to the service
 * (`remotes/push/e2ee/register`), whose answer makes it `active` (with the
 * service's device ID) or `failed` (with the service's error code), with a
 * `push_device` event. Notifications to active devices are JSON payloads
 * (the API's mobile-notifications page) sealed for the device's key
 * (`sealForDevice`) and sent through `remotes/push/e2ee/notify`, on the same
 * timers as the legacy ones (`push.ts`).
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../lib/errors.ts';
import { realmUrl } from '../../lib/hosts.ts';
import { callService, isPublicKey, pushConfigured, pushContent, PushServiceError, sealForDevice } from '../../lib/push.ts';
import { type E2eePushDevice, type StoredMessage, T } from '../../storage/tables.ts';
import { toUsers } from '../events/delivery.ts';
import { avatarUrl } from '../format.ts';
import { defineAction, defineQuery, defineTimer, later } from '../runtime/action.ts';
import { actingUser } from './access.ts';
import { pushServiceNotConfigured, realmUuid } from './push.ts';
import type { RealmState } from './state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();
const timer = defineTimer<RealmState>();

const REGISTER = 'pushE2eeRegister';

/** The user's devices the service has registered (those that can be sent to). */
export function activeE2eeDevices(state: Readonly<RealmState>, userId: number): E2eePushDevice[] {
  const out: E2eePushDevice[] = [];
  for (const d of state.e2eeDevices.get(userId)?.values() ?? []) if (d.status === 'active' && d.bouncerDeviceId !== null) out.push(d);
  return out;
}

/** `push_devices` of the register: push_account_id -> its registration's status (Zulip's get_push_devices). */
export function pushDevicesOf(state: Readonly<RealmState>, userId: number): Record<string, { status: string; error_code: string | null }> {
  const out: Record<string, { status: string; error_code: string | null }> = {};
  for (const d of state.e2eeDevices.get(userId)?.values() ?? []) out[String(d.pushAccountId)] = { status: d.status, error_code: d.errorCode };
  return out;
}

const pushDeviceEvent = (state: Readonly<RealmState>, d: E2eePushDevice) =>
  toUsers(state.realmId, [d.userId], { type: 'push_device', push_account_id: d.pushAccountId, status: d.status, ...(d.errorCode !== null ? { error_code: d.errorCode } : {}) });

/**
 * POST /mobile_push/register. Humans only; needs the service (as Zulip:
 * PUSH_SERVICE_NOT_CONFIGURED). The same registration again changes nothing;
 * another one for the same `push_account_id` replaces it (a rotated key or
 * token) and is registered again.
 */
export const registerE2eeDevice = action({
  type: 'registerE2eeDevice',
  fields: z.object({
    tokenKind: z.string(),
    pushAccountId: z.number().int(),
    pushPublicKey: z.string(),
    bouncerPublicKey: z.string(),
    encryptedPushRegistration: z.string(),
  }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    if (user.isBot) throw badRequest('This endpoint does not accept bot requests.');
    if (!pushConfigured()) throw pushServiceNotConfigured();
    if (msg.tokenKind !== 'fcm' && msg.tokenKind !== 'apns') throw badRequest('Invalid token_kind');
    if (msg.pushAccountId < 0 || msg.pushAccountId > 2 ** 53 - 1) throw badRequest('Invalid push_account_id');
    if (!isPublicKey(msg.pushPublicKey)) throw badRequest('Invalid push_public_key');
    if (!msg.bouncerPublicKey || msg.bouncerPublicKey.length > 1000) throw badRequest('Invalid bouncer_public_key');
    if (!msg.encryptedPushRegistration || msg.encryptedPushRegistration.length > 10_000) throw badRequest('Invalid encrypted_push_registration');
    const record: E2eePushDevice = {
      userId: user.id,
      pushAccountId: msg.pushAccountId,
      tokenKind: msg.tokenKind,
      pushPublicKey: msg.pushPublicKey,
      bouncerPublicKey: msg.bouncerPublicKey,
      encryptedPushRegistration: msg.encryptedPushRegistration,
      status: 'pending',
      errorCode: null,
      bouncerDeviceId: null,
    };
    const old = state.e2eeDevices.get(user.id)?.get(msg.pushAccountId);
    const same = old && old.tokenKind === record.tokenKind && old.pushPublicKey === record.pushPublicKey && old.bouncerPublicKey === record.bouncerPublicKey && old.encryptedPushRegistration === record.encryptedPushRegistration;
    return { record, changed: !same };
  },
  apply(state, p, tx) {
    if (!p.changed) return {};
    state.indexE2eeDevice(p.record);
    tx.write(T.e2eePushDevices.at(state.realmId, p.record.userId, p.record.pushAccountId).put(p.record));
    tx.setTimer(REGISTER, Date.now(), { userId: p.record.userId, pushAccountId: p.record.pushAccountId }, p.record.pushAccountId);
    return {};
  },
  events(state, p) {
    return p.changed ? [pushDeviceEvent(state, p.record)] : [];
  },
});

/** What the service said of a registration. */
type Registered = { deviceId: number; registration: string } | { error: string; registration: string } | null;

/**
 * Hands a pending registration to the service (`remotes/push/e2ee/register`).
 * A refusal (a 4xx with its code: an unknown bouncer key, an expired
 * registration) fails the device; anything else is retried.
 */
export const pushE2eeRegister = timer({
  name: REGISTER,
  async effect(state, p: { userId: number; pushAccountId: number }): Promise<Registered> {
    const d = state.e2eeDevices.get(p.userId)?.get(p.pushAccountId);
    if (!d || d.status !== 'pending') return null;
    const form = { realm_uuid: realmUuid(state), push_account_id: d.pushAccountId, encrypted_push_registration: d.encryptedPushRegistration, bouncer_public_key: d.bouncerPublicKey };
    try {
      const r = await callService('push/e2ee/register', { form });
      return { deviceId: Number(r.device_id), registration: d.encryptedPushRegistration };
    } catch (e) {
      if (e instanceof PushServiceError && e.status >= 400 && e.status < 500) {
        const code = (e.body as { code?: string } | null)?.code ?? 'BAD_REQUEST';
        return { error: code, registration: d.encryptedPushRegistration };
      }
      throw e;
    }
  },
  check(state, p: { userId: number; pushAccountId: number }, _ctx, done: Registered) {
    const d = state.e2eeDevices.get(p.userId)?.get(p.pushAccountId);
    // Replaced meanwhile: the new registration has a timer of its own.
    if (!done || !d || d.status !== 'pending' || d.encryptedPushRegistration !== done.registration) return null;
    const next: E2eePushDevice = 'deviceId' in done ? { ...d, status: 'active', bouncerDeviceId: done.deviceId, errorCode: null } : { ...d, status: 'failed', errorCode: done.error };
    return next;
  },
  apply(state, next, tx) {
    if (!next) return null;
    state.indexE2eeDevice(next);
    tx.write(T.e2eePushDevices.at(state.realmId, next.userId, next.pushAccountId).put(next));
    return null;
  },
  events(state, next) {
    return next ? [pushDeviceEvent(state, next)] : [];
  },
});

/** What every E2EE payload carries (Zulip's get_base_payload for E2EE). */
function base(state: Readonly<RealmState>, site: string, userId: number) {
  return { realm_name: state.meta?.name ?? '', realm_url: realmUrl(site, state.meta?.stringId ?? ''), user_id: userId };
}

/** The payload of a new message's notification (the API's mobile-notifications page). */
export function e2eeMessagePayload(state: Readonly<RealmState>, site: string, m: StoredMessage, userId: number): Record<string, unknown> {
  const sender = state.users.get(m.senderId);
  const out: Record<string, unknown> = {
    ...base(state, site, userId),
    type: 'message',
    message_id: m.id,
    sender_id: m.senderId,
    sender_full_name: sender?.fullName ?? 'Unknown user',
    sender_avatar_url: avatarUrl(sender?.email ?? '', false, true)!,
    time: m.timestamp,
    content: pushContent(m.renderedContent).content,
  };
  if (m.streamId !== null) {
    Object.assign(out, { recipient_type: 'channel', channel_id: m.streamId, channel_name: state.channels.get(m.streamId)?.name ?? '', topic: m.topic });
  } else {
    out.recipient_type = 'direct';
    // Group DMs only: every participant, sorted.
    if (m.dmUserIds!.length > 2) out.pm_users = [...m.dmUserIds!].sort((a, b) => a - b).join(',');
  }
  return out;
}

export const e2eeRemovePayload = (state: Readonly<RealmState>, site: string, userId: number, ids: number[]) => ({ ...base(state, site, userId), type: 'remove', message_ids: ids });

/**
 * Sends `payload` to `devices` through `remotes/push/e2ee/notify`, sealed for
 * each: one push request per device, as the service forwards it (FCM with
 * its priority; APNs with its headers and a visible placeholder the app
 * replaces once it has decrypted the data).
 */
export async function sendE2ee(state: Readonly<RealmState>, devices: E2eePushDevice[], payload: Record<string, unknown>, urgent: boolean): Promise<void> {
  if (!devices.length) return;
  const pushRequests = [];
  for (const d of devices) {
    const sealed = { push_account_id: d.pushAccountId, encrypted_data: await sealForDevice(d.pushPublicKey, payload) };
    if (d.tokenKind === 'fcm') pushRequests.push({ device_id: d.bouncerDeviceId, fcm_priority: urgent ? 'high' : 'normal', payload: sealed });
    else {
      const aps = urgent ? { 'mutable-content': 1, alert: { title: 'New notification' }, sound: 'default' } : { 'content-available': 1 };
      const headers = urgent ? { 'apns-priority': 10, 'apns-push-type': 'alert' } : { 'apns-priority': 5, 'apns-push-type': 'background' };
      pushRequests.push({ device_id: d.bouncerDeviceId, http_headers: headers, payload: { ...sealed, aps } });
    }
  }
  await callService('push/e2ee/notify', { json: { realm_uuid: realmUuid(state), push_requests: pushRequests } });
}

/**
 * POST /mobile_push/e2ee/test_notification: a test notification to one of
 * the caller's registered devices (`push_account_id`) or to all of them.
 */
export const sendE2eeTestPush = query({
  type: 'sendE2eeTestPush',
  fields: z.object({ pushAccountId: z.number().int().nullable() }),
  run(state, msg, ctx) {
    const user = actingUser(state, msg.caller);
    if (user.isBot) throw badRequest('This endpoint does not accept bot requests.');
    if (!pushConfigured()) throw pushServiceNotConfigured();
    const devices = activeE2eeDevices(state, user.id).filter((d) => msg.pushAccountId === null || d.pushAccountId === msg.pushAccountId);
    if (!devices.length) throw new ApiError('NO_ACTIVE_PUSH_DEVICE', 'No active registered push device', 400);
    const payload = { ...base(state, ctx.siteUrl, user.id), type: 'test', time: Math.floor(Date.now() / 1000) };
    return later(async () => {
      await sendE2ee(state, devices, payload, true);
      return {};
    });
  },
});
