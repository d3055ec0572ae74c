// Deleted users (FL 490): the operator deletes a user with `parley users
// delete` (Zulip's `manage.py delete_user`); clients then see `is_deleted:
// true` on that user's object (and on no other), in GET /users, GET
// /users/{id}, the register and realm_user events, with the made-up name and
// address; their messages are deleted, or kept with --preserve-messages;
// their key stops working and they are never reactivated. Embedded mode, on a
// server of its own (the CLI opens its data directory).
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { callers, newPerson, outcome, ROLE } from './helpers/people.ts';
import { serverFor, startServer } from './helpers/server.ts';
import { DEMO_REALM_ID } from '../lib/demo.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { messageBucket, T } from '../storage/tables.ts';

const ROOT = resolve(import.meta.dirname, '..');
const s = await startServer();
const dataDir = s.dataDir!;
t.teardown(async () => {
  await s.stop();
  rmSync(dataDir, { recursive: true, force: true });
});
const as = callers(s);

function cliOf(dir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), 'users', '--org', '.', ...args], { env: { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(dir, 'data') } }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}
const cli = (...args: string[]) => cliOf(dataDir, ...args);

async function channelWith(...members: number[]): Promise<string> {
  const name = uniq('deleted');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify(members) });
  return name;
}

t.test('deleted users - parley users delete: is_deleted on their user object only, everywhere; messages deleted; key and reactivation refused', async (t) => {
  const p = await newPerson(s, ROLE.member, 'Soon Deleted');
  const bot = await s.api.as(p).ok('POST', '/bots', { full_name: `Their Bot ${uniq('b').slice(-5)}`, short_name: uniq('theirs') });
  const name = await channelWith(p.userId, s.demo.member1.userId);
  const theirs = (await s.api.as(p).ok('POST', '/messages', { type: 'stream', to: name, topic: 'going', content: 'mine' })).id;
  const direct = (await s.api.as(p).ok('POST', '/messages', { type: 'direct', to: JSON.stringify([s.demo.member1.userId]), content: 'to you' })).id;
  const kept = (await as.member.ok('POST', '/messages', { type: 'stream', to: name, topic: 'going', content: 'stays' })).id;
  const q = await register(as.admin, { fetch_event_types: JSON.stringify(['realm_user']), event_types: JSON.stringify(['realm_user']) });
  // The events of the deletion of their messages go to those who had them.
  const had = await register(as.member, { event_types: JSON.stringify(['delete_message']), client_capabilities: JSON.stringify({ bulk_message_deletion: true }) });

  const r = await cli('delete', p.email);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /is deleted/);

  const user = (await as.member.ok('GET', `/users/${p.userId}`)).user;
  t.same([user.is_deleted, user.is_active, user.full_name], [true, false, `Deleted User ${p.userId}`], 'GET /users/{id}: deleted, deactivated, renamed');
  t.match(user.email, new RegExp(`^deleteduser${p.userId}@`), 'a made-up address');
  const { members } = await as.guest.ok('GET', '/users');
  t.equal(members.find((m: any) => m.user_id === p.userId).is_deleted, true, 'GET /users');
  const others = members.filter((m: any) => m.user_id !== p.userId);
  t.ok(others.length > 0 && others.every((m: any) => !('is_deleted' in m)), 'present only when true: no other user object has it');
  const theBot = members.find((m: any) => m.user_id === bot.user_id);
  t.same([theBot.is_active, 'is_deleted' in theBot], [false, false], 'their bot is deactivated, not deleted');
  const snap = (await as.owner.ok('POST', '/register', { fetch_event_types: JSON.stringify(['realm_user']) })).realm_non_active_users.find((u: any) => u.user_id === p.userId);
  t.same([snap.is_deleted, snap.full_name], [true, `Deleted User ${p.userId}`], 'the register: realm_non_active_users');

  const updates = new Map<string, unknown>();
  await waitFor(q, (e) => {
    if (e.type === 'realm_user' && e.person.user_id === p.userId) for (const [k, v] of Object.entries(e.person)) if (k !== 'user_id') updates.set(k, v);
    return updates.has('new_email');
  });
  t.same(Object.fromEntries(updates), { is_active: false, full_name: `Deleted User ${p.userId}`, delivery_email: user.email, new_email: user.email }, 'realm_user updates: deactivated, renamed, new address');
  const gone = new Set<number>();
  await waitFor(had, (e) => {
    if (e.type === 'delete_message') for (const id of e.message_ids) gone.add(id);
    return gone.has(theirs) && gone.has(direct);
  }, 20_000);
  t.equal(outcome(await as.member.call('GET', `/messages/${theirs}`)), '400 BAD_REQUEST', 'their channel message is deleted');
  t.equal(outcome(await as.member.call('GET', `/messages/${direct}`)), '400 BAD_REQUEST', 'their direct message is deleted');
  t.equal(outcome(await as.member.call('GET', `/messages/${kept}`)), 'ok', "others' messages are kept");

  t.equal(outcome(await s.api.as(p).call('GET', '/users/me')), '401 UNAUTHORIZED', 'their key and address are gone: an invalid key');
  t.equal(outcome(await as.owner.call('POST', `/users/${p.userId}/reactivate`), true), '400 BAD_REQUEST User has been deleted', 'never reactivated');
  const again = await cli('delete', String(p.userId));
  t.not(again.code, 0, 'deleting twice is refused');
  t.match(again.stderr + again.stdout, /already deleted/);
});

