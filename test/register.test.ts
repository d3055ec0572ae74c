// POST /register: every key Zulip's register gives for what Parley implements,
// with the values this server really has, filtered by fetch_event_types the way
// Zulip's fetch_initial_state_data is; keys that events change are checked
// with snapshot plus events against a fresh register.
import t from 'tap';
import { type Params, uniq } from './helpers/api.ts';
import { applyEvent, type Snap } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { newPerson, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const guest = s.api.as(s.demo.guest);

// Tests share the realm in cluster runs: every setting changed here is put back afterwards.
const initial = await owner.ok('POST', '/register', { fetch_event_types: ['realm'] });
t.teardown(async () => {
  await owner.ok('PATCH', '/realm', {
    allow_message_editing: initial.realm_allow_message_editing,
    message_content_edit_limit_seconds: initial.realm_message_content_edit_limit_seconds ?? 'unlimited',
    can_create_public_channel_group: { new: initial.realm_can_create_public_channel_group },
    can_invite_users_group: { new: initial.realm_can_invite_users_group },
    can_mention_many_users_group: { new: initial.realm_can_mention_many_users_group },
  });
});

t.test('register - the realm bundle: organization properties and what the server does', async (t) => {
  const reg = await maria.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.match(reg, {
    realm_authentication_methods: { Email: { enabled: true, available: true } },
    realm_email_auth_enabled: true,
    realm_password_auth_enabled: true,
    // No avatar uploads; names and emails may change.
    realm_avatar_changes_disabled: true,
    server_avatar_changes_disabled: true,
    realm_name_changes_disabled: false,
    server_name_changes_disabled: false,
    realm_email_changes_disabled: false,
    // Capabilities this server lacks.
    realm_push_notifications_enabled: false,
    realm_push_notifications_enabled_end_timestamp: null,
    // Digests: the server sends them (test/digest.test.ts); an organization turns them on.
    realm_digest_emails_enabled: false,
    realm_digest_weekday: 1,
    settings_send_digest_emails: true,
    realm_inline_image_preview: false,
    server_inline_image_preview: false,
    server_inline_url_embed_preview: false,
    server_thumbnail_formats: [],
    server_web_public_streams_enabled: false,
    server_can_summarize_topics: false,
    realm_send_welcome_emails: true,
    // The demo organization is made without Notification Bot's channel events notices (FL 434, lib/demo.ts).
    realm_send_channel_events_messages: false,
    realm_upload_quota_mib: null,
    jitsi_server_url: 'https://meet.jit.si',
    // Edit history is served (GET /messages/{id}/history) to everyone.
    realm_allow_edit_history: true,
    realm_message_edit_history_visibility_policy: 'all',
    realm_move_messages_within_stream_limit_seconds: 259200,
    realm_move_messages_between_streams_limit_seconds: 604800,
    realm_new_stream_announcements_stream_id: -1,
    realm_signup_announcements_stream_id: -1,
    password_min_length: 6,
    password_max_length: 1024,
    server_presence_ping_interval_seconds: 60,
    server_presence_offline_threshold_seconds: 140,
    server_typing_started_expiry_period_milliseconds: 45000,
    max_file_upload_size_mib: 25,
    event_queue_longpoll_timeout_seconds: 90,
    realm_icon_source: 'G',
    realm_icon_url: /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon$/,
    realm_default_external_accounts: { github: { text: 'GitHub', url_pattern: 'https://github.com/%(username)s' }, twitter: { text: 'Twitter' } },
  });
  t.notOk('realm_users' in reg, 'the realm bundle carries no people');
  t.equal(reg.zulip_merge_base, reg.service_version, 'version keys are unconditional');
});

t.test('register - the own user: avatar URL, medium avatar and permissions by role', async (t) => {
  // client_extavatar is true by default; the own avatar is still a URL (Zulip forces it for oneself).
  const me = await maria.ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  t.match(me, { avatar_source: 'G', avatar_url: /^https:\/\/secure\.gravatar\.com\/avatar\/[0-9a-f]{32}\?d=identicon&version=1$/, avatar_url_medium: /&s=500&/ });
  t.match(me, { can_create_public_streams: true, can_create_private_streams: true, can_create_web_public_streams: false, can_create_streams: true, can_invite_others_to_realm: true });
  const g = await guest.ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  t.match(g, { can_create_public_streams: false, can_create_private_streams: false, can_create_streams: false, can_invite_others_to_realm: false });
});

t.test('register - user_settings and the organization defaults carry the choices', async (t) => {
  const reg = await maria.ok('POST', '/register', { fetch_event_types: ['user_settings', 'realm_user_settings_defaults'] });
  for (const obj of [reg.user_settings, reg.realm_user_settings_defaults]) {
    t.same(obj.emojiset_choices.map((c: any) => c.key), ['emojiset_a', 'emojiset_b', 'text']);
    t.ok(obj.available_notification_sounds.includes('zulip') && !obj.available_notification_sounds.includes('none'));
  }
  t.equal(reg.user_settings.resolved_topic_notice_auto_read_policy, 'except_followed');
});

t.test('register - fetch_event_types selects keys as Zulip does', async (t) => {
  const keys = async (params: Params) => Object.keys(await maria.ok('POST', '/register', params));
  // user_topic and muted_topics together: only the newer form.
  const both = await keys({ fetch_event_types: ['user_topic', 'muted_topics'] });
  t.ok(both.includes('user_topics'));
  t.notOk(both.includes('muted_topics'));
  t.ok((await keys({ fetch_event_types: ['muted_topics'] })).includes('muted_topics'));
  const all = await keys({});
  t.ok(all.includes('muted_topics') && all.includes('user_topics'), 'everything when nothing is named');
  // Empty lists where nothing was made yet (filters, domains, default channel groups, reminders), and features this server has none of (embedded bots, billing, GIPHY): each under its own type.
  const empty = await maria.ok('POST', '/register', {
    fetch_event_types: ['realm_filters', 'realm_domains', 'default_stream_groups', 'onboarding_steps', 'reminders', 'realm_embedded_bots', 'realm_incoming_webhook_bots', 'realm_billing', 'giphy', 'push_device', 'stop_words'],
  });
  t.match(empty, {
    realm_filters: [],
    realm_domains: [],
    realm_default_stream_groups: [],
    onboarding_steps: [],
    navigation_tour_video_url: null,
    reminders: [],
    realm_embedded_bots: [],
    realm_incoming_webhook_bots: [],
    realm_billing: { has_pending_sponsorship_request: false },
    giphy_api_key: '',
    stop_words: [],
  });
  t.notOk('realm_users' in empty || 'subscriptions' in empty || 'realm_name' in empty);
  t.notOk('push_devices' in empty, 'push_devices went at FL 468 (devices replaced it): push_device fetches nothing');
  // Zulip's fetch type for the video-call token is video_calls.
  t.equal((await maria.ok('POST', '/register', { fetch_event_types: ['video_calls'] })).has_videoprovider_token, false);
  // fetch_event_types wins over event_types; an unknown type is ignored, not an error.
  const over = await keys({ event_types: ['subscription'], fetch_event_types: ['alert_words', 'no_such_type'] });
  t.ok(over.includes('alert_words'));
  t.notOk(over.includes('subscriptions'));
  const none = await keys({ fetch_event_types: [] });
  t.notOk(none.includes('realm_users') || none.includes('alert_words') || none.includes('realm_name'));
  t.ok(none.includes('queue_id') && none.includes('service_feature_level'));
});

t.test('register - presences keyed by user ID for clients with simplified_presence_events', async (t) => {
  await maria.ok('POST', '/users/me/presence', { status: 'active' });
  const reg = await maria.ok('POST', '/register', { fetch_event_types: ['presence'], client_capabilities: { simplified_presence_events: true } });
  t.ok(reg.presences[String(s.demo.member1.userId)], 'keyed by user ID');
  t.type(reg.presence_last_update_id, 'number');
  t.type(reg.server_timestamp, 'number');
});

const PERMS = ['can_create_private_streams', 'can_create_public_streams', 'can_create_web_public_streams', 'can_create_streams', 'can_invite_others_to_realm', 'realm_create_public_stream_policy', 'realm_wildcard_mention_policy'];
const FETCH = { fetch_event_types: ['realm', 'realm_user', 'realm_user_groups'] };
const permsOf = (snap: Snap) => Object.fromEntries([...PERMS, 'role', 'realm_can_create_public_channel_group', 'realm_can_invite_users_group'].map((k) => [k, snap[k]]));

t.test('register - permission changes and a role change: snapshot plus events equals a fresh register', async (t) => {
  const p = await newPerson(s, ROLE.member, 'Perm Person');
  const api = s.api.as(p);
  // The cases below create channels as members, which needs the setting back.
  t.teardown(() => owner.ok('PATCH', '/realm', { can_create_public_channel_group: { new: initial.realm_can_create_public_channel_group } }));
  const q = await register(api, FETCH);
  const snap = structuredClone(q.snapshot);
  t.match(permsOf(snap), { can_create_public_streams: true, can_invite_others_to_realm: true, realm_create_public_stream_policy: 1 });
  // Only administrators may create public channels or invite; members may mention many users.
  await owner.ok('PATCH', '/realm', { can_create_public_channel_group: { new: 6 }, can_invite_users_group: { new: 6 }, can_mention_many_users_group: { new: 3 } });
  applyEvent(snap, await waitFor(q, (e) => e.type === 'realm' && e.op === 'update_dict'));
  t.match(permsOf(snap), { can_create_public_streams: false, can_create_streams: true, can_invite_others_to_realm: false, realm_create_public_stream_policy: 2, realm_wildcard_mention_policy: 2 });
  t.same(permsOf(snap), permsOf((await register(api, FETCH)).snapshot));
  // Made an administrator: both come back.
  await owner.ok('PATCH', `/users/${p.userId}`, { role: ROLE.admin });
  applyEvent(snap, await waitFor(q, (e) => e.type === 'realm_user' && e.op === 'update' && e.person.user_id === p.userId && 'role' in e.person));
  t.match(permsOf(snap), { role: ROLE.admin, can_create_public_streams: true, can_invite_others_to_realm: true });
  t.same(permsOf(snap), permsOf((await register(api, FETCH)).snapshot));
  // A guest may never invite, whatever the setting (role:everyone is refused for it; naming the guest does not help).
  await owner.ok('PATCH', `/users/${p.userId}`, { role: ROLE.guest });
  await owner.ok('PATCH', '/realm', { can_invite_users_group: { new: { direct_members: [p.userId], direct_subgroups: [3] } } });
  applyEvent(snap, await waitFor(q, (e) => e.type === 'realm_user' && e.op === 'update' && e.person.user_id === p.userId && 'role' in e.person));
  applyEvent(snap, await waitFor(q, (e) => e.type === 'realm' && e.op === 'update_dict'));
  t.match(permsOf(snap), { role: ROLE.guest, can_create_public_streams: false, can_invite_others_to_realm: false });
  t.same(permsOf(snap), permsOf((await register(api, FETCH)).snapshot));
});

t.test('register - the editing settings it reports are the ones enforced', async (t) => {
  const channel = uniq('edits');
  await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  const sent = await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'x', content: 'first' });
  await owner.ok('PATCH', '/realm', { allow_message_editing: false });
  t.equal((await maria.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_allow_message_editing, false);
  const refused = await maria.call('PATCH', `/messages/${sent.id}`, { content: 'second' });
  t.equal(refused.status, 400);
  t.match(refused.body.msg, /turned off message editing/);
  await owner.ok('PATCH', '/realm', { allow_message_editing: true });
  await maria.ok('PATCH', `/messages/${sent.id}`, { content: 'second' });
});

