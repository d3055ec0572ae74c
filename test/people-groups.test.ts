// User groups: system groups, creating and editing groups, members and
// subgroups, deactivation, the include_deactivated_groups capability, and
// permissions that honour user-defined groups (recursively).
import t from 'tap';
import { type Params, uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { asEveryone, callers, newPerson, outcome } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const ANON = '401 UNAUTHORIZED Missing authorization header for basic auth';
const NO = '400 BAD_REQUEST Insufficient permission';
const GUESTS = '400 BAD_REQUEST Not allowed for guest users';
const G = { internet: 1, everyone: 2, members: 3, fullmembers: 4, moderators: 5, administrators: 6, owners: 7, nobody: 8 };
const gname = (label = 'Group') => `${label} ${uniq('g').slice(-8)}`;

/** A group created by Maria (a member): she manages it and adds to it by default. */
async function mariasGroup(params: Record<string, unknown> = {}): Promise<number> {
  return (await as.member.ok('POST', '/user_groups/create', { name: gname(), description: 'Made by Maria', ...params })).group_id;
}
const groups = async (include = false) => (await as.owner.ok('GET', '/user_groups', { include_deactivated_groups: include })).user_groups as any[];
const groupById = async (id: number, include = true) => (await groups(include)).find((g) => g.id === id);

t.test('people groups - the system groups follow roles', async (t) => {
  const all = await groups();
  const sys = Object.fromEntries(all.filter((g) => g.is_system_group).map((g) => [g.name, g]));
  t.same(Object.keys(sys).sort(), ['role:administrators', 'role:everyone', 'role:fullmembers', 'role:internet', 'role:members', 'role:moderators', 'role:nobody', 'role:owners']);
  t.ok(sys['role:owners'].members.includes(s.demo.owner.userId));
  t.ok(sys['role:administrators'].members.includes(s.demo.admin.userId));
  t.notOk(sys['role:administrators'].members.includes(s.demo.owner.userId), 'members are direct members');
  t.same(sys['role:administrators'].direct_subgroup_ids, [G.owners], 'owners are a subgroup of administrators');
  t.same(sys['role:everyone'].direct_subgroup_ids, [G.members]);
  t.ok(sys['role:everyone'].members.includes(s.demo.guest.userId));
  t.ok(sys['role:members'].members.includes(s.demo.member1.userId));
  t.same(sys['role:nobody'].members, []);
  const recursive = (await as.member.ok('GET', `/user_groups/${G.moderators}/members`)).members;
  t.ok([s.demo.owner.userId, s.demo.admin.userId, s.demo.moderator.userId].every((id) => recursive.includes(id)), 'moderators include administrators and owners, recursively');
  t.notOk(recursive.includes(s.demo.member1.userId));
  t.same((await as.member.ok('GET', `/user_groups/${G.moderators}/members`, { direct_member_only: true })).members.includes(s.demo.admin.userId), false);
  t.equal(outcome(await as.owner.call('PATCH', `/user_groups/${G.moderators}`, { name: 'mods' }), true), NO, 'system groups cannot be edited');
  t.equal(outcome(await as.owner.call('POST', `/user_groups/${G.members}/members`, { add: [s.demo.guest.userId] }), true), NO);
});

t.test('people groups - who may create and list groups', async (t) => {
  t.same(await asEveryone(s, 'POST', '/user_groups/create', () => ({ name: gname('Role table'), description: '' }), true), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: NO, bot: 'ok', anonymous: ANON });
  t.same(await asEveryone(s, 'GET', '/user_groups', {}, true), { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: GUESTS, bot: 'ok', anonymous: ANON });
  const name = gname('Defaults');
  const { group_id } = await as.member.ok('POST', '/user_groups/create', { name, description: 'With *markdown*', members: [s.demo.member2.userId] });
  const g = await groupById(group_id);
  t.same(
    { ...g, date_created: typeof g.date_created },
    {
      id: group_id,
      name,
      description: 'With *markdown*',
      rendered_description: '<p>With <em>markdown</em></p>',
      members: [s.demo.member2.userId],
      direct_subgroup_ids: [],
      creator_id: s.demo.member1.userId,
      date_created: 'number',
      is_system_group: false,
      deactivated: false,
      can_add_members_group: { direct_members: [s.demo.member1.userId], direct_subgroups: [] },
      can_join_group: G.nobody,
      can_leave_group: G.everyone,
      can_manage_group: { direct_members: [s.demo.member1.userId], direct_subgroups: [] },
      can_mention_group: G.everyone,
      can_remove_members_group: G.nobody,
    },
    "the creator manages it and adds to it; anyone leaves; nobody joins by themselves",
  );
  const errors: Array<[Params, string]> = [
    [{ name: '  ', description: '' }, "400 BAD_REQUEST User group name can't be empty!"],
    [{ name: 'x'.repeat(101), description: '' }, '400 BAD_REQUEST User group name cannot exceed 100 characters.'],
    [{ name: 'role:mine', description: '' }, "400 BAD_REQUEST User group name cannot start with 'role:'."],
    [{ name: '@mention', description: '' }, "400 BAD_REQUEST User group name cannot start with '@'."],
    [{ name, description: '' }, `400 BAD_REQUEST User group '${name}' already exists.`],
    [{ name: gname(), description: '', members: [99999999] }, '400 BAD_REQUEST Invalid user ID: 99999999'],
    [{ name: gname(), description: '', subgroups: [99999999] }, '400 BAD_REQUEST Invalid user group ID: 99999999'],
    [{ name: gname(), description: '', can_manage_group: G.everyone }, "400 BAD_REQUEST 'can_manage_group' setting cannot be set to 'role:everyone' group."],
  ];
  for (const [params, want] of errors) t.equal(outcome(await as.member.call('POST', '/user_groups/create', params), true), want, JSON.stringify(params));
  t.equal(outcome(await as.member.call('POST', '/user_groups/create', { name: gname() }), true), "400 REQUEST_VARIABLE_MISSING Missing 'description' argument");
});

