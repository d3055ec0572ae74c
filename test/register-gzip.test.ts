// POST /register gzipped from parts compressed once per change (issue 20): a
// client that accepts gzip gets one gzip member made of the realm's cached
// parts (deflated once) and the per-request pieces (deflated per answer);
// decoded by Node's zlib, the official Python client (requests) and Chromium,
// it is the JSON of the same register without gzip, for every variant the
// cached parts serve, and after a change to them.
import { request } from 'node:http';
import { crc32, inflateRawSync, gunzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import t, { type Test } from 'tap';
import { type Creds, encodeValue, type Params } from './helpers/api.ts';
import { newPerson, ROLE } from './helpers/people.ts';
import { runPython } from './helpers/python.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const site = s.api.base;
const maria = s.demo.member1;

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A register over plain HTTP with the given Accept-Encoding (none when undefined); the body as it came on the wire. */
function registerRaw(who: Creds, params: Params, acceptEncoding?: string): Promise<Raw> {
  const body = new URLSearchParams(Object.entries(params).map(([k, v]) => [k, encodeValue(v)])).toString();
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Basic ${Buffer.from(`${who.email}:${who.apiKey}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' };
    if (acceptEncoding !== undefined) headers['accept-encoding'] = acceptEncoding;
    const req = request(`${site}/api/v1/register`, { method: 'POST', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** What differs between two registers made one after the other: each has its own queue; presence moves on. */
function comparable(reg: Record<string, unknown>): Record<string, unknown> {
  const { queue_id: _q, last_event_id: _l, server_timestamp: _t, presences: _p, presence_last_update_id: _u, ...rest } = reg;
  return rest;
}

/**
 * The gzip body is one member: a 10-byte header, raw deflate that ends with
 * its final block exactly where the 8-byte trailer begins, and a trailer whose
 * CRC-32 and length are those of the JSON.
 */
function oneMember(t: Test, body: Buffer): void {
  t.same([...body.subarray(0, 3)], [0x1f, 0x8b, 0x08], 'a gzip header (deflate)');
  const deflated = body.subarray(10, body.length - 8);
  const { buffer, engine } = inflateRawSync(deflated, { info: true }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
  t.equal(engine.bytesWritten, deflated.length, 'the deflate data ends where the trailer begins: one member');
  t.equal(body.readUInt32LE(body.length - 8), crc32(buffer), "the trailer's CRC-32 is the JSON's");
  t.equal(body.readUInt32LE(body.length - 4), buffer.length, "the trailer's length is the JSON's");
}

const VARIANTS: Array<[string, Params]> = [
  ['full (every event type, as the official clients ask)', {}],
  ['include_subscribers', { include_subscribers: true }],
  ['a modern client: user_list_incomplete, include_subscribers=partial', { include_subscribers: 'partial', client_capabilities: { user_list_incomplete: true, include_deactivated_groups: true, user_settings_object: true, empty_topic_name: true } }],
  ['client_gravatar=false (the other avatar form of the cached users)', { client_gravatar: false }],
  ['the people only', { fetch_event_types: ['realm_user', 'realm_user_groups'] }],
];

/** A gzip register and a plain one, decoded; retried when another test changed the organization between the two (cluster runs share it). */
async function bothWays(t: Test, who: Creds, params: Params): Promise<{ zipped: Raw; fromZip: Record<string, unknown>; fromPlain: Record<string, unknown> }> {
  for (let attempt = 1; ; attempt++) {
    const zipped = await registerRaw(who, params, 'gzip, deflate, br');
    const plain = await registerRaw(who, params);
    t.equal(zipped.status, 200);
    t.equal(plain.status, 200);
    const fromZip = JSON.parse(gunzipSync(zipped.body).toString()) as Record<string, unknown>;
    const fromPlain = JSON.parse(plain.body.toString()) as Record<string, unknown>;
    t.equal(plain.headers['content-encoding'], undefined, 'plain for a client that does not ask for gzip');
    if (attempt === 3 || JSON.stringify(comparable(fromZip)) === JSON.stringify(comparable(fromPlain))) return { zipped, fromZip, fromPlain };
  }
}

for (const [name, params] of VARIANTS) {
  t.test(`register gzip - ${name}: one gzip member that decodes to the same JSON as without gzip`, async (t) => {
    const { zipped, fromZip, fromPlain } = await bothWays(t, maria, params);
    t.equal(zipped.headers['content-encoding'], 'gzip');
    t.equal(zipped.headers.vary, 'Accept-Encoding');
    oneMember(t, zipped.body);
    t.equal(fromZip.result, 'success');
    t.same(comparable(fromZip), comparable(fromPlain), 'the same JSON either way');
    if (!('fetch_event_types' in params)) t.ok(Array.isArray(fromZip.realm_users) && (fromZip.realm_users as unknown[]).length >= 5, 'the cached users are in it');
  });
}

t.test('register gzip - q=0 refuses gzip; a guest (who is not given the cached parts) gets gzip all the same', async (t) => {
  const refused = await registerRaw(maria, {}, 'gzip;q=0, identity');
  t.equal(refused.status, 200);
  t.equal(refused.headers['content-encoding'], undefined, 'plain for gzip;q=0');
  t.equal((JSON.parse(refused.body.toString()) as { result: string }).result, 'success');
  const { zipped, fromZip, fromPlain } = await bothWays(t, s.demo.guest, { client_capabilities: { user_list_incomplete: true } });
  t.equal(zipped.headers['content-encoding'], 'gzip');
  oneMember(t, zipped.body);
  t.same(comparable(fromZip), comparable(fromPlain));
});

t.test('register gzip - after a change to a cached part (a new user, then a new name), the gzipped register shows it', async (t) => {
  await registerRaw(maria, {}, 'gzip'); // the parts as they are now, compressed
  const person = await newPerson(s, ROLE.member, 'Gzip Newcomer');
  const after = await bothWays(t, maria, {});
  const listed = (reg: Record<string, unknown>) => (reg.realm_users as Array<{ user_id: number; full_name: string }>).find((u) => u.user_id === person.userId);
  t.equal(listed(after.fromZip)?.full_name, person.fullName, 'the new user is in the gzipped register');
  t.same(comparable(after.fromZip), comparable(after.fromPlain));
  oneMember(t, after.zipped.body);
  await s.api.as(s.demo.owner).ok('PATCH', `/users/${person.userId}`, { full_name: 'Renamed Gzip Newcomer' });
  const renamed = await bothWays(t, maria, {});
  t.equal(listed(renamed.fromZip)?.full_name, 'Renamed Gzip Newcomer', 'the new name is in the gzipped register');
  t.same(comparable(renamed.fromZip), comparable(renamed.fromPlain));
  // Everyone's user_status is a cached part of its own: a status, then a setting (away is presence_enabled), drop it.
  const statusOf = (reg: Record<string, unknown>) => (reg.user_status as Record<string, unknown>)[String(person.userId)];
  await s.api.as(person).ok('POST', '/users/me/status', { status_text: 'compressing' });
  const withStatus = await bothWays(t, maria, { fetch_event_types: ['user_status'] });
  t.same(statusOf(withStatus.fromZip), { status_text: 'compressing' }, 'the new status is in the gzipped register');
  t.same(withStatus.fromZip, { ...withStatus.fromPlain, queue_id: withStatus.fromZip.queue_id });
  await s.api.as(person).ok('PATCH', '/settings', { presence_enabled: false });
  const away = await bothWays(t, maria, { fetch_event_types: ['user_status'] });
  t.same(statusOf(away.fromZip), { away: true, status_text: 'compressing' }, 'turning presence off shows as away');
  t.same(comparable(away.fromZip), comparable(away.fromPlain));
});

t.test('register gzip - the official Python client (requests) takes gzip and reads the same register', async (t) => {
  const out = runPython(site, maria, `
encodings = []
client.ensure_session()
client.session.hooks["response"].append(lambda r, *a, **k: encodings.append(r.headers.get("Content-Encoding")))
reg = client.register()
print(json.dumps({"encodings": encodings, "reg": reg}))`) as { encodings: Array<string | null>; reg: Record<string, unknown> };
  t.same(out.encodings, ['gzip'], 'its register came gzipped');
  const plain = JSON.parse((await registerRaw(maria, {})).body.toString()) as Record<string, unknown>;
  t.same(comparable(out.reg), comparable(plain), 'the same register as without gzip');
});

t.test('register gzip - Chromium decodes it: the same register as without gzip', async (t) => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  await page.goto(`${site}/api/v1/server_settings`);
  const encodings: Array<string | undefined> = [];
  page.on('response', (r) => {
    if (r.url().endsWith('/register')) encodings.push(r.headers()['content-encoding']);
  });
  const auth = `Basic ${Buffer.from(`${maria.email}:${maria.apiKey}`).toString('base64')}`;
  const reg = await page.evaluate(async (authorization) => {
    const res = await fetch('/api/v1/register', { method: 'POST', headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
    return (await res.json()) as Record<string, unknown>;
  }, auth);
  t.same(encodings, ['gzip'], 'Chromium asked for gzip and got it');
  const plain = JSON.parse((await registerRaw(maria, {})).body.toString()) as Record<string, unknown>;
  t.same(comparable(reg), comparable(plain), 'the same register as without gzip');
});
