// DELETE /users/{user_id} with `actions` (FL 459): deleting a deactivated
// user's profile and their messages (public channels, private channels,
// direct messages), for the user's bots first; who may, bad actions, the
// events, and what others see of them afterwards.
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { applyEvent, catchUp, type Snap } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { asEveryone, callers, newPerson, outcome, type Person, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const NO_PERMISSION = '400 BAD_REQUEST Insufficient permission';
const ANON = '401 UNAUTHORIZED Missing authorization header for basic auth';
const ALL = { delete_profile: true, delete_public_channel_messages: true, delete_private_channel_messages: true, delete_direct_messages: true };
const GROUP = { owners: 7, administrators: 6 };

/** A channel of its own (public or private), with these subscribers and the owner. */
async function channel(inviteOnly: boolean, ...members: number[]): Promise<{ name: string; id: number }> {
  const name = uniq(inviteOnly ? 'secret' : 'open');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), invite_only: inviteOnly, principals: JSON.stringify([s.demo.owner.userId, ...members]) });
  return { name, id: (await as.owner.ok('GET', '/get_stream_id', { stream: name })).stream_id };
}

const sendTo = async (who: Person | { email: string; apiKey: string }, to: string, content: string, topic = 'deleting'): Promise<number> =>
  (await s.api.as(who).ok('POST', '/messages', { type: 'stream', to, topic, content })).id;
const dm = async (who: { email: string; apiKey: string }, to: number[], content: string): Promise<number> => (await s.api.as(who).ok('POST', '/messages', { type: 'direct', to: JSON.stringify(to), content })).id;

/** A bot `p` owns, with its credentials. */
async function botOf(p: Person): Promise<{ userId: number; email: string; apiKey: string }> {
  const made = await s.api.as(p).ok('POST', '/bots', { full_name: `Helper ${uniq('b').slice(-6)}`, short_name: uniq('helper') });
  const { email } = (await as.owner.ok('GET', `/users/${made.user_id}`)).user;
  return { userId: made.user_id, email, apiKey: made.api_key };
}

/** Whether `reader` still finds message `id`. */
const exists = async (reader: { email: string; apiKey: string }, id: number): Promise<boolean> => outcome(await s.api.as(reader).call('GET', `/messages/${id}`)) === 'ok';

t.test('people delete - DELETE /users/{id} with actions: who may, for every role; a refused request changes nothing', async (t) => {
  const targets = new Map<string, Person>();
  const sent = new Map<string, number>();
  const open = await channel(false);
  const result = await asEveryone(s, 'DELETE', (who) => `/users/${targets.get(who)!.userId}`, async (who) => {
    const p = await newPerson(s);
    targets.set(who, p);
    await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: open.name }], principals: [p.userId] });
    sent.set(who, await sendTo(p, open.name, `from the target of ${who}`));
    return { actions: JSON.stringify(ALL) };
  }, true);
  t.same(result, { owner: 'ok', admin: 'ok', moderator: NO_PERMISSION, member: NO_PERMISSION, guest: NO_PERMISSION, bot: NO_PERMISSION, anonymous: ANON });
  for (const who of ['moderator', 'member', 'guest', 'bot', 'anonymous']) {
    const u = (await as.owner.ok('GET', `/users/${targets.get(who)!.userId}`)).user;
    t.same([u.is_active, u.full_name], [true, targets.get(who)!.fullName], `refused for ${who}: still active, name kept`);
    t.ok(await exists(s.demo.owner, sent.get(who)!), `refused for ${who}: the message is kept`);
  }
  const done = (await as.owner.ok('GET', `/users/${targets.get('admin')!.userId}`)).user;
  t.same([done.is_active, done.full_name], [false, 'Deleted user'], 'an administrator deactivated and deleted the profile');

  // Deleting an owner (and so their profile) takes an owner, as deactivating one does.
  const anOwner = await newPerson(s, ROLE.owner);
  t.equal(outcome(await as.admin.call('DELETE', `/users/${anOwner.userId}`, { actions: JSON.stringify({ delete_profile: true }) }), true), '400 UNAUTHORIZED_PRINCIPAL Must be an organization owner');
  t.equal((await as.owner.ok('GET', `/users/${anOwner.userId}`)).user.full_name, anOwner.fullName, 'the owner keeps their name');
  t.equal(outcome(await as.owner.call('DELETE', `/users/${anOwner.userId}`, { actions: JSON.stringify({ delete_profile: true }) })), 'ok', 'an owner may');

  // Deleting messages is what can_delete_any_message_group allows: here owners only.
  const before = (await as.owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_can_delete_any_message_group;
  t.teardown(() => as.owner.ok('PATCH', '/realm', { can_delete_any_message_group: JSON.stringify({ new: before }) }));
  await as.owner.ok('PATCH', '/realm', { can_delete_any_message_group: JSON.stringify({ new: GROUP.owners }) });
  const p = await newPerson(s);
  for (const action of ['delete_public_channel_messages', 'delete_private_channel_messages', 'delete_direct_messages']) {
    t.equal(outcome(await as.admin.call('DELETE', `/users/${p.userId}`, { actions: JSON.stringify({ [action]: true }) }), true), "400 BAD_REQUEST You don't have permission to delete this user's messages", `${action} needs can_delete_any_message_group`);
  }
  t.equal((await as.owner.ok('GET', `/users/${p.userId}`)).user.is_active, true, 'the refused requests deactivated no one');
  t.equal(outcome(await as.admin.call('DELETE', `/users/${p.userId}`, { actions: JSON.stringify({ delete_profile: true, delete_direct_messages: false }) })), 'ok', 'deleting the profile does not need it');
});

