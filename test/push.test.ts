// Mobile push over HTTP, against a push notification service the test runs
// (`test/helpers/push-service.ts`, the service's API as Zulip's
// zilencer/views.py defines it, recording each call): server registration,
// device routes and their errors, what a notification and a removal carry
// (the fields the apps parse), the test notification, and a server without
// the service. Embedded servers, or with PARLEY_TEST_OWN_CLUSTER=1
// (test/run.sh's notify-cluster) private clusters with the same settings.
import { createHash } from 'node:crypto';
import sodium from 'libsodium-wrappers';
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { catchUp } from './helpers/apply.ts';
import { poll, register, waitFor } from './helpers/events.ts';
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

/** A new member with an FCM token registered (known to the service); they act through the last gateway (senders, through the first: in a cluster, another one). */
async function withDevice(): Promise<{ p: Person; api: Api; token: string }> {
  const p = await newPerson(s);
  const api = s.api.at(s.urls.at(-1)!).as(p);
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
    time: Number,
  });
  t.notOk('content_truncated' in call.body.gcm_payload, 'no content_truncated (FL 413)');
  t.notOk('pm_users' in call.body.gcm_payload, 'a 1:1 DM has no pm_users');
  t.match(call.body.gcm_payload, { realm_name: String, server: 'parley.test' });
  t.match(call.body.apns_payload, { alert: { title: sender.fullName, body: content.replace('**there**', 'there') }, custom: { zulip: { message_ids: [id], sender_id: sender.userId } } });
  t.notOk('time' in call.body.apns_payload.custom.zulip, 'the APNs payload has no time, as FCM has (FL 410)');
  for (const k of ['server', 'realm_id']) t.notOk(k in call.body.apns_payload.custom.zulip, `no ${k} in the APNs payload (FL 413)`);

  await api.ok('POST', '/messages/flags', { messages: JSON.stringify([id]), op: 'add', flag: 'read' });
  await svc.waitFor(() => notifiesFor(p).length > 1);
  const removal = notifiesFor(p)[1]!;
  t.match(removal.body, { gcm_payload: { event: 'remove', zulip_message_ids: String(id), user_id: p.userId }, apns_payload: { custom: { zulip: { event: 'remove', zulip_message_ids: [id] } } }, gcm_options: { priority: 'normal' } });
  t.notOk('zulip_message_id' in removal.body.gcm_payload, 'only zulip_message_ids in a removal (FL 413)');
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

t.test("push - enable_followed_topic_push_notifications: a followed topic's messages are pushed to an idle follower when on, not when off; a mention still is", async (t) => {
  const sender = await newPerson(s);
  const senderApi = s.api.as(sender);
  const on = await withDevice();
  const noOffline = await withDevice();
  const off = await withDevice();
  const name = uniq('follow');
  await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([sender.userId, on.p.userId, noOffline.p.userId, off.p.userId]) });
  const streamId = (await senderApi.ok('GET', '/get_stream_id', { stream: name })).stream_id;
  for (const u of [on, noOffline, off]) await u.api.ok('POST', '/user_topics', { stream_id: streamId, topic: 'tracked', visibility_policy: 3 });
  // Zulip's followed_topic_push_notify is its own trigger: enable_offline_push_notifications (DMs and mentions) does not gate it.
  await noOffline.api.ok('PATCH', '/settings', { enable_offline_push_notifications: false });
  await off.api.ok('PATCH', '/settings', { enable_followed_topic_push_notifications: false });

  await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'elsewhere', content: `not followed ${uniq('n')}` });
  const followed = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'tracked', content: `in the followed topic ${uniq('f')}` });
  await svc.waitFor(() => notifiesFor(on.p).length > 0 && notifiesFor(noOffline.p).length > 0);
  await sleep(1000);
  for (const [u, who] of [[on, 'a follower'], [noOffline, 'a follower with enable_offline_push_notifications off']] as const) {
    t.equal(notifiesFor(u.p).length, 1, `${who}: only the followed topic's message is pushed`);
    t.match(notifiesFor(u.p)[0]!.body.gcm_payload, { event: 'message', zulip_message_id: followed.id, recipient_type: 'stream', stream_id: streamId, topic: 'tracked' }, `${who} is pushed`);
  }
  t.equal(notifiesFor(off.p).length, 0, 'enable_followed_topic_push_notifications off: not pushed');

  // Off, a mention in the followed topic is still pushed (the mention trigger comes first).
  const mention = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'tracked', content: `@**${off.p.fullName}** this one ${uniq('m')}` });
  await svc.waitFor(() => notifiesFor(off.p).length > 0);
  t.match(notifiesFor(off.p)[0]!.body.gcm_payload, { zulip_message_id: mention.id, topic: 'tracked' });
  t.match(notifiesFor(off.p)[0]!.body.apns_payload.alert, { subtitle: `${sender.fullName} mentioned you:` });

  // Turned on again: the next message of the topic is pushed to it as well.
  await off.api.ok('PATCH', '/settings', { enable_followed_topic_push_notifications: true });
  const later = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'tracked', content: `later ${uniq('l')}` });
  await svc.waitFor(() => notifiesFor(off.p).length > 1);
  t.equal(notifiesFor(off.p)[1]!.body.gcm_payload.zulip_message_id, later.id);
});

