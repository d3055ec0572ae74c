// Uploads: POST /user_uploads, served to the uploader and to readers of a message that links the file.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { type Creds, uniq } from './helpers/api.ts';
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
/** Downloads go through the last gateway: in a cluster, not the one the file was uploaded through. */
const download = async (c: Creds | null, url: string) => fetch(`${s.urls[s.urls.length - 1]}/api/v1${url}`, { headers: c ? auth(c) : {} });

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
  t.equal(limit, 5);
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
