// Organization settings over HTTP: PATCH /realm by role, its rules and
// errors, the realm_* register keys, GET /server_settings, and the realm
// events (snapshot plus events equals a fresh register).
import t from 'tap';
import { ADVERTISED } from './helpers/features.ts';
import { uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { runPython } from './helpers/python.ts';
import { asRoles, isError } from './helpers/roles.ts';
import { newPerson, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);

// Tests share the realm in cluster runs: every setting changed here is put back afterwards.
const initial = await owner.ok('POST', '/register', { fetch_event_types: ['realm'] });
const PLAIN = ['name', 'topics_policy', 'enable_spectator_access', 'invite_required', 'waiting_period_threshold', 'default_language', 'allow_message_editing', 'enable_read_receipts', 'message_edit_history_visibility_policy', 'video_chat_provider'];
t.teardown(async () => {
  const restore: Record<string, any> = Object.fromEntries(PLAIN.map((k) => [k, initial[`realm_${k}`]]));
  restore.message_retention_days = initial.realm_message_retention_days === -1 ? 'unlimited' : initial.realm_message_retention_days;
  if (initial.realm_description === '') restore.description = '';
  for (const k of ['message_content_edit_limit_seconds', 'message_content_delete_limit_seconds']) restore[k] = initial[`realm_${k}`] ?? 'unlimited';
  for (const k of Object.keys(initial).filter((k) => /^realm_(can_|create_multiuse|direct_message_)/.test(k))) restore[k.slice('realm_'.length)] = { new: initial[k] };
  await owner.ok('PATCH', '/realm', restore);
});

t.test('realm - PATCH /realm by role', async (t) => {
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', '/realm', { default_language: 'en' });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} may`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, role);
  }
  // Settings only owners change.
  for (const params of [{ message_retention_days: 30 }, { invite_required: false }, { waiting_period_threshold: 3 }, { emails_restricted_to_domains: false }, { can_create_web_public_channel_group: { new: 6 } }, { create_multiuse_invite_group: { new: 5 } }]) {
    isError(t, await admin.call('PATCH', '/realm', params), 400, 'UNAUTHORIZED_PRINCIPAL', /organization owner/, JSON.stringify(params));
    t.equal((await owner.call('PATCH', '/realm', params)).status, 200, `owner: ${JSON.stringify(params)}`);
  }
});

t.test('realm - settings show in register and GET /server_settings', async (t) => {
  const name = uniq('Org').slice(0, 30);
  await admin.ok('PATCH', '/realm', { name, description: 'We **chat**', topics_policy: 'disable_empty_topic', can_invite_users_group: { new: 6, old: 3 }, message_content_edit_limit_seconds: 'unlimited', default_language: 'de' });
  const reg = await maria.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.match(reg, { realm_name: name, realm_description: '<p>We <strong>chat</strong></p>', realm_topics_policy: 'disable_empty_topic', realm_can_invite_users_group: 6, realm_message_content_edit_limit_seconds: null, realm_default_language: 'de' });
  for (const key of ['realm_message_retention_days', 'realm_can_create_public_channel_group', 'realm_can_mention_many_users_group', 'realm_enable_spectator_access', 'realm_invite_required', 'realm_date_created', 'realm_url']) t.ok(key in reg, key);
  const settings = await s.api.ok('GET', '/server_settings');
  t.match(settings, { realm_name: name, realm_description: '<p>We <strong>chat</strong></p>', realm_web_public_access_enabled: false });
  await owner.ok('PATCH', '/realm', { topics_policy: 'allow_empty_topic' });
});