t.test('people delete - bad actions are refused with the parameter named, nothing done', async (t) => {
  const p = await newPerson(s);
  for (const [actions, why] of [
    ['{"delete_everything": true}', 'an unknown action'],
    ['{"delete_profile": "yes"}', 'a value that is not a boolean'],
    ['[true]', 'not an object'],
    ['{delete_profile: true}', 'not JSON'],
  ] as const) {
    const r = await as.admin.call('DELETE', `/users/${p.userId}`, { actions });
    t.equal(outcome(r), '400 BAD_REQUEST', why);
    t.equal(r.body.var_name, 'actions', `${why}: names the parameter`);
  }
  t.equal((await as.owner.ok('GET', `/users/${p.userId}`)).user.is_active, true, 'still active');
  t.equal(outcome(await as.admin.call('DELETE', `/users/${p.userId}`, { actions: '{}' })), 'ok', 'no actions: a plain deactivation');
  t.equal((await as.owner.ok('GET', `/users/${p.userId}`)).user.full_name, p.fullName, 'the name kept');
});

t.test('people delete - delete_profile: the bots then the user renamed, in events, GET /users, messages and the register', async (t) => {
  const FETCH = ['realm_user', 'user_status'];
  const q = await register(as.admin, { fetch_event_types: FETCH, event_types: FETCH });
  const snap: Snap = structuredClone(q.snapshot);
  const p = await newPerson(s);
  const bot = await botOf(p);
  const open = await channel(false, p.userId, bot.userId);
  const said = await sendTo(p, open.name, 'soon gone from here');
  const botSaid = await sendTo(bot, open.name, 'a bot speaks');

  await as.admin.ok('DELETE', `/users/${p.userId}`, { actions: JSON.stringify({ delete_profile: true }) });
  const seen: Array<[number, string]> = [];
  await waitFor(q, (e) => {
    const who = e.person?.user_id;
    if (e.type === 'realm_user' && e.op === 'update' && (who === p.userId || who === bot.userId)) {
      if ('full_name' in e.person) seen.push([who, `full_name ${e.person.full_name}`]);
      if ('is_active' in e.person) seen.push([who, `is_active ${e.person.is_active}`]);
    }
    applyEvent(snap, e);
    return e.type === 'realm_user' && e.person?.user_id === p.userId && e.person.is_active === false;
  });
  t.same(seen, [
    [bot.userId, 'full_name Deactivated bot'],
    [bot.userId, 'is_active false'],
    [p.userId, 'full_name Deleted user'],
    [p.userId, 'is_active false'],
  ], 'the bot first, then the user: each renamed, then deactivated');

  const user = (await as.member.ok('GET', `/users/${p.userId}`)).user;
  t.same([user.full_name, user.is_active, user.email], ['Deleted user', false, p.email], 'GET /users/{id}: renamed and deactivated; the address kept');
  t.notOk('is_deleted' in user, 'not a deleted account (is_deleted, FL 490, is for accounts deleted by the operator)');
  const listed = (await as.guest.ok('GET', '/users')).members.find((m: any) => m.user_id === bot.userId);
  t.same([listed.full_name, listed.is_active], ['Deactivated bot', false], 'GET /users: the bot');
  const shown = (await as.owner.ok('GET', '/messages', { anchor: said, num_before: 0, num_after: 1, narrow: JSON.stringify([{ operator: 'channel', operand: open.id }]) })).messages;
  t.same(shown.map((m: any) => [m.id, m.sender_full_name]), [[said, 'Deleted user'], [botSaid, 'Deactivated bot']], 'their messages are kept, shown under the new names');

  // Snapshot plus events equals a fresh register.
  const marker = await as.owner.ok('POST', '/users/me/status', { status_text: `marker ${uniq('x')}` });
  t.equal(marker.result, 'success');
  await catchUp(q, snap, (e) => e.type === 'user_status' && typeof e.status_text === 'string' && e.status_text.startsWith('marker'));
  const fresh = (await register(as.admin, { fetch_event_types: FETCH })).snapshot;
  const byId = (a: any, b: any) => a.user_id - b.user_id;
  t.same([...snap.realm_users].sort(byId), [...fresh.realm_users].sort(byId), 'realm_users');
  t.same([...snap.realm_non_active_users].sort(byId), [...fresh.realm_non_active_users].sort(byId), 'realm_non_active_users: the renamed user and bot');
  t.equal(fresh.realm_non_active_users.find((u: any) => u.user_id === p.userId).full_name, 'Deleted user', 'a fresh register has the new name');
  await as.owner.ok('POST', '/users/me/status', { status_text: '' });
});

