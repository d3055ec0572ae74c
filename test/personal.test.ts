// Drafts, saved snippets, navigation views, alert words and muted users, with their register keys and events.
import t from 'tap';
import { type Params, uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { newPerson } from './helpers/people.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);
const channel = uniq('personal');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });
const streamId = ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === channel).stream_id as number;

/** Applies events to a snapshot until `count` events of `type` arrived, then compares with a fresh register. */
async function verify(t: any, api: typeof maria, fetch: string[], key: string, change: () => Promise<number>) {
  const q = await register(api, { fetch_event_types: fetch });
  const snap = structuredClone(q.snapshot);
  const count = await change();
  let n = 0;
  await waitFor(q, (e) => {
    applyEvent(snap, e);
    if (fetch.includes(e.type)) n++;
    return n === count;
  });
  t.same(snap[key], (await register(api, { fetch_event_types: fetch })).snapshot[key], `${key}: snapshot plus events equals a fresh register`);
}

t.test('drafts - create, list, edit, delete, with events; errors', async (t) => {
  let ids: number[] = [];
  await verify(t, maria, ['drafts'], 'drafts', async () => {
    ids = (await maria.ok('POST', '/drafts', { drafts: [{ type: 'stream', to: [streamId], topic: 'plans', content: 'draft one', timestamp: 1700000000 }, { type: 'private', to: [s.demo.member2.userId], topic: '', content: 'draft two' }] })).ids;
    await maria.ok('PATCH', `/drafts/${ids[0]}`, { draft: { type: 'stream', to: [streamId], topic: 'plans', content: 'draft one, edited', timestamp: 1700000001 } });
    await maria.ok('DELETE', `/drafts/${ids[1]}`);
    return 3;
  });
  const listed = await maria.ok('GET', '/drafts');
  const mine = listed.drafts.find((d: any) => d.id === ids[0]);
  t.same(mine, { id: ids[0], type: 'stream', to: [streamId], topic: 'plans', content: 'draft one, edited', timestamp: 1700000001 });
  t.notOk(listed.drafts.some((d: any) => d.id === ids[1]));
  t.equal(listed.count, listed.drafts.length);
  const cases: Array<[Params, string]> = [
    [{ drafts: [{ type: 'stream', to: [streamId, streamId + 1], topic: 'x', content: 'y' }] }, 'Must specify exactly 1 channel ID for channel messages'],
    [{ drafts: [{ type: 'stream', to: [999_999], topic: 'x', content: 'y' }] }, 'Invalid channel ID'],
    [{ drafts: [{ type: 'private', to: [999_999], content: 'y' }] }, 'Invalid user ID 999999'],
    [{ drafts: [{ type: '', to: [], content: '  ' }] }, 'Content must not be empty'],
    [{ drafts: [{ type: '', to: [], content: 'y', timestamp: -5 }] }, 'Timestamp must not be negative.'],
  ];
  for (const [params, msg] of cases) t.equal((await maria.post('/drafts', params)).body.msg, msg);
  t.equal((await maria.call('PATCH', '/drafts/999999', { draft: { type: '', to: [], content: 'x' } })).body.msg, 'Draft does not exist');
  t.equal((await maria.call('DELETE', '/drafts/999999')).body.msg, 'Draft does not exist');
  t.equal((await mateo.call('DELETE', `/drafts/${ids[0]}`)).body.msg, 'Draft does not exist', "another user's draft does not exist for them");
  t.equal((await maria.post('/drafts', { drafts: [{ type: 'weird', content: 'x' }] })).body.var_name, 'drafts');
  for (const key of DEMO_KEYS) await s.api.as(s.demo[key]).ok('POST', '/drafts', { drafts: [{ type: '', to: [], content: `by ${key}` }] });
  t.equal((await s.api.get('/drafts', {}, { creds: null })).status, 401);
});

