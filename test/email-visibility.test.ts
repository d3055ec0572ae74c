// Email address visibility (FL 1's setting, a user setting since FL 163):
// a user who hides their address is known everywhere by a made-up one
// (user<id>@<host>), and their real address is given, in delivery_email,
// only to the roles the setting names. Over HTTP, as every role, with the
// events (snapshot plus events equals a fresh register).
import t from 'tap';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor, type Queue } from './helpers/events.ts';
import { newPerson } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const d = s.demo;
const roles = { owner: d.owner, admin: d.admin, moderator: d.moderator, member: d.member1, guest: d.guest } as const;
type RoleName = keyof typeof roles;

/** What each role gets as the user's `email` and `delivery_email` (GET /users/{id}). */
async function seenBy(userId: number): Promise<Record<RoleName, [string, string | null]>> {
  const out: Record<string, [string, string | null]> = {};
  for (const [name, creds] of Object.entries(roles)) {
    const u = (await s.api.as(creds).ok('GET', `/users/${userId}`)).user;
    out[name] = [u.email, u.delivery_email];
  }
  return out as Record<RoleName, [string, string | null]>;
}

const everyone = (value: [string, string | null]): Record<RoleName, [string, string | null]> => ({ owner: value, admin: value, moderator: value, member: value, guest: value });

t.test('email visibility - who sees the real address, for every setting and role (FL 1)', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  // The guest sees users it shares a channel with.
  await s.api.as(d.owner).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: 'general' }], principals: [p.userId, d.guest.userId] });
  t.same(await seenBy(p.userId), everyone([p.email, p.email]), 'visible to everyone (the default): the real address for all');
  const made = (await api.ok('GET', '/users/me')).email;
  t.equal(made, p.email);

  await api.ok('PATCH', '/settings', { email_address_visibility: 3 });
  const me = await api.ok('GET', '/users/me');
  t.match(me.email, new RegExp(`^user${p.userId}@`), 'the API now knows the user by a made-up address');
  t.equal(me.delivery_email, p.email, 'the user still sees their own');
  const dummy = me.email as string;
  t.same(await seenBy(p.userId), { owner: [dummy, p.email], admin: [dummy, p.email], moderator: [dummy, null], member: [dummy, null], guest: [dummy, null] }, 'administrators only');
  await api.ok('PATCH', '/settings', { email_address_visibility: 5 });
  t.same(await seenBy(p.userId), { owner: [dummy, p.email], admin: [dummy, p.email], moderator: [dummy, p.email], member: [dummy, null], guest: [dummy, null] }, 'moderators and administrators');
  await api.ok('PATCH', '/settings', { email_address_visibility: 2 });
  t.same(await seenBy(p.userId), { owner: [dummy, p.email], admin: [dummy, p.email], moderator: [dummy, p.email], member: [dummy, p.email], guest: [dummy, null] }, 'members, not guests');
  await api.ok('PATCH', '/settings', { email_address_visibility: 4 });
  t.same(await seenBy(p.userId), everyone([dummy, null]), 'nobody: not even the owner');
  const list = (await s.api.as(d.owner).ok('GET', '/users')).members.find((u: any) => u.user_id === p.userId);
  t.same([list.email, list.delivery_email], [dummy, null], 'GET /users says the same');
  t.notOk(JSON.stringify(await s.api.as(d.member1).ok('POST', '/register', { fetch_event_types: ['realm_user'] })).includes(p.email), 'no register a member gets names the real address');

  // Lookups: the made-up address names the user; the real one only for whoever may see it.
  t.equal((await s.api.as(d.member1).ok('GET', `/users/${dummy}`)).user.user_id, p.userId, 'GET /users/{made-up address}');
  const byReal = await s.api.as(d.member1).call('GET', `/users/${p.email}`);
  t.same([byReal.status, byReal.body.msg], [400, 'No such user'], 'the real address does not find a hidden user');
  await api.ok('PATCH', '/settings', { email_address_visibility: 3 });
  t.equal((await s.api.as(d.admin).ok('GET', `/users/${p.email}`)).user.user_id, p.userId, 'an administrator who may see it looks the user up by it');
  t.equal((await s.api.as(d.member1).call('GET', `/users/${p.email}`)).status, 400, 'a member still may not');

  // Messages, reactions, direct messages and presence use the made-up address.
  const sent = await api.ok('POST', '/messages', { type: 'stream', to: 'general', topic: 'hidden addresses', content: 'hello' });
  const read = await s.api.as(d.member1).ok('GET', '/messages', { anchor: sent.id, num_before: 0, num_after: 0 });
  t.equal(read.messages[0].sender_email, dummy, 'sender_email');
  const dm = await s.api.as(d.member1).ok('POST', '/messages', { type: 'direct', to: [dummy], content: 'to a made-up address' });
  const got = await api.ok('GET', '/messages', { anchor: dm.id, num_before: 0, num_after: 0 });
  t.same(got.messages[0].display_recipient.find((r: any) => r.id === p.userId).email, dummy, 'a direct message reaches the user by the made-up address, and names them by it');
  const refused = await s.api.as(d.member1).call('POST', '/messages', { type: 'direct', to: [p.email], content: 'to the real address' });
  t.equal(refused.status, 400, 'the real address names nobody in a send');
  await s.api.as(d.member1).ok('POST', `/messages/${sent.id}/reactions`, { emoji_name: 'smile' });
  await api.ok('POST', '/users/me/presence', { status: 'active' });
  let presence: Record<string, unknown> = {};
  for (let i = 0; i < 30; i++) {
    presence = (await s.api.as(d.member1).ok('GET', '/realm/presence')).presences;
    if (dummy in presence) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  t.ok(dummy in presence, 'presence is keyed by the made-up address');
  t.notOk(p.email in presence, 'and not by the real one');
  await api.ok('PATCH', '/settings', { email_address_visibility: 1 });
  t.same(await seenBy(p.userId), everyone([p.email, p.email]), 'visible to everyone again');
});

