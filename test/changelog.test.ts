// Levels 149 to 277 of Zulip's API changelog: the behaviour the feature-level
// table (lib/features.ts) names these cases for, where no other test shows it.
import { createHash } from 'node:crypto';
import t from 'tap';
import { FEATURES } from '../lib/features.ts';
import { Api, uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { poll, register, waitFor } from './helpers/events.ts';
import { asEveryone, callers, newPerson, outcome, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const GROUP = { members: 3, moderators: 5, administrators: 6, nobody: 8, everyone: 2 };

t.test('changelog - every level from 149 to 277 has an entry', async (t) => {
  for (let level = 149; level <= 277; level++) t.ok(FEATURES.some((f) => f.level === level), `level ${level} has an entry`);
});

t.test('changelog - POST /register without credentials is 401, as on a server without web-public access (FL 149)', async (t) => {
  const anonymous = new Api(s.api.base);
  for (const params of [{}, { client_gravatar: false }, { include_subscribers: true }]) {
    const r = await anonymous.call('POST', '/register', params);
    t.equal(outcome(r), '401 UNAUTHORIZED', JSON.stringify(params));
  }
  const settings = await anonymous.ok('GET', '/server_settings');
  t.equal(settings.realm_web_public_access_enabled, false, 'the server says why: no web-public access');
});

t.test('changelog - moving a topic does not depend on allow_message_editing, and nobody may be allowed to move (FL 159)', async (t) => {
  const p = s.api.as(await newPerson(s));
  const channel = uniq('moves');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  await p.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  t.teardown(() => as.owner.ok('PATCH', '/realm', { allow_message_editing: true, can_move_messages_between_topics_group: { new: GROUP.everyone } }));
  await as.owner.ok('PATCH', '/realm', { allow_message_editing: false });
  const { id } = await p.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'a', content: 'move me' });
  t.equal(outcome(await p.call('PATCH', `/messages/${id}`, { content: 'changed' }), true), '400 BAD_REQUEST Your organization has turned off message editing');
  await p.ok('PATCH', `/messages/${id}`, { topic: 'b', propagate_mode: 'change_one' });
  t.equal((await p.ok('GET', `/messages/${id}`)).message.subject, 'b', 'the topic moved while editing is off');
  await as.owner.ok('PATCH', '/realm', { can_move_messages_between_topics_group: { new: GROUP.nobody } });
  t.equal(outcome(await p.call('PATCH', `/messages/${id}`, { topic: 'c', propagate_mode: 'change_one' })), '400 BAD_REQUEST', 'with nobody allowed, a member may not move');
  t.equal((await p.ok('GET', `/messages/${id}`)).message.subject, 'b');
});

t.test('changelog - register keys of levels 149-277, and the ones Zulip removed', async (t) => {
  const reg = await as.member.ok('POST', '/register', {});
  for (const k of ['server_presence_ping_interval_seconds', 'server_presence_offline_threshold_seconds', 'server_typing_started_wait_period_milliseconds', 'server_typing_stopped_wait_period_milliseconds', 'server_typing_started_expiry_period_milliseconds']) {
    t.ok(Number.isSafeInteger(reg[k]) && reg[k] > 0, `${k} (FL 164, 204): ${reg[k]}`);
  }
  t.notOk('realm_community_topic_editing_limit_seconds' in reg, 'removed at FL 183');
  t.equal(reg.realm_default_code_block_language, '', 'no default language is the empty string (FL 195)');
  t.same(reg.realm_incoming_webhook_bots, [], 'no incoming-webhook integrations, so none lacks display_name or all_event_types (FL 207)');
  t.ok(reg.onboarding_steps.every((x: any) => x.type === 'one_time_notice' && typeof x.name === 'string' && Object.keys(x).length === 2), 'onboarding steps are one-time notices, without hotspot fields (FL 230, 233, 259)');
  t.same([reg.realm_push_notifications_enabled, reg.realm_push_notifications_enabled_end_timestamp], [false, null], 'no push notifications here, and the register says so (FL 231)');
  for (const [name, method] of Object.entries(reg.realm_authentication_methods as Record<string, unknown>)) t.match(method, { enabled: Boolean, available: Boolean }, `${name} as an object (FL 243)`);
  t.equal(reg.realm_upload_quota_mib, null, 'no upload quota (FL 251)');
  t.match(reg.realm_url, /^https?:\/\//, 'realm_url (FL 257)');
  t.equal(reg.realm_uri, reg.realm_url, 'realm_uri kept as its alias');
  const settings = await new Api(s.api.base).ok('GET', '/server_settings');
  t.same([settings.realm_url, settings.realm_uri], [reg.realm_url, reg.realm_url], 'in GET /server_settings too');
  t.same(reg.server_thumbnail_formats, [], 'no thumbnails are made (FL 273)');
});

t.test('changelog - parameters Zulip removed are reported as ignored (FL 166, 184)', async (t) => {
  const sent = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('fl166'), content: 'hi', realm_str: 'zulip' });
  t.same(sent.ignored_parameters_unsupported, ['realm_str'], 'realm_str (FL 166)');
  const at = Math.floor(Date.now() / 1000) + 3600;
  const first = await as.member.ok('POST', '/scheduled_messages', { type: 'stream', to: 1, topic: uniq('fl184'), content: 'later', scheduled_delivery_timestamp: at });
  t.teardown(() => as.member.call('DELETE', `/scheduled_messages/${first.scheduled_message_id}`));
  const second = await as.member.ok('POST', '/scheduled_messages', { type: 'stream', to: 1, topic: uniq('fl184'), content: 'other', scheduled_delivery_timestamp: at, scheduled_message_id: first.scheduled_message_id });
  t.teardown(() => as.member.call('DELETE', `/scheduled_messages/${second.scheduled_message_id}`));
  t.same(second.ignored_parameters_unsupported, ['scheduled_message_id'], 'scheduled_message_id no longer edits (FL 184)');
  t.not(second.scheduled_message_id, first.scheduled_message_id, 'a second scheduled message is made');
  const mine = (await as.member.ok('GET', '/scheduled_messages')).scheduled_messages;
  t.equal(mine.find((m: any) => m.scheduled_message_id === first.scheduled_message_id)?.content, 'later', 'the first is unchanged');
});

/** Settings of levels 149-277 with a value other than their default, and one each refuses. */
const SETTINGS: Array<[string, string | number | boolean, string | number | boolean]> = [
  ['realm_name_in_email_notifications_policy', 3, 4], // FL 168
  ['web_mark_read_on_scroll_policy', 3, 0], // FL 175
  ['enable_followed_topic_email_notifications', false, 'x'], // FL 189
  ['enable_followed_topic_push_notifications', false, 'x'],
  ['enable_followed_topic_wildcard_mentions_notify', false, 'x'],
  ['enable_followed_topic_desktop_notifications', false, 'x'],
  ['enable_followed_topic_audible_notifications', false, 'x'],
  ['web_stream_unreads_count_display_policy', 3, 4], // FL 210
  ['automatically_follow_topics_policy', 4, 5], // FL 214
  ['automatically_unmute_topics_in_muted_streams_policy', 1, 0],
  ['desktop_icon_count_display', 2, 5], // FL 227: 2 is DMs, mentions and followed topics
  ['automatically_follow_topics_where_mentioned', false, 'x'], // FL 235
  ['web_font_size_px', 18, 'big'], // FL 245
  ['web_line_height_percent', 150, 'tall'],
  ['receives_typing_notifications', false, 'x'], // FL 253
  ['web_navigate_to_sent_message', false, 'x'], // FL 268
  ['web_animate_image_previews', 'always', 'sometimes'], // FL 275
];

t.test('changelog - personal settings of levels 149-277 are taken by PATCH /settings and the organization defaults, and reported in the register', async (t) => {
  const p = s.api.as(await newPerson(s));
  const before = (await p.ok('POST', '/register', { fetch_event_types: ['user_settings'] })).user_settings;
  for (const [name, value, bad] of SETTINGS) {
    t.not(before[name], value, `${name} starts elsewhere`);
    t.equal(outcome(await p.call('PATCH', '/settings', { [name]: bad })), '400 BAD_REQUEST', `${name}: ${JSON.stringify(bad)} is refused`);
  }
  await p.ok('PATCH', '/settings', Object.fromEntries(SETTINGS.map(([name, value]) => [name, value])));
  const after = (await p.ok('POST', '/register', { fetch_event_types: ['user_settings'] })).user_settings;
  for (const [name, value] of SETTINGS) t.equal(after[name], value, `${name} is stored and reported`);
  // The organization defaults: administrators only.
  const defaults = (await as.admin.ok('POST', '/register', { fetch_event_types: ['realm_user_settings_defaults'] })).realm_user_settings_defaults;
  t.teardown(() => as.admin.ok('PATCH', '/realm/user_settings_defaults', Object.fromEntries(SETTINGS.map(([name]) => [name, defaults[name]]))));
  t.equal(outcome(await as.member.call('PATCH', '/realm/user_settings_defaults', { web_font_size_px: 18 })), '400 UNAUTHORIZED_PRINCIPAL', 'a member may not change them');
  await as.admin.ok('PATCH', '/realm/user_settings_defaults', Object.fromEntries(SETTINGS.map(([name, value]) => [name, value])));
  const changed = (await as.member.ok('POST', '/register', { fetch_event_types: ['realm_user_settings_defaults'] })).realm_user_settings_defaults;
  for (const [name, value] of SETTINGS) t.equal(changed[name], value, `the default of ${name}`);
});

t.test('changelog - receives_typing_notifications off: no typing events reach the user (FL 253)', async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  const q = await register(p, { event_types: ['typing', 'message'] });
  // The realm reads the setting when it names a conversation's audience (the ephemeral actor reuses that answer
  // for 10 s), so each step types in a conversation of its own.
  const typeAndSend = async (to: number[], content: string) => {
    await as.member.ok('POST', '/typing', { type: 'direct', to, op: 'start' });
    await as.member.ok('POST', '/messages', { type: 'direct', to, content });
    const seen: string[] = [];
    for (;;) {
      const e = await waitFor(q, () => true);
      seen.push(e.type);
      if (e.type === 'message' && e.message.content.includes(content)) return seen;
    }
  };
  await p.ok('PATCH', '/settings', { receives_typing_notifications: false });
  t.same(await typeAndSend([person.userId], 'one'), ['message'], 'off: a queue registered before the change gets no typing events');
  const later = await register(p, { event_types: ['typing'] });
  await as.member.ok('POST', '/typing', { type: 'direct', to: [person.userId, s.demo.admin.userId], op: 'start' });
  t.same(await poll(later, { dontBlock: true }), [], 'nor one registered after');
  await p.ok('PATCH', '/settings', { receives_typing_notifications: true });
  t.same(await typeAndSend([person.userId, s.demo.member2.userId], 'two'), ['typing', 'message'], 'on again: the typing notice arrives');
});

t.test('changelog - a bot can be muted and unmuted (FL 188)', async (t) => {
  const p = s.api.as(await newPerson(s));
  await p.ok('POST', `/users/me/muted_users/${s.demo.bot.userId}`);
  const muted = (await p.ok('POST', '/register', { fetch_event_types: ['muted_users'] })).muted_users;
  t.same(muted.map((m: any) => m.id), [s.demo.bot.userId]);
  await p.ok('DELETE', `/users/me/muted_users/${s.demo.bot.userId}`);
  t.same((await p.ok('POST', '/register', { fetch_event_types: ['muted_users'] })).muted_users, []);
});

t.test('changelog - a guest subscribed to a public channel gets its creation event and its peer events (FL 192, 220)', async (t) => {
  const guest = await newPerson(s, ROLE.guest, 'Guest');
  const g = s.api.as(guest);
  const q = await register(g, { event_types: ['stream', 'subscription'] });
  const name = uniq('public');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const id = (await as.owner.ok('GET', '/get_stream_id', { stream: name })).stream_id;
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [guest.userId] });
  const created = await waitFor(q, (e) => e.type === 'stream' && e.op === 'create');
  t.same(created.streams.map((c: any) => c.stream_id), [id], 'the channel is made known to the guest (FL 192)');
  await waitFor(q, (e) => e.type === 'subscription' && e.op === 'add');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.member2.userId] });
  t.match(await waitFor(q, (e) => e.type === 'subscription' && e.op === 'peer_add'), { stream_ids: [id], user_ids: [s.demo.member2.userId] }, 'peer_add (FL 220)');
  await as.owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [name], principals: [s.demo.member2.userId] });
  t.match(await waitFor(q, (e) => e.type === 'subscription' && e.op === 'peer_remove'), { stream_ids: [id], user_ids: [s.demo.member2.userId] }, 'peer_remove (FL 220)');
});

t.test('changelog - a guest made a member gets the public channels and their subscribers (FL 205)', async (t) => {
  const person = await newPerson(s, ROLE.guest, 'Promoted');
  const p = s.api.as(person);
  const name = uniq('unseen');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const fetch = { fetch_event_types: ['stream', 'subscription', 'realm_user'] };
  const q = await register(p, fetch);
  const snap = structuredClone(q.snapshot);
  t.notOk(snap.streams.some((c: any) => c.name === name), 'a guest does not see a public channel it is not in');
  await as.owner.ok('PATCH', `/users/${person.userId}`, { role: ROLE.member });
  const created = await waitFor(q, (e) => e.type === 'stream' && e.op === 'create');
  t.ok(created.streams.some((c: any) => c.name === name), 'made a member: the public channels are created for it');
  applyEvent(snap, created);
  const fresh = (await p.ok('POST', '/register', fetch)).streams;
  const ids = (list: any[]) => list.map((c) => c.stream_id).sort((a, b) => a - b);
  t.same(ids(snap.streams), ids(fresh), 'snapshot plus events lists the channels of a fresh register');
});

t.test('changelog - can_create_private_channel_group decides who creates private channels (FL 266)', async (t) => {
  t.teardown(() => as.owner.ok('PATCH', '/realm', { can_create_private_channel_group: { new: GROUP.members } }));
  await as.owner.ok('PATCH', '/realm', { can_create_private_channel_group: { new: GROUP.administrators } });
  const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['realm', 'realm_user'] });
  t.same([reg.realm_can_create_private_channel_group, reg.can_create_private_streams, reg.can_create_public_streams], [GROUP.administrators, false, true]);
  const refused = await as.member.call('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('secret') }], invite_only: true });
  t.equal(outcome(refused), '400 BAD_REQUEST', 'a member may not create a private channel');
  await as.member.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('open') }] });
  await as.admin.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('secret') }], invite_only: true });
});

t.test('changelog - @**channel** is a channel wildcard mention, with stream_wildcard_mentioned (FL 247)', async (t) => {
  const channel = await as.owner.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('wild'), content: '@**channel** look' });
  t.match((await as.owner.ok('GET', `/messages/${channel.id}`)).message.content, /channel-wildcard-mention[^>]*>@channel</, 'rendered as a channel wildcard');
  const flags = (await as.member.ok('GET', `/messages/${channel.id}`)).message.flags as string[];
  t.ok(flags.includes('stream_wildcard_mentioned'), `a subscriber's flags: ${flags}`);
});

t.test('changelog - an image link renders no preview: this server makes none (FL 276)', async (t) => {
  const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same([reg.server_inline_image_preview, reg.realm_inline_image_preview], [false, false]);
  const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('img'), content: 'https://example.com/cat.png' });
  const html = (await as.member.ok('GET', `/messages/${id}`)).message.content as string;
  t.match(html, /<a href="https:\/\/example\.com\/cat\.png"/, 'a plain link');
  t.notMatch(html, /message_inline_image|data-original-dimensions/, 'no preview element, so none lacks its dimensions');
});

t.test('changelog - PATCH /realm answers with the settings that changed, and only those (FL 150)', async (t) => {
  const before = await as.owner.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.teardown(() =>
    as.owner.ok('PATCH', '/realm', {
      name: before.realm_name,
      waiting_period_threshold: before.realm_waiting_period_threshold,
      message_content_edit_limit_seconds: before.realm_message_content_edit_limit_seconds ?? 'unlimited',
      can_create_groups: { new: before.realm_can_create_groups },
    }),
  );
  const strip = ({ result: _r, msg: _m, ...rest }: Record<string, any>) => rest;
  const name = `${before.realm_name} 150`.slice(0, 40);
  const first = await as.owner.ok('PATCH', '/realm', { name, waiting_period_threshold: before.realm_waiting_period_threshold + 1, allow_message_editing: before.realm_allow_message_editing });
  t.same(strip(first), { name: 'updated', waiting_period_threshold: before.realm_waiting_period_threshold + 1 }, 'a string as "updated", a number as itself; an unchanged setting is left out');
  t.same(strip(await as.owner.ok('PATCH', '/realm', { name })), {}, 'nothing changed: nothing given');
  t.same(strip(await as.owner.ok('PATCH', '/realm', { message_content_edit_limit_seconds: 'unlimited' })), before.realm_message_content_edit_limit_seconds === null ? {} : { message_content_edit_limit_seconds: null }, "'unlimited' as null");
  t.same(strip(await as.owner.ok('PATCH', '/realm', { message_content_edit_limit_seconds: 3600 })), { message_content_edit_limit_seconds: 3600 });
  const group = before.realm_can_create_groups === 6 ? 5 : 6;
  t.same(strip(await as.owner.ok('PATCH', '/realm', { can_create_groups: { new: group } })), { can_create_groups: group }, 'a permission as its new value');
});

