// PATCH /bots/{bot_id} over HTTP: who may change a bot (its owner, an
// administrator), its name, its role (FL 130: administrators; the owner role
// by owners), its owner (realm_bot delete/add/update and realm_user events, as
// Zulip's do_change_bot_owner) and an outgoing-webhook bot's service.
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { asRoles, isError } from './helpers/roles.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);

/** A new bot of `api`'s user: its ID. */
async function newBot(api: Api, params: Record<string, string | number> = {}): Promise<number> {
  const short = uniq('upd').replace(/[^a-z0-9]/g, '');
  return (await api.ok('POST', '/bots', { full_name: `Upd ${short}`, short_name: short, ...params })).user_id;
}
const userOf = async (id: number) => (await owner.ok('GET', `/users/${id}`)).user;

t.test('bot update - its owner and administrators change it; every other role is refused', async (t) => {
  const bot = await newBot(maria);
  for (const [role, api] of asRoles(s)) {
    const name = `Renamed by ${role} ${uniq('n').slice(-5)}`;
    const r = await api.call('PATCH', `/bots/${bot}`, { full_name: name });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin' || role === 'member1') {
      t.equal(r.status, 200, `${role} renames it`);
      t.match(r.body, { full_name: name, avatar_url: String, default_sending_stream: null, default_all_public_streams: false });
      t.equal((await userOf(bot)).full_name, name);
    } else isError(t, r, 400, 'BAD_REQUEST', /^Insufficient permission$/, role);
  }
  isError(t, await mateo.call('PATCH', `/bots/${bot}`, { full_name: 'Not mine' }), 400, 'BAD_REQUEST', /^Insufficient permission$/, 'another member');
});

t.test('bot update - the role (FL 130): administrators only, the owner role by owners only', async (t) => {
  const bot = await newBot(maria);
  isError(t, await maria.call('PATCH', `/bots/${bot}`, { role: 200 }), 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, 'the bot owner');
  await admin.ok('PATCH', `/bots/${bot}`, { role: 200 });
  t.equal((await userOf(bot)).role, 200, 'an administrator made it an administrator');
  isError(t, await admin.call('PATCH', `/bots/${bot}`, { role: 100 }), 400, 'UNAUTHORIZED_PRINCIPAL', /organization owner/, 'an administrator, to owner');
  await owner.ok('PATCH', `/bots/${bot}`, { role: 100 });
  t.equal((await userOf(bot)).role, 100);
  isError(t, await admin.call('PATCH', `/bots/${bot}`, { role: 400 }), 400, 'UNAUTHORIZED_PRINCIPAL', /organization owner/, 'an administrator, from owner');
  await owner.ok('PATCH', `/bots/${bot}`, { role: 400 });
  t.equal((await userOf(bot)).role, 400);
  isError(t, await owner.call('PATCH', `/bots/${bot}`, { role: 150 }), 400, 'BAD_REQUEST', /Invalid role/);
});

