// An honest server: the feature level it advertises is what it serves, narrow
// operators it does not implement are refused, and parameters it accepts but
// does not act on are named in ignored_parameters_unsupported.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { CLIENT_CAPABILITIES, FEATURES, isImplemented } from '../lib/features.ts';
import { ROUTES } from '../gateway/routes/index.ts';
import { uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { ADVERTISED } from './helpers/features.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const maria = s.api.as(s.demo.member1);
const served = new Set(ROUTES.map((r) => `${r.method} ${r.path}`));

/** A concrete path for a route template (`{id}` segments filled with 1). */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, '1');

t.test('features - the advertised level is one below the first feature level not implemented', async (t) => {
  const settings = await s.api.ok('GET', '/server_settings');
  const register = await maria.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.equal(settings.service_feature_level, ADVERTISED);
  t.equal(register.service_feature_level, ADVERTISED);
  t.equal(register.zulip_feature_level, ADVERTISED, 'the spelling older clients read says the same');
  for (const f of FEATURES.filter((f) => f.level <= ADVERTISED)) t.ok(isImplemented(f, served), `level ${f.level} (${f.what}) is advertised, so it is implemented`);
  for (let level = 1; level <= ADVERTISED; level++) t.ok(FEATURES.some((f) => f.level === level), `level ${level} has an entry`);
  const next = FEATURES.filter((f) => f.level === ADVERTISED + 1);
  t.ok(next.length === 0 || next.some((f) => !isImplemented(f, served)), `level ${ADVERTISED + 1} is not advertised: it has no entry or one not implemented`);
});

/** The names of the `t.test` cases of a test file, as written (quotes unescaped). */
function caseNames(file: string): Set<string> {
  const text = readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');
  const names = new Set<string>();
  for (const m of text.matchAll(/t\.test\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/g)) names.add(m[2]!.replace(/\\(.)/g, '$1'));
  return names;
}

t.test('features - every level of Zulip\'s changelog up to 148 has entries; each done one names a test case that exists', async (t) => {
  for (let level = 1; level <= 148; level++) t.ok(FEATURES.some((f) => f.level === level), `level ${level} has an entry`);
  const cases = new Map<string, Set<string>>();
  for (const f of FEATURES) {
    if (f.missing !== undefined) {
      t.notOk(isImplemented(f, served), `level ${f.level} (${f.what}) is missing: ${f.missing}`);
      continue;
    }
    if (f.level > 148 && !f.test) continue;
    if (f.noChange) {
      t.notOk(f.test || f.routes, `level ${f.level} is a release or reserved level with nothing to show`);
      continue;
    }
    if (!f.test) {
      t.fail(`level ${f.level} (${f.what}) is done but names no test`);
      continue;
    }
    const { file, name } = f.test;
    if (!cases.has(file)) cases.set(file, caseNames(file));
    t.ok(cases.get(file)!.has(name), `level ${f.level}: ${file} has the case "${name}"`);
  }
});

t.test('features - the derived level stops at the first level not implemented, and at a level without an entry', async (t) => {
  const missing = FEATURES.filter((f) => f.level >= 1 && !isImplemented(f, served)).map((f) => f.level);
  const first = Math.min(...missing);
  t.ok(ADVERTISED < first, `nothing at or above level ${first} (${FEATURES.find((f) => f.level === first && !isImplemented(f, served))?.what}) is advertised`);
  const covered = new Set(FEATURES.map((f) => f.level));
  let gap = 1;
  while (covered.has(gap)) gap++;
  t.ok(ADVERTISED < gap, `level ${gap} has no entry, so nothing from it up is advertised`);
});

