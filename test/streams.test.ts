// Channel administration over HTTP: listing, reading, updating and archiving
// channels, default channels, leaving channels and subscription settings,
// with each role's outcome, each error, and each event.
import t from 'tap';
import { type Api, type Params, uniq } from './helpers/api.ts';
import { applyEvent, type Snap } from './helpers/apply.ts';
import { register, waitFor, type Queue } from './helpers/events.ts';
import { runPython } from './helpers/python.ts';
import { asRoles, isError } from './helpers/roles.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);
const guest = s.api.as(s.demo.guest);

async function create(api: Api, params: Params = {}, principals?: number[]): Promise<{ id: number; name: string }> {
  const name = uniq('ch');
  await api.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name, description: 'first' }], ...(principals ? { principals } : {}), ...params });
  const { stream_id } = await owner.ok('GET', '/get_stream_id', { stream: name }).catch(async () => api.ok('GET', '/get_stream_id', { stream: name }));
  return { id: stream_id, name };
}

t.test('streams - GET /streams lists what each role may see, with its filters', async (t) => {
  const pub = await create(maria);
  const priv = await create(maria, { invite_only: true });
  const ids = async (api: Api, params = {}) => (await api.ok('GET', '/streams', params)).streams.map((x: any) => x.stream_id);
  t.ok((await ids(mateo)).includes(pub.id), 'members see public channels');
  t.notOk((await ids(mateo)).includes(priv.id), 'but not private ones they are not in');
  t.ok((await ids(maria)).includes(priv.id), 'subscribers see their private channel');
  t.notOk((await ids(guest)).includes(pub.id), 'guests see only their subscriptions');
  t.ok((await ids(guest)).includes(1), 'guests see general, which they are in');
  t.notOk((await ids(admin)).includes(priv.id), 'by default, not even administrators get private channels they are not in');
  t.ok((await ids(admin, { include_all: true })).includes(priv.id), 'include_all gives administrators every channel');
  // FL 356: include_all (include_all_active before) for every role: the channels whose metadata each may see.
  for (const flag of ['include_all', 'include_all_active']) {
    const all = await ids(mateo, { [flag]: true });
    t.ok(all.includes(pub.id) && !all.includes(priv.id), `${flag} for a member: public channels, not a private one they are not in (FL 356)`);
    const guests = await ids(guest, { [flag]: true, include_subscribed: false });
    t.ok(guests.includes(1) && !guests.includes(pub.id), `${flag} for a guest: only their channels`);
  }
  const content = await ids(mateo, { include_public: false, include_subscribed: false, include_can_access_content: true });
  t.ok(content.includes(pub.id) && !content.includes(priv.id), 'include_can_access_content: the channels whose messages the member may read (FL 356)');
  t.notOk((await ids(maria, { include_public: false, include_subscribed: false })).length, 'no filter, no channels');
  const withDefault = (await owner.ok('GET', '/streams', { include_default: true })).streams;
  t.equal(withDefault.find((x: any) => x.stream_id === 1).is_default, true, 'general is a default channel');
  isError(t, await s.api.get('/streams'), 401, 'UNAUTHORIZED');
  const one = (await maria.ok('GET', '/streams')).streams.find((x: any) => x.stream_id === pub.id);
  t.equal(one.is_recently_active, true);
  t.equal(one.stream_weekly_traffic, null, 'a channel younger than a week has no weekly traffic');
  t.equal(one.folder_id, null);
});

t.test('streams - GET /streams/{id}, /get_stream_id and members by role', async (t) => {
  const priv = await create(mateo, { invite_only: true });
  for (const [role, api] of asRoles(s)) {
    const r = await api.get(`/streams/${priv.id}`);
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.body.stream?.name, priv.name, `${role} sees the private channel's metadata`);
    else isError(t, r, 400, 'BAD_REQUEST', /Invalid channel ID/, role);
  }
  t.equal((await mateo.ok('GET', `/streams/${priv.id}`)).stream.invite_only, true);
  isError(t, await mateo.get('/streams/987654'), 400, 'BAD_REQUEST', /Invalid channel ID/);
  t.equal((await mateo.ok('GET', '/get_stream_id', { stream: priv.name })).stream_id, priv.id);
  isError(t, await maria.get('/get_stream_id', { stream: priv.name }), 400, 'BAD_REQUEST', /Invalid channel name/);
  isError(t, await maria.get('/get_stream_id', { stream: 'no such channel' }), 400, 'BAD_REQUEST', /Invalid channel name 'no such channel'/);
  isError(t, await maria.get('/get_stream_id'), 400, 'REQUEST_VARIABLE_MISSING', /Missing 'stream'/);
  t.same((await mateo.ok('GET', `/streams/${priv.id}/members`)).subscribers, [s.demo.member2.userId]);
  t.same((await admin.ok('GET', `/streams/${priv.id}/members`)).subscribers, [s.demo.member2.userId], 'administrators see private subscribers');
  isError(t, await maria.get(`/streams/${priv.id}/members`), 400, 'BAD_REQUEST', /Invalid channel ID/);
});

