// Messages by ID: GET /messages/{message_id} and GET /messages/matches_narrow.
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
// test/messages.test.ts counts the owner's direct messages with Mateo (and with Maria and Mateo): these tests use the administrator.
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);
const channel = uniq('reads');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });

t.test('message reads - GET /messages/{id} for every role, raw_content and flags', async (t) => {
  const { id } = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'one', content: 'some **bold** text' });
  for (const key of DEMO_KEYS) {
    const got = await s.api.as(s.demo[key]).ok('GET', `/messages/${id}`);
    t.equal(got.raw_content, 'some **bold** text', key);
    t.equal(got.message.content, '<p>some <strong>bold</strong> text</p>', key);
    t.same(got.message.flags, key === 'owner' ? [] : [], key);
    t.equal(got.message.id, id);
  }
  const md = await maria.ok('GET', `/messages/${id}`, { apply_markdown: false });
  t.equal(md.message.content, 'some **bold** text');
  t.equal(md.message.content_type, 'text/x-markdown');
  const r = await s.api.get(`/messages/${id}`, {}, { creds: null });
  t.equal(r.status, 401);
});

t.test('message reads - GET /messages/{id} refuses what the caller cannot read', async (t) => {
  const dm = (await admin.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: 'secret' })).id;
  const hidden = await maria.get(`/messages/${dm}`);
  t.equal(hidden.status, 400);
  t.same([hidden.body.code, hidden.body.msg], ['BAD_REQUEST', 'Invalid message(s)']);
  t.equal((await maria.get('/messages/999999999')).body.msg, 'Invalid message(s)');
  t.equal((await maria.get('/messages/abc')).body.var_name, 'message_id');
  // A public channel's history is readable by members who are not subscribed, not by guests.
  const open = uniq('open');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: open }] });
  const { id } = await owner.ok('POST', '/messages', { type: 'stream', to: open, topic: 'x', content: 'public' });
  t.same((await maria.ok('GET', `/messages/${id}`)).message.flags, ['read', 'historical']);
  t.equal((await s.api.as(s.demo.guest).get(`/messages/${id}`)).body.msg, 'Invalid message(s)');
});

t.test('message reads - matches_narrow keeps matching messages, with search highlights', async (t) => {
  const topic = uniq('Fox');
  const a = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'the quick brown fox' })).id;
  const b = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'other', content: 'a lazy dog' })).id;
  const dm = (await admin.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: 'fox in a dm' })).id;
  const r = await maria.ok('GET', '/messages/matches_narrow', { msg_ids: [a, b, dm], narrow: [{ operator: 'search', operand: 'fox' }] });
  t.same(Object.keys(r.messages), [String(a)]);
  t.equal(r.messages[a].match_content, '<p>the quick brown <span class="highlight">fox</span></p>');
  t.equal(r.messages[a].match_subject, topic.replace(/Fox/, '<span class="highlight">Fox</span>'));
  const byTopic = await maria.ok('GET', '/messages/matches_narrow', { msg_ids: [a, b], narrow: [{ operator: 'topic', operand: 'other' }] });
  t.same(byTopic.messages, { [b]: { match_content: '<p>a lazy dog</p>', match_subject: 'other' } });
  const negated = await maria.ok('GET', '/messages/matches_narrow', { msg_ids: [a, b], narrow: [{ operator: 'topic', operand: 'other', negated: true }] });
  t.same(Object.keys(negated.messages), [String(a)]);
  t.equal((await maria.get('/messages/matches_narrow', { msg_ids: [a], narrow: [{ operator: 'nope', operand: 'x' }] })).body.code, 'BAD_NARROW');
  // GET /messages with a search narrow carries the same highlights.
  const searched = await maria.ok('GET', '/messages', { anchor: a, num_before: 0, num_after: 0, narrow: [{ operator: 'search', operand: 'fox' }] });
  t.equal(searched.messages[0].match_content, r.messages[a].match_content);
  t.equal(searched.messages[0].match_subject, r.messages[a].match_subject);
  t.equal((await maria.get('/messages/matches_narrow', { narrow: [] })).body.var_name, 'msg_ids');
  t.equal((await s.api.get('/messages/matches_narrow', { msg_ids: [a], narrow: [] }, { creds: null })).status, 401);
});

t.test('message reads - the Python client reads a message with get_raw_message', async (t) => {
  const { id } = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'py', content: 'raw *text*' });
  const out = runPython(s.urls[0]!, s.demo.member1, `print(json.dumps(client.get_raw_message(${id})))`) as { raw_content: string };
  t.equal(out.raw_content, 'raw *text*');
});
