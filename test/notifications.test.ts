// Missed-message email over HTTP, read from a real SMTP server
// (`test/helpers/smtp.ts`): who is mailed about what, the batch, a message
// read before its batch leaves, muted senders, content left out, and the
// mail itself (HTML and text, the link, the footer). The server under test
// is started with PARLEY_SMTP_URL pointing at the test's SMTP server: an
// embedded one, or with PARLEY_TEST_OWN_CLUSTER=1 (test/run.sh's
// notify-cluster) a private cluster whose every process has it.
import t, { type Test } from 'tap';
import type { ParsedMail } from 'mailparser';
import { type Api, uniq } from './helpers/api.ts';
import { register, poll } from './helpers/events.ts';
import { newPerson, type Person } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';
import { mailKind, startSmtp } from './helpers/smtp.ts';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const s = await serverFor(t, { env: { PARLEY_SMTP_URL: smtp.url, PARLEY_SITE_URL: 'http://parley.test', PARLEY_JUST_CREATED_SECS: '2' } });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const textOf = (m: ParsedMail) => m.text ?? '';
/** Missed-message mails to `p` (a new person also gets the account email). */
const mailsTo = (p: Person) => smtp.to(p.email).filter((m) => mailKind(m) === 'missed');

/** A new member, idle (never polled), whose batches leave after `batchSecs`; they act through the last gateway (senders, through the first: in a cluster, another one). */
async function idlePerson(batchSecs = 1): Promise<{ p: Person; api: Api }> {
  const p = await newPerson(s);
  const api = s.api.at(s.urls.at(-1)!).as(p);
  await api.ok('PATCH', '/settings', { email_notifications_batching_period_seconds: batchSecs });
  return { p, api };
}

const dm = (from: Api, to: Person, content: string) => from.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([to.userId]), content });

/** A direct message to `p` from a new person arrives as a mail that names the sender and leaves its content out. */
async function mailsWithoutContent(t: Test, p: Person, label: string): Promise<void> {
  const sender = await newPerson(s);
  const secret = `${label} ${uniq('s')}`;
  await dm(s.api.as(sender), p, secret);
  await smtp.waitFor(() => mailsTo(p).length > 0);
  const [mail] = mailsTo(p);
  t.notMatch(textOf(mail!), secret, 'no content in the text');
  t.notMatch(String(mail!.html), secret, 'nor in the HTML');
  t.match(textOf(mail!), `${sender.fullName} sent a message`);
}

t.test('a direct message to an idle user is mailed once, after the batch period, with its content', async (t) => {
  const sender = await newPerson(s, undefined, 'Sender');
  const { p } = await idlePerson(2);
  const content = `hello ${uniq('dm')}`;
  const sentAt = Date.now();
  const { id } = await dm(s.api.as(sender), p, content);
  await sleep(1000);
  t.equal(mailsTo(p).length, 0, 'nothing before the batch period');
  await smtp.waitFor(() => mailsTo(p).length > 0);
  t.ok(Date.now() - sentAt >= 2000, 'mailed after the batch period');
  const [mail] = mailsTo(p);
  t.match(mail!.subject, `DMs with ${sender.fullName}`);
  t.match(textOf(mail!), content, 'the text has the content');
  t.match(textOf(mail!), `${sender.fullName}: `, 'and the sender');
  t.match(String(mail!.html), `<b>${sender.fullName}</b>`, 'the HTML has the sender');
  t.match(String(mail!.html), content, 'and the rendered content');
  t.match(textOf(mail!), `http://parley.test/#narrow/dm/`, 'a link to the conversation');
  t.match(textOf(mail!), `/near/${id}`, 'at the message');
  t.match(textOf(mail!), /no incoming email gateway/, 'the footer says replies are not delivered');
  t.notOk(mail!.replyTo, 'no reply address');
  t.match(String(mail!.messageId), /^<missed\./, 'a Message-ID derived from the batch');
  await sleep(2500);
  t.equal(mailsTo(p).length, 1, 'mailed once');
});

t.test('a user whose client is polling is not mailed', async (t) => {
  const sender = await newPerson(s);
  const { p, api } = await idlePerson(1);
  const q = await register(api, { event_types: ['message'] });
  const polling = poll(q, { timeoutMs: 8000 }).catch(() => []);
  await sleep(1500); // the queue actor reports activity on its next tick
  await dm(s.api.as(sender), p, `while active ${uniq('a')}`);
  await polling;
  await sleep(2500);
  t.equal(mailsTo(p).length, 0, 'no mail for an active user');
});

