// The system bots over HTTP: Notification Bot and Welcome Bot in
// cross_realm_bots (never realm_users), as message senders, out of everyone's
// reach; what they send: the referrer's notice (notify_referrer_on_join), the
// welcome messages with welcome_message_custom_text (FL 416) and new-channel
// announcements (announce); and realm_bots with its realm_bot events, each
// with the snapshot + events == a fresh register check.
import t from 'tap';
import { type Api, type Creds, type Params, uniq } from './helpers/api.ts';
import { catchUp, type Snap } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { mailedLink, outboxOf } from './helpers/outbox.ts';
import { newPerson, ROLE } from './helpers/people.ts';
import { asRoles, isError } from './helpers/roles.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);
const outbox = outboxOf(s);
const NOTIFICATION = 'notification-bot@zulip.com';
const WELCOME = 'welcome-bot@zulip.com';

async function systemBots(): Promise<Record<string, any>> {
  const reg = await maria.ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  return Object.fromEntries(reg.cross_realm_bots.map((b: any) => [b.email, b]));
}

/** Signs up through an invitation's page (`/join/<token>`); returns the new user's credentials. */
async function signUp(path: string, fullName: string, email?: string): Promise<Creds & { userId: number }> {
  const body = new URLSearchParams({ full_name: fullName, password: 'a good long password', ...(email ? { email } : {}) });
  const res = await fetch(`${s.urls[0]}${path}`, { method: 'POST', body });
  const page = await res.text();
  if (res.status !== 200) throw new Error(`sign-up failed (${res.status}): ${page}`);
  const creds = { email: /^email=(.*)$/m.exec(page)![1]!, apiKey: /^key=(.*)$/m.exec(page)![1]! };
  const me = await s.api.as(creds).ok('GET', '/users/me');
  return { ...creds, userId: me.user_id };
}

/** Joins through a new reusable link made by `api` with `params`. */
async function joinByLink(api: Api, params: Params = {}): Promise<Creds & { userId: number }> {
  const link = (await api.ok('POST', '/invites/multiuse', params)).invite_link;
  return signUp(new URL(link).pathname, 'Link Joiner', `${uniq('link')}@invitee.example`);
}

/** The direct messages `api`'s user has, oldest first. */
async function dms(api: Api): Promise<any[]> {
  const r = await api.ok('GET', '/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [{ operator: 'is', operand: 'dm' }], apply_markdown: false });
  return r.messages;
}

t.test('system bots - in cross_realm_bots for every role, never in realm_users; GET /users/{id} names them', async (t) => {
  for (const [role, api] of asRoles(s)) {
    const r = await api.post('/register', { fetch_event_types: ['realm_user'] });
    if (role === 'anonymous') {
      isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
      continue;
    }
    const bots = r.body.cross_realm_bots;
    t.same(bots.map((b: any) => b.email).sort(), [NOTIFICATION, WELCOME], `${role} sees both system bots`);
    for (const b of bots) t.match(b, { is_bot: true, is_system_bot: true, is_active: true, bot_owner_id: null, role: 400 }, `${role}: ${b.email}`);
    const ids = new Set(bots.map((b: any) => b.user_id));
    t.notOk([...r.body.realm_users, ...r.body.realm_non_active_users].some((u: any) => ids.has(u.user_id)), `${role}: not members`);
  }
  const bots = await systemBots();
  t.equal(bots[WELCOME].full_name, 'Welcome Bot');
  t.equal(bots[NOTIFICATION].full_name, 'Notification Bot');
  const one = await maria.ok('GET', `/users/${bots[WELCOME].user_id}`);
  t.match(one.user, { email: WELCOME, is_system_bot: true, full_name: 'Welcome Bot' });
  t.match((await maria.ok('GET', `/users/${NOTIFICATION}`)).user, { user_id: bots[NOTIFICATION].user_id, is_system_bot: true });
  const all = await maria.ok('GET', '/users');
  t.notOk(all.members.some((u: any) => u.is_system_bot), 'GET /users lists members only');
  t.notOk((await admin.ok('GET', '/bots')).bots.some((b: any) => b.username === WELCOME), 'no one administers them (GET /bots)');
});

t.test('system bots - nobody edits, deactivates, reactivates, subscribes or logs in as them', async (t) => {
  const bots = await systemBots();
  for (const bot of Object.values(bots)) {
    for (const [role, api] of asRoles(s)) {
      const edit = await api.call('PATCH', `/users/${bot.user_id}`, { full_name: 'Renamed' });
      const off = await api.delete(`/users/${bot.user_id}`);
      const on = await api.post(`/users/${bot.user_id}/reactivate`);
      for (const [what, r] of [['edit', edit], ['deactivate', off], ['reactivate', on]] as const) {
        if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, `${role} ${what}`);
        else isError(t, r, 400, 'BAD_REQUEST', /No such user/, `${role} ${what} ${bot.email}`);
      }
    }
    isError(t, await owner.post('/users/me/subscriptions', { subscriptions: [{ name: 'general' }], principals: [bot.user_id] }), 400, 'BAD_REQUEST', undefined, 'subscribe');
    const login = await s.api.post('/fetch_api_key', { username: bot.email, password: 'anything at all' });
    t.not(login.status, 200, `no password logs in as ${bot.email}`);
  }
  t.same(Object.keys(await systemBots()).sort(), [NOTIFICATION, WELCOME], 'still there, unchanged');
  t.equal((await systemBots())[WELCOME].full_name, 'Welcome Bot');
});

