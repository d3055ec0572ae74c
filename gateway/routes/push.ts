/**
 * Mobile push device routes (Zulip's `zerver/views/push_notifications.py`):
 * POST/DELETE /users/me/apns_device_token, POST/DELETE
 * /users/me/android_gcm_reg_id, POST /mobile_push/test_notification, and the
 * end-to-end encrypted forms: POST /mobile_push/register and
 * /mobile_push/e2ee/test_notification.
 * One realm call each (`actors/realm/actions/notifications/push.ts`).
 */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { TokenKind } from '../../lib/push.ts';
import { int, str } from '../params.ts';
import { caller, me, route } from '../route.ts';

const realmOf = (ctx: Parameters<typeof me>[0]) => realmActorId(me(ctx).realmId);

export const addApnsToken = route({
  method: 'POST',
  path: '/users/me/apns_device_token',
  auth: 'required',
  params: { token: str(), appid: str() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmOf(ctx), { type: 'addPushDevice', caller: caller(ctx), kind: TokenKind.APNS, token: p.token, appId: p.appid }),
});

export const removeApnsToken = route({
  method: 'DELETE',
  path: '/users/me/apns_device_token',
  auth: 'required',
  params: { token: str() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmOf(ctx), { type: 'removePushDevice', caller: caller(ctx), kind: TokenKind.APNS, token: p.token }),
});

export const addFcmToken = route({
  method: 'POST',
  path: '/users/me/android_gcm_reg_id',
  auth: 'required',
  params: { token: str() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmOf(ctx), { type: 'addPushDevice', caller: caller(ctx), kind: TokenKind.FCM, token: p.token, appId: null }),
});

export const removeFcmToken = route({
  method: 'DELETE',
  path: '/users/me/android_gcm_reg_id',
  auth: 'required',
  params: { token: str() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmOf(ctx), { type: 'removePushDevice', caller: caller(ctx), kind: TokenKind.FCM, token: p.token }),
});

export const testPushNotification = route({
  method: 'POST',
  path: '/mobile_push/test_notification',
  auth: 'required',
  params: { token: str().optional() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmOf(ctx), { type: 'sendTestPush', caller: caller(ctx), token: p.token ?? null }),
});

/**
 * POST /mobile_push/register: a client device's end-to-end encrypted push
 * registration (`actors/realm/actions/notifications/push_e2ee.ts`), by `device_id` (FL 468). The
 * FL 406-467 form's `push_account_id` is no parameter any more: a request
 * of that form lacks `device_id` and is refused, as Zulip 12 refuses it.
 * `device_id` is checked by the actor, after the check that the caller is
 * no bot (Zulip's human_users_only comes first).
 */
export const registerE2eePushDevice = route({
  method: 'POST',
  path: '/mobile_push/register',
  auth: 'required',
  params: {
    device_id: int().optional(),
    token_kind: str().optional(),
    push_key: str().optional(),
    push_key_id: int().optional(),
    token_id: str().optional(),
    bouncer_public_key: str().optional(),
    encrypted_push_registration: str().optional(),
  },
  handle: async (ctx, p) =>
    ctx.actors.raw(realmRef, realmOf(ctx), {
      type: 'registerE2eeDevice',
      caller: caller(ctx),
      deviceId: p.device_id ?? null,
      tokenKind: p.token_kind ?? null,
      pushKey: p.push_key ?? null,
      pushKeyId: p.push_key_id ?? null,
      tokenId: p.token_id ?? null,
      bouncerPublicKey: p.bouncer_public_key ?? null,
      encryptedPushRegistration: p.encrypted_push_registration ?? null,
    }),
});

/** POST /mobile_push/e2ee/test_notification (FL 420): to one device (`device_id`, FL 468) or all. */
export const testE2eePushNotification = route({
  method: 'POST',
  path: '/mobile_push/e2ee/test_notification',
  auth: 'required',
  params: { device_id: int().optional() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmOf(ctx), { type: 'sendE2eeTestPush', caller: caller(ctx), deviceId: p.device_id ?? null }),
});

/** POST /register_client_device (FL 468): a device ID for this install of a client. */
export const registerClientDevice = route({
  method: 'POST',
  path: '/register_client_device',
  auth: 'required',
  params: {},
  handle: async (ctx) => ctx.actors.raw(realmRef, realmOf(ctx), { type: 'registerClientDevice', caller: caller(ctx) }),
});

/** POST /remove_client_device (FL 470): forgets a device (and its push registration). */
export const removeClientDevice = route({
  method: 'POST',
  path: '/remove_client_device',
  auth: 'required',
  params: { device_id: int() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmOf(ctx), { type: 'removeClientDevice', caller: caller(ctx), deviceId: p.device_id }),
});