t.test('changelog - organization settings: move time limits (FL 162), the guest indicator (FL 216), the update announcements channel (FL 242)', async (t) => {
  const KEYS = ['realm_move_messages_within_stream_limit_seconds', 'realm_move_messages_between_streams_limit_seconds', 'realm_enable_guest_user_indicator', 'realm_zulip_update_announcements_stream_id'];
  const pick = (snap: Record<string, any>) => Object.fromEntries(KEYS.map((k) => [k, snap[k]]));
  const q = await register(as.member, { fetch_event_types: ['realm'], event_types: ['realm'] });
  const before = q.snapshot;
  t.same(pick(before), { realm_move_messages_within_stream_limit_seconds: 259200, realm_move_messages_between_streams_limit_seconds: 604800, realm_enable_guest_user_indicator: true, realm_zulip_update_announcements_stream_id: -1 }, "Zulip's defaults");
  t.teardown(() => as.owner.ok('PATCH', '/realm', { move_messages_within_stream_limit_seconds: 259200, move_messages_between_streams_limit_seconds: 604800, enable_guest_user_indicator: true, zulip_update_announcements_stream_id: -1 }));
  const change = { move_messages_within_stream_limit_seconds: 600, move_messages_between_streams_limit_seconds: 'unlimited', enable_guest_user_indicator: false, zulip_update_announcements_stream_id: 1 };
  t.equal(outcome(await as.member.call('PATCH', '/realm', change)), '400 UNAUTHORIZED_PRINCIPAL', 'a member may not');
  t.equal(outcome(await as.moderator.call('PATCH', '/realm', change)), '400 UNAUTHORIZED_PRINCIPAL', 'nor a moderator');
  t.equal(outcome(await as.admin.call('PATCH', '/realm', { zulip_update_announcements_stream_id: 999_999 })), '400 BAD_REQUEST', 'a channel that does not exist');
  t.equal(outcome(await as.admin.call('PATCH', '/realm', { move_messages_within_stream_limit_seconds: 0 })), '400 BAD_REQUEST', 'a limit of 0 seconds');
  const r = await as.admin.ok('PATCH', '/realm', change);
  t.match(r, { move_messages_within_stream_limit_seconds: 600, move_messages_between_streams_limit_seconds: null, enable_guest_user_indicator: false, zulip_update_announcements_stream_id: 1 }, 'an administrator may; the reply names each change');
  const snap = structuredClone(before);
  for (let i = 0; i < 4; i++) applyEvent(snap, await waitFor(q, (e) => e.type === 'realm' && e.op === 'update'));
  const fresh = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same(pick(fresh), { realm_move_messages_within_stream_limit_seconds: 600, realm_move_messages_between_streams_limit_seconds: null, realm_enable_guest_user_indicator: false, realm_zulip_update_announcements_stream_id: 1 });
  t.same(pick(snap), pick(fresh), 'snapshot plus realm update events equals a fresh register');
});

t.test('changelog - PATCH /users/me/subscriptions/muted_topics mutes and unmutes, twice over without an error (FL 169)', async (t) => {
  const p = s.api.as(await newPerson(s));
  const topic = uniq('muted');
  const policyOf = async () => ((await p.ok('POST', '/register', { fetch_event_types: ['user_topic'] })).user_topics as any[]).find((x) => x.stream_id === 1 && x.topic_name === topic)?.visibility_policy;
  await p.ok('PATCH', '/users/me/subscriptions/muted_topics', { stream: 'general', topic, op: 'add' });
  t.equal(await policyOf(), 1, 'muted, the channel named');
  await p.ok('PATCH', '/users/me/subscriptions/muted_topics', { stream_id: 1, topic, op: 'add' });
  t.equal(await policyOf(), 1, 'muting again succeeds');
  await p.ok('PATCH', '/users/me/subscriptions/muted_topics', { stream_id: 1, topic, op: 'remove' });
  t.equal(await policyOf(), undefined, 'unmuted, the channel by ID');
  await p.ok('PATCH', '/users/me/subscriptions/muted_topics', { stream_id: 1, topic, op: 'remove' });
  for (const params of [{ topic, op: 'add' }, { stream: 'general', stream_id: 1, topic, op: 'add' }, { stream: 'no-such-channel-169', topic, op: 'add' }, { stream_id: 1, topic, op: 'toggle' }]) {
    t.equal(outcome(await p.call('PATCH', '/users/me/subscriptions/muted_topics', params)), '400 BAD_REQUEST', JSON.stringify(params));
  }
  t.equal(outcome(await new Api(s.api.base).call('PATCH', '/users/me/subscriptions/muted_topics', { stream_id: 1, topic, op: 'add' })), '401 UNAUTHORIZED');
});

// ---- Levels 278 to 310 ----------------------------------------------------------------------------------

t.test('changelog - every level from 278 to 310 has an entry', async (t) => {
  for (let level = 278; level <= 310; level++) t.ok(FEATURES.some((f) => f.level === level), `level ${level} has an entry`);
});

/** Uploads a file as `api`'s user; its `/user_uploads/...` URL. */
async function uploadAs(person: { email: string; apiKey: string }, name: string, type: string, data: Buffer): Promise<string> {
  const fd = new FormData();
  fd.append('file', new Blob([new Uint8Array(data)], { type }), name);
  const res = await fetch(`${s.urls[0]}/api/v1/user_uploads`, { method: 'POST', headers: { authorization: `Basic ${Buffer.from(`${person.email}:${person.apiKey}`).toString('base64')}` }, body: fd });
  return ((await res.json()) as { url: string }).url;
}

t.test('changelog - an uploaded image renders as a link, without a placeholder or its dimensions: no thumbnails are made (FL 278, 287)', async (t) => {
  const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
  const url = await uploadAs(s.demo.member1, 'dot.png', 'image/png', png);
  const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('img'), content: `[dot.png](${url})` });
  const html = (await as.member.ok('GET', `/messages/${id}`)).message.content as string;
  t.match(html, new RegExp(`<a href="${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"`), 'a link to the upload');
  t.notMatch(html, /image-loading-placeholder|message_inline_image|data-original-dimensions/);
});

t.test('changelog - organization permissions of levels 280-310 decide who may; legacy policies are their supersets; the policies they replaced are ignored', async (t) => {
  const before = await as.owner.ok('POST', '/register', { fetch_event_types: ['realm', 'user_settings'] });
  t.same(
    [before.realm_can_create_web_public_channel_group, before.realm_can_delete_any_message_group, before.realm_can_delete_own_message_group, before.realm_can_create_groups, before.realm_can_manage_all_groups, before.realm_can_add_custom_emoji_group, before.realm_can_move_messages_between_channels_group],
    [7, GROUP.administrators, GROUP.everyone, GROUP.members, 7, GROUP.members, GROUP.members],
    "Zulip's defaults (FL 280, 281, 291, 299, 307, 310)",
  );
  t.equal(before.realm_create_web_public_stream_policy, 7, 'owners only (FL 280)');
  for (const k of ['realm_user_group_edit_policy', 'realm_add_custom_emoji_policy', 'realm_move_messages_between_streams_policy', 'realm_delete_own_message_policy', 'realm_edit_topic_policy']) t.notOk(k in before, `${k} is gone`);
  t.equal(before.max_file_upload_size_mib, 25, 'max_file_upload_size_mib (FL 306); no operation here changes the plan, so no realm update_dict for it');
  t.equal(before.user_settings.allow_private_data_export, false, 'allow_private_data_export (FL 293)');
  const ignored = await as.owner.ok('PATCH', '/realm', { create_web_public_stream_policy: 2, user_group_edit_policy: 1, add_custom_emoji_policy: 1, move_messages_between_streams_policy: 1, delete_own_message_policy: 1 });
  t.same(ignored.ignored_parameters_unsupported.sort(), ['add_custom_emoji_policy', 'create_web_public_stream_policy', 'delete_own_message_policy', 'move_messages_between_streams_policy', 'user_group_edit_policy'], 'the replaced policies are ignored');

  const groups = ['can_create_web_public_channel_group', 'can_add_custom_emoji_group', 'can_move_messages_between_channels_group', 'can_manage_all_groups', 'can_create_groups'];
  t.teardown(() => as.owner.ok('PATCH', '/realm', Object.fromEntries(groups.map((k) => [k, JSON.stringify({ new: before[`realm_${k}`] })]))));
  // FL 280: owners only may change it; the legacy policy follows it.
  t.equal(outcome(await as.admin.call('PATCH', '/realm', { can_create_web_public_channel_group: JSON.stringify({ new: 5 }) })), '400 UNAUTHORIZED_PRINCIPAL', 'an administrator may not change who creates web-public channels');
  for (const [group, policy] of [[5, 4], [GROUP.administrators, 2], [GROUP.nobody, 6]] as const) {
    await as.owner.ok('PATCH', '/realm', { can_create_web_public_channel_group: JSON.stringify({ new: group }) });
    t.equal((await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_create_web_public_stream_policy, policy, `group ${group}: policy ${policy}`);
  }
  // FL 307: who adds custom emoji.
  await as.owner.ok('PATCH', '/realm', { can_add_custom_emoji_group: JSON.stringify({ new: GROUP.administrators }) });
  const fd = () => {
    const f = new FormData();
    f.append('file', new Blob([new Uint8Array(Buffer.from('89504e470d0a1a0a', 'hex'))], { type: 'image/png' }), 'e.png');
    return f;
  };
  const addEmoji = (who: { email: string; apiKey: string }, name: string) => fetch(`${s.urls[0]}/api/v1/realm/emoji/${name}`, { method: 'POST', headers: { authorization: `Basic ${Buffer.from(`${who.email}:${who.apiKey}`).toString('base64')}` }, body: fd() });
  t.equal((await addEmoji(s.demo.member1, uniq('e307').replace(/[^a-z0-9]/g, ''))).status, 400, 'a member may not add custom emoji once administrators alone may');
  const emoji = uniq('a307').replace(/[^a-z0-9]/g, '');
  t.equal((await addEmoji(s.demo.admin, emoji)).status, 200, 'an administrator may');
  t.teardown(() => as.admin.call('DELETE', `/realm/emoji/${emoji}`));
  // FL 310: who moves messages between channels.
  const dest = uniq('fl310');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: dest }], principals: [s.demo.member1.userId, s.demo.moderator.userId] });
  const destId = (await as.owner.ok('GET', '/get_stream_id', { stream: dest })).stream_id;
  await as.owner.ok('PATCH', '/realm', { can_move_messages_between_channels_group: JSON.stringify({ new: 5 }) });
  const m1 = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('move'), content: 'move me' });
  t.equal(outcome(await as.member.call('PATCH', `/messages/${m1.id}`, { stream_id: destId }), true), "400 BAD_REQUEST You don't have permission to move this message", 'a member may not move across channels once moderators alone may');
  await as.moderator.ok('PATCH', `/messages/${m1.id}`, { stream_id: destId });
  // FL 299, 305, 309: who creates groups and who manages every group, anonymous values included.
  await as.owner.ok('PATCH', '/realm', { can_create_groups: JSON.stringify({ new: { direct_members: [s.demo.member2.userId], direct_subgroups: [5] } }) });
  t.same((await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_create_groups, { direct_members: [s.demo.member2.userId], direct_subgroups: [5] }, 'an anonymous group (FL 309)');
  t.equal(outcome(await as.member.call('POST', '/user_groups/create', { name: uniq('g299'), description: '' })), '400 BAD_REQUEST', 'a member outside it may not create a group');
  const { group_id } = await s.api.as(s.demo.member2).ok('POST', '/user_groups/create', { name: uniq('g299'), description: '' });
  t.equal(outcome(await as.moderator.call('PATCH', `/user_groups/${group_id}`, { description: 'by a moderator' })), '400 BAD_REQUEST', "a moderator may not manage another's group");
  await as.owner.ok('PATCH', '/realm', { can_manage_all_groups: JSON.stringify({ new: 5 }) });
  await as.moderator.ok('PATCH', `/user_groups/${group_id}`, { description: 'by a moderator' });
  t.equal(outcome(await as.member.call('PATCH', `/user_groups/${group_id}`, { description: 'by a member' })), '400 BAD_REQUEST', 'can_manage_all_groups applies as it says, to its members whatever their role (FL 305)');
});

t.test('changelog - removed operations answer as on Zulip: tutorial_status (FL 282), DELETE of a user group (FL 294)', async (t) => {
  t.equal((await as.member.call('POST', '/users/me/tutorial_status', { status: 'finished' })).status, 404);
  const { group_id } = await as.member.ok('POST', '/user_groups/create', { name: uniq('g294'), description: '' });
  t.equal((await as.member.call('DELETE', `/user_groups/${group_id}`)).status, 405, 'groups are deactivated, not deleted');
  const listed = await as.member.ok('GET', '/user_groups', { allow_deactivated: true });
  t.same(listed.ignored_parameters_unsupported, ['allow_deactivated'], 'renamed include_deactivated_groups');
});

t.test('changelog - GET /messages by message_ids: those the user may read, oldest first; never with a range (FL 300)', async (t) => {
  const topic = uniq('fl300');
  const a = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: 'one' });
  const b = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: 'two' });
  const dm = await as.owner.ok('POST', '/messages', { type: 'direct', to: [s.demo.admin.userId], content: 'not for the member' });
  const r = await as.member.ok('GET', '/messages', { message_ids: JSON.stringify([b.id, dm.id, a.id, 999_999_999]) });
  t.same(r.messages.map((m: any) => [m.id, m.content]), [[a.id, '<p>one</p>'], [b.id, '<p>two</p>']], 'a direct message of others and a missing ID are left out');
  t.same([r.found_anchor, r.found_oldest, r.found_newest, r.history_limited, 'anchor' in r], [false, false, false, false, false]);
  t.ok(r.messages.every((m: any) => Array.isArray(m.flags)), 'with flags');
  const narrowed = await as.member.ok('GET', '/messages', { message_ids: JSON.stringify([a.id, b.id]), narrow: JSON.stringify([{ operator: 'search', operand: 'two' }]) });
  t.same(narrowed.messages.map((m: any) => m.id), [b.id], 'and the narrow still applies');
  t.equal((await as.admin.ok('GET', '/messages', { message_ids: JSON.stringify([dm.id]), num_before: 0, num_after: 0 })).messages.length, 1, 'zero before and after is no range');
  for (const extra of [{ anchor: 'newest' }, { num_before: 1 }, { num_after: 1 }, { use_first_unread_anchor: true }]) {
    t.equal(outcome(await as.member.call('GET', '/messages', { message_ids: JSON.stringify([a.id]), ...extra }), true), '400 BAD_REQUEST Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor', JSON.stringify(extra));
  }
  t.equal(outcome(await as.member.call('GET', '/messages', { anchor: 'newest', num_after: 0 }), true), "400 REQUEST_VARIABLE_MISSING Missing 'num_before' argument", 'a range still needs its bounds');
});

t.test('changelog - an edit reports the uploads it detaches (FL 285); edit history has no prev_rendered_content_version (FL 284)', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  const [kept, dropped, shared] = [await uploadAs(p, 'kept.txt', 'text/plain', Buffer.from('k')), await uploadAs(p, 'dropped.txt', 'text/plain', Buffer.from('d')), await uploadAs(p, 'shared.txt', 'text/plain', Buffer.from('s'))];
  const topic = uniq('fl285');
  const { id } = await api.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: `[a](${kept}) [b](${dropped}) [c](${shared})` });
  await api.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: `again [c](${shared})` });
  const edit = await api.ok('PATCH', `/messages/${id}`, { content: `only [a](${kept})` });
  const attachments = (await api.ok('GET', '/attachments')).attachments as any[];
  const droppedRow = attachments.find((a) => `/user_uploads/${a.path_id}` === dropped);
  t.same(edit.detached_uploads, [{ ...droppedRow, message_ids: [] }], 'only the upload no message links any more');
  t.same(droppedRow.message_ids, [], 'GET /attachments agrees');
  t.same((await api.ok('PATCH', `/messages/${id}`, { topic: uniq('moved'), propagate_mode: 'change_one' })).detached_uploads, [], 'a move detaches nothing');
  const history = (await api.ok('GET', `/messages/${id}`)).message.edit_history as any[];
  const contentEdit = history.find((h) => 'prev_content' in h);
  t.same(Object.keys(contentEdit).sort(), ['prev_content', 'prev_rendered_content', 'timestamp', 'user_id']);
});

t.test('changelog - presence since a number of days: history_limit_days and presence_history_limit_days (FL 288)', async (t) => {
  const [early, late] = [await newPerson(s), await newPerson(s)];
  await s.api.as(early).ok('POST', '/users/me/presence', { status: 'active' });
  await new Promise((r) => setTimeout(r, 1100));
  const all = await s.api.as(late).ok('POST', '/users/me/presence', { status: 'active', slim_presence: true });
  t.ok(String(early.userId) in all.presences, 'by default, the last 14 days');
  const today = await s.api.as(late).ok('POST', '/users/me/presence', { status: 'active', slim_presence: true, history_limit_days: 0 });
  t.notOk(String(early.userId) in today.presences, 'with 0 days, not someone last seen a second ago');
  t.ok(String(late.userId) in today.presences, 'but the caller, seen now');
  const reg = await s.api.as(late).ok('POST', '/register', { fetch_event_types: ['presence'], presence_history_limit_days: 0, slim_presence: true });
  t.notOk(String(early.userId) in reg.presences, 'the register takes it as presence_history_limit_days');
  t.ok(String(early.userId) in (await s.api.as(late).ok('POST', '/register', { fetch_event_types: ['presence'], slim_presence: true })).presences);
});

