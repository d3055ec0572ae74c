// The emails a new human user gets, read from a real SMTP server
// (`test/helpers/smtp.ts`): the account email at once for POST /users, an
// invitation's sign-up and the organization's creator (the creation page),
// none for a bot; while the organization's send_welcome_emails is on, the
// onboarding emails on Zulip's schedule (a day shortened to
// PARLEY_ONBOARDING_DAY_SECS): about topics for everyone, the guide of the
// organization's type (the communities guide to administrators only), and
// the creator's about setting the organization up; the topics email left out
// when the address has another account on the server (another organization,
// found through the server-wide address index); their one-click
// unsubscribe link; who may change the setting. And the new-login email's
// rules beyond notifications.test.ts: token sign-in mails it too, Zulip's
// device names, its one-click unsubscribe link. Embedded mode: the server
// under test mails through PARLEY_SMTP_URL to the test's SMTP server.
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { SignJWT } from 'jose';
import type { ParsedMail } from 'mailparser';
import t, { type Test } from 'tap';
import { DEMO_REALM_ID } from '../lib/demo.ts';
import { Api, uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { asEveryone, newPerson } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';
import { mailKind, startSmtp } from './helpers/smtp.ts';

const ROOT = resolve(import.meta.dirname, '..');
const smtp = await startSmtp();
t.teardown(() => smtp.close());
/** A day of the onboarding schedule, in seconds. */
const DAY = 1.5;
const JWT_SECRET = 'a-long-shared-secret-for-hs256-tokens!';
const s = await serverFor(t, {
  env: {
    PARLEY_SMTP_URL: smtp.url,
    PARLEY_SITE_URL: 'http://parley.test',
    PARLEY_ONBOARDING_DAY_SECS: String(DAY),
    PARLEY_JUST_CREATED_SECS: '1',
    PARLEY_JWT_AUTH_KEYS: JSON.stringify({ [DEMO_REALM_ID]: { key: JWT_SECRET, algorithms: ['HS256'] } }),
  },
});
const owner = s.api.as(s.demo.owner);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mails = (email: string, kind: string) => smtp.to(email).filter((m) => mailKind(m) === kind);
/** The onboarding emails to `email` that are `which` (topics, guide, team), from their Message-IDs. */
const onboarding = (email: string, which: 'topics' | 'guide' | 'team') =>
  mails(email, 'onboarding').filter((m) => (which === 'topics' ? /^<onboarding\.\d+\.\d+@/.test(m.messageId ?? '') : (m.messageId ?? '').includes(`.${which}@`)));
const textOf = (m: ParsedMail | undefined) => m?.text ?? '';
/** The List-Unsubscribe URL of a mail (mailparser reads List-* headers into `list`). */
const listUnsubscribe = (m: ParsedMail | undefined) => (m?.headers.get('list') as { unsubscribe?: { url?: string } } | undefined)?.unsubscribe?.url ?? '';
const setWelcome = (on: boolean) => owner.ok('PATCH', '/realm', { send_welcome_emails: on });
const setOrgType = (type: number) => owner.ok('PATCH', '/realm', { org_type: type });

/**
 * Zulip's onboarding schedule, as this test reads it from
 * get_onboarding_email_schedule: days after a sign-up on each ISO weekday
 * (new users' time zone is unset: UTC), each an hour short.
 */
function expectedDays(signup: Date): { topics: number; guide: number; team: number } {
  const weekday = ((signup.getUTCDay() + 6) % 7) + 1;
  const byDay: Record<number, [number, number, number]> = { 1: [2, 4, 8], 2: [2, 6, 8], 3: [2, 6, 8], 4: [4, 6, 8], 5: [4, 6, 10], 6: [2, 4, 6], 7: [2, 4, 8] };
  const [topics, guide, team] = byDay[weekday]!;
  return { topics: topics - 1 / 24, guide: guide - 1 / 24, team: team - 1 / 24 };
}

/** Waits for the mail `pick` finds and checks it arrived `days` of the schedule after `[from, to]` (the creation request's span). */
async function arrivesAfter(t: Test, what: string, pick: () => ParsedMail[], days: number, from: number, to: number) {
  await smtp.waitFor(() => pick().length > 0, (days * DAY + 10) * 1000);
  const at = Date.now();
  t.ok(at - from >= days * DAY * 1000 - 150, `${what}: not before its day (${((at - from) / 1000).toFixed(2)} s, due ${(days * DAY).toFixed(2)} s)`);
  t.ok(at - to <= days * DAY * 1000 + 2500, `${what}: on its day, not a later one`);
}

/** A one-time organization-creation link, from the operator's CLI (`parley org link`). */
function creationLink(): Promise<string> {
  return new Promise((done, fail) => {
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), '--json', 'org', 'link', '--days', '1'], { env: { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(s.dataDir!, 'data') } }, (err, stdout, stderr) =>
      err ? fail(new Error(`parley org link: ${stderr}`)) : done(new URL(JSON.parse(stdout).url).pathname),
    );
  });
}

