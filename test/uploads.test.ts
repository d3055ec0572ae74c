// Uploads: POST /user_uploads; the file at its /user_uploads/... URL (outside /api/v1, with Basic credentials or
// ?api_key=) for the uploader and readers of a message that links it; temporary URLs from GET /api/v1/user_uploads/....
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { type Creds, uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const base = s.urls[0]!;
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const auth = (c: Creds) => ({ authorization: `Basic ${Buffer.from(`${c.email}:${c.apiKey}`).toString('base64')}` });
const channel = uniq('uploads');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });

async function upload(c: Creds | null, files: Array<{ name: string; type: string; data: Buffer }>) {
  const fd = new FormData();
  for (const f of files) fd.append('file', new Blob([new Uint8Array(f.data)], { type: f.type }), f.name);
  const res = await fetch(`${base}/api/v1/user_uploads`, { method: 'POST', headers: c ? auth(c) : {}, body: fd });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}
/** Downloads go through the last gateway (in a cluster, not the one the file was uploaded through), at the URL as content links it. */
const last = s.urls[s.urls.length - 1]!;
const download = async (c: Creds | null, url: string) => fetch(`${last}${url}`, { headers: c ? auth(c) : {} });
/** GET /api/v1/user_uploads/...: the temporary URL (JSON). */
const temporaryUrl = async (c: Creds, url: string) => {
  const res = await fetch(`${base}/api/v1${url}`, { headers: auth(c) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

/** GET /api/v1/thumbnail/status/... (FL 479) for the upload at `url`. */
const thumbnailStatus = async (c: Creds, url: string) => temporaryUrl(c, url.replace(/^\/user_uploads/, '/thumbnail/status'));

t.test('uploads - upload and download by the uploader; every role may upload; 401 without credentials', async (t) => {
  const data = randomBytes(300 * 1024);
  const r = await upload(s.demo.member1, [{ name: 'my report.pdf', type: 'application/pdf', data }]);
  t.equal(r.status, 200);
  t.match(r.body.url, /^\/user_uploads\/\d+\/[0-9a-f]{2}\/[A-Za-z0-9_-]{24}\/my-report\.pdf$/);
  t.equal(r.body.uri, r.body.url);
  t.equal(r.body.filename, 'my report.pdf');
  const got = await download(s.demo.member1, r.body.url);
  t.equal(got.status, 200);
  t.equal(got.headers.get('content-type'), 'application/pdf');
  t.ok(Buffer.from(await got.arrayBuffer()).equals(data));
  for (const key of DEMO_KEYS) t.equal((await upload(s.demo[key], [{ name: 'a.txt', type: 'text/plain', data: Buffer.from(key) }])).status, 200, key);
  t.equal((await upload(null, [{ name: 'a.txt', type: 'text/plain', data: Buffer.from('x') }])).status, 401);
  t.equal((await download(null, r.body.url)).status, 401);
});

t.test('uploads - others may download only once a message they can read links the file', async (t) => {
  const r = await upload(s.demo.member1, [{ name: 'cat.png', type: 'image/png', data: Buffer.from('not really a png') }]);
  const before = await download(s.demo.member2, r.body.url);
  t.equal(before.status, 403);
  t.equal(((await before.json()) as any).msg, 'You are not authorized to view this file.');
  await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'files', content: `[cat.png](${r.body.url})` });
  const after = await download(s.demo.member2, r.body.url);
  t.equal(after.status, 200);
  t.equal(await after.text(), 'not really a png');
  t.match(after.headers.get('content-disposition') ?? '', /^inline/);
  // A direct message between others does not open it to a third user.
  const secret = await upload(s.demo.member1, [{ name: 's.txt', type: 'text/plain', data: Buffer.from('secret') }]);
  await maria.ok('POST', '/messages', { type: 'direct', to: [s.demo.admin.userId], content: `[s](${secret.body.url})` });
  t.equal((await download(s.demo.admin, secret.body.url)).status, 200);
  t.equal((await download(s.demo.member2, secret.body.url)).status, 403);
  const missing = await download(s.demo.member1, r.body.url.replace(/\/[^/]+$/, '/other.png'));
  t.equal(missing.status, 404);
  const withFile = await s.api.as(s.demo.member2).ok('GET', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'channel', operand: channel }, { operator: 'has', operand: 'attachment' }] });
  t.ok(withFile.messages.length >= 1 && withFile.messages.every((m: any) => m.content.includes('/user_uploads/')), 'has:attachment');
});