t.test('system bots - Welcome Bot greets a new user; the custom text follows as a second message', async (t) => {
  const bots = await systemBots();
  const joined = await joinByLink(admin, { welcome_message_custom_text: 'Read #**general** first.' });
  const got = await dms(s.api.as(joined));
  t.equal(got.length, 2, 'a greeting and the custom text');
  for (const m of got) t.match(m, { sender_id: bots[WELCOME].user_id, sender_email: WELCOME, sender_full_name: 'Welcome Bot', type: 'private', client: 'Internal' });
  t.match(got[0].content, /welcome/i);
  t.equal(got[1].content, 'Read #**general** first.');
  t.ok(got[0].avatar_url === null || typeof got[0].avatar_url === 'string', 'an avatar like any sender');
  // The new user can answer Welcome Bot (direct messages to system bots are allowed, as in Zulip).
  await s.api.as(joined).ok('POST', '/messages', { type: 'direct', to: [bots[WELCOME].user_id], content: 'hello' });
  await s.api.as(joined).ok('POST', '/messages', { type: 'direct', to: WELCOME, content: 'hello again' });
  const again = await dms(s.api.as(joined));
  t.equal(again.length, 4);
  t.same(again[3].display_recipient.map((r: any) => r.email).sort(), [joined.email, WELCOME].sort(), 'the conversation with Welcome Bot');
  // A user created by an administrator is greeted too.
  const email = `${uniq('created')}@parley.example`;
  const created = await owner.ok('POST', '/users', { email, password: 'a good long password', full_name: 'Created Person' });
  const login = await s.api.ok('POST', '/fetch_api_key', { username: email, password: 'a good long password' });
  const createdDms = await dms(s.api.as({ email, apiKey: login.api_key }));
  t.equal(createdDms.length, 1, 'the greeting only: the organization has no custom text');
  t.equal(createdDms[0].sender_id, bots[WELCOME].user_id);
  t.ok(created.user_id > 0);
});

