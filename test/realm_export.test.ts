// Organization exports through the API (FL 182; export types of FL 304, consents of FL 295): administrators
// ask for one, a follow-up writes the archive into the upload store, realm_export events tell the
// administrators each change; the archive is fetched at its export_url and imported with the operator's
// importer into a fresh store; deletion; refusals for every other role and Zulip's errors.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { EmbeddedStore } from '../storage/embedded.ts';
import { importRealm } from '../storage/export.ts';
import { DirFileStore } from '../storage/files.ts';
import { T } from '../storage/tables.ts';
import { type Api, uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { type Queue, register, waitFor } from './helpers/events.ts';
import { asRoles, isError } from './helpers/roles.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const admin = s.api.as(s.demo.admin);
const member = s.api.as(s.demo.member1);
const scratch = mkdtempSync(join(tmpdir(), 'parley-realm-export-'));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));

const EVENTS = { event_types: ['realm_export'] };
type ExportObject = { id: number; export_url: string | null; pending: boolean; deleted_timestamp: number | null; failed_timestamp: number | null; export_type: string; acting_user_id: number; export_time: number };
const exportIn = (e: Record<string, any>, id: number): ExportObject | undefined => (e.type === 'realm_export' ? (e.exports as ExportObject[]).find((x) => x.id === id) : undefined);

/** GET of a page outside /api/v1 with `api`'s credentials. */
async function fetchPage(api: Api | null, url: string): Promise<{ status: number; body: Buffer; type: string | null }> {
  const headers: Record<string, string> = api?.creds ? { authorization: `Basic ${Buffer.from(`${api.creds.email}:${api.creds.apiKey}`).toString('base64')}` } : {};
  const res = await fetch(`${s.urls[0]}${new URL(url).pathname}`, { headers });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), type: res.headers.get('content-type') };
}

/** The archive's lines, parsed. */
const linesOf = (gz: Buffer) => gunzipSync(gz).toString().trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, any>);

/** Waits until the export is done on `q`, applying every event to `snap` on the way. */
async function finished(q: Queue, id: number): Promise<ExportObject> {
  const e = await waitFor(q, (e) => exportIn(e, id)?.pending === false, 30_000);
  return exportIn(e, id)!;
}

t.test('realm export - an owner exports over HTTP: realm_export events, the archive at export_url imports into a fresh store; public data only; deleted (FL 182)', async (t) => {
  const channel = uniq('exported');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }] });
  const secret = uniq('secret');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], invite_only: true });
  const publicText = uniq('public words');
  const privateText = uniq('private channel words');
  const dmText = uniq('direct words');
  const { id: publicId } = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'export', content: publicText });
  await owner.ok('POST', '/messages', { type: 'stream', to: secret, topic: 'export', content: privateText });
  await owner.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([s.demo.member1.userId]), content: dmText });

  const queues = { owner: await register(owner, EVENTS), admin: await register(admin, EVENTS), member: await register(member, EVENTS) };
  const r = await owner.ok('POST', '/export/realm');
  t.type(r.id, 'number', 'the export ID (FL 182)');
  const pending = exportIn(await waitFor(queues.owner, (e) => exportIn(e, r.id) !== undefined), r.id)!;
  t.match(pending, { id: r.id, pending: true, export_url: null, acting_user_id: s.demo.owner.userId, export_type: 'public', deleted_timestamp: null, failed_timestamp: null }, 'pending first');
  const done = await finished(queues.owner, r.id);
  t.match(done, { pending: false, failed_timestamp: null, deleted_timestamp: null });
  t.match(done.export_url, /\/user_avatars\/exports\/\d+\/[0-9a-f]{32}\/parley-export-.*\.jsonl\.gz$/);
  t.same(await finished(queues.admin, r.id), done, 'administrators get the same events');
  const listed = (await admin.ok('GET', '/export/realm')).exports as ExportObject[];
  t.same(listed.find((x) => x.id === r.id), done, 'GET /export/realm lists it as the event says');

  const archive = await fetchPage(owner, done.export_url!);
  t.equal(archive.status, 200, 'the owner fetches the archive');
  t.equal(archive.type, 'application/gzip');
  const lines = linesOf(archive.body);
  const text = gunzipSync(archive.body).toString();
  t.ok(text.includes(publicText), 'the channel message is in it');
  t.notOk(text.includes(privateText), 'a private channel message is not (public export)');
  t.notOk(text.includes(dmText), 'nor a direct message');
  const users = lines.filter((l) => l.row?.[0] === 'users').map((l) => l.row[3]);
  t.ok(users.length > 3 && users.every((u) => u.passwordHash === null && u.apiKeys.length === 0), 'no credentials in it');
  t.equal((await fetchPage(member, done.export_url!)).status, 400, 'a member may not fetch it');
  t.equal((await fetchPage(null, done.export_url!)).status, 401, 'nor anyone without credentials');

  const file = join(scratch, 'api-export.jsonl.gz');
  writeFileSync(file, archive.body);
  const dir = join(scratch, 'target');
  const store = new EmbeddedStore(join(dir, 'data'));
  t.teardown(() => store.close());
  const imported = await importRealm(store, new DirFileStore(join(dir, 'data', 'uploads')), file, { shards: 1, realmId: 9, subdomain: 'imported' });
  t.match(imported, { realmId: 9, subdomain: 'imported', timers: 0 }, 'the operator imports it');
  const messages: string[] = [];
  for await (const row of store.scan<{ id: number; content: string }>('messages', '9:')) messages.push(row.value.content);
  t.ok(messages.includes(publicText), 'with the channel message, under the new realm');
  t.ok(await T.realms.at(9).get(store), 'the organization exists in the target');

  const quiet = await Promise.race([waitFor(queues.member, (e) => e.type === 'realm_export', 1500).then(() => 'event'), new Promise((ok) => setTimeout(() => ok('none'), 1500))]);
  t.equal(quiet, 'none', 'members get no realm_export event');

  await owner.ok('DELETE', `/export/realm/${r.id}`);
  const deleted = exportIn(await waitFor(queues.owner, (e) => exportIn(e, r.id)?.deleted_timestamp != null), r.id)!;
  t.match(deleted, { pending: false, export_url: null });
  t.type(deleted.deleted_timestamp, 'number');
  t.equal((await fetchPage(owner, done.export_url!)).status, 404, 'the archive is gone');
  isError(t, await owner.delete(`/export/realm/${r.id}`), 400, 'BAD_REQUEST', /^Export already deleted$/);
  isError(t, await owner.delete('/export/realm/999999'), 400, 'BAD_REQUEST', /^Invalid data export ID$/);

  const snap = { exports: [] };
  for (const e of [pending, done]) applyEvent(snap, { type: 'realm_export', exports: [e] });
  t.same(snap.exports, [], 'realm_export has no register key: the snapshot is unchanged');
});

