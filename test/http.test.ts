import t from 'tap';
import { serverFor } from './helpers/server.ts';
import { uniq } from './helpers/api.ts';
import { ADVERTISED } from './helpers/features.ts';

const s = await serverFor(t);
const base = s.urls[0]!;
const owner = s.api.as(s.demo.owner);
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

t.test('http - authentication failures are 401 envelopes; other schemes are 400', async (t) => {
  const none = await fetch(`${base}/api/v1/users`);
  t.equal(none.status, 401);
  t.same(await none.json(), { result: 'error', msg: 'Missing authorization header for basic auth', code: 'UNAUTHORIZED' });
  const wrong = await fetch(`${base}/api/v1/users`, { headers: { authorization: basic(s.demo.owner.email, 'wrong-key') } });
  t.equal(wrong.status, 401);
  t.equal((await wrong.json()).msg, 'Invalid API key');
  t.match(wrong.headers.get('www-authenticate') ?? '', /^Basic realm=/);
  const otherUser = await fetch(`${base}/api/v1/users`, { headers: { authorization: basic(s.demo.member1.email, s.demo.owner.apiKey) } });
  t.equal(otherUser.status, 401, 'the email must match the key\'s user');
  const caseless = await fetch(`${base}/api/v1/users`, { headers: { authorization: basic(s.demo.owner.email.toUpperCase(), s.demo.owner.apiKey) } });
  t.equal(caseless.status, 200, 'emails compare case-insensitively');
  const garbage = await fetch(`${base}/api/v1/users`, { headers: { authorization: 'Basic !!!not-base64' } });
  t.equal(garbage.status, 401);
  t.equal((await garbage.json()).result, 'error');
  const bearer = await fetch(`${base}/api/v1/users`, { headers: { authorization: 'Bearer abc' } });
  t.equal(bearer.status, 400);
  t.equal((await bearer.json()).result, 'error');
});

t.test('http - unknown paths are 404 and wrong methods 405, in the envelope', async (t) => {
  const missing = await fetch(`${base}/api/v1/no/such/thing`);
  t.equal(missing.status, 404);
  t.equal((await missing.json()).result, 'error');
  const root = await fetch(`${base}/nothing-here`);
  t.equal(root.status, 404);
  const method = await fetch(`${base}/api/v1/register`, { method: 'PUT', headers: { authorization: basic(s.demo.owner.email, s.demo.owner.apiKey) } });
  t.equal(method.status, 405);
  t.equal((await method.json()).result, 'error');
});

t.test('http - parameters from the query string, urlencoded and multipart bodies', async (t) => {
  const ch = uniq('enc');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: ch }] }, { encoding: 'multipart' });
  const q = await owner.ok('POST', '/messages', { type: 'stream', to: ch, topic: 'q', content: 'via query' }, { encoding: 'query' });
  const f = await owner.ok('POST', '/messages', { type: 'stream', to: ch, topic: 'f', content: 'via form' }, { encoding: 'form' });
  const m = await owner.ok('POST', '/messages', { type: 'stream', to: ch, topic: 'm', content: 'via multipart' }, { encoding: 'multipart' });
  const got = await owner.ok('GET', '/messages', { anchor: q.id, num_before: 0, num_after: 5, apply_markdown: false, narrow: [['stream', ch]] });
  t.same(got.messages.map((x: any) => [x.id, x.content]), [[q.id, 'via query'], [f.id, 'via form'], [m.id, 'via multipart']]);
});

t.test('http - unsupported parameters are listed in ignored_parameters_unsupported', async (t) => {
  const r = await owner.ok('GET', '/users/me/subscriptions', { frobnicate: 'yes', include_subscribers: false });
  t.same(r.ignored_parameters_unsupported, ['frobnicate']);
  const clean = await owner.ok('GET', '/users/me/subscriptions');
  t.notOk('ignored_parameters_unsupported' in clean);
});

