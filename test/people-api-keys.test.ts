// API keys: POST /fetch_api_key (the way zulip-terminal logs in) and POST
// /users/me/api_key/regenerate.
import t from 'tap';
import { Api, uniq } from './helpers/api.ts';
import { callers, newPerson, outcome, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);
const anonymous = new Api(s.api.base);
const otherGateway = (creds: { email: string; apiKey: string }) => new Api(s.urls[s.urls.length - 1]!, creds);
const WRONG = '401 AUTHENTICATION_FAILED Your username or password is incorrect';

t.test('people api keys - fetch_api_key: email and password give a working key', async (t) => {
  const email = `${uniq('login')}@parley.example`;
  const { user_id } = await as.owner.ok('POST', '/users', { email, password: 'correct horse', full_name: 'Log In' });
  const before = (await as.owner.ok('GET', `/users/${user_id}`)).user.date_joined;
  await new Promise((r) => setTimeout(r, 20));
  const first = await anonymous.ok('POST', '/fetch_api_key', { username: email, password: 'correct horse' });
  t.same(Object.keys(first).sort(), ['api_key', 'email', 'msg', 'result', 'user_id']);
  t.equal(first.email, email);
  t.equal(first.user_id, user_id);
  t.match(first.api_key, /^[A-Za-z0-9]{32}$/);
  const me = await new Api(s.api.base, { email, apiKey: first.api_key }).ok('GET', '/users/me');
  t.equal(me.user_id, user_id);
  const after = (await as.owner.ok('GET', `/users/${user_id}`)).user.date_joined;
  t.ok(after > before, 'date_joined of an API-created user becomes the first login (FL 475)');

  const second = await anonymous.ok('POST', '/fetch_api_key', { username: email.toUpperCase(), password: 'correct horse' });
  t.not(second.api_key, first.api_key, 'each login issues its own key');
  t.equal(outcome(await new Api(s.api.base, { email, apiKey: first.api_key }).call('GET', '/users/me')), 'ok', 'the earlier key still works');
  t.equal((await as.owner.ok('GET', `/users/${user_id}`)).user.date_joined, after, 'only the first login sets date_joined');

  t.equal(outcome(await anonymous.call('POST', '/fetch_api_key', { username: email, password: 'wrong' }), true), WRONG);
  t.equal(outcome(await anonymous.call('POST', '/fetch_api_key', { username: 'nobody@parley.example', password: 'x' }), true), WRONG);
  t.equal(outcome(await anonymous.call('POST', '/fetch_api_key', { username: s.demo.member1.email, password: '' }), true), WRONG, 'a user without a password cannot log in with one');
  t.equal(outcome(await anonymous.call('POST', '/fetch_api_key', { username: email }), true), "400 REQUEST_VARIABLE_MISSING Missing 'password' argument");
  t.equal(outcome(await as.member.call('POST', '/fetch_api_key', { username: email, password: 'correct horse' })), 'ok', 'credentials of another user change nothing');

  await as.owner.ok('DELETE', `/users/${user_id}`);
  t.equal(outcome(await anonymous.call('POST', '/fetch_api_key', { username: email, password: 'correct horse' }), true), '401 USER_DEACTIVATED Account is deactivated');
});

t.test('people api keys - regenerate: a new key, and the old ones stop at once, for every role', async (t) => {
  for (const [name, role] of Object.entries(ROLE)) {
    const p = await newPerson(s, role);
    const extra = await anonymous.ok('POST', '/fetch_api_key', { username: p.email, password: p.password });
    t.equal(outcome(await otherGateway(p).call('GET', '/users/me')), 'ok');
    const r = await s.api.as(p).ok('POST', '/users/me/api_key/regenerate');
    t.match(r.api_key, /^[A-Za-z0-9]{32}$/);
    t.equal(outcome(await otherGateway(p).call('GET', '/users/me')), '401 UNAUTHORIZED', `${name}: the old key is refused at once, on every gateway`);
    t.equal(outcome(await otherGateway({ email: p.email, apiKey: extra.api_key }).call('GET', '/users/me')), '401 UNAUTHORIZED', `${name}: so is every other older key`);
    t.equal(outcome(await otherGateway({ email: p.email, apiKey: r.api_key }).call('GET', '/users/me')), 'ok', `${name}: the new key works`);
  }
  t.equal(outcome(await anonymous.call('POST', '/users/me/api_key/regenerate')), '401 UNAUTHORIZED');
});

