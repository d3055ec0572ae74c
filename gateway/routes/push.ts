/**
 * Mobile push device routes (Zulip's `zerver/views/push_notifications.py`):
 * POST/DELETE /users/me/apns_device_token, POST/DELETE
 * /users/me/android_gcm_reg_id, POST /mobile_push/test_notification, and the
 * end-to-end encrypted forms: POST /mobile_push/register and
 * /mobile_push/e2ee/test_notification.
 * One realm call each (`actors/realm/push.ts`).
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

/** POST /mobile_push/register (Zulip 11, FL 406): a device for end-to-end encrypted push (`actors/realm/push_e2ee.ts`). */
export const registerE2eePushDevice = route({
  method: 'POST',
  path: '/mobile_push/register',
  auth: 'required',
  params: { token_kind: str(), push_account_id: int(), push_public_key: str(), bouncer_public_key: str(), encrypted_push_registration: str() },
  handle: async (ctx, p) =>
    ctx.actors.raw(realmRef, realmOf(ctx), {
      type: 'registerE2eeDevice',
      caller: caller(ctx),
      tokenKind: p.token_kind,
      pushAccountId: p.push_account_id,
      pushPublicKey: p.push_public_key,
      bouncerPublicKey: p.bouncer_public_key,
      encryptedPushRegistration: p.encrypted_push_registration,
    }),
});

/** POST /mobile_push/e2ee/test_notification (FL 420). */
export const testE2eePushNotification = route({
  method: 'POST',
  path: '/mobile_push/e2ee/test_notification',
  auth: 'required',
  params: { push_account_id: int().optional() },
  handle: async (ctx, p) => ctx.actors.raw(realmRef, realmOf(ctx), { type: 'sendE2eeTestPush', caller: caller(ctx), pushAccountId: p.push_account_id ?? null }),
});