t.test('realm - invalid settings are 400s and change nothing', async (t) => {
  const before = (await owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_name;
  const cases: Array<[Record<string, any>, string, RegExp]> = [
    [{ name: '   ' }, 'BAD_REQUEST', /too short/],
    [{ name: 'n'.repeat(41) }, 'BAD_REQUEST', /too long/],
    [{ description: 'd'.repeat(1001) }, 'BAD_REQUEST', /too long/],
    [{ default_language: 'xx' }, 'BAD_REQUEST', /Invalid language/],
    [{ topics_policy: 'empty_topic_only' }, 'BAD_REQUEST', /Invalid topics_policy/],
    [{ message_retention_days: 0 }, 'BAD_REQUEST', /at least 1/],
    [{ waiting_period_threshold: -1 }, 'BAD_REQUEST', /Invalid waiting_period_threshold/],
    [{ can_invite_users_group: 6 }, 'BAD_REQUEST', /Invalid can_invite_users_group/],
    [{ can_invite_users_group: { new: 4242 } }, 'BAD_REQUEST', /Invalid user group ID/],
    [{ can_invite_users_group: { new: 5, old: 8 } }, 'BAD_REQUEST', /'old' value does not match/],
    [{ name: 'Renamed', can_invite_users_group: { new: { direct_members: [987654], direct_subgroups: [] } } }, 'BAD_REQUEST', /Invalid user ID/],
  ];
  for (const [params, code, msg] of cases) isError(t, await owner.call('PATCH', '/realm', params), 400, code, msg, JSON.stringify(params).slice(0, 60));
  t.equal((await owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_name, before);
});

t.test('realm - snapshot plus realm events equals a fresh register', async (t) => {
  const FETCH = { fetch_event_types: ['realm'] };
  const q = await register(maria, FETCH);
  const snap = structuredClone(q.snapshot);
  await admin.ok('PATCH', '/realm', { name: uniq('R').slice(0, 20), description: 'about *us*', enable_read_receipts: false, message_content_delete_limit_seconds: 600 });
  await owner.ok('PATCH', '/realm', { message_retention_days: 'unlimited', can_mention_many_users_group: { new: 5 }, can_add_subscribers_group: { new: { direct_members: [s.demo.member1.userId], direct_subgroups: [6] } } });
  await owner.ok('PATCH', '/realm', { allow_message_editing: false, waiting_period_threshold: 7 });
  const seen: string[] = [];
  await waitFor(q, (e) => {
    seen.push(`${e.op}:${e.property}${e.op === 'update_dict' ? `:${Object.keys(e.data).join(',')}` : ''}`);
    applyEvent(snap, e);
    return e.property === 'allow_message_editing';
  });
  t.ok(seen.includes('update_dict:default:can_add_subscribers_group,can_mention_many_users_group') && seen.includes('update:name'), seen.join(' '));
  t.ok(seen.includes('update_dict:default:description') && !seen.includes('update:description'), 'the description in an update_dict (FL 464)');
  const fresh = (await register(maria, FETCH)).snapshot;
  const realmKeys = (x: Record<string, any>) => Object.fromEntries(Object.entries(x).filter(([k]) => k.startsWith('realm_')));
  t.same(realmKeys(snap), realmKeys(fresh));
});

t.test('realm - video_chat_provider: none or Jitsi Meet, set by administrators; the OAuth provider only where configured (FL 1)', async (t) => {
  const reg = await maria.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.same(reg.realm_available_video_chat_providers, { disabled: { name: 'None', id: 0 }, jitsi_meet: { name: 'Jitsi Meet', id: 1 } }, 'no provider is configured for this server');
  t.equal(reg.realm_video_chat_provider, initial.realm_video_chat_provider);
  const q = await register(maria, { fetch_event_types: ['realm'] });
  const snap = structuredClone(q.snapshot);
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', '/realm', { video_chat_provider: 0 });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} may`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, role);
  }
  t.equal((await maria.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_video_chat_provider, 0, "'none': no call button");
  for (const bad of [2, 3, 99, -1]) isError(t, await admin.call('PATCH', '/realm', { video_chat_provider: bad }), 400, 'BAD_REQUEST', new RegExp(`Invalid video_chat_provider ${bad}`), String(bad));
  isError(t, await admin.call('PATCH', '/realm', { video_chat_provider: 'jitsi' }), 400, 'BAD_REQUEST', /video_chat_provider/, 'not a number');
  await admin.ok('PATCH', '/realm', { video_chat_provider: 1 });
  const values: unknown[] = [];
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    if (e.type === 'realm' && e.property === 'video_chat_provider') values.push(e.value);
    return e.type === 'realm' && e.property === 'video_chat_provider' && e.value === 1;
  });
  t.same(values, [0, 1], 'one realm update event per change (repeats of the same value send none)');
  const fresh = await maria.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.equal(snap.realm_video_chat_provider, fresh.realm_video_chat_provider, 'snapshot plus events equals a fresh register');
});

t.test('python client - organization settings and server settings', async (t) => {
  const out = runPython(s.urls[0]!, s.demo.admin, `
# zulip 0.9.1 has no update_realm method: call_endpoint is how its users reach PATCH /realm.
r = client.call_endpoint("realm", method="PATCH", request={"default_code_block_language": "python"})
client.call_endpoint("realm", method="PATCH", request={"default_code_block_language": ""})
settings = client.get_server_settings()
print(json.dumps({"r": r["result"], "name": settings["realm_name"], "level": settings["zulip_feature_level"]}))`) as Record<string, any>;
  t.equal(out.r, 'success');
  t.type(out.name, 'string');
  t.equal(out.level, ADVERTISED, 'the level derived from the feature table (lib/features.ts)');
});

