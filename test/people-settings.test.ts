// Settings: PATCH /settings (and its aliases), target_users, passwords and
// email changes, and the organization's defaults for new users.
import t from 'tap';
import { Api, type Params } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { mailedLink, outboxOf } from './helpers/outbox.ts';
import { asEveryone, callers, newPerson, outcome, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const ANON = '401 UNAUTHORIZED Missing authorization header for basic auth';
const NOT_ADMIN = '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator';
const BOTS = '400 BAD_REQUEST This endpoint does not accept bot requests.';
const settingsOf = async (api: Api) => (await api.ok('POST', '/register', { fetch_event_types: ['user_settings'] })).user_settings;

t.test('people settings - PATCH /settings as every role; bots are refused', async (t) => {
  t.same(await asEveryone(s, 'PATCH', '/settings', { left_side_userlist: false }, true), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: BOTS, anonymous: ANON });
  for (const alias of ['/settings/display', '/settings/notifications']) {
    t.same(await asEveryone(s, 'PATCH', alias, { left_side_userlist: false }, true), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: BOTS, anonymous: ANON }, `${alias} is an alias (FL 80)`);
  }
});

t.test('people settings - values are checked against each setting', async (t) => {
  const p = s.api.as(await newPerson(s));
  const cases: Array<[Params, string]> = [
    [{ web_channel_default_view: 5 }, '400 BAD_REQUEST Invalid web_channel_default_view'],
    [{ color_scheme: 9 }, '400 BAD_REQUEST Invalid color_scheme'],
    [{ emojiset: 'emojiset_c' }, '400 BAD_REQUEST Invalid emojiset'],
    [{ web_home_view: 'recent_topics' }, '400 BAD_REQUEST Invalid web_home_view'],
    [{ default_language: 'xx' }, '400 BAD_REQUEST Invalid default_language'],
    [{ notification_sound: 'nope' }, "400 BAD_REQUEST Invalid notification sound 'nope'"],
    [{ email_notifications_batching_period_seconds: 0 }, '400 BAD_REQUEST Invalid email batching period: 0 seconds'],
    [{ timezone: 'Mars/Olympus_Mons' }, '400 BAD_REQUEST timezone is not a recognized time zone'],
    [{ twenty_four_hour_time: 'yes' }, '400 BAD_REQUEST Invalid twenty_four_hour_time: is not valid JSON'],
    [{ web_font_size_px: 'big' }, '400 BAD_REQUEST Invalid web_font_size_px: is not an integer'],
  ];
  for (const [params, want] of cases) t.equal(outcome(await p.call('PATCH', '/settings', params), true), want, JSON.stringify(params));
  t.same((await settingsOf(p)).web_channel_default_view, 1, 'a refused request changed nothing');
  const many = { web_channel_default_view: 4, web_home_view: 'recent', default_language: 'de', timezone: 'Europe/Berlin', enter_sends: true, notification_sound: 'ding', email_notifications_batching_period_seconds: 600, enable_drafts_synchronization: false };
  await p.ok('PATCH', '/settings', many);
  const got = await settingsOf(p);
  for (const [k, v] of Object.entries(many)) t.equal(got[k], v, k);
  t.equal((await p.ok('GET', '/users/me')).timezone, 'Europe/Berlin', 'the time zone is also on the user object');
  const unknown = await p.call('PATCH', '/settings', { dense_mode: true });
  t.equal(outcome(unknown), 'ok');
  t.same(unknown.body.ignored_parameters_unsupported, ['dense_mode'], 'dense_mode is gone (FL 364)');
});

