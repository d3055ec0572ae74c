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
import { startServer } from './helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '..');
const s = await startServer();
const dataDir = s.dataDir!;
t.teardown(async () => {
  await s.stop();
  rmSync(dataDir, { recursive: true, force: true });
});
const as = callers(s);

function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), 'users', '--org', '.', ...args], { env: { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(dataDir, 'data') } }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

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
