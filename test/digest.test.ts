// The weekly digest email over HTTP and the operator's CLI, read from a real
// SMTP server (`test/helpers/smtp.ts`): the organization's settings, who
// gets one and who does not, what it says (hot conversations in Zulip's
// order, new channels, new users, HTML and text), its unsubscribe link, one
// digest per user across a kill -9 of the server, and the timer re-armed for
// the organization's next digest weekday. Embedded mode (the server is
// started with PARLEY_SMTP_URL; `parley org digest <org> --now` runs the
// digest through the realm's own timer, due at once).
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import t from 'tap';
import type { ParsedMail } from 'mailparser';
import { DEMO_REALM_ID } from '../lib/demo.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { T } from '../storage/tables.ts';
import { type Api, uniq } from './helpers/api.ts';
import { poll, register } from './helpers/events.ts';
import { newPerson, type Person, ROLE } from './helpers/people.ts';
import { startServer, type TestServer } from './helpers/server.ts';
import { mailKind, startSmtp } from './helpers/smtp.ts';

const ROOT = resolve(import.meta.dirname, '..');
const smtp = await startSmtp();
t.teardown(() => smtp.close());
// Digest mail leaves 1.5 s after the commit that composed it: the crash case stops the server in between.
const env = { PARLEY_SMTP_URL: smtp.url, PARLEY_SITE_URL: 'http://parley.test', PARLEY_FOLLOW_UP_DELAY_MS: '1500' };
let s: TestServer = await startServer({ env });
const dataDir = s.dataDir!;
t.teardown(async () => {
  await s.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const digests = () => smtp.messages.filter((m) => mailKind(m) === 'digest');
const digestsTo = (p: { email: string }) => digests().filter((m) => smtp.to(p.email).includes(m));
const textOf = (m: ParsedMail) => m.text ?? '';

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), ...args], { env: { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(dataDir, 'data') } }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}
const digestNow = () => cli(['org', 'digest', '.', '--now']);

const owner = () => s.api.as(s.demo.owner);
const as = (p: Person): Api => s.api.as(p);
const realmSetting = async (api: Api, key: string) => (await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['realm']) }))[key];

/** A member subscribed to `channel` only (the demo's default channels left), never polling: away. */
async function awayIn(channel: string, role: number = ROLE.member): Promise<Person> {
  const p = await newPerson(s, role, 'Away');
  const subs = (await as(p).ok('GET', '/users/me/subscriptions')).subscriptions as Array<{ name: string }>;
  if (subs.length) await as(p).ok('DELETE', '/users/me/subscriptions', { subscriptions: JSON.stringify(subs.map((x) => x.name)) });
  if (channel) await owner().ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: channel }]), principals: JSON.stringify([p.userId]) });
  return p;
}

const send = (api: Api, channel: string, topic: string, content: string) => api.ok('POST', '/messages', { type: 'stream', to: channel, topic, content });

t.test('settings: the organization turns digests on (administrators only), with its event; the server says it sends them', async (t) => {
  const q = await register(s.api.as(s.demo.member1), { event_types: JSON.stringify(['realm']) });
  t.equal(q.snapshot.realm_digest_emails_enabled, false, 'off by default');
  t.equal(q.snapshot.realm_digest_weekday, 1);
  t.equal(q.snapshot.settings_send_digest_emails, true, 'the server sends digests');
  const member = await s.api.as(s.demo.member1).call('PATCH', '/realm', { digest_emails_enabled: true });
  t.equal(member.status, 400);
  t.equal(member.body.code, 'UNAUTHORIZED_PRINCIPAL');
  const bad = await s.api.as(s.demo.admin).call('PATCH', '/realm', { digest_weekday: 7 });
  t.equal(bad.status, 400);
  t.match(bad.body.msg, 'Invalid digest_weekday');
  t.equal((await digestNow()).code !== 0, true, 'the CLI refuses while the organization has digests off');
  t.match((await digestNow()).stderr, 'Digest emails are off');
  await s.api.as(s.demo.admin).ok('PATCH', '/realm', { digest_emails_enabled: true, digest_weekday: 3 });
  const events = await poll(q);
  t.same(
    events.filter((e) => e.type === 'realm').map((e) => [e.property, e.value]),
    [
      ['digest_emails_enabled', true],
      ['digest_weekday', 3],
    ],
  );
  t.equal(await realmSetting(s.api.as(s.demo.member1), 'realm_digest_emails_enabled'), true);
});