t.test('a message read before its batch leaves is not mailed; the unread one in the same batch is', async (t) => {
  const sender = s.api.as(await newPerson(s));
  const { p, api } = await idlePerson(3);
  const read = `read-first ${uniq('r')}`;
  const unread = `still-unread ${uniq('u')}`;
  const first = await dm(sender, p, read);
  await api.ok('POST', '/messages/flags', { messages: JSON.stringify([first.id]), op: 'add', flag: 'read' });
  await dm(sender, p, unread);
  await smtp.waitFor(() => mailsTo(p).length > 0);
  const [mail] = mailsTo(p);
  t.match(textOf(mail!), unread);
  t.notMatch(textOf(mail!), read, 'the read message is left out');

  // Everything read: no mail at all.
  const { p: p2, api: api2 } = await idlePerson(2);
  const only = await dm(sender, p2, `read ${uniq('x')}`);
  await api2.ok('POST', '/messages/flags', { messages: JSON.stringify([only.id]), op: 'add', flag: 'read' });
  await sleep(3500);
  t.equal(mailsTo(p2).length, 0, 'a batch with nothing unread sends nothing');
});

t.test('a mention in a channel is mailed, a plain channel message is not', async (t) => {
  const sender = await newPerson(s);
  const senderApi = s.api.as(sender);
  const { p } = await idlePerson(1);
  const name = uniq('notify');
  await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([sender.userId, p.userId]) });
  const plain = `plain ${uniq('p')}`;
  const mention = `@**${p.fullName}** look ${uniq('m')}`;
  await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'tea', content: plain });
  await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'tea', content: mention });
  await smtp.waitFor(() => mailsTo(p).length > 0);
  await sleep(1500);
  const mails = mailsTo(p);
  t.equal(mails.length, 1, 'one mail for the conversation');
  t.match(mails[0]!.subject, `#${name} > tea`);
  t.match(textOf(mails[0]!), 'look ');
  t.notMatch(textOf(mails[0]!), plain, 'the plain message is not mailed');
  t.match(textOf(mails[0]!), '#narrow/channel/');

  // A plain message alone mails nothing.
  const { p: p2 } = await idlePerson(1);
  await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([p2.userId]) });
  await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'tea', content: `plain again ${uniq('p')}` });
  await sleep(2500);
  t.equal(mailsTo(p2).length, 0, 'no mail for a plain channel message');
});

t.test('messages from a muted user are not mailed; the sender is never mailed', async (t) => {
  const muted = await newPerson(s);
  const other = await newPerson(s);
  const { p, api } = await idlePerson(1);
  await api.ok('POST', `/users/me/muted_users/${muted.userId}`);
  await dm(s.api.as(muted), p, `from muted ${uniq('mu')}`);
  const fine = `from other ${uniq('ok')}`;
  await dm(s.api.as(other), p, fine);
  await smtp.waitFor(() => mailsTo(p).length > 0);
  await sleep(1500);
  t.equal(mailsTo(p).length, 1);
  t.match(textOf(mailsTo(p)[0]!), fine);
  t.notMatch(textOf(mailsTo(p)[0]!), 'from muted');
  t.equal(mailsTo(muted).length + mailsTo(other).length, 0, 'no sender is mailed about their own message');
});

t.test('content is left out when the setting says so', async (t) => {
  const { p, api } = await idlePerson(1);
  await api.ok('PATCH', '/settings', { message_content_in_email_notifications: false });
  await mailsWithoutContent(t, p, 'secret');
});

t.test('enable_offline_email_notifications off: no mail for a direct message', async (t) => {
  const sender = await newPerson(s);
  const { p, api } = await idlePerson(1);
  await api.ok('PATCH', '/settings', { enable_offline_email_notifications: false });
  await dm(s.api.as(sender), p, `off ${uniq('o')}`);
  await sleep(2500);
  t.equal(mailsTo(p).length, 0);
});