// The demo bot's key is in the zuliprc files other suites read in a cluster run: only an embedded server of our own may change it.
t.test('people api keys - a bot regenerates its own key', { skip: process.env.PARLEY_TEST_GATEWAYS ? 'changes the demo bot key other suites share in a cluster run' : false }, async (t) => {
  const r = await as.bot.ok('POST', '/users/me/api_key/regenerate');
  t.equal(outcome(await as.bot.call('GET', '/users/me')), '401 UNAUTHORIZED');
  t.equal(outcome(await new Api(s.api.base, { email: s.demo.bot.email, apiKey: r.api_key }).call('GET', '/users/me')), 'ok');
});

/** XORs two hex strings digit by digit (Zulip's `xor_hex_strings`), as the mobile app decrypts the key it is sent. */
const xorHex = (a: string, b: string) => [...a].map((d, i) => (parseInt(d, 16) ^ parseInt(b[i]!, 16)).toString(16)).join('');
const page = (path: string, body?: Record<string, string>) =>
  fetch(`${s.urls[0]}${path}`, { method: body ? 'POST' : 'GET', redirect: 'manual', ...(body ? { body: new URLSearchParams(body) } : {}) });

t.test('people api keys - the mobile login flow: /login/ with mobile_flow_otp redirects to zulip:// with the key encrypted by the pad, user_id included (FL 108)', async (t) => {
  const { realm_url } = await anonymous.ok('GET', '/server_settings');
  for (const [name, role] of Object.entries(ROLE)) {
    const p = await newPerson(s, role);
    const otp = [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, '0')).join('');
    const form = await page(`/login/?mobile_flow_otp=${otp}`);
    const html = await form.text();
    t.equal(form.status, 200, `${name}: the form`);
    t.match(html, new RegExp(`name="mobile_flow_otp" value="${otp}"`), 'the pad is carried by the form');
    const r = await page('/accounts/login/', { username: p.email, password: p.password, mobile_flow_otp: otp });
    t.equal(r.status, 302, `${name}: redirected`);
    const to = new URL(r.headers.get('location')!);
    t.equal(`${to.protocol}//${to.host}`, 'zulip://login');
    t.same([...to.searchParams.keys()].sort(), ['email', 'otp_encrypted_api_key', 'realm', 'user_id']);
    t.equal(to.searchParams.get('email'), p.email);
    // By host: each process of the test cluster has a site URL of its own port (one in a deployment).
    t.equal(new URL(to.searchParams.get('realm')!).hostname, new URL(realm_url).hostname, 'the organization URL, as GET /server_settings gives it');
    const apiKey = Buffer.from(xorHex(to.searchParams.get('otp_encrypted_api_key')!, otp), 'hex').toString('ascii');
    t.match(apiKey, /^[A-Za-z0-9]{32}$/, 'the key, once decrypted with the pad');
    const me = await new Api(s.api.base, { email: p.email, apiKey }).ok('GET', '/users/me');
    t.equal(me.user_id, Number(to.searchParams.get('user_id')), `${name}: the decrypted key works, for the user_id given`);
    t.equal(me.user_id, p.userId);
  }
  const otp = 'ab'.repeat(32);
  for (const bad of ['abc', 'g'.repeat(64), 'ab'.repeat(33)]) {
    t.equal((await page(`/login/?mobile_flow_otp=${bad}`)).status, 400, `GET: ${bad.slice(0, 10)} is not a pad`);
    const r = await page('/accounts/login/', { username: s.demo.owner.email, password: 'x', mobile_flow_otp: bad });
    t.equal(r.status, 400);
    t.match(await r.text(), /Invalid OTP/);
  }
  const wrong = await page('/accounts/login/', { username: s.demo.owner.email, password: 'not the password', mobile_flow_otp: otp });
  t.equal(wrong.status, 401, 'a wrong password: no redirect');
  t.match(await wrong.text(), /Your username or password is incorrect/);
  const p = await newPerson(s, ROLE.member);
  await as.owner.ok('DELETE', `/users/${p.userId}`);
  const gone = await page('/accounts/login/', { username: p.email, password: p.password, mobile_flow_otp: otp });
  t.equal(gone.status, 401, 'a deactivated user: no redirect');
  t.match(await gone.text(), /Account is deactivated/);
  const plain = await page('/accounts/login/', { username: s.demo.owner.email, password: 'not the password' });
  t.equal(plain.status, 401, 'without the pad too');
});