// Every member must consent: on the cluster's shared organization other suites add members meanwhile.
t.test('realm export - a full export once every member consented: direct messages and private channels included, credentials not', { skip: process.env.PARLEY_TEST_GATEWAYS ? 'needs an organization of its own' : false }, async (t) => {
  const humans = (await admin.ok('GET', '/export/realm/consents')).export_consents as Array<{ user_id: number }>;
  const people = Object.values(s.demo).filter((d) => humans.some((h) => h.user_id === d.userId));
  t.equal(people.length, humans.length, 'every member is a demo user this test can act as');
  for (const p of people) await s.api.as(p).ok('PATCH', '/settings', { allow_private_data_export: true });
  t.teardown(async () => {
    for (const p of people) await s.api.as(p).ok('PATCH', '/settings', { allow_private_data_export: false });
  });
  const secret = uniq('secret');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], invite_only: true });
  const privateText = uniq('private channel words');
  const dmText = uniq('direct words');
  await owner.ok('POST', '/messages', { type: 'stream', to: secret, topic: 'export', content: privateText });
  await owner.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([s.demo.member1.userId]), content: dmText });
  const q = await register(owner, EVENTS);
  const { id } = await owner.ok('POST', '/export/realm', { export_type: 'full_with_consent' });
  const done = await finished(q, id);
  t.match(done, { export_type: 'full_with_consent', pending: false, failed_timestamp: null });
  const archive = await fetchPage(admin, done.export_url!);
  t.equal(archive.status, 200, 'an administrator fetches it');
  const text = gunzipSync(archive.body).toString();
  t.ok(text.includes(privateText) && text.includes(dmText), 'private channel and direct messages are in it');
  const users = linesOf(archive.body).filter((l) => l.row?.[0] === 'users').map((l) => l.row[3]);
  t.ok(users.every((u) => u.passwordHash === null && u.apiKeys.length === 0), 'no credentials');
});

t.test('realm export - administrators only: every route refused to the other roles', async (t) => {
  for (const [role, api] of asRoles(s)) {
    const calls = [api.post('/export/realm'), api.get('/export/realm'), api.delete('/export/realm/1'), api.get('/export/realm/consents')];
    for (const [i, r] of (await Promise.all(calls)).entries()) {
      if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, `${role} ${i}`);
      else if (role === 'owner' || role === 'admin') {
        if (i !== 0 && i !== 2) t.equal(r.status, 200, `${role} ${i}`);
      } else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /^Must be an organization administrator$/, `${role} ${i}`);
    }
  }
});