t.test('deleted users - --preserve-messages keeps their messages, shown under the deleted name', async (t) => {
  const p = await newPerson(s, ROLE.member, 'Keeps Words');
  const name = await channelWith(p.userId, s.demo.member1.userId);
  const said = (await s.api.as(p).ok('POST', '/messages', { type: 'stream', to: name, topic: 'kept', content: 'still here' })).id;
  const r = await cli('delete', String(p.userId), '--preserve-messages');
  t.equal(r.code, 0, r.stderr);
  await new Promise((done) => setTimeout(done, 500));
  const m = (await as.member.ok('GET', `/messages/${said}`)).message;
  t.same([m.sender_id, m.sender_full_name], [p.userId, `Deleted User ${p.userId}`], 'kept, under the deleted name');
  t.equal((await as.member.ok('GET', `/users/${p.userId}`)).user.is_deleted, true);
});

t.test('deleted users - the only owner is not deleted', async (t) => {
  const r = await cli('delete', s.demo.owner.email);
  t.not(r.code, 0);
  t.match(r.stderr + r.stdout, /only organization owner/);
  t.equal((await as.owner.ok('GET', '/users/me')).is_active, true);
  t.equal(outcome(await as.member.call('GET', '/users/me')), 'ok', 'nobody else was touched');
});