t.test('register - drafts: the 1000 most recently edited (GET /drafts lists every one)', async (t) => {
  const p = s.api.as(await newPerson(s, ROLE.member, 'Draft Writer'));
  const base = Math.floor(Date.now() / 1000) - 5000;
  const drafts = Array.from({ length: 1001 }, (_, i) => ({ type: '', to: [], topic: '', content: `draft ${i}`, timestamp: base + i }));
  await p.ok('POST', '/drafts', { drafts });
  const reg = await p.ok('POST', '/register', { fetch_event_types: ['drafts'] });
  t.equal(reg.drafts.length, 1000);
  t.notOk(reg.drafts.some((d: any) => d.content === 'draft 0'), 'the oldest is left out');
  t.ok(reg.drafts.some((d: any) => d.content === 'draft 1000'));
  t.equal((await p.ok('GET', '/drafts')).drafts.length, 1001);
});

t.test('register - max_message_id is the newest message the user received, not the organization\'s', async (t) => {
  const hidden = uniq('hidden');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: hidden }], invite_only: true });
  const q = await register(maria, { fetch_event_types: ['message'], event_types: ['message'] });
  const snap = structuredClone(q.snapshot);
  const secret = await owner.ok('POST', '/messages', { type: 'stream', to: hidden, topic: 'x', content: 'not for Maria' });
  t.ok(snap.max_message_id < secret.id);
  t.equal((await register(maria, { fetch_event_types: ['message'] })).snapshot.max_message_id, snap.max_message_id, 'a message Maria did not receive changes nothing');
  t.equal((await register(owner, { fetch_event_types: ['message'] })).snapshot.max_message_id, secret.id, 'the sender received it');
  const dm = await owner.ok('POST', '/messages', { type: 'direct', to: [s.demo.member1.userId], content: 'for Maria' });
  applyEvent(snap, await waitFor(q, (e) => e.type === 'message' && e.message.id === dm.id));
  t.equal(snap.max_message_id, dm.id);
  t.equal((await register(maria, { fetch_event_types: ['message'] })).snapshot.max_message_id, snap.max_message_id, 'snapshot plus events equals a fresh register');
  const fresh = await newPerson(s, ROLE.member, 'No Mail');
  const mine = (await register(s.api.as(fresh), { fetch_event_types: ['message'] })).snapshot.max_message_id;
  t.ok(mine === -1 || mine > dm.id, 'a new user received nothing from before they joined');
});

