/**
 * Rate limits over HTTP (`gateway/rate_limits.ts`). The per-user budget runs
 * with the defaults against the server under test (in the cluster run: both
 * gateways, counting in Redis) with a user of its own, so no other test's
 * users lose budget. The per-address budgets are shared by every test on
 * this machine, so they are tried on an embedded server of their own with
 * small budgets.
 */
import t, { type Test } from 'tap';
import { Api, type ApiResponse } from './helpers/api.ts';
import { newPerson } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

/** The 429 as Zulip answers it: code, retry-after in the body and the header, the budget's headers. */
function assertLimited(t: Test, r: ApiResponse, limit: number): number {
  t.equal(r.status, 429);
  t.match(r.body, { result: 'error', msg: 'API usage exceeded rate limit', code: 'RATE_LIMIT_HIT' });
  const retryAfter = r.body['retry-after'];
  t.type(retryAfter, 'number');
  t.ok(retryAfter > 0, `retry-after ${retryAfter} s`);
  t.equal(r.headers.get('retry-after'), String(Math.max(1, Math.ceil(retryAfter))), 'Retry-After header: the wait, rounded up');
  t.equal(r.headers.get('x-ratelimit-limit'), String(limit));
  t.equal(r.headers.get('x-ratelimit-remaining'), '0');
  return retryAfter;
}

t.test('rate limits - a user over the default 200 requests a minute gets 429 RATE_LIMIT_HIT, other users do not', async (t) => {
  const me = await newPerson(s);
  // Alternate gateways (cluster run): they count against one budget.
  const apis = s.urls.map((u) => new Api(u).as(me));
  const first = await apis[0]!.call('GET', '/users/me');
  t.equal(first.status, 200);
  t.equal(first.headers.get('x-ratelimit-limit'), '200');
  t.equal(first.headers.get('x-ratelimit-remaining'), '199');
  const reset = Number(first.headers.get('x-ratelimit-reset'));
  t.ok(reset >= Date.now() / 1000 && reset <= Date.now() / 1000 + 2, 'X-RateLimit-Reset: Unix time the budget is whole again');
  let allowed = 1;
  let refused: ApiResponse | null = null;
  for (let i = 1; i < 260 && !refused; i++) {
    const r = await apis[i % apis.length]!.call('GET', '/users/me');
    if (r.status === 200) allowed++;
    else refused = r;
  }
  // A request is made good every 0.3 s, so a slow run may get a few more.
  t.ok(allowed >= 200 && allowed <= 210, `${allowed} requests allowed before the first 429`);
  const retryAfter = assertLimited(t, refused!, 200);
  t.ok(retryAfter <= 0.31, 'one more request in at most 60/200 s');
  const other = await s.api.as(s.demo.member1).call('GET', '/users/me');
  t.equal(other.status, 200, 'another user keeps its budget');
  // The budget gains one request every 0.3 s: the calls above may have given it one back (a slow
  // cluster run did), which a send then uses; the next send meets the empty budget.
  let refusedSend = await apis[0]!.call('POST', '/messages', { type: 'stream', to: 'general', topic: 'limits', content: 'over the limit' });
  for (let i = 0; i < 3 && refusedSend.status === 200; i++) refusedSend = await apis[0]!.call('POST', '/messages', { type: 'stream', to: 'general', topic: 'limits', content: 'over the limit' });
  t.equal(refusedSend.status, 429, 'refused before any actor call: a send too');
  await sleep(Math.ceil(refusedSend.body['retry-after'] * 1000) + 50);
  t.equal((await apis[0]!.call('GET', '/users/me')).status, 200, 'allowed again after retry-after');
});

t.test('rate limits - wrong API keys are cut off per address before the realm checks them', async (t) => {
  const own = await serverFor(t, { env: { PARLEY_RATE_LIMIT_AUTH_FAILURES: '5/600', PARLEY_AUTH_CACHE_MS: '60000' } });
  const owner = own.api.as(own.demo.owner);
  t.equal((await owner.call('GET', '/users/me')).status, 200, 'the owner signs in before (cached)');
  const statuses = new Map<number, number>();
  let last: Response | null = null;
  for (let i = 0; i < 200; i++) {
    last = await fetch(`${own.urls[0]}/api/v1/users/me`, { headers: { authorization: basic(own.demo.member1.email, `guess-${i}`) } });
    statuses.set(last.status, (statuses.get(last.status) ?? 0) + 1);
  }
  t.same(Object.fromEntries(statuses), { 401: 5, 429: 195 }, '5 wrong keys answered 401, the rest 429 without being checked');
  const body = await last!.json();
  t.equal(body.code, 'RATE_LIMIT_HIT');
  t.ok(body['retry-after'] > 0 && body['retry-after'] <= 120, `retry-after ${body['retry-after']}: one more try every 120 s`);
  t.equal(last!.headers.get('x-ratelimit-limit'), '5');
  const right = await fetch(`${own.urls[0]}/api/v1/users/me`, { headers: { authorization: basic(own.demo.member1.email, own.demo.member1.apiKey) } });
  t.equal(right.status, 429, 'a key not yet verified is not checked either while the address is blocked');
  t.equal((await owner.call('GET', '/users/me')).status, 200, 'a user already signed in from the address keeps working');
  const noHeader = await fetch(`${own.urls[0]}/api/v1/users/me`);
  t.equal(noHeader.status, 401, 'no credentials at all: nothing to verify, the usual 401');
});

t.test('rate limits - without credentials, per address; wrong passwords count as failed authentications', async (t) => {
  const own = await serverFor(t, { env: { PARLEY_RATE_LIMIT_IP: '8/600', PARLEY_RATE_LIMIT_AUTH_FAILURES: '3/600' } });
  const anonymous = new Api(own.urls[0]!);
  const first = await anonymous.call('GET', '/server_settings');
  t.equal(first.status, 200);
  t.equal(first.headers.get('x-ratelimit-limit'), '8');
  t.equal(first.headers.get('x-ratelimit-remaining'), '7');
  const wrong = [];
  for (let i = 0; i < 5; i++) wrong.push((await anonymous.call('POST', '/fetch_api_key', { username: own.demo.member1.email, password: `guess-${i}` })).status);
  t.same(wrong, [401, 401, 401, 429, 429], 'three wrong passwords, then refused before the password is checked');
  t.equal((await owner(own).call('GET', '/users/me')).status, 200, 'authenticated requests do not count against the address');
  const rest = [];
  for (let i = 0; i < 3; i++) rest.push((await anonymous.call('GET', '/server_settings')).status);
  t.same(rest, [200, 200, 429], 'the address used its 8 requests (1 + 5 + 2)');
  const refused = await anonymous.call('GET', '/server_settings');
  assertLimited(t, refused, 8);
});

function owner(server: typeof s): Api {
  return server.api.as(server.demo.owner);
}