t.test('realm - can_create_groups decides who creates user groups; permissions nothing reads are reported, not stored', async (t) => {
  await owner.ok('PATCH', '/realm', { can_create_groups: { new: 6 } });
  t.teardown(() => owner.ok('PATCH', '/realm', { can_create_groups: { new: 3 } }));
  const refused = await maria.post('/user_groups/create', { name: uniq('g'), description: '', members: [] });
  t.same([refused.status, refused.body.msg], [400, 'Insufficient permission'], 'a member may not when administrators only may');
  t.equal((await admin.post('/user_groups/create', { name: uniq('g'), description: '', members: [] })).status, 200, 'an administrator may');
  const before = (await owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_summarize_topics_group;
  const r = await owner.ok('PATCH', '/realm', { can_summarize_topics_group: { new: 3 } });
  t.same(r.ignored_parameters_unsupported, ['can_summarize_topics_group'], 'there are no topic summaries: the change is reported as ignored');
  t.same((await owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_summarize_topics_group, before, 'and not made');
});

/** A new public channel the owner, the moderator and Maria are subscribed to. */
async function newChannel(prefix: string): Promise<{ name: string; id: number }> {
  const name = uniq(prefix).slice(0, 40);
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.owner.userId, s.demo.moderator.userId, s.demo.member1.userId] });
  return { name, id: (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id };
}

const LATER_SETTINGS = ['default_code_block_language', 'gif_rating_policy', 'org_type', 'want_advertise_in_communities_directory', 'signup_announcements_stream_id', 'require_unique_names', 'jitsi_server_url'];

t.test('realm - settings of FL 52 to 246 by role, with their register keys and events: default_code_block_language, giphy_rating, org_type, the communities directory, the signup announcements channel, unique names, the Jitsi server', async (t) => {
  const FETCH = { fetch_event_types: ['realm', 'giphy'] };
  const before = await maria.ok('POST', '/register', FETCH);
  t.match(before, {
    realm_default_code_block_language: '',
    realm_gif_rating_policy: 2,
    realm_org_type: 0,
    realm_want_advertise_in_communities_directory: false,
    realm_signup_announcements_stream_id: -1,
    realm_require_unique_names: false,
    realm_jitsi_server_url: null,
    server_jitsi_server_url: 'https://meet.jit.si',
    jitsi_server_url: 'https://meet.jit.si',
    giphy_api_key: '',
    tenor_api_key: '',
  }, "Zulip's defaults; no GIPHY API key on this server");
  t.same(Object.values(before.gif_rating_policy_options).map((o: any) => o.id), [0, 1, 2, 3, 4, 5], 'gif_rating_policy_options: disabled, Y, G, PG, PG-13, R');
  t.notOk('realm_giphy_rating' in before || 'giphy_rating_options' in before || 'gif_rating_options' in before, 'the names Zulip renamed (FL 442, 453) are gone');
  t.teardown(() => owner.ok('PATCH', '/realm', { default_code_block_language: '', gif_rating_policy: 2, org_type: 0, want_advertise_in_communities_directory: false, signup_announcements_stream_id: -1, require_unique_names: false, jitsi_server_url: '"default"' }));
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', '/realm', { gif_rating_policy: 3, org_type: 10 });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} may`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, role);
  }
  const bad: Array<[Record<string, any>, RegExp]> = [
    [{ gif_rating_policy: 6 }, /Invalid gif_rating_policy 6/],
    [{ org_type: 7 }, /Invalid org_type/],
    [{ jitsi_server_url: '"ftp://jitsi.example.org"' }, /jitsi_server_url is not an allowed_type/],
    [{ jitsi_server_url: `"https://${'j'.repeat(200)}.example.org"` }, /jitsi_server_url is not an allowed_type/],
    [{ jitsi_server_url: 'https://jitsi.example.org' }, /jitsi_server_url/],
    [{ signup_announcements_stream_id: 999_999 }, /Invalid channel ID/],
    [{ want_advertise_in_communities_directory: 'maybe' }, /want_advertise_in_communities_directory/],
  ];
  for (const [params, msg] of bad) isError(t, await admin.call('PATCH', '/realm', params), 400, 'BAD_REQUEST', msg, JSON.stringify(params).slice(0, 60));

  const channel = await newChannel('signups');
  const q = await register(maria, { ...FETCH, event_types: ['realm'] });
  const snap = structuredClone(q.snapshot);
  const change = { default_code_block_language: 'python', gif_rating_policy: 4, org_type: 20, want_advertise_in_communities_directory: true, signup_announcements_stream_id: channel.id, require_unique_names: true, jitsi_server_url: '"https://jitsi.example.org"' };
  const r = await admin.ok('PATCH', '/realm', change);
  t.match(r, { default_code_block_language: 'updated', gif_rating_policy: 4, org_type: 20, want_advertise_in_communities_directory: true, signup_announcements_stream_id: channel.id, require_unique_names: true, jitsi_server_url: 'updated' }, 'the reply names each change as Zulip does');
  const seen = new Set<string>();
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    if (e.type === 'realm' && e.op === 'update') seen.add(e.property);
    return LATER_SETTINGS.every((k) => seen.has(k));
  });
  const fresh = await maria.ok('POST', '/register', FETCH);
  t.match(fresh, { realm_default_code_block_language: 'python', realm_gif_rating_policy: 4, realm_org_type: 20, realm_want_advertise_in_communities_directory: true, realm_signup_announcements_stream_id: channel.id, realm_require_unique_names: true, realm_jitsi_server_url: 'https://jitsi.example.org', jitsi_server_url: 'https://jitsi.example.org', server_jitsi_server_url: 'https://meet.jit.si' });
  const keys = (x: Record<string, any>) => Object.fromEntries(Object.entries(x).filter(([k]) => k.startsWith('realm_') || k.includes('jitsi')));
  t.same(keys(snap), keys(fresh), 'snapshot plus events equals a fresh register');

  // 'default': the server's Jitsi again.
  t.match(await admin.ok('PATCH', '/realm', { jitsi_server_url: '"default"' }), { jitsi_server_url: null });
  const reset = await waitFor(q, (e) => e.type === 'realm' && e.property === 'jitsi_server_url');
  t.same(reset.value, null, 'the event gives null');
  applyEvent(snap, reset);
  t.equal(snap.jitsi_server_url, 'https://meet.jit.si');
  t.match(await maria.ok('POST', '/register', FETCH), { realm_jitsi_server_url: null, jitsi_server_url: 'https://meet.jit.si' });
});