t.test('changelog - a deactivated user is in no group and no permission, and back on reactivation; who may not see them is told (FL 303)', async (t) => {
  const p = await newPerson(s);
  const { group_id } = await as.member.ok('POST', '/user_groups/create', { name: uniq('g303'), description: '', members: [p.userId, s.demo.member1.userId] });
  const anonymous = { direct_members: [p.userId, s.demo.member1.userId], direct_subgroups: [] };
  const before = (await as.owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_create_groups;
  t.teardown(() => as.owner.ok('PATCH', '/realm', { can_create_groups: JSON.stringify({ new: before }) }));
  await as.owner.ok('PATCH', '/realm', { can_create_groups: JSON.stringify({ new: anonymous }) });
  await as.member.ok('PATCH', `/user_groups/${group_id}`, { can_mention_group: JSON.stringify({ new: anonymous }) });
  const q = await register(as.admin, { fetch_event_types: ['realm', 'realm_user', 'realm_user_groups'], event_types: ['realm', 'realm_user', 'user_group'], client_capabilities: { include_deactivated_groups: true } });
  await as.owner.ok('DELETE', `/users/${p.userId}`);
  const seen: Array<Record<string, any>> = [];
  await waitFor(q, (e) => seen.push(e) > 0 && e.type === 'realm_user' && e.person.is_active === false);
  const fresh = await as.admin.ok('POST', '/register', { fetch_event_types: ['realm', 'realm_user', 'realm_user_groups'], client_capabilities: { include_deactivated_groups: true } });
  const only = { direct_members: [s.demo.member1.userId], direct_subgroups: [] };
  t.same(fresh.realm_can_create_groups, only, 'the organization permission leaves them out');
  const g = fresh.realm_user_groups.find((x: any) => x.id === group_id);
  t.same([g.members, g.can_mention_group], [[s.demo.member1.userId], only], "the group's members and permission leave them out");
  t.same((await as.member.ok('GET', `/user_groups/${group_id}/members`)).members, [s.demo.member1.userId]);
  t.equal(outcome(await as.member.call('POST', `/user_groups/${group_id}/members`, { delete: [p.userId] }), true), `400 BAD_REQUEST Invalid user ID: ${p.userId}`, 'nor removed from groups while deactivated');
  const snap = structuredClone(q.snapshot);
  for (const e of seen) applyEvent(snap, e);
  const pick = (x: any) => [x.realm_can_create_groups, x.realm_user_groups.find((y: any) => y.id === group_id)];
  t.same(pick(snap), pick(fresh), 'snapshot plus the deactivation event equals a fresh register');

  await as.owner.ok('POST', `/users/${p.userId}/reactivate`);
  const update = await waitFor(q, (e) => e.type === 'realm' && e.op === 'update_dict');
  t.same(update.data, { can_create_groups: { direct_members: [s.demo.member1.userId, p.userId].sort((x, y) => x - y), direct_subgroups: [] } }, 'reactivated: the permission names them again');
  t.same((await as.member.ok('GET', `/user_groups/${group_id}/members`)).members.sort(), [p.userId, s.demo.member1.userId].sort());
});

// Levels 393 to 435 (Zulip 11.0 and 12.0).

t.test('changelog - message_ids of update_message and delete_message events in increasing order (FL 393)', async (t) => {
  const channel = uniq('sorted');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  const { stream_id } = await as.owner.ok('GET', '/get_stream_id', { stream: channel });
  const q = await register(as.owner, { event_types: ['update_message', 'delete_message'], client_capabilities: { bulk_message_deletion: true } });
  const ids: number[] = [];
  for (const topic of ['a', 'b', 'a', 'b', 'a']) {
    const { id } = await as.owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: `in ${topic}` });
    if (topic === 'a') ids.push(id);
  }
  await as.owner.ok('PATCH', `/messages/${ids[2]}`, { topic: 'c', propagate_mode: 'change_all', send_notification_to_old_thread: false, send_notification_to_new_thread: false });
  const moved = await waitFor(q, (e) => e.type === 'update_message');
  t.same(moved.message_ids, ids, 'the moved messages, lowest first');
  await as.owner.ok('POST', `/streams/${stream_id}/delete_topic`, { topic_name: 'c' });
  const deleted = await waitFor(q, (e) => e.type === 'delete_message');
  t.same(deleted.message_ids, ids, 'the deleted messages, lowest first');
});

t.test('changelog - a Dropbox folder link is a plain link: this server makes no link previews (FL 395)', async (t) => {
  const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same([reg.server_inline_url_embed_preview, reg.realm_inline_url_embed_preview], [false, false], 'no open graph previews');
  const url = 'https://www.dropbox.com/sh/abc123/AAAxyz?dl=0';
  const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('dropbox'), content: url });
  const html = (await as.member.ok('GET', `/messages/${id}`)).message.content as string;
  t.match(html, /<a href="https:\/\/www\.dropbox\.com\/sh\/abc123\/AAAxyz\?dl=0"/, 'a plain link');
  t.notMatch(html, /message_inline_image|message_embed|<img|<iframe/, 'no album, image or embed markup');
});

/** Personal settings of levels 393-435, a value other than their default, and one each refuses. */
const SETTINGS_393: Array<[string, string | number | boolean, string | number | boolean]> = [
  ['web_left_sidebar_unreads_count_summary', false, 'x'], // FL 398
  ['web_channel_default_view', 4, 5], // FL 401: 4 is the top unread topic
  ['web_left_sidebar_show_channel_folders', false, 'x'], // FL 411
  ['web_inbox_show_channel_folders', false, 'x'], // FL 431
];

t.test('changelog - personal settings of levels 393-435 are taken by PATCH /settings and the organization defaults, and reported in the register', async (t) => {
  const p = s.api.as(await newPerson(s));
  const before = (await p.ok('POST', '/register', { fetch_event_types: ['user_settings'] })).user_settings;
  t.type(before.twenty_four_hour_time, 'boolean', 'twenty_four_hour_time is a boolean, a value of its boolean-or-null type (FL 408)');
  for (const [name, value, bad] of SETTINGS_393) {
    t.not(before[name], value, `${name} starts elsewhere`);
    t.equal(outcome(await p.call('PATCH', '/settings', { [name]: bad })), '400 BAD_REQUEST', `${name}: ${JSON.stringify(bad)} is refused`);
  }
  await p.ok('PATCH', '/settings', Object.fromEntries(SETTINGS_393.map(([name, value]) => [name, value])));
  const after = (await p.ok('POST', '/register', { fetch_event_types: ['user_settings'] })).user_settings;
  for (const [name, value] of SETTINGS_393) t.equal(after[name], value, `${name} is stored and reported`);
  const defaults = (await as.admin.ok('POST', '/register', { fetch_event_types: ['realm_user_settings_defaults'] })).realm_user_settings_defaults;
  t.teardown(() => as.admin.ok('PATCH', '/realm/user_settings_defaults', Object.fromEntries(SETTINGS_393.map(([name]) => [name, defaults[name]]))));
  t.equal(outcome(await as.member.call('PATCH', '/realm/user_settings_defaults', { web_inbox_show_channel_folders: false })), '400 UNAUTHORIZED_PRINCIPAL', 'a member may not change them');
  await as.admin.ok('PATCH', '/realm/user_settings_defaults', Object.fromEntries(SETTINGS_393.map(([name, value]) => [name, value])));
  const changed = (await as.member.ok('POST', '/register', { fetch_event_types: ['realm_user_settings_defaults'] })).realm_user_settings_defaults;
  for (const [name, value] of SETTINGS_393) t.equal(changed[name], value, `the default of ${name}`);
});

t.test('changelog - register keys of levels 393-435, and the ones Zulip removed', async (t) => {
  const reg = await as.member.ok('POST', '/register', {});
  t.same(reg.realm_incoming_webhook_bots, [], 'no incoming-webhook integrations, so none lacks url_options (FL 403)');
  t.same([reg.max_channel_folder_name_length, reg.max_channel_folder_description_length], [60, 1024], 'channel folder limits (FL 410)');
  t.notOk('realm_is_zephyr_mirror_realm' in reg, 'removed at FL 426');
  t.equal(reg.server_supported_permission_settings.stream.can_administer_channel_group.default_group_name, 'channel_creator', 'channel_creator, not stream_creator_or_nobody (FL 427)');
  t.notOk(JSON.stringify(reg.server_supported_permission_settings).includes('stream_creator_or_nobody'), 'the old name nowhere');
  t.same(reg.server_report_message_types.map((x: any) => x.key), ['spam', 'harassment', 'inappropriate', 'norms', 'other'], 'report reasons (FL 435)');
  t.ok(reg.server_report_message_types.every((x: any) => typeof x.name === 'string' && x.name.length > 0), 'each with its name');
});

t.test('changelog - include_subscribers partial: a channel of 250 subscribers or more gets partial_subscribers with its bots and who joined lately, a smaller one its complete list; peer events keep it exact (FL 412)', async (t) => {
  // 250 subscribers (the bound below which the API promises complete lists) in the private channel below,
  // 253 in the public one: the organization's active users and as many new ones as it lacks, 8 at a time.
  const active = ((await as.owner.ok('GET', '/users')).members as any[]).filter((u) => u.is_active).map((u) => u.user_id as number);
  const made: number[] = [];
  const tag = uniq('many');
  const lacking = 252 - active.length; // the bot below is the 253rd
  for (let i = 0; i < lacking; i += 8) {
    const batch = Array.from({ length: Math.min(8, lacking - i) }, (_, k) => i + k);
    made.push(...(await Promise.all(batch.map(async (k) => (await as.owner.ok('POST', '/users', { email: `${tag}-${k}@parley.example`, password: 'long enough pw', full_name: `Many ${tag} ${k}` })).user_id as number))));
  }
  const bot = (await as.member.ok('POST', '/bots', { full_name: 'Listed Bot', short_name: uniq('listed') })).user_id as number;
  const everyone = [...active, ...made, bot];
  const big = uniq('big');
  const small = uniq('small');
  const hidden = uniq('big-private');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: big }], principals: everyone });
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: small }], principals: [s.demo.member1.userId, bot] });
  // A private one the administrator, the member and the guest are not in.
  const outsiders = new Set([s.demo.admin.userId, s.demo.member1.userId, s.demo.guest.userId]);
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: hidden }], invite_only: true, principals: everyone.filter((id) => !outsiders.has(id)) });
  const id = async (name: string) => (await as.owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  const [bigId, smallId, hiddenId] = [await id(big), await id(small), await id(hidden)];
  const FETCH = { fetch_event_types: ['subscription'], event_types: ['subscription'], include_subscribers: 'partial', client_capabilities: { notification_settings_null: true } };
  const all = (snap: any) => [...snap.subscriptions, ...snap.unsubscribed, ...snap.never_subscribed];
  const pick = (snap: any, streamId: number) => all(snap).find((c: any) => c.stream_id === streamId);
  const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

  const reg = (await register(as.member, FETCH)).snapshot;
  const listed = pick(reg, bigId);
  t.equal(listed.subscribers, undefined, 'the large channel: no complete list');
  t.equal(listed.subscriber_count, everyone.length, 'its subscriber_count counts everyone');
  t.same(sorted(listed.partial_subscribers), sorted(everyone), 'its partial list: the bot, and everyone subscribed since the organization was loaded');
  t.same(sorted(pick(reg, smallId).subscribers), sorted([s.demo.member1.userId, bot]), 'a small channel: its complete list');
  t.equal(pick(reg, hiddenId), undefined, 'the member does not see the private channel');
  t.ok(all(reg).every((c: any) => ('subscribers' in c) !== ('partial_subscribers' in c)), 'every channel has one list or the other');
  const full = pick(await as.member.ok('POST', '/register', { fetch_event_types: ['subscription'], include_subscribers: true }), bigId);
  t.same([sorted(full.subscribers), full.partial_subscribers], [sorted(everyone), undefined], 'include_subscribers=true: the complete list');
  const listedGet = (await as.member.ok('GET', '/users/me/subscriptions', { include_subscribers: 'partial' })).subscriptions.find((c: any) => c.stream_id === bigId);
  t.same([sorted(listedGet.partial_subscribers), listedGet.subscribers], [sorted(listed.partial_subscribers), undefined], 'GET /users/me/subscriptions gives the same');
  const admin = pick((await register(as.admin, FETCH)).snapshot, hiddenId);
  t.same([admin.subscriber_count, admin.partial_subscribers?.length], [everyone.length - 3, everyone.length - 3], "the administrator sees the private channel's partial list without being in it");
  const guest = (await register(as.guest, FETCH)).snapshot;
  t.same(sorted(pick(guest, bigId).partial_subscribers), sorted(listed.partial_subscribers), 'the guest, subscribed, gets the same partial list');
  t.equal(pick(guest, hiddenId), undefined, 'the guest does not see the private channel');

  // Snapshot plus events equals a fresh register.
  const q = await register(as.member, FETCH);
  const newcomer = await newPerson(s);
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: big }], principals: [newcomer.userId] });
  await as.owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [big], principals: [bot, made[0] ?? s.demo.member2.userId] });
  await waitFor(q, (e) => {
    applyEvent(q.snapshot, e);
    return e.op === 'peer_remove' && e.stream_ids.includes(bigId);
  });
  const fresh = pick((await register(as.member, FETCH)).snapshot, bigId);
  const applied = pick(q.snapshot, bigId);
  t.same([sorted(applied.partial_subscribers), applied.subscriber_count], [sorted(fresh.partial_subscribers), fresh.subscriber_count], 'snapshot plus events equals a fresh register');
  t.ok(fresh.partial_subscribers.includes(newcomer.userId) && !fresh.partial_subscribers.includes(bot), 'the newcomer in, the bot out');
  t.equal(outcome(await as.member.call('GET', '/users/me/subscriptions', { include_subscribers: 'some' })), '400 BAD_REQUEST');
});

t.test('changelog - deactivating a user sends peer_remove for archived channels too (FL 428)', async (t) => {
  const person = await newPerson(s);
  const name = uniq('archived');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.owner.userId, person.userId] });
  const { stream_id } = await as.owner.ok('GET', '/get_stream_id', { stream: name });
  await as.owner.ok('DELETE', `/streams/${stream_id}`);
  const q = await register(as.owner, { event_types: ['subscription'], client_capabilities: { archived_channels: true } });
  await as.admin.ok('DELETE', `/users/${person.userId}`);
  t.match(await waitFor(q, (e) => e.op === 'peer_remove' && e.stream_ids.includes(stream_id)), { stream_ids: [stream_id], user_ids: [person.userId] });
});

t.test('changelog - is_imported_stub on every user object: false, as no import here makes stub users (FL 433)', async (t) => {
  t.equal((await as.member.ok('GET', '/users/me')).is_imported_stub, false, 'GET /users/me');
  t.equal((await as.member.ok('GET', `/users/${s.demo.owner.userId}`)).user.is_imported_stub, false, 'GET /users/{id}');
  t.equal((await as.member.ok('GET', `/users/${s.demo.owner.email}`)).user.is_imported_stub, false, 'GET /users/{email}');
  t.ok((await as.member.ok('GET', '/users')).members.every((u: any) => u.is_imported_stub === false), 'GET /users');
  const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  t.ok(reg.realm_users.every((u: any) => u.is_imported_stub === false), 'realm_users');
  t.ok(reg.cross_realm_bots.every((u: any) => u.is_imported_stub === false), 'cross_realm_bots');
  const q = await register(as.member, { event_types: ['realm_user'] });
  const person = await newPerson(s);
  t.match(await waitFor(q, (e) => e.op === 'add' && e.person.user_id === person.userId), { person: { is_imported_stub: false } }, 'realm_user add events');
});

// Levels 311 to 350.

t.test('changelog - every level from 311 to 350 has an entry', async (t) => {
  for (let level = 311; level <= 350; level++) t.ok(FEATURES.some((f) => f.level === level), `level ${level} has an entry`);
});

t.test('changelog - anonymous groups for create_multiuse_invite_group and can_access_all_users_group (FL 314)', async (t) => {
  const before = await as.owner.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.teardown(() => as.owner.ok('PATCH', '/realm', { create_multiuse_invite_group: { new: before.realm_create_multiuse_invite_group }, can_access_all_users_group: { new: before.realm_can_access_all_users_group } }));
  const anonymous = { direct_members: [s.demo.member1.userId], direct_subgroups: [GROUP.administrators] };
  await as.owner.ok('PATCH', '/realm', { create_multiuse_invite_group: { new: anonymous } });
  t.same((await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_create_multiuse_invite_group, anonymous, 'an anonymous group is taken and reported');
  t.equal(outcome(await as.member.call('POST', '/invites/multiuse', { invite_as: ROLE.member, stream_ids: [] })), 'ok', 'its direct member may create invitation links');
  t.equal(outcome(await s.api.as(s.demo.member2).call('POST', '/invites/multiuse', { invite_as: ROLE.member, stream_ids: [] })), '400 BAD_REQUEST', 'another member may not');
  // can_access_all_users_group must be one of two system groups: an anonymous group naming just one is that group.
  await as.owner.ok('PATCH', '/realm', { can_access_all_users_group: { new: { direct_members: [], direct_subgroups: [GROUP.members] } } });
  t.equal((await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_access_all_users_group, GROUP.members);
  t.equal(outcome(await as.owner.call('PATCH', '/realm', { can_access_all_users_group: { new: anonymous } })), '400 BAD_REQUEST', 'a group with members is refused');
});

t.test('changelog - register keys of levels 311-350, and the settings Zulip removed then', async (t) => {
  const reg = await as.member.ok('POST', '/register', {});
  t.same(reg.realm_incoming_webhook_bots, [], 'no incoming-webhook integrations here, so no config_options to give (FL 318)');
  for (const [group, settings] of Object.entries(reg.server_supported_permission_settings as Record<string, Record<string, object>>)) {
    for (const [name, config] of Object.entries(settings)) t.notOk('allow_owners_group' in config || 'id_field_name' in config, `${group}.${name} without allow_owners_group and id_field_name (FL 326)`);
  }
  t.equal(reg.realm_moderation_request_channel_id, -1, 'no moderation request channel by default (FL 331)');
  t.same([reg.server_min_deactivated_realm_deletion_days, reg.server_max_deactivated_realm_deletion_days], [14, null], 'FL 332');
  t.ok(Number.isSafeInteger(reg.password_max_length) && reg.password_max_length >= reg.password_min_length, 'password_max_length (FL 338)');
  t.notOk('can_subscribe_other_users' in reg, 'removed at FL 341 (can_add_subscribers_group decides)');
  for (const k of ['realm_can_add_subscribers_group', 'realm_can_invite_users_group', 'realm_can_create_bots_group', 'realm_can_create_write_only_bots_group', 'realm_can_move_messages_between_topics_group']) t.ok(k in reg, `${k} (FL 316, 321, 341, 344)`);
  for (const k of ['realm_edit_topic_policy', 'realm_invite_to_realm_policy', 'realm_invite_to_stream_policy', 'realm_bot_creation_policy']) t.notOk(k in reg, `${k} is gone, as from Zulip`);
  t.equal(reg.realm_enable_guest_user_dm_warning, true, 'FL 348, on by default');
  t.equal(reg.server_can_summarize_topics, false, 'no AI model on this server (FL 350)');
  t.equal(reg.realm_can_summarize_topics_group, GROUP.everyone, 'can_summarize_topics_group, Zulip\'s default (FL 350)');
  t.same([reg.user_settings.web_suggest_update_timezone, reg.user_settings.hide_ai_features], [true, false], 'FL 329, 350');
  // Policies Zulip replaced by group settings are not PATCH /realm parameters any more.
  const old = await as.owner.ok('PATCH', '/realm', { edit_topic_policy: 1, invite_to_realm_policy: 1, invite_to_stream_policy: 1, bot_creation_policy: 1 });
  t.same(old.ignored_parameters_unsupported, ['edit_topic_policy', 'invite_to_realm_policy', 'invite_to_stream_policy', 'bot_creation_policy'], 'FL 316, 321, 341, 344');
  // Personal settings: taken by PATCH /settings and reported.
  const p = s.api.as(await newPerson(s));
  t.equal(outcome(await p.call('PATCH', '/settings', { hide_ai_features: 'x' })), '400 BAD_REQUEST');
  await p.ok('PATCH', '/settings', { web_suggest_update_timezone: false, hide_ai_features: true });
  const mine = (await p.ok('POST', '/register', { fetch_event_types: ['user_settings'] })).user_settings;
  t.same([mine.web_suggest_update_timezone, mine.hide_ai_features], [false, true]);
});

t.test('changelog - moderation_request_channel_id (FL 331) and enable_guest_user_dm_warning (FL 348): administrators set them, with events; the channel is private', async (t) => {
  const q = await register(as.member, { event_types: ['realm'] });
  t.teardown(() => as.owner.ok('PATCH', '/realm', { moderation_request_channel_id: -1, enable_guest_user_dm_warning: true }));
  t.equal(outcome(await as.member.call('PATCH', '/realm', { enable_guest_user_dm_warning: false })), '400 UNAUTHORIZED_PRINCIPAL', 'members may not');
  t.equal(outcome(await as.moderator.call('PATCH', '/realm', { moderation_request_channel_id: -1 })), '400 UNAUTHORIZED_PRINCIPAL', 'moderators may not');
  await as.admin.ok('PATCH', '/realm', { enable_guest_user_dm_warning: false });
  t.match(await waitFor(q, (e) => e.type === 'realm' && e.property === 'enable_guest_user_dm_warning'), { op: 'update', value: false });
  const name = uniq('moderation');
  await as.admin.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], invite_only: true });
  const id = (await as.admin.ok('GET', '/get_stream_id', { stream: name })).stream_id;
  t.equal(outcome(await as.admin.call('PATCH', '/realm', { moderation_request_channel_id: 1 }), true), '400 BAD_REQUEST Moderation request channel must be private.');
  t.equal(outcome(await as.admin.call('PATCH', '/realm', { moderation_request_channel_id: 999_999 }), true), '400 BAD_REQUEST Invalid channel ID');
  const r = await as.admin.ok('PATCH', '/realm', { moderation_request_channel_id: id });
  t.equal(r.moderation_request_channel_id, id, 'the reply names it');
  t.match(await waitFor(q, (e) => e.type === 'realm' && e.property === 'moderation_request_channel_id'), { op: 'update', value: id });
  t.equal(outcome(await as.admin.call('PATCH', `/streams/${id}`, { is_private: false }), true), '400 BAD_REQUEST Moderation request channel must be private.', 'nor may it become public');
  const fresh = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same([fresh.realm_moderation_request_channel_id, fresh.realm_enable_guest_user_dm_warning], [id, false]);
  t.equal(outcome(await as.admin.call('POST', '/realm/deactivate', { deletion_delay_days: 30 }), true), '400 UNAUTHORIZED_PRINCIPAL Must be an organization owner', 'only owners deactivate the organization (FL 332)');
});

