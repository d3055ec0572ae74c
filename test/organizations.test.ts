/**
 * Organizations by host and the operator's CLI, in both modes: the CLI
 * reaches the embedded server through its admin socket, a cluster over
 * NATS; requests name their organization by `Host` as a browser under
 * `<subdomain>.<site>` would.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { toPng } from 'jdenticon';
import t from 'tap';
import { type Creds, type Params, uniq } from './helpers/api.ts';
import { startServer } from './helpers/server.ts';
import { ClientEvent } from '../actors/events/schema.ts';
import { applyEvent } from './helpers/apply.ts';

const ROOT = resolve(import.meta.dirname, '..');
const server = await startServer();
t.teardown(() => server.stop());
const base = server.urls[0]!;
const port = new URL(base).port;
const work = mkdtempSync(join(tmpdir(), 'parley-orgs-'));

/** The CLI against this suite's deployment: the embedded server's socket, or the cluster's NATS. */
const cliEnv: Record<string, string> = server.dataDir
  ? { PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(server.dataDir, 'data') }
  : { PARLEY_MODE: 'cluster' };

function cli(args: string[], stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), ...args], { cwd: work, env: { ...process.env, ...cliEnv, PARLEY_SITE_URL: `http://127.0.0.1:${port}` } }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
    child.stdin!.end(stdin ?? '');
  });
}

async function cliJson(args: string[], stdin?: string): Promise<any> {
  const r = await cli(['--json', ...args], stdin);
  if (r.code !== 0) throw new Error(`parley ${args.join(' ')} -> ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** An API call to this deployment with the `Host` of `subdomain`'s organization (fetch cannot set Host). */
function at(subdomain: string, method: string, path: string, params: Params = {}, creds: Creds | null = null): Promise<{ status: number; body: Record<string, any> }> {
  const qs = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  const body = method === 'GET' ? '' : qs.toString();
  const headers: Record<string, string> = { host: subdomain ? `${subdomain}.127.0.0.1:${port}` : `127.0.0.1:${port}` };
  if (creds) headers.authorization = `Basic ${Buffer.from(`${creds.email}:${creds.apiKey}`).toString('base64')}`;
  if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, method, path: `/api/v1${path}${method === 'GET' && body === '' && qs.size ? `?${qs}` : ''}`, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => done({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on('error', fail);
    req.end(body);
  });
}

/** A file of this deployment at `subdomain`'s host, as bytes. */
function fetchAt(subdomain: string, path: string): Promise<{ status: number; type: string; body: Buffer }> {
  const host = subdomain ? `${subdomain}.127.0.0.1:${port}` : `127.0.0.1:${port}`;
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, method: 'GET', path, headers: { host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => done({ status: res.statusCode!, type: String(res.headers['content-type']), body: Buffer.concat(chunks) }));
    });
    req.on('error', fail);
    req.end();
  });
}

const sub = () => uniq('org').replace(/[^a-z0-9]/g, '').slice(0, 30);

async function createOrg(name: string): Promise<{ subdomain: string; owner: Creds; realmId: number }> {
  const subdomain = sub();
  const email = `owner@${subdomain}.test`;
  const zuliprc = join(work, `${subdomain}.zuliprc`);
  const out = await cliJson(['org', 'create', '--name', name, '--subdomain', subdomain, '--owner-email', email, '--owner-name', 'Olga Owner', '--password-stdin', '--zuliprc', zuliprc], 'correct horse battery');
  return { subdomain, owner: { email, apiKey: out.owner.api_key }, realmId: out.organization.realmId };
}

t.test('organizations - the CLI creates one: the owner works on its host, the zuliprc is 0600, the key works nowhere else', async (t) => {
  const { subdomain, owner, realmId } = await createOrg('Acme Corp');
  const zuliprc = join(work, `${subdomain}.zuliprc`);
  t.equal(statSync(zuliprc).mode & 0o777, 0o600, 'zuliprc readable by its owner only');
  t.match(readFileSync(zuliprc, 'utf8'), new RegExp(`key=${owner.apiKey}\\n`));
  const settings = await at(subdomain, 'GET', '/server_settings');
  t.equal(settings.body.realm_name, 'Acme Corp');
  // The port is the site's (a test server's site URL may name port 0: it listens on a free one).
  t.match(settings.body.realm_url, new RegExp(`^http://${subdomain}\\.127\\.0\\.0\\.1:\\d+$`));
  const me = await at(subdomain, 'GET', '/users/me', {}, owner);
  t.equal(me.status, 200);
  t.equal(me.body.role, 100, 'the first user is the owner');
  const reg = await at(subdomain, 'POST', '/register', { fetch_event_types: ['realm'] }, owner);
  t.equal(reg.body.realm_name, 'Acme Corp');
  t.equal(reg.body.realm_url, settings.body.realm_url);
  // The demo organization's users are not this one's, and this owner is nobody at the demo's host.
  const members = await at(subdomain, 'GET', '/users', {}, owner);
  t.same(members.body.members.filter((m: any) => !m.is_bot).map((m: any) => m.email), [owner.email]);
  t.equal((await at('', 'GET', '/users/me', {}, owner)).status, 401, "another organization's host refuses the key");
  const key = await at(subdomain, 'POST', '/fetch_api_key', { username: owner.email, password: 'correct horse battery' });
  t.equal(key.status, 200, 'the password given on standard input signs in');
  const listed = await cliJson(['org', 'list']);
  t.ok(listed.some((o: any) => o.realmId === realmId && o.subdomain === subdomain && o.state === 'active'));
  const again = await cli(['org', 'create', '--name', 'Other', '--subdomain', subdomain, '--owner-email', 'x@y.test', '--owner-name', 'X']);
  t.equal(again.code, 1);
  t.match(again.stderr, /Subdomain already in use/);
  const bad = await cli(['org', 'create', '--name', 'Other', '--subdomain', 'no_way!', '--owner-email', 'x@y.test', '--owner-name', 'X']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /Subdomain can only have lowercase letters/);
});

