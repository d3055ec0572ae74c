// Guests and can_access_all_users_group: with it set to role:members, a guest
// sees only themselves, bots, the users they share a channel with and those
// in a direct-message conversation with them (Zulip's get_accessible_user_ids).
// Reads (GET /users, GET /users/{id}, register) as every role, the setting's
// rules, the realm_user add/remove events as what a guest sees changes, and
// snapshot + events == a fresh register, with and without user_list_incomplete;
// messages from senders a guest may not see ("Unknown user"), their status,
// and presence (filtered only with PARLEY_CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE,
// Zulip's CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE, off by default).
import t, { type Test } from 'tap';
import { uniq } from './helpers/api.ts';
import { applyEvent, type Snap, USER_LIST_INCOMPLETE } from './helpers/apply.ts';
import { register, waitFor, type Queue } from './helpers/events.ts';
import { asEveryone, callers, newPerson, outcome, type Person, ROLE } from './helpers/people.ts';
import { serverFor, type TestServer } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const MEMBERS = 3;
const EVERYONE = 2;

/** Sets can_access_all_users_group (as the owner). */
const setAccess = (group: number) => as.owner.ok('PATCH', '/realm', { can_access_all_users_group: { new: group } });

/** Restricts guests (members only may see everyone) until the end of test `t`. */
async function restrictGuests(t: Test): Promise<void> {
  await setAccess(MEMBERS);
  t.teardown(() => setAccess(EVERYONE));
}

/** A fresh user of `role` subscribed to nothing (new users join the default channels), so that they share nothing. */
async function loner(role: number, name: string, srv: TestServer = s): Promise<Person> {
  const p = await newPerson(srv, role, name);
  const me = srv.api.as(p);
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
  await restrictGuests(t);
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
  await restrictGuests(t);
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
  await restrictGuests(t);
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

t.test('people guests - a guest may not register a queue for all public channels (all_public_streams)', async (t) => {
  const got = await asEveryone(s, 'POST', '/register', { event_types: ['message'], all_public_streams: true }, true);
  t.same(got, { owner: 'ok', admin: 'ok', moderator: 'ok', member: 'ok', guest: '400 BAD_REQUEST User not authorized for this query', bot: 'ok', anonymous: '401 UNAUTHORIZED Missing authorization header for basic auth' });
  // And a guest's ordinary queue does not get a public channel's message it is not in.
  const name = uniq('public-only');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const q = await register(as.guest, { event_types: ['message'] });
  const marker = uniq('not for guests');
  await as.owner.ok('POST', '/messages', { type: 'stream', to: name, topic: 'x', content: marker });
  await as.owner.ok('POST', '/messages', { type: 'private', to: JSON.stringify([s.demo.guest.userId]), content: 'the end' });
  const seen: Array<Record<string, any>> = [];
  await waitFor(q, (e) => (seen.push(e), e.type === 'message' && e.message.content.includes('the end')));
  t.notOk(seen.some((e) => e.type === 'message' && e.message.content.includes(marker)), 'the public message did not reach the guest');
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

t.test('people guests - messages: a channel message from a sender a restricted guest may not see comes from "Unknown user"', async (t) => {
  const guest = await loner(ROLE.guest, 'Reading Guest');
  const peer = await loner(ROLE.member, 'Reading Peer');
  const poster = await loner(ROLE.member, 'Outside Poster');
  const channel = uniq('announcements');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [guest.userId, peer.userId] });
  await restrictGuests(t);
  const g = s.api.as(guest);
  const p = s.api.as(peer);
  const [qGuest, qGuestAvatars, qPeer] = await Promise.all([register(g, { event_types: ['message'] }), register(g, { event_types: ['message'], client_gravatar: false }), register(p, { event_types: ['message'] })]);

  // The poster is not subscribed: the guest shares nothing with them.
  const sent = await s.api.as(poster).ok('POST', '/messages', { type: 'stream', to: channel, topic: 'news', content: 'from outside' });
  const hidden = { sender_id: poster.userId, sender_full_name: 'Unknown user', sender_email: `user${poster.userId}@unknown.invalid` };
  const [eg, ega, ep] = await Promise.all([qGuest, qGuestAvatars, qPeer].map((q) => waitFor(q, (e) => e.type === 'message' && e.message.id === sent.id)));
  t.match(eg!.message, hidden, 'the message event names "Unknown user" with a made-up email');
  t.type(eg!.message.avatar_url, 'string', 'and gives the placeholder avatar even to a client that computes avatars');
  t.equal(ega!.message.avatar_url, eg!.message.avatar_url, 'the same placeholder for every client');
  t.match(ep!.message, { sender_id: poster.userId, sender_full_name: poster.fullName, sender_email: poster.email, avatar_url: null }, 'a member sees the sender');
  const narrow = JSON.stringify([{ operator: 'channel', operand: channel }]);
  const read = async (api: typeof g) => (await api.ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow })).messages.find((m: any) => m.id === sent.id);
  t.match(await read(g), hidden, 'GET /messages as the guest: "Unknown user"');
  t.match((await g.ok('GET', `/messages/${sent.id}`)).message, hidden, 'GET /messages/{id} as the guest');
  t.match(await read(p), { sender_full_name: poster.fullName, sender_email: poster.email }, 'GET /messages as a member: the sender');

  // Their own messages and those of users they share the channel with keep their sender.
  const own = await g.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'news', content: 'mine' });
  t.match((await waitFor(qGuest, (e) => e.type === 'message' && e.message.id === own.id)).message, { sender_full_name: guest.fullName });
  const fromPeer = await p.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'news', content: 'from a peer' });
  t.match((await waitFor(qGuest, (e) => e.type === 'message' && e.message.id === fromPeer.id)).message, { sender_full_name: peer.fullName });

  // Not restricted: the guest sees every sender, in reads and in events.
  await setAccess(EVERYONE);
  t.match(await read(g), { sender_full_name: poster.fullName, sender_email: poster.email }, 'role:everyone: GET /messages names the sender');
  const again = await s.api.as(poster).ok('POST', '/messages', { type: 'stream', to: channel, topic: 'news', content: 'still outside' });
  t.match((await waitFor(qGuest, (e) => e.type === 'message' && e.message.id === again.id)).message, { sender_full_name: poster.fullName, sender_email: poster.email });
});

