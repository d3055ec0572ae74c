// Guests and can_access_all_users_group: with it set to role:members, a guest
// sees only themselves, bots, the users they share a channel with and those
// in a direct-message conversation with them (Zulip's get_accessible_user_ids).
// Reads (GET /users, GET /users/{id}, register) as every role, the setting's
// rules, the realm_user add/remove events as what a guest sees changes, and
// snapshot + events == a fresh register, with and without user_list_incomplete.
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { applyEvent, type Snap, USER_LIST_INCOMPLETE } from './helpers/apply.ts';
import { register, waitFor, type Queue } from './helpers/events.ts';
import { asEveryone, callers, newPerson, outcome, type Person, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const MEMBERS = 3;
const EVERYONE = 2;

/** Sets can_access_all_users_group (as the owner). */
const setAccess = (group: number) => as.owner.ok('PATCH', '/realm', { can_access_all_users_group: { new: group } });

/** A fresh user of `role` subscribed to nothing (new users join the default channels), so that they share nothing. */
async function loner(role: number, name: string): Promise<Person> {
  const p = await newPerson(s, role, name);
  const me = s.api.as(p);
  const subs = (await me.ok('GET', '/users/me/subscriptions')).subscriptions.map((x: any) => x.name);
  if (subs.length) await me.ok('DELETE', '/users/me/subscriptions', { subscriptions: subs });
  return p;
}

const ids = (members: any[]) => members.map((u) => u.user_id);

t.test('people guests - can_access_all_users_group: administrators change it, to role:everyone or role:members only', async (t) => {
  t.teardown(() => setAccess(EVERYONE));
  const who = await asEveryone(s, 'PATCH', '/realm', { can_access_all_users_group: { new: EVERYONE } }, true);
  t.same(who, {
    owner: 'ok',
    admin: 'ok',
    moderator: '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator',
    member: '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator',
    guest: '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator',
    bot: '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator',
    anonymous: '401 UNAUTHORIZED Missing authorization header for basic auth',
  });
  const refused = async (value: unknown) => outcome(await as.admin.call('PATCH', '/realm', { can_access_all_users_group: { new: value } }), true);
  t.equal(await refused(1), "400 BAD_REQUEST 'can_access_all_users_group' setting cannot be set to 'role:internet' group.");
  t.equal(await refused(6), "400 BAD_REQUEST 'can_access_all_users_group' setting cannot be set to 'role:administrators' group.");
  t.equal(await refused(8), "400 BAD_REQUEST 'can_access_all_users_group' setting cannot be set to 'role:nobody' group.");
  t.equal(await refused(999_999), '400 BAD_REQUEST Invalid user group ID: 999999');
  t.equal(await refused({ direct_members: [s.demo.member1.userId], direct_subgroups: [] }), "400 BAD_REQUEST 'can_access_all_users_group' must be a system user group.");
  const group = await as.admin.ok('POST', '/user_groups/create', { name: uniq('seers'), description: '', members: [s.demo.member1.userId] });
  t.equal(await refused(group.group_id), "400 BAD_REQUEST 'can_access_all_users_group' must be a system user group.");
  const stale = await as.admin.call('PATCH', '/realm', { can_access_all_users_group: { new: MEMBERS, old: MEMBERS } });
  t.equal(stale.body.msg, "'old' value does not match the expected value.");

  const q = await register(as.member, { event_types: ['realm'] });
  const r = await as.admin.ok('PATCH', '/realm', { can_access_all_users_group: { new: { direct_members: [], direct_subgroups: [MEMBERS] } } });
  t.notOk(r.ignored_parameters_unsupported, 'the setting acts: it is not reported as ignored');
  const e = await waitFor(q, (x) => x.type === 'realm' && x.op === 'update_dict');
  t.same(e.data, { can_access_all_users_group: MEMBERS }, 'an anonymous group of one system group is that group');
  t.equal((await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_access_all_users_group, MEMBERS, 'stored and reported');
});

t.test('people guests - who sees whom: GET /users and GET /users/{id} as every role, guests restricted and not', async (t) => {
  const guest = await loner(ROLE.guest, 'Restricted Guest');
  const stranger = await loner(ROLE.member, 'Stranger');
  const peer = await loner(ROLE.member, 'Channel Peer');
  const channel = uniq('guests');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [guest.userId, peer.userId] });
  await setAccess(MEMBERS);
  t.teardown(() => setAccess(EVERYONE));
  const g = s.api.as(guest);

  const listed = ids((await g.ok('GET', '/users')).members);
  t.ok(listed.includes(guest.userId) && listed.includes(peer.userId), 'a guest sees themselves and who shares a channel with them');
  t.ok(listed.includes(s.demo.bot.userId), 'and every bot');
  t.notOk(listed.includes(stranger.userId), 'not a user they share nothing with');
  t.notOk(listed.includes(s.demo.owner.userId), 'not even the owner');
  t.notOk((await g.ok('GET', '/users')).members.some((u: any) => u.full_name === 'Unknown user'), 'left out, not replaced by placeholders (FL 437)');
  t.same(ids((await g.ok('GET', '/users', { user_ids: [stranger.userId, peer.userId] })).members), [peer.userId], 'user_ids: the ones they may not see are left out');
  t.equal(outcome(await g.call('GET', `/users/${stranger.userId}`), true), '400 BAD_REQUEST Insufficient permission');
  t.equal(outcome(await g.call('GET', `/users/${encodeURIComponent(stranger.email)}`), true), '400 BAD_REQUEST Insufficient permission', 'by email too');
  t.equal((await g.ok('GET', `/users/${peer.userId}`)).user.full_name, peer.fullName);
  t.equal((await g.ok('GET', `/users/${s.demo.bot.userId}`)).user.user_id, s.demo.bot.userId);
  t.equal(outcome(await g.call('POST', '/messages', { type: 'direct', to: [stranger.userId], content: 'hello?' }), true), '400 BAD_REQUEST You do not have permission to access some of the recipients.');

  // Everyone else sees everyone; the demo guest shares nothing with the stranger either.
  const reads = await asEveryone(s, 'GET', `/users/${stranger.userId}`);
  t.same(reads, { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: '400 BAD_REQUEST', bot: 'ok', anonymous: '401 UNAUTHORIZED' });
  for (const who of ['owner', 'admin', 'moderator', 'member', 'bot'] as const) {
    const all = ids((await as[who].ok('GET', '/users')).members);
    t.ok(all.includes(stranger.userId) && all.includes(guest.userId), `${who} lists every user`);
  }
  t.equal((await as.anonymous.call('GET', '/users')).status, 401, 'no web-public access on this server: anonymous callers are refused');

  // A direct message from the stranger lets the guest see them (and answer).
  await s.api.as(stranger).ok('POST', '/messages', { type: 'direct', to: [guest.userId], content: 'hi guest' });
  t.equal((await g.ok('GET', `/users/${stranger.userId}`)).user.full_name, stranger.fullName, 'a direct-message conversation lets them see each other');
  await g.ok('POST', '/messages', { type: 'direct', to: [stranger.userId], content: 'hi back' });

  // Not restricted: the guest sees everyone.
  await setAccess(EVERYONE);
  const other = await loner(ROLE.member, 'Other Stranger');
  t.equal(outcome(await g.call('GET', `/users/${other.userId}`)), 'ok', 'with role:everyone a guest sees every user');
  t.ok(ids((await g.ok('GET', '/users')).members).includes(s.demo.owner.userId));
});