t.test('push - exclusions: the sender, a muted sender, a muted topic and an active user are not pushed; enable_online_push_notifications pushes the active one', async (t) => {
  const sender = await withDevice();
  const senderApi = s.api.as(sender.p);
  const muter = await withDevice();
  const topicMuter = await withDevice();
  const active = await withDevice();
  const control = await withDevice();
  await muter.api.ok('POST', `/users/me/muted_users/${sender.p.userId}`);
  const name = uniq('excl');
  await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([sender, muter, topicMuter, active, control].map((u) => u.p.userId)) });
  const streamId = (await senderApi.ok('GET', '/get_stream_id', { stream: name })).stream_id;
  for (const u of [topicMuter, control]) await u.api.ok('POST', '/users/me/subscriptions/properties', { subscription_data: JSON.stringify([{ stream_id: streamId, property: 'push_notifications', value: true }]) });
  await topicMuter.api.ok('POST', '/user_topics', { stream_id: streamId, topic: 'hush', visibility_policy: 1 });
  // The active user's client polls (the queue reports activity on its next tick); online push off (Zulip's default is on).
  await active.api.ok('PATCH', '/settings', { enable_online_push_notifications: false });
  const q = await register(active.api, { event_types: JSON.stringify(['message']) });
  const polling = poll(q, { timeoutMs: 8000 }).catch(() => []);
  await sleep(1500);

  const group = await senderApi.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([muter.p.userId, active.p.userId, control.p.userId]), content: `group ${uniq('g')}` });
  const hushed = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'hush', content: `in a muted topic ${uniq('h')}` });
  await svc.waitFor(() => notifiesFor(control.p).length >= 2);
  await polling;
  await sleep(1000);
  t.same(notifiesFor(control.p).map((n) => n.body.gcm_payload.zulip_message_id), [group.id, hushed.id], 'the control user is pushed both');
  t.equal(notifiesFor(sender.p).length, 0, 'the sender is never pushed about their own messages');
  t.equal(notifiesFor(muter.p).length, 0, 'a muted sender is not pushed');
  t.equal(notifiesFor(topicMuter.p).length, 0, "a muted topic is not pushed, even with the channel's push_notifications on");
  t.equal(notifiesFor(active.p).length, 0, 'an active user is not pushed (enable_online_push_notifications off)');

  const open = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'open', content: `another topic ${uniq('o')}` });
  await svc.waitFor(() => notifiesFor(topicMuter.p).length > 0);
  t.equal(notifiesFor(topicMuter.p)[0]!.body.gcm_payload.zulip_message_id, open.id, "the channel's other topics are");

  // Still active (within the idle window), with online push on: pushed.
  await active.api.ok('PATCH', '/settings', { enable_online_push_notifications: true });
  const again = await senderApi.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([active.p.userId]), content: `while active ${uniq('a')}` });
  await svc.waitFor(() => notifiesFor(active.p).length > 0);
  t.equal(notifiesFor(active.p)[0]!.body.gcm_payload.zulip_message_id, again.id);
});

t.test('push - a channel wildcard mention is pushed as mentioning everyone when wildcard_mentions_notify is on, not when off', async (t) => {
  const sender = await newPerson(s);
  const senderApi = s.api.as(sender);
  const on = await withDevice();
  const off = await withDevice();
  await off.api.ok('PATCH', '/settings', { wildcard_mentions_notify: false });
  const name = uniq('wild');
  await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([sender.userId, on.p.userId, off.p.userId]) });
  const { id } = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'all hands', content: `@**all** gather ${uniq('w')}` });
  await svc.waitFor(() => notifiesFor(on.p).length > 0);
  await sleep(1000);
  t.match(notifiesFor(on.p)[0]!.body, { gcm_payload: { zulip_message_id: id, topic: 'all hands' }, apns_payload: { alert: { subtitle: `${sender.fullName} mentioned everyone:` } } });
  t.equal(notifiesFor(off.p).length, 0, 'wildcard_mentions_notify off: not pushed');
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

/** A `push_key` as zulip-flutter makes one (PushKeyStore.generatePushKey): the tag byte 0x31 (crypto_secretbox), then 32 random bytes, in standard base64. */
function newPushKey(): string {
  const raw = new Uint8Array(33);
  raw[0] = 0x31;
  raw.set(sodium.randombytes_buf(32), 1);
  return sodium.to_base64(raw, B64);
}

/** What the app does with `encrypted_data` (PushKeyStore.decryptNotification): a 24-byte nonce, then crypto_secretbox_easy's output, opened with the key after the tag byte. */
function decrypt(pushKey: string, encrypted: string): Record<string, any> {
  const key = sodium.from_base64(pushKey, B64).subarray(1);
  const data = sodium.from_base64(encrypted, B64);
  return JSON.parse(sodium.to_string(sodium.crypto_secretbox_open_easy(data.subarray(24), data.subarray(0, 24), key)));
}