t.test('streams - PATCH /streams/{id}: who may administer a channel', async (t) => {
  // Created by the owner: only administrators (and the owner, its channel administrator) may change it.
  const ch = await create(owner, {}, [s.demo.owner.userId, s.demo.member1.userId, s.demo.guest.userId, s.demo.moderator.userId, s.demo.bot.userId]);
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', `/streams/${ch.id}`, { description: `by ${role}` });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} may`);
    else isError(t, r, 400, 'BAD_REQUEST', /permission to administer this channel/, role);
  }
  // A member who created a channel administers it; a private channel is invisible to others.
  const mine = await create(maria, { invite_only: true });
  t.equal((await maria.call('PATCH', `/streams/${mine.id}`, { description: 'mine' })).status, 200);
  isError(t, await mateo.call('PATCH', `/streams/${mine.id}`, { description: 'x' }), 400, 'BAD_REQUEST', /Invalid channel ID/);
  t.equal((await admin.call('PATCH', `/streams/${mine.id}`, { description: 'admin' })).status, 200, 'administrators administer every channel');
  // A group-setting change makes someone else the channel's administrator.
  await maria.ok('PATCH', `/streams/${mine.id}`, { can_administer_channel_group: { new: { direct_members: [s.demo.member2.userId], direct_subgroups: [] } } });
  await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: mine.name }], principals: [s.demo.member2.userId] });
  t.equal((await mateo.call('PATCH', `/streams/${mine.id}`, { description: 'now mine' })).status, 200);
  isError(t, await maria.call('PATCH', `/streams/${mine.id}`, { description: 'x' }), 400, 'BAD_REQUEST', /permission to administer/);
});

t.test('streams - stream update events changing invite_only carry is_web_public and history_public_to_subscribers (FL 71)', async (t) => {
  const ch = await create(owner, {}, [s.demo.owner.userId, s.demo.member1.userId]);
  const q = await register(maria, { event_types: ['stream'] });
  await owner.ok('PATCH', `/streams/${ch.id}`, { is_private: true });
  const e = await waitFor(q, (x) => x.type === 'stream' && x.op === 'update' && x.property === 'invite_only');
  t.same([e.stream_id, e.value, e.history_public_to_subscribers, e.is_web_public], [ch.id, true, false, false]);
  await owner.ok('PATCH', `/streams/${ch.id}`, { is_private: false });
  const back = await waitFor(q, (x) => x.type === 'stream' && x.op === 'update' && x.property === 'invite_only' && x.value === false);
  t.same([back.history_public_to_subscribers, back.is_web_public], [true, false]);
});

