// Mobile push over HTTP, against a push notification service the test runs
// (`test/helpers/push-service.ts`, the service's API as Zulip's
// zilencer/views.py defines it, recording each call): server registration,
// device routes and their errors, what a notification and a removal carry
// (the fields the apps parse), the test notification, and a server without
// the service. Embedded mode.
import sodium from 'libsodium-wrappers';
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { newPerson, type Person } from './helpers/people.ts';
import { startPushService } from './helpers/push-service.ts';
import { serverFor } from './helpers/server.ts';

const svc = await startPushService();
t.teardown(() => svc.close());
const s = await serverFor(t, { env: { PARLEY_PUSH_SERVICE_URL: svc.url, PARLEY_PUSH_SERVER_UUID: svc.uuid, PARLEY_PUSH_SERVER_KEY: svc.key, PARLEY_PUSH_CONTACT_EMAIL: 'ops@parley.test', PARLEY_SITE_URL: 'http://parley.test', PARLEY_PUSH_REMOVE_DELAY_MS: '400' } });
const plain = await serverFor(t, {});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const APNS = 'ab'.repeat(32);
const notifiesFor = (p: Person) => svc.of('push/notify').filter((c) => c.body.user_id === p.userId);

/** A new member with an FCM token registered (known to the service). */
async function withDevice(): Promise<{ p: Person; api: Api; token: string }> {
  const p = await newPerson(s);
  const api = s.api.as(p);
  const token = uniq('fcm');
  await api.ok('POST', '/users/me/android_gcm_reg_id', { token });
  await svc.waitFor(() => svc.devices.has(`${p.userId}:2:${token}`));
  return { p, api, token };
}

t.test('push - the server registers with the service at start; server_settings and register say push is on', async (t) => {
  await svc.waitFor(() => svc.of('server/register').length > 0);
  t.match(svc.of('server/register')[0]!.body, { zulip_org_id: svc.uuid, zulip_org_key: svc.key, hostname: 'parley.test', contact_email: 'ops@parley.test' });
  t.equal((await s.api.ok('GET', '/server_settings')).push_notifications_enabled, true);
  const r = await s.api.as(s.demo.member1).ok('POST', '/register', { fetch_event_types: JSON.stringify(['realm']) });
  t.equal(r.realm_push_notifications_enabled, true);
});

t.test('push - device routes: tokens checked, bots refused, registered with the service, removed', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  const bad = async (path: string, params: Record<string, string>, msg: string) => {
    const r = await api.call('POST', path, params);
    t.equal(r.status, 400, msg);
    t.match(r.body, { result: 'error', code: 'BAD_REQUEST', msg });
  };
  await bad('/users/me/apns_device_token', { token: 'not-hex', appid: 'org.zulip.Zulip' }, 'Invalid APNS token');
  await bad('/users/me/apns_device_token', { token: '', appid: 'org.zulip.Zulip' }, 'Empty or invalid length token');
  await bad('/users/me/apns_device_token', { token: APNS, appid: 'bad app id!' }, 'Invalid app ID');
  await bad('/users/me/android_gcm_reg_id', { token: 'x'.repeat(4097) }, 'Empty or invalid length token');
  const noApp = await api.call('POST', '/users/me/apns_device_token', { token: APNS });
  t.match(noApp, { status: 400, body: { result: 'error', msg: "Missing 'appid' argument" } });
  const botTry = await s.api.as(s.demo.bot).call('POST', '/users/me/android_gcm_reg_id', { token: 'bot-token' });
  t.match(botTry.body, { result: 'error', msg: 'This endpoint does not accept bot requests.' });

  await api.ok('POST', '/users/me/apns_device_token', { token: APNS, appid: 'org.zulip.Zulip' });
  await api.ok('POST', '/users/me/apns_device_token', { token: APNS, appid: 'org.zulip.Zulip' }); // again: no change
  await svc.waitFor(() => svc.devices.has(`${p.userId}:1:${APNS}`));
  const reg = svc.of('push/register').filter((c) => Number(c.body.user_id) === p.userId);
  t.equal(reg.length, 1, 'registered with the service once');
  t.match(reg[0]!, { server: svc.uuid, body: { token: APNS, token_kind: '1', ios_app_id: 'org.zulip.Zulip' } });

  await api.ok('DELETE', '/users/me/apns_device_token', { token: APNS });
  await svc.waitFor(() => !svc.devices.has(`${p.userId}:1:${APNS}`));
  t.match(svc.of('push/unregister').at(-1)!.body, { token: APNS, token_kind: '1', user_id: String(p.userId) });
  const again = await api.call('DELETE', '/users/me/apns_device_token', { token: APNS });
  t.match(again.body, { result: 'error', msg: 'Token does not exist' });
});