/** The app's token ID (NotificationService.computeTokenId): base64 of the first 8 bytes of the token's SHA-256. */
const tokenIdOf = (token: string) => createHash('sha256').update(token).digest().subarray(0, 8).toString('base64');

/** The token as the app seals it for the service (PushRegistration, crypto_box_seal for the service's key). */
function sealedRegistration(kind: 'fcm' | 'apns', token: string): string {
  const registration = { token_kind: kind, token, timestamp: Math.floor(Date.now() / 1000), ...(kind === 'apns' ? { ios_app_id: 'org.zulip.Zulip' } : {}) };
  return sodium.to_base64(sodium.crypto_box_seal(JSON.stringify(registration), sodium.from_base64(svc.bouncerPublicKey, B64)), B64);
}

/** The E2EE notifications the service was asked to deliver for push key `id`, decrypted with `pushKey`, with their push request. */
function received(id: number, pushKey: string): Array<Record<string, any>> {
  const out: Array<Record<string, any>> = [];
  for (const c of svc.of('push/e2ee/notify')) {
    for (const r of c.body.push_requests) {
      if (r.payload.push_key_id === undefined || Number(r.payload.push_key_id) !== id) continue;
      out.push({ ...decrypt(pushKey, r.payload.encrypted_data), request: r });
    }
  }
  return out;
}

/** A phone running zulip-flutter against a FL 468 server: its client device, push key and token (PushDeviceManager). */
async function appPhone(api: Api, kind: 'fcm' | 'apns' = 'fcm') {
  await sodium.ready;
  const { device_id: deviceId } = await api.ok('POST', '/register_client_device', {});
  const phone = {
    deviceId: deviceId as number,
    key: { id: 1 + Math.floor(Math.random() * (2 ** 32 - 2)), key: newPushKey() },
    token: uniq('token'),
    /** POST /mobile_push/register's parameters: the key fields, the token fields, or both (RegisterPushDeviceKey / RegisterPushDeviceToken). */
    params(parts: { key?: boolean; token?: boolean } = { key: true, token: true }): Record<string, string | number> {
      return {
        device_id: phone.deviceId,
        ...(parts.key ? { push_key_id: phone.key.id, push_key: phone.key.key } : {}),
        ...(parts.token ? { token_kind: kind, token_id: tokenIdOf(phone.token), bouncer_public_key: svc.bouncerPublicKey, encrypted_push_registration: sealedRegistration(kind, phone.token) } : {}),
      };
    },
    register: (parts?: { key?: boolean; token?: boolean }) => api.call('POST', '/mobile_push/register', phone.params(parts)),
    received: () => received(phone.key.id, phone.key.key),
  };
  return phone;
}

