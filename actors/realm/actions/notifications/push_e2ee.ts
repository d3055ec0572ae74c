/**
 * End-to-end encrypted mobile push (`POST /mobile_push/register`, FL 406;
 * payloads of FL 413 and 429; `POST /mobile_push/e2ee/test_notification`,
 * FL 420), as Zulip 12 has them since FL 468 (what zulip-flutter speaks):
 * the app creates a client device (`POST /register_client_device`, its
 * `device_id`; removed by `POST /remove_client_device`, FL 470), then
 * registers it for push with its `push_key` and `push_key_id` (a symmetric
 * key: `lib/push.ts`) and its token, which it sealed for the push service
 * (`encrypted_push_registration` for the service's `bouncer_public_key`; this
 * server never sees the token, only its `token_id`, the first 8 bytes of its
 * SHA-256). Either half may later be rotated alone. The token is `pending`
 * until the `pushDeviceRegister` timer has handed it to the service
 * (`remotes/push/e2ee/register`, by `token_id`); its answer makes it the
 * device's `push_token_id` or gives a `push_registration_error_code`.
 * Register's `devices` and `device` events (add, update, remove) tell the app.
 *
 * The FL 406-467 form, a registration by `push_account_id` with register's
 * `push_devices` and `push_device` events, went at FL 468: a request without
 * `device_id` is refused as Zulip 12 refuses it ("Missing 'device_id'
 * argument"), its other parameters ignored.
 *
 * Notifications to registered devices are the API's mobile-notifications
 * JSON, encrypted with the device's key and sent through
 * `remotes/push/e2ee/notify` (`sendE2ee`), each push request naming the
 * device's `token_id` as the service knows it, on the same timers as the
 * legacy ones (`push.ts`): FCM data `{push_key_id, encrypted_data}` (strings,
 * as FCM data is), APNs `{push_key_id, encrypted_data, aps}` (zulip-flutter's
 * EncryptedFcmMessage / EncryptedApnsPayload).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ApiError, badRequest, missingParam } from '../../../../lib/errors.ts';
import { realmUrl } from '../../../../lib/hosts.ts';
import { callService, encryptForDevice, pushConfigured, pushContent, pushKeyBytes, PushServiceError } from '../../../../lib/push.ts';
import { type ClientDevice, type StoredMessage, T } from '../../../../storage/tables.ts';
import { toUsers } from '../../../events/delivery.ts';
import { defineAction, defineQuery, defineTimer, later } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import { absoluteAvatarUrl, dropPushDevice, mentionedGroup, pushServiceNotConfigured, realmUuid } from './push.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();
const timer = defineTimer<RealmState>();

const DEVICE_REGISTER = 'pushDeviceRegister';
/** The timer of the push-account form (before FL 468), retired: `retiredPushE2eeRegister`. */
const RETIRED_REGISTER = 'pushE2eeRegister';

/** Where an encrypted notification goes: the device, its token as the service knows it (`token_id`), the token kind and the key. */
export interface E2eeTarget {
  deviceId: number;
  tokenId: string;
  tokenKind: 'fcm' | 'apns';
  pushKey: string;
  pushKeyId: number;
}

/** The user's devices registered with the service (a `push_token_id`), which can be sent to. */
export function e2eeTargets(state: Readonly<RealmState>, userId: number): E2eeTarget[] {
  const out: E2eeTarget[] = [];
  for (const d of state.clientDevices.get(userId)?.values() ?? []) {
    if (d.pushTokenId === null || d.pushKey === null || d.pushKeyId === null || d.tokenKind === null) continue;
    out.push({ deviceId: d.deviceId, tokenId: d.pushTokenId, tokenKind: d.tokenKind, pushKey: d.pushKey, pushKeyId: d.pushKeyId });
  }
  return out;
}

/** A client device as register's `devices` gives it (Zulip's DeviceInfoDict). */
const deviceInfo = (d: ClientDevice) => ({
  push_key_id: d.pushKeyId,
  push_token_id: d.pushTokenId,
  pending_push_token_id: d.pendingPushTokenId,
  push_token_last_updated_timestamp: d.pushTokenLastUpdated,
  push_registration_error_code: d.errorCode,
});

/** `devices` of the register: device ID -> its push registration (Zulip's get_devices). */
export function devicesOf(state: Readonly<RealmState>, userId: number): Record<string, ReturnType<typeof deviceInfo>> {
  const out: Record<string, ReturnType<typeof deviceInfo>> = {};
  for (const d of state.clientDevices.get(userId)?.values() ?? []) out[String(d.deviceId)] = deviceInfo(d);
  return out;
}