t.test('people groups - PATCH: who may, and the {new, old} settings', async (t) => {
  const id = await mariasGroup();
  t.same(
    await asEveryone(s, 'PATCH', `/user_groups/${id}`, (who) => ({ description: `Edited by ${who}` }), true),
    { owner: 'ok', admin: NO, moderator: NO, member: 'ok', guest: NO, bot: NO, anonymous: ANON },
    'the group managers (its creator) and the organization owners',
  );
  t.equal((await groupById(id)).description, 'Edited by member');
  const newName = gname('Renamed');
  await as.member.ok('PATCH', `/user_groups/${id}`, { name: newName });
  t.equal((await groupById(id)).name, newName, 'a name alone (FL 165)');
  t.equal(outcome(await as.member.call('PATCH', `/user_groups/${id}`, {}), true), '400 BAD_REQUEST No new data supplied');
  t.equal(outcome(await as.member.call('PATCH', '/user_groups/99999999', { name: 'x' }), true), '400 BAD_REQUEST Invalid user group');

  await as.member.ok('PATCH', `/user_groups/${id}`, { can_mention_group: { new: G.administrators } });
  t.equal((await groupById(id)).can_mention_group, G.administrators);
  const mismatch = await as.member.call('PATCH', `/user_groups/${id}`, { can_mention_group: { new: G.members, old: G.everyone } });
  t.equal(outcome(mismatch, true), "400 EXPECTATION_MISMATCH 'old' value does not match the expected value.");
  t.equal((await groupById(id)).can_mention_group, G.administrators, 'a mismatch changes nothing');
  await as.member.ok('PATCH', `/user_groups/${id}`, { can_mention_group: { new: G.members, old: G.administrators } });
  t.equal((await groupById(id)).can_mention_group, G.members);
  t.equal(outcome(await as.member.call('PATCH', `/user_groups/${id}`, { can_mention_group: G.members })), '400 BAD_REQUEST', 'can_mention_group takes only {new, old} (FL 260)');

  const anonymous = { direct_members: [s.demo.member2.userId, s.demo.member1.userId], direct_subgroups: [G.moderators] };
  await as.member.ok('PATCH', `/user_groups/${id}`, { can_manage_group: { new: anonymous, old: { direct_members: [s.demo.member1.userId], direct_subgroups: [] } } });
  t.same((await groupById(id)).can_manage_group, { direct_members: [s.demo.member1.userId, s.demo.member2.userId].sort((a, b) => a - b), direct_subgroups: [G.moderators] });
  t.equal(outcome(await as.moderator.call('PATCH', `/user_groups/${id}`, { description: 'moderators manage it now' })), 'ok', 'through the subgroup of the anonymous value');
  await as.member.ok('PATCH', `/user_groups/${id}`, { can_add_members_group: { new: { direct_members: [], direct_subgroups: [G.moderators] } } });
  t.equal((await groupById(id)).can_add_members_group, G.moderators, 'one subgroup and no members is that group');

  const refused: Array<[Params, string]> = [
    [{ can_manage_group: { new: G.internet } }, "400 BAD_REQUEST 'can_manage_group' setting cannot be set to 'role:internet' group."],
    [{ can_manage_group: { new: G.everyone } }, "400 BAD_REQUEST 'can_manage_group' setting cannot be set to 'role:everyone' group."],
    [{ can_mention_group: { new: G.internet } }, "400 BAD_REQUEST 'can_mention_group' setting cannot be set to 'role:internet' group."],
    [{ can_mention_group: { new: G.owners } }, "400 BAD_REQUEST 'can_mention_group' setting cannot be set to 'role:owners' group."],
    [{ can_join_group: { new: { direct_members: [99999999], direct_subgroups: [] } } }, '400 BAD_REQUEST Invalid user ID: 99999999'],
    [{ can_join_group: { new: 99999999 } }, '400 BAD_REQUEST Invalid user group'],
  ];
  for (const [params, want] of refused) t.equal(outcome(await as.member.call('PATCH', `/user_groups/${id}`, params), true), want, JSON.stringify(params));
  t.equal(outcome(await as.member.call('PATCH', `/user_groups/${id}`, { deactivated: true })), 'ok');
  t.equal((await groupById(id)).deactivated, false, 'deactivated=true does nothing');
});