t.test('people delete - each message action deletes its kind only, for the user and their bots, with delete_message events', async (t) => {
  const reader = await newPerson(s, ROLE.member, 'Reader');
  const q = await register(s.api.as(reader), { event_types: ['delete_message'], client_capabilities: JSON.stringify({ bulk_message_deletion: true }) });
  const cases = [
    { action: 'delete_public_channel_messages', kind: 'public' },
    { action: 'delete_private_channel_messages', kind: 'private' },
    { action: 'delete_direct_messages', kind: 'direct' },
  ] as const;
  for (const { action, kind } of cases) {
    const p = await newPerson(s);
    const bot = await botOf(p);
    const open = await channel(false, p.userId, bot.userId, reader.userId);
    const secret = await channel(true, p.userId, bot.userId, reader.userId);
    const ids = {
      public: [await sendTo(p, open.name, 'public one'), await sendTo(bot, open.name, 'public from the bot', 'other topic')],
      private: [await sendTo(p, secret.name, 'private one'), await sendTo(bot, secret.name, 'private from the bot')],
      direct: [await dm(p, [reader.userId], 'one to one'), await dm(p, [reader.userId, s.demo.admin.userId], 'a group'), await dm(bot, [reader.userId], 'the bot writes')],
    };
    const others = [await sendTo(reader, open.name, 'the reader stays'), await dm(reader, [p.userId], 'the reader writes to them')];

    await as.admin.ok('DELETE', `/users/${p.userId}`, { actions: JSON.stringify({ [action]: true }) });
    const gone = new Set<number>();
    await waitFor(q, (e) => {
      if (e.type === 'delete_message') for (const id of e.message_ids) gone.add(id);
      return ids[kind].every((id) => gone.has(id));
    }, 20_000);
    t.same([...gone].filter((id) => !ids[kind].includes(id)), [], `${action}: delete_message events for those messages only`);
    for (const [k, list] of Object.entries(ids)) {
      for (const id of list) t.equal(await exists(reader, id), k !== kind, `${action}: a ${k} message ${k === kind ? 'is deleted' : 'is kept'}`);
    }
    for (const id of others) t.ok(await exists(reader, id), `${action}: other senders' messages are kept`);
    t.equal((await as.owner.ok('GET', `/users/${p.userId}`)).user.full_name, p.fullName, `${action}: the profile is kept`);
  }
});