t.test('realm export - export types, consents (with email_address_visibility, FL 430) and their realm_export_consent events, and the limit of five a week', async (t) => {
  isError(t, await admin.post('/export/realm', { export_type: 'private' }), 400, 'BAD_REQUEST', /^Invalid export_type$/);
  isError(t, await member.post('/export/realm', { export_type: 'private' }), 400, 'UNAUTHORIZED_PRINCIPAL', undefined, 'the role is checked first');
  // FL 449: the types are strings; the integers of before are refused as any other value.
  for (const old of [1, 2, 3]) isError(t, await admin.post('/export/realm', { export_type: old }), 400, 'BAD_REQUEST', /^Invalid export_type$/, `integer ${old} (before FL 449)`);
  // full_without_consent needs owner_full_content_access, false here (FL 438): refused to owners and administrators alike.
  const { realm_owner_full_content_access: fullAccess } = await owner.ok('POST', '/register', { fetch_event_types: ['realm'] });
  t.equal(fullAccess, false, 'owner_full_content_access is off');
  for (const api of [owner, admin]) isError(t, await api.post('/export/realm', { export_type: 'full_without_consent' }), 400, 'BAD_REQUEST', /^This organization does not allow full exports without member consent\.$/);
  isError(t, await member.post('/export/realm', { export_type: 'full_without_consent' }), 400, 'UNAUTHORIZED_PRINCIPAL', /^Must be an organization administrator$/);
  const before = (await admin.ok('GET', '/export/realm/consents')).export_consents as Array<{ user_id: number; consented: boolean }>;
  const visibility = (await member.ok('POST', '/register', { fetch_event_types: ['user_settings'] })).user_settings.email_address_visibility;
  t.same(before.find((c) => c.user_id === s.demo.member1.userId), { user_id: s.demo.member1.userId, consented: false, email_address_visibility: visibility }, 'with the user\'s email_address_visibility (FL 430)');
  await member.ok('PATCH', '/settings', { email_address_visibility: 4 });
  t.teardown(() => member.ok('PATCH', '/settings', { email_address_visibility: visibility }));
  const hidden = (await admin.ok('GET', '/export/realm/consents')).export_consents.find((c: { user_id: number }) => c.user_id === s.demo.member1.userId);
  t.equal(hidden.email_address_visibility, 4, 'a change of the setting shows (FL 430)');
  t.notOk(before.some((c) => c.user_id === s.demo.bot.userId), 'bots are not asked');
  const [adminQ, memberQ] = await Promise.all([register(admin, { event_types: ['realm_export_consent'] }), register(s.api.as(s.demo.member2), { event_types: ['realm_export_consent'] })]);
  await member.ok('PATCH', '/settings', { allow_private_data_export: true });
  t.teardown(() => member.ok('PATCH', '/settings', { allow_private_data_export: false }));
  const consent = await waitFor(adminQ, (e) => e.type === 'realm_export_consent' && e.user_id === s.demo.member1.userId);
  t.same(consent, { type: 'realm_export_consent', user_id: s.demo.member1.userId, consented: true, id: consent.id }, 'administrators hear of the consent');
  const quiet = await Promise.race([waitFor(memberQ, (e) => e.type === 'realm_export_consent', 1000).then(() => 'event'), new Promise((ok) => setTimeout(() => ok('none'), 1000))]);
  t.equal(quiet, 'none', 'other members do not');
  const after = (await admin.ok('GET', '/export/realm/consents')).export_consents as Array<{ user_id: number; consented: boolean }>;
  t.equal(after.find((c) => c.user_id === s.demo.member1.userId)?.consented, true, 'the consent shows');
  isError(t, await owner.post('/export/realm', { export_type: 'full_with_consent' }), 400, 'BAD_REQUEST', /^Make sure every member consents to the export of their private data/, 'a full export while some do not consent');
  // One export was made by the first test (two embedded, with the full one): the rest, then the limit.
  const ids: number[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await admin.post('/export/realm');
    if (r.status !== 200) {
      isError(t, r, 400, 'BAD_REQUEST', /^Exceeded rate limit\.$/);
      break;
    }
    ids.push(r.body.id);
  }
  t.ok(ids.length >= 1 && ids.length <= 4, `${ids.length} more exports, then the limit`);
  // Each realm_export event lists every export, so one wait sees the last of them finish (waiting for
  // each in turn would consume the event that finished the next one along with an earlier one's).
  const q = await register(admin, EVENTS);
  const listed = (await admin.ok('GET', '/export/realm')).exports as ExportObject[];
  const pending = new Set(ids.filter((id) => listed.find((e) => e.id === id)!.pending));
  if (pending.size) {
    await waitFor(q, (e) => {
      for (const id of pending) if (exportIn(e, id)?.pending === false) pending.delete(id);
      return pending.size === 0;
    }, 30_000);
  }
  const done = (await admin.ok('GET', '/export/realm')).exports as ExportObject[];
  t.ok(ids.every((id) => done.find((e) => e.id === id)?.export_url), 'each one finished with an archive');
  isError(t, await admin.post('/export/realm'), 400, 'BAD_REQUEST', /^Exceeded rate limit\.$/, 'deleting does not give the week back');
});
