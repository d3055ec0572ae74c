// Typing notifications and presence: ephemeral, in memory, delivered through the event queues.
import { type IncomingHttpHeaders, request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { poll, register, waitFor } from './helpers/events.ts';
import { newPerson, ROLE } from './helpers/people.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);
const channel = uniq('typing');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });
const streamId = ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === channel).stream_id as number;
const person = (k: 'member1' | 'member2') => ({ user_id: s.demo[k].userId, email: s.demo[k].email });

t.test('typing - direct: start and stop reach every participant, sender included', async (t) => {
  const q = await register(mateo, { event_types: ['typing'] });
  const own = await register(maria, { event_types: ['typing'] });
  await maria.ok('POST', '/typing', { op: 'start', to: [s.demo.member2.userId] });
  const e = await waitFor(q, (x) => x.type === 'typing');
  t.same({ ...e, id: 0 }, { type: 'typing', op: 'start', message_type: 'direct', sender: person('member1'), recipients: [person('member1'), person('member2')].sort((a, b) => a.user_id - b.user_id), id: 0 });
  t.equal((await waitFor(own, (x) => x.type === 'typing')).op, 'start');
  await maria.ok('POST', '/typing', { type: 'direct', op: 'stop', to: [s.demo.member2.userId] });
  t.equal((await waitFor(q, (x) => x.type === 'typing')).op, 'stop');
});

t.test('typing - channel notices only for queues with stream_typing_notifications, not to the sender', async (t) => {
  const topic = uniq('t');
  const capable = await register(mateo, { event_types: ['typing'], client_capabilities: { stream_typing_notifications: true } });
  const plain = await register(mateo, { event_types: ['typing'] });
  const sender = await register(maria, { event_types: ['typing'], client_capabilities: { stream_typing_notifications: true } });
  await maria.ok('POST', '/typing', { type: 'stream', op: 'start', stream_id: streamId, topic });
  const e = await waitFor(capable, (x) => x.type === 'typing');
  t.same([e.message_type, e.stream_id, e.topic, e.sender.user_id], ['stream', streamId, topic, s.demo.member1.userId]);
  await maria.ok('POST', '/typing', { type: 'stream', op: 'stop', stream_id: streamId, topic });
  await waitFor(capable, (x) => x.type === 'typing' && x.op === 'stop');
  t.same(await poll(plain, { dontBlock: true }), []);
  t.same(await poll(sender, { dontBlock: true }), []);
});

t.test('typing - every role may send; errors are 400s; no credentials 401', async (t) => {
  for (const key of DEMO_KEYS) await s.api.as(s.demo[key]).ok('POST', '/typing', { op: 'start', to: [s.demo.member2.userId] });
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ op: 'start' }, "Missing 'to' argument"],
    [{ op: 'start', to: [999_999] }, 'Invalid user ID 999999'],
    [{ op: 'start', type: 'stream', topic: 'x' }, "Missing 'stream_id' argument"],
    [{ op: 'start', type: 'stream', stream_id: streamId }, "Missing 'topic' argument"],
    [{ op: 'start', type: 'stream', stream_id: 999_999, topic: 'x' }, 'Invalid channel ID'],
  ];
  for (const [params, msg] of cases) {
    const r = await maria.post('/typing', params as any);
    t.same([r.status, r.body.code, r.body.msg], [400, msg.startsWith('Missing ') ? 'REQUEST_VARIABLE_MISSING' : 'BAD_REQUEST', msg]);
  }
  t.equal((await maria.post('/typing', { op: 'maybe', to: [1] })).body.var_name, 'op');
  t.equal((await s.api.post('/typing', { op: 'start', to: [s.demo.member2.userId] }, { creds: null })).status, 401);
});