t.test('the unsubscribe link works without logging in and turns missed-message email off', async (t) => {
  const sender = s.api.as(await newPerson(s));
  const { p, api } = await idlePerson(1);
  await dm(sender, p, `first ${uniq('f')}`);
  await smtp.waitFor(() => mailsTo(p).length > 0);
  const [mail] = mailsTo(p);
  const link = /http:\/\/parley\.test(\/accounts\/unsubscribe\/missed_messages\/\S+)/.exec(textOf(mail!))?.[1];
  t.ok(link, 'the mail has an unsubscribe link');
  t.match(String(mail!.html), link!, 'in the HTML too');
  t.match(JSON.stringify(mail!.headers.get('list') ?? ''), link!, 'and as List-Unsubscribe');

  // A token whose signature is not the organization's, or names another user, changes nothing.
  const other = await newPerson(s);
  const forged = link!.replace(/\/(\d+)\./, `/${other.userId}.`);
  for (const bad of [forged, link!.slice(0, -2) + 'xx', '/accounts/unsubscribe/missed_messages/nonsense']) {
    const r = await fetch(s.urls[0] + bad);
    t.equal(r.status, 404, `refused: ${bad.slice(-12)}`);
    t.match(await r.text(), 'Invalid or expired unsubscribe link');
  }

  const r = await fetch(s.urls[0] + link!); // no credentials
  t.equal(r.status, 200);
  t.match(await r.text(), `${p.email} will no longer get emails about missed messages`);
  const settings = await api.ok('POST', '/register', { fetch_event_types: JSON.stringify(['user_settings']) });
  t.equal(settings.user_settings.enable_offline_email_notifications, false, 'the setting is off');
  const otherSettings = await s.api.as(other).ok('POST', '/register', { fetch_event_types: JSON.stringify(['user_settings']) });
  t.equal(otherSettings.user_settings.enable_offline_email_notifications, true, "the forged link left the other user's setting alone");

  await dm(sender, p, `after unsubscribing ${uniq('a')}`);
  await sleep(2500);
  t.equal(mailsTo(p).length, 1, 'no further mail');
  t.equal((await fetch(s.urls[0] + link!)).status, 200, 'following the link again is harmless');
});

t.test('content is left out when the organization does not allow it in email', async (t) => {
  const owner = s.api.as(s.demo.owner);
  const member = s.api.as(s.demo.member1);
  const r = await member.call('PATCH', '/realm', { message_content_allowed_in_email_notifications: false });
  t.equal(r.status, 400, 'a member may not change it');
  const admin = s.api.as(s.demo.admin);
  const q = await register(owner, { event_types: JSON.stringify(['realm']) });
  await admin.ok('PATCH', '/realm', { message_content_allowed_in_email_notifications: false });
  t.teardown(() => admin.ok('PATCH', '/realm', { message_content_allowed_in_email_notifications: true }));
  const events = await poll(q);
  t.match(events, [{ type: 'realm', op: 'update', property: 'message_content_allowed_in_email_notifications', value: false }]);
  t.equal((await owner.ok('POST', '/register', { fetch_event_types: JSON.stringify(['realm']) })).realm_message_content_allowed_in_email_notifications, false);

  const { p } = await idlePerson(1);
  await mailsWithoutContent(t, p, 'org secret');
});

t.test("channel rules: followed topics, the channel's email setting, wildcard mentions; muted topics excluded", async (t) => {
  const sender = await newPerson(s);
  const senderApi = s.api.as(sender);
  const name = uniq('rules');
  const follower = await idlePerson(1);
  const channelMail = await idlePerson(1);
  const wildcardOff = await idlePerson(1);
  const mutedTopic = await idlePerson(1);
  const everyone = [sender, follower.p, channelMail.p, wildcardOff.p, mutedTopic.p];
  await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify(everyone.map((p) => p.userId)) });
  const streamId = (await senderApi.ok('GET', '/get_stream_id', { stream: name })).stream_id;
  await follower.api.ok('POST', '/user_topics', { stream_id: streamId, topic: 'followed', visibility_policy: 3 });
  await channelMail.api.ok('POST', '/users/me/subscriptions/properties', { subscription_data: JSON.stringify([{ stream_id: streamId, property: 'email_notifications', value: true }]) });
  await wildcardOff.api.ok('PATCH', '/settings', { wildcard_mentions_notify: false });
  await mutedTopic.api.ok('POST', '/user_topics', { stream_id: streamId, topic: 'followed', visibility_policy: 1 });
  await mutedTopic.api.ok('POST', '/users/me/subscriptions/properties', { subscription_data: JSON.stringify([{ stream_id: streamId, property: 'email_notifications', value: true }]) });

  const inFollowed = `in followed ${uniq('f')}`;
  await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'followed', content: inFollowed });
  const wildcard = `@**all** everyone ${uniq('w')}`;
  await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'other', content: wildcard });
  await smtp.waitFor(() => mailsTo(follower.p).length > 0 && mailsTo(channelMail.p).length >= 2);
  await sleep(1500);

  t.match(textOf(mailsTo(follower.p).find((m) => m.subject?.endsWith('> followed'))!), inFollowed, 'a followed topic is mailed');
  t.ok(mailsTo(follower.p).some((m) => textOf(m).includes('everyone ')), 'a channel wildcard mention is mailed (wildcard_mentions_notify on)');
  t.equal(mailsTo(channelMail.p).length, 2, "the channel's email_notifications mails every topic");
  t.notOk(mailsTo(wildcardOff.p).some((m) => textOf(m).includes('everyone ')), 'wildcard_mentions_notify off: no mail for @all');
  t.equal(mailsTo(wildcardOff.p).length, 0, 'nor for the rest');
  t.notOk(mailsTo(mutedTopic.p).some((m) => textOf(m).includes(inFollowed)), 'a muted topic is not mailed, even with channel email on');
  t.ok(mailsTo(mutedTopic.p).some((m) => textOf(m).includes('everyone ')), 'its other topics are');
});