t.test('realm - signup_announcements_stream_id: Notification Bot announces each new user there, and nowhere when unset (FL 241)', async (t) => {
  const channel = await newChannel('welcome');
  await admin.ok('PATCH', '/realm', { signup_announcements_stream_id: channel.id });
  t.teardown(() => owner.ok('PATCH', '/realm', { signup_announcements_stream_id: -1 }));
  const narrow = JSON.stringify([{ operator: 'channel', operand: channel.id }, { operator: 'topic', operand: 'signups' }]);
  const notices = async () => (await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow, apply_markdown: false })).messages;
  const name = `Newcomer ${uniq('n').slice(-6)}`;
  const { user_id } = await owner.ok('POST', '/users', { email: `${uniq('new')}@parley.example`, password: 'long enough pw', full_name: name });
  const [notice] = await notices();
  t.match(notice, { sender_email: 'notification-bot@zulip.com', subject: 'signups', content: `@_**${name}|${user_id}** joined this organization.` });
  await admin.ok('PATCH', '/realm', { signup_announcements_stream_id: -1 });
  await owner.ok('POST', '/users', { email: `${uniq('new')}@parley.example`, password: 'long enough pw', full_name: `Quiet ${uniq('q').slice(-6)}` });
  t.equal((await notices()).length, 1, 'unset: no notice');
});

t.test('realm - require_unique_names refuses a name another user has, compared as Zulip does, on creation and on name changes (FL 246)', async (t) => {
  const adminName: string = (await admin.ok('GET', '/users/me')).full_name;
  const mariaName: string = (await maria.ok('GET', '/users/me')).full_name;
  // Fullwidth letters: NFKC makes them the ASCII ones.
  const fullwidth = (x: string) => [...x].map((c) => (/[A-Za-z]/.test(c) ? String.fromCodePoint(c.codePointAt(0)! + 0xfee0) : c)).join('');
  t.equal((await maria.call('PATCH', '/settings', { full_name: adminName.toUpperCase() })).status, 200, 'allowed while the setting is off');
  await maria.ok('PATCH', '/settings', { full_name: mariaName });
  await owner.ok('PATCH', '/realm', { require_unique_names: true });
  t.teardown(() => owner.ok('PATCH', '/realm', { require_unique_names: false }));
  const UNIQUE = /Unique names required in this organization/;
  isError(t, await maria.call('PATCH', '/settings', { full_name: adminName.toUpperCase() }), 400, 'BAD_REQUEST', UNIQUE, 'own name, another case');
  isError(t, await maria.call('PATCH', '/settings', { full_name: fullwidth(adminName) }), 400, 'BAD_REQUEST', UNIQUE, 'own name, fullwidth');
  isError(t, await owner.call('PATCH', `/users/${s.demo.member1.userId}`, { full_name: adminName }), 400, 'BAD_REQUEST', UNIQUE, 'by an administrator');
  isError(t, await owner.call('POST', '/users', { email: `${uniq('dup')}@parley.example`, password: 'long enough pw', full_name: mariaName.toLowerCase() }), 400, 'BAD_REQUEST', UNIQUE, 'a new user');
  isError(t, await maria.call('POST', '/bots', { full_name: adminName, short_name: uniq('dup').toLowerCase() }), 400, 'BAD_REQUEST', UNIQUE, 'a new bot');
  t.equal((await maria.call('PATCH', '/settings', { full_name: mariaName.toUpperCase() })).status, 200, 'one\'s own name in another case is no clash');
  await maria.ok('PATCH', '/settings', { full_name: mariaName });
  t.equal((await maria.call('PATCH', '/settings', { full_name: `${mariaName} ${uniq('x').slice(-4)}` })).status, 200, 'a name nobody has');
  await maria.ok('PATCH', '/settings', { full_name: mariaName });
});