t.test('signup email - POST /users: the account email at once, then the topics email on its day, and no other', async (t) => {
  await setWelcome(true);
  const from = Date.now();
  const p = await newPerson(s, undefined, 'Signup Reader');
  const to = Date.now();
  const days = expectedDays(new Date(from));
  await smtp.waitFor(() => mails(p.email, 'account').length > 0);
  const [account] = mails(p.email, 'account');
  t.match(account!.subject, 'your account is ready');
  t.match(textOf(account), p.email, 'names the account');
  t.match(textOf(account), 'http://parley.test', "and the organization's URL");
  t.notMatch(textOf(account), 'As an administrator', 'a member gets the member variant');
  t.notMatch(textOf(account), 'Congratulations', 'and not the creator’s');
  t.equal(mails(p.email, 'onboarding').length, 0, 'no onboarding email before its day');
  await arrivesAfter(t, 'the topics email', () => onboarding(p.email, 'topics'), days.topics, from, to);
  const [topics] = onboarding(p.email, 'topics');
  t.match(textOf(topics), 'topic');
  t.match(textOf(topics), /http:\/\/parley\.test\/accounts\/unsubscribe\/welcome\/\S+/, 'with an unsubscribe link');
  t.match(listUnsubscribe(topics), /^http:\/\/parley\.test\/accounts\/unsubscribe\/welcome\/\S+$/, 'also as List-Unsubscribe');
  // The organization's type is unspecified (no guide) and this user created nothing (no team email).
  await sleep((days.team - days.topics) * DAY * 1000 + 1000);
  t.equal(mails(p.email, 'account').length, 1, 'one account email');
  t.equal(mails(p.email, 'onboarding').length, 1, 'one onboarding email: the topics one');
});

t.test("signup email - the guide email follows the organization's type: its guide on its day, the communities guide to administrators only", async (t) => {
  await setWelcome(true);
  t.teardown(() => setOrgType(0));
  await setOrgType(10); // business
  const from = Date.now();
  const member = await newPerson(s, undefined, 'Guide Reader');
  const to = Date.now();
  await setOrgType(90); // community
  const communityMember = await newPerson(s, undefined, 'Community Member');
  const adminLink = (await owner.ok('POST', '/invites/multiuse', { invite_as: 200 })).invite_link as string;
  const adminEmail = `${uniq('cadmin')}@invitee.example`;
  const body = new URLSearchParams({ full_name: 'Community Admin', password: 'a good long password', email: adminEmail });
  t.equal((await fetch(`${s.urls[0]}${new URL(adminLink).pathname}`, { method: 'POST', body })).status, 200, 'an administrator signed up');
  await setOrgType(0);

  const days = expectedDays(new Date(from));
  await arrivesAfter(t, "the business guide", () => onboarding(member.email, 'guide'), days.guide, from, to);
  const [guide] = onboarding(member.email, 'guide');
  t.match(guide!.subject, 'for businesses');
  t.match(textOf(guide), 'https://zulip.com/for/business/', 'links the guide of the type at sign-up (the type has changed since)');
  t.match(textOf(guide), /accounts\/unsubscribe\/welcome\/\S+/, 'with the unsubscribe link');
  t.equal(onboarding(member.email, 'topics').length, 1, 'the topics email came first');
  await smtp.waitFor(() => onboarding(adminEmail, 'guide').length > 0);
  t.match(textOf(onboarding(adminEmail, 'guide')[0]), 'https://zulip.com/for/communities/', "an administrator gets the communities guide");
  await sleep(1500);
  t.equal(onboarding(communityMember.email, 'guide').length, 0, 'a member gets no communities guide');
  t.equal(onboarding(communityMember.email, 'topics').length, 1, 'but the topics email');
  t.equal(onboarding(member.email, 'guide').length, 1, 'one guide email');
});