t.test('uploads - an image link to an uploaded audio file is an audio player, as Zulip renders it (FL 405); other links stay links', async (t) => {
  const r = await upload(s.demo.member1, [{ name: 'crab rave.mp3', type: 'audio/mpeg', data: Buffer.from('not really an mp3') }]);
  const url = r.body.url as string;
  const content = `![crab rave.mp3](${url})\n\n![](${url})\n\n[crab rave.mp3](${url})\n\n![song.mp3](https://example.com/song.mp3)`;
  const id = (await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'audio', content })).id;
  const html = (await maria.ok('GET', `/messages/${id}`)).message.content as string;
  const paragraphs = html.split('\n');
  t.equal(paragraphs[0], `<p><audio controls preload="metadata" src="${url}" title="crab rave.mp3"></audio></p>`);
  t.equal(paragraphs[1], `<p><audio controls preload="metadata" src="${url}"></audio></p>`, 'no title without a name');
  t.equal(paragraphs[2], `<p><a href="${url}">crab rave.mp3</a></p>`, 'a plain link to it stays a link');
  t.notMatch(paragraphs[3], /<audio/, 'a file that is not an upload of this server is no player');
  t.equal((await download(s.demo.member2, url)).status, 200, 'the player links the file for the readers, as a link does');
  t.equal((await maria.ok('POST', '/messages/render', { content: `![a.ogg](${url.replace(/[^/]+$/, 'a.ogg')})` })).rendered, `<p><audio controls preload="metadata" src="${url.replace(/[^/]+$/, 'a.ogg')}" title="a.ogg"></audio></p>`);
});

t.test('uploads - an edit that adds a link opens the file to the readers; one that removes it closes it', async (t) => {
  const r = await upload(s.demo.member1, [{ name: 'late.txt', type: 'text/plain', data: Buffer.from('added later') }]);
  const { id } = await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'files', content: 'a file follows' });
  t.equal((await download(s.demo.member2, r.body.url)).status, 403, 'not linked yet');
  await maria.ok('PATCH', `/messages/${id}`, { content: `here it is: [late.txt](${r.body.url})` });
  t.equal((await download(s.demo.member2, r.body.url)).status, 200, 'linked by the edit');
  await maria.ok('PATCH', `/messages/${id}`, { content: 'never mind' });
  t.equal((await download(s.demo.member2, r.body.url)).status, 403, 'unlinked by the next edit');
});

t.test('uploads - errors: no file, two files, too large', async (t) => {
  const none = await fetch(`${base}/api/v1/user_uploads`, { method: 'POST', headers: auth(s.demo.member1), body: new FormData() });
  t.equal(((await none.json()) as any).msg, 'You must specify a file.');
  const two = await upload(s.demo.member1, [{ name: 'a', type: 'text/plain', data: Buffer.from('a') }, { name: 'b', type: 'text/plain', data: Buffer.from('b') }]);
  t.same([two.status, two.body.msg], [400, 'You may only upload one file at a time.']);
  const limit = (await owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).max_file_upload_size_mib;
  t.equal(limit, 25);
  const big = await upload(s.demo.member1, [{ name: 'big', type: 'application/octet-stream', data: Buffer.alloc(limit * 1024 * 1024 + 10) }]);
  t.same([big.status, big.body.code, big.body.msg], [400, 'BAD_REQUEST', `File is larger than this server's configured maximum upload size (${limit} MiB).`]);
  // Other routes still refuse files.
  const fd = new FormData();
  fd.append('file', new Blob(['x']), 'x.txt');
  const elsewhere = await fetch(`${base}/api/v1/messages`, { method: 'POST', headers: auth(s.demo.member1), body: fd });
  t.equal(((await elsewhere.json()) as any).msg, 'File uploads are not accepted by this endpoint');
});

t.test('uploads - a file name too long for a path segment is cut, keeping its extension', async (t) => {
  const name = `${'é'.repeat(300)}.txt`;
  const r = await upload(s.demo.member1, [{ name, type: 'text/plain', data: Buffer.from('long name') }]);
  t.equal(r.status, 200, JSON.stringify(r.body).slice(0, 200));
  t.equal(r.body.filename, name, 'the name as sent is reported back');
  const stored = decodeURIComponent(r.body.url.split('/').pop());
  t.match(stored, /^é+\.txt$/);
  t.ok(Buffer.byteLength(stored) <= 200, `${Buffer.byteLength(stored)} bytes in the path`);
  const got = await download(s.demo.member1, r.body.url);
  t.equal(got.status, 200);
  t.equal(await got.text(), 'long name');
});