t.test('system bots - welcome_message_custom_text: who may set it, its limits, and which text a new user gets', async (t) => {
  t.teardown(() => owner.ok('PATCH', '/realm', { welcome_message_custom_text: '' }));
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', '/realm', { welcome_message_custom_text: `Welcome from ${role}` });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} sets it`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /administrator/, role);
  }
  isError(t, await admin.call('PATCH', '/realm', { welcome_message_custom_text: 'x'.repeat(8001) }), 400, 'BAD_REQUEST', /too long/);
  isError(t, await admin.post('/invites/multiuse', { welcome_message_custom_text: 'x'.repeat(8001) }), 400, 'BAD_REQUEST', /too long/);
  await admin.ok('PATCH', '/realm', { welcome_message_custom_text: 'The organization says hi.' });
  t.equal((await maria.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_welcome_message_custom_text, 'The organization says hi.');
  // No text on the invitation (null): the organization's.
  const byDefault = await dms(s.api.as(await joinByLink(admin)));
  t.same(byDefault.map((m) => m.content).slice(1), ['The organization says hi.']);
  // An empty text on the invitation: no custom message.
  const none = await dms(s.api.as(await joinByLink(admin, { welcome_message_custom_text: '' })));
  t.equal(none.length, 1, 'the greeting only');
  // Only administrators' texts count: a member's invitation uses the organization's.
  await owner.ok('PATCH', '/realm', { create_multiuse_invite_group: { new: 3 } });
  t.teardown(() => owner.ok('PATCH', '/realm', { create_multiuse_invite_group: { new: 6 } }));
  const fromMember = await dms(s.api.as(await joinByLink(maria, { welcome_message_custom_text: 'From Maria' })));
  t.same(fromMember.map((m) => m.content).slice(1), ['The organization says hi.'], "a member's text is null");
});

t.test('system bots - notify_referrer_on_join: Notification Bot tells the referrer', { skip: outbox ? false : 'no outbox directory known for this server' }, async (t) => {
  const bots = await systemBots();
  const q = await register(maria, { event_types: ['message'] });
  const to = `${uniq('referred')}@invitee.example`;
  await maria.ok('POST', '/invites', { invitee_emails: to, stream_ids: [] });
  const joined = await signUp(mailedLink(outbox, to, '/join/')!, 'Referred Person');
  const e = await waitFor(q, (x) => x.type === 'message' && x.message.sender_id === bots[NOTIFICATION].user_id);
  t.match(e.message, { sender_email: NOTIFICATION, sender_full_name: 'Notification Bot', type: 'private' });
  t.match(e.message.content, new RegExp(`Referred Person.*accepted your invitation`));
  t.match(e.message.content, `@_**Referred Person|${joined.userId}**`, 'a silent mention of the new user');
  const stored = (await dms(maria)).filter((m) => m.sender_id === bots[NOTIFICATION].user_id);
  t.match(stored.at(-1).content, `@_**Referred Person|${joined.userId}** accepted your invitation`);
  // notify_referrer_on_join false: nothing.
  const quiet = `${uniq('quiet')}@invitee.example`;
  await mateo.ok('POST', '/invites', { invitee_emails: quiet, stream_ids: [], notify_referrer_on_join: false });
  await signUp(mailedLink(outbox, quiet, '/join/')!, 'Quiet Person');
  // (Other Notification Bot DMs may be there: in the cluster run other files subscribe this user to channels, FL 397.)
  t.notOk((await dms(mateo)).some((m) => m.sender_id === bots[NOTIFICATION].user_id && /Quiet Person.*accepted your invitation/.test(m.content)), 'no notice when the inviter asked for none');
});

t.test('system bots - announce: Notification Bot announces new channels in new_stream_announcements_stream_id', async (t) => {
  const bots = await systemBots();
  const announcements = uniq('announcements');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: announcements }], principals: [s.demo.member1.userId, s.demo.owner.userId] });
  const channelId = (await owner.ok('GET', '/get_stream_id', { stream: announcements })).stream_id;
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', '/realm', { new_stream_announcements_stream_id: channelId });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} sets it`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /administrator/, role);
  }
  t.teardown(() => owner.ok('PATCH', '/realm', { new_stream_announcements_stream_id: -1 }));
  isError(t, await admin.call('PATCH', '/realm', { new_stream_announcements_stream_id: 999_999 }), 400, 'BAD_REQUEST', /Invalid channel ID/);
  t.equal((await maria.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_new_stream_announcements_stream_id, channelId);
  const q = await register(maria, { event_types: ['message', 'stream'] });
  const fresh = uniq('fresh');
  const sub = await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: fresh }], announce: true });
  t.equal(sub.ignored_parameters_unsupported, undefined, 'announce is acted on');
  const e = await waitFor(q, (x) => x.type === 'message' && x.message.stream_id === channelId);
  t.match(e.message, { sender_id: bots[NOTIFICATION].user_id, sender_full_name: 'Notification Bot', subject: 'new channels', display_recipient: announcements });
  const stored = await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'channel', operand: channelId }], apply_markdown: false });
  t.equal(stored.messages[0].content, `@_**Maria Member|${s.demo.member1.userId}** created a new channel #**${fresh}**.`);
  const [a, b] = [uniq('pair'), uniq('pair')];
  await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: a }, { name: b }], announce: true });
  const pair = await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'channel', operand: channelId }], apply_markdown: false });
  t.match(pair.messages[0].content, `created the following channels: #**${a}**, #**${b}**.`);
  const before = pair.messages[0].id;
  // Without announce, or with announce and nothing created, or with no announcements channel: nothing.
  await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('quiet') }] });
  await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: fresh }], announce: true });
  await owner.ok('PATCH', '/realm', { new_stream_announcements_stream_id: -1 });
  await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('unset') }], announce: true });
  const after = await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'channel', operand: channelId }] });
  t.equal(after.messages[0].id, before, 'no other announcement');
});