/** A `device` event with op `update`: the fields that changed (Zulip's do_register_push_device and friends). */
const deviceUpdate = (state: Readonly<RealmState>, d: ClientDevice, fields: Partial<ReturnType<typeof deviceInfo>>) =>
  toUsers(state.realmId, [d.userId], { type: 'device', op: 'update', device_id: d.deviceId, ...fields });

function humanUser(state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }) {
  const user = actingUser(state, caller);
  if (user.isBot) throw badRequest('This endpoint does not accept bot requests.');
  return user;
}

const TOKEN_KINDS = ['fcm', 'apns'] as const;
const checkTokenKind = (kind: string): 'fcm' | 'apns' => {
  if (!(TOKEN_KINDS as readonly string[]).includes(kind)) throw badRequest('Invalid token_kind');
  return kind as 'fcm' | 'apns';
};
const checkPushKey = (key: string): string => {
  if (!pushKeyBytes(key)) throw badRequest('Invalid `push_key`');
  return key;
};
function checkSealed(bouncerPublicKey: string, registration: string): void {
  if (!bouncerPublicKey || bouncerPublicKey.length > 1000) throw badRequest('Invalid bouncer_public_key');
  if (!registration || registration.length > 10_000) throw badRequest('Invalid encrypted_push_registration');
}

/** The token_id of a legacy token: base64 of the first 8 bytes of its SHA-256 (zulip-flutter's computeTokenId). */
const legacyTokenId = (token: string) => createHash('sha256').update(token).digest().subarray(0, 8).toString('base64');

/**
 * A `token_id` (base64 of the token's digest, 8 bytes in zulip-flutter) as
 * this server keeps it: the signed 64-bit integer it encodes, written back
 * as base64 of 8 bytes (Zulip's b64decode_token_id_base64 and
 * b64encode_token_id_int).
 */
function normalTokenId(b64: string): string {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) throw badRequest('`token_id` is not Base64 encoded');
  const raw = Buffer.from(b64, 'base64');
  if (raw.length === 0 || raw.length > 8) throw badRequest('Invalid `token_id`');
  let v = 0n;
  for (const byte of raw) v = (v << 8n) | BigInt(byte);
  if (raw[0]! & 0x80) v -= 1n << BigInt(8 * raw.length);
  const out = Buffer.alloc(8);
  out.writeBigInt64BE(v);
  return out.toString('base64');
}

/**
 * POST /register_client_device (FL 468): a new device of the caller's, with
 * no push registration yet; a `device` add event. Any user may (Zulip's
 * register_device); the device lives until POST /remove_client_device.
 */
export const registerClientDevice = action({
  type: 'registerClientDevice',
  fields: z.object({}),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    return { userId: user.id };
  },
  apply(state, p, tx) {
    const deviceId = state.take('device', tx);
    const d: ClientDevice = {
      userId: p.userId,
      deviceId,
      pushKeyId: null,
      pushKey: null,
      tokenKind: null,
      pushTokenId: null,
      pendingPushTokenId: null,
      pushTokenLastUpdated: null,
      errorCode: null,
      bouncerPublicKey: null,
      encryptedPushRegistration: null,
    };
    state.indexClientDevice(d);
    tx.write(T.clientDevices.at(state.realmId, p.userId, deviceId).put(d));
    return { device: d, reply: { device_id: deviceId } };
  },
  events(state, _p, r) {
    return [toUsers(state.realmId, [r.device.userId], { type: 'device', op: 'add', device_id: r.device.deviceId })];
  },
  reply: (r) => r.reply,
});

/** The caller's device `deviceId` (Zulip's check_device_id). */
function ownDevice(state: Readonly<RealmState>, userId: number, deviceId: number): ClientDevice {
  const d = state.clientDevices.get(userId)?.get(deviceId);
  if (!d) throw badRequest('Invalid `device_id`');
  return d;
}

/**
 * POST /remove_client_device (FL 470): forgets one of the caller's devices
 * and its push registration (the app calls it when logging out); a `device`
 * remove event. Nothing more is sent to it.
 */
