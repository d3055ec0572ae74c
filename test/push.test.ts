// Mobile push over HTTP, against a push notification service the test runs
// (`test/helpers/push-service.ts`, the service's API as Zulip's
// zilencer/views.py defines it, recording each call): server registration,
// device routes and their errors, what a notification and a removal carry
// (the fields the apps parse), the test notification, and a server without
// the service. Embedded mode.
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
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