t.test('push - a direct message to a user with a device: the payloads the apps parse; reading it removes it', async (t) => {
  const sender = await newPerson(s, undefined, 'Pusher');
  const { p, api } = await withDevice();
  const content = `hello **there** ${uniq('c')}`;
  const { id } = await s.api.as(sender).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([p.userId]), content });
  await svc.waitFor(() => notifiesFor(p).length > 0);
  const call = notifiesFor(p)[0]!;
  t.equal(call.server, svc.uuid, 'authenticated as the server');
  t.match(call.body, { user_id: p.userId, gcm_options: { priority: 'high' } });
  t.match(call.body.gcm_payload, {
    event: 'message',
    zulip_message_id: id,
    user_id: p.userId,
    realm_url: 'http://parley.test',
    realm_uri: 'http://parley.test',
    sender_id: sender.userId,
    sender_email: sender.email,
    sender_full_name: sender.fullName,
    sender_avatar_url: /^https:\/\//,
    recipient_type: 'private',
    content: content.replace('**there**', 'there'),
    content_truncated: false,
    time: Number,
  });
  t.notOk('pm_users' in call.body.gcm_payload, 'a 1:1 DM has no pm_users');
  t.match(call.body.gcm_payload, { realm_name: String, server: 'parley.test' });
  t.match(call.body.apns_payload, { alert: { title: sender.fullName, body: content.replace('**there**', 'there') }, custom: { zulip: { message_ids: [id], sender_id: sender.userId } } });
  t.notOk('time' in call.body.apns_payload.custom.zulip, 'the APNs payload has no time, as FCM has (FL 410)');

  await api.ok('POST', '/messages/flags', { messages: JSON.stringify([id]), op: 'add', flag: 'read' });
  await svc.waitFor(() => notifiesFor(p).length > 1);
  const removal = notifiesFor(p)[1]!;
  t.match(removal.body, { gcm_payload: { event: 'remove', zulip_message_ids: String(id), user_id: p.userId }, apns_payload: { custom: { zulip: { event: 'remove', zulip_message_ids: [id] } } }, gcm_options: { priority: 'normal' } });
});

t.test('push - channel messages: a mention is pushed with the channel and topic, a plain message is not; settings apply', async (t) => {
  const sender = await newPerson(s);
  const senderApi = s.api.as(sender);
  const mentioned = await withDevice();
  const quiet = await withDevice();
  const name = uniq('pushch');
  await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([sender.userId, mentioned.p.userId, quiet.p.userId]) });
  const streamId = (await senderApi.ok('GET', '/get_stream_id', { stream: name })).stream_id;
  await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'news', content: `nothing special ${uniq('n')}` });
  const { id } = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'news', content: `@**${mentioned.p.fullName}** look` });
  await svc.waitFor(() => notifiesFor(mentioned.p).length > 0);
  await sleep(1000);
  t.equal(notifiesFor(mentioned.p).length, 1, 'only the mention is pushed');
  t.match(notifiesFor(mentioned.p)[0]!.body.gcm_payload, { zulip_message_id: id, recipient_type: 'stream', stream_id: streamId, stream: name, topic: 'news' });
  t.match(notifiesFor(mentioned.p)[0]!.body.apns_payload.alert, { title: `#${name} > news`, subtitle: `${sender.fullName} mentioned you:` });
  t.equal(notifiesFor(quiet.p).length, 0, 'a subscriber not mentioned is not pushed');

  // enable_offline_push_notifications off: no push for mentions or DMs.
  await quiet.api.ok('PATCH', '/settings', { enable_offline_push_notifications: false });
  await senderApi.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([quiet.p.userId]), content: 'dm while off' });
  // The channel's push_notifications on: every message of the channel is pushed.
  await mentioned.api.ok('POST', '/users/me/subscriptions/properties', { subscription_data: JSON.stringify([{ stream_id: streamId, property: 'push_notifications', value: true }]) });
  const next = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'other', content: 'for the channel' });
  await svc.waitFor(() => notifiesFor(mentioned.p).length > 1);
  t.equal(notifiesFor(mentioned.p)[1]!.body.gcm_payload.zulip_message_id, next.id, "the channel's push_notifications pushes plain messages");
  await sleep(1000);
  t.equal(notifiesFor(quiet.p).length, 0, 'enable_offline_push_notifications off: the DM is not pushed');
});