t.test('push - E2EE as zulip-flutter speaks it (FL 468): a client device registers its key and token; a DM, a channel mention and a removal decrypt with its key', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  // Online push on: the queue below makes the user active.
  await api.ok('PATCH', '/settings', { enable_online_push_notifications: true });
  const q = await register(api, { event_types: JSON.stringify(['device']), fetch_event_types: JSON.stringify(['device']) });
  t.same(q.snapshot.devices, {}, 'no device yet');
  // A second queue, read only to fold its events into its snapshot.
  const folded = await register(api, { event_types: JSON.stringify(['device']), fetch_event_types: JSON.stringify(['device']) });
  const snap = structuredClone(folded.snapshot);
  const phone = await appPhone(api);
  t.match(await waitFor(q, (e) => e.type === 'device' && e.op === 'add'), { device_id: phone.deviceId });
  t.equal((await phone.register()).status, 200);
  const pending = await waitFor(q, (e) => e.type === 'device' && e.op === 'update' && e.device_id === phone.deviceId);
  t.match(pending, { push_key_id: phone.key.id, pending_push_token_id: tokenIdOf(phone.token), push_token_last_updated_timestamp: Number, push_registration_error_code: null });
  const registered = await waitFor(q, (e) => e.type === 'device' && e.op === 'update' && e.push_token_id !== undefined);
  t.same(registered, { id: registered.id, type: 'device', op: 'update', device_id: phone.deviceId, push_token_id: tokenIdOf(phone.token), pending_push_token_id: null });
  // The service is told the token's ID (FL 468), which it checks against the token it opens.
  const reg = svc.of('push/e2ee/register').at(-1)!;
  t.same(Object.keys(reg.body).sort(), ['bouncer_public_key', 'encrypted_push_registration', 'realm_uuid', 'token_id'], 'no push_account_id');
  t.match(reg, { server: svc.uuid, body: { token_id: tokenIdOf(phone.token), bouncer_public_key: svc.bouncerPublicKey, realm_uuid: /^[0-9a-f-]{36}$/ } });
  const serviceDevice = [...svc.e2eeDevices.values()].at(-1)!;
  t.match(serviceDevice, { token_id: tokenIdOf(phone.token), token: phone.token, token_kind: 'fcm' }, 'the service opened the token, which this server never saw');

  // The snapshot with the events applied is a fresh register's (what the app's PushDeviceManager keeps).
  await catchUp(folded, snap, (e) => e.push_token_id !== undefined);
  const fresh = await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['device']) });
  t.same(snap.devices, fresh.devices);
  t.same(fresh.devices[String(phone.deviceId)], { push_key_id: phone.key.id, push_token_id: tokenIdOf(phone.token), pending_push_token_id: null, push_token_last_updated_timestamp: fresh.devices[String(phone.deviceId)].push_token_last_updated_timestamp, push_registration_error_code: null });
  t.ok(Math.abs(fresh.devices[String(phone.deviceId)].push_token_last_updated_timestamp - Date.now() / 1000) < 60);

  // A DM: the FCM message the app parses as EncryptedFcmMessage (push_key_id a string of digits, encrypted_data base64).
  const sender = await newPerson(s, undefined, 'Sealer');
  const content = `secret ${uniq('c')}`;
  const { id } = await s.api.as(sender).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([p.userId]), content });
  await svc.waitFor(() => phone.received().length > 0);
  const [dm] = phone.received();
  // The push request names the device by its token_id, as the service knows it (FL 468).
  t.match(dm!.request, { token_id: tokenIdOf(phone.token), fcm_priority: 'high', payload: { push_key_id: String(phone.key.id), encrypted_data: /^[A-Za-z0-9+/]+=*$/ } });
  t.notOk('device_id' in dm!.request, 'no device ID of the service');
  t.same(Object.keys(dm!.request.payload).sort(), ['encrypted_data', 'push_key_id'], 'nothing else beside the ciphertext');
  // NotifPayloadNewMessage with a NotifPayloadDmRecipient: every field the app reads.
  const { request: _r, ...payload } = dm!;
  t.same(payload, {
    type: 'message',
    realm_url: 'http://parley.test',
    realm_name: payload.realm_name,
    user_id: p.userId,
    sender_id: sender.userId,
    sender_avatar_url: payload.sender_avatar_url,
    sender_full_name: sender.fullName,
    message_id: id,
    time: payload.time,
    content,
    recipient_type: 'direct',
    recipient_user_ids: [sender.userId, p.userId].sort((a, b) => a - b),
  });
  t.type(payload.realm_name, 'string');
  t.ok(new URL(payload.sender_avatar_url).protocol.startsWith('http'), 'sender_avatar_url is an absolute URL');
  t.ok(Math.abs(payload.time - Date.now() / 1000) < 60, 'time in Unix seconds');
  const wire = JSON.stringify(svc.of('push/e2ee/notify').at(-1)!.body);
  t.notOk(wire.includes(content) || wire.includes(sender.fullName), 'the service sees neither content nor sender');
  t.equal(notifiesFor(p).length, 0, 'no legacy notification: the user has no legacy token');

  // A group DM names every participant, sorted (FL 429); a channel mention (NotifPayloadChannelRecipient) its channel and topic.
  const third = await newPerson(s);
  const group = await s.api.as(sender).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([p.userId, third.userId]), content: 'group' });
  const name = uniq('e2ch');
  await s.api.as(sender).ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([sender.userId, p.userId]) });
  const streamId = (await s.api.as(sender).ok('GET', '/get_stream_id', { stream: name })).stream_id;
  const ch = await s.api.as(sender).ok('POST', '/messages', { type: 'stream', to: name, topic: 'sealed', content: `@**${p.fullName}** hi` });
  await svc.waitFor(() => phone.received().length >= 3);
  const byId = new Map(phone.received().map((m) => [m.message_id, m]));
  t.same(byId.get(group.id)!.recipient_user_ids, [sender.userId, p.userId, third.userId].sort((a, b) => a - b));
  const mention = byId.get(ch.id)!;
  t.match(mention, { type: 'message', recipient_type: 'channel', channel_id: streamId, channel_name: name, topic: 'sealed', content: `@${p.fullName} hi`, sender_id: sender.userId });
  t.notOk('recipient_user_ids' in mention, 'a channel message names no DM recipients');

  // Reading removes them (NotifPayloadRemove), at normal priority.
  await api.ok('POST', '/mark_all_as_read', {});
  await svc.waitFor(() => phone.received().some((m) => m.type === 'remove'));
  const { request: removalRequest, ...removal } = phone.received().find((m) => m.type === 'remove')!;
  t.same(removal, { type: 'remove', realm_url: 'http://parley.test', realm_name: payload.realm_name, user_id: p.userId, message_ids: [id, group.id, ch.id].sort((a, b) => a - b) });
  t.match(removalRequest, { fcm_priority: 'normal' });

  // The test notification, to this device or to all; another device ID has none.
  await api.ok('POST', '/mobile_push/e2ee/test_notification', { device_id: phone.deviceId });
  await api.ok('POST', '/mobile_push/e2ee/test_notification', {});
  await svc.waitFor(() => phone.received().filter((m) => m.type === 'test').length === 2);
  t.match(phone.received().find((m) => m.type === 'test'), { user_id: p.userId, realm_url: 'http://parley.test', time: Number });
  t.match(await api.call('POST', '/mobile_push/e2ee/test_notification', { device_id: phone.deviceId + 1000 }), { status: 400, body: { result: 'error', code: 'NO_ACTIVE_PUSH_DEVICE' } });
});