t.test('features - every route of every advertised feature answers (no 404)', async (t) => {
  const routes = new Set(FEATURES.filter((f) => f.level <= ADVERTISED).flatMap((f) => f.routes ?? []));
  t.ok(routes.size > 0);
  for (const r of routes) {
    const [method, path] = r.split(' ') as [string, string];
    const res = await maria.call(method, concrete(path), {});
    // The router's 404 says 'Not Found'; a route's own (an unknown reminder or navigation view, as Zulip answers) shows it is served.
    t.not(res.status === 404 ? res.body.msg : null, 'Not Found', `${r} answers (${res.status}${res.status === 404 ? `: ${res.body.msg}` : ''})`);
    t.not(res.status, 405, `${r} takes ${method}`);
  }
});

t.test('features - routes of features not yet implemented answer 404, not a half answer', async (t) => {
  const missing = FEATURES.filter((f) => !isImplemented(f, served)).flatMap((f) => (f.routes ?? []).filter((r) => !served.has(r)));
  for (const r of missing.slice(0, 20)) {
    const [method, path] = r.split(' ') as [string, string];
    const res = await maria.call(method, concrete(path), {});
    t.ok(res.status === 404 || res.status === 405, `${r} is not served (${res.status})`);
  }
});

t.test('features - every is:/has: operand of Zulip is served; anything else is BAD_NARROW; near does not filter; with names a conversation', async (t) => {
  for (const [op, operand] of [['is', 'dm'], ['is', 'private'], ['is', 'starred'], ['is', 'unread'], ['is', 'mentioned'], ['is', 'resolved'], ['is', 'followed'], ['is', 'muted'], ['is', 'alerted'], ['has', 'link'], ['has', 'image'], ['has', 'attachment'], ['has', 'reaction']]) {
    const r = await maria.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: op, operand }] });
    t.equal(r.status, 200, `${op}:${operand} is served`);
  }
  for (const [op, operand] of [['is', 'nonsense'], ['has', 'nonsense'], ['nonsense', 'x']]) {
    const r = await maria.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: op, operand }] });
    t.same([r.status, r.body.code], [400, 'BAD_NARROW'], `${op}:${operand} is refused`);
  }
  const topic = uniq('near');
  const a = await maria.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: 'first' });
  const b = await maria.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('other'), content: 'elsewhere' });
  const near = await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'near', operand: a.id }] });
  t.ok(near.messages.some((m: any) => m.id === b.id), 'near does not filter (as in Zulip)');
  const withA = await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'with', operand: a.id }] });
  t.same(withA.messages.map((m: any) => m.id), [a.id], "with:<id> is the message's conversation (channel and topic)");
  const dup = await maria.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'with', operand: a.id }, { operator: 'with', operand: b.id }] });
  t.equal(dup.body.code, 'BAD_NARROW', 'two with terms');
  const gone = await maria.get('/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'with', operand: 999_999_999 }] });
  t.equal(gone.body.code, 'BAD_NARROW', 'with a message that does not exist, and nothing else naming a conversation');
});

t.test('features - parameters accepted without effect are reported in ignored_parameters_unsupported', async (t) => {
  const sub = await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('announced') }], announce: true });
  t.equal(sub.ignored_parameters_unsupported, undefined, 'announce acts (Notification Bot announces channels)');
  const caps = { user_avatar_url_field_optional: true, user_settings_object: true, simplified_presence_events: true, notification_settings_null: true, empty_topic_name: true };
  const reg = await maria.ok('POST', '/register', { fetch_event_types: ['realm'], slim_presence: true, client_capabilities: caps });
  for (const k of Object.keys(caps)) {
    const reported = (reg.ignored_parameters_unsupported ?? []).includes(`client_capabilities.${k}`);
    t.equal(reported, CLIENT_CAPABILITIES[k] === false, `client_capabilities.${k} is ${CLIENT_CAPABILITIES[k] ? 'honoured, not reported' : 'not honoured yet, and reported'}`);
  }
  t.notOk((reg.ignored_parameters_unsupported ?? []).includes('slim_presence'), 'slim_presence acts (presence exists)');
  const unknown = await maria.ok('GET', '/users/me/subscriptions', { no_such_parameter: 1 });
  t.same(unknown.ignored_parameters_unsupported, ['no_such_parameter']);
});