t.test('drafts - turning synchronization off deletes the stored drafts, for oneself and through target_users', async (t) => {
  await mateo.ok('POST', '/drafts', { drafts: [{ type: '', to: [], content: 'kept locally, dropped on the server' }] });
  t.ok((await mateo.ok('GET', '/drafts')).count > 0);
  await mateo.ok('PATCH', '/settings', { enable_drafts_synchronization: false });
  t.same((await mateo.ok('GET', '/drafts')).drafts, [], 'the stored drafts are gone');
  t.equal((await mateo.post('/drafts', { drafts: [{ type: '', to: [], content: 'x' }] })).body.msg, 'User has disabled synchronizing drafts.');
  await mateo.ok('PATCH', '/settings', { enable_drafts_synchronization: true });
  t.same((await mateo.ok('GET', '/drafts')).drafts, [], 'and stay gone when it is turned on again');
  await mateo.ok('POST', '/drafts', { drafts: [{ type: '', to: [], content: 'again' }] });
  await owner.ok('PATCH', '/settings', { enable_drafts_synchronization: false, target_users: { user_ids: [s.demo.member2.userId], group_ids: [], skip_if_already_edited: false } });
  t.same((await mateo.ok('GET', '/drafts')).drafts, [], 'an administrator turning it off for a user deletes that user\'s drafts');
  await owner.ok('PATCH', '/settings', { enable_drafts_synchronization: true, target_users: { user_ids: [s.demo.member2.userId], group_ids: [], skip_if_already_edited: false } });
});

t.test('saved snippets - create, edit, delete, with events; errors', async (t) => {
  let id = 0;
  await verify(t, maria, ['saved_snippets'], 'saved_snippets', async () => {
    id = (await maria.ok('POST', '/saved_snippets', { title: 'Greeting', content: 'Hello **there**' })).saved_snippet_id;
    await maria.ok('PATCH', `/saved_snippets/${id}`, { content: 'Hi' });
    const other = (await maria.ok('POST', '/saved_snippets', { title: 'Other', content: 'x' })).saved_snippet_id;
    await maria.ok('DELETE', `/saved_snippets/${other}`);
    return 4;
  });
  const got = (await maria.ok('GET', '/saved_snippets')).saved_snippets.find((x: any) => x.id === id);
  t.same([got.title, got.content], ['Greeting', 'Hi']);
  t.ok(got.date_created > 0);
  t.equal((await maria.post('/saved_snippets', { title: ' ', content: 'x' })).body.msg, 'Title cannot be empty.');
  t.equal((await maria.post('/saved_snippets', { title: 'x', content: ' ' })).body.msg, 'Content cannot be empty.');
  t.equal((await maria.call('PATCH', `/saved_snippets/${id}`, {})).body.msg, 'Nothing to update');
  t.equal((await mateo.call('DELETE', `/saved_snippets/${id}`)).body.msg, 'Saved snippet does not exist.');
  for (const key of DEMO_KEYS) await s.api.as(s.demo[key]).ok('POST', '/saved_snippets', { title: key, content: 'x' });
  t.equal((await s.api.post('/saved_snippets', { title: 'x', content: 'y' }, { creds: null })).status, 401);
});