t.test('people settings - user_settings events, to the user only; a time zone also as realm_user', async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  const mine = await register(p, { event_types: ['user_settings', 'realm_user'] });
  const other = await register(as.member, { event_types: ['user_settings', 'realm_user'] });
  await p.ok('PATCH', '/settings', { default_language: 'fr', timezone: 'Asia/Tokyo', high_contrast_mode: true });
  const got = [];
  for (let i = 0; i < 4; i++) got.push(await waitFor(mine, () => true));
  t.same(
    got.map(({ id: _id, ...e }) => e),
    [
      { type: 'user_settings', op: 'update', property: 'high_contrast_mode', value: true },
      { type: 'user_settings', op: 'update', property: 'default_language', value: 'fr', language_name: 'Français' },
      { type: 'user_settings', op: 'update', property: 'timezone', value: 'Asia/Tokyo' },
      { type: 'realm_user', op: 'update', person: { user_id: person.userId, email: person.email, timezone: 'Asia/Tokyo' } },
    ],
    'in the order of the settings table',
  );
  const seen = await waitFor(other, (e) => e.type === 'realm_user' || e.type === 'user_settings');
  t.same(seen.person, { user_id: person.userId, email: person.email, timezone: 'Asia/Tokyo' }, 'others see the time zone, never the settings');
});

t.test('people settings - full name, password and email through PATCH /settings', async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  await p.ok('PATCH', '/settings', { full_name: '  Renamed Self  ' });
  t.equal((await p.ok('GET', '/users/me')).full_name, 'Renamed Self');
  t.equal(outcome(await p.call('PATCH', '/settings', { full_name: '' }), true), '400 BAD_REQUEST Name too short!');

  t.equal(outcome(await p.call('PATCH', '/settings', { old_password: 'wrong', new_password: 'new secret' }), true), '400 BAD_REQUEST Wrong password!');
  t.equal(outcome(await p.call('PATCH', '/settings', { new_password: 'new secret' }), true), '400 BAD_REQUEST Wrong password!', 'a new password needs the old one');
  t.equal(outcome(await p.call('PATCH', '/settings', { old_password: person.password, new_password: 'abc' }), true), '400 BAD_REQUEST New password is too weak!');
  await p.ok('PATCH', '/settings', { old_password: person.password, new_password: 'new secret' });
  const anonymous = new Api(s.api.base);
  t.equal(outcome(await anonymous.call('POST', '/fetch_api_key', { username: person.email, password: person.password })), '401 AUTHENTICATION_FAILED');
  t.equal(outcome(await anonymous.call('POST', '/fetch_api_key', { username: person.email, password: 'new secret' })), 'ok');
  t.equal(outcome(await p.call('GET', '/users/me')), 'ok', 'a password change leaves API keys working');

  t.equal(outcome(await p.call('PATCH', '/settings', { email: s.demo.owner.email }), true), `400 BAD_REQUEST Email '${s.demo.owner.email}' already in use`);
  t.equal(outcome(await p.call('PATCH', '/settings', { email: 'not an email' })), '400 BAD_REQUEST');
  t.equal(outcome(await p.call('PATCH', '/settings', { email: `changed-${person.userId}@parley.example` })), 'ok');
  t.equal((await p.ok('GET', '/users/me')).email, person.email, 'the address changes only once the emailed link is followed');
});

t.test('people settings - the link mailed to a new address makes it the user\'s', { skip: outboxOf(s) ? false : 'no outbox directory known for this server' }, async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  const watch = await register(s.api.as(s.demo.member1), { event_types: ['realm_user'] });
  const to = `moved-${person.userId}@parley.example`;
  await p.ok('PATCH', '/settings', { email: to });
  const path = mailedLink(outboxOf(s), to, '/accounts/confirm_new_email/');
  t.match(path, /^\/accounts\/confirm_new_email\//, 'a confirmation link was mailed to the new address');
  t.equal((await fetch(`${s.urls[0]}/accounts/confirm_new_email/not-a-key`)).status, 404, 'an unknown key changes nothing');
  const page = await fetch(`${s.urls[0]}${path}`);
  t.equal(page.status, 200);
  t.match(await page.text(), to);
  const moved = await waitFor(watch, (e) => e.type === 'realm_user' && e.person?.new_email === to);
  t.equal(moved.person.user_id, person.userId, 'others learn the new address');
  const renamed = s.api.as({ email: to, apiKey: person.apiKey });
  t.equal((await renamed.ok('GET', '/users/me')).email, to, 'the API key works with the new address');
  t.equal(outcome(await p.call('GET', '/users/me')), '401 UNAUTHORIZED', 'and no longer with the old one');
  t.equal((await fetch(`${s.urls[0]}${path}`)).status, 404, 'the link works once');
});

