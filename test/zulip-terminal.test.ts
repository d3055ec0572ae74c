// zulip-terminal, unchanged from PyPI, against Parley: logging in with a
// zuliprc and with email and password, reading (opening at the first unread
// message and marking it read), sending, receiving live, starring, reacting,
// editing; coming back after its event queue expired while it was asleep.
// Driven in tmux.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { newPerson, type Person } from './helpers/people.ts';
import { serverFor, type TestServer } from './helpers/server.ts';
import { Terminal } from './helpers/terminal.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
t.teardown(() => Terminal.stopAll());

/** A person in a channel of their own with the owner, and one message waiting for them. */
async function personWithUnread(server: TestServer): Promise<{ person: Person; channel: string; first: { id: number; content: string } }> {
  // Made while the organization has no default channels: in a shared cluster's realm their traffic from
  // the other tests would fill the client's message list and push this test's messages off the screen.
  const o = server.api.as(server.demo.owner);
  const defaults = ((await o.ok('GET', '/default_streams')).default_streams as Array<{ stream_id: number }>).map((c) => c.stream_id);
  for (const stream_id of defaults) await o.ok('DELETE', '/default_streams', { stream_id });
  let person: Person;
  try {
    person = await newPerson(server, 400, uniq('Terminal User'));
  } finally {
    for (const stream_id of defaults) await o.ok('POST', '/default_streams', { stream_id });
  }
  // Welcome Bot greeted the new user; they have read that, so the channel's message below is the first unread.
  await server.api.as(person).ok('POST', '/mark_all_as_read');
  const channel = uniq('zt');
  // Without Notification Bot's DM about the subscription (FL 397), which would be the first unread.
  await o.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], send_new_subscription_messages: false, principals: [person.userId] });
  const content = uniq('first message');
  const { id } = await o.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'start', content });
  return { person, channel, first: { id, content } };
}