t.test('realm - default_code_block_language: a fenced block that names no language takes it (FL 52)', async (t) => {
  const render = async (content: string) => (await maria.ok('POST', '/messages/render', { content })).rendered as string;
  t.notMatch(await render('```\nx = 1\n```'), /data-code-language/, 'none by default');
  await admin.ok('PATCH', '/realm', { default_code_block_language: 'python' });
  t.teardown(() => admin.ok('PATCH', '/realm', { default_code_block_language: '' }));
  t.match(await render('```\nx = 1\n```'), /<div class="codehilite" data-code-language="python">/);
  t.match(await render('```js\nx = 1\n```'), /data-code-language="js"/, 'a named language wins');
  await admin.ok('PATCH', '/realm', { default_code_block_language: 'quote' });
  t.match(await render('```\nwise words\n```'), /^<blockquote>/, "'quote' makes such blocks quotes, as in Zulip");
});

t.test('realm - the topic-editing limit is move_messages_within_stream_limit_seconds, 3 days by default; is_owner in the register; typing to user IDs only (FL 11, 38)', async (t) => {
  const reg = await maria.ok('POST', '/register', { fetch_event_types: ['realm', 'realm_user'] });
  t.equal(reg.realm_move_messages_within_stream_limit_seconds, 259200, '3 days');
  t.notOk('realm_community_topic_editing_limit_seconds' in reg, 'the older key, removed at FL 183');
  for (const [role, api, owns] of [['owner', owner, true], ['admin', admin, false], ['member', maria, false]] as const) {
    t.equal((await api.ok('POST', '/register', { fetch_event_types: ['realm_user'] })).is_owner, owns, `is_owner: ${role}`);
  }
  isError(t, await maria.call('POST', '/typing', { type: 'direct', op: 'start', to: [s.demo.admin.email] }), 400, 'BAD_REQUEST', undefined, 'typing to an email');
});

t.test('realm - realm domains: owners add, change and remove them with realm_domains events; emails_restricted_to_domains admits only their addresses (FL 63, 143)', async (t) => {
  const domain = `${uniq('d').toLowerCase()}.example`;
  const q = await register(maria, { fetch_event_types: ['realm_domains', 'realm'], event_types: ['realm_domains', 'realm'] });
  const snap = structuredClone(q.snapshot);
  t.same(snap.realm_domains, [], 'none at first');
  t.teardown(async () => {
    await owner.call('DELETE', `/realm/domains/${domain}`);
    await owner.ok('PATCH', '/realm', { emails_restricted_to_domains: false });
  });
  for (const [role, api] of asRoles(s)) {
    if (role === 'owner') continue;
    const r = await api.call('POST', '/realm/domains', { domain, allow_subdomains: false });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization owner/, role);
  }
  const bad: Array<[string, RegExp]> = [['', /Domain can't be empty/], ['nodot', /at least one dot/], ['.lead.example', /start or end with a dot/], ['a..example', /Consecutive/], ['-a.example', /start or end with a '-'/], ['a_b.example', /only have letters, numbers/]];
  for (const [d, msg] of bad) isError(t, await owner.call('POST', '/realm/domains', { domain: d, allow_subdomains: false }), 400, 'BAD_REQUEST', msg, JSON.stringify(d));
  const added = await owner.ok('POST', '/realm/domains', { domain: ` ${domain.toUpperCase()} `, allow_subdomains: false });
  t.equal(added.new_domain[1], domain, 'trimmed and lower-cased');
  isError(t, await owner.call('POST', '/realm/domains', { domain, allow_subdomains: true }), 400, 'BAD_REQUEST', /already a part of your organization/, 'twice');
  t.same((await maria.ok('GET', '/realm/domains')).domains, [{ domain, allow_subdomains: false }], 'every user may list them');
  isError(t, await admin.call('PATCH', `/realm/domains/${domain}`, { allow_subdomains: true }), 400, 'UNAUTHORIZED_PRINCIPAL', /organization owner/, 'an administrator may not change one');
  await owner.ok('PATCH', `/realm/domains/${domain}`, { allow_subdomains: true });
  isError(t, await owner.call('PATCH', '/realm/domains/nowhere.example', { allow_subdomains: true }), 400, 'BAD_REQUEST', /No entry found for domain nowhere.example/, 'an unknown one');

  // Restricted: only addresses of the domains (and, where allowed, their subdomains) may join.
  isError(t, await admin.call('PATCH', '/realm', { emails_restricted_to_domains: true }), 400, 'UNAUTHORIZED_PRINCIPAL', /organization owner/, 'owner-only (FL 143)');
  await owner.ok('PATCH', '/realm', { emails_restricted_to_domains: true });
  const create = (email: string) => owner.call('POST', '/users', { email, password: 'long enough pw', full_name: `Dom ${uniq('u').slice(-6)}` });
  isError(t, await create(`${uniq('out')}@elsewhere.example`), 400, 'BAD_REQUEST', /not allowed in this organization/, 'another domain');
  t.equal((await create(`${uniq('in')}@${domain}`)).status, 200, 'the domain');
  t.equal((await create(`${uniq('in')}@team.${domain}`)).status, 200, 'a subdomain, allowed');
  await owner.ok('DELETE', `/realm/domains/${domain}`);
  isError(t, await owner.call('DELETE', `/realm/domains/${domain}`), 400, 'BAD_REQUEST', /No entry found/, 'removed twice');

  const ops: string[] = [];
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    if (e.type === 'realm_domains') ops.push(e.op);
    return e.type === 'realm_domains' && e.op === 'remove';
  });
  t.same(ops, ['add', 'change', 'remove']);
  const fresh = await maria.ok('POST', '/register', { fetch_event_types: ['realm_domains', 'realm'] });
  t.same(fresh.realm_domains, []);
  t.equal(fresh.realm_emails_restricted_to_domains, false, 'removing the last domain lifts the restriction, as in Zulip');
  t.same([snap.realm_domains, snap.realm_emails_restricted_to_domains], [fresh.realm_domains, fresh.realm_emails_restricted_to_domains], 'snapshot plus events equals a fresh register');
});

