// Invitations over HTTP: who may invite whom, the rules on channels, groups
// and roles, INVITATION_FAILED, listing, revoking and resending, the emails
// in the outbox, and an invitation accepted end to end in a real browser
// (Chromium from Debian's packages, driven by playwright-core).
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { mailedLink, outboxOf } from './helpers/outbox.ts';
import { runPython } from './helpers/python.ts';
import { asRoles, isError } from './helpers/roles.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);
const guest = s.api.as(s.demo.guest);
const CHROMIUM = '/usr/bin/chromium';

/** Where the server writes mail. */
const outbox = outboxOf(s);
const email = (tag: string) => `${uniq(tag)}@invitee.example`;
const mailedJoinLink = (to: string) => mailedLink(outbox, to, '/join/');

async function channel(api: Api, params = {}): Promise<{ id: number; name: string }> {
  const name = uniq('inv');
  await api.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], ...params });
  return { id: (await api.ok('GET', '/get_stream_id', { stream: name })).stream_id, name };
}

t.test('invites - who may send email invitations, and for which roles', async (t) => {
  for (const [role, api] of asRoles(s)) {
    const r = await api.post('/invites', { invitee_emails: email(role), stream_ids: [] });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'guest') isError(t, r, 400, 'BAD_REQUEST', /Insufficient permission/, role);
    else t.equal(r.status, 200, `${role} invites members`);
  }
  const cases: Array<[Api, number, boolean]> = [
    [maria, 300, false],
    [maria, 200, false],
    [maria, 600, true],
    [s.api.as(s.demo.moderator), 300, true],
    [s.api.as(s.demo.moderator), 200, false],
    [admin, 300, true],
    [admin, 200, true],
    [admin, 100, false],
    [owner, 100, true],
  ];
  for (const [api, as, ok] of cases) {
    const r = await api.post('/invites', { invitee_emails: email('role'), stream_ids: [], invite_as: as });
    if (ok) t.equal(r.status, 200, `${api.creds!.email} invites as ${as}`);
    else isError(t, r, 400, 'BAD_REQUEST', /Insufficient permission/, `${api.creds!.email} as ${as}`);
  }
  isError(t, await owner.post('/invites', { invitee_emails: email('x'), stream_ids: [], invite_as: 500 }), 400, 'BAD_REQUEST', /invite_as/);
  // Who may invite is the organization's can_invite_users_group.
  await owner.ok('PATCH', '/realm', { can_invite_users_group: { new: 6 } });
  isError(t, await maria.post('/invites', { invitee_emails: email('m'), stream_ids: [] }), 400, 'BAD_REQUEST', /Insufficient permission/);
  await owner.ok('PATCH', '/realm', { can_invite_users_group: { new: 3 } });
});