t.test('uploads - a path naming no file is 404, however long its segments', async (t) => {
  for (const url of ['/user_uploads/1/ab/cd/none.txt', `/user_uploads/1/${'9'.repeat(5_000)}/cd/none.txt`, `/user_uploads/1/ab/cd/${'é'.repeat(2_000)}`]) {
    const r = await download(s.demo.member1, url);
    t.equal(r.status, 404, `${url.slice(0, 40)}… (${url.length} chars)`);
    t.match(await r.json(), { result: 'error', msg: 'File not found.' });
  }
});

t.test('uploads - the official Python client: upload_file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-py-upload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'notes.txt');
  writeFileSync(file, 'from python');
  const out = runPython(base, s.demo.member2, `
with open(${JSON.stringify(file)}, "rb") as fp:
    r = client.upload_file(fp)
print(json.dumps(r))`) as any;
  t.equal(out.result, 'success');
  t.match(out.url, /\/notes\.txt$/);
  t.equal(await (await download(s.demo.member2, out.url)).text(), 'from python');
});

t.test('uploads - ?api_key= alone at the file URL (as Zulip takes it); a wrong key or other credentials are 401', async (t) => {
  const r = await upload(s.demo.member1, [{ name: 'key.txt', type: 'text/plain', data: Buffer.from('by key') }]);
  const byKey = await fetch(`${last}${r.body.url}?api_key=${encodeURIComponent(s.demo.member1.apiKey)}`);
  t.equal(byKey.status, 200);
  t.equal(await byKey.text(), 'by key');
  t.equal((await fetch(`${last}${r.body.url}?api_key=${encodeURIComponent(s.demo.member2.apiKey)}`)).status, 403, "another user's key: that user's access");
  const wrong = await fetch(`${last}${r.body.url}?api_key=nope`);
  t.same([wrong.status, ((await wrong.json()) as any).code], [401, 'UNAUTHORIZED']);
  const badBasic = await download({ email: s.demo.member1.email, apiKey: 'wrong' }, r.body.url);
  t.same([badBasic.status, ((await badBasic.json()) as any).msg], [401, 'Invalid API key']);
});

t.test('uploads - GET /api/v1/user_uploads/... gives a temporary URL that serves the file without credentials, on any gateway, for 60 s', async (t) => {
  const data = randomBytes(64 * 1024);
  const r = await upload(s.demo.member1, [{ name: 'photo.jpg', type: 'image/jpeg', data }]);
  const mine = await temporaryUrl(s.demo.member1, r.body.url);
  t.equal(mine.status, 200);
  t.match(mine.body.url, /^\/user_uploads\/temporary\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\/photo\.jpg$/);
  const expires = JSON.parse(Buffer.from(mine.body.url.split('/')[3].split('.')[0], 'base64url').toString('utf8')).e;
  t.ok(Math.abs(expires - (Date.now() / 1000 + 60)) < 5, 'it expires in 60 s');
  for (const gateway of s.urls) {
    const got = await fetch(`${gateway}${mine.body.url}`);
    t.equal(got.status, 200, `served by ${gateway}`);
    t.equal(got.headers.get('content-type'), 'image/jpeg');
    t.ok(Buffer.from(await got.arrayBuffer()).equals(data));
  }
  // Who may have a URL: as who may download it.
  const other = await temporaryUrl(s.demo.member2, r.body.url);
  t.same([other.status, other.body.msg], [403, 'You are not authorized to view this file.']);
  t.same((await temporaryUrl(s.demo.member1, r.body.url.replace(/\/[^/]+$/, '/none.jpg'))).status, 404);
  t.equal((await fetch(`${base}/api/v1${r.body.url}`)).status, 401, 'without credentials');
  // A token altered, one for another name, or one not signed by this server: 400, as Zulip.
  const [, , , token, name] = mine.body.url.split('/');
  const flipped = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
  const cases: Array<[string, string]> = [
    [`/user_uploads/temporary/${flipped}/${name}`, 'Invalid token'],
    [`/user_uploads/temporary/${token}/other.jpg`, 'Invalid filename'],
    [`/user_uploads/temporary/not-a-token/${name}`, 'Invalid token'],
    [`/user_uploads/temporary/${Buffer.from(JSON.stringify({ u: s.demo.member1.userId, p: r.body.url.slice(14), e: 9e9 })).toString('base64url')}.forged/${name}`, 'Invalid token'],
    [`/user_uploads/temporary/${Buffer.from(JSON.stringify({ u: 987_654_321, p: r.body.url.slice(14), e: 9e9 })).toString('base64url')}.forged/${name}`, 'Invalid token'],
  ];
  for (const [url, msg] of cases) {
    const res = await fetch(`${last}${url}`);
    t.same([res.status, ((await res.json()) as any).msg], [400, msg], url.slice(0, 60));
  }
});

