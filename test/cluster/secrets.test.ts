// No process ever logs a key, password or token: a production-configured
// cluster (PARLEY_PRODUCTION=true: no demo; two gateways, two actor nodes,
// a keyspace, Redis prefix and NATS namespace of its own, debug logging) is
// taken through what handles secrets: an organization created with its
// owner over the bus (as `parley org create` does), a creation link used
// through the page, fetch_api_key with a password (and a wrong one), an API
// key regenerated, a wrong key tried, messages sent, a file downloaded with
// ?api_key= and through a temporary URL. Then every line every process wrote
// is searched for every secret the test saw.
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { DIRECTORY_ID, directoryRef, SERVER_CALLER } from '../../actors/directory/ref.ts';
import { Role } from '../../actors/model.ts';
import { ActorClient } from '../../actors/runtime/client.ts';
import { NatsBus } from '../../actors/runtime/nats-bus.ts';
import { ApiError } from '../../lib/errors.ts';
import { logOptions } from '../../lib/log.ts';
import { type ClusterProcess, freePort, launchCluster, stopAll } from '../../scripts/cluster-launcher.ts';
import { dropKeyspace } from '../../scripts/drop-keyspace.ts';
import { atHost } from '../org-creation-http.ts';

const SHARDS = 64;
const tag = `s${process.pid}${randomBytes(2).toString('hex')}`;
const demoDir = mkdtempSync(join(tmpdir(), 'parley-secrets-'));
const ports = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
const env: Record<string, string> = {
  PARLEY_PRODUCTION: 'true',
  PARLEY_DEMO_DIR: demoDir,
  PARLEY_CASSANDRA_KEYSPACE: `parley_${tag}`,
  PARLEY_REDIS_PREFIX: `parley_${tag}`,
  PARLEY_SHARDS: String(SHARDS),
  PARLEY_LEASE_TTL_MS: '4000',
  PARLEY_REQUEST_TIMEOUT_MS: '5000',
  // The most a process ever says (production runs at info).
  PARLEY_LOG_LEVEL: 'debug',
  PARLEY_SITE_URL: `http://localhost:${ports[0]}`,
};

/** Everything a process wrote: what the launcher kept while it started (all of it, checked), then every chunk after. */
function record(p: ClusterProcess): () => string {
  let text = p.output();
  // The launcher keeps the last 20,000 characters: shorter, it is all the process wrote so far.
  if (text.length >= 20_000) throw new Error(`${p.name} wrote more than the launcher keeps while starting: its first lines are lost`);
  const add = (d: Buffer) => (text += d.toString());
  p.child.stdout!.on('data', add);
  p.child.stderr!.on('data', add);
  return () => text;
}

const services = { ...process.env, ...env };
const bus = await NatsBus.connect(services.PARLEY_NATS_URL ?? 'nats://127.0.0.1:4222', `secrets-test-${tag}`, { namespace: `parley_${tag}` });
const procs = await launchCluster({ demoDir, env, ports });
const outputs = new Map(procs.map((p) => [p.name, record(p)]));
t.teardown(async () => {
  await stopAll(procs);
  await bus.close();
  rmSync(demoDir, { recursive: true, force: true });
  await dropKeyspace(env.PARLEY_CASSANDRA_KEYSPACE!, services);
});
const gateways = procs.filter((p) => p.role === 'gateway').map((p) => p.url);
const actors = new ActorClient(bus, SHARDS, 5000);

/** Every secret the test saw, by what it is. */
const secrets = new Map<string, string>();
const secret = (what: string, value: string) => {
  secrets.set(what, value);
  return value;
};
const basic = (email: string, key: string) => Buffer.from(`${email}:${key}`).toString('base64');

/** A directory call, retried while the cluster's shards are still being taken (503). */
async function directory<T>(call: () => Promise<T>): Promise<T> {
  for (const deadline = Date.now() + 60_000; ; ) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 503) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

t.test('secrets - the log redaction of lib/log.ts hides credentials in the shapes the server logs', async (t) => {
  let out = '';
  const sink = new Writable({ write: (chunk, _enc, done) => ((out += chunk.toString()), done()) });
  const log = pino({ ...logOptions, level: 'debug' }, sink);
  log.info({ apiKey: 'KEY-top', password: 'PW-top', token: 'TOKEN-top', headers: { authorization: 'Basic AUTH-header' }, body: { password: 'PW-nested', api_key: 'KEY-nested' } }, 'fields');
  log.error({ err: new Error('boom'), url: '/new/Tok3nTok3nTok3nTok3nTok3nTok3nXY' }, 'request failed');
  log.error({ url: '/join/AbCdEfGhIjKlMnOpQrStUvWx' }, 'request failed');
  log.error({ url: '/user_uploads/temporary/eyJ1IjoxLCJwIjoiMS9hYi9jZCJ9.Sig_naTure-x/notes.bin' }, 'request failed');
  for (const s of ['KEY-top', 'PW-top', 'TOKEN-top', 'AUTH-header', 'PW-nested', 'KEY-nested', 'Tok3nTok3n', 'AbCdEfGhIjKlMnOpQrStUvWx', 'eyJ1IjoxLCJwIjoiMS9hYi9jZCJ9', 'Sig_naTure']) t.notMatch(out, s, `${s} is redacted`);
  t.match(out, '/new/[redacted]', 'a link\'s path is logged without its token');
  t.match(out, '/user_uploads/temporary/[redacted]/notes.bin', 'a temporary URL without its token');
});