t.test('people delete - every action at once: the channel\'s first message moves on, the deleter hears of what they can read', async (t) => {
  const p = await newPerson(s);
  const open = await channel(false, p.userId);
  const first = await sendTo(p, open.name, 'the very first');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: open.name }], principals: [s.demo.member1.userId] });
  const second = await sendTo(s.demo.member1, open.name, 'the second stays');
  t.equal((await as.owner.ok('GET', `/streams/${open.id}`)).stream.first_message_id, first);
  const admin = await register(as.admin, { event_types: ['delete_message', 'stream'], client_capabilities: JSON.stringify({ bulk_message_deletion: true }) });
  await as.admin.ok('DELETE', `/users/${p.userId}`, { actions: JSON.stringify(ALL) });
  const deleted = await waitFor(admin, (e) => e.type === 'delete_message' && e.message_ids.includes(first), 20_000);
  t.same([deleted.message_type, deleted.stream_id, deleted.topic], ['stream', open.id, 'deleting'], 'the administrator, who may read the public channel, is told');
  const moved = await waitFor(admin, (e) => e.type === 'stream' && e.op === 'update' && e.stream_id === open.id && e.property === 'first_message_id');
  t.equal(moved.value, second, 'first_message_id moves to the next message');
  t.equal((await as.owner.ok('GET', `/streams/${open.id}`)).stream.first_message_id, second);
  const u = (await as.owner.ok('GET', `/users/${p.userId}`)).user;
  t.same([u.full_name, u.is_active], ['Deleted user', false]);
});

t.test('people delete - messages go in bounded batches, also after a crash between the deactivation and its follow-up', { skip: s.dataDir ? false : 'restarts an embedded server of its own' }, async (t) => {
  // Batches of 2 messages, runs reading 3; the follow-up waits 3 s after the commit, so the server can be killed in between.
  let srv = await serverFor(t, { env: { PARLEY_FOLLOW_UP_DELAY_MS: '3000', PARLEY_USER_MESSAGES_BATCH: '2', PARLEY_USER_MESSAGES_SCAN: '3' } });
  const boss = srv.api.as(srv.demo.owner);
  const gone = srv.demo.member2;
  const reader = srv.demo.member1;
  const ids: { theirs: number[]; kept: number[] } = { theirs: [], kept: [] };
  const channels: number[] = [];
  for (const inviteOnly of [false, true]) {
    const name = uniq('batched');
    await boss.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], invite_only: inviteOnly, principals: [gone.userId, reader.userId] });
    channels.push((await boss.ok('GET', '/get_stream_id', { stream: name })).stream_id);
    for (let i = 0; i < 4; i++) {
      ids.theirs.push((await srv.api.as(gone).ok('POST', '/messages', { type: 'stream', to: name, topic: `t${i % 2}`, content: `theirs ${i}` })).id);
      ids.kept.push((await srv.api.as(reader).ok('POST', '/messages', { type: 'stream', to: name, topic: `t${i % 2}`, content: `kept ${i}` })).id);
    }
  }
  for (let i = 0; i < 3; i++) ids.theirs.push((await srv.api.as(gone).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([reader.userId]), content: `direct ${i}` })).id);
  await srv.api.as(srv.demo.admin).ok('DELETE', `/users/${gone.userId}`, { actions: JSON.stringify(ALL) });
  t.equal(outcome(await srv.api.as(reader).call('GET', `/messages/${ids.theirs[0]}`)), 'ok', 'answered before the follow-up ran');
  await srv.stop('SIGKILL');
  srv = await srv.restart();
  t.teardown(() => srv.stop());
  const look = srv.api.as(reader);
  const left = async () => (await Promise.all(ids.theirs.map(async (id) => ((await look.call('GET', `/messages/${id}`)).status === 200 ? id : null)))).filter((x) => x !== null);
  let still = await left();
  for (const until = Date.now() + 30_000; Date.now() < until && still.length; await new Promise((r) => setTimeout(r, 300))) still = await left();
  t.same(still, [], 'every one of their messages is deleted, batch after batch, after the restart');
  for (const id of ids.kept) t.equal(outcome(await look.call('GET', `/messages/${id}`)), 'ok', `message ${id} of another sender is kept`);
  for (const [i, c] of channels.entries()) t.equal((await srv.api.as(srv.demo.owner).ok('GET', `/streams/${c}`)).stream.first_message_id, ids.kept[i * 4], 'first_message_id: the first message left');
  await srv.stop();
});