t.test('push - removals: every way of reading removes a pushed notification, once, reads close together in one batch', async (t) => {
  const sender = await newPerson(s);
  const senderApi = s.api.as(sender);
  const { p, api } = await withDevice();
  const [x, y] = [uniq('rmx'), uniq('rmy')];
  for (const name of [x, y]) await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([sender.userId, p.userId]) });
  const xId = (await senderApi.ok('GET', '/get_stream_id', { stream: x })).stream_id;
  const dm = async () => (await senderApi.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([p.userId]), content: `dm ${uniq('d')}` })).id as number;
  const mention = async (to: string, topic: string) => (await senderApi.ok('POST', '/messages', { type: 'stream', to, topic, content: `@**${p.fullName}** ${uniq('m')}` })).id as number;
  const [a, b, c, d, e, f] = [await dm(), await dm(), await mention(x, 't1'), await mention(x, 't2'), await mention(y, 'any'), await dm()];
  await svc.waitFor(() => notifiesFor(p).length === 6);
  const removals = () => notifiesFor(p).filter((n) => n.body.gcm_payload.event === 'remove').map((n) => n.body.gcm_payload.zulip_message_ids as string);

  // Two reads in quick succession: one removal naming both.
  await api.ok('POST', '/messages/flags', { messages: JSON.stringify([a]), op: 'add', flag: 'read' });
  await api.ok('POST', '/messages/flags', { messages: JSON.stringify([b]), op: 'add', flag: 'read' });
  await svc.waitFor(() => removals().length > 0);
  t.same(removals(), [`${a},${b}`], 'one batch for two reads');
  // Unread and read again: its notification was removed already.
  await api.ok('POST', '/messages/flags', { messages: JSON.stringify([a]), op: 'remove', flag: 'read' });
  await api.ok('POST', '/messages/flags', { messages: JSON.stringify([a]), op: 'add', flag: 'read' });
  await api.ok('POST', '/mark_topic_as_read', { stream_id: xId, topic_name: 't1' });
  await svc.waitFor(() => removals().length > 1);
  await api.ok('POST', '/mark_stream_as_read', { stream_id: xId });
  await svc.waitFor(() => removals().length > 2);
  await api.ok('DELETE', '/users/me/subscriptions', { subscriptions: JSON.stringify([y]) });
  await svc.waitFor(() => removals().length > 3);
  await api.ok('POST', '/mark_all_as_read', {});
  await svc.waitFor(() => removals().length > 4);
  await sleep(1000);
  t.same(removals(), [`${a},${b}`, String(c), String(d), String(e), String(f)], 'topic, channel, unsubscribe, mark-all: each removes its own, none twice');
  const last = notifiesFor(p).at(-1)!.body;
  t.match(last, { user_id: p.userId, gcm_options: { priority: 'normal' }, apns_payload: { custom: { zulip: { event: 'remove', zulip_message_ids: [f] } } } });
  // Nothing left to remove: marking everything read again sends nothing.
  await api.ok('POST', '/mark_all_as_read', {});
  await sleep(1000);
  t.equal(removals().length, 5, 'nothing removed twice');
});

