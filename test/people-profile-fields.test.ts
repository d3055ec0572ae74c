// Custom profile fields: the realm's fields (administrators) and users'
// values for them, with the value rules of each of the eight types.
import t from 'tap';
import { type Params, uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { asEveryone, callers, newPerson, outcome } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const ANON = '401 UNAUTHORIZED Missing authorization header for basic auth';
const NOT_ADMIN = '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator';
const admin = as.admin;
const name = (label: string) => `${label} ${uniq('f').slice(-6)}`;

async function field(params: Record<string, unknown>): Promise<number> {
  return (await admin.ok('POST', '/realm/profile_fields', { name: name('Field'), ...params })).id;
}
const fields = async () => (await as.member.ok('GET', '/realm/profile_fields')).custom_fields as any[];
/** Built-in external accounts have fixed names: one left by an earlier run (a cluster run shares the realm) goes first. */
async function dropNamed(label: string): Promise<void> {
  for (const f of await fields()) if (f.name === label) await admin.ok('DELETE', `/realm/profile_fields/${f.id}`);
}

t.test('people profile fields - who may read and change the fields', async (t) => {
  t.same(await asEveryone(s, 'GET', '/realm/profile_fields', {}, true), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok', anonymous: ANON });
  t.same(await asEveryone(s, 'POST', '/realm/profile_fields', () => ({ name: name('Role table'), field_type: 1 }), true), { owner: 'ok', admin: 'ok', moderator: NOT_ADMIN, member: NOT_ADMIN, guest: NOT_ADMIN, bot: NOT_ADMIN, anonymous: ANON });
  const id = await field({ field_type: 1 });
  t.same(await asEveryone(s, 'PATCH', `/realm/profile_fields/${id}`, { hint: 'A hint' }, true), { owner: 'ok', admin: 'ok', moderator: NOT_ADMIN, member: NOT_ADMIN, guest: NOT_ADMIN, bot: NOT_ADMIN, anonymous: ANON });
  const ids = (await fields()).map((f) => f.id);
  t.same(await asEveryone(s, 'PATCH', '/realm/profile_fields', { order: ids }, true), { owner: 'ok', admin: 'ok', moderator: NOT_ADMIN, member: NOT_ADMIN, guest: NOT_ADMIN, bot: NOT_ADMIN, anonymous: ANON });
  t.same(await asEveryone(s, 'PATCH', '/users/me/profile_data', { data: [{ id, value: 'mine' }] }, true), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok', anonymous: ANON }, 'everyone edits their own editable fields');
  t.same((await as.guest.ok('GET', '/users/me')).profile_data[String(id)], { value: 'mine', rendered_value: '<p>mine</p>' });
  const locked = await field({ field_type: 1, editable_by_user: false });
  const LOCKED = '400 BAD_REQUEST You are not allowed to change this field. Contact an administrator to update it.';
  t.same(await asEveryone(s, 'PATCH', '/users/me/profile_data', { data: [{ id: locked, value: 'mine' }] }, true), { owner: 'ok', admin: 'ok', moderator: LOCKED, member: LOCKED, guest: LOCKED, bot: LOCKED, anonymous: ANON }, 'administrators can always edit (FL 296)');
  const targets = new Map<string, number>();
  t.same(
    await asEveryone(s, 'DELETE', (who) => `/realm/profile_fields/${targets.get(who)}`, async (who) => {
      targets.set(who, await field({ field_type: 1 }));
      return {};
    }, true),
    { owner: 'ok', admin: 'ok', moderator: NOT_ADMIN, member: NOT_ADMIN, guest: NOT_ADMIN, bot: NOT_ADMIN, anonymous: ANON },
  );
});

t.test('people profile fields - creating, updating, reordering and deleting', async (t) => {
  const label = name('Team');
  const choices = { a: { text: 'Alpha', order: '1' }, b: { text: 'Beta', order: '2' } };
  const { id } = await admin.ok('POST', '/realm/profile_fields', { name: label, hint: 'Your team', field_type: 3, field_data: choices, required: true, editable_by_user: false });
  const created = (await fields()).find((f) => f.id === id);
  t.same(created, { id, name: label, hint: 'Your team', type: 3, field_data: JSON.stringify(choices), order: created.order, required: true, editable_by_user: false });
  await dropNamed('GitHub username');
  const gh = await admin.ok('POST', '/realm/profile_fields', { field_type: 7, field_data: { subtype: 'github' } });
  t.teardown(() => admin.ok('DELETE', `/realm/profile_fields/${gh.id}`));
  t.equal((await fields()).find((f) => f.id === gh.id).name, 'GitHub username', 'a built-in external account names itself');
  const pronouns = await admin.ok('POST', '/realm/profile_fields', { name: name('Pronouns'), field_type: 8, use_for_user_matching: false });
  t.ok(pronouns.id > 0, 'pronoun fields (FL 151)');

  const errors: Array<[Params, string]> = [
    [{ name: name('Bad'), field_type: 9 }, '400 BAD_REQUEST Invalid field type.'],
    [{ name: '', field_type: 1 }, '400 BAD_REQUEST Label cannot be blank.'],
    [{ name: 'x'.repeat(41), field_type: 1 }, '400 BAD_REQUEST name is too long (limit: 40 characters)'],
    [{ name: name('Hint'), hint: 'x'.repeat(81), field_type: 1 }, '400 BAD_REQUEST hint is too long (limit: 80 characters)'],
    [{ name: label, field_type: 1 }, '400 BAD_REQUEST A field with that label already exists.'],
    [{ name: name('Choice'), field_type: 3, field_data: {} }, '400 BAD_REQUEST Field must have at least one choice.'],
    [{ name: name('Users'), field_type: 6, display_in_profile_summary: true }, '400 BAD_REQUEST Field type not supported for display in profile summary.'],
    [{ name: name('Date'), field_type: 4, use_for_user_matching: true }, '400 BAD_REQUEST Only text and external account fields can be used for user matching.'],
    [{ name: name('Ext'), field_type: 7, field_data: { subtype: 'custom' } }, '400 BAD_REQUEST Custom external account must define URL pattern'],
  ];
  for (const [params, want] of errors) t.equal(outcome(await admin.call('POST', '/realm/profile_fields', params), true), want, JSON.stringify(params));
  t.equal(outcome(await admin.call('POST', '/realm/profile_fields', { name: name('No type') }), true), "400 REQUEST_VARIABLE_MISSING Missing 'field_type' argument");

  const matching = await admin.ok('POST', '/realm/profile_fields', { name: name('Login'), field_type: 1, use_for_user_matching: true });
  t.equal((await fields()).find((f) => f.id === matching.id).use_for_user_matching, true, 'use_for_user_matching is present only when true (FL 455)');
  t.notOk('use_for_user_matching' in created);

  await admin.ok('PATCH', `/realm/profile_fields/${id}`, { name: `${label} 2`, required: false });
  const updated = (await fields()).find((f) => f.id === id);
  t.same([updated.name, updated.required, updated.editable_by_user], [`${label} 2`, false, false]);
  t.equal(outcome(await admin.call('PATCH', `/realm/profile_fields/${gh.id}`, { name: 'Renamed' }), true), '400 BAD_REQUEST Default custom field cannot be updated.');
  t.equal(outcome(await admin.call('PATCH', '/realm/profile_fields/99999999', { name: 'X' }), true), '400 BAD_REQUEST Field id 99999999 not found.');

  const order = (await fields()).map((f) => f.id).reverse();
  await admin.ok('PATCH', '/realm/profile_fields', { order });
  t.same((await fields()).map((f) => f.id), order);
  t.equal(outcome(await admin.call('PATCH', '/realm/profile_fields', { order: order.slice(1) }), true), '400 BAD_REQUEST Invalid order mapping.');

  await admin.ok('DELETE', `/realm/profile_fields/${pronouns.id}`);
  t.notOk((await fields()).some((f) => f.id === pronouns.id));
  t.equal(outcome(await admin.call('DELETE', `/realm/profile_fields/${pronouns.id}`), true), `400 BAD_REQUEST Field id ${pronouns.id} not found.`);
});

t.test('people profile fields - at most two in the profile summary', async (t) => {
  const shown = (await fields()).filter((f) => f.display_in_profile_summary);
  const mine: number[] = [];
  // The first one a Paragraph (long text), allowed in the summary since FL 476.
  for (let i = shown.length; i < 2; i++) mine.push(await field({ field_type: i === shown.length ? 2 : 1, display_in_profile_summary: true }));
  t.equal((await fields()).filter((f) => f.display_in_profile_summary).length, 2);
  t.ok(shown.length === 2 || (await fields()).some((f) => f.id === mine[0] && f.type === 2 && f.display_in_profile_summary), 'a Paragraph field in the summary (FL 476)');
  t.equal(outcome(await admin.call('POST', '/realm/profile_fields', { name: name('Third'), field_type: 2, display_in_profile_summary: true }), true), '400 BAD_REQUEST Only 2 custom profile fields can be displayed in the profile summary.');
  const id = await field({ field_type: 2 });
  t.equal(outcome(await admin.call('PATCH', `/realm/profile_fields/${id}`, { display_in_profile_summary: true })), '400 BAD_REQUEST');
  for (const f of mine) await admin.ok('DELETE', `/realm/profile_fields/${f}`);
});

t.test('people profile fields - values: each type\'s rule, the two BAD_REQUEST errors, rendering', async (t) => {
  const ids = {
    short: await field({ field_type: 1 }),
    long: await field({ field_type: 2 }),
    select: await field({ field_type: 3, field_data: { x: { text: 'Ex', order: '1' } } }),
    date: await field({ field_type: 4 }),
    link: await field({ field_type: 5 }),
    users: await field({ field_type: 6 }),
    external: await dropNamed('Twitter username').then(() => field({ field_type: 7, field_data: { subtype: 'twitter' } })),
    locked: await field({ field_type: 1, editable_by_user: false }),
  };
  const person = await newPerson(s);
  const p = s.api.as(person);
  const bad: Array<[number, unknown, string]> = [
    [ids.short, 'x'.repeat(51), 'is too long (limit: 50 characters)'],
    [ids.long, 'x'.repeat(501), 'is too long (limit: 500 characters)'],
    [ids.select, 'y', "'y' is not a valid choice for"],
    [ids.date, '2024-02-30', 'is not a date'],
    [ids.link, 'not a url', 'is not a URL'],
    [ids.users, [99999999], 'Invalid user ID: 99999999'],
    [ids.users, [s.demo.bot.userId], `User with ID ${s.demo.bot.userId} is a bot`],
    [ids.users, 'text', 'is not a list'],
  ];
  for (const [id, value, msg] of bad) {
    const r = await p.call('PATCH', '/users/me/profile_data', { data: [{ id, value }] });
    t.equal(outcome(r), '400 BAD_REQUEST', JSON.stringify(value));
    t.match(r.body.msg, msg);
  }
  t.equal(outcome(await p.call('PATCH', '/users/me/profile_data', { data: [{ id: ids.locked, value: 'mine' }] }), true), '400 BAD_REQUEST You are not allowed to change this field. Contact an administrator to update it.');
  t.equal(outcome(await p.call('PATCH', '/users/me/profile_data', { data: [{ id: 99999999, value: 'x' }] }), true), '400 BAD_REQUEST Field id 99999999 not found.');

  const good = [
    { id: ids.short, value: 'Short **text**' },
    { id: ids.long, value: 'Long *text*' },
    { id: ids.select, value: 'x' },
    { id: ids.date, value: '2024-02-29' },
    { id: ids.link, value: 'https://parley.example/me' },
    { id: ids.users, value: [s.demo.owner.userId, s.demo.admin.userId] },
    { id: ids.external, value: 'parley' },
  ];
  await p.ok('PATCH', '/users/me/profile_data', { data: good });
  const data = (await p.ok('GET', `/users/${person.userId}`, { include_custom_profile_fields: true })).user.profile_data;
  t.same(data[String(ids.short)], { value: 'Short **text**', rendered_value: '<p>Short <strong>text</strong></p>' }, 'short and long text render');
  t.same(data[String(ids.long)], { value: 'Long *text*', rendered_value: '<p>Long <em>text</em></p>' });
  t.same(data[String(ids.date)], { value: '2024-02-29' });
  t.same(data[String(ids.users)], { value: JSON.stringify([s.demo.owner.userId, s.demo.admin.userId]) });
  const listed = (await as.guest.ok('GET', '/users', { include_custom_profile_fields: true, user_ids: [person.userId] })).members[0];
  t.same(listed.profile_data, data, 'GET /users includes the same data');
  t.notOk('profile_data' in (await as.guest.ok('GET', '/users', { user_ids: [person.userId] })).members[0], 'only when asked');

  await admin.ok('PATCH', `/users/${person.userId}`, { profile_data: [{ id: ids.locked, value: 'set by admin' }, { id: ids.short, value: null }] });
  const after = (await p.ok('GET', '/users/me')).profile_data;
  t.same(after[String(ids.locked)], { value: 'set by admin', rendered_value: '<p>set by admin</p>' }, 'administrators edit any field');
  t.notOk(String(ids.short) in after, 'null removes a value');
  t.equal(outcome(await as.moderator.call('PATCH', `/users/${person.userId}`, { profile_data: [{ id: ids.locked, value: 'no' }] }), true), '400 BAD_REQUEST Insufficient permission');
  await admin.ok('DELETE', `/realm/profile_fields/${ids.long}`);
  t.notOk(String(ids.long) in (await p.ok('GET', '/users/me')).profile_data, "a deleted field's values are gone");
  await admin.ok('DELETE', `/realm/profile_fields/${ids.external}`);
});

t.test('people profile fields - events: the field list, and realm_user updates for values', async (t) => {
  const watch = await register(as.member, { event_types: ['custom_profile_fields', 'realm_user'] });
  const id = await field({ field_type: 1 });
  const e = await waitFor(watch, (x) => x.type === 'custom_profile_fields');
  t.ok(e.fields.some((f: any) => f.id === id), 'every field, after the change');
  const person = await newPerson(s);
  await s.api.as(person).ok('PATCH', '/users/me/profile_data', { data: [{ id, value: 'hello' }] });
  const v = await waitFor(watch, (x) => x.type === 'realm_user' && x.op === 'update' && 'custom_profile_field' in x.person);
  t.same(v.person, { user_id: person.userId, custom_profile_field: { id, value: 'hello', rendered_value: '<p>hello</p>' } });
  await s.api.as(person).ok('PATCH', '/users/me/profile_data', { data: [{ id, value: null }] });
  const removed = await waitFor(watch, (x) => x.type === 'realm_user' && x.op === 'update' && 'custom_profile_field' in x.person);
  t.same(removed.person, { user_id: person.userId, custom_profile_field: { id, value: null } });
  await admin.ok('DELETE', `/realm/profile_fields/${id}`);
  t.notOk((await waitFor(watch, (x) => x.type === 'custom_profile_fields')).fields.some((f: any) => f.id === id));
});