t.test('push - E2EE (FL 468): an iOS device gets the APNs form; the key and the token rotate on their own; a removed device gets nothing', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  const q = await register(api, { event_types: JSON.stringify(['device']), fetch_event_types: JSON.stringify(['device']) });
  const folded = await register(api, { event_types: JSON.stringify(['device']), fetch_event_types: JSON.stringify(['device']) });
  const snap = structuredClone(folded.snapshot);
  const ios = await appPhone(api, 'apns');
  await ios.register();
  await waitFor(q, (e) => e.type === 'device' && e.device_id === ios.deviceId && e.push_token_id !== undefined);
  await api.ok('POST', '/mobile_push/e2ee/test_notification', { device_id: ios.deviceId });
  await svc.waitFor(() => ios.received().length > 0);
  // EncryptedApnsPayload: push_key_id an integer, beside the placeholder alert the app replaces.
  t.match(ios.received()[0]!.request, { http_headers: { 'apns-priority': 10, 'apns-push-type': 'alert' }, payload: { push_key_id: ios.key.id, encrypted_data: String, aps: { alert: { title: 'New notification' } } } });

  // The same registration again: nothing changes, the service is not asked again.
  const calls = svc.of('push/e2ee/register').length;
  t.equal((await ios.register()).status, 200);
  // Key rotation (PushKeyStore.maybeRotatePushKeys): only the key fields.
  const oldKey = ios.key;
  ios.key = { id: oldKey.id + 1, key: newPushKey() };
  t.equal((await ios.register({ key: true })).status, 200);
  const rotated = await waitFor(q, (e) => e.type === 'device' && e.push_key_id === ios.key.id);
  t.same(rotated, { id: rotated.id, type: 'device', op: 'update', device_id: ios.deviceId, push_key_id: ios.key.id }, 'the key rotated alone');
  await api.ok('POST', '/mobile_push/e2ee/test_notification', { device_id: ios.deviceId });
  await svc.waitFor(() => ios.received().length > 0);
  t.equal(received(oldKey.id, oldKey.key).length, 1, 'the old key got only the first notification');
  t.equal(svc.of('push/e2ee/register').length, calls, 'neither the repeat nor the key rotation re-registered the token');

  // Token rotation: only the token fields; pending, then registered.
  ios.token = uniq('token');
  t.equal((await ios.register({ token: true })).status, 200);
  await waitFor(q, (e) => e.type === 'device' && e.pending_push_token_id === tokenIdOf(ios.token));
  await waitFor(q, (e) => e.type === 'device' && e.push_token_id === tokenIdOf(ios.token));
  t.equal(svc.of('push/e2ee/register').length, calls + 1, 'the new token registered with the service');
  t.match(svc.of('push/e2ee/register').at(-1)!.body, { token_id: tokenIdOf(ios.token) });
  t.equal([...svc.e2eeDevices.values()].at(-1)!.token, ios.token);
  // Sent to the new token from now on.
  const before = ios.received().length;
  await api.ok('POST', '/mobile_push/e2ee/test_notification', { device_id: ios.deviceId });
  await svc.waitFor(() => ios.received().length > before);
  t.match(ios.received().at(-1)!.request, { token_id: tokenIdOf(ios.token) }, 'the rotated token is named');

  // Snapshot + events = fresh register.
  await catchUp(folded, snap, (e) => e.type === 'device' && e.push_token_id === tokenIdOf(ios.token));
  t.same(snap.devices, (await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['device']) })).devices);

  // A removed device (logout, FL 470): a remove event, no entry, nothing sent to it.
  await api.ok('POST', '/remove_client_device', { device_id: ios.deviceId });
  t.match(await waitFor(q, (e) => e.type === 'device' && e.op === 'remove'), { device_id: ios.deviceId });
  await catchUp(folded, snap, (e) => e.type === 'device' && e.op === 'remove');
  t.same(snap.devices, {});
  t.same((await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['device']) })).devices, {});
  t.match(await api.call('POST', '/mobile_push/e2ee/test_notification', {}), { status: 400, body: { code: 'NO_ACTIVE_PUSH_DEVICE' } });
  t.match(await api.call('POST', '/remove_client_device', { device_id: ios.deviceId }), { status: 400, body: { result: 'error', code: 'BAD_REQUEST', msg: 'Invalid `device_id`' } });
});