// ---- message reports (FL 382) ----------------------------------------------

/** Zulip's `<time:…>` of a message's timestamp. */
const globalTime = (ts: number) => `<time:${new Date(ts * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00')}>`;

t.test('system bots - message reports: every role reports a message it can read to the moderation channel; errors (FL 382)', async (t) => {
  const bots = await systemBots();
  const moderation = uniq('moderation');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: moderation }], invite_only: true });
  const moderationId = (await owner.ok('GET', '/get_stream_id', { stream: moderation })).stream_id;
  const place = uniq('reported');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: place }], principals: ['owner', 'admin', 'moderator', 'member1', 'member2', 'guest', 'bot'].map((k) => s.demo[k as 'owner'].userId) });
  const target = await mateo.ok('POST', '/messages', { type: 'stream', to: place, topic: 'pineapple', content: 'I like pineapple on pizza' });
  const me = await maria.ok('GET', '/users/me');
  const reported = await mateo.ok('GET', '/users/me');

  let r = await maria.post(`/messages/${target.id}/report`, { report_type: 'spam' });
  isError(t, r, 400, 'BAD_REQUEST', /^Message reporting is not enabled in this organization\.$/, 'no moderation channel');
  await owner.ok('PATCH', '/realm', { moderation_request_channel_id: moderationId });
  t.teardown(() => owner.ok('PATCH', '/realm', { moderation_request_channel_id: -1 }));

  const reports = async (n: number) => (await owner.ok('GET', '/messages', { anchor: 'newest', num_before: n, num_after: 0, narrow: [{ operator: 'channel', operand: moderationId }], apply_markdown: false })).messages;
  const q = await register(owner, { event_types: ['message'] });
  r = await maria.post(`/messages/${target.id}/report`, { report_type: 'harassment', description: 'a crime against food' });
  t.equal(r.status, 200, 'a member reports a message');
  const e = await waitFor(q, (x) => x.type === 'message' && x.message.stream_id === moderationId);
  t.match(e.message, { sender_id: bots[NOTIFICATION].user_id, subject: `${reported.full_name} moderation` }, 'Notification Bot posts it in the moderation channel, in the sender\'s moderation topic');
  const sent = (await maria.ok('GET', `/messages/${target.id}`)).message.timestamp;
  const [posted] = await reports(1);
  t.equal(
    posted.content,
    `@_**${me.full_name}|${me.user_id}** reported a message sent by @_**${reported.full_name}|${reported.user_id}** at ${globalTime(sent)}.\n` +
      '```quote\n**Harassment**. a crime against food\n```\n\n' +
      `\`\`\` spoiler Original message at #**${place}>pineapple@${target.id}**\nI like pineapple on pizza\n\`\`\``,
    "Zulip's form",
  );

  for (const [role, api] of asRoles(s)) {
    const res = await api.post(`/messages/${target.id}/report`, { report_type: 'norms' });
    if (role === 'anonymous') isError(t, res, 401, 'UNAUTHORIZED', undefined, role);
    else t.equal(res.status, 200, `${role} reports it`);
  }
  const last = await reports(6);
  t.equal(last.filter((m: any) => m.content.includes('**Violates community norms**.') && m.content.includes(`@${target.id}**`)).length, 6, 'one report per role');

  // A direct message: the link is the conversation's; one's own message names the other participant.
  const dm = await maria.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([s.demo.member2.userId]), content: 'psst' });
  await maria.ok('POST', `/messages/${dm.id}/report`, { report_type: 'other', description: 'testing' });
  const [own] = await reports(1);
  t.match(own.content, new RegExp(`^@_\\*\\*${me.full_name}\\|${me.user_id}\\*\\* reported a message sent by @_\\*\\*${me.full_name}\\|${me.user_id}\\*\\* to @_\\*\\*${reported.full_name}\\|${reported.user_id}\\*\\* at <time:`));
  t.match(own.content, /``` spoiler \[Original message\]\([^)]*#narrow\/dm\/[^)]*\/near\/\d+\)\npsst\n```$/, 'the direct message behind a spoiler, with its link');
  t.match(own.content, '**Other reason**. testing');

  r = await maria.post(`/messages/${target.id}/report`, { report_type: 'other' });
  isError(t, r, 400, 'BAD_REQUEST', /^An explanation is required\.$/, 'other without a description');
  r = await maria.post(`/messages/${target.id}/report`, { report_type: 'rudeness' });
  isError(t, r, 400, 'BAD_REQUEST', /report_type/, 'a type not in server_report_message_types');
  r = await maria.post(`/messages/${target.id}/report`, {});
  isError(t, r, 400, 'REQUEST_VARIABLE_MISSING', /^Missing 'report_type' argument$/, 'no type');
  r = await maria.post(`/messages/${target.id}/report`, { report_type: 'spam', description: 'd'.repeat(1001) });
  isError(t, r, 400, 'BAD_REQUEST', /description/, 'a description over 1000 characters');
  const hidden = uniq('hidden');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: hidden }], invite_only: true });
  const secret = await owner.ok('POST', '/messages', { type: 'stream', to: hidden, topic: 't', content: 'not for members' });
  r = await maria.post(`/messages/${secret.id}/report`, { report_type: 'spam' });
  isError(t, r, 400, 'BAD_REQUEST', /^Invalid message\(s\)$/, 'a message one cannot read');
  r = await maria.post('/messages/999999999/report', { report_type: 'spam' });
  isError(t, r, 400, 'BAD_REQUEST', /^Invalid message\(s\)$/, 'a message that does not exist');
  t.equal((await reports(1))[0].id, own.id, 'no report for any refusal');
});

