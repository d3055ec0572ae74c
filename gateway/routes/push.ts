/**
 * Mobile push device routes (Zulip's `zerver/views/push_notifications.py`):
 * POST/DELETE /users/me/apns_device_token, POST/DELETE
 * /users/me/android_gcm_reg_id and POST /mobile_push/test_notification.
 * One realm call each (`actors/realm/push.ts`).
 */
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { TokenKind } from '../../lib/push.ts';
import { str } from '../params.ts';
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