t.test('invites - addresses, channels, groups and INVITATION_FAILED', async (t) => {
  const pub = await channel(owner);
  const secret = await channel(owner, { invite_only: true });
  const a = email('a');
  const b = email('b');
  await maria.ok('POST', '/invites', { invitee_emails: `${a},\n ${b}\n`, stream_ids: [pub.id, 1] });
  const mine = (await maria.ok('GET', '/invites')).invites.filter((i: any) => [a, b].includes(i.email));
  t.equal(mine.length, 2, 'addresses split by commas and newlines');
  t.match(mine[0], { invited_by_user_id: s.demo.member1.userId, invited_as: 400, is_multiuse: false, notify_referrer_on_join: true });
  t.ok(mine[0].expiry_date - mine[0].invited > 14399 * 60, 'ten days by default');
  const partial = await maria.post('/invites', { invitee_emails: `${s.demo.member2.email}, ${email('c')}`, stream_ids: [] });
  isError(t, partial, 400, 'INVITATION_FAILED', /did send invitations to everyone else/);
  t.same(partial.body.errors, [[s.demo.member2.email, 'Already has an account.', false]]);
  t.same([partial.body.sent_invitations, partial.body.daily_limit_reached, partial.body.license_limit_reached], [true, false, false]);
  const none = await maria.post('/invites', { invitee_emails: s.demo.member2.email, stream_ids: [] });
  isError(t, none, 400, 'INVITATION_FAILED', /weren't able to invite anyone/);
  t.equal(none.body.sent_invitations, false);
  const bad = await maria.post('/invites', { invitee_emails: `not-an-address, ${email('d')}`, stream_ids: [] });
  isError(t, bad, 400, 'INVITATION_FAILED', /did not validate/);
  t.same(bad.body.errors, [['not-an-address', 'Invalid address.', false]]);
  const cases: Array<[Record<string, any>, RegExp, string?]> = [
    [{ invitee_emails: ' , \n', stream_ids: [] }, /at least one email address/],
    [{ invitee_emails: email('e'), stream_ids: [987654] }, /Invalid channel ID 987654. No invites were sent./],
    [{ invitee_emails: email('e'), stream_ids: [secret.id] }, /Invalid channel ID/],
    [{ invitee_emails: email('e'), stream_ids: [], group_ids: [4242] }, /Invalid user group ID/],
    [{ invitee_emails: email('e'), stream_ids: [], group_ids: [6] }, /Insufficient permission to add users to group/],
    [{ invitee_emails: email('e'), stream_ids: [], invite_expires_in_minutes: 0 }, /invite_expires_in_minutes/],
    [{ invitee_emails: email('e'), stream_ids: [], welcome_message_custom_text: 'w'.repeat(8001) }, /too long/],
    [{ invitee_emails: email('e') }, /Missing 'stream_ids'/, 'REQUEST_VARIABLE_MISSING'],
  ];
  for (const [params, msg, code = 'BAD_REQUEST'] of cases) isError(t, await maria.post('/invites', params), 400, code, msg, JSON.stringify(params).slice(0, 60));
  // Without permission to subscribe others, only default channels may be given.
  await owner.ok('PATCH', '/realm', { can_add_subscribers_group: { new: 6 } });
  isError(t, await maria.post('/invites', { invitee_emails: email('f'), stream_ids: [pub.id] }), 400, 'BAD_REQUEST', /permission to subscribe other users/);
  t.equal((await maria.post('/invites', { invitee_emails: email('f'), stream_ids: [1] })).status, 200, 'a default channel is fine');
  await owner.ok('PATCH', '/realm', { can_add_subscribers_group: { new: 3 } });
  const never = email('never');
  const sent = await admin.ok('POST', '/invites', { invitee_emails: never, stream_ids: [], invite_expires_in_minutes: null, welcome_message_custom_text: 'Welcome!', notify_referrer_on_join: false });
  t.equal(sent.ignored_parameters_unsupported, undefined, 'Notification Bot and Welcome Bot act on both (test/system-bots.test.ts)');
  t.equal((await admin.ok('GET', '/invites')).invites.find((i: any) => i.email === never).expiry_date, null, 'null never expires');
});

t.test('invites - the email is in the outbox with a working link', { skip: outbox ? false : 'no outbox directory known for this server' }, async (t) => {
  const to = email('mail');
  await admin.ok('POST', '/invites', { invitee_emails: to, stream_ids: [] });
  const path = mailedJoinLink(to);
  t.match(path, /^\/join\//);
  const page = await fetch(`${s.urls[0]}${path}`);
  t.equal(page.status, 200);
  t.match(await page.text(), to);
  const missing = await fetch(`${s.urls[0]}/join/not-a-token`);
  t.equal(missing.status, 404);
  t.match(await missing.text(), /invalid or has expired/);
});

t.test('invites - listing, revoking and resending by role', async (t) => {
  const mine = email('mine');
  await maria.ok('POST', '/invites', { invitee_emails: mine, stream_ids: [] });
  const id = (await maria.ok('GET', '/invites')).invites.find((i: any) => i.email === mine).id;
  t.notOk((await s.api.as(s.demo.member2).ok('GET', '/invites')).invites.some((i: any) => i.id === id), 'members see only their own invitations');
  t.ok((await admin.ok('GET', '/invites')).invites.some((i: any) => i.id === id), 'administrators see every invitation');
  isError(t, await guest.get('/invites'), 400, 'BAD_REQUEST');
  isError(t, await s.api.as(s.demo.member2).delete(`/invites/${id}`), 400, 'UNAUTHORIZED_PRINCIPAL', /administrator/);
  t.equal((await maria.post(`/invites/${id}/resend`)).status, 200, 'the inviter resends');
  t.equal((await admin.post(`/invites/${id}/resend`)).status, 200, 'an administrator resends');
  const q = await register(admin, { event_types: ['invites_changed'] });
  await maria.ok('DELETE', `/invites/${id}`);
  await waitFor(q, (e) => e.type === 'invites_changed');
  isError(t, await maria.delete(`/invites/${id}`), 400, 'BAD_REQUEST', /No such invitation/);
  isError(t, await maria.post(`/invites/${id}/resend`), 400, 'BAD_REQUEST', /No such invitation/);
  t.notOk((await admin.ok('GET', '/invites')).invites.some((i: any) => i.id === id));
});

t.test('invites - invite_expires_in_minutes null: invitations and links that never expire (FL 117)', async (t) => {
  const to = email('forever');
  await admin.ok('POST', '/invites', { invitee_emails: to, stream_ids: [], invite_expires_in_minutes: null });
  const link = (await admin.ok('POST', '/invites/multiuse', { invite_expires_in_minutes: null })).invite_link;
  const dated = email('dated');
  await admin.ok('POST', '/invites', { invitee_emails: dated, stream_ids: [], invite_expires_in_minutes: 30 });
  const list = (await admin.ok('GET', '/invites')).invites;
  const byMail = list.find((i: any) => i.email === to);
  const byLink = list.find((i: any) => i.link_url === link);
  const timed = list.find((i: any) => i.email === dated);
  t.equal(byMail.expiry_date, null, 'an email invitation without expiry');
  t.equal(byLink.expiry_date, null, 'a reusable link without expiry');
  t.ok(Math.abs(timed.expiry_date - (timed.invited + 30 * 60)) <= 1, 'one with minutes expires then');
  t.equal((await fetch(`${s.urls[0]}${new URL(link).pathname}`)).status, 200, 'the link works');
  isError(t, await admin.post('/invites', { invitee_emails: email('zero'), stream_ids: [], invite_expires_in_minutes: 0 }), 400, 'BAD_REQUEST', /invite_expires_in_minutes/);
  await admin.ok('DELETE', `/invites/${byMail.id}`);
  await admin.ok('DELETE', `/invites/${timed.id}`);
  await admin.ok('DELETE', `/invites/multiuse/${byLink.id}`);
});

t.test('invites - reusable links by role; revoking them', async (t) => {
  for (const [role, api] of asRoles(s)) {
    const r = await api.post('/invites/multiuse', { invite_expires_in_minutes: 60 });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.match(r.body.invite_link, /\/join\/[A-Za-z0-9_-]+$/, `${role} creates a link`);
    else isError(t, r, 400, 'BAD_REQUEST', /Insufficient permission/, role);
  }
  // FL 209: members may create them when the organization allows it.
  await owner.ok('PATCH', '/realm', { create_multiuse_invite_group: { new: 3 } });
  const link = (await maria.ok('POST', '/invites/multiuse', {})).invite_link;
  await owner.ok('PATCH', '/realm', { create_multiuse_invite_group: { new: 6 } });
  const listed = (await maria.ok('GET', '/invites')).invites.find((i: any) => i.link_url === link);
  t.match(listed, { is_multiuse: true, invited_as: 400 });
  isError(t, await maria.delete(`/invites/${listed.id}`), 400, 'BAD_REQUEST', /No such invitation/, 'a link is revoked through /invites/multiuse');
  await maria.ok('DELETE', `/invites/multiuse/${listed.id}`);
  isError(t, await maria.delete(`/invites/multiuse/${listed.id}`), 400, 'BAD_REQUEST', /Invalid invitation ID/);
  const gone = await fetch(`${s.urls[0]}${new URL(link).pathname}`);
  t.equal(gone.status, 404, 'a revoked link no longer works');
  isError(t, await admin.post('/invites/multiuse', { invite_as: 100 }), 400, 'BAD_REQUEST', /Insufficient permission/);
});

t.test('invites - accepted end to end in a browser: role, channels, default channels, zuliprc', { skip: existsSync(CHROMIUM) ? (outbox ? false : 'no outbox directory known for this server') : 'chromium is not installed' }, async (t) => {
  const ch = await channel(owner);
  const to = email('browser');
  const watcher = await register(maria, { event_types: ['realm_user', 'subscription'] });
  await admin.ok('POST', '/invites', { invitee_emails: to, stream_ids: [ch.id], invite_as: 300, include_realm_default_subscriptions: true });
  const path = mailedJoinLink(to)!;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  await page.goto(`${s.urls[0]}${path}`);
  t.equal(await page.textContent('#email'), to, 'the page shows the invited address');
  await page.fill('#full_name', 'Browser Person');
  await page.fill('#password', 'short');
  await page.evaluate(() => document.querySelector('#password')!.removeAttribute('minlength'));
  await page.click('#submit');
  t.match(await page.textContent('#error'), /too weak/, 'errors show on the form');
  await page.fill('#password', 'a good long password');
  await page.click('#submit');
  const rc = (await page.textContent('#zuliprc'))!;
  const creds = { email: /^email=(.*)$/m.exec(rc)![1]!, apiKey: /^key=(.*)$/m.exec(rc)![1]! };
  t.equal(creds.email, to);
  const me = s.api.as(creds);
  const reg = await me.ok('POST', '/register', { fetch_event_types: ['realm_user', 'subscription'] });
  t.equal(reg.role, 300, 'the invited role');
  t.equal(reg.full_name, 'Browser Person');
  const subs = reg.subscriptions.map((x: any) => x.stream_id);
  t.ok(subs.includes(ch.id) && subs.includes(1), 'the invited channel and the default channels');
  const added = await waitFor(watcher, (e) => e.type === 'realm_user' && e.person.email === to);
  t.equal(added.person.role, 300);
  await waitFor(watcher, (e) => e.type === 'subscription' && e.op === 'peer_add' && e.user_ids.includes(reg.user_id));
  // The email invitation is used up; the page says so.
  await page.goto(`${s.urls[0]}${path}`);
  t.match(await page.textContent('#error'), /invalid or has expired/);
  // A reusable link asks for the address, and works more than once.
  const link = (await admin.ok('POST', '/invites/multiuse', { stream_ids: [ch.id] })).invite_link;
  for (const who of ['first', 'second']) {
    const addr = email(who);
    await page.goto(`${s.urls[0]}${new URL(link).pathname}`);
    await page.fill('#email', addr);
    await page.fill('#full_name', `Link ${who}`);
    await page.fill('#password', 'another long password');
    await page.click('#submit');
    t.match(await page.textContent('#zuliprc'), `email=${addr}`, `${who} joins through the link`);
  }
  await page.goto(`${s.urls[0]}${new URL(link).pathname}`);
  await page.fill('#email', to);
  await page.fill('#full_name', 'Again');
  await page.fill('#password', 'another long password');
  await page.click('#submit');
  t.match(await page.textContent('#error'), /already in use/);
});

t.test('python client - invitations', async (t) => {
  const to = email('py');
  const out = runPython(s.urls[0]!, s.demo.admin, `
# zulip 0.9.1 has no invitation methods: call_endpoint is how its users reach them.
sent = client.call_endpoint("invites", method="POST", request={"invitee_emails": ${JSON.stringify(to)}, "stream_ids": json.dumps([1])})
listed = client.call_endpoint("invites", method="GET")
link = client.call_endpoint("invites/multiuse", method="POST", request={"invite_expires_in_minutes": 30})
print(json.dumps({"sent": sent["result"], "listed": [i["email"] for i in listed["invites"] if i.get("email") == ${JSON.stringify(to)}], "link": link["invite_link"]}))`) as Record<string, any>;
  t.equal(out.sent, 'success');
  t.same(out.listed, [to]);
  t.match(out.link, /\/join\//);
});