t.test('push - an E2EE registration of a token removes its legacy registration, here and at the service (FL 483)', async (t) => {
  const { p, api, token } = await withDevice();
  const other = uniq('fcm');
  await api.ok('POST', '/users/me/android_gcm_reg_id', { token: other });
  await svc.waitFor(() => svc.devices.has(`${p.userId}:2:${other}`));
  const phone = await appPhone(api);
  phone.token = token;
  const q = await register(api, { event_types: JSON.stringify(['device']) });
  t.equal((await phone.register()).status, 200);
  await waitFor(q, (e) => e.type === 'device' && e.push_token_id === tokenIdOf(token));
  await svc.waitFor(() => !svc.devices.has(`${p.userId}:2:${token}`));
  t.match(svc.of('push/unregister').at(-1)!.body, { token, token_kind: '2', user_id: String(p.userId) }, 'unregistered at the service');
  t.match(await api.call('DELETE', '/users/me/android_gcm_reg_id', { token }), { status: 400, body: { msg: 'Token does not exist' } }, 'and gone here');
  t.ok(svc.devices.has(`${p.userId}:2:${other}`), 'another legacy token stays');
  await api.ok('DELETE', '/users/me/android_gcm_reg_id', { token: other });
});

t.test('push - regenerating the API key removes every E2EE registration: client devices, with remove events; nothing more is sent (FL 492)', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  await api.ok('PATCH', '/settings', { enable_online_push_notifications: true });
  const types = JSON.stringify(['device']);
  const folded = await register(api, { event_types: types, fetch_event_types: types });
  const snap = structuredClone(folded.snapshot);
  const phone = await appPhone(api);
  await phone.register();
  await catchUp(folded, snap, (e) => e.type === 'device' && e.push_token_id);
  const before = await api.ok('POST', '/register', { fetch_event_types: types });
  t.same(Object.keys(before.devices), [String(phone.deviceId)], 'registered');

  const { api_key: apiKey } = await api.ok('POST', '/users/me/api_key/regenerate');
  const again = s.api.as({ ...p, apiKey });
  folded.api = again;
  await catchUp(folded, snap, (e) => e.type === 'device' && e.op === 'remove' && e.device_id === phone.deviceId);
  t.same(snap.devices, {}, 'the client device is removed, with its event');
  const fresh = await again.ok('POST', '/register', { fetch_event_types: types });
  t.same(fresh.devices, {}, 'no E2EE registration is left');
  t.same(snap.devices, fresh.devices, 'snapshot + events = a fresh register');
  t.match(await again.call('POST', '/mobile_push/e2ee/test_notification', {}), { status: 400, body: { code: 'NO_ACTIVE_PUSH_DEVICE' } });
  const dm = await newPerson(s);
  await s.api.as(dm).ok('POST', '/messages', { type: 'direct', to: [p.userId], content: 'after the new key' });
  await sleep(500);
  t.equal(phone.received().length, 0, 'nothing is sent to it');
});

t.test("push - E2EE registration (FL 468): Zulip's checks, a refusal by the service, humans only, every role", async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  const phone = await appPhone(api);
  const bad = async (who: Api, params: Record<string, string | number>, msg: string) => {
    const r = await who.call('POST', '/mobile_push/register', params);
    t.equal(r.status, 400, msg);
    t.match(r.body, { result: 'error', code: 'BAD_REQUEST', msg }, msg);
  };
  const other = await appPhone(s.api.as(s.demo.member1));
  await bad(api, { ...phone.params(), device_id: other.deviceId }, 'Invalid `device_id`');
  await bad(api, { device_id: phone.deviceId }, 'Missing parameters: must provide either all push key fields, all token fields, or both.');
  await bad(api, phone.params({ key: true }), 'No push registration exists to rotate key for.');
  await bad(api, phone.params({ token: true }), 'No push registration exists to rotate token for.');
  const tagged = sodium.from_base64(newPushKey(), B64);
  tagged[0] = 0x32;
  await bad(api, { ...phone.params(), push_key: sodium.to_base64(tagged, B64) }, 'Invalid `push_key`');
  await bad(api, { ...phone.params(), push_key: phone.key.key.slice(0, 40) }, 'Invalid `push_key`');
  await bad(api, { ...phone.params(), token_kind: 'gcm' }, 'Invalid token_kind');
  await bad(api, { ...phone.params(), token_id: 'not base64!' }, '`token_id` is not Base64 encoded');
  await bad(api, { ...phone.params(), push_key_id: 2 ** 32 }, 'Invalid push_key_id');
  t.same((await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['device']) })).devices[String(phone.deviceId)], { push_key_id: null, push_token_id: null, pending_push_token_id: null, push_token_last_updated_timestamp: null, push_registration_error_code: null }, 'nothing refused was kept');

  // Sealed for another service's key: the service refuses it; the device has its error code, and may register again.
  const q = await register(api, { event_types: JSON.stringify(['device']) });
  const wrongKey = sodium.to_base64(sodium.crypto_box_keypair().publicKey, B64);
  t.equal((await api.call('POST', '/mobile_push/register', { ...phone.params(), bouncer_public_key: wrongKey })).status, 200);
  t.match(await waitFor(q, (e) => e.type === 'device' && e.push_registration_error_code), { device_id: phone.deviceId, push_registration_error_code: 'INVALID_BOUNCER_PUBLIC_KEY' });
  t.match((await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['device']) })).devices[String(phone.deviceId)], { push_registration_error_code: 'INVALID_BOUNCER_PUBLIC_KEY', push_token_id: null });
  t.equal((await phone.register()).status, 200, 'after an error the app registers again');
  await waitFor(q, (e) => e.type === 'device' && e.push_token_id === tokenIdOf(phone.token));

  // A bot has no client push (Zulip's human_users_only), but may have a device ID as any user (register_device).
  const bot = s.api.as(s.demo.bot);
  const { device_id: botDevice } = await bot.ok('POST', '/register_client_device', {});
  await bad(bot, { ...phone.params(), device_id: botDevice }, 'This endpoint does not accept bot requests.');
  for (const who of [s.demo.guest, s.demo.admin, s.demo.owner]) {
    const mine = await appPhone(s.api.as(who));
    t.equal((await mine.register()).status, 200, `role ${who.email} may register a device`);
  }
  // Without the service, as Zulip: nothing to register with; a device ID all the same.
  const offline = plain.api.as(plain.demo.member1);
  const { device_id: offlineDevice } = await offline.ok('POST', '/register_client_device', {});
  t.match(await offline.call('POST', '/mobile_push/register', { ...phone.params(), device_id: offlineDevice }), { status: 400, body: { result: 'error', code: 'PUSH_SERVICE_NOT_CONFIGURED' } });
  t.match(await offline.call('POST', '/mobile_push/e2ee/test_notification', {}), { status: 400, body: { code: 'PUSH_SERVICE_NOT_CONFIGURED' } });
});