t.test('streams - PATCH /streams/{id} changes every property, with its rules', async (t) => {
  const ch = await create(owner);
  const other = await create(owner);
  await owner.ok('PATCH', `/streams/${ch.id}`, { new_name: `${ch.name}-x`, description: 'Line one\nline **two**', is_private: true, topics_policy: 'disable_empty_topic' });
  let got = (await owner.ok('GET', `/streams/${ch.id}`)).stream;
  t.equal(got.name, `${ch.name}-x`);
  t.equal(got.description, 'Line one line **two**', 'newlines become spaces');
  t.equal(got.rendered_description, '<p>Line one line <strong>two</strong></p>');
  t.equal(got.invite_only, true);
  t.equal(got.history_public_to_subscribers, false, 'a channel made private gets protected history');
  t.equal(got.topics_policy, 'disable_empty_topic');
  await owner.ok('PATCH', `/streams/${ch.id}`, { is_private: false, message_retention_days: 30, can_send_message_group: { new: 6, old: 2 } });
  got = (await owner.ok('GET', `/streams/${ch.id}`)).stream;
  t.equal(got.invite_only, false);
  t.equal(got.history_public_to_subscribers, true);
  t.equal(got.message_retention_days, 30);
  t.equal(got.can_send_message_group, 6);
  t.equal(got.stream_post_policy, 2, 'stream_post_policy follows can_send_message_group');
  t.equal(got.is_announcement_only, true);
  isError(t, await maria.post('/messages', { type: 'stream', to: got.name, topic: 't', content: 'x' }), 400, 'BAD_REQUEST', /permission to post/);
  await owner.ok('PATCH', `/streams/${ch.id}`, { message_retention_days: 'unlimited' });
  t.equal((await owner.ok('GET', `/streams/${ch.id}`)).stream.message_retention_days, -1);
  await owner.ok('PATCH', `/streams/${ch.id}`, { message_retention_days: 'realm_default' });
  t.equal((await owner.ok('GET', `/streams/${ch.id}`)).stream.message_retention_days, null);
  const cases: Array<[Api, Params, string, RegExp]> = [
    [owner, { new_name: `${ch.name}-x` }, 'BAD_REQUEST', /already has that name/],
    [owner, { new_name: other.name.toUpperCase() }, 'BAD_REQUEST', /already in use/],
    [owner, { new_name: '  ' }, 'BAD_REQUEST', /can't be empty/],
    [owner, { new_name: 'x'.repeat(61) }, 'BAD_REQUEST', /too long/],
    [owner, { description: 'd'.repeat(1025) }, 'BAD_REQUEST', /description too long/],
    [admin, { message_retention_days: 5 }, 'UNAUTHORIZED_PRINCIPAL', /organization owner/],
    [owner, { message_retention_days: 0 }, 'BAD_REQUEST', /at least 1/],
    [owner, { message_retention_days: 'sometimes' }, 'BAD_REQUEST', /Invalid message_retention_days/],
    [owner, { is_private: false, history_public_to_subscribers: false }, 'BAD_REQUEST', /Invalid parameters/],
    [owner, { is_web_public: true }, 'BAD_REQUEST', /Invalid parameters|Web-public/],
    [owner, { is_default_stream: true, is_private: true }, 'BAD_REQUEST', /default channel cannot be private/],
    [owner, { folder_id: 987654 }, 'BAD_REQUEST', /Invalid channel folder ID/],
    [owner, { topics_policy: 'sometimes' }, 'BAD_REQUEST', /Invalid topics_policy/],
    [owner, { can_send_message_group: { new: 2, old: 3 } }, 'BAD_REQUEST', /'old' value does not match/],
    [owner, { can_send_message_group: { new: 4242 } }, 'BAD_REQUEST', /Invalid user group ID/],
    [owner, { can_send_message_group: { new: { direct_members: [987654], direct_subgroups: [] } } }, 'BAD_REQUEST', /Invalid user ID/],
    [owner, { can_send_message_group: 2 }, 'BAD_REQUEST', /Invalid can_send_message_group/],
  ];
  for (const [api, params, code, msg] of cases) isError(t, await api.call('PATCH', `/streams/${ch.id}`, params), 400, code, msg, JSON.stringify(params).slice(0, 60));
  isError(t, await owner.call('PATCH', '/streams/987654', { description: 'x' }), 400, 'BAD_REQUEST', /Invalid channel ID/);
  t.equal((await owner.ok('GET', `/streams/${ch.id}`)).stream.name, `${ch.name}-x`, 'a rejected request changed nothing');
  const withMessage = await create(owner);
  await owner.ok('POST', '/messages', { type: 'stream', to: withMessage.name, topic: 'a topic', content: 'hi' });
  isError(t, await owner.call('PATCH', `/streams/${withMessage.id}`, { topics_policy: 'empty_topic_only' }), 400, 'BAD_REQUEST', /general chat topic/);
  const empty = await create(owner);
  await owner.ok('PATCH', `/streams/${empty.id}`, { topics_policy: 'empty_topic_only' });
});

t.test('streams - DELETE /streams/{id} archives, by role; archived channels only for clients that know them', async (t) => {
  for (const [role, api] of asRoles(s)) {
    const ch = await create(owner, {}, [s.demo.owner.userId, s.demo.guest.userId, s.demo.member1.userId]);
    const r = await api.delete(`/streams/${ch.id}`);
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} archives`);
    else isError(t, r, 400, 'BAD_REQUEST', /permission to administer/, role);
  }
  const ch = await create(owner, {}, [s.demo.owner.userId, s.demo.member1.userId]);
  const plain = await register(maria, { event_types: ['stream', 'subscription'] });
  const capable = await register(maria, { event_types: ['stream'], client_capabilities: { archived_channels: true } });
  await owner.ok('DELETE', `/streams/${ch.id}`);
  const del = await waitFor(plain, (e) => e.type === 'stream');
  t.same([del.op, del.stream_ids], ['delete', [ch.id]]);
  const upd = await waitFor(capable, (e) => e.type === 'stream');
  t.same([upd.op, upd.property, upd.value], ['update', 'is_archived', true]);
  isError(t, await owner.delete(`/streams/${ch.id}`), 400, 'BAD_REQUEST', /already deactivated/);
  isError(t, await maria.post('/messages', { type: 'stream', to: ch.name, topic: 't', content: 'x' }), 400, 'BAD_REQUEST', /Not authorized to send/);
  t.notOk((await maria.ok('GET', '/streams')).streams.some((x: any) => x.stream_id === ch.id), 'archived channels are left out');
  t.ok((await maria.ok('GET', '/streams', { exclude_archived: false })).streams.some((x: any) => x.stream_id === ch.id && x.is_archived));
  const regPlain = await maria.ok('POST', '/register', { fetch_event_types: ['subscription'] });
  t.notOk(regPlain.subscriptions.some((x: any) => x.stream_id === ch.id), 'a client without archived_channels does not get it');
  const regCapable = await maria.ok('POST', '/register', { fetch_event_types: ['subscription'], client_capabilities: { archived_channels: true } });
  t.equal(regCapable.subscriptions.find((x: any) => x.stream_id === ch.id)?.is_archived, true, 'a capable client gets it, archived');
  // Unarchiving: back for everyone.
  await owner.ok('PATCH', `/streams/${ch.id}`, { is_archived: false });
  const back = await waitFor(plain, (e) => e.type === 'stream');
  t.same([back.op, back.streams[0].stream_id], ['create', ch.id]);
  const again = await waitFor(plain, (e) => e.type === 'subscription' && e.op === 'add');
  t.same([again.op, again.subscriptions[0].stream_id], ['add', ch.id]);
  t.same((await waitFor(capable, (e) => e.type === 'stream')).value, false);
});

t.test('streams - default channels: list, add and remove by role', async (t) => {
  const ch = await create(owner);
  const priv = await create(owner, { invite_only: true });
  for (const [role, api] of asRoles(s)) {
    const r = await api.post('/default_streams', { stream_id: ch.id });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} may`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /administrator/, role);
  }
  t.ok((await maria.ok('GET', '/default_streams')).default_streams.some((x: any) => x.stream_id === ch.id));
  isError(t, await owner.post('/default_streams', { stream_id: priv.id }), 400, 'BAD_REQUEST', /Private channels cannot be made default/);
  isError(t, await owner.post('/default_streams', { stream_id: 987654 }), 400, 'BAD_REQUEST', /Invalid channel ID/);
  isError(t, await owner.post('/default_streams', {}), 400, 'REQUEST_VARIABLE_MISSING', /Missing 'stream_id'/);
  isError(t, await maria.delete('/default_streams', { stream_id: ch.id }), 400, 'UNAUTHORIZED_PRINCIPAL');
  const q = await register(maria, { event_types: ['default_streams'] });
  await admin.ok('DELETE', '/default_streams', { stream_id: ch.id });
  const e = await waitFor(q, (x) => x.type === 'default_streams');
  t.notOk(e.default_streams.includes(ch.id));
  t.ok(e.default_streams.includes(1));
  // Created as a default channel by an administrator; refused for members and for private channels.
  const made = uniq('default');
  await admin.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: made }], is_default_stream: true });
  t.ok((await maria.ok('GET', '/streams', { include_default: true })).streams.find((x: any) => x.name === made).is_default);
  isError(t, await maria.post('/users/me/subscriptions', { subscriptions: [{ name: uniq('d') }], is_default_stream: true }), 400, 'BAD_REQUEST', /Insufficient permission/);
  isError(t, await admin.post('/users/me/subscriptions', { subscriptions: [{ name: uniq('d') }], is_default_stream: true, invite_only: true }), 400, 'BAD_REQUEST', /cannot be private/);
  t.same((await guest.ok('POST', '/register', { fetch_event_types: ['default_streams'] })).realm_default_streams, [], 'guests are not told the default channels');
});