// ---- realm_bots -----------------------------------------------------------

t.test('system bots - realm_bots: an administrator sees every bot, others their own', async (t) => {
  const mine = await maria.ok('POST', '/bots', { full_name: 'Maria Helper', short_name: uniq('mh') });
  for (const [role, api] of asRoles(s)) {
    const r = await api.post('/register', { fetch_event_types: ['realm_bot'] });
    if (role === 'anonymous') {
      isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
      continue;
    }
    const ids = r.body.realm_bots.map((b: any) => b.user_id);
    const seesAll = role === 'owner' || role === 'admin';
    t.equal(ids.includes(mine.user_id), seesAll || role === 'member1', `${role}: Maria's bot ${seesAll || role === 'member1' ? 'listed' : 'not listed'}`);
    t.equal(ids.includes(s.demo.bot.userId), seesAll, `${role}: the demo bot (the owner's) ${seesAll ? 'listed' : 'not listed'}`);
    const system = Object.values(await systemBots()).map((b) => b.user_id);
    t.notOk(ids.some((id: number) => system.includes(id)), `${role}: system bots are no one's`);
  }
  const reg = await maria.ok('POST', '/register', { fetch_event_types: ['realm_bot', 'realm_user'], client_gravatar: false });
  // FL 474: only what realm_users lacks; name, type, owner, avatar and state are the bot's realm_users entry.
  t.same(reg.realm_bots.find((b: any) => b.user_id === mine.user_id), {
    user_id: mine.user_id,
    default_sending_stream: null,
    default_events_register_stream: null,
    default_all_public_streams: false,
    services: [],
  });
  t.match(reg.realm_users.find((u: any) => u.user_id === mine.user_id), { full_name: 'Maria Helper', bot_type: 1, is_active: true, bot_owner_id: s.demo.member1.userId, avatar_url: mine.avatar_url });
});