t.test('push - test notifications go to the service; unknown tokens and users without devices are refused', async (t) => {
  const { p, api, token } = await withDevice();
  await api.ok('POST', '/mobile_push/test_notification', { token });
  const call = svc.of('push/test_notification').at(-1)!;
  t.match(call.body, { token, token_kind: 2, user_id: p.userId, base_payload: { user_id: p.userId, realm_url: 'http://parley.test' } });
  const unknown = await api.call('POST', '/mobile_push/test_notification', { token: 'nope' });
  t.match(unknown, { status: 400, body: { result: 'error', code: 'INVALID_PUSH_DEVICE_TOKEN', msg: 'Device not recognized' } });
  const none = await s.api.as(await newPerson(s)).call('POST', '/mobile_push/test_notification', {});
  t.match(none, { status: 400, body: { result: 'error', code: 'NO_ACTIVE_PUSH_DEVICE', msg: 'No active registered push device' } });
});

const B64 = sodium.base64_variants.ORIGINAL;

/** A phone as the E2EE API expects one: its key pair, and its token sealed for the service. */
async function e2eePhone(api: Api, kind: 'fcm' | 'apns' = 'fcm', bouncerKey = svc.bouncerPublicKey) {
  await sodium.ready;
  const keys = sodium.crypto_box_keypair();
  const pushAccountId = 1 + Math.floor(Math.random() * 2 ** 31);
  const token = uniq('tok');
  const registration = { token, token_kind: kind, timestamp: Math.floor(Date.now() / 1000), ...(kind === 'apns' ? { ios_app_id: 'org.zulip.Zulip' } : {}) };
  const params = {
    token_kind: kind,
    push_account_id: pushAccountId,
    push_public_key: sodium.to_base64(keys.publicKey, B64),
    bouncer_public_key: bouncerKey,
    encrypted_push_registration: sodium.to_base64(sodium.crypto_box_seal(JSON.stringify(registration), sodium.from_base64(svc.bouncerPublicKey, B64)), B64),
  };
  return { keys, pushAccountId, token, params, register: () => api.call('POST', '/mobile_push/register', params) };
}

/** The E2EE notifications the service was asked to deliver to `pushAccountId`, opened with the phone's private key. */
function opened(keys: sodium.KeyPair, pushAccountId: number): Array<Record<string, any>> {
  const out: Array<Record<string, any>> = [];
  for (const c of svc.of('push/e2ee/notify')) {
    for (const r of c.body.push_requests) {
      if (r.payload.push_account_id !== pushAccountId) continue;
      out.push({ ...JSON.parse(sodium.to_string(sodium.crypto_box_seal_open(sodium.from_base64(r.payload.encrypted_data, B64), keys.publicKey, keys.privateKey))), request: r });
    }
  }
  return out;
}