t.test('push - E2EE (FL 468): the push-account form of FL 406-467 is refused as Zulip 12 refuses it; no push_devices, no push_device events', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  const types = JSON.stringify(['device', 'push_device']);
  const q = await register(api, { event_types: types, fetch_event_types: types });
  t.notOk('push_devices' in q.snapshot, 'no push_devices in the register');
  t.same(q.snapshot.devices, {});
  // What a client of before FL 468 sends (push_account_id, with FL 432's push_key): refused for want of a device ID, nothing registered.
  await sodium.ready;
  const token = uniq('tok');
  const accountForm = { token_kind: 'fcm', push_account_id: 1 + Math.floor(Math.random() * 2 ** 31), push_key: newPushKey(), bouncer_public_key: svc.bouncerPublicKey, encrypted_push_registration: sealedRegistration('fcm', token) };
  const calls = svc.of('push/e2ee/register').length;
  t.match(await api.call('POST', '/mobile_push/register', accountForm), { status: 400, body: { result: 'error', code: 'REQUEST_VARIABLE_MISSING', msg: "Missing 'device_id' argument", var_name: 'device_id' } });
  const { push_key: _k, ...keyless } = accountForm;
  t.match(await api.call('POST', '/mobile_push/register', { ...keyless, push_public_key: sodium.to_base64(sodium.crypto_box_keypair().publicKey, B64) }), { status: 400, body: { msg: "Missing 'device_id' argument" } }, "FL 406's push_public_key form too");
  // A bot is told it is a bot first (Zulip's human_users_only).
  t.match(await s.api.as(s.demo.bot).call('POST', '/mobile_push/register', accountForm), { status: 400, body: { msg: 'This endpoint does not accept bot requests.' } });

  // The device form beside it: only device events, and push_account_id is no parameter of either route.
  const phone = await appPhone(api);
  const both = await api.call('POST', '/mobile_push/register', { ...phone.params(), push_account_id: 5 });
  t.match(both, { status: 200, body: { result: 'success', ignored_parameters_unsupported: ['push_account_id'] } });
  // Every event the queue gets, to show none is a push_device event.
  const seen: Array<Record<string, any>> = [];
  await waitFor(q, (e) => seen.push(e) > 0 && e.type === 'device' && e.push_token_id === tokenIdOf(phone.token));
  t.equal(svc.of('push/e2ee/register').length, calls + 1, 'only the device registered with the service');
  const test = await api.call('POST', '/mobile_push/e2ee/test_notification', { push_account_id: 7 });
  t.match(test, { status: 200, body: { ignored_parameters_unsupported: ['push_account_id'] } }, 'push_account_id ignored: to every device, as Zulip 12');
  await svc.waitFor(() => phone.received().some((m) => m.type === 'test'));
  const fresh = await api.ok('POST', '/register', { fetch_event_types: types });
  t.notOk('push_devices' in fresh, 'push_device fetches nothing');
  t.same(Object.keys(fresh.devices), [String(phone.deviceId)]);
  seen.push(...q.buffered.splice(0), ...(await poll(q, { dontBlock: true })));
  t.same(seen.map((e) => `${e.type}/${e.op}`), ['device/add', 'device/update', 'device/update'], 'device events only: add, pending, registered; no push_device event');
});

