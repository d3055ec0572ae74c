// Zulip's verify_action for the people events: a register snapshot with the
// events that followed applied equals a fresh register. Every event kind
// the people operations emit happens below: realm_user (add, and update of
// every property), user_group (add, update, members, subgroups, remove),
// user_settings, realm_user_settings_defaults, user_status,
// custom_profile_fields, stream delete/create and subscription peer events.
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { catchUp, type Snap } from './helpers/apply.ts';
import { register } from './helpers/events.ts';
import { callers, newPerson, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const FETCH = ['realm_user', 'realm_user_groups', 'user_settings', 'realm_user_settings_defaults', 'user_status', 'custom_profile_fields', 'subscription', 'stream'];
const SELF = ['user_id', 'email', 'delivery_email', 'full_name', 'role', 'is_admin', 'is_owner', 'is_guest', 'is_moderator'];

const byKey = (key: string) => (a: any, b: any) => a[key] - b[key];
function normalize(snap: Snap) {
  const subs = (list: any[]) => list.map((x) => ({ ...x, subscribers: [...x.subscribers].sort((a: number, b: number) => a - b) })).sort(byKey('stream_id'));
  return {
    ...Object.fromEntries(SELF.map((k) => [k, snap[k]])),
    realm_users: [...snap.realm_users].sort(byKey('user_id')),
    realm_non_active_users: [...snap.realm_non_active_users].sort(byKey('user_id')),
    realm_user_groups: snap.realm_user_groups.map((g: any) => ({ ...g, members: [...g.members].sort((a: number, b: number) => a - b) })).sort(byKey('id')),
    user_settings: snap.user_settings,
    realm_user_settings_defaults: snap.realm_user_settings_defaults,
    user_status: snap.user_status,
    custom_profile_fields: snap.custom_profile_fields,
    subscriptions: subs(snap.subscriptions),
    never_subscribed: subs(snap.never_subscribed),
    streams: [...snap.streams].sort(byKey('stream_id')),
  };
}

t.test('people snapshot - events applied in order reproduce the next register, with and without include_deactivated_groups', async (t) => {
  const person = await newPerson(s, ROLE.member, 'Snapshot Holder');
  const me = s.api.as(person);
  // Modern clients: channel notification settings that follow the user's defaults stay null.
  const MODERN = { notification_settings_null: true };
  const caps = { ...MODERN, include_deactivated_groups: true };
  const admin = as.admin;
  const qPlain = await register(admin, { fetch_event_types: FETCH, include_subscribers: true, client_capabilities: MODERN });
  const qMine = await register(me, { fetch_event_types: FETCH, include_subscribers: true, client_capabilities: MODERN });
  const qCapable = await register(as.owner, { fetch_event_types: FETCH, include_subscribers: true, client_capabilities: caps });
  const snaps = [qPlain, qMine, qCapable].map((q) => structuredClone(q.snapshot));

  // Users: a new one, their first login, name, role, profile data, channels, status, email.
  const q = await newPerson(s, ROLE.member, 'Snapshot Subject');
  const field = (await admin.ok('POST', '/realm/profile_fields', { name: `Desk ${uniq('d').slice(-6)}`, field_type: 2 })).id;
  await s.api.as(q).ok('PATCH', '/users/me/profile_data', { data: [{ id: field, value: 'By the *window*' }] });
  await admin.ok('PATCH', `/users/${q.userId}`, { full_name: 'Subject Renamed', role: ROLE.moderator });
  const channel = uniq('snapshot');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [q.userId, person.userId, s.demo.admin.userId] });
  await s.api.as(q).ok('POST', '/users/me/status', { status_text: 'Around', emoji_name: 'car' });
  await me.ok('POST', '/users/me/status', { away: true, status_text: 'Away' });
  await me.ok('PATCH', '/settings', { default_language: 'de', timezone: 'Europe/Paris', full_name: 'Holder Renamed', web_home_view: 'all_messages' });
  const defaults = (await admin.ok('POST', '/register', { fetch_event_types: ['realm_user_settings_defaults'] })).realm_user_settings_defaults;
  await admin.ok('PATCH', '/realm/user_settings_defaults', { twenty_four_hour_time: !defaults.twenty_four_hour_time });
  await admin.ok('PATCH', '/realm/user_settings_defaults', { twenty_four_hour_time: defaults.twenty_four_hour_time });

  // Groups: create, edit, members and subgroups, deactivate (while renamed), reactivate.
  const sub = (await as.member.ok('POST', '/user_groups/create', { name: `Sub ${uniq('s').slice(-6)}`, description: '' })).group_id;
  const g = (await as.member.ok('POST', '/user_groups/create', { name: `Top ${uniq('t').slice(-6)}`, description: 'd', members: [q.userId], can_mention_group: { direct_members: [q.userId], direct_subgroups: [] } })).group_id;
  await as.member.ok('PATCH', `/user_groups/${g}`, { description: 'new *text*', can_join_group: { new: 3 } });
  await as.member.ok('POST', `/user_groups/${g}/members`, { add: [s.demo.member2.userId], add_subgroups: [sub] });
  await as.member.ok('POST', `/user_groups/${g}/members`, { delete: [s.demo.member2.userId], delete_subgroups: [sub] });
  await as.member.ok('POST', `/user_groups/${sub}/deactivate`);
  await as.member.ok('PATCH', `/user_groups/${sub}`, { name: `Sleeping ${uniq('z').slice(-6)}` });
  await as.member.ok('POST', `/user_groups/${sub}/members`, { add: [s.demo.member2.userId] });
  await as.member.ok('PATCH', `/user_groups/${sub}`, { deactivated: false });

  // Deactivation and reactivation, an email change, a field change.
  await admin.ok('DELETE', `/users/${q.userId}`);
  await admin.ok('POST', `/users/${q.userId}/reactivate`);
  await as.owner.ok('PATCH', `/users/${q.userId}`, { new_email: `moved-${q.userId}-${uniq('m').slice(-5)}@parley.example` });
  await admin.ok('PATCH', `/realm/profile_fields/${field}`, { hint: 'Where you sit' });

  // The holder's own role: a guest no longer sees unsubscribed public channels (such as this one), a member again does;
  // an archived one only in clients with archived_channels (none here), before and after.
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('elsewhere') }] });
  const archivedName = uniq('archived');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: archivedName }] });
  const archived = (await as.owner.ok('GET', '/get_stream_id', { stream: archivedName })).stream_id as number;
  await as.owner.ok('DELETE', `/streams/${archived}`);
  await as.owner.ok('PATCH', `/users/${person.userId}`, { role: ROLE.guest });
  await as.owner.ok('PATCH', `/users/${person.userId}`, { role: ROLE.member });
  const marker = await as.owner.ok('POST', '/users/me/status', { status_text: `marker ${uniq('x')}` });
  t.equal(marker.result, 'success');
  const isMarker = (e: Record<string, any>) => e.type === 'user_status' && e.user_id === s.demo.owner.userId && typeof e.status_text === 'string' && e.status_text.startsWith('marker');

  const kinds = new Set<string>();
  const queues = [qPlain, qMine, qCapable];
  for (let i = 0; i < queues.length; i++) for (const k of await catchUp(queues[i]!, snaps[i]!, isMarker)) kinds.add(k);
  for (const k of [
    'realm_user/add',
    'realm_user/update',
    'user_group/add',
    'user_group/update',
    'user_group/add_members',
    'user_group/remove_members',
    'user_group/add_subgroups',
    'user_group/remove_subgroups',
    'user_group/remove',
    'user_settings/update',
    'realm_user_settings_defaults/update',
    'user_status/',
    'custom_profile_fields/',
    'stream/delete',
    'stream/create',
    'subscription/peer_add',
    'subscription/peer_remove',
  ]) {
    t.ok(kinds.has(k), `saw ${k}`);
  }

  const fresh = [
    (await register(admin, { fetch_event_types: FETCH, include_subscribers: true, client_capabilities: MODERN })).snapshot,
    (await register(me, { fetch_event_types: FETCH, include_subscribers: true, client_capabilities: MODERN })).snapshot,
    (await register(as.owner, { fetch_event_types: FETCH, include_subscribers: true, client_capabilities: caps })).snapshot,
  ];
  t.same(normalize(snaps[0]!), normalize(fresh[0]!), 'an administrator without include_deactivated_groups');
  t.same(normalize(snaps[1]!), normalize(fresh[1]!), 'the user whose settings, status, name and role changed');
  t.same(normalize(snaps[2]!), normalize(fresh[2]!), 'an owner with include_deactivated_groups');
  await as.owner.ok('POST', '/users/me/status', { status_text: '' });
});
