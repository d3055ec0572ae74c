// Sign-in by token (POST /jwt/fetch_api_key, FL 160): HS256 and RS256 keys
// configured for the organization, and the errors for every bad case.
//
// The keys are configuration of the gateway process, so this file starts its
// own embedded server with them, in both test modes; against the shared
// server (the cluster, in cluster runs) it checks the answer when token
// sign-in is not configured.
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import t from 'tap';
import { runPython } from './helpers/python.ts';
import { isError } from './helpers/roles.ts';
import { serverFor, type TestServer } from './helpers/server.ts';

const SECRET = 'a-long-shared-secret-for-hs256-tokens!';
const rsa = await generateKeyPair('RS256', { extractable: true });
const keys = { '1': [{ key: SECRET, algorithms: ['HS256'] }, { key: await exportSPKI(rsa.publicKey), algorithms: ['RS256'] }] };

const shared = await serverFor(t);
const saved = process.env.PARLEY_TEST_GATEWAYS;
delete process.env.PARLEY_TEST_GATEWAYS;
let s: TestServer;
try {
  s = await serverFor(t, { env: { PARLEY_JWT_AUTH_KEYS: JSON.stringify(keys) } });
} finally {
  if (saved !== undefined) process.env.PARLEY_TEST_GATEWAYS = saved;
}

const hs = (claims: Record<string, unknown>, exp = '5m') => new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime(exp).sign(new TextEncoder().encode(SECRET));
const rs = (claims: Record<string, unknown>) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256' }).setIssuedAt().setExpirationTime('5m').sign(rsa.privateKey);

t.test('jwt - an HS256 or RS256 token naming a user gives their API key', async (t) => {
  const byHs = await s.api.ok('POST', '/jwt/fetch_api_key', { token: await hs({ email: s.demo.member1.email }) });
  t.equal(byHs.email, s.demo.member1.email);
  t.match(byHs.api_key, /^[A-Za-z0-9]{32}$/, 'a new key: keys are kept as hashes, so each sign-in issues one');
  t.notOk('user' in byHs);
  const byRs = await s.api.ok('POST', '/jwt/fetch_api_key', { token: await rs({ email: s.demo.owner.email.toUpperCase() }), include_profile: true });
  t.not(byRs.api_key, byHs.api_key);
  t.match(byRs.user, { user_id: s.demo.owner.userId, email: s.demo.owner.email, role: 100, is_owner: true });
  // The keys work for the API, as their users; the keys the users had keep working too.
  const me = await s.api.as({ email: byHs.email, apiKey: byHs.api_key }).ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  t.equal(me.user_id, s.demo.member1.userId);
  const owner = await s.api.as({ email: s.demo.owner.email, apiKey: byRs.api_key }).ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  t.equal(owner.user_id, s.demo.owner.userId);
  await s.api.as(s.demo.member1).ok('GET', '/users/me/subscriptions');
});

t.test('jwt - bad tokens get clear errors', async (t) => {
  const other = await new SignJWT({ email: s.demo.member1.email }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('some-other-secret-entirely-0123456789'));
  isError(t, await s.api.post('/jwt/fetch_api_key', { token: other }), 400, 'BAD_REQUEST', /^Bad JSON web token$/, 'bad signature');
  isError(t, await s.api.post('/jwt/fetch_api_key', { token: 'not.a.token' }), 400, 'BAD_REQUEST', /^Bad JSON web token$/, 'malformed');
  isError(t, await s.api.post('/jwt/fetch_api_key', { token: await hs({ email: s.demo.member1.email }, '-1m') }), 400, 'BAD_REQUEST', /Bad JSON web token: the token has expired/, 'expired');
  const none = await new SignJWT({ email: s.demo.member1.email }).setProtectedHeader({ alg: 'none' } as never).sign(new Uint8Array(32)).catch(() => 'eyJhbGciOiJub25lIn0.eyJlbWFpbCI6Im1hcmlhQHBhcmxleS5leGFtcGxlIn0.');
  isError(t, await s.api.post('/jwt/fetch_api_key', { token: none }), 400, 'BAD_REQUEST', /Bad JSON web token/, 'alg none');
  isError(t, await s.api.post('/jwt/fetch_api_key', { token: await hs({ name: 'no email' }) }), 400, 'BAD_REQUEST', /No email specified/, 'no email claim');
  isError(t, await s.api.post('/jwt/fetch_api_key', { token: await hs({ email: 'ghost@nowhere.example' }) }), 401, 'AUTHENTICATION_FAILED', /username or password is incorrect/, 'unknown user');
  isError(t, await s.api.post('/jwt/fetch_api_key', { token: await hs({ email: '' }) }), 401, 'AUTHENTICATION_FAILED', undefined, 'empty email');
  isError(t, await s.api.post('/jwt/fetch_api_key', {}), 400, 'BAD_REQUEST', /No JSON web token passed/, 'no token');
  isError(t, await s.api.post('/jwt/fetch_api_key', { token: await hs({ email: s.demo.member1.email }), include_profile: 'maybe' }), 400, 'BAD_REQUEST', /Invalid include_profile/);
});

t.test('jwt - without keys configured for the organization', async (t) => {
  const r = await shared.api.post('/jwt/fetch_api_key', { token: await hs({ email: shared.demo.member1.email }) });
  if (process.env.PARLEY_JWT_AUTH_KEYS) t.equal(r.status, 200, 'this run configured keys');
  else isError(t, r, 400, 'BAD_REQUEST', /JWT authentication is not enabled for this organization/);
});

t.test('python client - exchange a token for an API key', async (t) => {
  const token = await hs({ email: s.demo.member2.email });
  // zulip 0.9.1 has no method for it; any client may call it (no credentials needed).
  const out = runPython(s.urls[0]!, s.demo.member2, `
r = client.call_endpoint("jwt/fetch_api_key", method="POST", request={"token": ${JSON.stringify(token)}, "include_profile": True})
print(json.dumps({"key": r["api_key"], "uid": r["user"]["user_id"]}))`) as Record<string, any>;
  t.equal(out.uid, s.demo.member2.userId);
  const me = await s.api.as({ email: s.demo.member2.email, apiKey: out.key }).ok('POST', '/register', { fetch_event_types: ['realm_user'] });
  t.equal(me.user_id, s.demo.member2.userId, 'the key the client got works');
});