t.test('register - server_emoji_data_url: the emoji names, without credentials', async (t) => {
  const { server_emoji_data_url: url } = await maria.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.equal(url, '/static/generated/emoji/emoji_api.json');
  const r = await fetch(new URL(url, s.api.base));
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /application\/json/);
  const { code_to_names } = (await r.json()) as { code_to_names: Record<string, string[]> };
  t.ok(code_to_names['1f600']?.includes('grinning'));
  t.ok(code_to_names['2764']?.includes('heart'), 'codes as reactions write them');
  // A name from the file is one a reaction accepts, with its code.
  const channel = uniq('emoji');
  await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  const sent = await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'x', content: 'react' });
  await maria.ok('POST', `/messages/${sent.id}/reactions`, { emoji_name: code_to_names['1f44d']![0]!, emoji_code: '1f44d' });
});

t.test('register - without notification_settings_null, inherited channel notification settings are given as the user defaults', async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  const channel = uniq('notify');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [person.userId] });
  await p.ok('PATCH', '/settings', { enable_stream_desktop_notifications: true, enable_stream_push_notifications: false });
  const id = ((await p.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === channel).stream_id;
  await p.ok('POST', '/users/me/subscriptions/properties', { subscription_data: [{ stream_id: id, property: 'email_notifications', value: true }] });
  const pick = (reg: any) => reg.subscriptions.find((x: any) => x.stream_id === id);
  const modern = pick(await p.ok('POST', '/register', { fetch_event_types: ['subscription'], client_capabilities: { notification_settings_null: true } }));
  t.same([modern.desktop_notifications, modern.push_notifications, modern.email_notifications, modern.audible_notifications], [null, null, true, null], 'with the capability: null means "as my defaults"');
  const old = await p.ok('POST', '/register', { fetch_event_types: ['subscription'] });
  t.same([pick(old).desktop_notifications, pick(old).push_notifications, pick(old).email_notifications, pick(old).audible_notifications], [true, false, true, false], 'without it: the defaults themselves; a channel setting stays as set');
  t.notOk((old.ignored_parameters_unsupported ?? []).includes('client_capabilities.notification_settings_null'));
});