t.test('push - E2EE: a device registers with its key, the service learns it, notifications are sealed for it', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  // Online push on: the queue below makes the user active.
  await api.ok('PATCH', '/settings', { enable_online_push_notifications: true });
  const q = await register(api, { event_types: JSON.stringify(['push_device']), fetch_event_types: JSON.stringify(['push_device']) });
  t.same(q.snapshot.push_devices, {}, 'no device yet');
  const phone = await e2eePhone(api);
  t.equal((await phone.register()).status, 200);
  const active = await waitFor(q, (e) => e.type === 'push_device' && e.status === 'active');
  t.match(active, { push_account_id: phone.pushAccountId });
  t.notOk('error_code' in active, 'no error code when active');
  const reg = svc.of('push/e2ee/register').at(-1)!;
  t.match(reg, { server: svc.uuid, body: { push_account_id: String(phone.pushAccountId), bouncer_public_key: svc.bouncerPublicKey, realm_uuid: /^[0-9a-f-]{36}$/ } });
  const device = [...svc.e2eeDevices.values()].find((d) => d.push_account_id === phone.pushAccountId)!;
  t.match(device, { token: phone.token, token_kind: 'fcm' }, 'the service opened the token, which this server never saw');
  const snap = await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['push_device']) });
  t.same(snap.push_devices, { [String(phone.pushAccountId)]: { status: 'active', error_code: null } });
  t.equal((await phone.register()).status, 200, 'the same registration again: no change');
  await sleep(300);
  t.equal(svc.of('push/e2ee/register').filter((c) => c.body.push_account_id === String(phone.pushAccountId)).length, 1, 'registered with the service once');

  // A DM: one E2EE request, sealed for the phone's key; nothing in clear on the wire.
  const sender = await newPerson(s, undefined, 'Sealer');
  const content = `secret ${uniq('c')}`;
  const { id } = await s.api.as(sender).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([p.userId]), content });
  await svc.waitFor(() => opened(phone.keys, phone.pushAccountId).length > 0);
  const [msg] = opened(phone.keys, phone.pushAccountId);
  t.match(msg, { type: 'message', message_id: id, user_id: p.userId, sender_id: sender.userId, sender_full_name: sender.fullName, recipient_type: 'direct', content, realm_url: 'http://parley.test', realm_name: String, time: Number, sender_avatar_url: /^https:\/\// });
  t.notOk('pm_users' in msg!, 'a 1:1 DM has no pm_users');
  t.match(msg!.request, { fcm_priority: 'high' });
  const wire = JSON.stringify(svc.of('push/e2ee/notify').at(-1)!.body);
  t.notOk(wire.includes(content) || wire.includes(sender.fullName), 'the service sees neither content nor sender');
  t.equal(notifiesFor(p).length, 0, 'no legacy notification: the user has no legacy token');

  // A group DM names every participant; a channel mention carries the channel and topic.
  const third = await newPerson(s);
  const group = await s.api.as(sender).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([p.userId, third.userId]), content: 'group' });
  const name = uniq('e2ch');
  await s.api.as(sender).ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([sender.userId, p.userId]) });
  const streamId = (await s.api.as(sender).ok('GET', '/get_stream_id', { stream: name })).stream_id;
  const ch = await s.api.as(sender).ok('POST', '/messages', { type: 'stream', to: name, topic: 'sealed', content: `@**${p.fullName}** hi` });
  await svc.waitFor(() => opened(phone.keys, phone.pushAccountId).length >= 3);
  const byId = new Map(opened(phone.keys, phone.pushAccountId).map((m) => [m.message_id, m]));
  t.equal(byId.get(group.id)!.pm_users, [sender.userId, p.userId, third.userId].sort((a, b) => a - b).join(','));
  t.match(byId.get(ch.id), { recipient_type: 'channel', channel_id: streamId, channel_name: name, topic: 'sealed' });

  // Reading removes them: a sealed removal, at normal priority.
  await api.ok('POST', '/mark_all_as_read', {});
  await svc.waitFor(() => opened(phone.keys, phone.pushAccountId).some((m) => m.type === 'remove'));
  const removal = opened(phone.keys, phone.pushAccountId).find((m) => m.type === 'remove')!;
  t.same(removal.message_ids, [id, group.id, ch.id].sort((a, b) => a - b));
  t.match(removal, { user_id: p.userId, request: { fcm_priority: 'normal' } });

  // The test notification, to this device or to all.
  await api.ok('POST', '/mobile_push/e2ee/test_notification', { push_account_id: phone.pushAccountId });
  await api.ok('POST', '/mobile_push/e2ee/test_notification', {});
  await svc.waitFor(() => opened(phone.keys, phone.pushAccountId).filter((m) => m.type === 'test').length === 2);
  t.match(opened(phone.keys, phone.pushAccountId).find((m) => m.type === 'test'), { user_id: p.userId, realm_url: 'http://parley.test', time: Number });
  const unknown = await api.call('POST', '/mobile_push/e2ee/test_notification', { push_account_id: 7 });
  t.match(unknown, { status: 400, body: { result: 'error', code: 'NO_ACTIVE_PUSH_DEVICE' } });
});

t.test('push - E2EE: an iOS device gets the APNs form; a registration the service refuses fails with its code', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  const q = await register(api, { event_types: JSON.stringify(['push_device']) });
  const ios = await e2eePhone(api, 'apns');
  await ios.register();
  await waitFor(q, (e) => e.type === 'push_device' && e.push_account_id === ios.pushAccountId && e.status === 'active');
  await api.ok('POST', '/mobile_push/e2ee/test_notification', {});
  await svc.waitFor(() => opened(ios.keys, ios.pushAccountId).length > 0);
  t.match(opened(ios.keys, ios.pushAccountId)[0]!.request, { http_headers: { 'apns-priority': 10, 'apns-push-type': 'alert' }, payload: { aps: { alert: { title: 'New notification' } } } });

  // Sealed for another service's key: the service refuses it, the device fails with that code.
  await sodium.ready;
  const wrong = await e2eePhone(api, 'fcm', sodium.to_base64(sodium.crypto_box_keypair().publicKey, B64));
  t.equal((await wrong.register()).status, 200);
  const failed = await waitFor(q, (e) => e.type === 'push_device' && e.push_account_id === wrong.pushAccountId && e.status === 'failed');
  t.equal(failed.error_code, 'INVALID_BOUNCER_PUBLIC_KEY');
  const snap = await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['push_device']) });
  t.same(snap.push_devices[String(wrong.pushAccountId)], { status: 'failed', error_code: 'INVALID_BOUNCER_PUBLIC_KEY' });
});