t.test('http - malformed input: bad JSON, wrong types, bodies too large or of unknown type', async (t) => {
  const badJson = await owner.post('/register', { event_types: '["message"' });
  t.equal(badJson.status, 400);
  t.match(badJson.body.msg, /Invalid event_types: is not valid JSON/);
  t.equal(badJson.body.var_name, 'event_types');
  const wrongType = await owner.post('/register', { event_types: '{"a": 1}' });
  t.equal(wrongType.status, 400);
  const notBool = await owner.post('/register', { apply_markdown: 'maybe' });
  t.equal(notBool.status, 400);
  const notInt = await owner.get('/events', { queue_id: 'x', last_event_id: 'abc' });
  t.equal(notInt.status, 400);
  t.match(notInt.body.msg, /Invalid last_event_id/);
  const huge = await fetch(`${base}/api/v1/messages`, {
    method: 'POST',
    headers: { authorization: basic(s.demo.owner.email, s.demo.owner.apiKey), 'content-type': 'application/x-www-form-urlencoded' },
    body: `type=stream&to=general&topic=big&content=${'x'.repeat(2 * 1024 * 1024)}`,
  }).catch((e: Error) => e);
  if (huge instanceof Error) t.fail(`connection error instead of 413: ${huge.message}`);
  else {
    t.equal(huge.status, 413);
    t.equal((await huge.json()).result, 'error');
  }
  const json = await fetch(`${base}/api/v1/messages`, {
    method: 'POST',
    headers: { authorization: basic(s.demo.owner.email, s.demo.owner.apiKey), 'content-type': 'application/json' },
    body: '{"type":"stream"}',
  });
  t.equal(json.status, 415);
  t.equal((await json.json()).result, 'error');
  const brokenMultipart = await fetch(`${base}/api/v1/messages`, {
    method: 'POST',
    headers: { authorization: basic(s.demo.owner.email, s.demo.owner.apiKey), 'content-type': 'multipart/form-data' },
    body: '--x\r\ngarbage',
  });
  t.equal(brokenMultipart.status, 400);
  const alive = await owner.ok('GET', '/users');
  t.ok(alive.members.length >= 5, 'the server is still up after all of that');
});

t.test('http - health, readiness and server settings need no credentials', async (t) => {
  t.equal((await fetch(`${base}/healthz`)).status, 200);
  t.equal((await fetch(`${base}/readyz`)).status, 200);
  const settings = await s.api.ok('GET', '/server_settings');
  t.equal(settings.service_feature_level, ADVERTISED, 'the level derived from the feature table (lib/features.ts)');
  t.equal(settings.zulip_feature_level, ADVERTISED);
  t.equal(settings.realm_name, 'Parley Demo');
});

t.test('http - strings are kept as sent (only a channel name may come JSON-encoded); a message with a NUL is refused', async (t) => {
  const topic = uniq('verbatim');
  const quoted = await owner.ok('POST', '/messages', { type: 'stream', to: JSON.stringify('general'), topic, content: '"quoted text"' });
  const got = (await owner.ok('GET', `/messages/${quoted.id}`, { apply_markdown: false })).message;
  t.equal(got.content, '"quoted text"', 'content that looks like a JSON string keeps its quotes');
  t.equal(got.display_recipient, 'general', 'a channel name may be JSON-encoded');
  const topicQuoted = await owner.ok('POST', '/messages', { type: 'stream', to: 'general', topic: `"${topic}"`, content: 'x' });
  t.equal((await owner.ok('GET', `/messages/${topicQuoted.id}`)).message.subject, `"${topic}"`, 'so does a topic');
  const nul = await owner.post('/messages', { type: 'stream', to: 'general', topic, content: 'a\u0000b' });
  t.same([nul.status, nul.body.code, nul.body.msg], [400, 'BAD_REQUEST', 'Message must not contain null bytes']);
  const history = await owner.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, apply_markdown: false, narrow: [{ operator: 'topic', operand: topic }] });
  t.notOk(history.messages.some((m: any) => m.content.includes('\u0000')), 'and nothing is stored');
  const edit = await owner.call('PATCH', `/messages/${quoted.id}`, { content: 'c\u0000d' });
  t.equal(edit.body.msg, 'Message must not contain null bytes', 'nor by an edit');
});

t.test('http - unknown parameters are capped: at most 200 per request, at most 50 named back, each name cut at 100 characters', async (t) => {
  const many = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`p${i}`, 'x']));
  const refused = await owner.call('GET', '/users/me', many);
  t.same([refused.status, refused.body.msg], [400, 'Too many parameters (limit: 200)']);
  // Each request stays under 4 KB of URL: uWS 20.30 closes a request whose headers pass 4 KB when they
  // arrive in more than one read (docs/architecture.md, Limits), which a longer URL may or may not do.
  const many60 = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`u${i}`, 'x']));
  t.equal((await owner.ok('GET', '/users/me', many60)).ignored_parameters_unsupported.length, 50, 'fifty named');
  const long = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`${'n'.repeat(300)}${i}`, 'x']));
  const r = await owner.ok('GET', '/users/me', long);
  t.equal(r.ignored_parameters_unsupported.length, 8);
  t.ok(r.ignored_parameters_unsupported.every((n: string) => [...n].length <= 101), 'each name cut short');
});