t.test('streams - DELETE /users/me/subscriptions: leaving, and removing others with permission', async (t) => {
  const ch = await create(owner, {}, [s.demo.owner.userId, s.demo.member1.userId, s.demo.member2.userId, s.demo.guest.userId, s.demo.moderator.userId, s.demo.bot.userId]);
  const res = await maria.ok('DELETE', '/users/me/subscriptions', { subscriptions: [ch.name] });
  t.same([res.removed, res.not_removed], [[ch.name], []]);
  t.same((await maria.ok('DELETE', '/users/me/subscriptions', { subscriptions: [ch.name] })).not_removed, [ch.name], 'not subscribed: not removed');
  for (const [role, api] of asRoles(s)) {
    const r = await api.delete('/users/me/subscriptions', { subscriptions: [ch.name], principals: [s.demo.member2.userId] });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} may remove others`);
    else isError(t, r, 400, 'BAD_REQUEST', /Insufficient permission/, role);
    if (r.status === 200) await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: ch.name }], principals: [s.demo.member2.userId] });
  }
  // The owner of a bot may remove it.
  const bot = await owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [ch.name], principals: [s.demo.bot.email] });
  t.same(bot.removed, [ch.name]);
  isError(t, await maria.delete('/users/me/subscriptions', { subscriptions: ['no such channel', ch.name] }), 400, 'BAD_REQUEST', /Channel\(s\) \(no such channel\) do not exist/);
  isError(t, await maria.delete('/users/me/subscriptions', { subscriptions: [ch.name], principals: [987654] }), 400, 'BAD_REQUEST', /Invalid user ID/);
  isError(t, await maria.delete('/users/me/subscriptions', {}), 400, 'REQUEST_VARIABLE_MISSING', /Missing 'subscriptions'/);
  // A channel administrator group member may remove subscribers too.
  const mine = await create(maria, {}, [s.demo.member1.userId, s.demo.member2.userId]);
  t.same((await maria.ok('DELETE', '/users/me/subscriptions', { subscriptions: [mine.name], principals: [s.demo.member2.userId] })).removed, [mine.name]);
  const q = await register(mateo, { event_types: ['subscription'] });
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: mine.name }], principals: [s.demo.member2.userId] });
  await mateo.ok('DELETE', '/users/me/subscriptions', { subscriptions: [mine.name] });
  const removed = await waitFor(q, (e) => e.type === 'subscription' && e.op === 'remove');
  t.same(removed.subscriptions, [{ name: mine.name, stream_id: mine.id }]);
  const watcher = await register(maria, { event_types: ['subscription'] });
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: mine.name }], principals: [s.demo.member2.userId] });
  await mateo.ok('DELETE', '/users/me/subscriptions', { subscriptions: [mine.name] });
  const peer = await waitFor(watcher, (e) => e.op === 'peer_remove');
  t.same([peer.stream_ids, peer.user_ids], [[mine.id], [s.demo.member2.userId]]);
});

t.test('streams - POST /users/me/subscriptions/properties sets personal settings', async (t) => {
  const ch = await create(maria);
  const q = await register(maria, { event_types: ['subscription'] });
  await maria.ok('POST', '/users/me/subscriptions/properties', {
    subscription_data: [
      { stream_id: ch.id, property: 'color', value: '#abcdef' },
      { stream_id: ch.id, property: 'is_muted', value: true },
      { stream_id: ch.id, property: 'pin_to_top', value: true },
      { stream_id: ch.id, property: 'desktop_notifications', value: false },
      { stream_id: ch.id, property: 'wildcard_mentions_notify', value: true },
    ],
  });
  const sub = (await maria.ok('GET', '/users/me/subscriptions')).subscriptions.find((x: any) => x.stream_id === ch.id);
  t.match(sub, { color: '#abcdef', is_muted: true, in_home_view: false, pin_to_top: true, desktop_notifications: false, wildcard_mentions_notify: true, push_notifications: null });
  const props: string[] = [];
  await waitFor(q, (e) => (props.push(`${e.property}=${e.value}`), e.property === 'wildcard_mentions_notify'));
  t.same(props, ['color=#abcdef', 'in_home_view=false', 'is_muted=true', 'pin_to_top=true', 'desktop_notifications=false', 'wildcard_mentions_notify=true']);
  await maria.ok('POST', `/users/me/subscriptions/${ch.id}`, { property: 'in_home_view', value: true });
  t.equal((await maria.ok('GET', '/users/me/subscriptions')).subscriptions.find((x: any) => x.stream_id === ch.id).is_muted, false);
  const bad: Array<[unknown, RegExp]> = [
    [[{ stream_id: ch.id, property: 'color', value: 'blue' }], /not a valid hex color/],
    [[{ stream_id: ch.id, property: 'is_muted', value: 'yes' }], /is_muted is not a boolean/],
    [[{ stream_id: ch.id, property: 'volume', value: true }], /Unknown subscription property: volume/],
    [[{ stream_id: 987654, property: 'is_muted', value: true }], /Invalid channel ID/],
    [[{ stream_id: 1, property: 'is_muted', value: 'x' }], /not a boolean/],
    ['not json', /Invalid subscription_data/],
  ];
  for (const [data, msg] of bad) isError(t, await maria.post('/users/me/subscriptions/properties', { subscription_data: data as any }), 400, 'BAD_REQUEST', msg);
  isError(t, await mateo.post('/users/me/subscriptions/properties', { subscription_data: [{ stream_id: ch.id, property: 'is_muted', value: true }] }), 400, 'BAD_REQUEST', /Not subscribed to channel ID/);
  isError(t, await s.api.post('/users/me/subscriptions/properties', { subscription_data: [] }), 401, 'UNAUTHORIZED');
  for (const [role, api] of asRoles(s)) {
    if (role === 'anonymous') continue;
    const r = await api.post('/users/me/subscriptions/properties', { subscription_data: [{ stream_id: 1, property: 'pin_to_top', value: true }] });
    t.equal(r.status, 200, `${role} sets its own subscription's settings`);
  }
});