t.test('changelog - an incoming 1:1 direct message has the recipient_id of an outgoing one in the conversation (FL 327)', async (t) => {
  const p = await newPerson(s);
  const out = await as.member.ok('POST', '/messages', { type: 'direct', to: [p.userId], content: 'out' });
  const back = await s.api.as(p).ok('POST', '/messages', { type: 'direct', to: [s.demo.member1.userId], content: 'back' });
  const seen = async (api: Api, id: number) => (await api.ok('GET', `/messages/${id}`)).message.recipient_id;
  const ids = [await seen(as.member, out.id), await seen(as.member, back.id), await seen(s.api.as(p), out.id), await seen(s.api.as(p), back.id)];
  t.ok(ids.every((x) => x === ids[0]), `one recipient_id for the conversation, sent or received: ${ids}`);
});

t.test('changelog - the push bouncer\'s registration transfer endpoints are not served: this server is no bouncer (FL 345)', async (t) => {
  for (const path of ['/remotes/server/register/transfer', '/remotes/server/register/verify_challenge', '/zulip-services/verify/abc/']) {
    t.equal((await as.owner.call('POST', path, {})).status, 404, `POST ${path}`);
  }
});

t.test('changelog - metadata access to a private channel (FL 349): can_add_subscribers_group adds without being subscribed, a channel administrator removes others and sees it; stream delete events name stream_ids (FL 343)', async (t) => {
  const adder = await newPerson(s);
  const chanAdmin = await newPerson(s);
  const other = await newPerson(s);
  const name = uniq('meta');
  await as.owner.ok('POST', '/users/me/subscriptions', {
    subscriptions: [{ name }],
    invite_only: true,
    can_add_subscribers_group: { direct_members: [adder.userId], direct_subgroups: [] },
    can_administer_channel_group: { direct_members: [chanAdmin.userId], direct_subgroups: [] },
  });
  const id = (await as.owner.ok('GET', '/get_stream_id', { stream: name })).stream_id;
  const q = await register(s.api.as(chanAdmin), { event_types: ['stream', 'subscription'] });
  await s.api.as(adder).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [other.userId] });
  t.same((await as.owner.ok('GET', `/users/${other.userId}/subscriptions/${id}`)).is_subscribed, true, 'a member of can_add_subscribers_group added someone without being subscribed');
  t.match(await waitFor(q, (e) => e.type === 'subscription' && e.op === 'peer_add'), { stream_ids: [id], user_ids: [other.userId] }, 'the channel administrator, not subscribed, hears of it');
  const subs = await s.api.as(chanAdmin).ok('POST', '/register', { fetch_event_types: ['subscription'] });
  t.ok(subs.never_subscribed.some((c: any) => c.stream_id === id), 'the channel is in the channel administrator\'s never_subscribed');
  await s.api.as(chanAdmin).ok('DELETE', '/users/me/subscriptions', { subscriptions: [name], principals: [other.userId] });
  t.same((await as.owner.ok('GET', `/users/${other.userId}/subscriptions/${id}`)).is_subscribed, false, 'the channel administrator removed them without being an organization administrator');
  t.equal(outcome(await s.api.as(other).call('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [adder.userId] })), '400 BAD_REQUEST', 'someone else may not add');
  await s.api.as(chanAdmin).ok('DELETE', `/streams/${id}`);
  const gone = await waitFor(q, (e) => e.type === 'stream' && e.op === 'delete');
  t.same(gone.stream_ids, [id], 'stream_ids (FL 343), streams kept for older clients');
});

t.test('changelog - POST /calls/bigbluebutton/create with voice_only gives a join link; joining answers that BigBlueButton is not configured here (FL 337)', async (t) => {
  const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.notOk(Object.values(reg.realm_available_video_chat_providers).some((p: any) => p.name === 'BigBlueButton'), 'not offered to clients: no BigBlueButton server');
  for (const who of ['owner', 'member', 'guest'] as const) {
    const r = await as[who].ok('POST', '/calls/bigbluebutton/create', { meeting_name: 'standup', voice_only: true });
    t.match(r.url, /^\/calls\/bigbluebutton\/join\?bigbluebutton=[^&]+$/, `${who}: a join link`);
    const [data] = decodeURIComponent(r.url.split('=')[1]).split(':');
    t.match(JSON.parse(Buffer.from(data!, 'base64url').toString()), { name: 'standup', lock_settings_disable_cam: true, meeting_id: /^zulip-\d{12}$/ }, 'cameras off for a voice-only call');
  }
  t.equal(outcome(await as.member.call('POST', '/calls/bigbluebutton/create', { meeting_name: 'x', voice_only: 'maybe' })), '400 BAD_REQUEST', 'voice_only is JSON');
  t.equal(outcome(await as.member.call('POST', '/calls/bigbluebutton/create', {})), '400 REQUEST_VARIABLE_MISSING', 'meeting_name is required');
  t.equal(outcome(await new Api(s.api.base).call('POST', '/calls/bigbluebutton/create', { meeting_name: 'x' })), '401 UNAUTHORIZED');
  const { url } = await as.member.ok('POST', '/calls/bigbluebutton/create', { meeting_name: 'standup' });
  const join = await fetch(`${s.urls[0]}${url}`);
  t.same([join.status, await join.json()], [400, { result: 'error', msg: 'BigBlueButton is not configured.', code: 'BAD_REQUEST' }]);
});

// ---- levels 351-392 ----------------------------------------------------------

t.test('changelog - every level from 351 to 392 has an entry', async (t) => {
  for (let level = 351; level <= 392; level++) t.ok(FEATURES.some((f) => f.level === level), `level ${level} has an entry`);
});

t.test('changelog - content access through the groups of a private channel (FL 354): members of can_subscribe_group and can_add_subscribers_group read, react, edit and send without subscribing; nobody else does', async (t) => {
  const subscriber = await newPerson(s);
  const adder = await newPerson(s);
  const chanAdmin = await newPerson(s);
  const guest = await newPerson(s, ROLE.guest);
  const shared = uniq('content');
  const groups = {
    can_subscribe_group: { direct_members: [subscriber.userId, guest.userId], direct_subgroups: [] },
    can_add_subscribers_group: { direct_members: [adder.userId], direct_subgroups: [] },
    can_administer_channel_group: { direct_members: [chanAdmin.userId], direct_subgroups: [] },
  };
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: shared }], invite_only: true, history_public_to_subscribers: true, ...groups });
  const id = (await as.owner.ok('GET', '/get_stream_id', { stream: shared })).stream_id;
  const { id: first } = await as.owner.ok('POST', '/messages', { type: 'stream', to: id, topic: 'plans', content: 'before anyone joined' });
  const narrow = JSON.stringify([{ operator: 'channel', operand: id }]);
  for (const [who, p] of [['can_subscribe_group', subscriber], ['can_add_subscribers_group', adder]] as const) {
    const api = s.api.as(p);
    const page = await api.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow });
    t.ok(page.messages.some((m: any) => m.id === first && m.flags.includes('read') && m.flags.includes('historical')), `${who}: GET /messages narrowed to the channel gives its history`);
    t.equal((await api.ok('GET', `/messages/${first}`)).message.content, '<p>before anyone joined</p>', `${who}: GET /messages/{id}`);
    t.ok(Array.isArray((await api.ok('GET', `/messages/${first}/read_receipts`)).user_ids), `${who}: read receipts`);
    await api.ok('POST', `/messages/${first}/reactions`, { emoji_name: 'thumbs_up' });
    await api.ok('DELETE', `/messages/${first}/reactions`, { emoji_name: 'thumbs_up' });
    await api.ok('POST', '/messages/flags/narrow', { anchor: 'newest', num_before: 10, num_after: 0, narrow, op: 'add', flag: 'starred' });
    t.ok((await api.ok('GET', `/messages/${first}`)).message.flags.includes('starred'), `${who}: POST /messages/flags/narrow reaches it`);
    const { id: mine } = await api.ok('POST', '/messages', { type: 'stream', to: id, topic: 'plans', content: 'sent unsubscribed' });
    await api.ok('PATCH', `/messages/${mine}`, { content: 'edited unsubscribed' });
    t.equal((await as.owner.ok('GET', `/messages/${mine}`)).message.content, '<p>edited unsubscribed</p>', `${who}: sends and edits their own message`);
    await api.ok('POST', `/messages/${mine}/typing`, { op: 'start' });
    t.equal((await as.owner.ok('GET', `/users/${p.userId}/subscriptions/${id}`)).is_subscribed, false, `${who}: still not subscribed`);
  }
  // A channel administrator has metadata access only; organization administrators, other members and guests (whatever the groups say) none.
  const admin = s.api.as(chanAdmin);
  t.same((await admin.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow })).messages, [], 'channel administrator: sees the channel, reads none of it');
  t.equal(outcome(await admin.call('POST', '/messages', { type: 'stream', to: id, topic: 'plans', content: 'x' }), true), `400 BAD_REQUEST Not authorized to send to channel '${shared}'`, 'channel administrator: no send');
  for (const [who, api] of [['channel administrator', admin], ['admin', as.admin], ['member', as.member], ['guest in can_subscribe_group', s.api.as(guest)]] as const) {
    if (api !== admin) t.equal(outcome(await api.call('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow }), true), '400 BAD_NARROW Invalid narrow operator: unknown channel', `${who}: no narrow`);
    t.equal(outcome(await api.call('GET', `/messages/${first}`), true), '400 BAD_REQUEST Invalid message(s)', `${who}: no message`);
    t.equal(outcome(await api.call('GET', `/messages/${first}/read_receipts`)), '400 BAD_REQUEST', `${who}: no read receipts`);
    t.equal(outcome(await api.call('POST', `/messages/${first}/reactions`, { emoji_name: 'thumbs_up' })), '400 BAD_REQUEST', `${who}: no reaction`);
    if (api !== admin) t.equal(outcome(await api.call('POST', '/messages', { type: 'stream', to: id, topic: 'plans', content: 'x' })), '400 STREAM_DOES_NOT_EXIST', `${who}: no send`);
  }
  // Sending also needs can_send_message_group.
  await as.owner.ok('PATCH', `/streams/${id}`, { can_send_message_group: { new: { direct_members: [(await as.owner.ok('GET', '/users/me')).user_id], direct_subgroups: [] } } });
  t.equal(outcome(await s.api.as(subscriber).call('POST', '/messages', { type: 'stream', to: id, topic: 'plans', content: 'x' }), true), '400 BAD_REQUEST You do not have permission to post in this channel.');
  // A protected history is read by who received it only: the groups open nothing of it.
  const protectedName = uniq('protected');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: protectedName }], invite_only: true, history_public_to_subscribers: false, ...groups });
  const pid = (await as.owner.ok('GET', '/get_stream_id', { stream: protectedName })).stream_id;
  const { id: secret } = await as.owner.ok('POST', '/messages', { type: 'stream', to: pid, topic: 'plans', content: 'protected' });
  const reader = s.api.as(subscriber);
  t.same((await reader.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: JSON.stringify([{ operator: 'channel', operand: pid }]) })).messages, [], 'a protected history: the narrow is valid and empty');
  t.equal(outcome(await reader.call('GET', `/messages/${secret}`)), '400 BAD_REQUEST');
  t.equal(outcome(await reader.call('POST', '/messages', { type: 'stream', to: pid, topic: 'plans', content: 'x' })), '400 STREAM_DOES_NOT_EXIST', 'no send to a protected history without subscribing');
});

t.test('changelog - organization settings of levels 351-392: wildcard mentions by group (352), no Zoom (353), edit history visibility (358), topics_policy for mandatory_topics (392); snapshot plus events', async (t) => {
  const q = await register(as.member, { fetch_event_types: ['realm'] });
  const snap = structuredClone(q.snapshot);
  t.teardown(() => as.owner.ok('PATCH', '/realm', { can_mention_many_users_group: { new: GROUP.administrators }, message_edit_history_visibility_policy: 'all', topics_policy: 'allow_empty_topic' }));
  // 352: the policy is gone from PATCH /realm; the register's deprecated value is the nearest policy to the group.
  const removed = await as.owner.ok('PATCH', '/realm', { wildcard_mention_policy: 1, allow_edit_history: false, mandatory_topics: true });
  t.same(removed.ignored_parameters_unsupported, ['wildcard_mention_policy', 'allow_edit_history', 'mandatory_topics'], 'the removed parameters (FL 352, 358, 392) are ignored');
  for (const [group, policy] of [[GROUP.everyone, 1], [GROUP.members, 2], [GROUP.administrators, 5], [GROUP.nobody, 6]] as const) {
    await as.owner.ok('PATCH', '/realm', { can_mention_many_users_group: { new: group } });
    const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
    t.same([reg.realm_can_mention_many_users_group, reg.realm_wildcard_mention_policy], [group, policy], `group ${group}: realm_wildcard_mention_policy ${policy}`);
  }
  // 353: Zoom's server-to-server integration (ID 5) needs the server's Zoom account, which this server has not.
  const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.notOk(Object.values(reg.realm_available_video_chat_providers).some((p: any) => p.id === 5), 'not offered');
  t.equal(outcome(await as.owner.call('PATCH', '/realm', { video_chat_provider: 5 }), true), '400 BAD_REQUEST Invalid video_chat_provider 5');
  // 358: a policy of three values; allow_edit_history is derived from it.
  t.same([reg.realm_message_edit_history_visibility_policy, reg.realm_allow_edit_history], ['all', true]);
  for (const [role, api] of Object.entries(as)) {
    const r = await api.call('PATCH', '/realm', { message_edit_history_visibility_policy: 'moves' });
    t.equal(outcome(r), role === 'owner' || role === 'admin' ? 'ok' : role === 'anonymous' ? '401 UNAUTHORIZED' : '400 UNAUTHORIZED_PRINCIPAL', `${role} sets the edit history policy`);
  }
  t.equal(outcome(await as.owner.call('PATCH', '/realm', { message_edit_history_visibility_policy: 'some' })), '400 BAD_REQUEST', 'an unknown policy');
  await as.owner.ok('PATCH', '/realm', { message_edit_history_visibility_policy: 'none' });
  let now = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same([now.realm_message_edit_history_visibility_policy, now.realm_allow_edit_history], ['none', false]);
  // 392: mandatory_topics is topics_policy 'disable_empty_topic', and clients still reading it hear it change.
  t.equal(now.realm_mandatory_topics, false);
  await as.admin.ok('PATCH', '/realm', { topics_policy: 'disable_empty_topic' });
  now = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same([now.realm_topics_policy, now.realm_mandatory_topics], ['disable_empty_topic', true]);
  t.equal(now.realm_can_set_topics_policy_group, GROUP.members, 'can_set_topics_policy_group (FL 392)');
  await as.admin.ok('PATCH', '/realm', { topics_policy: 'allow_empty_topic' });
  const seen: string[] = [];
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    if (e.type === 'realm' && e.op === 'update') seen.push(`${e.property}=${e.value}`);
    return e.type === 'realm' && e.property === 'mandatory_topics' && e.value === false;
  });
  t.ok(seen.includes('message_edit_history_visibility_policy=none') && seen.includes('mandatory_topics=true'), seen.join(' '));
  const fresh = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  const realmKeys = (x: Record<string, any>) => Object.fromEntries(Object.entries(x).filter(([k]) => k.startsWith('realm_')));
  t.same(realmKeys(snap), realmKeys(fresh), 'snapshot plus events equals a fresh register');
});