t.test('people guests - status: GET /users/{id}/status of a user a restricted guest may not see is refused; user_status events leave them out', async (t) => {
  const guest = await loner(ROLE.guest, 'Status Guest');
  const peer = await loner(ROLE.member, 'Status Peer');
  const stranger = await loner(ROLE.member, 'Status Stranger');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('status') }], principals: [guest.userId, peer.userId] });
  await s.api.as(stranger).ok('POST', '/users/me/status', { status_text: 'hidden away' });
  await restrictGuests(t);
  const g = s.api.as(guest);
  t.equal(outcome(await g.call('GET', `/users/${stranger.userId}/status`), true), '400 BAD_REQUEST Insufficient permission');
  t.equal((await as.member.ok('GET', `/users/${stranger.userId}/status`)).status.status_text, 'hidden away', 'a member reads it');
  t.same((await g.ok('GET', `/users/${peer.userId}/status`)).status, {}, 'the guest reads the status of a user they see');

  const FETCH = { fetch_event_types: ['user_status'], event_types: ['user_status'] };
  const q = await register(g, FETCH);
  const snap = structuredClone(q.snapshot);
  await s.api.as(stranger).ok('POST', '/users/me/status', { status_text: 'plotting' });
  await s.api.as(peer).ok('POST', '/users/me/status', { status_text: 'around' });
  const seen: Array<Record<string, any>> = [];
  await waitFor(q, (e) => {
    if (e.type === 'user_status') seen.push(e);
    return e.type === 'user_status' && e.user_id === peer.userId;
  });
  t.notOk(seen.some((e) => e.user_id === stranger.userId), 'no user_status event about a user they may not see');
  for (const e of seen) snap.user_status[String(e.user_id)] = { ...(snap.user_status[String(e.user_id)] ?? {}), status_text: e.status_text };
  t.same(snap.user_status, (await g.ok('POST', '/register', { fetch_event_types: ['user_status'] })).user_status, 'snapshot + events == a fresh register');

  await setAccess(EVERYONE);
  t.equal((await g.ok('GET', `/users/${stranger.userId}/status`)).status.status_text, 'plotting', 'role:everyone: the guest reads it');
});

t.test('people guests - presence: by default (as Zulip) a restricted guest still gets everyone\'s presence', async (t) => {
  const guest = await loner(ROLE.guest, 'Presence Guest');
  const stranger = await loner(ROLE.member, 'Presence Stranger');
  await restrictGuests(t);
  const g = s.api.as(guest);
  const q = await register(g, { event_types: ['presence'], client_capabilities: { simplified_presence_events: true } });
  await s.api.as(stranger).ok('POST', '/users/me/presence', { status: 'active' });
  const e = await waitFor(q, (x) => x.type === 'presence' && String(stranger.userId) in x.presences);
  t.ok(e, 'the presence event reaches the guest');
  t.ok(stranger.email in (await g.ok('GET', '/realm/presence')).presences, 'GET /realm/presence lists them');
  t.equal((await g.ok('GET', `/users/${stranger.userId}/presence`)).presence.aggregated.status, 'active', 'GET /users/{id}/presence answers');
  t.ok(String(stranger.userId) in (await g.ok('POST', '/register', { fetch_event_types: ['presence'], slim_presence: true })).presences, 'register lists them');
});