t.test('people guests - register: realm_users without the users a guest may not see, or with "Unknown user" in their place', async (t) => {
  const guest = await loner(ROLE.guest, 'Register Guest');
  const stranger = await loner(ROLE.member, 'Hidden One');
  await s.api.as(stranger).ok('POST', '/users/me/status', { status_text: 'secret plans' });
  await setAccess(MEMBERS);
  t.teardown(() => setAccess(EVERYONE));
  const g = s.api.as(guest);
  const incomplete = await g.ok('POST', '/register', { fetch_event_types: ['realm_user', 'user_status'], client_capabilities: { user_list_incomplete: true } });
  t.notOk((incomplete.ignored_parameters_unsupported ?? []).includes('client_capabilities.user_list_incomplete'), 'the capability is honoured');
  t.notOk(ids(incomplete.realm_users).includes(stranger.userId), 'user_list_incomplete: left out');
  t.notOk(ids(incomplete.realm_non_active_users).includes(stranger.userId));
  t.ok(ids(incomplete.realm_users).includes(guest.userId));
  t.notOk(String(stranger.userId) in incomplete.user_status, "nor is their status shown");
  const full = await g.ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  const placeholder = full.realm_users.find((u: any) => u.user_id === stranger.userId);
  t.match(placeholder, { full_name: 'Unknown user', email: `user${stranger.userId}@unknown.invalid`, delivery_email: null, is_active: true, role: 400, is_bot: false, profile_data: {} }, 'otherwise: the placeholder Zulip sends');
  const owner = await as.owner.ok('POST', '/register', { fetch_event_types: ['realm_user', 'user_status'] });
  t.equal(owner.realm_users.find((u: any) => u.user_id === stranger.userId)?.full_name, stranger.fullName, 'the owner sees them');
  t.equal(owner.user_status[String(stranger.userId)]?.status_text, 'secret plans');
});