const channel = `digest-${uniq('c').slice(-6)}`;
let away: Person;
let off: Person;
let active: Person;
let guest: Person;
/** Members for the later runs: subscribed before the messages (a digest leaves out channels joined within the period), digests off until their run. */
let hidden: Person;
let crashA: Person;
let crashB: Person;
const senders: Person[] = [];

t.test('a run: who gets a digest and what it says', async (t) => {
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: channel }]) });
  away = await awayIn(channel);
  off = await awayIn(channel);
  active = await awayIn(channel);
  hidden = await awayIn(channel);
  crashA = await awayIn(channel);
  crashB = await awayIn(channel);
  for (const p of [off, hidden, crashA, crashB]) await as(p).ok('PATCH', '/settings', { enable_digest_emails: false });
  for (let i = 0; i < 3; i++) {
    senders.push(await newPerson(s, ROLE.member, `Sender${i}`));
    await owner().ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: channel }]), principals: JSON.stringify([senders[i]!.userId]) });
  }
  const [a, b, c] = senders.map(as) as [Api, Api, Api];
  // Five conversations: two with the most senders, then the longest two; the fifth is left out.
  await send(a, channel, 'three voices', 'first of **three**');
  await send(b, channel, 'three voices', 'second of three');
  await send(c, channel, 'three voices', 'third of three');
  await send(a, channel, 'two voices', 'one of two');
  await send(b, channel, 'two voices', 'two of two');
  for (let i = 0; i < 6; i++) await send(c, channel, 'long monologue', `monologue ${i}`);
  for (let i = 0; i < 4; i++) await send(a, channel, 'short monologue', `short ${i}`);
  await send(b, channel, 'quiet corner', 'a lone remark');

  const q = await register(as(active), { event_types: JSON.stringify(['message']) });
  await poll(q, { dontBlock: true });
  // A guest subscribed to a channel without messages: nothing to tell (guests are told of no public channels).
  const empty = `empty-${uniq('e').slice(-6)}`;
  await owner().ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: empty }]), invite_only: true });
  guest = await awayIn(empty, ROLE.guest);
  await sleep(1500); // the queue actor reports the poll on its next tick

  const r = await digestNow();
  t.equal(r.code, 0, r.stderr);
  await smtp.waitFor(() => digestsTo(away).length > 0);
  await sleep(2500);
  t.equal(digestsTo(away).length, 1, 'an away member gets one');
  t.equal(digestsTo(off).length, 0, 'not with enable_digest_emails off');
  t.equal(digestsTo(active).length, 0, 'not when active within the period');
  t.equal(digestsTo(guest).length, 0, 'not with nothing to tell');
  t.equal(digestsTo(s.demo.bot).length, 0, 'never a bot');

  const mail = digestsTo(away)[0]!;
  const text = textOf(mail);
  t.equal(mail.subject, `Parley digest for ${await realmSetting(owner(), 'realm_name')}`);
  t.match(String(mail.messageId), /^<digest\.\d+\.\d+\.\d+@parley>$/, 'a Message-ID of the run');
  const order = ['three voices', 'two voices', 'long monologue', 'short monologue'].map((topic) => text.indexOf(`#${channel} > ${topic}`));
  t.ok(order.every((i) => i >= 0), 'the four hot conversations');
  t.same([...order].sort((x, y) => x - y), order, "in Zulip's order: most senders first, then the longest");
  t.notMatch(text, 'quiet corner', 'the fifth is left out');
  t.match(text, `${senders[0]!.fullName}: first of **three**`, 'the first messages, with their senders');
  t.match(text, `${senders[1]!.fullName}: second of three`);
  t.notMatch(text, 'third of three', 'two of them');
  t.match(text, `+ 1 more message by `, 'and how many more');
  t.match(text, '+ 4 more messages by ');
  t.match(String(mail.html), '<strong>three</strong>', 'the HTML has the rendered content');
  t.match(String(mail.html), `http://parley.test/#narrow/channel/`, 'links to the conversations');
  t.match(text, '** New channels **');
  t.match(text, channel, 'the channel made in the period');
  t.notMatch(text.split('** New channels **')[1] ?? '', empty, 'not a private one');
  t.match(text, '** New users **');
  t.match(text, senders[0]!.fullName.split(' ')[0]!, 'users who joined in the period');
  t.match(text, /Unsubscribe from digest emails:\s+http:\/\/parley\.test\/accounts\/unsubscribe\/digest\/\S+/);
});