t.test('typing - send_private_typing_notifications and send_stream_typing_notifications off refuse notices, for every role (FL 105)', async (t) => {
  const topic = uniq('t');
  for (const role of [ROLE.owner, ROLE.admin, ROLE.moderator, ROLE.member, ROLE.guest]) {
    const p = await newPerson(s, role);
    const api = s.api.as(p);
    await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [p.userId] });
    const q = await register(mateo, { event_types: ['typing'], client_capabilities: { stream_typing_notifications: true } });
    await api.ok('PATCH', '/settings', { send_private_typing_notifications: false });
    const dm = await api.post('/typing', { op: 'start', to: [s.demo.member2.userId] });
    t.same([dm.status, dm.body.code, dm.body.msg], [400, 'BAD_REQUEST', 'User has disabled typing notifications for direct messages'], `role ${role}: direct refused`);
    // Channel notices follow their own setting.
    await api.ok('POST', '/typing', { type: 'stream', op: 'start', stream_id: streamId, topic });
    t.equal((await waitFor(q, (x) => x.type === 'typing')).sender.user_id, p.userId, `role ${role}: channel notice still sent`);
    await api.ok('PATCH', '/settings', { send_stream_typing_notifications: false });
    const ch = await api.post('/typing', { type: 'stream', op: 'stop', stream_id: 999_999, topic: uniq('other') });
    t.same([ch.status, ch.body.code, ch.body.msg], [400, 'BAD_REQUEST', 'User has disabled typing notifications for channel messages'], `role ${role}: channel refused before the channel is looked at`);
    await api.ok('PATCH', '/settings', { send_private_typing_notifications: true });
    await api.ok('POST', '/typing', { op: 'start', to: [s.demo.member2.userId] });
    t.equal((await waitFor(q, (x) => x.type === 'typing')).message_type, 'direct', `role ${role}: direct allowed again`);
    t.same(await poll(q, { dontBlock: true }), [], 'nothing else reached the recipient');
  }
  const empty = await maria.post('/typing', { op: 'start', to: [] });
  t.same([empty.status, empty.body.msg], [400, "Empty 'to' list"]);
});

t.test('typing - editing a message: POST /messages/{message_id}/typing sends typing_edit_message to who sees the message, only for who may edit it (FL 351, 361)', async (t) => {
  const topic = uniq('edit');
  const { id } = await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'to be edited' });
  const watcher = await register(mateo, { event_types: ['typing_edit_message'] });
  const own = await register(maria, { event_types: ['typing_edit_message'] });
  await maria.ok('POST', `/messages/${id}/typing`, { op: 'start' });
  const e = await waitFor(watcher, (x) => x.type === 'typing_edit_message');
  t.same({ ...e, id: 0 }, { type: 'typing_edit_message', op: 'start', sender_id: s.demo.member1.userId, message_id: id, recipient: { type: 'channel', channel_id: streamId, topic }, id: 0 });
  t.equal((await waitFor(own, (x) => x.type === 'typing_edit_message')).op, 'start', 'the editor, a subscriber, gets it too (as in Zulip)');
  await maria.ok('POST', `/messages/${id}/typing`, { op: 'stop' });
  t.equal((await waitFor(watcher, (x) => x.type === 'typing_edit_message')).op, 'stop');

  const dm = await maria.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: 'a direct one' });
  await maria.ok('POST', `/messages/${dm.id}/typing`, { op: 'start' });
  const d = await waitFor(watcher, (x) => x.type === 'typing_edit_message');
  t.same(d.recipient, { type: 'direct', user_ids: [s.demo.member1.userId, s.demo.member2.userId].sort((a, b) => a - b) }, 'a direct message: its participants');
  await maria.ok('POST', `/messages/${dm.id}/typing`, { op: 'stop' });
  t.equal((await waitFor(watcher, (x) => x.type === 'typing_edit_message')).op, 'stop');

  // Only the sender may edit the content, whatever the role.
  for (const key of ['owner', 'admin', 'moderator', 'member2', 'guest'] as const) {
    const r = await s.api.as(s.demo[key]).post(`/messages/${id}/typing`, { op: 'start' });
    t.same([r.status, r.body.code, r.body.msg], [400, 'BAD_REQUEST', "You don't have permission to edit this message"], key);
  }
  const anonymous = await s.api.post(`/messages/${id}/typing`, { op: 'start' }, { creds: null });
  t.equal(anonymous.status, 401, 'no credentials');
  const unseen = await owner.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: 'not for maria' });
  for (const [mid, msg] of [[unseen.id, 'Invalid message(s)'], [999_999_999, 'Invalid message(s)']] as const) {
    const r = await maria.post(`/messages/${mid}/typing`, { op: 'start' });
    t.same([r.status, r.body.msg], [400, msg], `message ${mid}`);
  }
  t.equal((await maria.post(`/messages/${id}/typing`, { op: 'maybe' })).body.var_name, 'op');
  await owner.ok('PATCH', '/realm', { allow_message_editing: false });
  t.teardown(() => owner.ok('PATCH', '/realm', { allow_message_editing: true }));
  const off = await maria.post(`/messages/${id}/typing`, { op: 'start' });
  t.same([off.status, off.body.msg], [400, 'Your organization has turned off message editing']);
  await owner.ok('PATCH', '/realm', { allow_message_editing: true });
  await maria.ok('PATCH', '/settings', { send_stream_typing_notifications: false });
  t.teardown(() => maria.ok('PATCH', '/settings', { send_stream_typing_notifications: true }));
  const quiet = await maria.post(`/messages/${id}/typing`, { op: 'start' });
  t.same([quiet.status, quiet.body.msg], [400, 'User has disabled typing notifications for channel messages']);
  t.same(await poll(watcher, { dontBlock: true }), [], 'no refused notice reached anyone');
});