/** A channel with these people subscribed; its ID. */
async function channelWith(senderApi: Api, people: Array<{ userId: number }>): Promise<{ name: string; streamId: number }> {
  const name = uniq('ch');
  await senderApi.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify(people.map((p) => p.userId)) });
  return { name, streamId: (await senderApi.ok('GET', '/get_stream_id', { stream: name })).stream_id };
}

t.test('a user-group mention is rendered, flags every member mentioned and mails them; a silent one does not', async (t) => {
  const sender = await newPerson(s);
  const senderApi = s.api.as(sender);
  const member = await idlePerson(1);
  const inner = await idlePerson(1);
  const outsider = await idlePerson(1);
  const { name } = await channelWith(senderApi, [sender, member.p, inner.p, outsider.p]);
  const sub = (await senderApi.ok('POST', '/user_groups/create', { name: uniq('subteam'), description: '', members: JSON.stringify([inner.p.userId]) })).group_id;
  const groupName = uniq('team');
  const groupId = (await senderApi.ok('POST', '/user_groups/create', { name: groupName, description: '', members: JSON.stringify([member.p.userId]), subgroups: JSON.stringify([sub]) })).group_id;

  const content = `@*${groupName}* please look ${uniq('g')}`;
  const { id } = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'groups', content });
  const seen = await member.api.ok('GET', `/messages/${id}`);
  t.match(seen.message.content, `<span class="user-group-mention" data-user-group-id="${groupId}">@${groupName}</span>`, 'rendered as a group mention');
  t.ok(seen.message.flags.includes('mentioned'), 'a direct member is mentioned');
  t.ok((await inner.api.ok('GET', `/messages/${id}`)).message.flags.includes('mentioned'), "a subgroup's member too");
  t.notOk((await outsider.api.ok('GET', `/messages/${id}`)).message.flags.includes('mentioned'), 'a non-member is not');
  await smtp.waitFor(() => mailsTo(member.p).length > 0 && mailsTo(inner.p).length > 0);
  t.match(textOf(mailsTo(member.p)[0]!), 'please look');

  const silent = `@_*${groupName}* quietly ${uniq('q')}`;
  // Another topic: being mentioned made the members follow 'groups' (automatically_follow_topics_where_mentioned).
  const quiet = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'quiet', content: silent });
  t.match((await member.api.ok('GET', `/messages/${quiet.id}`)).message.content, 'class="user-group-mention silent"');
  await sleep(2500);
  t.equal(mailsTo(member.p).length, 1, 'a silent group mention mails nobody');
  t.equal(mailsTo(outsider.p).length, 0, 'nor does a mention of a group one is not in');
});