t.test('push - E2EE registration: checked, humans only, every role', async (t) => {
  const phone = await e2eePhone(s.api.as(s.demo.member1));
  const bad = async (who: Api, params: Record<string, string | number>, code: string, msg: RegExp) => {
    const r = await who.call('POST', '/mobile_push/register', params);
    t.equal(r.status, 400, String(msg));
    t.match(r.body, { result: 'error', code, msg });
  };
  const member = s.api.as(s.demo.member1);
  await bad(member, { ...phone.params, token_kind: 'gcm' }, 'BAD_REQUEST', /^Invalid token_kind$/);
  await bad(member, { ...phone.params, push_public_key: 'not a key' }, 'BAD_REQUEST', /^Invalid push_public_key$/);
  await bad(member, { ...phone.params, push_account_id: 'x' }, 'BAD_REQUEST', /push_account_id/);
  const { push_public_key: _omit, ...missing } = phone.params;
  await bad(member, missing, 'BAD_REQUEST', /push_public_key/);
  await bad(s.api.as(s.demo.bot), phone.params, 'BAD_REQUEST', /^This endpoint does not accept bot requests\.$/);
  for (const who of [s.demo.guest, s.demo.admin, s.demo.owner]) {
    const mine = await e2eePhone(s.api.as(who));
    t.equal((await mine.register()).status, 200, `role ${who.email} may register a device`);
  }
  // Without the service, as Zulip: nothing to register with.
  const offline = await e2eePhone(plain.api.as(plain.demo.member1));
  t.match(await offline.register(), { status: 400, body: { result: 'error', code: 'PUSH_SERVICE_NOT_CONFIGURED' } });
  t.match(await plain.api.as(plain.demo.member1).call('POST', '/mobile_push/e2ee/test_notification', {}), { status: 400, body: { code: 'PUSH_SERVICE_NOT_CONFIGURED' } });
});

t.test('push - without the service: push is off, tokens are kept, nothing can be sent', async (t) => {
  t.equal((await plain.api.ok('GET', '/server_settings')).push_notifications_enabled, false);
  const member = plain.api.as(plain.demo.member1);
  t.equal((await member.ok('POST', '/register', { fetch_event_types: JSON.stringify(['realm']) })).realm_push_notifications_enabled, false);
  const before = svc.calls.length;
  await member.ok('POST', '/users/me/android_gcm_reg_id', { token: 'kept-token' });
  const r = await member.call('POST', '/mobile_push/test_notification', {});
  t.match(r, { status: 400, body: { result: 'error', code: 'PUSH_SERVICE_NOT_CONFIGURED', msg: 'Server is not configured to use push notification service.' } });
  await plain.api.as(plain.demo.member2).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([plain.demo.member1.userId]), content: 'no push' });
  await sleep(500);
  t.equal(svc.calls.length, before, 'the service hears nothing from a server not configured for it');
  await member.ok('DELETE', '/users/me/android_gcm_reg_id', { token: 'kept-token' });
  // Zulip's longest token (4,096 characters) is longer than a key of the embedded store: kept and removed all the same.
  const longest = 'f'.repeat(4096);
  await member.ok('POST', '/users/me/android_gcm_reg_id', { token: longest });
  t.match(await member.call('POST', '/mobile_push/test_notification', { token: longest }), { status: 400, body: { code: 'PUSH_SERVICE_NOT_CONFIGURED' } });
  await member.ok('DELETE', '/users/me/android_gcm_reg_id', { token: longest });
  t.match(await member.call('DELETE', '/users/me/android_gcm_reg_id', { token: longest }), { status: 400 }, 'removed once, not there to remove again');
});