t.test('bot update - errors: no such bot, names in use, owners that cannot own, a service of a bot without one', async (t) => {
  const bot = await newBot(maria);
  isError(t, await admin.call('PATCH', '/bots/999999', { full_name: 'x' }), 400, 'BAD_REQUEST', /^No such bot$/, 'unknown ID');
  isError(t, await admin.call('PATCH', `/bots/${s.demo.member1.userId}`, { full_name: 'x' }), 400, 'BAD_REQUEST', /^No such bot$/, 'a human');
  const other = await userOf(s.demo.member2.userId);
  isError(t, await maria.call('PATCH', `/bots/${bot}`, { full_name: other.full_name }), 400, 'BAD_REQUEST', /^Name is already in use!$/);
  isError(t, await maria.call('PATCH', `/bots/${bot}`, { full_name: 'a"b' }), 400, 'BAD_REQUEST', /Invalid characters in name/);
  isError(t, await admin.call('PATCH', `/bots/${bot}`, { bot_owner_id: 999999 }), 400, 'BAD_REQUEST', /^Failed to change owner, no such user$/);
  isError(t, await admin.call('PATCH', `/bots/${bot}`, { bot_owner_id: s.demo.bot.userId }), 400, 'BAD_REQUEST', /^Failed to change owner, bots can't own other bots$/);
  isError(t, await admin.call('PATCH', `/bots/${bot}`, { service_payload_url: 'https://hook.example/' }), 400, 'BAD_REQUEST', /outgoing webhook/);
  const gone = await owner.ok('POST', '/users', { email: `${uniq('gone')}@parley.example`, password: 'long enough pw', full_name: `Gone ${uniq('g').slice(-5)}` });
  await owner.ok('DELETE', `/users/${gone.user_id}`);
  isError(t, await admin.call('PATCH', `/bots/${bot}`, { bot_owner_id: gone.user_id }), 400, 'BAD_REQUEST', /^Failed to change owner, user is deactivated$/);
});

t.test('bot update - a new owner: realm_bot delete and add, realm_user bot_owner_id; snapshot plus events equals a fresh register', async (t) => {
  const bot = await newBot(maria);
  const FETCH = { fetch_event_types: ['realm_bot', 'realm_user'], event_types: ['realm_bot', 'realm_user'] };
  const apis = [maria, mateo, admin];
  const queues = await Promise.all(apis.map((api) => register(api, FETCH)));
  const snaps = queues.map((q) => structuredClone(q.snapshot)) as Array<Record<string, any>>;
  const r = await admin.ok('PATCH', `/bots/${bot}`, { bot_owner_id: s.demo.member2.userId });
  t.equal(r.bot_owner, s.demo.member2.email, 'the reply names the new owner');
  const seen: Array<Array<Record<string, any>>> = [[], [], []];
  for (const [i, q] of queues.entries()) {
    await waitFor(q, (e) => (applyEvent(snaps[i]!, e), seen[i]!.push(e), e.type === 'realm_user'));
    const fresh = (await register(apis[i]!, FETCH)).snapshot;
    t.same(snaps[i]!.realm_bots, fresh.realm_bots, `user ${i}: realm_bots, snapshot plus events`);
    t.same(snaps[i]!.realm_users.find((u: any) => u.user_id === bot), fresh.realm_users.find((u: any) => u.user_id === bot), `user ${i}: the bot in realm_users`);
  }
  t.match(seen[0], [{ type: 'realm_bot', op: 'delete', bot: { user_id: bot } }], 'the old owner loses it');
  t.match(seen[1], [{ type: 'realm_bot', op: 'add', bot: { user_id: bot } }], 'the new owner gains it');
  t.notOk(seen[2]!.some((e) => e.type === 'realm_bot'), 'administrators get no realm_bot update (FL 474)');
  for (const i of [0, 1, 2]) t.match(seen[i]!.find((e) => e.type === 'realm_user'), { op: 'update', person: { user_id: bot, bot_owner_id: s.demo.member2.userId } }, `user ${i} hears of the new owner from realm_user`);
  t.equal((await userOf(bot)).bot_owner_id, s.demo.member2.userId);
  isError(t, await maria.call('PATCH', `/bots/${bot}`, { full_name: 'no longer mine' }), 400, 'BAD_REQUEST', /^Insufficient permission$/, 'the old owner');
  await mateo.ok('PATCH', `/bots/${bot}`, { full_name: `Mateo's ${uniq('b').slice(-5)}` });
});

t.test('bot update - an outgoing-webhook bot\'s service URL', async (t) => {
  const bot = await newBot(maria, { bot_type: 3, payload_url: 'https://hook.example/one' });
  const r = await maria.ok('PATCH', `/bots/${bot}`, { service_payload_url: 'https://hook.example/two' });
  t.equal(r.service_payload_url, 'https://hook.example/two');
  const listed = (await maria.ok('GET', '/bots')).bots.find((b: any) => b.user_id === bot);
  t.equal(listed.services[0].base_url, 'https://hook.example/two');
  isError(t, await maria.call('PATCH', `/bots/${bot}`, { service_payload_url: 'ftp://x' }), 400, 'BAD_REQUEST', /not a URL/);
  isError(t, await maria.call('PATCH', `/bots/${bot}`, { service_interface: 2 }), 400, 'BAD_REQUEST', /Invalid interface type/);
});

t.test('bot update - a member removes a bot they own from a channel; another member may not (FL 145)', async (t) => {
  const bot = await newBot(maria);
  const channel = uniq('botchan');
  await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [s.demo.member1.userId, bot] });
  const subscribed = async () => ((await maria.ok('GET', `/streams/${(await maria.ok('GET', '/get_stream_id', { stream: channel })).stream_id}/members`)).subscribers as number[]).includes(bot);
  t.equal(await subscribed(), true);
  await mateo.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  isError(t, await mateo.call('DELETE', '/users/me/subscriptions', { subscriptions: [channel], principals: [bot] }), 400, 'BAD_REQUEST', /^Insufficient permission$/, 'a member, of a bot not theirs');
  t.equal(await subscribed(), true);
  const r = await maria.ok('DELETE', '/users/me/subscriptions', { subscriptions: [channel], principals: [bot] });
  t.same(r.removed, [channel], 'its owner removed it');
  t.equal(await subscribed(), false);
});