t.test('navigation views - built-in and custom views: add, update, remove, with events; errors; each role its own', async (t) => {
  const custom = `narrow/channel/${streamId}-${uniq('nav')}`;
  const name = uniq('Plans');
  t.teardown(async () => {
    for (const f of ['inbox', custom]) await maria.call('DELETE', `/navigation_views/${f}`);
  });
  t.same((await mateo.ok('GET', '/navigation_views')).navigation_views.filter((v: any) => v.fragment === custom), [], 'none of the custom view yet');
  const q = await register(maria, { fetch_event_types: ['navigation_views'], event_types: ['navigation_view'] });
  const snap = structuredClone(q.snapshot);
  await maria.ok('POST', '/navigation_views', { fragment: 'inbox', is_pinned: false });
  await maria.ok('POST', '/navigation_views', { fragment: ` ${custom} `, is_pinned: true, name: ` ${name} ` });
  await maria.ok('PATCH', `/navigation_views/${custom}`, { is_pinned: false, name: `${name} 2` });
  await maria.ok('PATCH', '/navigation_views/inbox', { is_pinned: true });
  const events: Array<Record<string, any>> = [];
  await waitFor(q, (e) => (events.push(e), applyEvent(snap, e), events.length === 4));
  t.same(events.map((e) => [e.type, e.op]), [['navigation_view', 'add'], ['navigation_view', 'add'], ['navigation_view', 'update'], ['navigation_view', 'update']]);
  t.same(events[1]!.navigation_view, { fragment: custom, is_pinned: true, name }, 'the fragment and name are stripped');
  t.same(events[2]!.data, { is_pinned: false, name: `${name} 2` });
  t.same(events[3], { type: 'navigation_view', op: 'update', fragment: 'inbox', data: { is_pinned: true }, id: events[3]!.id });
  const fresh = (await register(maria, { fetch_event_types: ['navigation_views'] })).snapshot.navigation_views;
  t.same(snap.navigation_views, fresh, 'navigation_views: snapshot plus events equals a fresh register');
  const mine = (await maria.ok('GET', '/navigation_views')).navigation_views;
  t.same(mine.slice(-2), [{ fragment: 'inbox', is_pinned: true, name: null }, { fragment: custom, is_pinned: false, name: `${name} 2` }], 'in the order they were made');
  t.same(mine, fresh);
  // Zulip's errors, in Zulip's order.
  const post: Array<[Params, string]> = [
    [{ fragment: 'recent', is_pinned: true, name: 'foo' }, 'Built-in views cannot have a custom name.'],
    [{ fragment: '', is_pinned: true }, 'fragment cannot be blank'],
    [{ fragment: 'narrow/is/alerted', is_pinned: true }, 'Custom views must have a valid name.'],
    [{ fragment: 'narrow/is/alerted', is_pinned: true, name: '  ' }, 'name cannot be blank'],
    [{ fragment: 'inbox', is_pinned: true }, 'Navigation view already exists.'],
    [{ fragment: 'narrow/is/alerted', is_pinned: true, name: `${name} 2` }, 'Navigation view already exists.'],
    [{ fragment: 'x'.repeat(401), is_pinned: true, name: 'long' }, 'fragment is too long (limit: 400 characters)'],
  ];
  for (const [params, msg] of post) t.equal((await maria.post('/navigation_views', params)).body.msg, msg, msg);
  t.equal((await maria.post('/navigation_views', { fragment: 'feed' })).body.msg, "Missing 'is_pinned' argument");
  t.equal((await maria.call('PATCH', '/navigation_views/inbox', { name: 'Inbox view' })).body.msg, 'Built-in views cannot have a custom name.');
  t.equal((await maria.call('PATCH', `/navigation_views/${custom}`, { name: `${name} 2` })).body.msg, 'Navigation view already exists.', 'a rename checks every name, its own too');
  const missing = await maria.call('PATCH', '/navigation_views/narrow/is/nothing', { is_pinned: true });
  t.same([missing.status, missing.body.msg], [404, 'Navigation view does not exist.']);
  const foreign = await mateo.call('PATCH', `/navigation_views/${custom}`, { is_pinned: true });
  t.same([foreign.status, foreign.body.msg], [404, 'Navigation view does not exist.'], "another user's view does not exist for them");
  t.equal((await mateo.call('DELETE', '/navigation_views/inbox')).status, 404);
  t.notOk((await mateo.ok('GET', '/navigation_views')).navigation_views.some((v: any) => v.fragment === custom), 'nor is it listed for them');
  // Removal, through a percent-encoded path as well.
  await maria.ok('DELETE', `/navigation_views/${encodeURIComponent(custom)}`);
  t.notOk((await maria.ok('GET', '/navigation_views')).navigation_views.some((v: any) => v.fragment === custom));
  t.equal((await maria.call('DELETE', `/navigation_views/${custom}`)).status, 404, 'gone');
  for (const key of DEMO_KEYS) {
    const api = s.api.as(s.demo[key]);
    const fragment = `narrow/is/starred/${uniq(key)}`;
    await api.ok('POST', '/navigation_views', { fragment, is_pinned: true, name: fragment });
    t.ok((await api.ok('GET', '/navigation_views')).navigation_views.some((v: any) => v.fragment === fragment), `${key} keeps views of their own`);
    await api.ok('DELETE', `/navigation_views/${fragment}`);
  }
  t.equal((await s.api.get('/navigation_views', {}, { creds: null })).status, 401);
  t.equal((await s.api.post('/navigation_views', { fragment: 'feed', is_pinned: true }, { creds: null })).status, 401);
});