t.test('uploads - a temporary URL stops working when it expires', { skip: process.env.PARLEY_TEST_GATEWAYS ? 'starts an embedded server with a short URL lifetime; a cluster run has the shared one' : false }, async (t) => {
  // URLs live 60 s by default (tested above through the expiry they carry); this server's live 4 s
  // (1 s expired between making the URL and fetching it when the machine was loaded).
  const quick = await serverFor(t, { env: { PARLEY_FILE_URL_TTL_SECS: '4' } });
  const fd = new FormData();
  fd.append('file', new Blob(['soon gone'], { type: 'text/plain' }), 'soon.txt');
  const up = (await (await fetch(`${quick.urls[0]}/api/v1/user_uploads`, { method: 'POST', headers: auth(quick.demo.member1), body: fd })).json()) as any;
  const made = (await (await fetch(`${quick.urls[0]}/api/v1${up.url}`, { headers: auth(quick.demo.member1) })).json()) as any;
  t.equal(await (await fetch(`${quick.urls[0]}${made.url}`)).text(), 'soon gone', 'good at once');
  await new Promise((r) => setTimeout(r, 5500));
  const late = await fetch(`${quick.urls[0]}${made.url}`);
  t.same([late.status, ((await late.json()) as any).msg], [400, 'Invalid token'], 'refused once expired');
});

t.test('uploads - the Python client: upload_file, then the file at its URL with the session of the client, and its temporary URL', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-py-upload-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'report.txt');
  writeFileSync(file, 'fetched by python');
  const out = runPython(base, s.demo.member1, `
with open(${JSON.stringify(file)}, "rb") as fp:
    up = client.upload_file(fp)
client.ensure_session()
site = client.base_url[: -len("/api/")] if client.base_url.endswith("/api/") else client.base_url.rsplit("/api", 1)[0]
direct = client.session.get(site + up["uri"])
temp = client.call_endpoint(url="user_uploads/" + up["uri"][len("/user_uploads/"):], method="GET")
anon = __import__("requests").get(site + temp["url"])
print(json.dumps({"direct": [direct.status_code, direct.text], "temp": temp["result"], "anon": [anon.status_code, anon.text]}))`) as any;
  t.same(out.direct, [200, 'fetched by python'], 'Basic credentials of the client session at the server root');
  t.equal(out.temp, 'success');
  t.same(out.anon, [200, 'fetched by python'], 'the temporary URL, without credentials');
});

t.test('uploads - by role: a file linked in a public channel is for every member who may read its history, not for a guest outside it; its thumbnail status likewise (FL 479)', async (t) => {
  const open = uniq('uploads-open');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: open }], principals: [s.demo.owner.userId, s.demo.member1.userId] });
  const r = await upload(s.demo.member1, [{ name: 'plan.txt', type: 'text/plain', data: Buffer.from('the plan') }]);
  await maria.ok('POST', '/messages', { type: 'stream', to: open, topic: 'files', content: `[plan](${r.body.url})` });
  const expected: Record<string, number> = { owner: 200, admin: 200, moderator: 200, member1: 200, member2: 200, bot: 200, guest: 403 };
  for (const [who, status] of Object.entries(expected)) {
    const creds = s.demo[who as keyof typeof s.demo];
    t.equal((await download(creds, r.body.url)).status, status, `${who}: the file`);
    t.equal((await temporaryUrl(creds, r.body.url)).status, status, `${who}: a temporary URL`);
    const thumb = await thumbnailStatus(creds, r.body.url);
    t.same([thumb.status, thumb.body.has_thumbnail], [status, status === 200 ? false : undefined], `${who}: GET /thumbnail/status (FL 479): no thumbnail is made here`);
  }
  const missing = await thumbnailStatus(s.demo.member1, r.body.url.replace(/\/[^/]+$/, '/other.txt'));
  t.same([missing.status, missing.body.msg], [404, 'File not found.'], 'the status of no file is 404');
  const anonymous = await fetch(`${base}/api/v1${r.body.url.replace(/^\/user_uploads/, '/thumbnail/status')}`);
  t.equal(anonymous.status, 401);
});