t.test("signup email - the organization's creator (the creation page, with its organization type): the creator's account email, the topics, guide and set-up emails on their days", async (t) => {
  await setWelcome(true);
  const path = await creationLink();
  const subdomain = uniq('org').toLowerCase().replace(/[^a-z0-9]/g, '').slice(0, 20);
  const email = `${uniq('creator')}@creator.example`;
  const fields = { name: 'Creators Inc', subdomain, full_name: 'Org Creator', email, password: 'a good long password', password2: 'a good long password' };
  const refused = await fetch(`${s.urls[0]}${path}`, { method: 'POST', body: new URLSearchParams({ ...fields, org_type: '5' }) });
  t.equal(refused.status, 400, 'an organization type Zulip has not is refused');
  t.match(await refused.text(), 'Invalid org_type');
  const form = new URLSearchParams({ ...fields, org_type: '90' }); // a community: its guide goes to administrators, as the creator is
  const from = Date.now();
  const res = await fetch(`${s.urls[0]}${path}`, { method: 'POST', body: form });
  const to = Date.now();
  t.equal(res.status, 200, 'organization created');
  t.match(await res.text(), 'is ready');
  const days = expectedDays(new Date(from));

  await smtp.waitFor(() => mails(email, 'account').length > 0);
  const [account] = mails(email, 'account');
  t.match(account!.subject, 'your organization is ready');
  t.match(textOf(account), 'Congratulations, you have created a new organization: Creators Inc.', "the creator's variant");
  t.match(textOf(account), `http://${subdomain}.parley.test`, "the new organization's URL");
  t.match(textOf(account), 'As an administrator', 'with the administrator lines: the creator is its owner');
  await arrivesAfter(t, 'the topics email', () => onboarding(email, 'topics'), days.topics, from, to);
  await arrivesAfter(t, "the organization type's guide", () => onboarding(email, 'guide'), days.guide, from, to);
  t.match(textOf(onboarding(email, 'guide')[0]), 'https://zulip.com/for/communities/', 'the communities guide, of the type chosen on the page');
  await arrivesAfter(t, 'the set-up email', () => onboarding(email, 'team'), days.team, from, to);
  const [team] = onboarding(email, 'team');
  t.match(team!.subject, 'Setting up Creators Inc for your team');
  t.match(textOf(team), `http://${subdomain}.parley.test/#invite`, 'inviting the team');
  t.match(textOf(team), new RegExp(`http://${subdomain}\\.parley\\.test/accounts/unsubscribe/welcome/\\S+`), 'with the unsubscribe link of its organization');
  await sleep(1000);
  t.equal(mails(email, 'account').length, 1, 'one account email (the creation is mailed once)');
  t.equal(mails(email, 'onboarding').length, 3, 'topics, guide and set-up, once each');

  // The creator's key works at the new organization: the account the mails describe is real.
  const atOrg = (method: string, p: string, params: Record<string, string>) =>
    new Promise<{ status: number; body: string }>((done, fail) => {
      const u = new URL(s.urls[0]!);
      const data = new URLSearchParams(params).toString();
      import('node:http').then(({ request }) => {
        const req = request({ host: u.hostname, port: u.port, method, path: p, headers: { host: `${subdomain}.parley.test`, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(data)) } }, (r) => {
          let text = '';
          r.on('data', (d: Buffer) => (text += d.toString()));
          r.on('end', () => done({ status: r.statusCode!, body: text }));
        });
        req.on('error', fail);
        req.end(data);
      }, fail);
    });
  const login = await atOrg('POST', '/api/v1/fetch_api_key', { username: email, password: 'a good long password' });
  t.equal(login.status, 200, 'the creator logs in at the new organization');
  const key = JSON.parse(login.body).api_key as string;
  const reg = await new Promise<string>((done, fail) => {
    const u = new URL(s.urls[0]!);
    import('node:http').then(({ request }) => {
      const req = request({ host: u.hostname, port: u.port, method: 'POST', path: '/api/v1/register', headers: { host: `${subdomain}.parley.test`, authorization: `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}`, 'content-length': '0' } }, (r) => {
        let text = '';
        r.on('data', (d: Buffer) => (text += d.toString()));
        r.on('end', () => done(text));
      });
      req.on('error', fail);
      req.end();
    }, fail);
  });
  t.equal(JSON.parse(reg).realm_org_type, 90, 'the organization has the type chosen on the page');
});