/** Applies the realm_user events of `q` up to and including the one `marker` satisfies; returns them. */
async function catchUp(q: Queue, snap: Snap, marker: (e: Record<string, any>) => boolean): Promise<Array<Record<string, any>>> {
  const seen: Array<Record<string, any>> = [];
  await waitFor(q, (e) => {
    if (e.type === 'realm_user') {
      seen.push(e);
      applyEvent(snap, e);
    }
    return marker(e);
  }, 20_000);
  return seen;
}

const byId = (a: any, b: any) => a.user_id - b.user_id;
const users = (snap: Snap) => ({ realm_users: [...snap.realm_users].sort(byId), realm_non_active_users: [...snap.realm_non_active_users].sort(byId) });

t.test('people guests - events: what a guest sees changes with channels, direct messages and the setting; snapshot + events == a fresh register', async (t) => {
  const guest = await loner(ROLE.guest, 'Watching Guest');
  const mover = await loner(ROLE.member, 'Mover');
  const channel = uniq('meeting');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [guest.userId] });
  await setAccess(MEMBERS);
  t.teardown(() => setAccess(EVERYONE));
  const g = s.api.as(guest);
  const FETCH = { fetch_event_types: ['realm_user'], client_gravatar: false };
  const qIncomplete = await register(g, { ...FETCH, client_capabilities: { user_list_incomplete: true } });
  const qFull = await register(g, FETCH);
  const snaps = [qIncomplete, qFull].map((q) => structuredClone(q.snapshot));
  snaps[1]![USER_LIST_INCOMPLETE] = false;
  let n = 0;
  /** Renames the guest (an event every queue of theirs gets) and applies everything up to it. */
  const step = async () => {
    const name = `Watching Guest ${++n}`;
    await as.owner.ok('PATCH', `/users/${guest.userId}`, { full_name: name });
    const marker = (e: Record<string, any>) => e.type === 'realm_user' && e.op === 'update' && e.person.user_id === guest.userId && e.person.full_name === name;
    return Promise.all([catchUp(qIncomplete, snaps[0]!, marker), catchUp(qFull, snaps[1]!, marker)]);
  };
  const compare = async (what: string) => {
    const fresh = await Promise.all([g.ok('POST', '/register', { ...FETCH, client_capabilities: { user_list_incomplete: true } }), g.ok('POST', '/register', FETCH)]);
    t.same(users(snaps[0]!), users(fresh[0]), `${what}: with user_list_incomplete`);
    t.same(users(snaps[1]!), users(fresh[1]), `${what}: without it`);
  };

  // Joining the guest's channel: the guest now sees the mover.
  await s.api.as(mover).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  let [inc, full] = await step();
  t.match(inc.find((e) => e.op === 'add'), { person: { user_id: mover.userId, full_name: mover.fullName } }, 'add with the real user for a user they now share a channel with');
  t.ok(full.some((e) => e.op === 'add' && e.person.user_id === mover.userId));
  await compare('after a subscription');

  // A new user who shares nothing: a placeholder for clients without user_list_incomplete, nothing for the others.
  const newcomer = await loner(ROLE.member, 'Newcomer');
  [inc, full] = await step();
  t.notOk(inc.some((e) => e.op === 'add' && e.person.user_id === newcomer.userId), 'user_list_incomplete: no add for a user they may not see');
  t.match(full.find((e) => e.op === 'add' && e.person.user_id === newcomer.userId), { person: { full_name: 'Unknown user' } }, 'otherwise the "Unknown user" placeholder');
  await compare('after a new user');

  // Leaving the channel: the guest no longer sees the mover.
  await s.api.as(mover).ok('DELETE', '/users/me/subscriptions', { subscriptions: [channel] });
  [inc, full] = await step();
  for (const events of [inc, full]) t.match(events.find((e) => e.op === 'remove'), { person: { user_id: mover.userId, full_name: 'Unknown user' } }, 'remove for a user they no longer share a channel with');
  await compare('after an unsubscription');

  // A direct message from the newcomer: the guest learns of them before the message, which names its sender.
  const qMessages = await register(g, { event_types: ['realm_user', 'message'], client_capabilities: { user_list_incomplete: true } });
  await s.api.as(newcomer).ok('POST', '/messages', { type: 'direct', to: [guest.userId], content: 'hello there' });
  const first = await waitFor(qMessages, (e) => (e.type === 'realm_user' && e.person.user_id === newcomer.userId) || e.type === 'message');
  t.match(first, { type: 'realm_user', op: 'add', person: { user_id: newcomer.userId, full_name: newcomer.fullName } }, 'the sender is added first');
  const message = await waitFor(qMessages, (e) => e.type === 'message');
  t.match(message.message, { sender_id: newcomer.userId, sender_full_name: newcomer.fullName }, 'and the message shows its sender');
  await step();
  await compare('after a direct message');

  // The setting: everyone sees everyone again, then not.
  await setAccess(EVERYONE);
  [inc] = await step();
  t.ok(inc.some((e) => e.op === 'add' && e.person.user_id === mover.userId), 'role:everyone: add for every user they could not see');
  await compare('after allowing access to all users');
  await setAccess(MEMBERS);
  [inc] = await step();
  t.ok(inc.some((e) => e.op === 'remove' && e.person.user_id === mover.userId), 'role:members again: remove for those they may not see');
  t.notOk(inc.some((e) => e.op === 'remove' && e.person.user_id === newcomer.userId), 'the newcomer they exchanged messages with stays');
  await compare('after restricting access again');

  // A role change: a member made a guest sees fewer users; made a member again, everyone.
  const qMover = await register(s.api.as(mover), { ...FETCH, client_capabilities: { user_list_incomplete: true } });
  const moverSnap = structuredClone(qMover.snapshot);
  await as.owner.ok('PATCH', `/users/${mover.userId}`, { role: ROLE.guest });
  await as.owner.ok('PATCH', `/users/${mover.userId}`, { full_name: 'Mover Guest' });
  const seen = await catchUp(qMover, moverSnap, (e) => e.type === 'realm_user' && e.op === 'update' && e.person.full_name === 'Mover Guest');
  t.ok(seen.some((e) => e.op === 'remove' && e.person.user_id === s.demo.owner.userId), 'a new guest loses sight of users they share nothing with');
  t.same(users(moverSnap), users(await s.api.as(mover).ok('POST', '/register', { ...FETCH, client_capabilities: { user_list_incomplete: true } })), 'the new guest: snapshot + events == a fresh register');
});

t.test('people guests - spectators: no organization here has web-public access, so GET /users without credentials is refused', async (t) => {
  await as.owner.ok('PATCH', '/realm', { enable_spectator_access: true });
  t.teardown(() => as.owner.ok('PATCH', '/realm', { enable_spectator_access: false }));
  const reg = await as.member.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.equal(reg.realm_enable_spectator_access, true, 'the option is stored');
  t.same([reg.realm_web_public_access_enabled, reg.server_web_public_streams_enabled], [false, false], 'but the server has no web-public channels, so spectators have no access');
  t.equal((await s.api.ok('GET', '/server_settings')).realm_web_public_access_enabled, false);
  t.equal(outcome(await as.anonymous.call('GET', '/users')), '401 UNAUTHORIZED', "as Zulip answers where web-public access is off");
});
