// The emails a new human user gets, read from a real SMTP server
// (`test/helpers/smtp.ts`): the account email at once for POST /users and an
// invitation's sign-up (none for a bot), the onboarding email after the
// schedule (shortened by PARLEY_ONBOARDING_SECS) while the organization's
// send_welcome_emails is on, its one-click unsubscribe link, and who may
// change the setting. Embedded mode: the server under test mails through
// PARLEY_SMTP_URL to the test's SMTP server.
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { asEveryone, newPerson } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';
import { mailKind, startSmtp } from './helpers/smtp.ts';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const ONBOARDING_SECS = 3;
const s = await serverFor(t, { env: { PARLEY_SMTP_URL: smtp.url, PARLEY_SITE_URL: 'http://parley.test', PARLEY_ONBOARDING_SECS: String(ONBOARDING_SECS) } });
const owner = s.api.as(s.demo.owner);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mails = (email: string, kind: string) => smtp.to(email).filter((m) => mailKind(m) === kind);
const setWelcome = (on: boolean) => owner.ok('PATCH', '/realm', { send_welcome_emails: on });

t.test('signup email - POST /users: the account email at once, then the onboarding email after the schedule', async (t) => {
  await setWelcome(true);
  const p = await newPerson(s, undefined, 'Signup Reader');
  const createdAt = Date.now();
  await smtp.waitFor(() => mails(p.email, 'account').length > 0);
  const [account] = mails(p.email, 'account');
  t.match(account!.subject, 'your account is ready');
  t.match(account!.text ?? '', p.email, 'names the account');
  t.match(account!.text ?? '', 'http://parley.test', "and the organization's URL");
  t.notMatch(account!.text ?? '', 'As an administrator', 'a member gets the member variant');
  t.equal(mails(p.email, 'onboarding').length, 0, 'no onboarding email before the schedule');
  await smtp.waitFor(() => mails(p.email, 'onboarding').length > 0);
  t.ok(Date.now() - createdAt >= (ONBOARDING_SECS - 1) * 1000, 'the onboarding email comes after the schedule');
  const [onboarding] = mails(p.email, 'onboarding');
  t.match(onboarding!.text ?? '', 'topic');
  t.match(onboarding!.text ?? '', /http:\/\/parley\.test\/accounts\/unsubscribe\/welcome\/\S+/, 'with an unsubscribe link');
  await sleep(1000);
  t.equal(mails(p.email, 'account').length, 1, 'one account email');
  t.equal(mails(p.email, 'onboarding').length, 1, 'one onboarding email');
});

t.test('signup email - an invitation sign-up gets the account email; a bot gets none', async (t) => {
  await setWelcome(true);
  const link = (await owner.ok('POST', '/invites/multiuse', {})).invite_link as string;
  const email = `${uniq('joiner')}@invitee.example`;
  const body = new URLSearchParams({ full_name: 'Link Joiner', password: 'a good long password', email });
  const res = await fetch(`${s.urls[0]}${new URL(link).pathname}`, { method: 'POST', body });
  t.equal(res.status, 200, 'signed up');
  await smtp.waitFor(() => mails(email, 'account').length > 0);
  t.match(mails(email, 'account')[0]!.text ?? '', email);

  const bot = await owner.ok('POST', '/bots', { full_name: 'Quiet Bot', short_name: uniq('quiet'), bot_type: 1 });
  const adminLink = (await owner.ok('POST', '/invites/multiuse', { invite_as: 200 })).invite_link as string;
  const adminEmail = `${uniq('admin')}@invitee.example`;
  const adminBody = new URLSearchParams({ full_name: 'Invited Admin', password: 'a good long password', email: adminEmail });
  t.equal((await fetch(`${s.urls[0]}${new URL(adminLink).pathname}`, { method: 'POST', body: adminBody })).status, 200);
  await smtp.waitFor(() => mails(adminEmail, 'account').length > 0);
  t.match(mails(adminEmail, 'account')[0]!.text ?? '', 'As an administrator', "an administrator's variant");
  const botEmail = (await owner.ok('GET', `/users/${bot.user_id}`)).user.email as string;
  await sleep(1000);
  t.equal(smtp.to(botEmail).length, 0, 'no mail to a bot');
});

t.test('signup email - send_welcome_emails off: the account email only', async (t) => {
  await setWelcome(false);
  t.teardown(() => setWelcome(true));
  const p = await newPerson(s, undefined, 'No Onboarding');
  await smtp.waitFor(() => mails(p.email, 'account').length > 0);
  await sleep((ONBOARDING_SECS + 2) * 1000);
  t.equal(mails(p.email, 'onboarding').length, 0, 'no onboarding email');
});

t.test('signup email - the unsubscribe link works without logging in and cancels the pending onboarding email', async (t) => {
  await setWelcome(true);
  const created = Date.now();
  const p = await newPerson(s, undefined, 'Unsub Reader');
  const other = await newPerson(s, undefined, 'Unsub Other');
  await smtp.waitFor(() => mails(p.email, 'account').length > 0);
  const link = /http:\/\/parley\.test(\/accounts\/unsubscribe\/welcome\/\S+)/.exec(mails(p.email, 'account')[0]!.text ?? '')![1]!;
  const forged = link.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
  t.equal((await fetch(`${s.urls[0]}${forged}`)).status, 404, 'a forged token is refused');
  const res = await fetch(`${s.urls[0]}${link}`);
  t.comment(`unsubscribed ${Date.now() - created} ms after the sign-up`);
  t.equal(res.status, 200, 'no login needed');
  t.match(await res.text(), `${p.email} will no longer get onboarding emails`);
  await smtp.waitFor(() => mails(other.email, 'onboarding').length > 0);
  await sleep(1500);
  t.equal(mails(p.email, 'onboarding').length, 0, 'the unsubscribed user gets no onboarding email');
  t.equal((await fetch(`${s.urls[0]}${link}`)).status, 200, 'following it again is harmless');
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