/** The organization's default channel groups as `who` gets them at register. */
const channelGroups = async (api: Api) => (await api.ok('POST', '/register', { fetch_event_types: ['default_stream_groups'] })).realm_default_stream_groups as any[];

t.test('streams - default channel groups: create, change, channels and delete by role, with Zulip\'s errors (FL 63)', async (t) => {
  const a = await create(owner);
  const b = await create(owner);
  const priv = await create(owner, { invite_only: true });
  const theirs = await create(maria, { invite_only: true });
  const def = await create(owner);
  await owner.ok('POST', '/default_streams', { stream_id: def.id });
  const q = await register(maria, { event_types: ['default_stream_groups'] });
  // Each role: only administrators manage groups; names and descriptions are plain strings.
  const names: string[] = [];
  for (const [role, api] of asRoles(s)) {
    const name = uniq(`grp ${role}`);
    const r = await api.post('/default_stream_groups/create', { group_name: name, description: `by ${role}`, stream_names: [a.name] });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') (t.equal(r.status, 200, `${role} creates`), names.push(name));
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /Must be an organization administrator/, role);
  }
  const made = (await channelGroups(owner)).filter((g) => names.includes(g.name));
  t.same(made.map((g) => [g.description, g.streams]).sort(), [['by admin', [a.id]], ['by owner', [a.id]]], 'both administrators made one, with its channel by ID');
  const g = made.find((x) => x.description === 'by owner')!;
  const e = await waitFor(q, (x) => x.type === 'default_stream_groups' && x.default_stream_groups.some((y: any) => y.name === names[1]));
  t.same(e.default_stream_groups.map((x: any) => x.name), [...e.default_stream_groups.map((x: any) => x.name)].sort(), 'members get the whole list, by name');
  for (const [role, api] of asRoles(s)) {
    if (role === 'owner' || role === 'admin') continue;
    const expect = (r: any) => (role === 'anonymous' ? isError(t, r, 401, 'UNAUTHORIZED', undefined, role) : isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /administrator/, role));
    expect(await api.call('PATCH', `/default_stream_groups/${g.id}`, { new_description: 'no' }));
    expect(await api.call('PATCH', `/default_stream_groups/${g.id}/streams`, { op: 'add', stream_names: [b.name] }));
    expect(await api.delete(`/default_stream_groups/${g.id}`));
  }
  // Creation errors.
  isError(t, await owner.post('/default_stream_groups/create', { group_name: names[0], description: 'again', stream_names: [] }), 400, 'BAD_REQUEST', /Default channel group '.*' already exists/);
  isError(t, await owner.post('/default_stream_groups/create', { group_name: '  ', description: '', stream_names: [] }), 400, 'BAD_REQUEST', /Invalid default channel group name '  '/);
  isError(t, await owner.post('/default_stream_groups/create', { group_name: 'x'.repeat(61), description: '', stream_names: [] }), 400, 'BAD_REQUEST', /name too long \(limit: 60 characters\)/);
  isError(t, await owner.post('/default_stream_groups/create', { group_name: uniq('g'), description: '', stream_names: [def.name] }), 400, 'BAD_REQUEST', /is a default channel and cannot be added to/);
  isError(t, await owner.post('/default_stream_groups/create', { group_name: uniq('g'), description: '', stream_names: ['no such channel'] }), 400, 'BAD_REQUEST', /Invalid channel name 'no such channel'/);
  isError(t, await owner.post('/default_stream_groups/create', { group_name: uniq('g'), description: '', stream_names: [theirs.name] }), 400, 'BAD_REQUEST', /Invalid channel name/, 'a private channel the administrator cannot read');
  isError(t, await owner.post('/default_stream_groups/create', { group_name: uniq('g'), description: '', stream_names: 'nope' }), 400, 'BAD_REQUEST', /stream_names/);
  isError(t, await owner.post('/default_stream_groups/create', { group_name: uniq('g'), stream_names: [] }), 400, 'REQUEST_VARIABLE_MISSING', /Missing 'description'/);
  // Name and description.
  const renamed = uniq('renamed');
  await admin.ok('PATCH', `/default_stream_groups/${g.id}`, { new_group_name: renamed, new_description: '"plain"' });
  t.same((await channelGroups(maria)).find((x) => x.id === g.id), { name: renamed, id: g.id, description: '"plain"', streams: [a.id] }, 'names and descriptions are plain strings, kept as sent');
  isError(t, await owner.call('PATCH', `/default_stream_groups/${g.id}`, {}), 400, 'BAD_REQUEST', /You must pass "new_description" or "new_group_name"/);
  isError(t, await owner.call('PATCH', `/default_stream_groups/${g.id}`, { new_group_name: renamed }), 400, 'BAD_REQUEST', /already named/);
  isError(t, await owner.call('PATCH', `/default_stream_groups/${g.id}`, { new_group_name: names[1] }), 400, 'BAD_REQUEST', /already exists/);
  isError(t, await owner.call('PATCH', '/default_stream_groups/987654', { new_description: 'x' }), 400, 'BAD_REQUEST', /Default channel group with id '987654' does not exist/);
  // Channels.
  await owner.ok('PATCH', `/default_stream_groups/${g.id}/streams`, { op: 'add', stream_names: [b.name, priv.name] });
  t.same([...(await channelGroups(owner)).find((x) => x.id === g.id).streams].sort(), [a.id, b.id, priv.id].sort());
  isError(t, await owner.call('PATCH', `/default_stream_groups/${g.id}/streams`, { op: 'add', stream_names: [b.name] }), 400, 'BAD_REQUEST', /Channel '.*' is already present in default channel group/);
  isError(t, await owner.call('PATCH', `/default_stream_groups/${g.id}/streams`, { op: 'add', stream_names: [def.name] }), 400, 'BAD_REQUEST', /is a default channel/);
  isError(t, await owner.call('PATCH', `/default_stream_groups/${g.id}/streams`, { op: 'remove', stream_names: [def.name] }), 400, 'BAD_REQUEST', /Channel '.*' is not present in default channel group/);
  isError(t, await owner.call('PATCH', `/default_stream_groups/${g.id}/streams`, { op: 'swap', stream_names: [a.name] }), 400, 'BAD_REQUEST', /Invalid value for "op"/);
  isError(t, await owner.call('PATCH', '/default_stream_groups/987654/streams', { op: 'add', stream_names: [a.name] }), 400, 'BAD_REQUEST', /does not exist/);
  await owner.ok('PATCH', `/default_stream_groups/${g.id}/streams`, { op: 'remove', stream_names: [a.name] });
  // Archiving a channel takes it out of its groups, with the event.
  await owner.ok('DELETE', `/streams/${priv.id}`);
  const inGroup = (x: any) => x.default_stream_groups.find((y: any) => y.id === g.id)?.streams ?? [];
  const after = await waitFor(q, (x) => x.type === 'default_stream_groups' && inGroup(x).includes(b.id) && !inGroup(x).includes(priv.id));
  t.same(after.default_stream_groups.find((y: any) => y.id === g.id).streams, [b.id], 'the archived channel left the group');
  t.same((await guest.ok('POST', '/register', { fetch_event_types: ['default_stream_groups'] })).realm_default_stream_groups, [], 'guests are not told the groups');
  // Deletion.
  await owner.ok('DELETE', `/default_stream_groups/${g.id}`);
  t.notOk((await channelGroups(owner)).some((x) => x.id === g.id), 'deleted');
  isError(t, await owner.delete(`/default_stream_groups/${g.id}`), 400, 'BAD_REQUEST', /does not exist/);
  for (const x of await channelGroups(owner)) if (names.includes(x.name)) await owner.ok('DELETE', `/default_stream_groups/${x.id}`);
});

