// Status: POST /users/me/status (only what is passed changes), GET
// /users/{id}/status, away as the negation of presence_enabled, events.
import t from 'tap';
import type { Params } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { asEveryone, callers, newPerson, outcome } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const ANON = '401 UNAUTHORIZED Missing authorization header for basic auth';

t.test('people status - every role sets its own status and reads others\'', async (t) => {
  t.same(await asEveryone(s, 'POST', '/users/me/status', { status_text: 'In a meeting' }, true), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok', anonymous: ANON });
  t.same(await asEveryone(s, 'GET', `/users/${s.demo.guest.userId}/status`, {}, true), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok', anonymous: ANON });
  t.same((await as.member.ok('GET', `/users/${s.demo.guest.userId}/status`)).status, { status_text: 'In a meeting' });
  t.equal(outcome(await as.member.call('GET', '/users/99999999/status'), true), '400 BAD_REQUEST No such user');
  // Leave the demo users as they were.
  t.same(await asEveryone(s, 'POST', '/users/me/status', { status_text: '' }), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok', anonymous: '401 UNAUTHORIZED' });
  t.same((await as.member.ok('GET', `/users/${s.demo.guest.userId}/status`)).status, {}, 'an empty text clears it');
});

t.test('people status - the six errors', async (t) => {
  const p = s.api.as(await newPerson(s));
  const cases: Array<[Params, string]> = [
    [{}, '400 BAD_REQUEST Client did not pass any new values.'],
    [{ status_text: 'x'.repeat(61) }, '400 BAD_REQUEST status_text is too long (limit: 60 characters).'],
    [{ emoji_code: '1f697' }, '400 BAD_REQUEST Client must pass emoji_name if they pass either emoji_code or reaction_type.'],
    [{ reaction_type: 'unicode_emoji' }, '400 BAD_REQUEST Client must pass emoji_name if they pass either emoji_code or reaction_type.'],
    [{ emoji_name: 'no_such_emoji' }, "400 BAD_REQUEST Emoji 'no_such_emoji' does not exist"],
    [{ emoji_name: 'car', emoji_code: '1f600', reaction_type: 'unicode_emoji' }, '400 BAD_REQUEST Invalid emoji name.'],
    [{ emoji_name: 'parrot', emoji_code: '99', reaction_type: 'realm_emoji' }, '400 BAD_REQUEST Invalid custom emoji.'],
    [{ emoji_name: 'car', emoji_code: 'car', reaction_type: 'service_extra_emoji' }, '400 BAD_REQUEST Invalid emoji name.'],
  ];
  for (const [params, want] of cases) t.equal(outcome(await p.call('POST', '/users/me/status', params), true), want, JSON.stringify(params));
  t.equal(outcome(await p.call('POST', '/users/me/status', { status_text: 'x'.repeat(60) })), 'ok', '60 code points are allowed');
  t.equal(outcome(await p.call('POST', '/users/me/status', { status_text: '🎉'.repeat(60) })), 'ok', 'counted as code points, not UTF-16 units');
  t.equal(outcome(await p.call('POST', '/users/me/status', { status_text: '  trimmed  ' })), 'ok');
  t.same((await p.ok('GET', `/users/${(await p.ok('GET', '/users/me')).user_id}/status`)).status, { status_text: 'trimmed' });
});

t.test('people status - only what is passed changes; emoji by name, code or both', async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  const status = async () => (await p.ok('GET', `/users/${person.userId}/status`)).status;
  await p.ok('POST', '/users/me/status', { status_text: 'Driving' });
  await p.ok('POST', '/users/me/status', { emoji_name: 'car' });
  t.same(await status(), { status_text: 'Driving', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' }, 'the emoji code comes from the emoji table');
  await p.ok('POST', '/users/me/status', { emoji_name: 'heart', emoji_code: '2764', reaction_type: 'unicode_emoji' });
  t.same(await status(), { status_text: 'Driving', emoji_name: 'heart', emoji_code: '2764', reaction_type: 'unicode_emoji' });
  await p.ok('POST', '/users/me/status', { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'service_extra_emoji' });
  t.same(await status(), { status_text: 'Driving', emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'service_extra_emoji' });
  await p.ok('POST', '/users/me/status', { status_text: '' });
  t.same(await status(), { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'service_extra_emoji' });
  await p.ok('POST', '/users/me/status', { emoji_name: '' });
  t.same(await status(), {}, 'an empty emoji name clears the emoji');
});

t.test('people status - away is the negation of presence_enabled (FL 148)', async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  const settings = async () => (await p.ok('POST', '/register', { fetch_event_types: ['user_settings', 'user_status'] }));
  await p.ok('POST', '/users/me/status', { away: true });
  let snap = await settings();
  t.equal(snap.user_settings.presence_enabled, false);
  t.same(snap.user_status[String(person.userId)], { away: true });
  t.same((await p.ok('GET', `/users/${person.userId}/status`)).status, { away: true });
  await p.ok('PATCH', '/settings', { presence_enabled: true });
  snap = await settings();
  t.notOk(String(person.userId) in snap.user_status, 'turning presence back on ends "away"');
  await p.ok('POST', '/users/me/status', { away: false, status_text: 'Back' });
  t.same((await p.ok('GET', `/users/${person.userId}/status`)).status, { status_text: 'Back' });
});

t.test('people status - user_status events carry what was passed, to everyone', async (t) => {
  const person = await newPerson(s);
  const p = s.api.as(person);
  const mine = await register(p, { event_types: ['user_status', 'user_settings'] });
  const other = await register(as.guest, { event_types: ['user_status'] });
  await p.ok('POST', '/users/me/status', { status_text: 'Lunch', emoji_name: 'car' });
  const seen = await waitFor(other, (e) => e.type === 'user_status' && e.user_id === person.userId);
  const { id: _id, ...event } = seen;
  t.same(event, { type: 'user_status', user_id: person.userId, status_text: 'Lunch', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' });
  await p.ok('POST', '/users/me/status', { away: true });
  t.same([(await waitFor(mine, (e) => e.type === 'user_settings')).property, (await waitFor(mine, (e) => e.type === 'user_settings' || e.type === 'user_status' && 'away' in e)).type], ['presence_enabled', 'user_status']);
  const away = await waitFor(other, (e) => e.type === 'user_status' && 'away' in e);
  t.same([away.away, 'status_text' in away], [true, false], 'only the away flag');
});