t.test('people settings - target_users: administrators change other users\' settings', async (t) => {
  const [a, b, c] = [await newPerson(s), await newPerson(s), await newPerson(s)];
  await s.api.as(a).ok('PATCH', '/settings', { web_home_view: 'all_messages' });
  const result = await asEveryone(s, 'PATCH', '/settings', { target_users: { user_ids: [c.userId], skip_if_already_edited: false }, color_scheme: 2 }, true);
  t.same(result, { owner: 'ok', admin: 'ok', moderator: NOT_ADMIN, member: NOT_ADMIN, guest: NOT_ADMIN, bot: BOTS, anonymous: ANON });
  t.equal((await settingsOf(s.api.as(c))).color_scheme, 2);

  const watch = await register(s.api.as(b), { event_types: ['user_settings'] });
  await as.admin.ok('PATCH', '/settings', { target_users: { user_ids: [a.userId, b.userId, s.demo.bot.userId], skip_if_already_edited: true }, web_home_view: 'recent' });
  t.equal((await settingsOf(s.api.as(a))).web_home_view, 'all_messages', 'a user who set it themselves is skipped');
  t.equal((await settingsOf(s.api.as(b))).web_home_view, 'recent');
  t.same((await waitFor(watch, () => true)).value, 'recent', 'the user gets the user_settings event');
  await as.admin.ok('PATCH', '/settings', { target_users: { user_ids: [a.userId], skip_if_already_edited: false }, web_home_view: 'recent' });
  t.equal((await settingsOf(s.api.as(a))).web_home_view, 'recent', 'unless skip_if_already_edited is false');
  await as.admin.ok('PATCH', '/settings', { target_users: { user_ids: [a.userId], skip_if_already_edited: true }, web_home_view: 'inbox' });
  t.equal((await settingsOf(s.api.as(a))).web_home_view, 'recent', "an administrator's change does not make it the user's own edit, and the user's own still counts");

  const { group_id } = await as.owner.ok('POST', '/user_groups/create', { name: `targets ${c.userId}`, description: '', members: [c.userId] });
  await as.owner.ok('PATCH', '/settings', { target_users: { group_ids: [group_id], skip_if_already_edited: false }, enter_sends: true });
  t.equal((await settingsOf(s.api.as(c))).enter_sends, true, 'group_ids reach the group\'s members');

  const errors: Array<[Params, string]> = [
    [{ target_users: { skip_if_already_edited: true }, enter_sends: true }, '400 BAD_REQUEST Either user_ids or group_ids must be provided.'],
    [{ target_users: { user_ids: [a.userId] }, enter_sends: true }, '400 BAD_REQUEST'],
    [{ target_users: { user_ids: [99999999], skip_if_already_edited: true }, enter_sends: true }, '400 BAD_REQUEST Invalid user ID: 99999999'],
    [{ target_users: { group_ids: [99999999], skip_if_already_edited: true }, enter_sends: true }, '400 BAD_REQUEST Invalid user group ID: 99999999'],
    [{ target_users: { user_ids: [a.userId], skip_if_already_edited: true }, timezone: 'UTC' }, '400 BAD_REQUEST Cannot change this setting for other users.'],
    [{ target_users: { user_ids: [a.userId], skip_if_already_edited: true }, presence_enabled: false }, '400 BAD_REQUEST Cannot change this setting for other users.'],
    [{ target_users: { user_ids: [a.userId], skip_if_already_edited: true }, email: 'x@parley.example' }, '400 BAD_REQUEST Cannot change this setting for other users.'],
    [{ target_users: { user_ids: [a.userId], skip_if_already_edited: true }, new_password: 'whatever1' }, '400 BAD_REQUEST Cannot change this setting for other users.'],
  ];
  for (const [params, want] of errors) {
    const r = await as.admin.call('PATCH', '/settings', params);
    t.equal(want.split(' ').length > 2 ? outcome(r, true) : outcome(r), want, JSON.stringify(params));
  }
});