t.test("signup email - a demo organization's creator (parley org create --demo) gets the demo variant; an adopted realm's owner nothing", async (t) => {
  const email = `${uniq('democreator')}@creator.example`;
  const subdomain = uniq('demo').toLowerCase().replace(/[^a-z0-9]/g, '').slice(0, 20);
  await new Promise<void>((done, fail) =>
    execFile(
      process.execPath,
      [join(ROOT, 'bin/parley.mjs'), '--json', 'org', 'create', '--name', 'Demo Trial', '--subdomain', subdomain, '--owner-email', email, '--owner-name', 'Demo Creator', '--demo', '--zuliprc', join(s.dataDir!, 'demo-creator.zuliprc')],
      { env: { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(s.dataDir!, 'data') } },
      (err, _stdout, stderr) => (err ? fail(new Error(`parley org create: ${stderr}`)) : done()),
    ),
  );
  await smtp.waitFor(() => mails(email, 'account').length > 0);
  const text = textOf(mails(email, 'account')[0]);
  t.match(text, 'Congratulations, you have created a new demo organization: Demo Trial.');
  t.match(text, /deleted on .+ \(30 days after its creation\) unless you make it permanent/);
  // The demo organization of this server was registered by adopting its realm (realmId): its owner was never mailed.
  t.equal(smtp.to(s.demo.owner.email).filter((m) => mailKind(m) === 'account').length, 0, 'no account email to the seeded demo owner');
});

/** `parley <args>` against the server under test (embedded, its data directory); its JSON output. */
function parley(...args: string[]): Promise<unknown> {
  return new Promise((done, fail) =>
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), '--json', ...args], { env: { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(s.dataDir!, 'data') } }, (err, stdout, stderr) =>
      err ? fail(new Error(`parley ${args.join(' ')}: ${stderr}`)) : done(stdout.trim() ? JSON.parse(stdout) : null),
    ),
  );
}

t.test("signup email - an address with another account on the server (active, deactivated or an address changed to it) gets no topics email in a second organization; a first-time address, an address changed away from and a deleted user's address do", async (t) => {
  await setWelcome(true);
  // Accounts in the demo organization: active, deactivated, moved to a new address, deleted for good.
  const active = await newPerson(s, undefined, 'Twice Signed');
  const deactivated = await newPerson(s, undefined, 'Gone Quiet');
  await owner.ok('DELETE', `/users/${deactivated.userId}`);
  const moved = await newPerson(s, undefined, 'Moved Away');
  const movedTo = `${uniq('moved')}@parley.example`;
  await owner.ok('PATCH', `/users/${moved.userId}`, { new_email: movedTo });
  const deleted = await newPerson(s, undefined, 'Deleted Once');
  await parley('users', '--org', '.', 'delete', String(deleted.userId), '--preserve-messages');
  const fresh = `${uniq('fresh')}@creator.example`;
  await sleep(500); // the index's follow-ups of those changes run at once after their commits

  // Each address creates an organization (its creator: topics, then the set-up email last).
  const creators = { active: active.email.toUpperCase(), deactivated: deactivated.email, movedTo, movedFrom: moved.email, deleted: deleted.email, fresh };
  const from = Date.now();
  for (const [which, email] of Object.entries(creators)) {
    const subdomain = uniq(which).toLowerCase().replace(/[^a-z0-9]/g, '').slice(0, 20);
    await parley('org', 'create', '--name', `Second ${which}`, '--subdomain', subdomain, '--owner-email', email, '--owner-name', `Creator ${which}`, '--zuliprc', join(s.dataDir!, `${subdomain}.zuliprc`));
  }
  const days = expectedDays(new Date(from));
  for (const email of Object.values(creators)) await smtp.waitFor(() => onboarding(email, 'team').length > 0, (days.team * DAY + 30) * 1000);
  await sleep(1000);
  // The demo organization's own users may get theirs meanwhile (at their new address, for the one moved): counted apart.
  const inDemo = (m: ParsedMail) => (m.messageId ?? '').startsWith(`<onboarding.${DEMO_REALM_ID}.`);
  const topics = Object.fromEntries(Object.entries(creators).map(([which, email]) => [which, onboarding(email, 'topics').filter((m) => !inDemo(m)).length]));
  t.same(topics, { active: 0, deactivated: 0, movedTo: 0, movedFrom: 1, deleted: 1, fresh: 1 }, 'the topics email only where the address had no other account (case aside)');
  for (const [which, email] of Object.entries(creators)) {
    t.equal(mails(email, 'account').filter((m) => (m.subject ?? '').includes('your organization is ready')).length, 1, `${which}: the creator's account email all the same`);
  }
  t.equal(onboarding(active.email, 'topics').filter(inDemo).length, 1, 'the first account of the address got its topics email');
});