t.test('content left out where the organization says so', async (t) => {
  await s.api.as(s.demo.owner).ok('PATCH', '/realm', { message_content_allowed_in_email_notifications: false });
  t.teardown(() => s.api.as(s.demo.owner).ok('PATCH', '/realm', { message_content_allowed_in_email_notifications: true }));
  const p = hidden;
  await as(p).ok('PATCH', '/settings', { enable_digest_emails: true });
  t.equal((await digestNow()).code, 0);
  await smtp.waitFor(() => digestsTo(p).length > 0);
  const text = textOf(digestsTo(p)[0]!);
  t.match(text, /You have \d+ new messages, and there are \d+ new channels in /);
  t.match(text, 'your organization hides message content');
  t.notMatch(text, 'first of');
  t.notMatch(String(digestsTo(p)[0]!.html), 'first of');
  t.equal(digestsTo(away).length, 1, 'the run does not mail who got one within 12 hours');
});

t.test('the unsubscribe link works without logging in and turns the digest off', async (t) => {
  const mail = digestsTo(away)[0]!;
  const link = /http:\/\/parley\.test(\/accounts\/unsubscribe\/digest\/\S+)/.exec(textOf(mail))?.[1];
  t.ok(link);
  t.match(String(mail.html), link!, 'in the HTML too');
  t.match(JSON.stringify(mail.headers.get('list') ?? ''), link!, 'and as List-Unsubscribe');
  const missedLink = link!.replace('/digest/', '/missed_messages/');
  t.equal((await fetch(s.urls[0] + missedLink)).status, 404, "a digest token is not a missed-message email's");
  const r = await fetch(s.urls[0] + link!);
  t.equal(r.status, 200);
  t.match(await r.text(), `${away.email} will no longer get digest emails`);
  const settings = await as(away).ok('POST', '/register', { fetch_event_types: JSON.stringify(['user_settings']) });
  t.equal(settings.user_settings.enable_digest_emails, false, 'the setting is off');
  t.equal(settings.user_settings.enable_offline_email_notifications, true, 'missed-message email left alone');
});

t.test('one digest per user across a kill -9 of the server, and the timer re-armed for the next digest weekday', async (t) => {
  const [a, b] = [crashA, crashB];
  for (const p of [a, b]) await as(p).ok('PATCH', '/settings', { enable_digest_emails: true });
  t.equal((await digestNow()).code, 0);
  await sleep(700); // the run's chunk is composed and recorded; its mail waits for the follow-up delay
  await s.stop('SIGKILL');
  s = await s.restart();
  await smtp.waitFor(() => digestsTo(a).length > 0 && digestsTo(b).length > 0, 20_000);
  t.equal((await digestNow()).code, 0, 'run again after the restart');
  await sleep(2500); // its mail would leave 1.5 s after its commit
  t.equal(digestsTo(a).length, 1, 'one digest');
  t.equal(digestsTo(b).length, 1, 'one digest');
  t.equal(new Set(digests().map((m) => m.messageId)).size, digests().length, 'no mail repeated');

  await s.stop();
  const store = new EmbeddedStore(join(dataDir, 'data'));
  const next = await T.digestRuns.at(DEMO_REALM_ID).get(store);
  await store.close();
  s = await s.restart();
  t.ok(next, 'a digest timer is armed');
  const at = new Date(next!.at);
  t.ok(next!.at > Date.now(), 'in the future');
  t.ok(next!.at - Date.now() <= 7 * 86_400_000, 'within a week');
  t.equal((at.getUTCDay() + 6) % 7, 3, "on the organization's digest weekday (3: Thursday)");
  t.equal(at.getUTCHours(), 18);
});

t.test('turning digests off clears the timer', async (t) => {
  await s.api.as(s.demo.admin).ok('PATCH', '/realm', { digest_emails_enabled: false });
  t.equal(await realmSetting(owner(), 'realm_digest_emails_enabled'), false);
  t.not((await digestNow()).code, 0, 'and the CLI refuses');
  await s.stop();
  const store = new EmbeddedStore(join(dataDir, 'data'));
  t.equal(await T.digestRuns.at(DEMO_REALM_ID).get(store), undefined, 'no digest timer');
  await store.close(); // the last case: the server stays stopped
});