const BOT_FETCH = ['realm_bot', 'realm'];
const normalize = (snap: Snap) => ({
  realm_bots: [...snap.realm_bots].sort((a: any, b: any) => a.user_id - b.user_id),
  realm_welcome_message_custom_text: snap.realm_welcome_message_custom_text,
  realm_new_stream_announcements_stream_id: snap.realm_new_stream_announcements_stream_id,
});

t.test('system bots - snapshot + realm_bot and realm events == a fresh register (owner of the bot, administrator, bystander)', async (t) => {
  t.teardown(async () => {
    await owner.ok('PATCH', '/realm', { welcome_message_custom_text: '', new_stream_announcements_stream_id: -1 });
  });
  const holder = await newPerson(s, ROLE.member, 'Bot Holder');
  const mine = s.api.as(holder);
  const apis = [mine, admin, mateo];
  const qs = await Promise.all(apis.map((api) => register(api, { fetch_event_types: BOT_FETCH, event_types: BOT_FETCH })));
  const snaps = qs.map((q) => structuredClone(q.snapshot));
  const made = await mine.ok('POST', '/bots', { full_name: 'Snap Bot', short_name: uniq('snap'), bot_type: 3, payload_url: 'http://127.0.0.1:9/hook' });
  await mine.ok('PATCH', `/users/${made.user_id}`, { full_name: 'Snap Bot Renamed' });
  await admin.ok('PATCH', '/realm', { welcome_message_custom_text: 'Snapshot text' });
  await admin.ok('PATCH', '/realm', { new_stream_announcements_stream_id: 1 });
  const last = (e: Record<string, any>) => e.type === 'realm' && e.property === 'new_stream_announcements_stream_id';
  const seen = await Promise.all(qs.map((q, i) => catchUp(q, snaps[i]!, last)));
  for (const kind of ['realm_bot/add', 'realm/update']) t.ok(seen[0]!.has(kind) && seen[1]!.has(kind), `the bot's owner and an administrator get ${kind}`);
  t.notOk(seen[0]!.has('realm_bot/update') || seen[1]!.has('realm_bot/update'), 'no realm_bot update for a rename (FL 474)');
  t.notOk(seen[2]!.has('realm_bot/add'), 'a bystander hears nothing of the bot');
  for (const [i, api] of apis.entries()) {
    const fresh = await api.ok('POST', '/register', { fetch_event_types: BOT_FETCH });
    t.same(normalize(snaps[i]!), normalize(fresh), `snapshot + events == register for ${api.creds!.email}`);
  }
  // Deactivating the owner deactivates the bot; an administrator reactivates it.
  await owner.ok('DELETE', `/users/${holder.userId}`);
  await admin.ok('POST', `/users/${made.user_id}/reactivate`);
  await admin.ok('PATCH', '/realm', { welcome_message_custom_text: 'After reactivation' });
  const seenAdmin = await catchUp(qs[1]!, snaps[1]!, (e) => e.type === 'realm' && e.property === 'welcome_message_custom_text' && e.value === 'After reactivation');
  t.notOk(seenAdmin.has('realm_bot/update'), 'no realm_bot update for deactivation or reactivation (FL 474)');
  t.same(normalize(snaps[1]!), normalize(await admin.ok('POST', '/register', { fetch_event_types: BOT_FETCH })), 'after deactivation and reactivation');
  const reg = await admin.ok('POST', '/register', { fetch_event_types: ['realm_bot', 'realm_user'] });
  t.same(reg.realm_bots.find((b: any) => b.user_id === made.user_id), { user_id: made.user_id, default_sending_stream: null, default_events_register_stream: null, default_all_public_streams: false, services: [{ base_url: 'http://127.0.0.1:9/hook', interface: 1, token: reg.realm_bots.find((b: any) => b.user_id === made.user_id).services[0].token }] });
  t.match(reg.realm_users.find((u: any) => u.user_id === made.user_id), { full_name: 'Snap Bot Renamed', is_active: true, bot_type: 3, bot_owner_id: holder.userId });
});