/** Presses `c` until the compose box is open (its empty channel field, marked ✗, shows), at most three times. */
async function openCompose(term: Terminal): Promise<void> {
  const open = (screen: string) => /│✗\s+▶/.test(screen);
  for (let tries = 0; tries < 3; tries++) {
    term.keys('c');
    const until = Date.now() + 5000;
    while (Date.now() < until) {
      if (open(term.screen())) return;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  await term.waitUntil('the compose box open', open, 1000);
}

/** The message `id` as `api` sees it (flags, reactions, content). */
async function messageAs(api: Api, id: number): Promise<any> {
  const r = await api.ok('GET', '/messages', { anchor: id, num_before: 0, num_after: 0, apply_markdown: false });
  return r.messages.find((m: any) => m.id === id);
}

/** Polls until `check` holds for message `id`, up to 30 s; `nudge` runs before each look (a key press). */
async function until(api: Api, id: number, check: (m: any) => boolean, nudge?: () => void): Promise<any> {
  const end = Date.now() + 30_000;
  let m: any;
  while (Date.now() < end) {
    nudge?.();
    m = await messageAs(api, id);
    if (m && check(m)) return m;
    await new Promise((r) => setTimeout(r, 500));
  }
  return m;
}

t.test('zulip-terminal - a day of work: read, send, receive live, star, react, edit', async (t) => {
  const { person, channel, first } = await personWithUnread(s);
  const me = s.api.as(person);
  let term = Terminal.start(`work-${process.pid}`, s.urls[0]!, person);
  t.teardown(() => term.stop());

  // One capture may catch the screen half redrawn: wait until it shows all three.
  const started = (sc: string) => sc.includes(first.content) && sc.includes(person.fullName) && sc.includes(`# ${channel}`);
  let start: string;
  try {
    start = await term.waitUntil('the first message, the user and the channel', started, 45_000);
  } catch (err) {
    // zulip-term 0.7.0 has been seen, rarely and only in the shared cluster run, to lose a background
    // thread at start; what it printed is kept in the output, and it is started once more.
    t.comment(`zulip-term did not start cleanly; starting it again. ${(err as Error).message.slice(-3000)}`);
    term.stop();
    term = Terminal.start(`work2-${process.pid}`, s.urls[0]!, person);
    start = await term.waitUntil('the first message, the user and the channel', started, 45_000);
  }
  t.match(start, person.fullName, 'started, logged in with the zuliprc: the title names the user');
  t.match(start, `# ${channel}`, 'the channel is in the list');

  // Moving onto the last message marks it read, as the client shows it (j, pressed
  // until the client has the focus in the message list; more is harmless at the end).
  const read = await until(me, first.id, (m) => m.flags.includes('read'), () => term.keys('j'));
  t.ok(read?.flags.includes('read'), 'the message shown is marked read on the server');

  const sent = uniq('typed in the terminal');
  // Type only once the compose box is open: keys typed before that are hotkeys of the message list.
  await openCompose(term);
  term.type(channel);
  term.keys('Tab');
  term.type('from the terminal');
  term.keys('Tab');
  term.type(sent);
  term.keys('C-d');
  // Stored, whatever part of a busy realm's message list the screen shows (a shared cluster's is long).
  const typed = async () => (await owner.ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, apply_markdown: false, narrow: [{ operator: 'channel', operand: channel }] })).messages.find((m: any) => m.content === sent);
  let mine = await typed();
  for (const end = Date.now() + 20_000; !mine && Date.now() < end; mine = await typed()) await new Promise((r) => setTimeout(r, 300));
  // Close the compose box, and see it closed: an Escape that tmux delivers together with
  // the next key reads as Alt and that key, which would go into the box.
  const composing = new RegExp(`│# ${channel}\\s+▶`);
  await term.waitUntil('the compose box closed', (screen) => !composing.test(screen), 20_000, () => term.keys('Escape'));
  t.ok(mine, 'the message typed is stored');
  t.equal(mine?.sender_id, person.userId, 'from the user');
  t.equal(mine?.subject, 'from the terminal', 'in the topic typed');

  const live = uniq('sent by the owner');
  const { id: liveId } = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'start', content: live });
  await term.waitFor(live);
  t.pass('a message another user sends shows up live');

  const liveRead = await until(me, liveId, (m) => m.flags.includes('read'), () => term.keys('j'));
  t.ok(liveRead?.flags.includes('read'), 'and is marked read once shown', { screen: liveRead?.flags.includes('read') ? undefined : term.screen() });
  term.keys('*');
  t.ok((await until(me, liveId, (m) => m.flags.includes('starred')))?.flags.includes('starred'), 'starred with *');
  term.keys('+');
  const reacted = await until(me, liveId, (m) => m.reactions.some((r: any) => r.user_id === person.userId));
  t.same(reacted?.reactions.map((r: any) => [r.emoji_name, r.user_id]), [['thumbs_up', person.userId]], 'a thumbs up with +');
  await term.waitFor(':thumbs_up: You');

  // Up to the user's own message, edit it.
  term.keys('k');
  term.keys('e');
  await term.waitFor('Also change later messages');
  term.type(' (edited)');
  term.keys('C-d');
  t.equal((await until(me, mine.id, (m) => m.content.endsWith('(edited)')))?.content, `${sent} (edited)`, 'edited with e');
  await term.waitFor(`${sent} (edited)`);
  t.notMatch(term.screen(), 'zulip-term exited', 'still running');
});