t.test('streams - snapshot plus default channel group events equals a fresh register', async (t) => {
  const fetch = { fetch_event_types: ['default_stream_groups'], event_types: ['default_stream_groups'] };
  const q = await register(admin, fetch);
  const a = await create(owner);
  const b = await create(owner);
  const name = uniq('snap');
  await owner.ok('POST', '/default_stream_groups/create', { group_name: name, description: 'd', stream_names: [a.name, b.name] });
  const g = (await channelGroups(owner)).find((x) => x.name === name);
  await owner.ok('PATCH', `/default_stream_groups/${g.id}`, { new_description: 'e' });
  await owner.ok('PATCH', `/default_stream_groups/${g.id}/streams`, { op: 'remove', stream_names: [a.name] });
  await owner.ok('DELETE', `/streams/${b.id}`);
  const other = uniq('snap2');
  await owner.ok('POST', '/default_stream_groups/create', { group_name: other, description: '', stream_names: [a.name] });
  await owner.ok('DELETE', `/default_stream_groups/${g.id}`);
  const snap = structuredClone(q.snapshot);
  let n = 0;
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    return e.type === 'default_stream_groups' && ++n === 6;
  });
  const fresh = (await register(admin, fetch)).snapshot;
  t.same(snap.realm_default_stream_groups, fresh.realm_default_stream_groups);
  t.ok(fresh.realm_default_stream_groups.some((x: any) => x.name === other && x.streams[0] === a.id));
  for (const x of fresh.realm_default_stream_groups) if (x.name === other) await owner.ok('DELETE', `/default_stream_groups/${x.id}`);
});