t.test('secrets - a production cluster never logs a key, password or token', async (t) => {
  const [g1, g2] = gateways as [string, string];
  t.equal((await atHost(g1, '', 'GET', '/api/v1/server_settings')).body.realm_name, undefined, 'production: no demo organization at the root');

  // An organization and its owner, as the CLI creates them (the key is in the reply, once); at the site's own host.
  const alpha = { email: 'owner@alpha.example', password: secret('alpha owner password', `pw-${randomBytes(12).toString('hex')}`) };
  const created = await directory(() =>
    actors.call(directoryRef, DIRECTORY_ID, { type: 'createOrganization', caller: SERVER_CALLER, subdomain: '', name: 'Alpha', users: [{ email: alpha.email, fullName: 'Alpha Owner', role: Role.OWNER, password: alpha.password }] }),
  );
  const alphaKey = secret('alpha owner key (creation reply)', created.users[0]!.apiKey!);
  secret('alpha owner Basic credentials', basic(alpha.email, alphaKey));

  // A creation link used through the page, on the other gateway.
  const token = secret('creation link token', (await directory(() => actors.call(directoryRef, DIRECTORY_ID, { type: 'createOrganizationLink', caller: SERVER_CALLER }))).token);
  t.equal((await atHost(g2, '', 'GET', `/new/${token}`)).status, 200, 'the creation page');
  const beta = { email: 'owner@beta.example', password: secret('beta owner password', `pw-${randomBytes(12).toString('hex')}`) };
  const page = await atHost(g2, '', 'POST', `/new/${token}`, { name: 'Beta', subdomain: 'beta', full_name: 'Beta Owner', email: beta.email, password: beta.password, password2: beta.password });
  t.equal(page.status, 200);
  t.match(page.body, 'Beta is ready');
  const wrongPassword = secret('a wrong password tried', `typo-${randomBytes(12).toString('hex')}`);
  t.equal((await atHost(g2, 'beta', 'POST', '/api/v1/fetch_api_key', { username: beta.email, password: wrongPassword })).status, 401, 'a wrong password is refused');
  const fetched = await atHost(g1, 'beta', 'POST', '/api/v1/fetch_api_key', { username: beta.email, password: beta.password });
  t.equal(fetched.status, 200, 'fetch_api_key with the password chosen on the page');
  const betaKey = secret('beta owner key (fetch_api_key)', fetched.body.api_key);
  secret('beta owner Basic credentials', basic(beta.email, betaKey));
  const alphaFetched = await atHost(g2, '', 'POST', '/api/v1/fetch_api_key', { username: alpha.email, password: alpha.password });
  t.equal(alphaFetched.status, 200);
  secret('alpha owner key (fetch_api_key)', alphaFetched.body.api_key);

  // A regenerated key: the old one stops working, the new one works.
  const regenerated = await atHost(g1, 'beta', 'POST', '/api/v1/users/me/api_key/regenerate', {}, { email: beta.email, apiKey: betaKey });
  t.equal(regenerated.status, 200);
  const newKey = secret('beta owner key (regenerated)', regenerated.body.api_key);
  secret('beta owner Basic credentials (regenerated)', basic(beta.email, newKey));
  t.equal((await atHost(g2, 'beta', 'GET', '/api/v1/users/me', {}, { email: beta.email, apiKey: betaKey })).status, 401, 'the old key is refused');
  const wrongKey = secret('a wrong API key tried', randomBytes(24).toString('base64url').slice(0, 32));
  t.equal((await atHost(g1, '', 'GET', '/api/v1/users/me', {}, { email: alpha.email, apiKey: wrongKey })).status, 401, 'a wrong key is refused');

  // Messages in both organizations, through both gateways.
  for (const [sub, creds] of [['', { email: alpha.email, apiKey: alphaKey }], ['beta', { email: beta.email, apiKey: newKey }]] as const) {
    const me = await atHost(g1, sub, 'GET', '/api/v1/users/me', {}, creds);
    t.equal(me.status, 200, `${sub || "root"}: the owner's key works`);
    for (const [i, g] of [g1, g2, g1].entries()) {
      const sent = await atHost(g, sub, 'POST', '/api/v1/messages', { type: 'direct', to: [me.body.user_id], content: `note ${i}` }, creds);
      t.equal(sent.status, 200, `${sub || 'root'}: message ${i} sent`);
    }
  }

  // A file, downloaded with ?api_key= (Zulip's authenticated_uploads_api_view) and through a temporary URL, on the other gateway.
  const fd = new FormData();
  fd.append('file', new Blob([randomBytes(1024)], { type: 'application/octet-stream' }), 'notes.bin');
  const basicAlpha = { authorization: `Basic ${basic(alpha.email, alphaKey)}` };
  const uploaded = (await (await fetch(`${g1}/api/v1/user_uploads`, { method: 'POST', headers: basicAlpha, body: fd })).json()) as { url: string };
  t.equal((await fetch(`${g2}${uploaded.url}?api_key=${alphaKey}`)).status, 200, 'the file with ?api_key=');
  const temporary = (await (await fetch(`${g1}/api/v1${uploaded.url}`, { headers: basicAlpha })).json()) as { url: string };
  secret('temporary upload URL token', temporary.url.split('/')[3]!);
  t.equal((await fetch(`${g2}${temporary.url}`)).status, 200, 'the file at its temporary URL');
  t.equal((await atHost(g2, 'beta', 'GET', '/new/' + token)).status, 404, 'the used link is refused');

  // Every process's whole output (its shutdown included), searched for every secret.
  await stopAll(procs);
  const lines = [...outputs.values()].reduce((n, out) => n + out().split('\n').length, 0);
  t.ok(lines > 8, `the processes wrote ${lines} lines`);
  const found: string[] = [];
  for (const [name, out] of outputs) for (const [what, value] of secrets) if (out().includes(value)) found.push(`${name} wrote the ${what}`);
  t.same(found, [], `none of ${secrets.size} secrets in the output of ${outputs.size} processes`);
});