t.test('people groups - members and subgroups', async (t) => {
  const a = await mariasGroup({ members: [s.demo.member1.userId] });
  const b = await mariasGroup({ members: [s.demo.moderator.userId] });
  const fresh = new Map<string, number>();
  t.same(
    await asEveryone(s, 'POST', `/user_groups/${a}/members`, async (who) => {
      fresh.set(who, (await newPerson(s)).userId);
      return { add: [fresh.get(who)] };
    }, true),
    { owner: 'ok', admin: NO, moderator: NO, member: 'ok', guest: NO, bot: NO, anonymous: ANON },
    'adding others: can_add_members_group (the creator), or managing all groups (owners)',
  );
  t.equal(outcome(await as.member.call('POST', `/user_groups/${a}/members`, { add: [s.demo.member1.userId] }), true), `400 BAD_REQUEST User ${s.demo.member1.userId} is already a member of this group`);
  t.equal(outcome(await as.member.call('POST', `/user_groups/${a}/members`, { delete: [s.demo.admin.userId] }), true), `400 BAD_REQUEST There is no member '${s.demo.admin.userId}' in this user group`);
  const gone = await newPerson(s);
  await as.owner.ok('DELETE', `/users/${gone.userId}`);
  t.equal(outcome(await as.member.call('POST', `/user_groups/${a}/members`, { add: [gone.userId] }), true), `400 BAD_REQUEST Invalid user ID: ${gone.userId}`, 'only active users join');
  t.equal(outcome(await as.member.call('POST', `/user_groups/${a}/members`, {}), true), '400 BAD_REQUEST Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".');

  // Joining and leaving oneself.
  t.equal(outcome(await as.moderator.call('POST', `/user_groups/${a}/members`, { add: [s.demo.moderator.userId] }), true), NO, 'nobody may join by default');
  await as.member.ok('PATCH', `/user_groups/${a}`, { can_join_group: { new: G.members } });
  t.equal(outcome(await as.moderator.call('POST', `/user_groups/${a}/members`, { add: [s.demo.moderator.userId] })), 'ok', 'can_join_group lets members join (FL 301)');
  t.equal(outcome(await as.guest.call('POST', `/user_groups/${a}/members`, { add: [s.demo.guest.userId] }), true), NO, 'guests are not members');
  t.equal(outcome(await as.moderator.call('POST', `/user_groups/${a}/members`, { delete: [s.demo.moderator.userId] })), 'ok', 'anyone may leave by default (FL 308)');
  t.equal(outcome(await as.moderator.call('POST', `/user_groups/${a}/members`, { delete: [s.demo.member1.userId] }), true), NO, 'removing others needs can_remove_members_group (FL 324)');
  await as.member.ok('PATCH', `/user_groups/${a}`, { can_remove_members_group: { new: G.moderators } });
  t.equal(outcome(await as.moderator.call('POST', `/user_groups/${a}/members`, { delete: [fresh.get('owner')] })), 'ok');

  // Subgroups (FL 311), never in a cycle.
  await as.member.ok('POST', `/user_groups/${a}/members`, { add_subgroups: [b] });
  t.same((await groupById(a)).direct_subgroup_ids, [b]);
  t.equal(outcome(await as.member.call('POST', `/user_groups/${a}/members`, { add_subgroups: [b] }), true), `400 BAD_REQUEST User group ${b} is already a subgroup of this group.`);
  t.equal(outcome(await as.member.call('POST', `/user_groups/${b}/members`, { add_subgroups: [a] }), true), `400 BAD_REQUEST User group ${b} is already a subgroup of one of the passed subgroups.`);
  t.equal(outcome(await as.member.call('POST', `/user_groups/${a}/members`, { add_subgroups: [a] }), true), `400 BAD_REQUEST User group ${a} is already a subgroup of one of the passed subgroups.`);
  t.equal(outcome(await as.member.call('POST', `/user_groups/${a}/members`, { delete_subgroups: [G.members] }), true), `400 BAD_REQUEST User group ${G.members} is not a subgroup of this group.`);
  t.equal(outcome(await as.member.call('POST', `/user_groups/${a}/members`, { add_subgroups: [99999999] }), true), '400 BAD_REQUEST Invalid user group ID: 99999999');

  // Reads, as every role.
  const readers = { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: GUESTS, bot: 'ok', anonymous: ANON };
  t.same(await asEveryone(s, 'GET', `/user_groups/${a}/members`, {}, true), readers);
  t.same(await asEveryone(s, 'GET', `/user_groups/${a}/members/${s.demo.member1.userId}`, {}, true), readers);
  t.same(await asEveryone(s, 'GET', `/user_groups/${a}/subgroups`, {}, true), readers);
  const c = await mariasGroup();
  t.same(
    await asEveryone(s, 'POST', `/user_groups/${c}/subgroups`, (who) => ({ [who === 'owner' ? 'add' : 'delete']: [b] }), true),
    { owner: 'ok', admin: NO, moderator: NO, member: 'ok', guest: NO, bot: NO, anonymous: ANON },
    'subgroups (the older endpoint): the owner adds one, the group\'s creator removes it, nobody else may',
  );
  const all = (await as.member.ok('GET', `/user_groups/${a}/members`)).members;
  t.ok(all.includes(s.demo.moderator.userId), 'members of subgroups are members');
  t.notOk((await as.member.ok('GET', `/user_groups/${a}/members`, { direct_member_only: true })).members.includes(s.demo.moderator.userId));
  t.equal((await as.member.ok('GET', `/user_groups/${a}/members/${s.demo.moderator.userId}`)).is_user_group_member, true);
  t.equal((await as.member.ok('GET', `/user_groups/${a}/members/${s.demo.moderator.userId}`, { direct_member_only: true })).is_user_group_member, false);
  t.same((await as.member.ok('GET', `/user_groups/${a}/subgroups`)).subgroups, [b]);
  t.equal(outcome(await as.member.call('GET', '/user_groups/99999999/members'), true), '400 BAD_REQUEST Invalid user group');
  // A bot's membership is asked as a user's (FL 458); a system bot is no one of the organization.
  t.equal((await as.member.ok('GET', `/user_groups/${a}/members/${s.demo.bot.userId}`)).is_user_group_member, false, 'a bot not in the group (FL 458)');
  await as.member.ok('POST', `/user_groups/${a}/members`, { add: [s.demo.bot.userId] });
  t.equal((await as.member.ok('GET', `/user_groups/${a}/members/${s.demo.bot.userId}`)).is_user_group_member, true, 'a bot in the group (FL 458)');
  const [systemBot] = (await as.member.ok('POST', '/register', { fetch_event_types: ['realm_user'] })).cross_realm_bots as { user_id: number }[];
  t.equal(outcome(await as.member.call('GET', `/user_groups/${a}/members/${systemBot!.user_id}`), true), '400 BAD_REQUEST No such user', 'a system bot');

  await as.member.ok('POST', `/user_groups/${a}/subgroups`, { delete: [b] });
  t.same((await groupById(a)).direct_subgroup_ids, [], 'the older /subgroups endpoint');
});