t.test('alert words - add, remove, list; messages with them are flagged has_alert_word and is:alerted', async (t) => {
  const word = uniq('zebra').replace(/-/g, '');
  await verify(t, mateo, ['alert_words'], 'alert_words', async () => {
    await mateo.ok('POST', '/users/me/alert_words', { alert_words: [word.toUpperCase(), 'giraffe'] });
    await mateo.ok('DELETE', '/users/me/alert_words', { alert_words: ['giraffe'] });
    return 2;
  });
  t.same((await mateo.ok('GET', '/users/me/alert_words')).alert_words.filter((w: string) => w === word), [word]);
  const { id } = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'zoo', content: `look, a ${word}!` });
  const other = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'zoo', content: `not a ${word}s` })).id;
  t.same((await mateo.ok('GET', `/messages/${id}`)).message.flags, ['has_alert_word']);
  t.same((await mateo.ok('GET', `/messages/${other}`)).message.flags, []);
  t.same((await maria.ok('GET', `/messages/${id}`)).message.flags, []);
  const alerted = await mateo.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'is', operand: 'alerted' }, { operator: 'topic', operand: 'zoo' }] });
  t.same(alerted.messages.map((m: any) => m.id), [id]);
  // An edit matches the words again: the flag comes with the word and goes with it.
  await owner.ok('PATCH', `/messages/${other}`, { content: `now a ${word} too` });
  t.same((await mateo.ok('GET', `/messages/${other}`)).message.flags, ['has_alert_word'], 'an edit that adds the word flags the message');
  await owner.ok('PATCH', `/messages/${id}`, { content: 'no animals here' });
  t.same((await mateo.ok('GET', `/messages/${id}`)).message.flags, [], 'an edit that removes it unflags it');
  t.equal((await mateo.post('/users/me/alert_words', { alert_words: ['x'.repeat(101)] })).body.msg, 'alert_words[0] is too long (limit: 100 characters)');
  await mateo.ok('DELETE', '/users/me/alert_words', { alert_words: [word] });
});

t.test('alert words - phrases, punctuation, case, shared words, removal and deactivation, as the whole-word rule says', async (t) => {
  const [ana, ben] = [await newPerson(s), await newPerson(s)];
  const [a, b] = [s.api.as(ana), s.api.as(ben)];
  const ch = uniq('alerts');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: ch }], principals: [s.demo.owner.userId, ana.userId, ben.userId] });
  await a.ok('POST', '/users/me/alert_words', { alert_words: ['Big Launch', 'c++', '!!!', 'ÄRGER', 'shared'] });
  await b.ok('POST', '/users/me/alert_words', { alert_words: ['launch', 'x-ray', 'SHARED'] });
  t.same((await a.ok('GET', '/users/me/alert_words')).alert_words, ['big launch', 'c++', '!!!', 'ärger', 'shared'], 'kept lower-cased');
  /** Who of Ana and Ben has the message flagged has_alert_word. */
  const alerted = async (id: number) => {
    const out: string[] = [];
    if ((await a.ok('GET', `/messages/${id}`)).message.flags.includes('has_alert_word')) out.push('ana');
    if ((await b.ok('GET', `/messages/${id}`)).message.flags.includes('has_alert_word')) out.push('ben');
    return out;
  };
  const send = async (content: string) => (await owner.ok('POST', '/messages', { type: 'stream', to: ch, topic: 'alerts', content })).id as number;
  const cases: Array<[string, string[]]> = [
    ['the BIG LAUNCH is today', ['ana', 'ben']],
    ['big launchpad', []],
    ['a big  launch, spaced twice', ['ben']],
    ['I like C++.', ['ana']],
    ['c+ and c', []],
    ['wow!!!', []],
    ['so good !!!', ['ana']],
    ['Ärger im Büro', ['ana']],
    ['ärgerlich', []],
    ['the shared word', ['ana', 'ben']],
    ['an X-Ray photo', ['ben']],
    ['x-rays and x ray', []],
    ['(launch)', ['ben']],
    ['relaunch_later', []],
  ];
  for (const [content, who] of cases) t.same(await alerted(await send(content)), who, `"${content}" alerts ${who.join(' and ') || 'nobody'}`);
  const edited = await send('nothing yet');
  await owner.ok('PATCH', `/messages/${edited}`, { content: 'now: the big launch!' });
  t.same(await alerted(edited), ['ana', 'ben'], 'an edit is matched the same way');

  await b.ok('DELETE', '/users/me/alert_words', { alert_words: ['shared'] });
  t.same(await alerted(await send('shared again')), ['ana'], 'a removed word no longer alerts its user, the same word of another still does');
  await owner.ok('DELETE', `/users/${ana.userId}`);
  const whileAway = await send('shared while away');
  await owner.ok('POST', `/users/${ana.userId}/reactivate`);
  t.same(await alerted(whileAway), [], 'a deactivated user is not alerted');
  t.same(await alerted(await send('shared once back')), ['ana'], 'a reactivated user is alerted again');
  await a.ok('DELETE', '/users/me/alert_words', { alert_words: ['big launch', 'c++', '!!!', 'ärger', 'shared'] });
  t.same(await alerted(await send('the big launch, shared')), ['ben'], 'removing every word leaves none');
});

