// Users: reading users, PATCH /users/{id} with the role rules, deactivation
// (immediate, queues end), reactivation, DELETE /users/me, as every role.
import t from 'tap';
import { Api } from './helpers/api.ts';
import { poll, register, waitFor } from './helpers/events.ts';
import { asEveryone, callers, newPerson, outcome, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const owner = as.owner;
const admin = as.admin;
const ANON_401 = '401 UNAUTHORIZED';
/** A deactivated account's key, as Zulip answers it (UserDeactivatedError). */
const DEACTIVATED = '401 USER_DEACTIVATED';
/** The same, in tables that keep messages. */
const ANON = '401 UNAUTHORIZED Missing authorization header for basic auth';
const NO_PERMISSION = '400 BAD_REQUEST Insufficient permission';

/** The other gateway in a cluster run (the same one in embedded mode): revocations must reach every gateway. */
const otherGateway = (creds: { email: string; apiKey: string }) => new Api(s.urls[s.urls.length - 1]!, creds);

/** Makes the demo owner the only active human owner (other owners are leftovers of earlier runs). */
async function onlyDemoOwner(): Promise<void> {
  const { members } = await owner.ok('GET', '/users');
  for (const m of members) if (m.role === ROLE.owner && m.is_active && !m.is_bot && m.user_id !== s.demo.owner.userId) await owner.ok('PATCH', `/users/${m.user_id}`, { role: ROLE.member });
}

t.test('people users - GET /users/me, /users/{id} and /users/{email} as every role', async (t) => {
  t.same(await asEveryone(s, 'GET', '/users/me'), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok', anonymous: ANON_401 });
  t.same(await asEveryone(s, 'GET', `/users/${s.demo.owner.userId}`), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok', anonymous: ANON_401 });
  t.same(await asEveryone(s, 'GET', `/users/${encodeURIComponent(s.demo.admin.email)}`), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok', anonymous: ANON_401 });

  const self = await as.member.ok('GET', '/users/me');
  t.equal(self.user_id, s.demo.member1.userId);
  t.equal(self.email, s.demo.member1.email);
  t.equal(self.role, ROLE.member);
  t.match(self.avatar_url, /^https:\/\//, 'GET /users/me gives the real avatar URL');
  t.type(self.profile_data, 'object', 'and the custom profile data');
  t.type(self.max_message_id, 'number');

  const byId = await as.guest.ok('GET', `/users/${s.demo.bot.userId}`);
  t.equal(byId.user.user_id, s.demo.bot.userId);
  t.equal(byId.user.is_bot, true);
  t.equal(byId.user.bot_owner_id, s.demo.owner.userId);
  t.equal(byId.user.avatar_url, null, 'client_extavatar defaults to true');
  t.notOk('profile_data' in byId.user);
  const withProfile = await as.guest.ok('GET', `/users/${s.demo.owner.userId}`, { include_custom_profile_fields: true, client_extavatar: false });
  t.type(withProfile.user.profile_data, 'object');
  t.match(withProfile.user.avatar_url, /^https:\/\//);
  const byEmail = await as.member.ok('GET', `/users/${encodeURIComponent(s.demo.admin.email.toUpperCase())}`);
  t.equal(byEmail.user.user_id, s.demo.admin.userId, 'emails match case-insensitively');

  t.equal(outcome(await as.member.get('/users/99999999'), true), '400 BAD_REQUEST No such user');
  t.equal(outcome(await as.member.get('/users/nobody@parley.example'), true), '400 BAD_REQUEST No such user');
});

t.test('people users - GET /users and POST /users as every role', async (t) => {
  t.same(await asEveryone(s, 'GET', '/users', {}, true), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: 'ok', bot: 'ok', anonymous: ANON }, 'no public access option: credentials are needed');
  const created = await asEveryone(s, 'POST', '/users', (who) => ({ email: `made-by-${who}-${Date.now()}@parley.example`, password: 'long enough', full_name: `Made by ${who}` }), true);
  const ADMINS_ONLY = '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator';
  t.same(created, {
    owner: 'ok',
    admin: '400 BAD_REQUEST User not authorized to create users',
    moderator: ADMINS_ONLY,
    member: ADMINS_ONLY,
    guest: ADMINS_ONLY,
    bot: ADMINS_ONLY,
    anonymous: ANON,
  }, 'administrators holding can_create_users (FL 36): the demo owner');
  t.equal(outcome(await owner.call('POST', '/users', { email: `short-${Date.now()}@parley.example`, password: 'x', full_name: '  ' }), true), '400 BAD_REQUEST Name too short!');
});

t.test('people users - PATCH /users/{id}: who may change another user', async (t) => {
  const targets = new Map<string, number>();
  const result = await asEveryone(s, 'PATCH', (who) => `/users/${targets.get(who)}`, async (who) => {
    targets.set(who, (await newPerson(s)).userId);
    return { full_name: `Renamed by ${who}` };
  }, true);
  t.same(result, { owner: 'ok', admin: 'ok', moderator: NO_PERMISSION, member: NO_PERMISSION, guest: NO_PERMISSION, bot: NO_PERMISSION, anonymous: ANON });
  t.equal((await owner.ok('GET', `/users/${targets.get('admin')}`)).user.full_name, 'Renamed by admin');
  t.equal((await owner.ok('GET', `/users/${targets.get('member')}`)).user.full_name.startsWith('Renamed'), false, 'a refused change changed nothing');
  t.equal(outcome(await admin.call('PATCH', '/users/99999999', { full_name: 'X' }), true), '400 BAD_REQUEST No such user');
});

t.test('people users - role changes: only owners touch the owner role, never the last owner', async (t) => {
  const p = await newPerson(s);
  const role = async (id: number) => (await owner.ok('GET', `/users/${id}`)).user.role;
  t.equal(outcome(await admin.call('PATCH', `/users/${p.userId}`, { role: ROLE.moderator })), 'ok', 'an administrator makes a moderator');
  t.equal(await role(p.userId), ROLE.moderator);
  t.equal(outcome(await admin.call('PATCH', `/users/${p.userId}`, { role: ROLE.owner }), true), '400 UNAUTHORIZED_PRINCIPAL Must be an organization owner');
  t.equal(await role(p.userId), ROLE.moderator);
  t.equal(outcome(await owner.call('PATCH', `/users/${p.userId}`, { role: ROLE.owner })), 'ok', 'an owner makes an owner');
  t.equal(outcome(await admin.call('PATCH', `/users/${p.userId}`, { role: ROLE.member }), true), '400 UNAUTHORIZED_PRINCIPAL Must be an organization owner', 'an administrator cannot demote an owner');
  t.equal(outcome(await as.moderator.call('PATCH', `/users/${p.userId}`, { role: ROLE.member }), true), NO_PERMISSION);
  t.equal(outcome(await owner.call('PATCH', `/users/${p.userId}`, { role: ROLE.guest })), 'ok', 'an owner demotes another owner');
  t.equal(await role(p.userId), ROLE.guest);
  const bad = await owner.call('PATCH', `/users/${p.userId}`, { role: 500 });
  t.equal(outcome(bad), '400 BAD_REQUEST');
  t.match(bad.body.msg, /Invalid role/);
  t.equal(bad.body.var_name, 'role');

  await onlyDemoOwner();
  t.equal(
    outcome(await owner.call('PATCH', `/users/${s.demo.owner.userId}`, { role: ROLE.admin }), true),
    '400 BAD_REQUEST The owner permission cannot be removed from the only organization owner.',
  );
  t.equal(await role(s.demo.owner.userId), ROLE.owner);
});

t.test('people users - full name and email changes by administrators', async (t) => {
  const p = await newPerson(s);
  t.equal(outcome(await admin.call('PATCH', `/users/${p.userId}`, { full_name: 'x'.repeat(101) }), true), '400 BAD_REQUEST Name too long!');
  t.equal(outcome(await admin.call('PATCH', `/users/${p.userId}`, { full_name: 'Bad*Name' }), true), '400 BAD_REQUEST Invalid characters in name!');
  t.equal(outcome(await admin.call('PATCH', `/users/${p.userId}`, { full_name: '   ' })), 'ok', 'a blank name is ignored');
  t.equal((await admin.ok('GET', `/users/${p.userId}`)).user.full_name, p.fullName);
  // PATCH /users/{email} (FL 313): the user found as GET /users/{email} finds them, with the same rules.
  await admin.ok('PATCH', `/users/${encodeURIComponent(p.email)}`, { full_name: `${p.fullName} By Email` });
  t.equal((await admin.ok('GET', `/users/${p.userId}`)).user.full_name, `${p.fullName} By Email`, 'renamed by email');
  await admin.ok('PATCH', `/users/${encodeURIComponent(p.email)}`, { full_name: p.fullName });
  t.equal(outcome(await admin.call('PATCH', '/users/nobody-here@parley.example', { full_name: 'X' }), true), '400 BAD_REQUEST No such user');
  t.equal(outcome(await s.api.as(p).call('PATCH', `/users/${encodeURIComponent(s.demo.member2.email)}`, { full_name: 'X' }), true), '400 BAD_REQUEST Insufficient permission', 'a member may not');

  const newEmail = `moved-${p.userId}-${Date.now()}@parley.example`;
  t.equal(outcome(await admin.call('PATCH', `/users/${p.userId}`, { new_email: newEmail }), true), '400 BAD_REQUEST User not authorized to change user emails', 'an administrator without can_change_user_emails');
  t.equal(outcome(await owner.call('PATCH', `/users/${p.userId}`, { new_email: s.demo.admin.email }), true), `400 BAD_REQUEST Email '${s.demo.admin.email}' already in use`);
  const bad = await owner.call('PATCH', `/users/${p.userId}`, { new_email: 'not-an-email' });
  t.equal(outcome(bad), '400 BAD_REQUEST');
  t.equal(bad.body.var_name, 'new_email');
  t.equal(outcome(await s.api.as(p).call('GET', '/users/me')), 'ok');
  t.equal(outcome(await owner.call('PATCH', `/users/${p.userId}`, { new_email: newEmail })), 'ok', 'the owner, who holds can_change_user_emails');
  t.equal((await owner.ok('GET', `/users/${p.userId}`)).user.email, newEmail);
  t.equal(outcome(await otherGateway(p).call('GET', '/users/me')), ANON_401, 'the old API email stops working at once');
  t.equal(outcome(await otherGateway({ email: newEmail, apiKey: p.apiKey }).call('GET', '/users/me')), 'ok', 'the key works with the new email');
});

t.test('people users - deactivation: who may, and the key and queues end at once', async (t) => {
  const targets = new Map<string, number>();
  const result = await asEveryone(s, 'DELETE', (who) => `/users/${targets.get(who)}`, async (who) => {
    targets.set(who, (await newPerson(s)).userId);
    return {};
  }, true);
  t.same(result, { owner: 'ok', admin: 'ok', moderator: NO_PERMISSION, member: NO_PERMISSION, guest: NO_PERMISSION, bot: NO_PERMISSION, anonymous: ANON });
  t.equal((await owner.ok('GET', `/users/${targets.get('owner')}`)).user.is_active, false, 'a deactivated user is still found');
  t.equal((await owner.ok('GET', `/users/${targets.get('member')}`)).user.is_active, true);

  const p = await newPerson(s);
  const me = s.api.as(p);
  t.equal(outcome(await me.call('GET', '/users/me')), 'ok', 'the key works (and is cached by the gateway)');
  t.equal(outcome(await otherGateway(p).call('GET', '/users/me')), 'ok');
  const q = await register(me, { event_types: ['realm_user'] });
  const waiting = poll(q, { timeoutMs: 10_000 });
  await new Promise((r) => setTimeout(r, 100));
  await admin.ok('DELETE', `/users/${p.userId}`);
  const refused = await otherGateway(p).call('GET', '/users/me');
  t.equal(outcome(refused, true), '401 USER_DEACTIVATED Account is deactivated', 'refused at once, on every gateway, as deactivated');
  t.equal(outcome(await me.call('GET', '/users/me')), DEACTIVATED);
  const events = await waiting;
  t.same(events.map((e) => [e.type, e.op, e.person]), [['realm_user', 'update', { user_id: p.userId, is_active: false }]], 'the waiting poll ends with the deactivation');

  t.equal(outcome(await admin.call('DELETE', `/users/${p.userId}`), true), '400 BAD_REQUEST User is deactivated');
  t.equal(outcome(await admin.call('DELETE', '/users/99999999'), true), '400 BAD_REQUEST No such user');
  t.equal(outcome(await admin.call('DELETE', `/users/${s.demo.bot.userId}`), true), '400 BAD_REQUEST No such user', 'bots are not deactivated here');
  const anOwner = await newPerson(s, ROLE.owner);
  t.equal(outcome(await admin.call('DELETE', `/users/${anOwner.userId}`), true), '400 UNAUTHORIZED_PRINCIPAL Must be an organization owner');
  await owner.ok('PATCH', `/users/${anOwner.userId}`, { role: ROLE.member });
  await onlyDemoOwner();
  t.equal(outcome(await owner.call('DELETE', `/users/${s.demo.owner.userId}`), true), '400 BAD_REQUEST Cannot deactivate the only organization owner');
  const unsupported = await admin.call('DELETE', `/users/${anOwner.userId}`, { deactivation_notification_comment: 'bye' });
  t.equal(outcome(unsupported), 'ok');
  t.same(unsupported.body.ignored_parameters_unsupported, ['deactivation_notification_comment'], 'no email is sent: the comment is reported as unsupported');

  // Back again: the same key works, the old queue is gone.
  await owner.ok('POST', `/users/${p.userId}/reactivate`);
  t.equal(outcome(await otherGateway(p).call('GET', '/users/me')), 'ok', 'a reactivated user\'s key works again');
  const gone = await me.call('GET', '/events', { queue_id: q.queueId, last_event_id: q.lastEventId, dont_block: true });
  t.equal(outcome(gone), '400 BAD_EVENT_QUEUE_ID', 'the queue ended with the deactivation');
});

t.test('people users - reactivation: who may', async (t) => {
  const targets = new Map<string, number>();
  const result = await asEveryone(s, 'POST', (who) => `/users/${targets.get(who)}/reactivate`, async (who) => {
    const p = await newPerson(s);
    await owner.ok('DELETE', `/users/${p.userId}`);
    targets.set(who, p.userId);
    return {};
  }, true);
  t.same(result, { owner: 'ok', admin: 'ok', moderator: NO_PERMISSION, member: NO_PERMISSION, guest: NO_PERMISSION, bot: NO_PERMISSION, anonymous: ANON });
  t.equal((await owner.ok('GET', `/users/${targets.get('admin')}`)).user.is_active, true);
  t.equal((await owner.ok('GET', `/users/${targets.get('guest')}`)).user.is_active, false);
  t.equal(outcome(await owner.call('POST', `/users/${targets.get('admin')}/reactivate`), true), '400 BAD_REQUEST User is already active');
  t.equal(outcome(await owner.call('POST', '/users/99999999/reactivate'), true), '400 BAD_REQUEST No such user');
});

t.test('people users - DELETE /users/me for every role; never the last owner', async (t) => {
  for (const [name, role] of Object.entries(ROLE)) {
    const p = await newPerson(s, role);
    t.equal(outcome(await s.api.as(p).call('DELETE', '/users/me')), 'ok', `${name} deactivates themselves`);
    t.equal(outcome(await otherGateway(p).call('GET', '/users/me')), DEACTIVATED, `${name}'s key stopped working`);
    t.equal((await owner.ok('GET', `/users/${p.userId}`)).user.is_active, false);
  }
  t.equal(outcome(await as.bot.call('DELETE', '/users/me')), 'ok', 'a bot deactivates itself');
  t.equal(outcome(await as.bot.call('GET', '/users/me')), DEACTIVATED);
  await owner.ok('POST', `/users/${s.demo.bot.userId}/reactivate`);
  t.equal(outcome(await as.bot.call('GET', '/users/me')), 'ok', 'and works again once reactivated');
  t.equal(outcome(await as.anonymous.call('DELETE', '/users/me')), ANON_401);

  await onlyDemoOwner();
  const last = await owner.call('DELETE', '/users/me');
  t.equal(outcome(last, true), '400 CANNOT_DEACTIVATE_LAST_USER Cannot deactivate the only organization owner.');
  t.equal(last.body.is_last_owner, true);
  t.equal(last.body.entity, 'organization owner');
  t.equal(outcome(await owner.call('GET', '/users/me')), 'ok');
});

t.test('people users - realm_user events for each change', async (t) => {
  const watcher = await register(as.member, { event_types: ['realm_user', 'user_group'] });
  const p = await newPerson(s);
  const added = await waitFor(watcher, (e) => e.type === 'realm_user' && e.op === 'add' && e.person.user_id === p.userId);
  t.same(added.person.profile_data, {}, 'a new user has no profile data');
  t.equal(added.person.role, ROLE.member);
  const dateJoined = await waitFor(watcher, (e) => e.type === 'realm_user' && e.person.user_id === p.userId && 'date_joined' in e.person);
  t.type(dateJoined.person.date_joined, 'string', 'the first login sets date_joined (FL 475)');

  await admin.ok('PATCH', `/users/${p.userId}`, { full_name: 'Event Name', role: ROLE.moderator });
  const roleEvent = await waitFor(watcher, (e) => e.type === 'realm_user' && e.op === 'update' && 'role' in e.person);
  t.same(roleEvent.person, { user_id: p.userId, role: ROLE.moderator });
  const groupEvents = [await waitFor(watcher, (e) => e.type === 'user_group'), await waitFor(watcher, (e) => e.type === 'user_group'), await waitFor(watcher, (e) => e.type === 'user_group')];
  t.same(
    groupEvents.map((e) => [e.op, e.group_id, e.user_ids]),
    [
      ['remove_members', 4, [p.userId]],
      ['remove_members', 3, [p.userId]],
      ['add_members', 5, [p.userId]],
    ],
    'the user leaves role:fullmembers and role:members and joins role:moderators',
  );
  const nameEvent = await waitFor(watcher, (e) => e.type === 'realm_user' && e.op === 'update' && 'full_name' in e.person);
  t.same(nameEvent.person, { user_id: p.userId, full_name: 'Event Name' });

  await admin.ok('DELETE', `/users/${p.userId}`);
  t.same((await waitFor(watcher, (e) => e.type === 'realm_user' && 'is_active' in e.person)).person, { user_id: p.userId, is_active: false });
  await admin.ok('POST', `/users/${p.userId}/reactivate`);
  t.same((await waitFor(watcher, (e) => e.type === 'realm_user' && 'is_active' in e.person)).person, { user_id: p.userId, is_active: true });
  const back = await waitFor(watcher, (e) => e.type === 'user_group');
  t.same([back.op, back.group_id, back.user_ids], ['add_members', 5, [p.userId]], 'a reactivated user is back in their groups');
});