t.test("a group's can_mention_group limits who may mention it (not silently)", async (t) => {
  const admin = s.api.as(s.demo.admin);
  const memberApi = s.api.as(s.demo.member1);
  const groupName = uniq('leads');
  await admin.ok('POST', '/user_groups/create', { name: groupName, description: '', members: JSON.stringify([s.demo.member2.userId]), can_mention_group: 6 }); // role:administrators
  const { name } = await channelWith(admin, [s.demo.admin, s.demo.member1, s.demo.member2]);
  const r = await memberApi.call('POST', '/messages', { type: 'stream', to: name, topic: 't', content: `@*${groupName}* hi` });
  t.equal(r.status, 400);
  t.match(r.body, { result: 'error', code: 'BAD_REQUEST', msg: `You are not allowed to mention user group '${groupName}'.` });
  await memberApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 't', content: `@_*${groupName}* hi` });
  await admin.ok('POST', '/messages', { type: 'stream', to: name, topic: 't', content: `@*${groupName}* hi` });
  t.pass('a silent mention, and a mention by an administrator, are allowed');
});

t.test('a topic wildcard mention mails the topic\'s participants only; followed-topic wildcard settings', async (t) => {
  const sender = await newPerson(s);
  const senderApi = s.api.as(sender);
  const participant = await idlePerson(1);
  const bystander = await idlePerson(1);
  const follower = await idlePerson(1);
  const neither = await idlePerson(1);
  const { name, streamId } = await channelWith(senderApi, [sender, participant.p, bystander.p, follower.p, neither.p]);
  // The follower turns ordinary wildcard mentions off but keeps them for followed topics; `neither` turns both off.
  await follower.api.ok('PATCH', '/settings', { wildcard_mentions_notify: false });
  await follower.api.ok('POST', '/user_topics', { stream_id: streamId, topic: 'plans', visibility_policy: 3 });
  await neither.api.ok('PATCH', '/settings', { wildcard_mentions_notify: false, enable_followed_topic_wildcard_mentions_notify: false, enable_followed_topic_email_notifications: false });
  await neither.api.ok('POST', '/user_topics', { stream_id: streamId, topic: 'plans', visibility_policy: 3 });
  for (const p of [participant, follower, neither]) await p.api.ok('POST', '/messages', { type: 'stream', to: name, topic: 'plans', content: `I am in ${uniq('in')}` });
  await sleep(2500); // the follower's mail about the others' messages goes first
  const before = new Map([participant, bystander, follower, neither].map((p) => [p.p.email, mailsTo(p.p).length]));

  const ping = `@**topic** meeting now ${uniq('tw')}`;
  const { id } = await senderApi.ok('POST', '/messages', { type: 'stream', to: name, topic: 'plans', content: ping });
  await smtp.waitFor(() => mailsTo(participant.p).length > before.get(participant.p.email)! && mailsTo(follower.p).length > before.get(follower.p.email)!);
  await sleep(1500);
  t.match(textOf(mailsTo(participant.p).at(-1)!), 'meeting now', 'a participant is mailed');
  t.match(textOf(mailsTo(follower.p).at(-1)!), 'meeting now', 'a follower with followed-topic wildcard notifications on is mailed');
  t.equal(mailsTo(bystander.p).length, before.get(bystander.p.email), 'a subscriber who never posted in the topic is not');
  t.equal(mailsTo(neither.p).length, before.get(neither.p.email), 'nor a participant with both wildcard settings off');
  t.ok((await participant.api.ok('GET', `/messages/${id}`)).message.flags.includes('topic_wildcard_mentioned'));
});

t.test('a login through POST /fetch_api_key mails the new-login email, except just after sign-up or with enable_login_emails off', async (t) => {
  const p = await newPerson(s);
  const firefox = 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0';
  const login = () => s.api.ok('POST', '/fetch_api_key', { username: p.email, password: p.password }, { headers: { 'user-agent': firefox } });
  const loginMails = () => smtp.to(p.email).filter((m) => mailKind(m) === 'login');
  await login();
  await sleep(1000);
  t.equal(loginMails().length, 0, 'no mail for an account created within the threshold');
  await sleep(1500);
  await login();
  await smtp.waitFor(() => loginMails().length > 0);
  const [mail] = loginMails();
  t.equal(mail!.subject, 'New login from Firefox on Linux');
  t.match(textOf(mail!), `Your account ${p.email}`);
  t.match(textOf(mail!), /IP address: \S+/);
  t.match(textOf(mail!), 'http://parley.test');

  await s.api.as(p).ok('PATCH', '/settings', { enable_login_emails: false });
  await login();
  await sleep(1500);
  t.equal(loginMails().length, 1, 'enable_login_emails off: no mail');
  const wrong = await s.api.call('POST', '/fetch_api_key', { username: p.email, password: 'not it' });
  t.equal(wrong.status, 401, 'a failed login mails nothing either');
});