t.test('zulip-terminal - starts for a user who left a channel with unread messages', async (t) => {
  const { person, first } = await personWithUnread(s);
  const me = s.api.as(person);
  await me.ok('POST', '/messages/flags', { messages: [first.id], op: 'add', flag: 'read' });
  // Unread messages in a channel the user then leaves, one of them starred (a flag row without read).
  const left = uniq('zt-left');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: left }], send_new_subscription_messages: false, principals: [person.userId] });
  const ids: number[] = [];
  for (let i = 0; i < 3; i++) ids.push((await owner.ok('POST', '/messages', { type: 'stream', to: left, topic: 'gone', content: uniq('unread then left') })).id);
  await me.ok('POST', '/messages/flags', { messages: [ids[0]], op: 'add', flag: 'starred' });
  await me.ok('DELETE', '/users/me/subscriptions', { subscriptions: [left] });
  const term = Terminal.start(`left-${process.pid}`, s.urls[0]!, person);
  t.teardown(() => term.stop());
  // zulip-term 0.7.0 skips messages of channels the user left but counts them in the index it focuses:
  // if the first unread message the server names were one of them, it would crash at start.
  const screen = await term.waitUntil('the messages and the user', (sc) => sc.includes(first.content) && sc.includes(person.fullName), 45_000);
  t.match(screen, first.content, 'started and shows the messages');
  await new Promise((r) => setTimeout(r, 2000));
  t.notMatch(term.screen(), /zulip-term exited|has crashed/, 'still running', { traceback: term.traceback() });
});

t.test('zulip-terminal - logs in with email and password and writes its zuliprc', async (t) => {
  const { person, first } = await personWithUnread(s);
  const term = Terminal.start(`login-${process.pid}`, s.urls[0]!, null);
  t.teardown(() => term.stop());
  await term.waitFor('Zulip URL:');
  term.type(s.urls[0]!);
  term.keys('Enter');
  await term.waitFor('Email:');
  term.type(person.email);
  term.keys('Enter');
  await term.waitFor('Password:');
  term.type(person.password);
  term.keys('Enter');
  await term.waitFor(first.content, 45_000);
  t.pass('asked for the server, email and password, fetched a key and showed the messages');
  const rc = join(term.dir, 'zuliprc');
  t.ok(existsSync(rc), 'and saved the key in its zuliprc');
  t.match(readFileSync(rc, 'utf8'), `email=${person.email}`);
});

t.test('zulip-terminal - asleep past its queue\'s expiry, it registers again and receives live', { skip: process.env.PARLEY_TEST_GATEWAYS ? 'starts an embedded server with short queue timeouts; a cluster run has the shared one' : false }, async (t) => {
  // Queues expire 4 s after their last poll; a waiting poll is answered by a heartbeat after 2 s.
  const quick = await serverFor(t, { env: { PARLEY_QUEUE_IDLE_SECS: '4', PARLEY_HEARTBEAT_SECS: '2' } });
  const { person, channel, first } = await personWithUnread(quick);
  const boss = quick.api.as(quick.demo.owner);
  const term = Terminal.start(`sleep-${process.pid}`, quick.urls[0]!, person);
  t.teardown(() => term.stop());
  await term.waitFor(first.content, 45_000);
  const before = uniq('before the sleep');
  await boss.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'start', content: before });
  await term.waitFor(before);

  // A laptop lid closed: the client stops (SIGSTOP) for longer than its queue lives.
  const pid = term.clientPid();
  process.kill(pid, 'SIGSTOP');
  try {
    await new Promise((r) => setTimeout(r, 9_000));
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  // Its queue is gone; it learns that on its next poll, registers a new one, and what is sent from then on shows live.
  // A message sent before the new queue existed is not on the screen (zulip-terminal does not fetch what it
  // missed); send again every 3 s until one arrives on the new queue, for at most 30 s.
  const after = uniq('after the sleep');
  const shown = (screen: string) => screen.includes(after);
  let sends = 0;
  const end = Date.now() + 30_000;
  do {
    await boss.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'start', content: after });
    sends++;
    await new Promise((r) => setTimeout(r, 3000));
  } while (!shown(term.screen()) && Date.now() < end);
  t.ok(shown(term.screen()), `a message sent after it woke shows up live (sent ${sends} time(s))`, { screen: shown(term.screen()) ? undefined : `${term.screen()}\n${term.traceback()}` });
  t.notMatch(term.screen(), 'zulip-term exited', 'still running');
});