t.test('realm - owner-only settings: waiting_period_threshold, invite_required, emails_restricted_to_domains, disallowed to administrators (FL 143)', async (t) => {
  const reg = await owner.ok('POST', '/register', { fetch_event_types: ['realm'] });
  for (const params of [{ waiting_period_threshold: reg.realm_waiting_period_threshold }, { invite_required: reg.realm_invite_required }, { emails_restricted_to_domains: reg.realm_emails_restricted_to_domains }]) {
    for (const [role, api] of asRoles(s)) {
      const r = await api.call('PATCH', '/realm', params);
      if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
      else if (role === 'owner') t.equal(r.status, 200, `owner: ${JSON.stringify(params)}`);
      else if (role === 'admin') isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization owner/, `admin: ${JSON.stringify(params)}`);
      else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, `${role}: ${JSON.stringify(params)}`);
    }
  }
});

t.test('realm - disallow_disposable_email_addresses: owners only, on by default; disposable and out-of-domain addresses refused by POST /users, POST /invites and sign-up links, as Zulip does (FL 143)', async (t) => {
  const q = await register(maria, { fetch_event_types: ['realm'], event_types: ['realm'] });
  t.equal(q.snapshot.realm_disallow_disposable_email_addresses, true, "Zulip's default");
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', '/realm', { disallow_disposable_email_addresses: true });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner') t.equal(r.status, 200, role);
    else if (role === 'admin') isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization owner/, role);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, role);
  }
  const domain = `${uniq('d').toLowerCase()}.example`;
  t.teardown(async () => {
    await owner.ok('PATCH', '/realm', { disallow_disposable_email_addresses: true, emails_restricted_to_domains: false });
    await owner.call('DELETE', `/realm/domains/${domain}`);
  });
  const create = (email: string) => owner.call('POST', '/users', { email, password: 'long enough pw', full_name: `Disp ${uniq('u').slice(-6)}` });
  const invite = (emails: string) => owner.call('POST', '/invites', { invitee_emails: emails, stream_ids: [] });
  const link = new URL((await owner.ok('POST', '/invites/multiuse', {})).invite_link).pathname;
  const join = async (email: string) => {
    const r = await fetch(`${s.urls[0]}${link}`, { method: 'POST', body: new URLSearchParams({ email, full_name: `Joiner ${uniq('j').slice(-6)}`, password: 'long enough pw' }) });
    return { status: r.status, text: await r.text() };
  };
  const throwaway = `${uniq('t')}@mailinator.com`;
  isError(t, await create(throwaway), 400, 'BAD_REQUEST', /^Disposable email addresses are not allowed in this organization$/, 'POST /users');
  const fine = `${uniq('fine')}@parley.example`;
  const refused = await invite(`${throwaway}, ${fine}`);
  isError(t, refused, 400, 'INVITATION_FAILED', /did not validate/, 'POST /invites');
  t.same([refused.body.errors, refused.body.sent_invitations], [[[throwaway, 'Please use your real email address.', false]], false]);
  t.notOk((await owner.ok('GET', '/invites')).invites.some((i: any) => i.email === fine), 'nobody was invited');
  const page = await join(throwaway);
  t.equal(page.status, 400, 'a sign-up link');
  t.match(page.text, 'Please use your real email address.');

  await owner.ok('PATCH', '/realm', { disallow_disposable_email_addresses: false });
  const e = await waitFor(q, (e) => e.type === 'realm' && e.property === 'disallow_disposable_email_addresses');
  t.same([e.op, e.value], ['update', false]);
  const snap = structuredClone(q.snapshot);
  applyEvent(snap, e);
  t.equal(snap.realm_disallow_disposable_email_addresses, (await maria.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_disallow_disposable_email_addresses, 'snapshot + event = register');
  t.equal((await create(`${uniq('t')}@mailinator.com`)).status, 200, 'allowed once turned off');

  // Restricted to the organization's domains: invitations and sign-ups obey it too (and no '+' in the address).
  await owner.ok('POST', '/realm/domains', { domain, allow_subdomains: false });
  await owner.ok('PATCH', '/realm', { emails_restricted_to_domains: true });
  const outside = `${uniq('out')}@elsewhere.example`;
  const plus = `${uniq('p')}+tag@${domain}`;
  const mixed = await invite(`${outside}, ${plus}, ${uniq('in')}@${domain}`);
  isError(t, mixed, 400, 'INVITATION_FAILED', /did not validate/);
  t.same(mixed.body.errors, [[outside, 'Outside your domain.', false], [plus, 'Email addresses containing + are not allowed.', false]]);
  isError(t, await create(plus), 400, 'BAD_REQUEST', /^Email addresses containing \+ are not allowed\.$/, "POST /users: '+'");
  const elsewhere = await join(outside);
  t.equal(elsewhere.status, 400);
  t.match(elsewhere.text, `Your email address, ${outside}, is not in one of the domains that are permitted to register accounts in this organization.`);
  const inside = await join(`${uniq('in')}@${domain}`);
  t.equal(inside.status, 200, "an address of the organization's domain signs up");
  t.match(inside.text, 'zuliprc');
});