t.test('muted users - mute, unmute, events; a muted user\'s new messages arrive read', async (t) => {
  const earlier = (await s.api.as(s.demo.bot).ok('POST', '/messages', { type: 'stream', to: channel, topic: 'bots', content: 'before the mute' })).id;
  t.same((await maria.ok('GET', `/messages/${earlier}`)).message.flags, []);
  const flagsQueue = await register(maria, { event_types: ['update_message_flags'] });
  await verify(t, maria, ['muted_users'], 'muted_users', async () => {
    await maria.ok('POST', `/users/me/muted_users/${s.demo.bot.userId}`);
    await maria.ok('POST', `/users/me/muted_users/${s.demo.guest.userId}`);
    await maria.ok('DELETE', `/users/me/muted_users/${s.demo.guest.userId}`);
    return 3;
  });
  // The mute's follow-up marks what they sent before read, after the mute's commit, and says so.
  const marked = await waitFor(flagsQueue, (e) => e.type === 'update_message_flags' && e.flag === 'read' && e.messages.includes(earlier));
  t.equal(marked.op, 'add');
  t.same((await maria.ok('GET', `/messages/${earlier}`)).message.flags, ['read'], 'what they sent before is marked read');
  const muted = (await maria.ok('POST', '/register', { fetch_event_types: ['muted_users'] })).muted_users;
  t.ok(muted.some((m: any) => m.id === s.demo.bot.userId));
  const q = await register(maria, { event_types: ['message'] });
  const { id } = await s.api.as(s.demo.bot).ok('POST', '/messages', { type: 'stream', to: channel, topic: 'bots', content: 'beep' });
  t.same((await waitFor(q, (e) => e.type === 'message' && e.message.id === id)).flags, ['read']);
  t.same((await maria.ok('GET', `/messages/${id}`)).message.flags, ['read']);
  t.same((await mateo.ok('GET', `/messages/${id}`)).message.flags, []);
  const cases: Array<[string, string, string]> = [
    ['POST', `/users/me/muted_users/${s.demo.member1.userId}`, 'Cannot mute self'],
    ['POST', '/users/me/muted_users/999999', 'No such user'],
    ['POST', `/users/me/muted_users/${s.demo.bot.userId}`, 'User already muted'],
    ['DELETE', `/users/me/muted_users/${s.demo.guest.userId}`, 'User is not muted'],
  ];
  for (const [method, path, msg] of cases) t.equal((await maria.call(method, path)).body.msg, msg);
  await maria.ok('DELETE', `/users/me/muted_users/${s.demo.bot.userId}`);
  for (const key of DEMO_KEYS.filter((k) => k !== 'member1')) {
    await s.api.as(s.demo[key]).ok('POST', `/users/me/muted_users/${s.demo.member1.userId}`);
    await s.api.as(s.demo[key]).ok('DELETE', `/users/me/muted_users/${s.demo.member1.userId}`);
  }
  t.equal((await s.api.post(`/users/me/muted_users/${s.demo.bot.userId}`, {}, { creds: null })).status, 401);
});