export const removeClientDevice = action({
  type: 'removeClientDevice',
  fields: z.object({ deviceId: z.number().int() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    return ownDevice(state, user.id, msg.deviceId);
  },
  apply(state, d, tx) {
    state.forgetClientDevice(d.userId, d.deviceId);
    tx.write(T.clientDevices.at(state.realmId, d.userId, d.deviceId).delete());
    return d;
  },
  events(state, d) {
    return [toUsers(state.realmId, [d.userId], { type: 'device', op: 'remove', device_id: d.deviceId })];
  },
  reply: () => ({}),
});

/** What POST /mobile_push/register was given; absent parameters are null. */
const RegisterFields = z.object({
  deviceId: z.number().int().nullable(),
  tokenKind: z.string().nullable(),
  pushKey: z.string().nullable(),
  pushKeyId: z.number().int().nullable(),
  tokenId: z.string().nullable(),
  bouncerPublicKey: z.string().nullable(),
  encryptedPushRegistration: z.string().nullable(),
});
type RegisterFields = z.infer<typeof RegisterFields>;

type RegisterPlan = { kind: 'none' } | { kind: 'device'; next: ClientDevice; fields: Partial<ReturnType<typeof deviceInfo>>; register: boolean };

/** Zulip 12's register_push_device view: a client device's key, token, or both. */
function planDevice(state: Readonly<RealmState>, userId: number, msg: RegisterFields): RegisterPlan {
  const d = ownDevice(state, userId, msg.deviceId!);
  if (msg.tokenKind !== null) checkTokenKind(msg.tokenKind);
  if (msg.pushKeyId !== null && (msg.pushKeyId < 0 || msg.pushKeyId > 0xffffffff)) throw badRequest('Invalid push_key_id');
  const keyFields = msg.pushKey !== null && msg.pushKeyId !== null;
  const tokenFields = msg.bouncerPublicKey !== null && msg.encryptedPushRegistration !== null && msg.tokenId !== null && msg.tokenKind !== null;
  if (!keyFields && !tokenFields) throw badRequest('Missing parameters: must provide either all push key fields, all token fields, or both.');
  if (keyFields && !tokenFields) {
    if (d.pushKeyId === null) throw badRequest('No push registration exists to rotate key for.');
    const pushKey = checkPushKey(msg.pushKey!);
    if (d.pushKeyId === msg.pushKeyId && d.pushKey === pushKey) return { kind: 'none' };
    return { kind: 'device', next: { ...d, pushKey, pushKeyId: msg.pushKeyId }, fields: { push_key_id: msg.pushKeyId }, register: false };
  }
  // A registration with the service on its way: another one now could race it.
  if (d.errorCode === null && d.pendingPushTokenId !== null) throw badRequest('A registration for the device already in progress.');
  const tokenId = normalTokenId(msg.tokenId!);
  checkSealed(msg.bouncerPublicKey!, msg.encryptedPushRegistration!);
  const now = Math.floor(Date.now() / 1000);
  const sealed = { bouncerPublicKey: msg.bouncerPublicKey, encryptedPushRegistration: msg.encryptedPushRegistration };
  if (!keyFields) {
    if (d.pushKeyId === null) throw badRequest('No push registration exists to rotate token for.');
    if (d.errorCode === null && d.pushTokenId === tokenId) return { kind: 'none' };
    const next = { ...d, ...sealed, pendingPushTokenId: tokenId, pushTokenLastUpdated: now, errorCode: null };
    return { kind: 'device', next, fields: { pending_push_token_id: tokenId, push_token_last_updated_timestamp: now, push_registration_error_code: null }, register: true };
  }
  const pushKey = checkPushKey(msg.pushKey!);
  const tokenKind = checkTokenKind(msg.tokenKind!);
  if (d.errorCode === null && d.pushKeyId === msg.pushKeyId && d.pushKey === pushKey && d.pushTokenId === tokenId && d.tokenKind === tokenKind) return { kind: 'none' };
  const next = { ...d, ...sealed, pushKey, pushKeyId: msg.pushKeyId, tokenKind, pendingPushTokenId: tokenId, pushTokenLastUpdated: now, errorCode: null };
  return {
    kind: 'device',
    next,
    fields: { push_key_id: msg.pushKeyId, pending_push_token_id: tokenId, push_token_last_updated_timestamp: now, push_registration_error_code: null },
    register: true,
  };
}

/**
 * POST /mobile_push/register (by `device_id`, FL 468). Humans only; needs the
 * service (as Zulip: PUSH_SERVICE_NOT_CONFIGURED). The same registration
 * again changes nothing.
 */
export const registerE2eeDevice = action({
  type: 'registerE2eeDevice',
  fields: RegisterFields,
  check(state, msg): RegisterPlan {
    const user = humanUser(state, msg.caller);
    // Required since FL 468: a request of the push-account form (`push_account_id`) has none.
    if (msg.deviceId === null) throw missingParam('device_id');
    if (!pushConfigured()) throw pushServiceNotConfigured();
    return planDevice(state, user.id, msg);
  },
  apply(state, p, tx) {
    if (p.kind === 'device') {
      state.indexClientDevice(p.next);
      tx.write(T.clientDevices.at(state.realmId, p.next.userId, p.next.deviceId).put(p.next));
      if (p.register) tx.setTimer(DEVICE_REGISTER, Date.now(), { userId: p.next.userId, deviceId: p.next.deviceId }, p.next.deviceId);
    }
    return {};
  },
  events(state, p) {
    return p.kind === 'device' ? [deviceUpdate(state, p.next, p.fields)] : [];
  },
});

/** Whether the service took a registration, or why it refused it (a 4xx with its code); anything else is thrown and retried. */
async function registerWithService(form: Record<string, string>): Promise<{ ok: true } | { error: string }> {
  try {
    await callService('push/e2ee/register', { form });
    return { ok: true };
  } catch (e) {
    if (e instanceof PushServiceError && e.status >= 400 && e.status < 500) return { error: (e.body as { code?: string } | null)?.code ?? 'BAD_REQUEST' };
    throw e;
  }
}

/**
 * Hands a client device's pending token to the service
 * (`remotes/push/e2ee/register` with its `token_id`, FL 468; the service
 * checks it against the token it opens): its answer makes the token the
 * device's `push_token_id`, or gives the device its
 * `push_registration_error_code`. A refusal (an unknown bouncer key, an
 * expired registration) is final; anything else is retried.
 */
export const pushDeviceRegister = timer({
  name: DEVICE_REGISTER,
  async effect(state, p: { userId: number; deviceId: number }): Promise<(({ ok: true } | { error: string }) & { pending: string }) | null> {
    const d = state.clientDevices.get(p.userId)?.get(p.deviceId);
    if (!d || d.pendingPushTokenId === null || d.errorCode !== null || d.encryptedPushRegistration === null || d.bouncerPublicKey === null) return null;
    const form = { realm_uuid: realmUuid(state), token_id: d.pendingPushTokenId, encrypted_push_registration: d.encryptedPushRegistration, bouncer_public_key: d.bouncerPublicKey };
    return { ...(await registerWithService(form)), pending: d.pendingPushTokenId };
  },
  check(state, p: { userId: number; deviceId: number }, _ctx, done) {
    const d = state.clientDevices.get(p.userId)?.get(p.deviceId);
    // Removed, or another token pending meanwhile: that one has a timer of its own.
    if (!done || !d || d.pendingPushTokenId !== done.pending || d.errorCode !== null) return null;
    if ('ok' in done) {
      const next: ClientDevice = { ...d, pushTokenId: done.pending, pendingPushTokenId: null, encryptedPushRegistration: null };
      // FL 483: the legacy registrations of the same token go (its token_id is the first 8 bytes of its SHA-256, as the app computes it).
      const kind = d.tokenKind === 'apns' ? 1 : 2;
      const legacy = [...(state.pushDevices.get(d.userId)?.values() ?? [])].filter((x) => x.kind === kind && legacyTokenId(x.token) === done.pending);
      return { next, fields: { push_token_id: done.pending, pending_push_token_id: null }, legacy };
    }
    const next: ClientDevice = { ...d, errorCode: done.error };
    return { next, fields: { push_registration_error_code: done.error }, legacy: [] };
  },
  apply(state, r, tx) {
    if (!r) return null;
    for (const x of r.legacy) dropPushDevice(state, x, tx);
    state.indexClientDevice(r.next);
    tx.write(T.clientDevices.at(state.realmId, r.next.userId, r.next.deviceId).put(r.next));
    return null;
  },
  events(state, r) {
    return r ? [deviceUpdate(state, r.next, r.fields)] : [];
  },
});

/**
 * The push-account form's registration timer (before FL 468), retired: a
 * server of before may have left one in the store (or an export carry one).
 * Nothing is left to register; it is deleted when it comes due.
 */
export const retiredPushE2eeRegister = timer({
  name: RETIRED_REGISTER,
  check: () => null,
  apply: () => null,
  events: () => [],
});

/** What every E2EE payload carries (Zulip's get_base_payload for E2EE). */
function base(state: Readonly<RealmState>, site: string, userId: number) {
  return { realm_name: state.meta?.name ?? '', realm_url: realmUrl(site, state.meta?.stringId ?? ''), user_id: userId };
}

/**
 * The payload of a new message's notification (the API's
 * mobile-notifications page; zulip-flutter's NotifPayloadNewMessage): a
 * direct message names every participant, sorted (`recipient_user_ids`,
 * FL 429: 1:1 conversations too), a channel message its channel and topic;
 * a mention through a group names the group (`mentioned_user_group_*`).
 */
export function e2eeMessagePayload(state: Readonly<RealmState>, site: string, m: StoredMessage, userId: number, trigger: string): Record<string, unknown> {
  const sender = state.users.get(m.senderId);
  const out: Record<string, unknown> = {
    ...base(state, site, userId),
    type: 'message',
    message_id: m.id,
    sender_id: m.senderId,
    sender_full_name: sender?.fullName ?? 'Unknown user',
    sender_avatar_url: absoluteAvatarUrl(state, site, sender),
    time: m.timestamp,
    content: pushContent(m.renderedContent).content,
  };
  const group = mentionedGroup(state, m, userId, trigger);
  if (group) Object.assign(out, { mentioned_user_group_id: group.id, mentioned_user_group_name: group.name });
  if (m.streamId !== null) {
    Object.assign(out, { recipient_type: 'channel', channel_id: m.streamId, channel_name: state.channels.get(m.streamId)?.name ?? '', topic: m.topic });
  } else {
    Object.assign(out, { recipient_type: 'direct', recipient_user_ids: [...new Set(m.dmUserIds!)].sort((a, b) => a - b) });
  }
  return out;
}

export const e2eeRemovePayload = (state: Readonly<RealmState>, site: string, userId: number, ids: number[]) => ({ ...base(state, site, userId), type: 'remove', message_ids: ids });

/**
 * Sends `payload` to `targets` through `remotes/push/e2ee/notify`,
 * encrypted for each: one push request per device, as the service forwards
 * it (FCM with its priority; APNs with its headers and a visible placeholder
 * the app replaces once it has decrypted the data).
 */
export async function sendE2ee(state: Readonly<RealmState>, targets: E2eeTarget[], payload: Record<string, unknown>, urgent: boolean): Promise<void> {
  if (!targets.length) return;
  const pushRequests = [];
  for (const d of targets) {
    const encrypted = await encryptForDevice(d.pushKey, payload);
    if (d.tokenKind === 'fcm') {
      pushRequests.push({ token_id: d.tokenId, fcm_priority: urgent ? 'high' : 'normal', payload: { push_key_id: String(d.pushKeyId), encrypted_data: encrypted } });
    } else {
      const aps = urgent ? { 'mutable-content': 1, alert: { title: 'New notification' }, sound: 'default' } : { 'content-available': 1 };
      const headers = urgent ? { 'apns-priority': 10, 'apns-push-type': 'alert' } : { 'apns-priority': 5, 'apns-push-type': 'background' };
      pushRequests.push({ token_id: d.tokenId, http_headers: headers, payload: { push_key_id: d.pushKeyId, encrypted_data: encrypted, aps } });
    }
  }
  await callService('push/e2ee/notify', { json: { realm_uuid: realmUuid(state), push_requests: pushRequests } });
}

/**
 * POST /mobile_push/e2ee/test_notification: a test notification to one of
 * the caller's registered devices (`device_id`, FL 468) or to all of them.
 */
export const sendE2eeTestPush = query({
  type: 'sendE2eeTestPush',
  fields: z.object({ deviceId: z.number().int().nullable().default(null) }),
  run(state, msg, ctx) {
    const user = humanUser(state, msg.caller);
    if (!pushConfigured()) throw pushServiceNotConfigured();
    let targets = e2eeTargets(state, user.id);
    if (msg.deviceId !== null) targets = targets.filter((t) => t.deviceId === msg.deviceId);
    if (!targets.length) throw new ApiError('NO_ACTIVE_PUSH_DEVICE', 'No active registered push device', 400);
    const payload = { ...base(state, ctx.siteUrl, user.id), type: 'test', time: Math.floor(Date.now() / 1000) };
    return later(async () => {
      await sendE2ee(state, targets, payload, true);
      return {};
    });
  },
});