t.test('typing - a start nobody renews stops by itself', async (t) => {
  const fast = await serverFor(t, { env: { PARLEY_TYPING_EXPIRY_MS: '300' } });
  const q = await register(fast.api.as(fast.demo.member2), { event_types: ['typing'] });
  await fast.api.as(fast.demo.member1).ok('POST', '/typing', { op: 'start', to: [fast.demo.member2.userId] });
  t.equal((await waitFor(q, (x) => x.type === 'typing')).op, 'start');
  const stop = await waitFor(q, (x) => x.type === 'typing', 5000);
  t.equal(stop.op, 'stop');
});

t.test('presence - a ping answers with everyone\'s presence; GET /realm/presence and /users/{id}/presence', async (t) => {
  const r = await maria.ok('POST', '/users/me/presence', { status: 'active', slim_presence: true, last_update_id: -1 });
  t.ok(r.server_timestamp > 0);
  t.ok(r.presences[String(s.demo.member1.userId)].active_timestamp >= r.server_timestamp - 5);
  t.type(r.presence_last_update_id, 'number');
  const noPresences = await maria.ok('POST', '/users/me/presence', { status: 'active', ping_only: true });
  t.notOk('presences' in noPresences);
  const all = await mateo.ok('GET', '/realm/presence');
  t.equal(all.presences[s.demo.member1.email].aggregated.status, 'active');
  const one = await mateo.ok('GET', `/users/${s.demo.member1.userId}/presence`);
  t.equal(one.presence.aggregated.status, 'active');
  t.same((await mateo.ok('GET', `/users/${s.demo.member1.email}/presence`)).presence.aggregated, one.presence.aggregated);
  // FL 487 added the modern timestamps to it; FL 497 kept the legacy dictionaries beside them.
  t.same(Object.keys(one.presence).sort(), ['active_timestamp', 'aggregated', 'idle_timestamp', 'website']);
  t.ok(one.presence.active_timestamp >= r.server_timestamp - 5, 'active_timestamp is the ping above');
  t.ok(one.presence.idle_timestamp >= one.presence.active_timestamp, 'a client was connected at least as recently as one was active');
});