t.test("organizations - a new organization's users get Jdenticon avatars (FL 456), drawn from realm_uuid and the user ID, served at its host", async (t) => {
  const { subdomain, owner } = await createOrg('Jdenticon Club');
  const reg = await at(subdomain, 'POST', '/register', { fetch_event_types: ['realm', 'realm_user'] }, owner);
  t.equal(reg.body.realm_default_avatar_source, 'J', "Zulip's default for a new organization");
  const id = reg.body.user_id;
  t.match(reg.body, { avatar_source: 'J', avatar_url: `/user_avatars/jdenticon/${id}.png`, avatar_url_medium: `/user_avatars/jdenticon/${id}-medium.png` }, 'the owner has one');
  const image = await fetchAt(subdomain, `/user_avatars/jdenticon/${id}.png`);
  t.equal(image.status, 200);
  t.equal(image.type, 'image/png');
  // Zulip's generate_avatar_jdenticon: no padding, lightness 0.3 to 0.7, key `<realm uuid>:<user id>` (clients may draw it themselves).
  const config = { padding: 0, lightness: { color: [0.3, 0.7], grayscale: [0.3, 0.7] } };
  t.ok(image.body.equals(toPng(`${reg.body.realm_uuid}:${id}`, 100, config)), 'the Jdenticon of `<realm_uuid>:<user id>`, 100 pixels');
  t.ok((await fetchAt(subdomain, `/user_avatars/jdenticon/${id}-medium.png`)).body.equals(toPng(`${reg.body.realm_uuid}:${id}`, 500, config)), 'and 500 pixels');
  t.notOk((await fetchAt('', `/user_avatars/jdenticon/${id}.png`)).body.equals(image.body), "another organization's host draws another (its own UUID)");
});

t.test('organizations - a host that names no organization: server_settings without realm keys, every other route NONEXISTENT_SUBDOMAIN', async (t) => {
  const settings = await at('nobody-here', 'GET', '/server_settings');
  t.equal(settings.status, 200);
  t.notOk('realm_name' in settings.body, 'no realm keys');
  t.equal(typeof settings.body.zulip_feature_level, 'number');
  const r = await at('nobody-here', 'GET', '/users/me', {}, server.demo.owner);
  t.equal(r.status, 404);
  t.equal(r.body.code, 'NONEXISTENT_SUBDOMAIN');
  const login = await at('nobody-here', 'POST', '/fetch_api_key', { username: 'a@b.c', password: 'x' });
  t.equal(login.body.code, 'NONEXISTENT_SUBDOMAIN');
});