t.test('features - what clients send below a level is taken: a JSON-encoded full_name (Zulip before FL 106)', async (t) => {
  const admin = s.api.as(s.demo.admin);
  const id = s.demo.member2.userId;
  const before = (await admin.ok('GET', `/users/${id}`)).user.full_name;
  await admin.ok('PATCH', `/users/${id}`, { full_name: JSON.stringify(`${before} Q`) });
  t.equal((await admin.ok('GET', `/users/${id}`)).user.full_name, `${before} Q`, 'the JSON string is decoded');
  await admin.ok('PATCH', `/users/${id}`, { full_name: before });
  t.equal((await admin.ok('GET', `/users/${id}`)).user.full_name, before, 'a plain one is taken as sent');
});

t.test('features - GET /server_settings names every sign-in backend of Zulip, gitlab among them (FL 1)', async (t) => {
  const settings = await s.api.ok('GET', '/server_settings');
  t.same(settings.authentication_methods, { password: true, dev: false, email: true, ldap: false, remoteuser: false, github: false, azuread: false, gitlab: false, apple: false, google: false, saml: false, 'openid connect': false });
  t.equal(settings.email_auth_enabled, true, 'email and password are the one way in');
});

t.test('features - details of early levels: GET /users/me (FL 10), update_message events (FL 114), client_gravatar by default (FL 92)', async (t) => {
  const me = await maria.ok('GET', '/users/me');
  for (const k of ['avatar_version', 'is_guest', 'is_active', 'timezone', 'date_joined', 'avatar_url']) t.ok(k in me, `GET /users/me has ${k}`);
  t.notOk('client_id' in me || 'short_name' in me || 'pointer' in me, 'and not the fields FL 10 and 16 removed');
  const q = await register(maria, { event_types: ['update_message'] });
  const sent = await maria.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('fl114'), content: 'before' });
  await maria.ok('PATCH', `/messages/${sent.id}`, { content: 'after' });
  const e = await waitFor(q, (e) => e.type === 'update_message' && e.message_id === sent.id);
  t.match(e, { rendering_only: false, user_id: s.demo.member1.userId, edit_timestamp: Number, stream_id: Number }, 'rendering_only, user_id and edit_timestamp (and stream_id, FL 112)');
  const plain = await maria.ok('GET', '/users', {});
  const explicit = await maria.ok('GET', '/users', { client_gravatar: true });
  t.same(plain.members, explicit.members, 'no client_gravatar is client_gravatar=true');
  t.not(JSON.stringify(explicit.members), JSON.stringify((await maria.ok('GET', '/users', { client_gravatar: false })).members), 'and false differs (avatar URLs given)');
});

t.test('features - the server fields of POST /register (FL 4 and 72): limits, server_generation, Jitsi', async (t) => {
  const a = await maria.ok('POST', '/register', { fetch_event_types: ['realm'] });
  for (const k of ['jitsi_server_url', 'development_environment', 'server_generation', 'password_min_length', 'password_min_guesses', 'max_file_upload_size_mib', 'max_avatar_file_size_mib', 'server_inline_image_preview', 'server_inline_url_embed_preview', 'server_avatar_changes_disabled', 'server_name_changes_disabled', 'max_icon_file_size_mib', 'max_logo_file_size_mib', 'realm_upload_quota_mib']) t.ok(k in a, k);
  t.match(a, { max_avatar_file_size_mib: 5, max_icon_file_size_mib: 5, max_logo_file_size_mib: 5, development_environment: false });
  t.ok(Number.isInteger(a.server_generation) && a.server_generation <= Date.now() / 1000 && a.server_generation > 1_600_000_000, 'server_generation is when the server started, in seconds');
  const b = await maria.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.equal(b.server_generation, a.server_generation, 'and stays while it runs');
  t.notOk('server_generation' in (await maria.ok('POST', '/register', { fetch_event_types: ['message'] })), 'it belongs to the realm keys, as in Zulip');
});