t.test('changelog - message edit history by policy: all, moves only, none (FL 358)', async (t) => {
  t.teardown(() => as.owner.ok('PATCH', '/realm', { message_edit_history_visibility_policy: 'all' }));
  const topic = uniq('fl358');
  const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: 'first words' });
  await as.member.ok('PATCH', `/messages/${id}`, { content: 'second words' });
  await as.member.ok('PATCH', `/messages/${id}`, { topic: `${topic}-moved`, propagate_mode: 'change_one' });
  const read = async () => ({ history: (await as.moderator.ok('GET', `/messages/${id}/history`)).message_history, edits: (await as.moderator.ok('GET', `/messages/${id}`)).message.edit_history });
  const all = await read();
  t.equal(all.history.length, 3, 'all: the original, the edit and the move');
  t.equal(all.edits.length, 2);
  await as.owner.ok('PATCH', '/realm', { message_edit_history_visibility_policy: 'moves' });
  const moves = await read();
  t.same(moves.history.map((e: any) => [Boolean(e.prev_topic), 'prev_content' in e]), [[false, false], [true, false]], 'moves: the original and the move, no content edits');
  t.same(moves.edits.map((e: any) => ['prev_topic' in e, 'prev_content' in e]), [[true, false]], 'and edit_history on the message lists only the move');
  await as.owner.ok('PATCH', '/realm', { message_edit_history_visibility_policy: 'none' });
  t.equal(outcome(await as.moderator.call('GET', `/messages/${id}/history`), true), '400 BAD_REQUEST Message edit history is disabled in this organization');
  t.notOk('edit_history' in (await as.moderator.ok('GET', `/messages/${id}`)).message, 'none: no edit_history on the message');
  const fetched = (await as.member.ok('GET', '/messages', { anchor: id, num_before: 0, num_after: 0 })).messages[0];
  t.ok(fetched.last_edit_timestamp && fetched.last_moved_timestamp && !('edit_history' in fetched), 'GET /messages too; the edit and move timestamps stay');
});

t.test('changelog - prev_content_sha256 refuses an edit of content that changed meanwhile (FL 379)', async (t) => {
  const sha = (text: string) => createHash('sha256').update(text).digest('hex');
  const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('fl379'), content: 'Init message' });
  const first = await as.member.ok('PATCH', `/messages/${id}`, { content: 'First user edit', prev_content_sha256: sha('Init message') });
  t.notOk(first.ignored_parameters_unsupported, 'the parameter is taken');
  t.equal(outcome(await as.member.call('PATCH', `/messages/${id}`, { content: 'Second user edit', prev_content_sha256: sha('Init message') }), true), "400 EXPECTATION_MISMATCH 'prev_content_sha256' value does not match the expected value.");
  t.equal((await as.member.ok('GET', `/messages/${id}`)).raw_content, 'First user edit', 'the stale edit changed nothing');
  await as.member.ok('PATCH', `/messages/${id}`, { content: 'Second user edit', prev_content_sha256: sha('First user edit') });
  t.equal((await as.member.ok('GET', `/messages/${id}`)).raw_content, 'Second user edit');
});

t.test('changelog - register fields of levels 351-392: is_moderator for administrators (380), dense_mode gone (364), navigation_tour_video_url (369)', async (t) => {
  for (const [role, expected] of [['owner', true], ['admin', true], ['moderator', true], ['member', false], ['guest', false]] as const) {
    const reg = await as[role].ok('POST', '/register', { fetch_event_types: ['realm_user'] });
    t.equal(reg.is_moderator, expected, `${role}: is_moderator ${expected}`);
  }
  const p = await newPerson(s);
  const q = await register(s.api.as(p), { fetch_event_types: ['realm_user'] });
  const snap = structuredClone(q.snapshot);
  await as.owner.ok('PATCH', `/users/${p.userId}`, { role: ROLE.admin });
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    return e.type === 'realm_user' && e.person?.role === ROLE.admin;
  });
  t.same([snap.is_moderator, snap.is_admin], [true, true], 'a member made administrator: is_moderator follows the role event');
  const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['user_settings', 'realm_user_settings_defaults', 'onboarding_steps'] });
  t.notOk('dense_mode' in reg.user_settings || 'dense_mode' in reg.realm_user_settings_defaults, 'dense_mode removed (FL 364)');
  t.same((await as.member.ok('PATCH', '/settings', { dense_mode: true })).ignored_parameters_unsupported, ['dense_mode']);
  t.same((await as.admin.ok('PATCH', '/realm/user_settings_defaults', { dense_mode: true })).ignored_parameters_unsupported, ['dense_mode']);
  t.equal(reg.navigation_tour_video_url, null, 'no navigation tour video on this server (FL 369)');
});

t.test('changelog - subscriber_count on channel and subscription objects: active subscribers, kept by peer events; snapshot plus events equals a fresh register (FL 394)', async (t) => {
  const [a, b] = [await newPerson(s), await newPerson(s)];
  const name = uniq('counted');
  const FETCH = { fetch_event_types: ['stream', 'subscription'], event_types: ['stream', 'subscription'], include_subscribers: false };
  const watcher = await register(as.moderator, FETCH);
  const snap = structuredClone(watcher.snapshot);
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.owner.userId, a.userId, b.userId] });
  const { stream_id } = await as.owner.ok('GET', '/get_stream_id', { stream: name });
  t.equal((await as.member.ok('GET', `/streams/${stream_id}`)).stream.subscriber_count, 3, 'GET /streams/{id}');
  t.equal((await as.member.ok('GET', '/streams')).streams.find((c: any) => c.stream_id === stream_id).subscriber_count, 3, 'GET /streams');
  await s.api.as(a).ok('DELETE', '/users/me/subscriptions', { subscriptions: [name] });
  await as.admin.ok('DELETE', `/users/${b.userId}`);
  await as.moderator.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const fresh = (await register(as.moderator, FETCH)).snapshot;
  const count = (list: any[]) => list.find((c) => c.stream_id === stream_id)?.subscriber_count;
  t.equal(count(fresh.subscriptions), 2, 'the owner and the moderator: the one who left and the deactivated one do not count');
  t.equal(count(fresh.streams), 2);
  const drained = await poll(watcher, { dontBlock: true });
  for (const e of drained) applyEvent(snap, e);
  t.same(snap.subscriptions.map((c: any) => [c.stream_id, c.subscriber_count]), fresh.subscriptions.map((c: any) => [c.stream_id, c.subscriber_count]), 'subscriptions: snapshot plus events');
  t.same(snap.streams.map((c: any) => [c.stream_id, c.subscriber_count]), fresh.streams.map((c: any) => [c.stream_id, c.subscriber_count]), 'streams: snapshot plus events');
  t.same(snap.never_subscribed.map((c: any) => [c.stream_id, c.subscriber_count]), fresh.never_subscribed.map((c: any) => [c.stream_id, c.subscriber_count]), 'never_subscribed: snapshot plus events');
});

t.test('changelog - channel permissions to move messages (FL 396) and resolve topics (FL 402), for every role; stream update events', async (t) => {
  const realm = await as.owner.ok('POST', '/register', { fetch_event_types: ['realm'] });
  const REALM = ['can_move_messages_between_topics_group', 'can_move_messages_between_channels_group', 'can_resolve_topics_group'];
  t.teardown(() => as.owner.ok('PATCH', '/realm', Object.fromEntries(REALM.map((k) => [k, { new: realm[`realm_${k}`] }]))));
  await as.owner.ok('PATCH', '/realm', Object.fromEntries(REALM.map((k) => [k, { new: GROUP.nobody }])));
  const guest = await newPerson(s, ROLE.guest, 'Mover');
  const who = { admin: as.admin, moderator: as.moderator, member: as.member, guest: s.api.as(guest) };
  const name = uniq('moves');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.owner.userId, s.demo.admin.userId, s.demo.moderator.userId, s.demo.member1.userId, guest.userId] });
  const { stream_id } = await as.owner.ok('GET', '/get_stream_id', { stream: name });
  const created = (await as.owner.ok('GET', `/streams/${stream_id}`)).stream;
  t.same([created.can_move_messages_within_channel_group, created.can_move_messages_out_of_channel_group, created.can_resolve_topics_group], [GROUP.nobody, GROUP.nobody, GROUP.nobody], 'nobody by default');
  const q = await register(as.member, { fetch_event_types: ['stream'], event_types: ['stream'] });
  const snap = structuredClone(q.snapshot);
  /** Each role's outcome of one change to a message of its own. */
  const tryAll = async (change: (topic: string) => Record<string, unknown>) => {
    const out: Record<string, string> = {};
    for (const [role, api] of Object.entries(who)) {
      const topic = uniq(role);
      const { id } = await api.ok('POST', '/messages', { type: 'stream', to: name, topic, content: 'x' });
      out[role] = outcome(await api.call('PATCH', `/messages/${id}`, { ...change(topic), send_notification_to_old_thread: false, send_notification_to_new_thread: false }), true).replace(/^400 BAD_REQUEST /, '');
    }
    return out;
  };
  const rename = (topic: string) => ({ topic: `${topic} renamed` });
  const resolve = (topic: string) => ({ topic: `✔ ${topic}` });
  const out = () => ({ stream_id: 1 });
  const edit = "You don't have permission to edit this message";
  const resolveRefused = "You don't have permission to resolve topics in this channel.";
  const move = "You don't have permission to move this message";
  t.same(await tryAll(rename), { admin: 'ok', moderator: edit, member: edit, guest: edit }, 'nobody may rename topics but administrators');
  t.same(await tryAll(resolve), { admin: resolveRefused, moderator: resolveRefused, member: resolveRefused, guest: resolveRefused }, 'nor resolve them');
  t.same(await tryAll(out), { admin: 'ok', moderator: move, member: move, guest: move }, 'nor move them out');
  t.equal(outcome(await as.member.call('PATCH', `/streams/${stream_id}`, { can_move_messages_within_channel_group: { new: GROUP.members } })), '400 BAD_REQUEST', 'a member does not administer the channel');
  await as.owner.ok('PATCH', `/streams/${stream_id}`, { can_move_messages_within_channel_group: { new: GROUP.members }, can_resolve_topics_group: { new: GROUP.everyone }, can_move_messages_out_of_channel_group: { new: GROUP.moderators } });
  t.same(await tryAll(rename), { admin: 'ok', moderator: 'ok', member: 'ok', guest: edit }, 'members of can_move_messages_within_channel_group rename topics');
  t.same(await tryAll(resolve), { admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok' }, 'members of can_resolve_topics_group resolve them');
  t.same(await tryAll(out), { admin: 'ok', moderator: 'ok', member: move, guest: move }, 'members of can_move_messages_out_of_channel_group move messages out');
  const changed = (await as.member.ok('GET', `/streams/${stream_id}`)).stream;
  t.same([changed.can_move_messages_within_channel_group, changed.can_move_messages_out_of_channel_group, changed.can_resolve_topics_group], [GROUP.members, GROUP.moderators, GROUP.everyone]);
  for (let i = 0; i < 3; i++) applyEvent(snap, await waitFor(q, (e) => e.type === 'stream' && e.op === 'update' && e.stream_id === stream_id));
  const fresh = (await register(as.member, { fetch_event_types: ['stream'] })).snapshot;
  const perms = (list: any[]) => {
    const c = list.find((x) => x.stream_id === stream_id);
    return [c.can_move_messages_within_channel_group, c.can_move_messages_out_of_channel_group, c.can_resolve_topics_group];
  };
  t.same(perms(snap.streams), perms(fresh.streams), 'snapshot plus stream update events equals a fresh register');
  const other = uniq('set-at-creation');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: other }], can_resolve_topics_group: GROUP.members, can_move_messages_within_channel_group: GROUP.moderators });
  const made = (await as.owner.ok('GET', '/streams/' + (await as.owner.ok('GET', '/get_stream_id', { stream: other })).stream_id)).stream;
  t.same([made.can_resolve_topics_group, made.can_move_messages_within_channel_group, made.can_move_messages_out_of_channel_group], [GROUP.members, GROUP.moderators, GROUP.nobody], 'set when the channel is created');
});

t.test('changelog - POST /users/{user_id}/status by administrators (FL 407), for every role', async (t) => {
  const person = await newPerson(s);
  const q = await register(as.member, { event_types: ['user_status'] });
  const outcomes = await asEveryone(s, 'POST', `/users/${person.userId}/status`, (who) => ({ status_text: `set by ${who}` }), true);
  t.same(outcomes, {
    owner: 'ok',
    admin: 'ok',
    moderator: '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator',
    member: '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator',
    guest: '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator',
    bot: '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator',
    anonymous: '401 UNAUTHORIZED Missing authorization header for basic auth',
  });
  t.same((await as.member.ok('GET', `/users/${person.userId}/status`)).status, { status_text: 'set by admin' }, 'the last administrator\'s text');
  t.match(await waitFor(q, (e) => e.type === 'user_status' && e.user_id === person.userId && e.status_text === 'set by admin'), { emoji_name: undefined }, 'everyone hears of it');
  await as.admin.ok('POST', `/users/${person.userId}/status`, { emoji_name: 'car' });
  t.same((await as.member.ok('GET', `/users/${person.userId}/status`)).status, { status_text: 'set by admin', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' });
  t.equal(outcome(await as.admin.call('POST', '/users/987654/status', { status_text: 'x' }), true), '400 BAD_REQUEST No such user');
  t.equal(outcome(await as.admin.call('POST', `/users/${person.userId}/status`, {}), true), '400 BAD_REQUEST Client did not pass any new values.');
});

t.test('changelog - can_set_delete_message_policy_group decides who sets a channel\'s deletion permissions (FL 407)', async (t) => {
  const before = (await as.owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_set_delete_message_policy_group;
  t.equal(before, GROUP.moderators, "Zulip's default: moderators");
  t.teardown(() => as.owner.ok('PATCH', '/realm', { can_set_delete_message_policy_group: { new: before } }));
  const mine = uniq('member-made');
  await as.member.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: mine }] });
  const { stream_id } = await as.member.ok('GET', '/get_stream_id', { stream: mine });
  t.equal(outcome(await as.member.call('PATCH', `/streams/${stream_id}`, { can_delete_any_message_group: { new: GROUP.members } }), true), '400 BAD_REQUEST Insufficient permission', 'the channel\'s administrator, but not a moderator');
  t.equal(outcome(await as.member.call('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('refused') }], can_delete_own_message_group: GROUP.members }), true), '400 BAD_REQUEST Insufficient permission', 'nor when creating a channel');
  await as.member.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('nobody') }], can_delete_own_message_group: GROUP.nobody });
  await as.moderator.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('moderated') }], can_delete_own_message_group: GROUP.members });
  await as.owner.ok('PATCH', '/realm', { can_set_delete_message_policy_group: { new: GROUP.members } });
  await as.member.ok('PATCH', `/streams/${stream_id}`, { can_delete_any_message_group: { new: GROUP.members } });
  t.equal((await as.member.ok('GET', `/streams/${stream_id}`)).stream.can_delete_any_message_group, GROUP.members, 'members may, once the organization allows them');
});

t.test('changelog - Notification Bot tells users someone else subscribed them: send_new_subscription_messages, new_subscription_messages_sent, max_bulk_new_subscription_messages (FL 397)', async (t) => {
  t.equal((await as.member.ok('POST', '/register', {})).max_bulk_new_subscription_messages, 100, "Zulip's limit");
  const person = await newPerson(s);
  const q = await register(s.api.as(person), { event_types: ['message'] });
  const [made, quiet, told, also] = [uniq('made'), uniq('quiet'), uniq('told'), uniq('also')];
  for (const name of [quiet, told, also]) await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const created = await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: made }], principals: [s.demo.owner.userId, person.userId] });
  t.equal(created.new_subscription_messages_sent, true, 'asked for by default');
  const off = await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: quiet }], principals: [person.userId], send_new_subscription_messages: false });
  t.notOk('new_subscription_messages_sent' in off, 'not asked for: not reported');
  const on = await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: told }, { name: also }], principals: [person.userId, s.demo.bot.userId], send_new_subscription_messages: true });
  t.equal(on.new_subscription_messages_sent, true);
  const dm = await waitFor(q, (e) => e.type === 'message' && e.message.type === 'private');
  t.equal(dm.message.sender_email, 'notification-bot@zulip.com', 'from Notification Bot');
  t.notMatch(dm.message.content, new RegExp(`${made}|${quiet}`), 'nothing about the channel the request created, nor when asked not to');
  t.match(dm.message.content, new RegExp(`subscribed you to the following channels:[\\s\\S]*${also}[\\s\\S]*${told}`), 'the channels, in one message');
  t.match(dm.message.content, new RegExp(`${s.demo.owner.userId}`), 'naming who did it');
  t.same(await poll(q, { dontBlock: true }), [], 'one message, and none to the one who subscribed');
  const single = uniq('single');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: single }] });
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: single }], principals: [person.userId] });
  const one = await waitFor(q, (e) => e.type === 'message');
  t.match(one.message.content, new RegExp(`^@_\\*\\*[^*]+\\|${s.demo.owner.userId}\\*\\* subscribed you to #\\*\\*${single}\\*\\*\\.$`), 'one channel: named in the sentence, the subscriber mentioned silently');
});

t.test('changelog - a topic link follows the topic with its latest message (FL 400)', async (t) => {
  const topic = uniq('latest');
  const first = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: 'first' });
  const latest = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: 'latest' });
  const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('elsewhere'), content: `see #**general>${topic}**` });
  const html = (await as.member.ok('GET', `/messages/${id}`)).message.content as string;
  t.match(html, new RegExp(`class="stream-topic"[^>]*href="[^"]*/with/${latest.id}"`), 'with/<the latest message>');
  t.notMatch(html, new RegExp(`/with/${first.id}"`), 'not the first');
});