t.test('organizations - POST /realm/deactivate: the owner deactivates their organization, with a deletion delay of at least server_min_deactivated_realm_deletion_days (FL 332)', async (t) => {
  const { subdomain, owner } = await createOrg('Owner Ends It');
  const reg = await at(subdomain, 'POST', '/register', { fetch_event_types: ['realm'] }, owner);
  t.same([reg.body.server_min_deactivated_realm_deletion_days, reg.body.server_max_deactivated_realm_deletion_days], [14, null]);
  const tooSoon = await at(subdomain, 'POST', '/realm/deactivate', { deletion_delay_days: 13 }, owner);
  t.same([tooSoon.status, tooSoon.body.msg], [400, 'Data deletion time must be at least 14 days in the future.']);
  t.equal((await at(subdomain, 'GET', '/users/me', {}, owner)).status, 200, 'refused: still active');
  const ok = await at(subdomain, 'POST', '/realm/deactivate', { deletion_delay_days: 30 }, owner);
  t.equal(ok.status, 200);
  t.equal((await at(subdomain, 'GET', '/users/me', {}, owner)).body.code, 'REALM_DEACTIVATED', 'deactivated at once');
  t.match((await cliJson(['org', 'list'])).find((o: any) => o.subdomain === subdomain), { state: 'deactivated' }, 'and the directory knows');
});

t.test('organizations - deactivated: clients told, every request REALM_DEACTIVATED, nothing deleted; reactivated: all back', async (t) => {
  const { subdomain, owner } = await createOrg('Short Lived');
  const sent = await at(subdomain, 'POST', '/messages', { type: 'stream', to: 'general', topic: 'hello', content: 'still here after?' }, owner);
  // The organization starts with no channel: make one to write in.
  if (sent.status !== 200) {
    t.equal((await at(subdomain, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: 'general' }] }, owner)).status, 200);
    t.equal((await at(subdomain, 'POST', '/messages', { type: 'stream', to: 'general', topic: 'hello', content: 'still here after?' }, owner)).status, 200);
  }
  const queue = await at(subdomain, 'POST', '/register', { event_types: ['realm'] }, owner);
  t.equal(queue.status, 200);
  t.equal((await cli(['org', 'deactivate', subdomain])).code, 0);
  const refused = await at(subdomain, 'GET', '/users/me', {}, owner);
  t.equal(refused.status, 401);
  t.equal(refused.body.code, 'REALM_DEACTIVATED');
  t.equal((await at(subdomain, 'GET', '/events', { queue_id: queue.body.queue_id, last_event_id: -1, dont_block: true }, owner)).body.code, 'REALM_DEACTIVATED', 'even its event queues');
  t.equal((await at(subdomain, 'POST', '/fetch_api_key', { username: owner.email, password: 'correct horse battery' })).body.code, 'REALM_DEACTIVATED');
  t.equal((await at(subdomain, 'GET', '/server_settings')).status, 200, 'server_settings still answers');
  t.match((await cliJson(['org', 'list'])).find((o: any) => o.subdomain === subdomain), { state: 'deactivated' });
  t.equal((await cli(['org', 'reactivate', subdomain])).code, 0);
  t.equal((await at(subdomain, 'GET', '/users/me', {}, owner)).status, 200);
  const history = await at(subdomain, 'GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [] }, owner);
  t.ok(history.body.messages.some((m: any) => m.content.includes('still here after?')), 'its messages are kept');
  // The queue registered before saw the deactivation event (Zulip's realm/deactivated).
  const events = await at(subdomain, 'GET', '/events', { queue_id: queue.body.queue_id, last_event_id: -1, dont_block: true }, owner);
  if (events.status === 200) t.ok(events.body.events.some((e: any) => e.type === 'realm' && e.op === 'deactivated'), 'realm deactivated event');
  else t.equal(events.body.code, 'BAD_EVENT_QUEUE_ID', 'or the queue is gone and the client registers again');
});