t.test('people settings - organization defaults: administrators only; new users start from them', async (t) => {
  const before = (await as.owner.ok('POST', '/register', { fetch_event_types: ['realm_user_settings_defaults'] })).realm_user_settings_defaults;
  t.equal(before.web_channel_default_view, 1);
  t.notOk('default_language' in before, 'only the settings marked D');
  t.notOk('timezone' in before);
  t.same(await asEveryone(s, 'PATCH', '/realm/user_settings_defaults', { twenty_four_hour_time: before.twenty_four_hour_time }, true), {
    owner: 'ok',
    admin: 'ok',
    moderator: NOT_ADMIN,
    member: NOT_ADMIN,
    guest: NOT_ADMIN,
    bot: NOT_ADMIN,
    anonymous: ANON,
  });
  t.equal(outcome(await as.admin.call('PATCH', '/realm/user_settings_defaults', { web_channel_default_view: 5 }), true), '400 BAD_REQUEST Invalid web_channel_default_view');
  const lang = await as.admin.call('PATCH', '/realm/user_settings_defaults', { default_language: 'de' });
  t.same(lang.body.ignored_parameters_unsupported, ['default_language'], 'default_language is not an organization default');

  const existing = s.api.as(await newPerson(s));
  const watch = await register(as.member, { event_types: ['realm_user_settings_defaults'] });
  try {
    await as.admin.ok('PATCH', '/realm/user_settings_defaults', { web_channel_default_view: 3, emojiset: 'text', enter_sends: !before.enter_sends });
    const e = await waitFor(watch, () => true);
    t.same([e.type, e.op, e.property, e.value], ['realm_user_settings_defaults', 'update', 'web_channel_default_view', 3]);
    const after = (await as.owner.ok('POST', '/register', { fetch_event_types: ['realm_user_settings_defaults'] })).realm_user_settings_defaults;
    t.equal(after.web_channel_default_view, 3, 'the defaults take 3 (the list of topics, FL 383), as PATCH /settings does');
    const fresh = await settingsOf(s.api.as(await newPerson(s)));
    t.equal(fresh.web_channel_default_view, 3, 'a user created later starts from the defaults');
    t.equal(fresh.emojiset, 'text');
    t.equal(fresh.enter_sends, !before.enter_sends);
    const old = await settingsOf(existing);
    t.equal(old.web_channel_default_view, 1, 'existing users never change');
    t.equal(old.emojiset, 'emojiset_a');
  } finally {
    // Other suites (a cluster run shares the realm) expect the server's defaults.
    await as.admin.ok('PATCH', '/realm/user_settings_defaults', { web_channel_default_view: before.web_channel_default_view, emojiset: before.emojiset, enter_sends: before.enter_sends });
  }
});