t.test('muted users - the mute\'s follow-up (marking read) runs after a crash between the commit and the follow-up', { skip: s.dataDir ? false : 'restarts an embedded server of its own' }, async (t) => {
  // The follow-up waits 3 s after the mute's commit here, so that the server can be killed in between.
  let srv = await serverFor(t, { env: { PARLEY_FOLLOW_UP_DELAY_MS: '3000' } });
  const channel = uniq('mute-crash');
  await srv.api.as(srv.demo.owner).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [srv.demo.member1.userId, srv.demo.member2.userId] });
  const sent = (await srv.api.as(srv.demo.member2).ok('POST', '/messages', { type: 'stream', to: channel, topic: 'before', content: 'unread until muted' })).id;
  await srv.api.as(srv.demo.member1).ok('POST', `/users/me/muted_users/${srv.demo.member2.userId}`);
  t.same((await srv.api.as(srv.demo.member1).ok('GET', `/messages/${sent}`)).message.flags, [], 'the mute is answered before its follow-up ran');
  await srv.stop('SIGKILL');
  srv = await srv.restart();
  t.teardown(() => srv.stop());
  const maria = srv.api.as(srv.demo.member1);
  let flags: string[] = [];
  for (const until = Date.now() + 20_000; Date.now() < until && !flags.includes('read'); await new Promise((r) => setTimeout(r, 200))) flags = (await maria.ok('GET', `/messages/${sent}`)).message.flags;
  t.same(flags, ['read'], 'the follow-up ran after the restart');
  await srv.stop();
});

t.test('onboarding steps - register lists the unseen one-time notices; POST /users/me/onboarding_steps marks one, with its event (FL 233)', async (t) => {
  const q = await register(mateo, { fetch_event_types: ['onboarding_steps'] });
  const snap = structuredClone(q.snapshot);
  const before: string[] = snap.onboarding_steps.map((x: any) => x.name);
  t.ok(snap.onboarding_steps.every((x: any) => x.type === 'one_time_notice'), 'one-time notices (FL 259)');
  t.notOk(before.includes('navigation_tour_video'), 'no tour video here (navigation_tour_video_url null), so never listed');
  t.equal(snap.navigation_tour_video_url, null);
  const step = before.includes('intro_resolve_topic') ? 'intro_resolve_topic' : before[0]!;
  t.ok(step, 'a notice to mark');
  await mateo.ok('POST', '/users/me/onboarding_steps', { onboarding_step: step });
  const e = await waitFor(q, (x) => x.type === 'onboarding_steps');
  applyEvent(snap, e);
  t.notOk(e.onboarding_steps.some((x: any) => x.name === step), 'the event lists the steps left');
  t.same(snap.onboarding_steps, (await register(mateo, { fetch_event_types: ['onboarding_steps'] })).snapshot.onboarding_steps, 'snapshot plus events equals a fresh register');
  await mateo.ok('POST', '/users/me/onboarding_steps', { onboarding_step: step });
  t.same((await waitFor(q, (x) => x.type === 'onboarding_steps')).onboarding_steps, e.onboarding_steps, 'marking it again changes nothing');
  t.equal((await mateo.post('/users/me/onboarding_steps', { onboarding_step: 'no_such_step' })).body.msg, 'Unknown onboarding_step: no_such_step');
  t.equal((await mateo.post('/users/me/onboarding_steps', {})).status, 400, 'onboarding_step is required');
  for (const key of DEMO_KEYS) {
    const r = await s.api.as(s.demo[key]).post('/users/me/onboarding_steps', { onboarding_step: 'intro_inbox_view_modal' });
    if (key === 'bot') t.same([r.status, r.body.msg], [400, 'This endpoint does not accept bot requests.'], key);
    else t.equal(r.status, 200, key);
  }
  t.equal((await s.api.post('/users/me/onboarding_steps', { onboarding_step: step }, { creds: null })).status, 401);
});

t.test('personal - the official Python client: alert words and drafts', async (t) => {
  const out = runPython(s.urls[0]!, s.demo.member2, `
added = client.add_alert_words(["pythonword"])
got = client.get_alert_words()
removed = client.remove_alert_words(["pythonword"])
draft = client.call_endpoint("drafts", method="POST", request={"drafts": json.dumps([{"type": "", "to": [], "topic": "", "content": "from python"}])})
print(json.dumps({"added": "pythonword" in added["alert_words"], "got": "pythonword" in got["alert_words"], "removed": "pythonword" in removed["alert_words"], "draft": len(draft["ids"])}))`) as any;
  t.same(out, { added: true, got: true, removed: false, draft: 1 });
});