t.test('presence - a ping\'s answer is shared by the pings of the second: gzipped for a client that accepts it, the same JSON either way', async (t) => {
  const creds = s.demo.member2;
  const post = (headers: Record<string, string>) =>
    new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      const body = new URLSearchParams({ status: 'active', slim_presence: 'true', last_update_id: '-1' }).toString();
      const req = request(`${s.api.base}/api/v1/users/me/presence`, {
        method: 'POST',
        headers: { ...headers, authorization: `Basic ${Buffer.from(`${creds.email}:${creds.apiKey}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        agent: false,
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end(body);
    });
  const zipped = await post({ 'accept-encoding': 'gzip, deflate, br' });
  const plain = await post({});
  const refused = await post({ 'accept-encoding': 'gzip;q=0, identity' });
  t.equal(zipped.status, 200);
  t.equal(zipped.headers['content-encoding'], 'gzip', 'gzipped for a client that takes gzip');
  t.equal(zipped.headers.vary, 'Accept-Encoding');
  t.equal(plain.headers['content-encoding'], undefined, 'plain for a client that does not say');
  t.equal(refused.headers['content-encoding'], undefined, 'plain for a client that refuses gzip (q=0)');
  const fromZip = JSON.parse(gunzipSync(zipped.body).toString());
  const fromPlain = JSON.parse(plain.body.toString());
  t.equal(fromZip.result, 'success');
  t.ok(fromZip.presences[String(creds.userId)].active_timestamp > 0, 'the caller is in everyone\'s presence');
  t.same(Object.keys(fromZip).sort(), Object.keys(fromPlain).sort(), 'the same keys either way');
  t.same(Object.keys(fromZip.presences).sort(), Object.keys(fromPlain.presences).sort(), 'the same users either way');
});

t.test('presence - each gateway fetches everyone\'s presence at most once a second per form; every ping\'s write reaches the presence actor; the answer is of the second', async (t) => {
  const fetches = async () => {
    let n = 0;
    for (const url of s.metricsUrls) n += Number(/^parley_presence_answer_fetches_total (\d+)/m.exec(await (await fetch(url)).text())?.[1] ?? 0);
    return n;
  };
  // A form of the answer of this test's own (history_limit_days), pinged by every demo user through every gateway.
  const ping = (k: (typeof DEMO_KEYS)[number], i: number) =>
    s.api.as(s.demo[k]).at(s.urls[i % s.urls.length]!).ok('POST', '/users/me/presence', { status: 'active', slim_presence: true, last_update_id: -1, history_limit_days: 13 });
  const warmed = Math.floor(Date.now() / 1000);
  for (const [i, k] of DEMO_KEYS.entries()) await ping(k, i);
  const warmedEnd = Math.floor(Date.now() / 1000);
  const before = await fetches();
  const start = Date.now();
  const answers: Array<{ sent: number; got: number; r: any }> = [];
  let i = 0;
  // ~2.5 s of pings, 7 at a time: some 100 pings over 3 or 4 seconds of the clock.
  while (Date.now() - start < 2500) {
    await Promise.all(DEMO_KEYS.map(async (k) => {
      const sent = Date.now();
      const r = await ping(k, i++);
      answers.push({ sent, got: Date.now(), r });
    }));
  }
  const seconds = Math.floor(Date.now() / 1000) - Math.floor(start / 1000) + 1;
  const fetched = (await fetches()) - before;
  t.ok(answers.length >= 20, `${answers.length} pings`);
  t.ok(fetched >= 1 && fetched <= (seconds + DEMO_KEYS.length) * s.urls.length, `${fetched} fetches of the answer for ${answers.length} pings over ${seconds} seconds of the clock and ${s.urls.length} gateway(s) (and a version per user who came online)`);
  for (const { sent, got, r } of answers) {
    if (!(r.server_timestamp >= Math.floor(sent / 1000) && r.server_timestamp <= Math.floor(got / 1000))) t.fail(`answer of second ${r.server_timestamp} to a ping sent at ${sent} and answered at ${got}`);
    // Everyone pinged before the burst: an answer made in a later second shows those pings (a second's answer may predate them).
    if (r.server_timestamp > warmedEnd) for (const k of DEMO_KEYS) if (!(r.presences[String(s.demo[k].userId)]?.active_timestamp >= warmed)) t.fail(`${k} missing or stale in an answer of second ${r.server_timestamp}`);
  }
  // Each ping's write reached the presence actor: every user's last ping is what a fresh read shows.
  const last = Math.floor(Math.max(...answers.map((a) => a.sent)) / 1000);
  const all = await owner.ok('GET', '/realm/presence');
  for (const k of DEMO_KEYS) t.ok(all.presences[s.demo[k].email]?.aggregated.timestamp >= last - 1, `${k}'s last ping is in the presence actor`);
});

t.test('presence - the presence actor\'s copy of the addresses follows the realm: a user created after it pings and is listed by address; a deactivated one is not', async (t) => {
  // Make sure the copy exists first, then change the directory behind it.
  await maria.ok('POST', '/users/me/presence', { status: 'active' });
  const newcomer = await newPerson(s);
  const api = s.api.as(newcomer);
  await api.ok('POST', '/users/me/presence', { status: 'active' });
  const legacy = await mateo.ok('GET', '/realm/presence');
  t.equal(legacy.presences[newcomer.email]?.aggregated.status, 'active', 'keyed by the new address at once');
  t.equal((await mateo.ok('GET', `/users/${newcomer.email}/presence`)).presence.aggregated.status, 'active');
  await owner.ok('DELETE', `/users/${newcomer.userId}`);
  t.equal((await api.post('/users/me/presence', { status: 'active' })).status, 401, 'a deactivated account is refused');
});

t.test('presence - every role pings; errors; no credentials 401', async (t) => {
  for (const key of DEMO_KEYS) await s.api.as(s.demo[key]).ok('POST', '/users/me/presence', { status: 'active' });
  const bad = await maria.post('/users/me/presence', { status: 'dancing' });
  t.same([bad.status, bad.body.code, bad.body.msg], [400, 'BAD_REQUEST', 'Invalid status: dancing']);
  t.equal((await maria.post('/users/me/presence', {})).body.var_name, 'status');
  t.equal((await maria.get('/users/nobody@nowhere.example/presence')).body.msg, 'No such user');
  t.equal((await s.api.post('/users/me/presence', { status: 'active' }, { creds: null })).status, 401);
  t.equal((await s.api.get('/realm/presence', {}, { creds: null })).status, 401);
});

t.test('presence - snapshot plus presence events equals a fresh register, slim and legacy', async (t) => {
  // A server of its own: presence is news only the first time a user shows up (or changes status).
  const own = await serverFor(t, { env: { PARLEY_LOG_LEVEL: 'warn' } });
  for (const [slim, who] of [[true, 'guest'], [false, 'bot']] as const) {
    const FETCH = { fetch_event_types: ['presence'], event_types: ['presence'], slim_presence: slim, client_capabilities: { simplified_presence_events: slim } };
    const viewer = own.api.as(own.demo.member2);
    const q = await register(viewer, FETCH);
    const snap = structuredClone(q.snapshot);
    await own.api.as(own.demo[who]).ok('POST', '/users/me/presence', { status: 'active' });
    const e = await waitFor(q, (x) => x.type === 'presence');
    // The first ping of a user is news: legacy queues get it per client, simplified ones keyed by user ID.
    if (slim) t.same(Object.keys(e.presences), [String(own.demo[who].userId)]);
    else t.same([e.user_id, e.email, e.presence.website.status], [own.demo[who].userId, own.demo[who].email, 'active']);
    applyEvent(snap, e);
    const fresh = (await register(viewer, FETCH)).snapshot;
    t.same(snap.presences, fresh.presences, slim ? 'slim' : 'legacy');
    t.ok(Object.keys(fresh.presences).includes(slim ? String(own.demo[who].userId) : own.demo[who].email));
  }
});

t.test('typing and presence - the official Python client: set_typing_status and update_presence', async (t) => {
  const out = runPython(s.urls[0]!, s.demo.member1, `
typing = client.set_typing_status({"op": "start", "to": [${s.demo.member2.userId}]})
presence = client.update_presence({"status": "active", "ping_only": False, "new_user_input": True})
print(json.dumps({"typing": typing["result"], "presence": presence["result"], "has": "presences" in presence}))`) as any;
  t.same(out, { typing: 'success', presence: 'success', has: true });
});