const byId = (a: any, b: any) => a.stream_id - b.stream_id;
function normalize(snap: Snap) {
  const subs = (list: any[] = []) => list.map((x) => ({ ...x, ...(x.subscribers ? { subscribers: [...x.subscribers].sort() } : {}) })).sort(byId);
  return { subscriptions: subs(snap.subscriptions), unsubscribed: subs(snap.unsubscribed), never_subscribed: subs(snap.never_subscribed), streams: [...snap.streams].sort(byId), realm_default_streams: snap.realm_default_streams };
}
// A modern client: channel notification settings that follow the user's defaults stay null (events carry null too).
const FETCH = { include_subscribers: 'true', fetch_event_types: ['subscription', 'stream', 'default_streams', 'realm_user'], client_capabilities: { notification_settings_null: true } };

async function replay(t: any, q: Queue, api: Api, done: (e: Record<string, any>) => boolean, params: Params = {}) {
  const snap = structuredClone(q.snapshot);
  const seen: string[] = [];
  await waitFor(q, (e) => {
    seen.push(`${e.type}/${e.op ?? ''}${e.property ? `/${e.property}` : ''}`);
    applyEvent(snap, e);
    return done(e);
  });
  const fresh = (await register(api, { ...FETCH, ...params })).snapshot;
  t.same(normalize(snap), normalize(fresh));
  return seen;
}

t.test('streams - snapshot plus channel events equals a fresh register (member and administrator)', async (t) => {
  for (const [who, api] of [['member', maria], ['admin', admin]] as const) {
    const q = await register(api, FETCH);
    const ch = await create(owner, {}, [s.demo.owner.userId, s.demo.member1.userId, s.demo.admin.userId]);
    const priv = await create(owner, { invite_only: true });
    await owner.ok('PATCH', `/streams/${ch.id}`, { new_name: `${ch.name}-r`, description: 'new **words**', topics_policy: 'disable_empty_topic', can_send_message_group: { new: 5 }, can_remove_subscribers_group: { new: { direct_members: [s.demo.member2.userId], direct_subgroups: [6] } } });
    await owner.ok('PATCH', `/streams/${ch.id}`, { message_retention_days: 10, is_default_stream: true });
    await owner.ok('PATCH', `/streams/${ch.id}`, { is_default_stream: false, is_private: true });
    await owner.ok('PATCH', `/streams/${ch.id}`, { is_private: false });
    await owner.ok('PATCH', `/streams/${priv.id}`, { is_private: false });
    await api.ok('POST', '/users/me/subscriptions/properties', { subscription_data: [{ stream_id: ch.id, property: 'color', value: '#123456' }, { stream_id: ch.id, property: 'in_home_view', value: false }, { stream_id: ch.id, property: 'email_notifications', value: true }] });
    await owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [ch.name + '-r'], principals: [s.demo.owner.userId] });
    await api.ok('DELETE', '/users/me/subscriptions', { subscriptions: [ch.name + '-r'] });
    const gone = await create(owner, {}, [s.demo.owner.userId, s.demo.member1.userId, s.demo.admin.userId]);
    await owner.ok('DELETE', `/streams/${gone.id}`);
    await owner.ok('POST', '/default_streams', { stream_id: priv.id });
    const seen = await replay(t, q, api, (e) => e.type === 'default_streams' && e.default_streams.includes(priv.id));
    t.ok(seen.includes('stream/update/name') && seen.includes('stream/delete') && seen.includes('subscription/remove') && seen.includes('subscription/update/color') && seen.includes('subscription/peer_remove'), `${who} saw every kind: ${seen.join(' ')}`);
  }
});