t.test("deleted users - their rows go: the realm's at once, their user actor's by a follow-up that finishes after a crash", async (t) => {
  // The follow-up waits 3 s after the deletion's commit here, so that the server can be killed in between.
  let srv = await serverFor(t, { env: { PARLEY_FOLLOW_UP_DELAY_MS: '3000' } });
  const dir = srv.dataDir!;
  const store = new EmbeddedStore(join(dir, 'data'));
  t.teardown(() => store.close());
  const R = DEMO_REALM_ID;
  const owner = () => srv.api.as(srv.demo.owner);
  const p = await newPerson(srv, ROLE.member, 'Leaves Rows');
  const me = srv.api.as(p);
  const name = uniq('rows');
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([p.userId, srv.demo.member1.userId]) });
  const streamId = (await owner().ok('GET', '/get_stream_id', { stream: name })).stream_id;
  const said = (await srv.api.as(srv.demo.member1).ok('POST', '/messages', { type: 'stream', to: name, topic: 'kept', content: 'for them' })).id;
  const later = Math.floor(Date.now() / 1000) + 3600;
  // One of each kind of row they own.
  await me.ok('POST', '/messages/flags', { messages: JSON.stringify([said]), op: 'add', flag: 'collapsed' });
  await me.ok('POST', '/user_topics', { stream_id: streamId, topic: 'kept', visibility_policy: 3 });
  await me.ok('POST', '/scheduled_messages', { type: 'stream', to: streamId, topic: 'later', content: 'never sent', scheduled_delivery_timestamp: later });
  await me.ok('POST', '/reminders', { message_id: said, scheduled_delivery_timestamp: later });
  await me.ok('POST', '/drafts', { drafts: JSON.stringify([{ type: 'stream', to: [streamId], topic: 'kept', content: 'a draft', timestamp: later - 3600 }]) });
  await me.ok('POST', '/saved_snippets', { title: 'Snip', content: 'a snippet' });
  await me.ok('POST', '/navigation_views', { fragment: 'inbox', is_pinned: false });
  await me.ok('POST', '/users/me/android_gcm_reg_id', { token: 'c0ffee'.repeat(20) });

  const realmRows = async () => ({
    subscription: (await T.subscriptions.at(R, streamId, p.userId).get(store)) !== undefined,
    userTopics: (await T.userTopics.partition(R, p.userId).range(store)).length,
    scheduled: (await Promise.all([...Array(4).keys()].map((b) => T.scheduledMessages.partition(R, b).values(store)))).flat().filter((m) => m.senderId === p.userId).length,
    pushDevices: (await T.pushDevices.partition(R).values(store)).filter((d) => d.userId === p.userId).length,
  });
  const userRows = async () => ({
    flags: (await T.userFlags.partition(R, p.userId, messageBucket(said)).range(store)).length,
    drafts: (await T.userDrafts.partition(R, p.userId).range(store)).length,
    snippets: (await T.savedSnippets.partition(R, p.userId).range(store)).length,
    navigationViews: (await T.navigationViews.partition(R, p.userId).range(store)).length,
    counters: (await T.userCounters.at(R, p.userId).get(store)) !== undefined,
  });
  t.same(await realmRows(), { subscription: true, userTopics: 1, scheduled: 2, pushDevices: 1 }, "before: the realm's rows of them");
  t.same(await userRows(), { flags: 1, drafts: 1, snippets: 1, navigationViews: 1, counters: true }, "before: their user actor's rows");

  const r = await cliOf(dir, 'delete', p.email, '--preserve-messages');
  t.equal(r.code, 0, r.stderr);
  t.same(await realmRows(), { subscription: false, userTopics: 0, scheduled: 0, pushDevices: 0 }, "the realm's rows go with the deletion's commit");
  t.equal((await userRows()).drafts, 1, "their user actor's rows wait for the follow-up");
  await srv.stop('SIGKILL');
  srv = await srv.restart();
  t.teardown(() => srv.stop());

  let rows = await userRows();
  for (const until = Date.now() + 20_000; Date.now() < until && Object.values(rows).some(Boolean); await new Promise((done) => setTimeout(done, 200))) rows = await userRows();
  t.same(rows, { flags: 0, drafts: 0, snippets: 0, navigationViews: 0, counters: false }, "after the restart the follow-up deleted their user actor's rows");
  t.same(await realmRows(), { subscription: false, userTopics: 0, scheduled: 0, pushDevices: 0 }, 'and the realm has none of them');
  // What others see: they are nobody's subscriber, and the message they had is intact.
  const m1 = srv.api.as(srv.demo.member1);
  t.notOk((await m1.ok('GET', `/streams/${streamId}/members`)).subscribers.includes(p.userId), 'not among the channel\'s subscribers');
  t.equal((await m1.ok('GET', `/messages/${said}`)).message.content, '<p>for them</p>', 'the message they were sent stays');
  t.equal((await owner().ok('GET', `/users/${p.userId}`)).user.is_deleted, true);

  // A bot deleted for good loses its storage.
  const short = uniq('keeps').replace(/[^a-z0-9]/g, '');
  const made = await owner().ok('POST', '/bots', { full_name: `Keeps ${short}`, short_name: short });
  const botEmail = made.email ?? (await owner().ok('GET', `/users/${made.user_id}`)).user.email;
  await srv.api.as({ email: botEmail, apiKey: made.api_key }).ok('PUT', '/bot_storage', { storage: JSON.stringify({ a: '1', b: '2' }) });
  const storage = async () => (await T.botStorage.partition(R, made.user_id).range(store)).length;
  t.equal(await storage(), 2, "the bot's storage");
  const rb = await cliOf(dir, 'delete', String(made.user_id));
  t.equal(rb.code, 0, rb.stderr);
  let left = await storage();
  for (const until = Date.now() + 20_000; Date.now() < until && left > 0; await new Promise((done) => setTimeout(done, 200))) left = await storage();
  t.equal(left, 0, "the deleted bot's storage is gone");
});