t.test('changelog - behaviour of levels 359-392: bot owners (359), archived channels (360, 362), edit and move timestamps (365), is:muted (366), resolving (367), the empty topic (370, 372), deactivation (377), settings (383), spectators (387), deactivated groups (391), channel topics_policy (392)', async (t) => {
  const channel = uniq('fl360');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [s.demo.owner.userId, s.demo.member1.userId] });
  const { stream_id: channelId } = await as.owner.ok('GET', '/get_stream_id', { stream: channel });
  // 359: a bot given to a new owner keeps its channels.
  const bot = (await as.member.ok('POST', '/bots', { full_name: 'Keeper Bot', short_name: uniq('keeper') })).user_id;
  await as.member.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [bot] });
  await as.admin.ok('PATCH', `/bots/${bot}`, { bot_owner_id: s.demo.member2.userId });
  t.ok((await as.owner.ok('GET', `/streams/${channelId}/members`)).subscribers.includes(bot), 'the new owner is not subscribed, the bot stays (FL 359)');
  // 365: a move alone sets last_moved_timestamp, not last_edit_timestamp.
  const topic = uniq('t');
  const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'before' });
  await as.member.ok('PATCH', `/messages/${id}`, { topic: `${topic}-moved` });
  let m = (await as.member.ok('GET', `/messages/${id}`)).message;
  t.ok(m.last_moved_timestamp > 0 && !('last_edit_timestamp' in m), 'moved only (FL 365)');
  await as.member.ok('PATCH', `/messages/${id}`, { content: 'after' });
  m = (await as.member.ok('GET', `/messages/${id}`)).message;
  t.ok(m.last_edit_timestamp >= m.last_moved_timestamp, 'edited too');
  // 366: is:muted matches a muted channel's messages.
  const other = await as.owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: uniq('m'), content: 'in a muted channel' });
  await as.member.ok('POST', '/users/me/subscriptions/properties', { subscription_data: [{ stream_id: channelId, property: 'is_muted', value: true }] });
  const muted = await as.member.ok('GET', '/messages', { anchor: 'newest', num_before: 20, num_after: 0, narrow: [{ operator: 'is', operand: 'muted' }] });
  t.ok(muted.messages.some((x: any) => x.id === other.id), 'is:muted (FL 366)');
  await as.member.ok('POST', '/users/me/subscriptions/properties', { subscription_data: [{ stream_id: channelId, property: 'is_muted', value: false }] });
  // 367: resolving is can_resolve_topics_group's, for administrators too; moving is not.
  t.teardown(() => as.owner.ok('PATCH', '/realm', { can_resolve_topics_group: { new: GROUP.everyone } }));
  await as.owner.ok('PATCH', '/realm', { can_resolve_topics_group: { new: GROUP.nobody } });
  for (const who of ['owner', 'member'] as const) {
    t.equal(outcome(await as[who].call('PATCH', `/messages/${other.id}`, { topic: `✔ ${(await as.owner.ok('GET', `/messages/${other.id}`)).message.subject}` }), true), "400 BAD_REQUEST You don't have permission to resolve topics in this channel.", `${who} may not resolve (FL 367)`);
  }
  await as.member.ok('PATCH', `/messages/${other.id}`, { topic: uniq('renamed') });
  await as.owner.ok('PATCH', '/realm', { can_resolve_topics_group: { new: GROUP.members } });
  const subject = (await as.owner.ok('GET', `/messages/${other.id}`)).message.subject;
  await as.member.ok('PATCH', `/messages/${other.id}`, { topic: `✔ ${subject}` });
  t.equal(outcome(await as.guest.call('PATCH', `/messages/${other.id}`, { topic: subject })), '400 BAD_REQUEST', 'a guest, outside role:members, may not unresolve');
  await as.member.ok('PATCH', `/messages/${other.id}`, { topic: subject });
  // 370, 372: '(no topic)' is the empty topic in scheduled messages and typing notices.
  const sm = await as.member.ok('POST', '/scheduled_messages', { type: 'stream', to: channelId, topic: '(no topic)', content: 'later', scheduled_delivery_timestamp: Math.floor(Date.now() / 1000) + 3600 });
  t.teardown(() => as.member.call('DELETE', `/scheduled_messages/${sm.scheduled_message_id}`));
  t.equal((await as.member.ok('GET', '/scheduled_messages')).scheduled_messages.find((x: any) => x.scheduled_message_id === sm.scheduled_message_id).topic, '', 'scheduled (FL 370)');
  const typing = await register(as.owner, { event_types: ['typing'], client_capabilities: { stream_typing_notifications: true, empty_topic_name: true } });
  await as.member.ok('POST', '/typing', { type: 'stream', op: 'start', stream_id: channelId, topic: '(no topic)' });
  t.equal((await waitFor(typing, (e) => e.type === 'typing')).topic, '', 'typing (FL 372)');
  await as.member.ok('POST', '/typing', { type: 'stream', op: 'stop', stream_id: channelId, topic: '' });
  // 360, 362: an archived channel's messages stay readable; its subscribers and privacy can change.
  const msg = await as.owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'last', content: 'before archiving' });
  await as.owner.ok('DELETE', `/streams/${channelId}`);
  t.equal((await as.member.ok('GET', `/messages/${msg.id}`)).message.content, '<p>before archiving</p>', 'GET /messages/{id} in an archived channel (FL 360)');
  t.ok(Array.isArray((await as.member.ok('GET', `/messages/${msg.id}/read_receipts`)).user_ids), 'and its read receipts');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [s.demo.moderator.userId] });
  t.equal((await as.owner.ok('GET', `/users/${s.demo.moderator.userId}/subscriptions/${channelId}`)).is_subscribed, true, 'subscribed to an archived channel (FL 362)');
  await as.owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [channel], principals: [s.demo.moderator.userId] });
  await as.owner.ok('PATCH', `/streams/${channelId}`, { is_private: true });
  t.equal((await as.owner.ok('GET', `/streams/${channelId}`)).stream.invite_only, true, 'made private while archived');
  await as.owner.ok('PATCH', `/streams/${channelId}`, { is_private: false });
  const never = await as.moderator.ok('POST', '/register', { fetch_event_types: ['subscription'], client_capabilities: { archived_channels: true } });
  t.ok(never.unsubscribed.concat(never.never_subscribed).some((c: any) => c.stream_id === channelId), 'never_subscribed (or unsubscribed) lists it with archived_channels');
  // 377: a deactivated user's channels' subscribers hear peer_remove.
  const leaver = await newPerson(s);
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: 'general' }], principals: [leaver.userId] });
  const peers = await register(as.member, { event_types: ['subscription'] });
  await as.owner.ok('DELETE', `/users/${leaver.userId}`);
  t.match(await waitFor(peers, (e) => e.op === 'peer_remove' && e.user_ids.includes(leaver.userId)), { stream_ids: [1] }, 'peer_remove on deactivation (FL 377)');
  // 383: the list of topics as a channel's default view.
  await as.member.ok('PATCH', '/settings', { web_channel_default_view: 3 });
  t.equal((await as.member.ok('POST', '/register', { fetch_event_types: ['user_settings'] })).user_settings.web_channel_default_view, 3, 'web_channel_default_view 3 (FL 383)');
  await as.member.ok('PATCH', '/settings', { web_channel_default_view: 1 });
  // 387: without web-public access, GET /users needs credentials.
  t.equal(outcome(await new Api(s.api.base).call('GET', '/users')), '401 UNAUTHORIZED', 'GET /users without credentials (FL 387)');
  // 391: a deactivated group's members and subgroups still change.
  const group = (await as.member.ok('POST', '/user_groups/create', { name: uniq('dormant'), description: '', members: [s.demo.member1.userId] })).group_id;
  const sub = (await as.member.ok('POST', '/user_groups/create', { name: uniq('dormant-sub'), description: '', members: [s.demo.member1.userId] })).group_id;
  await as.member.ok('POST', `/user_groups/${group}/deactivate`);
  await as.member.ok('POST', `/user_groups/${group}/members`, { add: [s.demo.member2.userId] });
  await as.member.ok('POST', `/user_groups/${group}/subgroups`, { add: [sub] });
  t.same((await as.member.ok('GET', `/user_groups/${group}/members`, { direct_member_only: true })).members.sort(), [s.demo.member1.userId, s.demo.member2.userId].sort(), 'members of a deactivated group (FL 391)');
  t.same((await as.member.ok('GET', `/user_groups/${group}/subgroups`, { direct_subgroup_only: true })).subgroups, [sub], 'and its subgroups');
  // 392: a channel's topics_policy is for administrators and can_set_topics_policy_group.
  t.teardown(() => as.owner.ok('PATCH', '/realm', { can_set_topics_policy_group: { new: GROUP.members } }));
  await as.owner.ok('PATCH', '/realm', { can_set_topics_policy_group: { new: GROUP.nobody } });
  const own = uniq('own');
  await as.member.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: own }] });
  const { stream_id: ownId } = await as.member.ok('GET', '/get_stream_id', { stream: own });
  t.equal(outcome(await as.member.call('PATCH', `/streams/${ownId}`, { topics_policy: 'disable_empty_topic' }), true), '400 BAD_REQUEST Insufficient permission', "a member outside the group, though administering the channel (FL 392)");
  t.equal(outcome(await as.member.call('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('tp') }], topics_policy: 'disable_empty_topic' }), true), '400 BAD_REQUEST Insufficient permission', 'nor on creation');
  await as.admin.ok('PATCH', '/streams/1', { topics_policy: 'disable_empty_topic' });
  t.equal((await as.member.ok('GET', '/streams/1')).stream.topics_policy, 'disable_empty_topic', 'an administrator may, whatever the group');
  t.equal(outcome(await as.member.call('POST', '/messages', { type: 'stream', to: 'general', topic: '', content: 'x' }), true), '400 BAD_REQUEST Sending messages to the general chat is not allowed in this channel.', 'and the policy holds');
  await as.admin.ok('PATCH', '/streams/1', { topics_policy: 'inherit' });
});

t.test('changelog - POST /users/me/subscriptions puts the channels it creates in a folder: folder_id (FL 389)', async (t) => {
  const folder = (await as.admin.ok('POST', '/channel_folders/create', { name: uniq('F'), description: '' })).channel_folder_id;
  const q = await register(as.member, { event_types: ['stream'] });
  const name = uniq('foldered');
  await as.member.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], folder_id: folder });
  const { stream_id } = await as.member.ok('GET', '/get_stream_id', { stream: name });
  t.equal((await as.member.ok('GET', `/streams/${stream_id}`)).stream.folder_id, folder, 'in the folder');
  t.equal((await waitFor(q, (e) => e.type === 'stream' && e.op === 'create')).streams[0].folder_id, folder, 'and the create event says so');
  t.equal(outcome(await as.member.call('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('nofolder') }], folder_id: 999_999 }), true), '400 BAD_REQUEST Invalid channel folder ID');
  t.equal((await as.member.ok('GET', `/streams/${(await as.member.ok('GET', '/get_stream_id', { stream: 'general' })).stream_id}`)).stream.folder_id, null, 'others stay outside folders');
});

t.test('changelog - POST /realm/test_welcome_bot_custom_message: Welcome Bot sends the administrator the text (FL 416), for every role', async (t) => {
  const q = await register(as.admin, { event_types: ['message'] });
  const text = `Welcome! ${uniq('custom')}`;
  const outcomes = await asEveryone(s, 'POST', '/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: text }, true);
  const refused = '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator';
  t.same(outcomes, { owner: 'ok', admin: 'ok', moderator: refused, member: refused, guest: refused, bot: refused, anonymous: '401 UNAUTHORIZED Missing authorization header for basic auth' });
  const { message_id } = await as.admin.ok('POST', '/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: text });
  const got = await waitFor(q, (e) => e.type === 'message' && e.message.id === message_id);
  t.same([got.message.sender_email, got.message.type, got.message.content], ['welcome-bot@zulip.com', 'private', text], 'the text alone, from Welcome Bot, to the administrator');
  t.equal(outcome(await as.admin.call('POST', '/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: '' }), true), '400 BAD_REQUEST Message must not be empty');
  t.equal(outcome(await as.admin.call('POST', '/realm/test_welcome_bot_custom_message', { welcome_message_custom_text: 'x'.repeat(8001) })), '400 BAD_REQUEST', 'at most 8000 characters');
});

t.test('changelog - POST /channels/create makes one channel with its subscribers and answers its id; an existing name is 409 (FL 417), for every role', async (t) => {
  const names: Record<string, string> = {};
  const outcomes = await asEveryone(s, 'POST', '/channels/create', (who) => ({ name: (names[who] = uniq(`made-${who}`)), subscribers: [] }), true);
  t.same(outcomes, { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: '400 BAD_REQUEST Not allowed for guest users', bot: 'ok', anonymous: '401 UNAUTHORIZED Missing authorization header for basic auth' });
  for (const who of ['owner', 'bot'] as const) {
    const c = (await as.owner.ok('GET', '/streams', {})).streams.find((x: any) => x.name === names[who]);
    t.same([c?.invite_only, c?.subscriber_count], [false, 0], `${who}: a public channel without subscribers`);
  }
  t.equal((await as.owner.ok('GET', '/streams', {})).streams.some((x: any) => x.name === names.guest), false, 'the guest made none');

  const member = await newPerson(s);
  const q = await register(s.api.as(member), { event_types: ['stream', 'subscription'] });
  const name = uniq('made');
  const r = await as.member.ok('POST', '/channels/create', { name, description: 'made *here*', subscribers: [member.userId, s.demo.member1.userId], invite_only: true, history_public_to_subscribers: true, can_subscribe_group: GROUP.members });
  t.same(Object.keys(r).sort(), ['id', 'msg', 'result'], 'the reply is the id');
  const c = (await as.member.ok('GET', `/streams/${r.id}`)).stream;
  t.match(c, { name, description: 'made *here*', rendered_description: '<p>made <em>here</em></p>', invite_only: true, history_public_to_subscribers: true, can_subscribe_group: GROUP.members, can_administer_channel_group: { direct_members: [s.demo.member1.userId], direct_subgroups: [] } }, 'the settings given, the creator its administrator');
  t.same((await as.member.ok('GET', `/streams/${r.id}/members`)).subscribers.sort(), [s.demo.member1.userId, member.userId].sort((a, b) => a - b));
  t.match(await waitFor(q, (e) => e.type === 'subscription' && e.op === 'add'), { subscriptions: [{ stream_id: r.id, name }] }, 'a subscriber hears of it as for POST /users/me/subscriptions');
  const again = await as.admin.call('POST', '/channels/create', { name: name.toUpperCase(), subscribers: [] });
  t.same([again.status, again.body.code, again.body.msg], [409, 'CHANNEL_ALREADY_EXISTS', `Channel '${name}' already exists`], 'a name in use, whatever its case');
  t.equal(outcome(await as.owner.call('POST', '/channels/create', { name: uniq('made'), subscribers: [999999] }), true), '400 BAD_REQUEST No such user');
  t.equal(outcome(await as.owner.call('POST', '/channels/create', { name: uniq('made') })), '400 REQUEST_VARIABLE_MISSING', 'subscribers is required');
  t.equal(outcome(await as.member.call('POST', '/channels/create', { name: uniq('made'), subscribers: [], is_default_stream: true }), true), '400 BAD_REQUEST Insufficient permission', 'as for subscribing: only administrators make default channels');
  t.equal(outcome(await as.owner.call('POST', '/channels/create', { name: '', subscribers: [] })), '400 BAD_REQUEST', 'a name is needed');
});

t.test('changelog - send_channel_events_messages: Notification Bot notices in the "channel events" topic of a channel made, changed or archived, while the setting is on; PATCH /realm by role, with its event (FL 434)', async (t) => {
  t.teardown(() => as.owner.ok('PATCH', '/realm', { send_channel_events_messages: false }));
  const reg = await register(as.member, { fetch_event_types: ['realm'], event_types: ['realm'] });
  t.equal(reg.snapshot.realm_send_channel_events_messages, false, 'the demo organization is made with them off; Zulip\'s default, on, is every other organization\'s');
  const outcomes = await asEveryone(s, 'PATCH', '/realm', { send_channel_events_messages: true }, true);
  const refused = '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator';
  t.same(outcomes, { owner: 'ok', admin: 'ok', moderator: refused, member: refused, guest: refused, bot: refused, anonymous: '401 UNAUTHORIZED Missing authorization header for basic auth' });
  t.match(await waitFor(reg, (e) => e.type === 'realm'), { type: 'realm', op: 'update', property: 'send_channel_events_messages', value: true });
  const me = await as.owner.ok('GET', '/users/me');
  const who = `@_**${me.full_name}|${me.user_id}**`;
  const q = await register(as.member, { event_types: ['message'], apply_markdown: false });
  const name = uniq('events');
  const { id } = await as.owner.ok('POST', '/channels/create', { name, description: 'first words', subscribers: [me.user_id, s.demo.member1.userId] });
  const noticeEvent = () => waitFor(q, (e) => e.type === 'message' && e.message.stream_id === id && e.message.sender_email === 'notification-bot@zulip.com');
  const notice = async () => (await noticeEvent()).message;
  let m = await notice();
  t.same([m.subject, m.content], ['channel events', `**Public** channel created by ${who}. **Description:**\n\`\`\`\` quote\nfirst words\n\`\`\`\``], 'made');
  t.same((await as.owner.ok('GET', `/messages/${m.id}`)).message.flags.includes('read'), true, 'read by its creator');
  t.same((await as.member.ok('GET', `/messages/${m.id}`)).message.flags.includes('read'), false, 'unread for the others');
  await as.owner.ok('PATCH', `/streams/${id}`, { description: '', new_name: `${name}-2`, is_private: true, history_public_to_subscribers: true });
  const texts = [(await notice()).content, (await notice()).content, (await notice()).content];
  t.same(texts, [
    `${who} changed the [access permissions](/help/channel-permissions) for this channel from **Public** to **Private, shared history**.`,
    `${who} changed the description for this channel.\n\n* **Old description:**\n\`\`\`\` quote\nfirst words\n\`\`\`\`\n* **New description:**\n\`\`\`\` quote\n*No description.*\n\`\`\`\``,
    `${who} renamed channel **${name}** to **${name}-2**.`,
  ], 'one notice per change, in the order of the events');
  await as.owner.ok('PATCH', `/streams/${id}`, { can_send_message_group: { new: GROUP.administrators } });
  t.equal((await notice()).content, `${who} changed the [posting permissions](/help/channel-posting-policy) for this channel:\n\n* **Old**: @_*role:everyone*\n* **New**: @_*role:administrators*`, 'posting permissions (the trailing newline trimmed, as every message)');
  await as.owner.ok('PATCH', `/streams/${id}`, { topics_policy: 'disable_empty_topic' });
  t.equal((await notice()).content, `${who} changed the "Allow posting to the *general chat* topic?" setting from **Automatic** to **No *general chat* topic**.`);
  await as.owner.ok('DELETE', `/streams/${id}`);
  const archived = await noticeEvent();
  t.same([archived.message.content, archived.flags.includes('read')], [`Channel #**${name}-2** has been archived.`, true], 'archived, read by everyone');
  // Off: the same changes post nothing.
  await as.owner.ok('PATCH', '/realm', { send_channel_events_messages: false });
  const quiet = (await as.owner.ok('POST', '/channels/create', { name: uniq('quiet'), subscribers: [me.user_id, s.demo.member1.userId] })).id;
  await as.owner.ok('PATCH', `/streams/${quiet}`, { description: 'changed' });
  const page = await as.owner.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: JSON.stringify([{ operator: 'channel', operand: quiet }]) });
  t.same(page.messages, [], 'no notice while the setting is off');
});

t.test('changelog - can_subscribe_group: who may subscribe themselves to a private channel, set on creation and by PATCH, with its event (FL 357)', async (t) => {
  const name = uniq('joinable');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], invite_only: true, can_subscribe_group: JSON.stringify({ direct_members: [s.demo.member1.userId], direct_subgroups: [] }) });
  const { stream_id: id } = await as.owner.ok('GET', '/get_stream_id', { stream: name });
  t.same((await as.owner.ok('GET', `/streams/${id}`)).stream.can_subscribe_group, { direct_members: [s.demo.member1.userId], direct_subgroups: [] }, 'set on creation');
  t.equal((await as.owner.ok('GET', '/streams/1')).stream.can_subscribe_group, GROUP.nobody, 'nobody by default');
  t.equal(outcome(await as.member.call('POST', '/users/me/subscriptions', { subscriptions: [{ name }] })), 'ok', 'a member of the group subscribes themselves');
  t.ok((await as.owner.ok('GET', `/streams/${id}/members`)).subscribers.includes(s.demo.member1.userId));
  const other = await s.api.as(s.demo.member2).call('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  t.notOk((await as.owner.ok('GET', `/streams/${id}/members`)).subscribers.includes(s.demo.member2.userId), `another member may not (${other.status})`);
  const q = await register(as.member, { event_types: ['stream'] });
  await as.owner.ok('PATCH', `/streams/${id}`, { can_subscribe_group: { new: GROUP.members } });
  t.match(await waitFor(q, (e) => e.type === 'stream' && e.property === 'can_subscribe_group'), { op: 'update', stream_id: id, value: GROUP.members }, 'the update event');
  await s.api.as(s.demo.member2).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  t.ok((await as.owner.ok('GET', `/streams/${id}/members`)).subscribers.includes(s.demo.member2.userId), 'now every member may');
  await as.guest.call('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  t.notOk((await as.owner.ok('GET', `/streams/${id}/members`)).subscribers.includes(s.demo.guest.userId), 'a guest never by this group');
  t.equal(outcome(await as.owner.call('PATCH', `/streams/${id}`, { can_subscribe_group: { new: GROUP.everyone } })), '400 BAD_REQUEST', 'role:everyone is not allowed');
});

t.test('changelog - rendering and register keys of levels 436-438: emoji-only messages (436), image syntax (437), realm_owner_full_content_access (438)', async (t) => {
  const topic = uniq('render');
  const send = async (content: string) => {
    const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content });
    return (await as.member.ok('GET', `/messages/${id}`)).message.content as string;
  };
  // FL 436 specifies how clients show an emoji-only message (enlarged); the HTML is the emoji markup alone.
  t.equal(await send(':smile: :octopus:'), '<p><span aria-label="smile" class="emoji emoji-1f604" role="img" title="smile">:smile:</span> <span aria-label="octopus" class="emoji emoji-1f419" role="img" title="octopus">:octopus:</span></p>');
  // FL 437: image syntax in any block; no image previews here, so it is the link to the image, and no third-party image is loaded.
  const quoted = await send('> see ![the plan](https://example.com/plan.png)\n\n- ![](https://example.com/b.png)');
  t.match(quoted, /<blockquote>\n<p>see <a href="https:\/\/example\.com\/plan\.png">the plan<\/a><\/p>\n<\/blockquote>/);
  t.match(quoted, /<li><a href="https:\/\/example\.com\/b\.png">https:\/\/example\.com\/b\.png<\/a><\/li>/, 'an image without a name shows its URL');
  t.notMatch(quoted, /<img/, 'no <img> of a third-party URL');
  const reg = await as.owner.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.equal(reg.realm_owner_full_content_access, false, 'owners have no access to all private content here (FL 438)');
});

// ---- levels 458-478 ----------------------------------------------------------

t.test('changelog - register keys of levels 458-478: realm_uuid (466)', async (t) => {
  const [a, b] = [await as.member.ok('POST', '/register', { fetch_event_types: ['realm', 'realm_user'] }), await as.guest.ok('POST', '/register', { fetch_event_types: ['realm'] })];
  t.equal(a.avatar_source, 'G', "a Gravatar: no avatar here is a Jdenticon ('J', FL 466)");
  t.match(a.realm_uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/, 'a UUID (FL 466)');
  t.equal(b.realm_uuid, a.realm_uuid, 'the organization\'s, the same for everyone');
  t.equal((await as.member.ok('POST', '/register', {})).realm_uuid, a.realm_uuid, 'and the same at every register');
});

t.test('changelog - default_avatar_source (FL 456) and media_preview_size (FL 469): administrators set them, realm update events, snapshot plus events equals a fresh register; a new user gets the default avatar', async (t) => {
  const q = await register(as.member, { event_types: ['realm', 'realm_user'] });
  const snap = q.snapshot;
  t.equal(snap.realm_default_avatar_source, 'G', "the demo organization's users have Gravatars, as Zulip's development data");
  t.equal(snap.realm_media_preview_size, 100, 'previews at their normal height by default');
  t.teardown(() => as.owner.ok('PATCH', '/realm', { default_avatar_source: 'G', media_preview_size: 100 }));
  const avatars = await asEveryone(s, 'PATCH', '/realm', (who) => ({ default_avatar_source: who === 'owner' ? 'G' : 'J' }));
  t.same(avatars, { owner: 'ok', admin: 'ok', moderator: '400 UNAUTHORIZED_PRINCIPAL', member: '400 UNAUTHORIZED_PRINCIPAL', guest: '400 UNAUTHORIZED_PRINCIPAL', bot: '400 UNAUTHORIZED_PRINCIPAL', anonymous: '401 UNAUTHORIZED' });
  const sizes = await asEveryone(s, 'PATCH', '/realm', (who) => ({ media_preview_size: who === 'owner' ? 150 : 200 }));
  t.same(sizes, avatars, 'the same roles for the preview size');
  for (const [k, v] of [['default_avatar_source', 'U'], ['default_avatar_source', 'X'], ['media_preview_size', 120], ['media_preview_size', 0]] as const) {
    t.equal(outcome(await as.admin.call('PATCH', '/realm', { [k]: v }), true), `400 BAD_REQUEST Invalid ${k}`, `${k} ${v} is refused ('U' is no default: there is no default upload)`);
  }
  // The owner's G changes nothing (no event), then the administrator's J; the owner's 150, then the administrator's 200.
  const seen = [];
  for (let i = 0; i < 3; i++) seen.push(await waitFor(q, (e) => e.type === 'realm' && e.op === 'update'));
  t.same(seen.map((e) => [e.property, e.value]), [['default_avatar_source', 'J'], ['media_preview_size', 150], ['media_preview_size', 200]]);
  for (const e of seen) applyEvent(snap, e);
  const fresh = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same([snap.realm_default_avatar_source, snap.realm_media_preview_size], [fresh.realm_default_avatar_source, fresh.realm_media_preview_size], 'snapshot plus events equals a fresh register');
  t.same([fresh.realm_default_avatar_source, fresh.realm_media_preview_size], ['J', 200]);

  // Users created from now on get the default; existing users keep theirs.
  const p = await newPerson(s);
  const path = `/user_avatars/jdenticon/${p.userId}.png`;
  const added = await waitFor(q, (e) => e.type === 'realm_user' && e.op === 'add' && e.person.user_id === p.userId);
  t.equal(added.person.avatar_url, path, 'its add event gives the served Jdenticon even to a client that computes Gravatars');
  const me = await s.api.as(p).ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  t.match(me, { avatar_source: 'J', avatar_url: path, avatar_url_medium: `/user_avatars/jdenticon/${p.userId}-medium.png` });
  const { user } = await as.member.ok('GET', `/users/${p.userId}`);
  t.equal(user.avatar_url, path, 'GET /users/{id} with client_gravatar (the default) gives it too');
  t.equal((await as.member.ok('GET', `/users/${s.demo.member1.userId}`)).user.avatar_url, null, 'an existing user keeps their Gravatar');
  const png = await fetch(new URL(path, s.api.base));
  t.equal(png.status, 200, 'the image is served without credentials');
  t.equal(png.headers.get('content-type'), 'image/png');
  const bytes = Buffer.from(await png.arrayBuffer());
  t.same([bytes.subarray(1, 4).toString(), bytes.readUInt32BE(16), bytes.readUInt32BE(20)], ['PNG', 100, 100], 'a 100-pixel PNG');
  const medium = Buffer.from(await (await fetch(new URL(me.avatar_url_medium, s.api.base))).arrayBuffer());
  t.equal(medium.readUInt32BE(16), 500, 'the medium one has 500 pixels');
  t.equal((await fetch(new URL('/user_avatars/jdenticon/x.png', s.api.base))).status, 404, 'a name that is no user ID is not found');
  const { id } = await s.api.as(p).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([s.demo.member1.userId]), content: 'hello' });
  t.equal((await as.member.ok('GET', `/messages/${id}`)).message.avatar_url, path, "the sender's avatar on their messages");
});