t.test('bot update - short_name changes the bot\'s email (FL 447): who may, the address, errors, credentials, realm_user events; snapshot plus events equals a fresh register', async (t) => {
  const short = uniq('sn').replace(/[^a-z0-9]/g, '');
  const made = await maria.ok('POST', '/bots', { full_name: `Short ${short}`, short_name: short });
  const bot = made.user_id as number;
  const domain = (made.email ?? (await userOf(bot)).email).split('@')[1];
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', `/bots/${bot}`, { short_name: `${short}${role.replace(/[^a-z0-9]/g, '')}` });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin' || role === 'member1') t.equal(r.status, 200, `${role} changes it`);
    else isError(t, r, 400, 'BAD_REQUEST', /^Insufficient permission$/, role);
  }
  t.equal((await userOf(bot)).email, `${short}member1-bot@${domain}`, 'the last change, as <short_name>-bot@<domain>');
  const FETCH = { fetch_event_types: ['realm_user'], event_types: ['realm_user'] };
  const apis = [maria, mateo, admin];
  const queues = await Promise.all(apis.map((api) => register(api, FETCH)));
  const snaps = queues.map((q) => structuredClone(q.snapshot)) as Array<Record<string, any>>;
  const next = `${short}x`;
  await maria.ok('PATCH', `/bots/${bot}`, { short_name: ` ${next.toUpperCase()} ` });
  const email = `${next}-bot@${domain}`;
  t.match(await userOf(bot), { email, delivery_email: email }, 'trimmed and lower-cased');
  for (const [i, q] of queues.entries()) {
    const e = await waitFor(q, (ev) => (applyEvent(snaps[i]!, ev), ev.type === 'realm_user' && ev.person?.new_email !== undefined));
    t.match(e, { op: 'update', person: { user_id: bot, new_email: email } }, `user ${i} hears of the new email`);
    const fresh = (await register(apis[i]!, FETCH)).snapshot;
    t.same(snaps[i]!.realm_users.find((u: any) => u.user_id === bot), fresh.realm_users.find((u: any) => u.user_id === bot), `user ${i}: the bot in realm_users, snapshot plus events`);
  }
  const asBot = (address: string) => s.api.as({ email: address, apiKey: made.api_key });
  t.equal((await asBot(email).call('GET', '/users/me')).status, 200, 'the bot signs in with its new email');
  t.equal((await asBot(`${short}member1-bot@${domain}`).call('GET', '/users/me')).status, 401, 'not with the old one');
  const other = await newBot(mateo);
  const taken = (await userOf(other)).email.split('-bot@')[0];
  isError(t, await maria.call('PATCH', `/bots/${bot}`, { short_name: taken }), 400, 'BAD_REQUEST', /^Username already in use$/, 'another bot\'s address');
  isError(t, await maria.call('PATCH', `/bots/${bot}`, { short_name: 'a b' }), 400, 'BAD_REQUEST', /^Bad name or username$/);
  await maria.ok('PATCH', `/bots/${bot}`, { short_name: next });
  t.equal((await userOf(bot)).email, email, 'its own address again: no change');
});