t.test('organizations - a demo organization: demo_organization_scheduled_deletion_date in the register; its owner makes it permanent under a new subdomain with PATCH /realm string_id, and its host follows (FL 94, 104)', async (t) => {
  const plain = await createOrg('Plain Org');
  t.notOk('demo_organization_scheduled_deletion_date' in (await at(plain.subdomain, 'POST', '/register', { fetch_event_types: ['realm'] }, plain.owner)).body, 'only a demo organization has the key');
  const subdomain = sub();
  const email = `owner@${subdomain}.test`;
  const out = await cliJson(['org', 'create', '--demo', '--name', 'Demo Org', '--subdomain', subdomain, '--owner-email', email, '--owner-name', 'Dora Demo', '--zuliprc', join(work, `${subdomain}.zuliprc`)]);
  const owner = { email, apiKey: out.owner.api_key as string };
  const created = Math.floor(Date.now() / 1000);
  const reg = (await at(subdomain, 'POST', '/register', { fetch_event_types: ['realm'] }, owner)).body;
  t.ok(Math.abs(reg.demo_organization_scheduled_deletion_date - (created + 30 * 86_400)) < 120, 'deleted 30 days after its creation, unless converted');

  const people: Record<string, Creds> = {};
  for (const [role, value] of [['admin', 200], ['member', 400]] as const) {
    const address = `${role}@${subdomain}.test`;
    const made = await at(subdomain, 'POST', '/users', { email: address, password: `${role}-password`, full_name: `Demo ${role}` }, owner);
    if (value !== 400) await at(subdomain, 'PATCH', `/users/${made.body.user_id}`, { role: value }, owner);
    people[role] = { email: address, apiKey: (await at(subdomain, 'POST', '/fetch_api_key', { username: address, password: `${role}-password` })).body.api_key };
  }
  const target = sub();
  const patch = (who: Creds | null, string_id: string, host = subdomain) => at(host, 'PATCH', '/realm', { string_id }, who);
  t.match((await patch(null, target)), { status: 401 });
  t.match((await patch(people.member!, target)).body, { code: 'UNAUTHORIZED_PRINCIPAL', msg: 'Must be an organization administrator' });
  t.match((await patch(people.admin!, target)).body, { code: 'UNAUTHORIZED_PRINCIPAL', msg: 'Must be an organization owner' });
  t.match((await patch(plain.owner, target, plain.subdomain)).body, { code: 'BAD_REQUEST', msg: 'Must be a demo organization.' }, 'not for other organizations');
  t.match((await patch(owner, plain.subdomain)).body, { code: 'BAD_REQUEST', msg: 'Subdomain already in use. Please choose a different one.' });
  t.match((await patch(owner, 'no_way!')).body, { code: 'BAD_REQUEST', msg: /Subdomain can only have lowercase letters/ });
  t.equal((await at(subdomain, 'GET', '/users/me', {}, owner)).status, 200, 'a refused change moves nothing');

  const moved = await patch(owner, target);
  t.equal(moved.status, 200);
  t.match(moved.body.realm_url, new RegExp(`^http://${target}\\.127\\.0\\.0\\.1:\\d+$`), 'the reply names the new URL (realm_uri too)');
  t.equal(moved.body.realm_uri, moved.body.realm_url);
  t.equal((await at(target, 'GET', '/users/me', {}, owner)).status, 200, 'the organization answers at its new host');
  t.equal((await at(target, 'GET', '/users/me', {}, people.member!)).status, 200, 'for every user, with the same keys');
  t.match((await at(subdomain, 'GET', '/users/me', {}, owner)).body, { code: 'NONEXISTENT_SUBDOMAIN' }, 'the old host names no organization');
  const after = (await at(target, 'POST', '/register', { fetch_event_types: ['realm'] }, owner)).body;
  t.notOk('demo_organization_scheduled_deletion_date' in after, 'no longer scheduled for deletion: permanent');
  // By host: each process of the test cluster has a site URL of its own port (one in a deployment).
  // (Not `new URL`: a host such as org1.127.0.0.1 ends in a number, which WHATWG parsing takes for a bad IPv4 address.)
  const hostOf = (url: string) => url.replace(/^https?:\/\//, '').replace(/:\d+$/, '');
  t.equal(hostOf(after.realm_url), hostOf(moved.body.realm_url), 'the register names the new host');
  t.equal(hostOf((await at(target, 'GET', '/server_settings')).body.realm_url), hostOf(moved.body.realm_url), 'and so does GET /server_settings');
  t.match((await patch(owner, sub(), target)).body, { code: 'BAD_REQUEST', msg: 'Must be a demo organization.' }, 'once');
  t.ok((await cliJson(['org', 'list'])).some((o: any) => o.subdomain === target && o.name === 'Demo Org'), 'the directory lists it under its new subdomain');
});

t.test('cli - users: create with a role, change roles, deactivate and reactivate, reset a key, set a password', async (t) => {
  const { subdomain, owner } = await createOrg('People Inc');
  const made = await cliJson(['users', '--org', subdomain, 'create', '--email', 'ann@people.test', '--name', 'Ann Admin', '--role', 'admin', '--password-stdin'], 'ann-password');
  const list = await cliJson(['users', '--org', subdomain, 'list']);
  t.match(list.find((u: any) => u.user_id === made.user_id), { email: 'ann@people.test', role: 200, state: 'active' });
  t.equal((await cliJson(['users', '--org', subdomain, 'role', 'ann@people.test', 'moderator'])).role, 'moderator');
  const ann = (await at(subdomain, 'POST', '/fetch_api_key', { username: 'ann@people.test', password: 'ann-password' })).body;
  const annCreds = { email: 'ann@people.test', apiKey: ann.api_key as string };
  t.equal((await at(subdomain, 'GET', '/users/me', {}, annCreds)).body.role, 300);
  await cliJson(['users', '--org', subdomain, 'deactivate', 'ann@people.test']);
  const gone = await at(subdomain, 'GET', '/users/me', {}, annCreds);
  t.equal(gone.status, 401, 'a deactivated user is refused at once (no cached authentication)');
  await cliJson(['users', '--org', subdomain, 'reactivate', String(made.user_id)]);
  t.equal((await at(subdomain, 'GET', '/users/me', {}, annCreds)).status, 200);
  const reset = await cliJson(['users', '--org', subdomain, 'reset-key', 'ann@people.test']);
  t.equal((await at(subdomain, 'GET', '/users/me', {}, annCreds)).status, 401, 'the old key stops working');
  t.equal((await at(subdomain, 'GET', '/users/me', {}, { email: annCreds.email, apiKey: reset.api_key })).status, 200, 'the new one works');
  await cli(['users', '--org', subdomain, 'set-password', 'ann@people.test'], 'a-new-password');
  t.equal((await at(subdomain, 'POST', '/fetch_api_key', { username: 'ann@people.test', password: 'a-new-password' })).status, 200);
  t.equal((await at(subdomain, 'POST', '/fetch_api_key', { username: 'ann@people.test', password: 'ann-password' })).status, 401);
  const lastOwner = await cli(['users', '--org', subdomain, 'role', owner.email, 'member']);
  t.equal(lastOwner.code, 1, "the realm's rules hold for the CLI too");
  t.match(lastOwner.stderr, /only organization owner/);
});

t.test('cli - billing: user objects have no is_billing_admin and `users billing-admin` is retired; can_manage_billing_group is reported, not changed, as there is no billing (FL 73, 363)', async (t) => {
  const { subdomain, owner } = await createOrg('Billing Co');
  const person = async (email: string, role: string) => {
    const made = await cliJson(['users', '--org', subdomain, 'create', '--email', email, '--name', email.split('@')[0]!, '--role', role, '--password-stdin'], `${role}-password`);
    return { userId: made.user_id as number, creds: { email, apiKey: (await at(subdomain, 'POST', '/fetch_api_key', { username: email, password: `${role}-password` })).body.api_key as string } };
  };
  const gail = await person('gail@billing.test', 'guest');
  const mia = await person('mia@billing.test', 'member');
  const ann = await person('ann@billing.test', 'admin');
  const me = (await at(subdomain, 'GET', '/users/me', {}, owner)).body;
  for (const [path, viewer] of [['/users/me', owner], [`/users/${me.user_id}`, gail.creds], [`/users/${encodeURIComponent(owner.email)}`, gail.creds]] as const) {
    const body = (await at(subdomain, 'GET', path, {}, viewer)).body;
    t.notOk('is_billing_admin' in (path === '/users/me' ? body : body.user), `GET ${path}: no is_billing_admin (FL 363)`);
  }
  t.ok((await at(subdomain, 'GET', '/users', {}, gail.creds)).body.members.every((u: any) => !('is_billing_admin' in u)), 'GET /users: on no member');
  t.same((await at(subdomain, 'PATCH', `/users/${mia.userId}`, { is_billing_admin: true }, owner)).body.ignored_parameters_unsupported, ['is_billing_admin'], 'no API parameter sets it');
  const retired = await cli(['users', '--org', subdomain, 'billing-admin', mia.creds.email, 'yes']);
  t.not(retired.code, 0, 'the CLI command that set it is gone');
  t.match(retired.stderr, /unknown command 'billing-admin'/);

  const reg = (await at(subdomain, 'POST', '/register', { event_types: ['realm', 'realm_user'], fetch_event_types: ['realm', 'realm_user', 'realm_billing'] }, gail.creds)).body;
  t.ok(reg.realm_users.every((u: any) => !('is_billing_admin' in u)), 'register: realm_users without it');
  t.same([reg.realm_can_manage_billing_group, reg.realm_billing], [6, { has_pending_sponsorship_request: false }], 'can_manage_billing_group: administrators (Zulip\'s default); realm_billing');
  const change = { can_manage_billing_group: { new: { direct_members: [mia.userId], direct_subgroups: [6] } } };
  for (const [who, creds, expected] of [['owner', owner, 'ignored'], ['admin', ann.creds, 'ignored'], ['member', mia.creds, 'UNAUTHORIZED_PRINCIPAL'], ['guest', gail.creds, 'UNAUTHORIZED_PRINCIPAL']] as const) {
    const r = await at(subdomain, 'PATCH', '/realm', change, creds);
    t.equal(r.body.ignored_parameters_unsupported?.includes('can_manage_billing_group') ? 'ignored' : r.body.code, expected, `${who}: PATCH /realm can_manage_billing_group`);
  }
  t.same((await at(subdomain, 'POST', '/register', { fetch_event_types: ['realm'] }, mia.creds)).body.realm_can_manage_billing_group, 6, 'unchanged: nothing here bills');
  t.same((await at(subdomain, 'GET', '/events', { queue_id: reg.queue_id, last_event_id: reg.last_event_id, dont_block: true }, gail.creds)).body.events, [], 'and nobody hears of a change');
});

t.test('cli - channels: list and archive', async (t) => {
  const { subdomain, owner } = await createOrg('Channels Ltd');
  const name = uniq('ch');
  t.equal((await at(subdomain, 'POST', '/users/me/subscriptions', { subscriptions: [{ name }] }, owner)).status, 200);
  const listed = await cliJson(['channels', '--org', subdomain, 'list']);
  t.match(listed.find((c: any) => c.name === name), { state: 'active', access: 'public' });
  await cliJson(['channels', '--org', subdomain, 'archive', name]);
  t.match((await cliJson(['channels', '--org', subdomain, 'list'])).find((c: any) => c.name === name), { state: 'archived' });
  t.equal((await cli(['channels', '--org', subdomain, 'archive', name])).code, 2, 'an archived channel is no active one');
});

t.test('cli - reload-clients: a web_reload_client event to every event queue of the organization, none of another (FL 240)', async (t) => {
  const other = await createOrg('Elsewhere');
  const queue = async (subdomain: string, creds: Creds, eventTypes: string[] | null) => {
    const r = await at(subdomain, 'POST', '/register', eventTypes ? { event_types: eventTypes } : {}, creds);
    t.equal(r.status, 200);
    return { subdomain, creds, id: r.body.queue_id as string, last: r.body.last_event_id as number };
  };
  const reloads = async (q: Awaited<ReturnType<typeof queue>>) => {
    const r = await at(q.subdomain, 'GET', '/events', { queue_id: q.id, last_event_id: q.last, dont_block: true }, q.creds);
    t.equal(r.status, 200);
    const got = r.body.events.filter((e: any) => e.type === 'web_reload_client');
    if (r.body.events.length) q.last = r.body.events.at(-1).id;
    return got.map(({ id: _, ...e }: any) => e);
  };
  const owner = await queue('', server.demo.owner, null);
  const member = await queue('', server.demo.member1, ['web_reload_client']);
  const guest = await queue('', server.demo.guest, ['message']);
  const elsewhere = await queue(other.subdomain, other.owner, ['web_reload_client']);
  t.match(await cliJson(['reload-clients', '--org', '.', '--immediate']), [{ subdomain: '' }]);
  t.same(await reloads(owner), [{ type: 'web_reload_client', immediate: true }], 'every queue of the organization');
  t.same(await reloads(member), [{ type: 'web_reload_client', immediate: true }]);
  t.same(await reloads(guest), [], 'not a queue that did not ask for the event type');
  t.same(await reloads(elsewhere), [], 'not a queue of another organization');
  // Without --org: every active organization; without --immediate, spread over minutes.
  t.ok((await cliJson(['reload-clients'])).some((o: any) => o.realmId === other.realmId));
  t.same(await reloads(elsewhere), [{ type: 'web_reload_client', immediate: false }]);
  t.same(await reloads(member), [{ type: 'web_reload_client', immediate: false }]);
});

t.test('cli - usage: --help everywhere, clear errors and exit codes', async (t) => {
  for (const args of [[], ['org', 'create'], ['users', 'create'], ['users', 'reset-key'], ['channels', 'archive']]) {
    const r = await cli([...args, '--help']);
    t.equal(r.code, 0, `parley ${args.join(' ')} --help`);
    t.match(r.stdout, /Usage: parley/);
  }
  const unknown = await cli(['users', '--org', 'no-such-org-anywhere', 'list']);
  t.equal(unknown.code, 2);
  t.match(unknown.stderr, /No organization 'no-such-org-anywhere'/);
  t.equal((await cli(['users', '--org', '.', 'role', 'olivia@parley.example', 'emperor'])).code, 2);
  t.equal((await cli(['frobnicate'])).code, 2);
  const link = await cliJson(['org', 'link', '--days', '1']);
  t.match(link.url, /\/new\/[\w-]{20,}$/);
  if (server.dataDir) {
    const away = await cli(['--data-dir', join(work, 'nothing'), 'org', 'list']);
    t.equal(away.code, 3, 'no server: exit 3');
    t.match(away.stderr, /No running embedded server/);
  }
});

t.test('cli - cluster status: every actor node with its shards, event queues and held polls; every shard owned', async (t) => {
  const poll = await at('', 'POST', '/register', { event_types: ['message'] }, server.demo.member1);
  t.equal(poll.status, 200);
  const status = await cliJson(['cluster', 'status']);
  t.ok(status.nodes.length >= 1, 'live nodes listed');
  t.ok(status.shards.length >= 1 && status.shards.every((s: any) => typeof s.owner === 'string' && s.owner.length > 0), 'every shard has an owner');
  t.equal(status.nodes.reduce((n: number, x: any) => n + x.shards.length, 0), status.shards.length, "the nodes' shards add up to all of them");
  t.ok(status.nodes.reduce((n: number, x: any) => n + x.queues, 0) >= 1, 'the queue just registered is counted');
  t.ok(status.shards.every((s: any) => s.renewedMsAgo === null || s.renewedMsAgo >= 0));
  const human = await cli(['cluster', 'status']);
  t.match(human.stdout, /shards owned/);
});

// Last: it leaves the embedded server owning nothing.
t.test('cli - cluster drain: the node hands its shards over and serves nothing more (embedded: the only node)', { skip: server.dataDir ? false : 'drains the shared cluster: covered by the cluster suite' }, async (t) => {
  const { nodes } = await cliJson(['cluster', 'status']);
  const drained = await cliJson(['cluster', 'drain', nodes[0].nodeId]);
  t.same(drained.shards, []);
  t.equal(drained.draining, true);
  const r = await at('', 'GET', '/users/me', {}, server.demo.owner);
  t.equal(r.status, 503, 'no node owns the shard: the client is told to retry');
});