t.test('signup email - an invitation sign-up gets the account email; a bot gets none', async (t) => {
  await setWelcome(true);
  const link = (await owner.ok('POST', '/invites/multiuse', {})).invite_link as string;
  const email = `${uniq('joiner')}@invitee.example`;
  const body = new URLSearchParams({ full_name: 'Link Joiner', password: 'a good long password', email });
  const res = await fetch(`${s.urls[0]}${new URL(link).pathname}`, { method: 'POST', body });
  t.equal(res.status, 200, 'signed up');
  await smtp.waitFor(() => mails(email, 'account').length > 0);
  t.match(textOf(mails(email, 'account')[0]), email);

  const bot = await owner.ok('POST', '/bots', { full_name: 'Quiet Bot', short_name: uniq('quiet'), bot_type: 1 });
  const adminLink = (await owner.ok('POST', '/invites/multiuse', { invite_as: 200 })).invite_link as string;
  const adminEmail = `${uniq('admin')}@invitee.example`;
  const adminBody = new URLSearchParams({ full_name: 'Invited Admin', password: 'a good long password', email: adminEmail });
  t.equal((await fetch(`${s.urls[0]}${new URL(adminLink).pathname}`, { method: 'POST', body: adminBody })).status, 200);
  await smtp.waitFor(() => mails(adminEmail, 'account').length > 0);
  t.match(textOf(mails(adminEmail, 'account')[0]), 'As an administrator', "an administrator's variant");
  const botEmail = (await owner.ok('GET', `/users/${bot.user_id}`)).user.email as string;
  await sleep(1000);
  t.equal(smtp.to(botEmail).length, 0, 'no mail to a bot');
});

t.test('signup email - send_welcome_emails off: the account email only', async (t) => {
  await setWelcome(false);
  await setOrgType(10);
  t.teardown(async () => {
    await setWelcome(true);
    await setOrgType(0);
  });
  const p = await newPerson(s, undefined, 'No Onboarding');
  await smtp.waitFor(() => mails(p.email, 'account').length > 0);
  t.notMatch(textOf(mails(p.email, 'account')[0]), 'Unsubscribe', 'no onboarding emails announced');
  await sleep((expectedDays(new Date()).guide * DAY + 2) * 1000);
  t.equal(mails(p.email, 'onboarding').length, 0, 'neither the topics nor the guide email');
});

t.test('signup email - the unsubscribe link works without logging in and cancels every pending onboarding email', async (t) => {
  await setWelcome(true);
  await setOrgType(10);
  const created = Date.now();
  const p = await newPerson(s, undefined, 'Unsub Reader');
  const other = await newPerson(s, undefined, 'Unsub Other');
  await setOrgType(0);
  await smtp.waitFor(() => mails(p.email, 'account').length > 0);
  const link = /http:\/\/parley\.test(\/accounts\/unsubscribe\/welcome\/\S+)/.exec(textOf(mails(p.email, 'account')[0]))![1]!;
  const forged = link.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
  t.equal((await fetch(`${s.urls[0]}${forged}`)).status, 404, 'a forged token is refused');
  const res = await fetch(`${s.urls[0]}${link}`);
  t.comment(`unsubscribed ${Date.now() - created} ms after the sign-up`);
  t.equal(res.status, 200, 'no login needed');
  t.match(await res.text(), `${p.email} will no longer get onboarding emails`);
  await smtp.waitFor(() => onboarding(other.email, 'guide').length > 0, (expectedDays(new Date(created)).guide * DAY + 10) * 1000);
  await sleep(1500);
  t.equal(onboarding(other.email, 'topics').length, 1, 'the other user got the topics email');
  t.equal(mails(p.email, 'onboarding').length, 0, 'the unsubscribed user gets neither the topics nor the guide email');
  t.equal((await fetch(`${s.urls[0]}${link}`)).status, 200, 'following it again is harmless');
});

t.test('signup email - deactivation clears the pending onboarding emails: none after a reactivation', async (t) => {
  await setWelcome(true);
  const created = Date.now();
  const p = await newPerson(s, undefined, 'Deactivated Reader');
  const other = await newPerson(s, undefined, 'Staying Reader');
  await owner.ok('DELETE', `/users/${p.userId}`);
  await owner.ok('POST', `/users/${p.userId}/reactivate`);
  await smtp.waitFor(() => onboarding(other.email, 'topics').length > 0, (expectedDays(new Date(created)).topics * DAY + 10) * 1000);
  await sleep(1500);
  t.equal(mails(p.email, 'onboarding').length, 0, 'the reactivated user gets no onboarding email');
});