t.test('people settings - clients without user_settings_object get the legacy top-level settings, kept by user_settings events: no legacy events (FL 439)', async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  const LEGACY = { event_types: ['update_display_settings', 'update_global_notifications', 'user_settings'], fetch_event_types: ['update_display_settings', 'update_global_notifications', 'user_settings'] };
  const legacy = await register(p, LEGACY);
  const modern = await register(p, { ...LEGACY, client_capabilities: { user_settings_object: true } });
  t.equal(legacy.snapshot.twenty_four_hour_time, false, 'display settings at the top level (zulip-terminal reads this one)');
  t.equal(legacy.snapshot.pm_content_in_desktop_notifications, true, 'notification settings at the top level');
  t.ok(legacy.snapshot.emojiset_choices.some((c: any) => c.key === 'emojiset_a'), 'with the emoji sets');
  t.ok(legacy.snapshot.available_notification_sounds.includes('ding'), 'and the sounds');
  t.notOk('twenty_four_hour_time' in modern.snapshot, 'a client declaring user_settings_object gets them only in user_settings');
  t.notOk('send_private_typing_notifications' in legacy.snapshot, 'settings added after the legacy lists closed stay in user_settings');

  await p.ok('PATCH', '/settings', { twenty_four_hour_time: true, pm_content_in_desktop_notifications: false, default_language: 'de' });
  await p.ok('PATCH', '/settings', { web_font_size_px: 18 }); // the marker: the last event to wait for
  const upToMarker = async (q: typeof legacy) => {
    const got: Array<Record<string, any>> = [];
    await waitFor(q, (e) => {
      got.push(e);
      return e.type === 'user_settings' && e.property === 'web_font_size_px';
    });
    return got;
  };
  const legacyEvents = await upToMarker(legacy);
  t.same(legacyEvents.filter((e) => e.type.startsWith('update_')), [], 'no update_display_settings or update_global_notifications event, even for a legacy client');
  t.same(legacyEvents.map((e) => e.property).sort(), ['default_language', 'pm_content_in_desktop_notifications', 'twenty_four_hour_time', 'web_font_size_px'], 'user_settings events instead');
  t.equal(legacyEvents.find((e) => e.property === 'default_language')?.language_name, 'Deutsch', 'the language change names the language');
  t.notOk((await upToMarker(modern)).some((e) => e.type.startsWith('update_')));

  const snap = structuredClone(legacy.snapshot);
  for (const e of legacyEvents) applyEvent(snap, e);
  const fresh = (await register(p, LEGACY)).snapshot;
  for (const k of ['twenty_four_hour_time', 'pm_content_in_desktop_notifications', 'default_language', 'user_settings']) t.same(snap[k], fresh[k], `snapshot + user_settings events = register: ${k}`);
});

t.test('people settings - web_escape_navigates_to_home_view (escape_navigates_to_default_view of FL 107, renamed at 219): set, defaulted, announced (FL 107)', async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  const q = await register(p, { event_types: ['user_settings'], fetch_event_types: ['user_settings'], client_capabilities: { user_settings_object: true } });
  t.equal(q.snapshot.user_settings.web_escape_navigates_to_home_view, true, 'on by default');
  t.equal(outcome(await p.call('PATCH', '/settings', { web_escape_navigates_to_home_view: 'nope' }), true), '400 BAD_REQUEST Invalid web_escape_navigates_to_home_view: is not valid JSON');
  await p.ok('PATCH', '/settings', { web_escape_navigates_to_home_view: false });
  const e = await waitFor(q, (e) => e.type === 'user_settings');
  t.same([e.op, e.property, e.value], ['update', 'web_escape_navigates_to_home_view', false]);
  const snap = structuredClone(q.snapshot);
  applyEvent(snap, e);
  t.same(snap.user_settings, (await settingsOf(p)), 'snapshot + event = register');
  t.equal((await settingsOf(p)).web_escape_navigates_to_home_view, false);

  const before = (await as.owner.ok('POST', '/register', { fetch_event_types: ['realm_user_settings_defaults'] })).realm_user_settings_defaults;
  t.equal(before.web_escape_navigates_to_home_view, true, 'an organization default');
  try {
    await as.admin.ok('PATCH', '/realm/user_settings_defaults', { web_escape_navigates_to_home_view: false });
    t.equal((await settingsOf(s.api.as(await newPerson(s)))).web_escape_navigates_to_home_view, false, 'new users start from the default');
  } finally {
    await as.admin.ok('PATCH', '/realm/user_settings_defaults', { web_escape_navigates_to_home_view: true });
  }
});

t.test('people settings - plain strings on the /settings/notifications and /settings/display aliases: notification_sound, default_language (FL 63)', async (t) => {
  const p = s.api.as(await newPerson(s));
  // Api sends strings as they are (not JSON-encoded), as Zulip 5.0 clients do.
  await p.ok('PATCH', '/settings/notifications', { notification_sound: 'ding' });
  await p.ok('PATCH', '/settings/display', { default_language: 'fr' });
  const got = await settingsOf(p);
  t.same([got.notification_sound, got.default_language], ['ding', 'fr']);
  t.equal(outcome(await p.call('PATCH', '/settings/notifications', { notification_sound: '"ding"' }), true), `400 BAD_REQUEST Invalid notification sound '"ding"'`, 'a JSON-encoded string is not decoded');
});