t.test('streams - snapshot plus events with the archived_channels capability', async (t) => {
  const caps = { client_capabilities: { archived_channels: true, notification_settings_null: true } };
  const q = await register(maria, { ...FETCH, ...caps });
  const ch = await create(owner, {}, [s.demo.owner.userId, s.demo.member1.userId]);
  await owner.ok('DELETE', `/streams/${ch.id}`);
  await owner.ok('PATCH', `/streams/${ch.id}`, { description: 'while archived' });
  await owner.ok('PATCH', `/streams/${ch.id}`, { is_archived: false });
  await owner.ok('DELETE', `/streams/${ch.id}`);
  let archived = 0;
  const seen = await replay(t, q, maria, (e) => e.type === 'stream' && e.stream_id === ch.id && e.property === 'is_archived' && e.value === true && ++archived === 2, caps);
  t.ok(seen.includes('stream/update/description'));
});

t.test('streams - GET /streams/{id}/email_address: "" without an email gateway, for those who may post; sender_id (FL 226)', async (t) => {
  const open = await create(owner, {}, [s.demo.member1.userId]);
  const secret = await create(owner, { invite_only: true });
  const announce = await create(owner, {}, [s.demo.member1.userId]);
  await owner.ok('PATCH', `/streams/${announce.id}`, { can_send_message_group: { new: 6 } });
  for (const [role, api] of asRoles(s)) {
    const r = await api.get(`/streams/${open.id}/email_address`);
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'guest') isError(t, r, 400, 'BAD_REQUEST', /^Invalid channel ID$/, `${role}: a public channel a guest is not in`);
    else t.same([r.status, r.body.email], [200, ''], `${role}: the address of a server without an email gateway`);
  }
  isError(t, await maria.get(`/streams/${secret.id}/email_address`), 400, 'BAD_REQUEST', /^Invalid channel ID$/, 'a private channel one is not in');
  t.equal((await owner.ok('GET', `/streams/${secret.id}/email_address`)).email, '');
  isError(t, await maria.get(`/streams/${announce.id}/email_address`), 400, 'BAD_REQUEST', /permission to post/, 'a channel one may not post to (FL 448)');
  t.equal((await admin.ok('GET', `/streams/${announce.id}/email_address`)).email, '');
  isError(t, await maria.get('/streams/999999/email_address'), 400, 'BAD_REQUEST', /^Invalid channel ID$/);
  t.equal((await maria.ok('GET', `/streams/${open.id}/email_address`, { sender_id: s.demo.member1.userId })).email, '', 'oneself as sender');
  isError(t, await maria.get(`/streams/${open.id}/email_address`, { sender_id: s.demo.member2.userId }), 400, 'BAD_REQUEST', /^No such bot$/, 'another user as sender');
  const bot = s.demo.bot.userId;
  t.equal((await owner.ok('GET', `/streams/${open.id}/email_address`, { sender_id: bot })).email, '', 'an administrator names any bot');
  const sub = (await maria.ok('GET', '/users/me/subscriptions')).subscriptions.find((x: any) => x.stream_id === open.id);
  t.notOk('email_address' in sub, 'subscription objects have no email_address (FL 226)');
});

t.test('python client - channels: list, look up, update, subscribers, settings, leave, archive', async (t) => {
  const name = uniq('py');
  const out = runPython(s.urls[0]!, s.demo.owner, `
client.add_subscriptions([{"name": ${JSON.stringify(name)}}], principals=[${s.demo.owner.userId}, ${s.demo.member1.userId}])
sid = client.get_stream_id(${JSON.stringify(name)})["stream_id"]
listed = [x["stream_id"] for x in client.get_streams()["streams"]]
upd = client.update_stream({"stream_id": sid, "description": "from python", "new_name": ${JSON.stringify(name + '-py')}})
subs = client.get_subscribers(stream=${JSON.stringify(name + '-py')})
props = client.update_subscription_settings([{"stream_id": sid, "property": "pin_to_top", "value": True}])
left = client.remove_subscriptions([${JSON.stringify(name + '-py')}])
gone = client.delete_stream(sid)
print(json.dumps({"sid": sid, "listed": sid in listed, "upd": upd["result"], "subs": subs["subscribers"], "props": props["result"], "left": left["removed"], "gone": gone["result"]}))`) as Record<string, any>;
  t.equal(out.listed, true);
  t.equal(out.upd, 'success');
  t.same(out.subs.sort(), [s.demo.owner.userId, s.demo.member1.userId].sort());
  t.equal(out.props, 'success');
  t.same(out.left, [`${name}-py`]);
  t.equal(out.gone, 'success');
  t.equal((await owner.ok('GET', '/streams', { exclude_archived: false, include_all: true })).streams.find((x: any) => x.stream_id === out.sid).is_archived, true);
});