t.test('changelog - workplace_users_group (FL 477): role:everyone by default; administrators set it, for every role; a group whose membership others manage is refused; update_dict events, snapshot plus events equals a fresh register', async (t) => {
  const q = await register(as.member, { event_types: ['realm'] });
  const snap = q.snapshot;
  t.equal(snap.realm_workplace_users_group, GROUP.everyone, 'everyone, as Zulip sets it for every organization');
  t.teardown(() => as.owner.ok('PATCH', '/realm', { workplace_users_group: { new: GROUP.everyone } }));
  const got = await asEveryone(s, 'PATCH', '/realm', (who) => ({ workplace_users_group: { new: who === 'owner' ? GROUP.members : GROUP.administrators } }));
  t.same(got, { owner: 'ok', admin: 'ok', moderator: '400 UNAUTHORIZED_PRINCIPAL', member: '400 UNAUTHORIZED_PRINCIPAL', guest: '400 UNAUTHORIZED_PRINCIPAL', bot: '400 UNAUTHORIZED_PRINCIPAL', anonymous: '401 UNAUTHORIZED' });
  const refused = "400 BAD_REQUEST 'workplace_users_group' must be a group whose membership can only be managed by organization administrators.";
  // A group made by a member: its creator manages it and everyone may leave it.
  const open = (await as.member.ok('POST', '/user_groups/create', { name: uniq('open477'), description: '', members: [s.demo.member1.userId] })).group_id;
  t.equal(outcome(await as.admin.call('PATCH', '/realm', { workplace_users_group: { new: open } }), true), refused, 'a group its creator manages');
  t.equal(outcome(await as.admin.call('PATCH', '/realm', { workplace_users_group: { new: { direct_members: [], direct_subgroups: [GROUP.members, open] } } }), true), refused, 'or such a group under an anonymous one');
  const admins = { new: GROUP.administrators };
  const closed = (await as.admin.ok('POST', '/user_groups/create', { name: uniq('closed477'), description: '', members: [s.demo.member1.userId], can_add_members_group: GROUP.administrators, can_join_group: GROUP.nobody, can_leave_group: GROUP.nobody, can_manage_group: GROUP.administrators, can_remove_members_group: GROUP.administrators })).group_id;
  const outer = (await as.admin.ok('POST', '/user_groups/create', { name: uniq('outer477'), description: '', members: [], subgroups: [closed], can_add_members_group: GROUP.administrators, can_join_group: GROUP.nobody, can_leave_group: GROUP.nobody, can_manage_group: GROUP.administrators, can_remove_members_group: GROUP.administrators })).group_id;
  await as.admin.ok('PATCH', '/realm', { workplace_users_group: { new: outer } });
  await as.owner.ok('PATCH', `/user_groups/${open}`, { can_leave_group: admins, can_add_members_group: admins, can_manage_group: admins, can_remove_members_group: admins });
  await as.admin.ok('POST', `/user_groups/${outer}/subgroups`, { add: [open] });
  // An anonymous group of users (only administrators change the setting) and, now, a group under it only administrators manage.
  const anonymous = { direct_members: [s.demo.member2.userId], direct_subgroups: [outer] };
  await as.admin.ok('PATCH', '/realm', { workplace_users_group: { new: anonymous } });
  const seen = [];
  for (let i = 0; i < 4; i++) seen.push(await waitFor(q, (e) => e.type === 'realm' && e.op === 'update_dict' && 'workplace_users_group' in e.data));
  t.same(seen.map((e) => e.data.workplace_users_group), [GROUP.members, GROUP.administrators, outer, anonymous]);
  for (const e of seen) applyEvent(snap, e);
  const fresh = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same(snap.realm_workplace_users_group, fresh.realm_workplace_users_group, 'snapshot plus events equals a fresh register');
  t.same(fresh.realm_workplace_users_group, anonymous);
  t.match((await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] })).server_supported_permission_settings.realm.workplace_users_group, { default_group_name: 'role:everyone', allow_everyone_group: true }, 'in server_supported_permission_settings');
});

t.test('changelog - GET /bots/{bot_id}/api_key: its owner and administrators get a working key, for every role (FL 463)', async (t) => {
  const short = uniq('keyed').slice(-12).replace(/[^a-z0-9]/g, '');
  const made = await as.member.ok('POST', '/bots', { full_name: `Keyed ${short}`, short_name: short });
  const got = await asEveryone(s, 'GET', `/bots/${made.user_id}/api_key`, {}, true);
  t.same(got, { owner: 'ok', admin: 'ok', moderator: '400 BAD_REQUEST Insufficient permission', member: 'ok', guest: '400 BAD_REQUEST Insufficient permission', bot: '400 BAD_REQUEST Insufficient permission', anonymous: '401 UNAUTHORIZED Missing authorization header for basic auth' });
  const { api_key } = await as.member.ok('GET', `/bots/${made.user_id}/api_key`);
  t.match(api_key, /^[A-Za-z0-9]{32}$/);
  const me = await s.api.as({ email: made.email ?? (await as.member.ok('GET', `/users/${made.user_id}`)).user.email, apiKey: api_key }).ok('GET', '/users/me');
  t.equal(me.user_id, made.user_id, 'the key is the bot\'s');
  t.equal((await s.api.as({ email: me.email, apiKey: made.api_key }).ok('GET', '/users/me')).user_id, made.user_id, 'the key it was made with still works');
  t.equal(outcome(await as.owner.call('GET', `/bots/${s.demo.member1.userId}/api_key`), true), '400 BAD_REQUEST No such bot', 'a user is no bot');
  t.equal(outcome(await as.owner.call('GET', '/bots/99999999/api_key'), true), '400 BAD_REQUEST No such bot');
  const [systemBot] = (await as.owner.ok('POST', '/register', { fetch_event_types: ['realm_user'] })).cross_realm_bots as { user_id: number }[];
  t.equal(outcome(await as.owner.call('GET', `/bots/${systemBot!.user_id}/api_key`), true), '400 BAD_REQUEST No such bot', 'nor a system bot');
});

t.test('changelog - Constructor Groups (FL 460) and Nextcloud Talk (FL 465) are not configured here: not offered, and their create endpoints say so, for every role', async (t) => {
  const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same(Object.keys(reg.realm_available_video_chat_providers).sort(), ['disabled', 'jitsi_meet'], 'neither is offered as video_chat_provider');
  for (const [path, name] of [['constructorgroups', 'Constructor Groups'], ['nextcloud_talk', 'Nextcloud Talk']] as const) {
    const got = await asEveryone(s, 'POST', `/calls/${path}/create`, {}, true);
    const no = `400 BAD_REQUEST ${name} is not configured.`;
    t.same(got, { owner: no, admin: no, moderator: no, member: no, guest: no, bot: no, anonymous: '401 UNAUTHORIZED Missing authorization header for basic auth' }, name);
  }
});

t.test('changelog - a bot with the administrator role sets another user\'s status; a member\'s bot may not (FL 473)', async (t) => {
  const person = await newPerson(s);
  const short = uniq('adminbot').slice(-12).replace(/[^a-z0-9]/g, '');
  const made = await as.owner.ok('POST', '/bots', { full_name: `Admin ${short}`, short_name: short });
  const email = (await as.owner.ok('GET', `/users/${made.user_id}`)).user.email as string;
  const bot = s.api.as({ email, apiKey: made.api_key });
  t.equal(outcome(await bot.call('POST', `/users/${person.userId}/status`, { status_text: 'from a bot' }), true), '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator', 'a bot with the member role may not');
  await as.owner.ok('PATCH', `/bots/${made.user_id}`, { role: ROLE.admin });
  await bot.ok('POST', `/users/${person.userId}/status`, { status_text: 'from a bot' });
  t.same((await as.member.ok('GET', `/users/${person.userId}/status`)).status, { status_text: 'from a bot' }, 'an administrator bot may (FL 473)');
});

t.test('changelog - image syntax: an uploaded image is a link to the file (no thumbnails here), a third-party image URL a plain link, never an <img> (FL 467)', async (t) => {
  const p = await newPerson(s);
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082', 'hex');
  const uploaded = await uploadAs(p, 'dot.png', 'image/png', png);
  const { id } = await s.api.as(p).ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('fl467'), content: `![dot](${uploaded}) and ![far](https://example.com/far.png)` });
  const html = (await s.api.as(p).ok('GET', `/messages/${id}`)).message.content as string;
  t.equal(html, `<p><a href="${uploaded}">dot</a> and <a href="https://example.com/far.png">far</a></p>`);
  t.notMatch(html, /<img/, 'no image is loaded from anywhere');
});