t.test('email visibility - events: delivery_email to who gains or loses sight, new_email and the avatar to all; snapshot plus events equals a fresh register', async (t) => {
  const p = await newPerson(s);
  const api = s.api.as(p);
  const queues: Array<[string, Queue]> = [];
  for (const [name, creds] of [['member', d.member1], ['admin', d.admin], ['member, client_gravatar off', d.member1]] as const) {
    queues.push([name, await register(s.api.as(creds), { fetch_event_types: ['realm_user'], client_gravatar: name !== 'member, client_gravatar off' })]);
  }
  const snaps = queues.map(([, q]) => structuredClone(q.snapshot));
  await api.ok('PATCH', '/settings', { email_address_visibility: 3 });
  await api.ok('PATCH', '/settings', { email_address_visibility: 4 });
  await api.ok('PATCH', '/settings', { email_address_visibility: 1 });
  for (const [i, [name, q]] of queues.entries()) {
    const seen: Array<Record<string, any>> = [];
    let back = false;
    // Up to the avatar event that follows the address becoming the real one again.
    await waitFor(q, (e) => {
      applyEvent(snaps[i]!, e);
      if (e.type !== 'realm_user' || e.person.user_id !== p.userId) return false;
      seen.push(e.person);
      if (e.person.new_email === p.email) back = true;
      return back && 'avatar_url' in e.person;
    });
    const keys = seen.map((x) => Object.keys(x).filter((k) => k !== 'user_id').sort().join('+'));
    t.ok(seen.filter((x) => 'avatar_url' in x).every((x) => x.avatar_version === 1), 'avatar events carry avatar_version (FL 6)');
    t.equal(snaps[i]!.realm_users.find((u: any) => u.user_id === p.userId).avatar_version, 1, 'as user objects do');
    const avatar = 'avatar_source+avatar_url+avatar_url_medium+avatar_version';
    if (name === 'admin') t.same(keys, ['new_email', avatar, 'delivery_email', 'delivery_email', 'new_email', avatar], 'the administrator loses sight only at nobody, and gets it back');
    else t.same(seen.filter((x) => 'delivery_email' in x).map((x) => x.delivery_email), [null, p.email], `${name}: loses the real address at once, gets it back at the end`);
    const fresh = (await register(s.api.as(name === 'admin' ? d.admin : d.member1), { fetch_event_types: ['realm_user'], client_gravatar: name !== 'member, client_gravatar off' })).snapshot;
    const of = (x: Record<string, any>) => x.realm_users.find((u: any) => u.user_id === p.userId);
    t.same(of(snaps[i]!), of(fresh), `${name}: snapshot plus events equals a fresh register`);
  }
});