t.test('people guests - presence: with PARLEY_CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE a restricted guest gets only the presence of users they see', async (t) => {
  const own = await serverFor(t, { env: { PARLEY_CAN_ACCESS_ALL_USERS_GROUP_LIMITS_PRESENCE: 'true' } });
  const owner = own.api.as(own.demo.owner);
  const guest = await loner(ROLE.guest, 'Limited Guest', own);
  const peer = await loner(ROLE.member, 'Limited Peer', own);
  const stranger = await loner(ROLE.member, 'Limited Stranger', own);
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('presence') }], principals: [guest.userId, peer.userId] });
  await owner.ok('PATCH', '/realm', { can_access_all_users_group: { new: MEMBERS } });
  const g = own.api.as(guest);
  const m = own.api.as(own.demo.member1);
  await g.ok('POST', '/users/me/presence', { status: 'active' });

  for (const slim of [true, false]) {
    const FETCH = { fetch_event_types: ['presence'], event_types: ['presence'], slim_presence: slim, client_capabilities: { simplified_presence_events: slim } };
    const [qGuest, qMember] = await Promise.all([register(g, FETCH), register(m, FETCH)]);
    const snaps = [qGuest, qMember].map((q) => structuredClone(q.snapshot));
    const key = (p: Person) => (slim ? String(p.userId) : p.email);
    const about = (p: Person) => (e: Record<string, any>) => e.type === 'presence' && (slim ? key(p) in e.presences : e.user_id === p.userId);
    // Idle then active: news each time (a change of status), first the stranger's, then the peer's.
    const status = slim ? 'idle' : 'active';
    await own.api.as(stranger).ok('POST', '/users/me/presence', { status });
    await own.api.as(peer).ok('POST', '/users/me/presence', { status });
    const seen: Array<Record<string, any>> = [];
    await waitFor(qGuest, (e) => {
      if (e.type === 'presence') seen.push(e);
      return about(peer)(e);
    });
    t.notOk(seen.some(about(stranger)), `${slim ? 'slim' : 'legacy'}: no presence event about a user the guest may not see`);
    for (const e of seen) applyEvent(snaps[0]!, e);
    await waitFor(qMember, about(stranger));
    const rest = await waitFor(qMember, about(peer));
    t.ok(rest, 'a member gets both');
    const [fresh, freshMember] = await Promise.all([g.ok('POST', '/register', FETCH), m.ok('POST', '/register', FETCH)]);
    t.notOk(key(stranger) in fresh.presences, 'register leaves them out');
    t.ok(key(peer) in fresh.presences && key(guest) in fresh.presences, 'and keeps those the guest sees, and the guest');
    t.ok(key(stranger) in freshMember.presences, 'a member gets everyone');
    t.same(Object.keys(snaps[0]!.presences).sort(), Object.keys(fresh.presences).sort(), 'the guest: snapshot + events == a fresh register (who is listed)');
  }
  t.notOk(stranger.email in (await g.ok('GET', '/realm/presence')).presences, 'GET /realm/presence leaves them out');
  t.ok(peer.email in (await g.ok('GET', '/realm/presence')).presences);
  t.notOk(String(stranger.userId) in (await g.ok('POST', '/users/me/presence', { status: 'active', slim_presence: true })).presences, "POST /users/me/presence's answer too");
  t.equal(outcome(await g.call('GET', `/users/${stranger.userId}/presence`), true), '400 BAD_REQUEST Insufficient permission');
  t.equal(outcome(await g.call('GET', `/users/${encodeURIComponent(stranger.email)}/presence`), true), '400 BAD_REQUEST Insufficient permission', 'by email too');
  t.equal((await g.ok('GET', `/users/${peer.userId}/presence`)).presence.aggregated.status, 'active');
  t.equal(outcome(await m.call('GET', `/users/${stranger.userId}/presence`)), 'ok', 'a member reads it');

  // Not restricted: the guest sees everyone's presence again.
  await owner.ok('PATCH', '/realm', { can_access_all_users_group: { new: EVERYONE } });
  t.ok(stranger.email in (await g.ok('GET', '/realm/presence')).presences, 'role:everyone: GET /realm/presence lists them');
  t.equal(outcome(await g.call('GET', `/users/${stranger.userId}/presence`)), 'ok');
  const newcomer = await loner(ROLE.member, 'Limited Newcomer', own);
  const q = await register(g, { event_types: ['presence'], client_capabilities: { simplified_presence_events: true } });
  await own.api.as(newcomer).ok('POST', '/users/me/presence', { status: 'active' });
  t.ok(await waitFor(q, (e) => e.type === 'presence' && String(newcomer.userId) in e.presences), 'and presence events about users they share nothing with');
});