t.test('signup email - PATCH /realm send_welcome_emails: administrators only, with a realm event', async (t) => {
  const q = await register(owner, { event_types: ['realm'] });
  const outcomes = await asEveryone(s, 'PATCH', '/realm', { send_welcome_emails: false }, true);
  const refused = '400 UNAUTHORIZED_PRINCIPAL Must be an organization administrator';
  t.same(outcomes, { owner: 'ok', admin: 'ok', moderator: refused, member: refused, guest: refused, bot: refused, anonymous: '401 UNAUTHORIZED Missing authorization header for basic auth' });
  t.match(await waitFor(q, (e) => e.type === 'realm' && e.property === 'send_welcome_emails'), { op: 'update', property: 'send_welcome_emails', value: false });
  t.equal((await owner.ok('POST', '/register', {})).realm_send_welcome_emails, false, 'register shows it');
  await setWelcome(true);
  t.equal((await owner.ok('POST', '/register', {})).realm_send_welcome_emails, true);
  const wrong = await owner.call('PATCH', '/realm', { send_welcome_emails: 'maybe' });
  t.equal(wrong.status, 400, 'a non-boolean is refused');
});

const jwtFor = (email: string) => new SignJWT({ email }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode(JWT_SECRET));

t.test("login email - token sign-in (POST /jwt/fetch_api_key) mails it too, naming the device as Zulip does, in the user's time zone", async (t) => {
  const p = await newPerson(s, undefined, 'Token Login');
  await s.api.as(p).ok('PATCH', '/settings', { timezone: 'Asia/Kolkata', twenty_four_hour_time: true });
  await sleep(1200); // past PARLEY_JUST_CREATED_SECS
  const zulipIos = 'ZulipMobile/27.192 (iOS 14.4)';
  const anon = new Api(s.api.base);
  await anon.ok('POST', '/jwt/fetch_api_key', { token: await jwtFor(p.email) }, { headers: { 'user-agent': zulipIos } });
  await smtp.waitFor(() => mails(p.email, 'login').length > 0);
  const [mail] = mails(p.email, 'login');
  t.equal(mail!.subject, 'New login from Zulip on iOS', "Zulip's app on iOS, by Zulip's rules");
  t.match(textOf(mail), /Date and time: \w+day, \w+ \d\d, \d{4} at \d\d:\d\d GMT\+5:30/, "the time in the user's zone and 24-hour clock");

  const opera = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36 OPR/106.0.0.0';
  await anon.ok('POST', '/fetch_api_key', { username: p.email, password: p.password }, { headers: { 'user-agent': opera } });
  await smtp.waitFor(() => mails(p.email, 'login').length > 1);
  t.equal(mails(p.email, 'login')[1]!.subject, 'New login from Opera on Windows', 'Opera, though it names Chrome too');
});

t.test('login email - its one-click unsubscribe link turns enable_login_emails off without logging in', async (t) => {
  const p = await newPerson(s, undefined, 'Login Unsub');
  await sleep(1200);
  const q = await register(s.api.as(p), { event_types: ['user_settings'] });
  const anon = new Api(s.api.base);
  await anon.ok('POST', '/fetch_api_key', { username: p.email, password: p.password });
  await smtp.waitFor(() => mails(p.email, 'login').length > 0);
  const [mail] = mails(p.email, 'login');
  const link = /http:\/\/parley\.test(\/accounts\/unsubscribe\/login\/\S+?)\.?$/m.exec(textOf(mail))?.[1];
  t.ok(link, 'the mail has the link');
  t.equal(listUnsubscribe(mail), `http://parley.test${link}`, 'also as List-Unsubscribe');
  t.equal((await fetch(`${s.urls[0]}${link!.replace('/login/', '/welcome/')}`)).status, 404, 'a token of another kind is refused');
  const res = await fetch(`${s.urls[0]}${link}`);
  t.equal(res.status, 200);
  t.match(await res.text(), `${p.email} will no longer get new-login emails`);
  t.match(await waitFor(q, (e) => e.type === 'user_settings' && e.property === 'enable_login_emails'), { op: 'update', property: 'enable_login_emails', value: false });
  t.equal((await s.api.as(p).ok('POST', '/register', {})).user_settings.enable_login_emails, false, 'register shows it');
  await anon.ok('POST', '/fetch_api_key', { username: p.email, password: p.password });
  await sleep(1500);
  t.equal(mails(p.email, 'login').length, 1, 'no mail for the next login');
});