// ---- the contract's levels above 478 --------------------------------------------

t.test('changelog - a bot edits a user group it may manage: PATCH and members (FL 496)', async (t) => {
  const { group_id: id } = await as.bot.ok('POST', '/user_groups/create', { name: uniq('botgroup').slice(-20), description: 'made by a bot', members: JSON.stringify([s.demo.bot.userId]) });
  await as.bot.ok('PATCH', `/user_groups/${id}`, { description: 'edited by a bot' });
  await as.bot.ok('POST', `/user_groups/${id}/members`, { add: JSON.stringify([s.demo.member1.userId]) });
  const group = (await as.member.ok('GET', '/user_groups')).user_groups.find((g: any) => g.id === id);
  t.match(group, { description: 'edited by a bot', members: [s.demo.bot.userId, s.demo.member1.userId].sort((a, b) => a - b) });
  t.equal(outcome(await as.bot.call('PATCH', `/user_groups/${GROUP.moderators}`, { description: 'x' }), true), '400 BAD_REQUEST Insufficient permission', 'but not a group it may not manage');
});

t.test('changelog - deleting a topic without content access deletes nothing and sends the deleter no delete_message event (FL 457)', async (t) => {
  const name = uniq('secret-del');
  // Administrators administer the channel (metadata access) without being subscribed (no content access).
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], invite_only: true, can_administer_channel_group: GROUP.administrators });
  const id = (await as.owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  const { id: msgId } = await as.owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'plans', content: 'only for subscribers' });
  t.equal(outcome(await as.admin.call('GET', `/messages/${msgId}`)), '400 BAD_REQUEST', 'the administrator cannot read it');
  const adminQ = await register(as.admin, { event_types: ['delete_message'], client_capabilities: { bulk_message_deletion: true } });
  const ownerQ = await register(as.owner, { event_types: ['delete_message', 'message'], client_capabilities: { bulk_message_deletion: true } });
  t.equal((await as.admin.ok('POST', `/streams/${id}/delete_topic`, { topic_name: 'plans' })).complete, true);
  t.equal((await as.owner.ok('GET', `/messages/${msgId}`)).message.content, '<p>only for subscribers</p>', 'the message is still there');
  // A marker after the delete: the owner's queue shows no delete_message came before it.
  await as.owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'marker', content: 'marker' });
  const ownerSaw: string[] = [];
  await waitFor(ownerQ, (e) => (ownerSaw.push(e.type), e.type === 'message'));
  t.same(ownerSaw, ['message'], 'no delete_message for the subscriber');
  t.same(await poll(adminQ, { dontBlock: true }), [], 'nor for the administrator who asked');
  await as.owner.ok('POST', `/streams/${id}/delete_topic`, { topic_name: 'plans' });
  const e = await waitFor(ownerQ, (x) => x.type === 'delete_message');
  t.same(e.message_ids, [msgId], 'a deleter with content access deletes it, and hears of it');
});

t.test('changelog - every level from 479 to 496 has an entry', async (t) => {
  for (let level = 479; level <= 496; level++) t.ok(FEATURES.some((f) => f.level === level), `level ${level} has an entry`);
});

t.test('changelog - GET /users/me/{stream_id}/topics answers for an archived channel (FL 480)', async (t) => {
  // FL 480: GET /users/me/{stream_id}/topics answers for an archived channel too.
  const name = uniq('archived-topics');
  const { subscribed } = await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.owner.userId, s.demo.member1.userId] });
  t.ok(subscribed);
  const streamId = (await as.owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  await as.member.ok('POST', '/messages', { type: 'stream', to: streamId, topic: 'kept', content: 'before archiving' });
  await as.owner.ok('DELETE', `/streams/${streamId}`);
  const topics = await as.member.ok('GET', `/users/me/${streamId}/topics`);
  t.same(topics.topics.map((x: any) => x.name), ['kept'], 'the topics of the archived channel');
});

t.test('changelog - the mentions narrow operator: direct, visible personal mentions only, in every narrow (FL 446)', async (t) => {
  const target = await newPerson(s, ROLE.member, 'Mentioned');
  const name = uniq('mentions-op');
  const roles = ['owner', 'admin', 'moderator', 'member', 'guest', 'bot'] as const;
  const principals = [s.demo.owner, s.demo.admin, s.demo.moderator, s.demo.member1, s.demo.guest, s.demo.bot].map((p) => p.userId);
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [...principals, target.userId] });
  const channelId = (await as.owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  const group = uniq('mentions-group');
  await as.owner.ok('POST', '/user_groups/create', { name: group, description: 'x', members: [target.userId] });
  const send = async (content: string) => (await as.member.ok('POST', '/messages', { type: 'stream', to: name, topic: 'who', content })).id as number;
  const visible = await send(`hello @**${target.fullName}|${target.userId}**`);
  const silent = await send(`quietly @_**${target.fullName}|${target.userId}**`);
  const wildcard = await send('hello @**all**');
  const grouped = await send(`hello @*${group}*`);
  const plain = await send(`hello ${target.fullName}`);
  const inChannel = (term: Record<string, unknown>) => JSON.stringify([{ operator: 'channel', operand: channelId }, term]);
  for (const who of roles) {
    for (const operand of [target.userId, target.email]) {
      const page = await as[who].ok('GET', '/messages', { anchor: 'newest', num_before: 20, num_after: 0, narrow: inChannel({ operator: 'mentions', operand }) });
      t.same(page.messages.map((m: any) => m.id), [visible], `${who}: mentions:${operand} is the visible mention only`);
    }
    const negated = await as[who].ok('GET', '/messages', { anchor: 'newest', num_before: 20, num_after: 0, narrow: inChannel({ operator: 'mentions', operand: target.userId, negated: true }) });
    t.same(negated.messages.map((m: any) => m.id), [silent, wildcard, grouped, plain], `${who}: negated, every other message`);
    t.equal(outcome(await as[who].call('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: JSON.stringify([{ operator: 'mentions', operand: 'nobody-here@parley.example' }]) }), true), '400 BAD_NARROW Invalid narrow operator: unknown user', `${who}: an unknown user is refused`);
  }
  t.equal(outcome(await as.anonymous.call('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: inChannel({ operator: 'mentions', operand: target.userId }) })), '401 UNAUTHORIZED', 'anonymous: no access');
  const matches = await as.guest.ok('GET', '/messages/matches_narrow', { msg_ids: JSON.stringify([visible, silent, wildcard, grouped, plain]), narrow: JSON.stringify([{ operator: 'mentions', operand: target.userId }]) });
  t.same(Object.keys(matches.messages).map(Number), [visible], 'matches_narrow keeps the visible mention');
  const flagged = await as.moderator.ok('POST', '/messages/flags/narrow', { anchor: plain, include_anchor: true, num_before: 10, num_after: 0, narrow: inChannel({ operator: 'mentions', operand: target.email }), op: 'add', flag: 'starred' });
  t.equal(flagged.updated_count, 1, 'flags/narrow stars the visible mention only');
  t.ok((await as.moderator.ok('GET', `/messages/${visible}`)).message.flags.includes('starred'));
  t.notOk((await as.moderator.ok('GET', `/messages/${silent}`)).message.flags.includes('starred'));
  const q = await register(as.admin, { event_types: ['message'], narrow: [['mentions', String(target.userId)]] });
  await send(`silently @_**${target.fullName}|${target.userId}**`);
  const again = await send(`again @**${target.fullName}|${target.userId}**`);
  const e = await waitFor(q, (x) => x.type === 'message');
  t.equal(e.message.id, again, 'a register narrowed by mentions gets the visible mention, not the silent one before it');
  t.equal(outcome(await as.admin.call('POST', '/register', { event_types: ['message'], narrow: JSON.stringify([['mentions', '99999999']]) }), true), '400 BAD_NARROW Invalid narrow operator: unknown user', 'register: an unknown user is refused');
});

t.test('changelog - can_create_topic_group: who may start a topic in a channel, for every role; set on creation and by PATCH, moves, protected history, stream update events (FL 441)', async (t) => {
  const guest = await newPerson(s, ROLE.guest, 'Topic Starter');
  const bot = await as.member.ok('POST', '/bots', { full_name: 'Topic Bot', short_name: uniq('topicbot').slice(-12).replace(/[^a-z0-9]/g, '') });
  const who = { owner: as.owner, admin: as.admin, moderator: as.moderator, member: as.member, guest: s.api.as(guest), bot: s.api.as({ email: bot.email ?? (await as.member.ok('GET', `/users/${bot.user_id}`)).user.email, apiKey: bot.api_key }) };
  const name = uniq('topics');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.owner.userId, s.demo.admin.userId, s.demo.moderator.userId, s.demo.member1.userId, guest.userId, bot.user_id] });
  const { stream_id } = await as.owner.ok('GET', '/get_stream_id', { stream: name });
  t.equal((await as.member.ok('GET', `/streams/${stream_id}`)).stream.can_create_topic_group, GROUP.everyone, 'everyone by default');
  const q = await register(as.member, { fetch_event_types: ['stream', 'subscription'], event_types: ['stream'] });
  const snap = structuredClone(q.snapshot);
  t.equal(snap.subscriptions.find((c: any) => c.stream_id === stream_id).can_create_topic_group, GROUP.everyone, 'in register');
  await as.owner.ok('POST', '/messages', { type: 'stream', to: stream_id, topic: 'Existing', content: 'a topic before the restriction' });
  /** Each role's outcome of a send to `topic(role)`. */
  const sendAll = async (topic: (role: string) => string) => {
    const out: Record<string, string> = {};
    for (const [role, api] of Object.entries(who)) out[role] = outcome(await api.call('POST', '/messages', { type: 'stream', to: stream_id, topic: topic(role), content: 'x' }), true).replace(/^400 BAD_REQUEST /, '');
    return out;
  };
  const fresh = (role: string) => uniq(`new-${role}`);
  const refused = 'You do not have permission to create new topics in this channel.';
  const everyone = { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok' };
  t.same(await sendAll(fresh), everyone, 'by default everyone starts topics');
  t.equal(outcome(await as.member.call('PATCH', `/streams/${stream_id}`, { can_create_topic_group: { new: GROUP.moderators } }), true), '400 BAD_REQUEST You do not have permission to administer this channel.', 'a member does not administer the channel');
  await as.owner.ok('PATCH', `/streams/${stream_id}`, { can_create_topic_group: { new: GROUP.moderators } });
  t.same(await sendAll(fresh), { owner: 'ok', admin: 'ok', moderator: 'ok', member: refused, guest: refused, bot: refused }, 'moderators start topics');
  t.same(await sendAll(() => 'existing'), everyone, 'everyone sends to a topic that exists, whatever its case');
  await as.owner.ok('PATCH', `/streams/${stream_id}`, { can_create_topic_group: { new: { direct_members: [s.demo.member1.userId], direct_subgroups: [] } } });
  t.same(await sendAll(fresh), { owner: refused, admin: refused, moderator: refused, member: 'ok', guest: refused, bot: 'ok' }, 'a named member starts topics, and so does the bot they own; administrators are not members of it');
  await as.owner.ok('PATCH', `/streams/${stream_id}`, { can_create_topic_group: { new: GROUP.nobody } });
  t.same(await sendAll(fresh), { owner: refused, admin: refused, moderator: refused, member: refused, guest: refused, bot: refused }, 'with nobody, no one starts topics');
  // Moving to a new topic starts it; resolving does not need the permission (Zulip's check_update_message).
  const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: stream_id, topic: 'Existing', content: 'to move' });
  const move = (topic: string) => as.member.call('PATCH', `/messages/${id}`, { topic, propagate_mode: 'change_one', send_notification_to_old_thread: false, send_notification_to_new_thread: false });
  t.equal(outcome(await move(uniq('moved')), true), `400 BAD_REQUEST ${refused}`, 'a move to a new topic is refused');
  t.equal(outcome(await move('✔ Existing')), 'ok', 'resolving is not starting a topic');
  t.equal(outcome(await move('Existing')), 'ok', 'nor is unresolving');
  const changed = (await as.member.ok('GET', `/streams/${stream_id}`)).stream;
  t.equal(changed.can_create_topic_group, GROUP.nobody);
  for (let i = 0; i < 3; i++) applyEvent(snap, await waitFor(q, (e) => e.type === 'stream' && e.op === 'update' && e.stream_id === stream_id && e.property === 'can_create_topic_group'));
  const now = (await register(as.member, { fetch_event_types: ['stream', 'subscription'] })).snapshot;
  const perm = (list: any[]) => list.find((x) => x.stream_id === stream_id).can_create_topic_group;
  t.same([perm(snap.subscriptions), perm(snap.streams)], [perm(now.subscriptions), perm(now.streams)], 'snapshot plus stream update events equals a fresh register');
  t.equal(perm(now.subscriptions), GROUP.nobody);
  // Set at creation, by both routes; a private channel with protected history lets everyone start topics.
  const made = uniq('topics-made');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: made }], can_create_topic_group: GROUP.members });
  t.equal((await as.owner.ok('GET', '/streams/' + (await as.owner.ok('GET', '/get_stream_id', { stream: made })).stream_id)).stream.can_create_topic_group, GROUP.members, 'set when the channel is created');
  const combination = '400 BAD_REQUEST Unsupported parameter combination: history_public_to_subscribers, can_create_topic_group';
  t.equal(outcome(await as.owner.call('POST', '/channels/create', { name: uniq('protected'), subscribers: [], invite_only: true, history_public_to_subscribers: false, can_create_topic_group: GROUP.members }), true), combination);
  const created = await as.owner.ok('POST', '/channels/create', { name: uniq('protected'), subscribers: [], invite_only: true, history_public_to_subscribers: true, can_create_topic_group: GROUP.moderators });
  t.equal((await as.owner.ok('GET', `/streams/${created.id}`)).stream.can_create_topic_group, GROUP.moderators, 'POST /channels/create sets it');
  t.equal(outcome(await as.owner.call('PATCH', `/streams/${created.id}`, { history_public_to_subscribers: false }), true), combination, 'history is not protected while the setting is not everyone');
  await as.owner.ok('PATCH', `/streams/${created.id}`, { history_public_to_subscribers: false, can_create_topic_group: { new: { direct_members: [], direct_subgroups: [GROUP.everyone] } } });
  const protectedNow = (await as.owner.ok('GET', `/streams/${created.id}`)).stream;
  t.same([protectedNow.history_public_to_subscribers, protectedNow.can_create_topic_group], [false, GROUP.everyone], 'both change together');
  t.equal(outcome(await as.owner.call('PATCH', `/streams/${created.id}`, { can_create_topic_group: { new: GROUP.members } }), true), combination);
});

t.test('changelog - GET /messages anchor date: the first message sent at or after anchor_date, for every role (FL 445)', async (t) => {
  const name = uniq('anchor-date');
  const roles = ['owner', 'admin', 'moderator', 'member', 'guest', 'bot'] as const;
  const principals = [s.demo.owner, s.demo.admin, s.demo.moderator, s.demo.member1, s.demo.guest, s.demo.bot].map((p) => p.userId);
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals });
  const channelId = (await as.owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  const send = async (content: string) => {
    const { id } = await as.member.ok('POST', '/messages', { type: 'stream', to: name, topic: 'days', content });
    return { id: id as number, ts: (await as.member.ok('GET', `/messages/${id}`)).message.timestamp as number };
  };
  const first = await send('first');
  // Timestamps are in seconds: the later messages are sent in a later second than the first.
  while (Math.floor(Date.now() / 1000) <= first.ts) await new Promise((r) => setTimeout(r, 50));
  const second = await send('second');
  const third = await send('third');
  t.ok(second.ts > first.ts);
  const narrow = JSON.stringify([{ operator: 'channel', operand: channelId }]);
  const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
  // The same instant written with a +02:00 offset.
  const withOffset = (seconds: number) => `${new Date((seconds + 7200) * 1000).toISOString().slice(0, 19)}+02:00`;
  for (const who of roles) {
    const page = await as[who].ok('GET', '/messages', { anchor: 'date', anchor_date: iso(second.ts), num_before: 1, num_after: 1, narrow });
    t.equal(page.anchor, second.id, `${who}: the anchor is the first message sent at or after the date`);
    t.equal(page.found_anchor, true);
    t.same(page.messages.map((m: any) => m.id), [first.id, second.id, third.id], `${who}: the page is around it`);
    t.equal((await as[who].ok('GET', '/messages', { anchor: 'date', anchor_date: withOffset(second.ts), num_before: 0, num_after: 0, narrow })).anchor, second.id, `${who}: a date with an offset`);
    t.equal((await as[who].ok('GET', '/messages', { anchor: 'date', anchor_date: '1970-01-02', num_before: 0, num_after: 1, narrow })).anchor, first.id, `${who}: a date before the history anchors at its first message`);
    const later = await as[who].ok('GET', '/messages', { anchor: 'date', anchor_date: '2999-01-01T00:00:00Z', num_before: 1, num_after: 1, narrow });
    t.same([later.anchor, later.found_anchor, later.found_newest, later.messages.map((m: any) => m.id)], [10000000000000000, false, true, [third.id]], `${who}: a date after the history anchors past its end, as newest`);
    t.equal(outcome(await as[who].call('GET', '/messages', { anchor: 'date', num_before: 1, num_after: 1, narrow }), true), "400 REQUEST_VARIABLE_MISSING Missing 'anchor_date' argument", `${who}: anchor date needs anchor_date`);
    const bad = await as[who].call('GET', '/messages', { anchor: 'date', anchor_date: 'last tuesday', num_before: 1, num_after: 1, narrow });
    t.equal(outcome(bad), '400 BAD_REQUEST', `${who}: anchor_date must be an ISO 8601 date`);
    t.match(bad.body.msg, /anchor_date/);
  }
  t.equal(outcome(await as.anonymous.call('GET', '/messages', { anchor: 'date', anchor_date: iso(second.ts), num_before: 1, num_after: 1, narrow })), '401 UNAUTHORIZED', 'anonymous: no access');
  // Without a narrow the anchor is found among every message the user may read.
  const all = await as.member.ok('GET', '/messages', { anchor: 'date', anchor_date: iso(third.ts + 1), num_before: 1, num_after: 0 });
  t.ok(all.anchor > third.id, 'nothing of this test is at or after a second later: the anchor is past it');
});