t.test('people groups - deactivation, objections, and the include_deactivated_groups capability', async (t) => {
  const made = new Map<string, number>();
  t.same(
    await asEveryone(s, 'POST', (who) => `/user_groups/${made.get(who)}/deactivate`, async (who) => {
      made.set(who, await mariasGroup());
      return {};
    }, true),
    { owner: 'ok', admin: NO, moderator: NO, member: 'ok', guest: NO, bot: NO, anonymous: ANON },
  );
  const inUse = await mariasGroup({ members: [s.demo.member1.userId] });
  const channel = uniq('grouped');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], can_send_message_group: inUse });
  const channelId = (await as.owner.ok('GET', '/users/me/subscriptions')).subscriptions.find((c: any) => c.name === channel).stream_id;
  const parent = await mariasGroup({ subgroups: [inUse] });
  const refused = await as.member.call('POST', `/user_groups/${inUse}/deactivate`);
  t.equal(outcome(refused, true), '400 CANNOT_DEACTIVATE_GROUP_IN_USE Cannot deactivate user group in use.');
  t.same(refused.body.objections, [
    { type: 'subgroup', supergroup_ids: [parent] },
    { type: 'channel', channel_id: channelId, settings: ['can_send_message_group'] },
  ]);

  const id = await mariasGroup({ members: [s.demo.member2.userId] });
  const plain = await register(as.admin, { event_types: ['user_group'] });
  const capable = await register(as.admin, { event_types: ['user_group'], client_capabilities: { include_deactivated_groups: true } });
  t.notOk(capable.snapshot.ignored_parameters_unsupported, 'the capability is honoured');
  await as.member.ok('POST', `/user_groups/${id}/deactivate`);
  const [p1, c1] = [await waitFor(plain, () => true), await waitFor(capable, () => true)];
  t.same([p1.op, p1.group_id], ['remove', id], 'without the capability: remove');
  t.same([c1.op, c1.group_id, c1.data], ['update', id, { deactivated: true }], 'with it: an update');
  t.equal(outcome(await as.member.call('POST', `/user_groups/${id}/deactivate`), true), '400 BAD_REQUEST User group is deactivated.');
  t.notOk((await groups()).some((g) => g.id === id), 'GET /user_groups leaves deactivated groups out');
  t.equal((await groupById(id, true)).deactivated, true, 'unless include_deactivated_groups');
  t.notOk((await register(as.admin, { fetch_event_types: ['realm_user_groups'] })).snapshot.realm_user_groups.some((g: any) => g.id === id));
  t.ok((await register(as.admin, { fetch_event_types: ['realm_user_groups'], client_capabilities: { include_deactivated_groups: true } })).snapshot.realm_user_groups.some((g: any) => g.id === id));

  const renamed = gname('Sleeping');
  await as.member.ok('PATCH', `/user_groups/${id}`, { name: renamed });
  t.same((await waitFor(capable, () => true)).data, { name: renamed }, 'a deactivated group stays editable (FL 340)');
  await as.member.ok('POST', `/user_groups/${id}/members`, { add: [s.demo.moderator.userId] });
  t.same((await waitFor(capable, () => true)).user_ids, [s.demo.moderator.userId], 'and its members too (FL 391)');
  t.equal(outcome(await as.member.call('POST', `/user_groups/${parent}/members`, { add_subgroups: [id] }), true), '400 BAD_REQUEST User group is deactivated.');
  t.equal(outcome(await as.owner.call('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('nope') }], can_send_message_group: id }), true), '400 BAD_REQUEST User group is deactivated.', 'nor usable in a permission (Zulip: get_user_group_by_id_in_realm)');

  await as.member.ok('PATCH', `/user_groups/${id}`, { deactivated: false });
  const c2 = await waitFor(capable, () => true);
  t.same([c2.op, c2.data], ['update', { deactivated: false }], 'reactivated (FL 386)');
  const p2 = await waitFor(plain, () => true);
  t.same([p2.op, p2.group.id, p2.group.name, p2.group.members], ['add', id, renamed, [s.demo.member2.userId, s.demo.moderator.userId].sort((a, b) => a - b)], 'clients that never saw it get it whole');
});

t.test('people groups - permission checks honour groups, recursively, ignoring deactivated ones', async (t) => {
  const maria = as.member;
  const mateo = s.api.as(s.demo.member2);
  const sub = await mariasGroup({ members: [s.demo.member2.userId] });
  const top = await mariasGroup({ members: [s.demo.member1.userId], subgroups: [sub] });
  const channel = uniq('by-group');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [s.demo.member1.userId, s.demo.member2.userId, s.demo.guest.userId], can_send_message_group: top });
  const send = (api: typeof maria) => api.call('POST', '/messages', { type: 'stream', to: channel, topic: 'perm', content: 'hi' });
  t.equal(outcome(await send(maria)), 'ok', 'a direct member posts');
  t.equal(outcome(await send(mateo)), 'ok', 'so does a member of a subgroup');
  t.equal(outcome(await send(as.guest), true), '400 BAD_REQUEST You do not have permission to post in this channel.');

  // A subgroup deactivated while its parent was: the parent comes back, the subgroup counts for nothing.
  const lone = await mariasGroup({ subgroups: [sub] });
  await as.member.ok('POST', `/user_groups/${lone}/deactivate`);
  await as.member.ok('POST', `/user_groups/${top}/members`, { delete_subgroups: [sub] });
  await as.member.ok('POST', `/user_groups/${sub}/deactivate`);
  await as.member.ok('PATCH', `/user_groups/${lone}`, { deactivated: false });
  await as.member.ok('POST', `/user_groups/${top}/members`, { add_subgroups: [lone] });
  t.equal(outcome(await send(mateo), true), '400 BAD_REQUEST You do not have permission to post in this channel.', 'membership through a deactivated group is ignored');
  await as.member.ok('PATCH', `/user_groups/${sub}`, { deactivated: false });
  t.equal(outcome(await send(mateo)), 'ok', 'and counts again once it is reactivated');
});