t.test('push - E2EE (FL 468): the service refuses a token_id that is not the sealed token\'s; the device gets its error code and nothing is sent', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  const q = await register(api, { event_types: JSON.stringify(['device']) });
  const phone = await appPhone(api);
  const sealedToken = phone.token;
  // The app names another token's ID than the one it sealed.
  phone.token = uniq('other');
  const params = { ...phone.params(), encrypted_push_registration: sealedRegistration('fcm', sealedToken) };
  t.equal((await api.call('POST', '/mobile_push/register', params)).status, 200);
  t.match(await waitFor(q, (e) => e.type === 'device' && e.push_registration_error_code), { device_id: phone.deviceId, push_registration_error_code: 'INVALID_ENCRYPTED_PUSH_REGISTRATION' });
  t.match(svc.of('push/e2ee/register').at(-1)!.body, { token_id: tokenIdOf(phone.token) });
  t.match((await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['device']) })).devices[String(phone.deviceId)], { push_token_id: null, push_registration_error_code: 'INVALID_ENCRYPTED_PUSH_REGISTRATION' });
  t.match(await api.call('POST', '/mobile_push/e2ee/test_notification', {}), { status: 400, body: { code: 'NO_ACTIVE_PUSH_DEVICE' } });
});

t.test('push - require_e2ee_push_notifications (FL 409): legacy notifications say "New message", encrypted ones carry the content; administrators set it', async (t) => {
  const owner = s.api.as(s.demo.owner);
  t.teardown(() => owner.ok('PATCH', '/realm', { require_e2ee_push_notifications: false }));
  t.equal((await owner.ok('POST', '/register', { fetch_event_types: JSON.stringify(['realm']) })).realm_require_e2ee_push_notifications, false, "Zulip's default");
  for (const who of [s.demo.member1, s.demo.moderator, s.demo.guest]) {
    if (!who) continue;
    const r = await s.api.as(who).call('PATCH', '/realm', { require_e2ee_push_notifications: true });
    t.equal(r.status, 400, `${who.email} may not`);
  }
  const q = await register(owner, { event_types: JSON.stringify(['realm']) });
  await s.api.as(s.demo.admin).ok('PATCH', '/realm', { require_e2ee_push_notifications: true });
  t.match(await waitFor(q, (e) => e.type === 'realm' && e.property === 'require_e2ee_push_notifications'), { op: 'update', value: true });
  t.equal((await owner.ok('POST', '/register', { fetch_event_types: JSON.stringify(['realm']) })).realm_require_e2ee_push_notifications, true);

  // A user with both a legacy token and an E2EE device.
  const { p, api } = await withDevice();
  const phone = await appPhone(api);
  await phone.register();
  await svc.waitFor(() => svc.of('push/e2ee/register').some((c) => c.body.token_id === tokenIdOf(phone.token)));
  await sleep(200);
  const sender = await newPerson(s);
  const content = `confidential ${uniq('c')}`;
  const { id } = await s.api.as(sender).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([p.userId]), content });
  await svc.waitFor(() => notifiesFor(p).length > 0 && phone.received().length > 0);
  const legacy = notifiesFor(p)[0]!.body;
  t.match(legacy.gcm_payload, { zulip_message_id: id, content: 'New message', sender_id: sender.userId });
  t.equal(legacy.apns_payload.alert.body, 'New message');
  t.notOk(JSON.stringify(legacy).includes(content), 'no content in clear');
  t.match(phone.received()[0], { message_id: id, content }, 'the encrypted notification carries it');
});
t.test('push - a mention through a user group names the smallest such group, in E2EE and legacy payloads; a mention by name names none', async (t) => {
  const sender = await newPerson(s);
  const senderApi = s.api.as(sender);
  const { p, api } = await withDevice();
  const phone = await appPhone(api);
  await phone.register();
  await svc.waitFor(() => svc.of('push/e2ee/register').some((c) => c.body.token_id === tokenIdOf(phone.token)));
  await sleep(200);
  const other = await newPerson(s);
  const [small, big] = [uniq('small'), uniq('big')];
  const smallId = (await senderApi.ok('POST', '/user_groups/create', { name: small, description: '', members: JSON.stringify([p.userId]) })).group_id;
  await senderApi.ok('POST', '/user_groups/create', { name: big, description: '', members: JSON.stringify([p.userId, other.userId]) });
  const name = uniq('grpch');
  await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([sender.userId, p.userId, other.userId]) });
  const viaGroup = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'g', content: `@*${big}* and @*${small}* look` });
  const byName = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'g', content: `@*${small}* and @**${p.fullName}** look` });
  await svc.waitFor(() => phone.received().length >= 2 && notifiesFor(p).length >= 2);
  const e2ee = new Map(phone.received().map((m) => [m.message_id, m]));
  t.match(e2ee.get(viaGroup.id), { mentioned_user_group_id: smallId, mentioned_user_group_name: small });
  t.notOk('mentioned_user_group_id' in e2ee.get(byName.id)!, 'mentioned by name too: no group');
  const legacy = new Map(notifiesFor(p).map((n) => [n.body.gcm_payload.zulip_message_id, n.body]));
  t.match(legacy.get(viaGroup.id), { gcm_payload: { mentioned_user_group_id: smallId, mentioned_user_group_name: small }, apns_payload: { alert: { subtitle: `${sender.fullName} mentioned @${small}:` }, custom: { zulip: { mentioned_user_group_id: smallId } } } });
  t.notOk('mentioned_user_group_id' in legacy.get(byName.id)!.gcm_payload);
  t.equal(legacy.get(byName.id)!.apns_payload.alert.subtitle, `${sender.fullName} mentioned you:`);
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