t.test('attachments - GET /attachments with message_ids, DELETE /attachments/{id}, attachment events with upload_space_used, by role', async (t) => {
  const q = await register(maria, { event_types: ['attachment'] });
  const data = randomBytes(2000);
  const r = await upload(s.demo.member1, [{ name: 'listed.bin', type: 'application/octet-stream', data }]);
  const path = r.body.url.replace('/user_uploads/', '');
  const added = await waitFor(q, (e) => e.type === 'attachment' && e.op === 'add' && e.attachment.path_id === path);
  t.match(added.attachment, { name: 'listed.bin', path_id: path, size: 2000, message_ids: [] });
  t.ok(added.upload_space_used >= 2000, 'the realm total counts the file');
  const before = await maria.ok('GET', '/attachments');
  const mine = before.attachments.find((a: any) => a.path_id === path);
  t.same(mine, added.attachment, 'GET /attachments gives what the event gave');
  t.ok(Math.abs(mine.create_time - Date.now() / 1000) < 60, 'create_time in seconds (FL 443)');
  t.ok(before.upload_space_used >= 2000);

  const { id } = await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'files', content: `[listed](${r.body.url})` });
  const after = (await maria.ok('GET', '/attachments')).attachments.find((a: any) => a.path_id === path);
  t.same(after.message_ids, [id], 'the linking message by ID (FL 472; FL 22 gave {id, date_sent} objects in messages)');
  t.notOk('messages' in after, 'no messages field since FL 472');
  t.notOk((await s.api.as(s.demo.member2).ok('GET', '/attachments')).attachments.some((a: any) => a.path_id === path), 'only the owner lists it');

  // Another user cannot delete it: IDs name the caller's own uploads only.
  const other = await s.api.as(s.demo.member2).call('DELETE', '/attachments/999999');
  t.equal(other.status, 400);
  t.equal(other.body.msg, 'Invalid attachment');
  const total = (await maria.ok('GET', '/attachments')).upload_space_used;
  await maria.ok('DELETE', `/attachments/${mine.id}`);
  const removed = await waitFor(q, (e) => e.type === 'attachment' && e.op === 'remove' && e.attachment.id === mine.id);
  t.equal(removed.upload_space_used, total - 2000, 'the realm total drops by the file');
  t.notOk((await maria.ok('GET', '/attachments')).attachments.some((a: any) => a.id === mine.id), 'no longer listed');
  t.equal((await download(s.demo.member1, r.body.url)).status, 404, 'the file is gone');
  t.equal((await maria.call('DELETE', `/attachments/${mine.id}`)).body.msg, 'Invalid attachment', 'deleting twice');
  for (const key of DEMO_KEYS) t.equal((await s.api.as(s.demo[key]).call('GET', '/attachments')).status, 200, key);
  t.equal((await s.api.get('/attachments', {}, { creds: null })).status, 401);
});

t.test('attachments - the rest of FL 22: invited_by_user_id in GET /invites; unlimited realm_message_retention_days is -1', async (t) => {
  const email = `${uniq('fl22')}@example.com`;
  await owner.ok('POST', '/invites', { invitee_emails: email, stream_ids: [], invite_expires_in_minutes: 60 });
  const invite = (await owner.ok('GET', '/invites')).invites.find((i: any) => i.email === email);
  t.equal(invite.invited_by_user_id, s.demo.owner.userId);
  await owner.ok('DELETE', `/invites/${invite.id}`);
  const was = (await owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_message_retention_days;
  t.teardown(() => owner.ok('PATCH', '/realm', { message_retention_days: was === -1 ? 'unlimited' : was }));
  await owner.ok('PATCH', '/realm', { message_retention_days: 'unlimited' });
  t.equal((await owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_message_retention_days, -1);
});