t.test('realm - server_supported_permission_settings: what each permission takes, for every role, as PATCH /realm, channels and user groups enforce it (FL 221, 225)', async (t) => {
  const SYSTEM = ['role:internet', 'role:everyone', 'role:members', 'role:fullmembers', 'role:moderators', 'role:administrators', 'role:owners', 'role:nobody'];
  const groupId = (name: string) => SYSTEM.indexOf(name) + 1;
  const regs = [];
  for (const [role, api] of asRoles(s)) if (role !== 'anonymous') regs.push((await api.ok('POST', '/register', { fetch_event_types: ['realm'] })).server_supported_permission_settings);
  const supported = regs[0];
  for (const r of regs) t.same(r, supported, 'every role gets the same description');
  t.notOk('server_supported_permission_settings' in (await owner.ok('POST', '/register', { fetch_event_types: ['message'] })), 'only with realm');
  // What the organization acts on (PATCH /realm reports the rest as ignored), nothing more.
  const realmKeys = Object.keys(initial).filter((k) => /^realm_(can_|create_multiuse|direct_message_|workplace_users_group$)/.test(k) && !/_policy$/.test(k)).map((k) => k.slice('realm_'.length));
  const ignored = new Set<string>();
  for (const k of realmKeys) {
    const r = await owner.ok('PATCH', '/realm', { [k]: { new: initial[`realm_${k}`] } });
    if ((r.ignored_parameters_unsupported ?? []).includes(k)) ignored.add(k);
  }
  t.same(Object.keys(supported.realm).sort(), realmKeys.filter((k) => !ignored.has(k)).sort(), 'realm: every permission acted on');
  t.same(Object.keys(supported.stream).sort(), ['can_add_subscribers_group', 'can_administer_channel_group', 'can_delete_any_message_group', 'can_delete_own_message_group', 'can_move_messages_out_of_channel_group', 'can_move_messages_within_channel_group', 'can_remove_subscribers_group', 'can_resolve_topics_group', 'can_send_message_group', 'can_subscribe_group', 'can_create_topic_group'].sort());
  t.same(Object.keys(supported.group).sort(), ['can_add_members_group', 'can_join_group', 'can_leave_group', 'can_manage_group', 'can_mention_group', 'can_remove_members_group']);
  t.same(supported.realm.can_access_all_users_group, { require_system_group: true, allow_internet_group: false, allow_nobody_group: false, allow_everyone_group: true, default_group_name: 'role:everyone', default_for_system_groups: null, allowed_system_groups: ['role:everyone', 'role:members'] }, 'FL 225');

  /** Whether a system group is allowed by a configuration, as Zulip's clients read it. */
  const allows = (c: any, name: string) =>
    !(name === 'role:internet' && !c.allow_internet_group) && !(name === 'role:nobody' && !c.allow_nobody_group) && !(name === 'role:everyone' && !c.allow_everyone_group) && (c.allowed_system_groups.length === 0 || c.allowed_system_groups.includes(name));
  const outcome = (r: { status: number; body: any }) => (r.status === 200 ? 'ok' : r.body.msg);
  const refusal = (setting: string, name: string) => `'${setting}' setting cannot be set to '${name}' group.`;

  // Owners of their own, so that these few hundred changes stay within each user's rate limit (Zulip's 200 a
  // minute): the organization's permissions take one owner per 10 settings, as each setting is 9 changes.
  const [byValue, byChannel, byGroup] = [await newPerson(s, ROLE.owner), await newPerson(s, ROLE.owner), await newPerson(s, ROLE.owner)].map((p) => s.api.as(p));
  const channelOwner = byChannel!;
  const realmSettings = Object.entries<any>(supported.realm);
  const realmOwners = [];
  for (let i = 0; i < realmSettings.length; i += 10) realmOwners.push(s.api.as(await newPerson(s, ROLE.owner)));
  // The organization's permissions: every system group tried, put back after.
  for (const [i, [setting, c]] of realmSettings.entries()) {
    const byRealm = realmOwners[Math.floor(i / 10)]!;
    for (const name of SYSTEM) {
      const got = outcome(await byRealm.call('PATCH', '/realm', { [setting]: { new: groupId(name) } }));
      t.equal(got, allows(c, name) ? 'ok' : refusal(setting, name), `realm ${setting} = ${name}`);
    }
    await byRealm.ok('PATCH', '/realm', { [setting]: { new: initial[`realm_${setting}`] } });
  }
  // A user group, or an anonymous one, where no system group is required; never where one is; for workplace_users_group
  // (FL 477) only a group whose membership administrators alone manage, which this one (its creator manages it) is not.
  const team = (await byValue!.ok('POST', '/user_groups/create', { name: uniq('perm'), description: '', members: JSON.stringify([s.demo.member1.userId]) })).group_id as number;
  const anonymous = { direct_members: [s.demo.member1.userId], direct_subgroups: [team] };
  const expected = (setting: string, c: any) =>
    c.require_system_group ? `'${setting}' must be a system user group.` : setting === 'workplace_users_group' ? "'workplace_users_group' must be a group whose membership can only be managed by organization administrators." : 'ok';
  for (const [setting, c] of Object.entries<any>(supported.realm)) {
    for (const value of [team, anonymous]) {
      const got = outcome(await byValue!.call('PATCH', '/realm', { [setting]: { new: value } }));
      t.equal(got, expected(setting, c), `realm ${setting} = ${JSON.stringify(value)}`);
    }
  }
  // A group a realm permission uses cannot be deactivated (Zulip's objections), until the permission no longer names it.
  const busy = await byValue!.call('POST', `/user_groups/${team}/deactivate`);
  t.same([busy.status, busy.body.code, busy.body.objections?.find((o: any) => o.type === 'realm')?.settings.includes('can_add_custom_emoji_group')], [400, 'CANNOT_DEACTIVATE_GROUP_IN_USE', true]);
  for (const setting of Object.keys(supported.realm)) await byValue!.ok('PATCH', '/realm', { [setting]: { new: initial[`realm_${setting}`] } });

  // Channels: a new channel starts at each default; every system group tried.
  const name = uniq('perms');
  await channelOwner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const channel = (await channelOwner.ok('GET', '/streams')).streams.find((x: any) => x.name === name);
  for (const [setting, c] of Object.entries<any>(supported.stream)) {
    const expected = c.default_group_name === 'channel_creator' ? { direct_members: [(await channelOwner.ok('GET', '/users/me')).user_id], direct_subgroups: [] } : groupId(c.default_group_name);
    t.same(channel[setting], expected, `channel ${setting} starts at ${c.default_group_name}`);
    for (const group of SYSTEM) {
      const got = outcome(await channelOwner.call('PATCH', `/streams/${channel.stream_id}`, { [setting]: { new: groupId(group) } }));
      t.equal(got, allows(c, group) ? 'ok' : refusal(setting, group), `channel ${setting} = ${group}`);
    }
    t.equal(outcome(await channelOwner.call('PATCH', `/streams/${channel.stream_id}`, { [setting]: { new: team } })), 'ok', `channel ${setting} = a user group`);
  }
  await channelOwner.ok('DELETE', `/streams/${channel.stream_id}`);

  // User groups: every system group tried on each setting of a user group.
  for (const [setting, c] of Object.entries<any>(supported.group)) {
    for (const group of SYSTEM) {
      const got = outcome(await byGroup!.call('PATCH', `/user_groups/${team}`, { [setting]: { new: groupId(group) } }));
      t.equal(got, allows(c, group) ? 'ok' : refusal(setting, group), `group ${setting} = ${group}`);
    }
  }
  await byGroup!.ok('POST', `/user_groups/${team}/deactivate`);
});
