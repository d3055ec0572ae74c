// Resumable uploads at /api/v1/tus (FL 295) through the real tus client (tus-js-client): chunked uploads, an
// interrupted one resumed at its offset through another gateway (in the cluster run), the finished file recorded
// as POST /user_uploads records it, linked in a message and fetched by a recipient; every refusal with tus's
// status; every role; expiry of an abandoned upload (embedded: its bytes leave the data directory).
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import * as tus from 'tus-js-client';
import type { Creds } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { newPerson } from './helpers/people.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const base = s.urls[0]!;
/** Resumptions and downloads go through the last gateway (in a cluster, not the one the upload began on). */
const other = s.urls[s.urls.length - 1]!;
const auth = (c: Creds) => ({ Authorization: `Basic ${Buffer.from(`${c.email}:${c.apiKey}`).toString('base64')}` });
const TUS = { 'Tus-Resumable': '1.0.0' };

interface Sent {
  method: string;
  url: string;
  offset: string | undefined;
}

/** Uploads `data` with tus-js-client; resolves with the last response's body (the file's `url` and `filename`) and the requests it sent. */
function tusUpload(c: Creds, data: Buffer, opts: Partial<tus.UploadOptions> & { gateway?: string; stopAfterChunks?: number } = {}) {
  const sent: Sent[] = [];
  let chunks = 0;
  return new Promise<{ body: any; url: string; sent: Sent[]; stopped: boolean }>((resolve, reject) => {
    const upload: tus.Upload = new tus.Upload(data, {
      endpoint: `${opts.gateway ?? base}/api/v1/tus`,
      headers: auth(c),
      metadata: { filename: 'report 2026.bin', filetype: 'application/octet-stream' },
      retryDelays: [],
      ...opts,
      onBeforeRequest(req) {
        sent.push({ method: req.getMethod(), url: req.getURL(), offset: req.getHeader('Upload-Offset') });
      },
      onChunkComplete() {
        if (opts.stopAfterChunks !== undefined && ++chunks === opts.stopAfterChunks) void upload.abort().then(() => resolve({ body: null, url: upload.url!, sent, stopped: true }));
      },
      onSuccess({ lastResponse }) {
        resolve({ body: JSON.parse(lastResponse.getBody()), url: upload.url!, sent, stopped: false });
      },
      onError: reject,
    });
    upload.start();
  });
}

const download = (c: Creds, url: string) => fetch(`${other}${url}`, { headers: auth(c) });
const raw = (method: string, url: string, headers: Record<string, string>, body?: Buffer) => fetch(url.startsWith('http') ? url : `${base}${url}`, { method, headers, body: body ? new Uint8Array(body) : undefined });
const message = async (r: Response) => ((await r.json()) as { message: string }).message;

t.test('tus - OPTIONS names the version, the extensions and the largest size', async (t) => {
  const r = await raw('OPTIONS', '/api/v1/tus', {});
  t.equal(r.status, 204);
  t.equal(r.headers.get('tus-version'), '1.0.0');
  t.equal(r.headers.get('tus-extension'), 'creation,creation-with-upload,expiration');
  t.equal(r.headers.get('tus-max-size'), String(25 * 1024 * 1024));
});

t.test('tus - tus-js-client uploads in chunks, resumes an interrupted upload at its offset through another gateway, and a recipient reads the linked file', async (t) => {
  const maria = s.api.as(s.demo.member1);
  const q = await register(maria, { event_types: ['attachment'] });
  const data = randomBytes(300 * 1024);
  const first = await tusUpload(s.demo.member1, data, { chunkSize: 64 * 1024, stopAfterChunks: 2 });
  t.ok(first.stopped, 'interrupted after two chunks');
  t.match(first.url, /\/api\/v1\/tus\/[A-Za-z0-9_-]{24}$/);
  t.same(first.sent.map((r) => [r.method, r.offset]), [['POST', undefined], ['PATCH', '0'], ['PATCH', String(64 * 1024)]]);
  const head = await raw('HEAD', first.url, { ...TUS, ...auth(s.demo.member1) });
  t.equal(head.status, 200);
  t.equal(head.headers.get('upload-offset'), String(128 * 1024));
  t.equal(head.headers.get('upload-length'), String(data.length));
  t.equal(head.headers.get('cache-control'), 'no-store');
  const expires = Date.parse(head.headers.get('upload-expires') ?? '');
  t.ok(expires > Date.now() + 3600_000, 'expires in a day');

  const resumeAt = first.url.replace(base, other);
  const done = await tusUpload(s.demo.member1, data, { uploadUrl: resumeAt, chunkSize: 64 * 1024, gateway: other });
  t.same(done.sent[0], { method: 'HEAD', url: resumeAt, offset: undefined }, 'asks the offset first');
  t.same(done.sent.slice(1).map((r) => r.offset), ['131072', '196608', '262144'], 'continues at it, without sending the first bytes again');
  t.match(done.body, { url: /^\/user_uploads\/\d+\/[0-9a-f]{2}\/[A-Za-z0-9_-]{24}\/report-2026\.bin$/, filename: 'report 2026.bin' });

  // Recorded as POST /user_uploads records it: the attachment event and GET /attachments.
  const added = await waitFor(q, (e) => e.type === 'attachment' && e.op === 'add' && `/user_uploads/${e.attachment.path_id}` === done.body.url);
  t.match(added.attachment, { name: 'report 2026.bin', size: data.length, message_ids: [] });
  t.ok((await maria.ok('GET', '/attachments')).attachments.some((a: any) => a.path_id === added.attachment.path_id));
  // A finished upload is complete to a client that asks again.
  const after = await raw('HEAD', first.url, { ...TUS, ...auth(s.demo.member1) });
  t.equal(after.headers.get('upload-offset'), String(data.length));

  const got = await download(s.demo.member1, done.body.url);
  t.ok(Buffer.from(await got.arrayBuffer()).equals(data), 'the bytes are the file, in order');
  t.equal((await download(s.demo.member2, done.body.url)).status, 403, 'not linked yet');
  await maria.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: `[report](${done.body.url})` });
  const read = await download(s.demo.member2, done.body.url);
  t.equal(read.status, 200);
  t.ok(Buffer.from(await read.arrayBuffer()).equals(data), 'the recipient reads it');
  t.equal(read.headers.get('content-type'), 'application/octet-stream');
});

t.test('tus - a PATCH cut off mid-body keeps the bytes that came, and tus-js-client resumes after them', async (t) => {
  const me = { ...TUS, ...auth(s.demo.member2) };
  const data = randomBytes(40_000);
  const made = await raw('POST', '/api/v1/tus', { ...me, 'Upload-Length': String(data.length), 'Upload-Metadata': `filename ${Buffer.from('cut.bin').toString('base64')}` });
  const path = made.headers.get('location')!;
  // The client sends 15,000 of the 40,000 bytes it announced, then its connection drops.
  const { hostname, port } = new URL(base);
  const sock = connect(Number(port), hostname);
  await new Promise((r) => sock.once('connect', r));
  const head = [`PATCH ${path} HTTP/1.1`, `Host: ${new URL(base).host}`, ...Object.entries({ ...me, 'Content-Type': 'application/offset+octet-stream', 'Upload-Offset': '0', 'Content-Length': String(data.length) }).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
  sock.write(head);
  sock.write(data.subarray(0, 15_000));
  await new Promise((r) => setTimeout(r, 300));
  sock.destroy();
  let offset = '0';
  for (const deadline = Date.now() + 10_000; offset !== '15000' && Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    offset = (await raw('HEAD', `${other}${path}`, me)).headers.get('upload-offset') ?? '';
  }
  t.equal(offset, '15000', 'the bytes that came are kept');
  const done = await tusUpload(s.demo.member2, data, { uploadUrl: `${other}${path}`, gateway: other });
  t.same(done.sent.map((r) => [r.method, r.offset]), [['HEAD', undefined], ['PATCH', '15000']]);
  t.ok(Buffer.from(await (await download(s.demo.member2, done.body.url)).arrayBuffer()).equals(data), 'the file is whole');
});

t.test('tus - every role uploads, with the bytes in the creating request and as an empty file; a deactivated user cannot', async (t) => {
  for (const key of DEMO_KEYS) {
    // At `/api/v1/tus/`, the endpoint Zulip's web app gives its tus client.
    const r = await tusUpload(s.demo[key], Buffer.from(`from ${key}`), { endpoint: `${base}/api/v1/tus/`, uploadDataDuringCreation: true, metadata: { filename: `${key}.txt`, filetype: 'text/plain' } });
    t.equal(r.sent.length, 1, `${key}: one request`);
    t.equal(await (await download(s.demo[key], r.body.url)).text(), `from ${key}`, key);
  }
  const empty = await tusUpload(s.demo.guest, Buffer.alloc(0), { metadata: { filename: 'empty.txt' } });
  t.equal(empty.body.filename, 'empty.txt');
  const got = await download(s.demo.guest, empty.body.url);
  t.equal(got.status, 200);
  t.equal((await got.arrayBuffer()).byteLength, 0);

  const p = await newPerson(s);
  const started = await tusUpload(p, randomBytes(2000), { chunkSize: 1000, stopAfterChunks: 1 });
  await s.api.as(s.demo.owner).ok('DELETE', `/users/${p.userId}`);
  const patch = await raw('PATCH', started.url, { ...TUS, ...auth(p), 'Content-Type': 'application/offset+octet-stream', 'Upload-Offset': '1000' }, randomBytes(1000));
  t.equal(patch.status, 401);
  t.equal(await message(patch), 'Unauthenticated upload');
  await t.rejects(tusUpload(p, Buffer.from('x')), /response code: 401/, 'tus-js-client reports the 401');
});

t.test('tus - refusals: version, credentials, size, deferred length, offset, type, unknown and others\' uploads, termination', async (t) => {
  const me = { ...TUS, ...auth(s.demo.member1) };
  const create = (headers: Record<string, string>) => raw('POST', '/api/v1/tus', headers);
  const noVersion = await create({ ...auth(s.demo.member1), 'Upload-Length': '10' });
  t.equal(noVersion.status, 412);
  t.equal(noVersion.headers.get('tus-version'), '1.0.0');
  t.equal((await create({ ...me, 'Tus-Resumable': '0.2.2', 'Upload-Length': '10' })).status, 412);
  const anonymous = await create({ ...TUS, 'Upload-Length': '10' });
  t.equal(anonymous.status, 401);
  t.equal(await message(anonymous), 'Unauthenticated upload');
  t.equal((await create({ ...TUS, ...auth({ email: s.demo.member1.email, apiKey: 'wrong' }), 'Upload-Length': '10' })).status, 401);
  const big = await create({ ...me, 'Upload-Length': String(25 * 1024 * 1024 + 1) });
  t.equal(big.status, 413);
  t.equal(await message(big), 'Uploaded file is larger than the allowed limit of 25 MiB');
  t.equal((await create({ ...me, 'Upload-Defer-Length': '1' })).status, 411);
  t.equal((await create(me)).status, 400, 'no Upload-Length');
  t.equal((await create({ ...me, 'Upload-Length': '10', 'Upload-Metadata': 'filename not*base64' })).status, 400);

  const made = await create({ ...me, 'Upload-Length': '10', 'Upload-Metadata': `filename ${Buffer.from('ten.txt').toString('base64')}` });
  t.equal(made.status, 201);
  const url = made.headers.get('location')!;
  t.match(url, /^\/api\/v1\/tus\/[A-Za-z0-9_-]{24}$/);
  const patch = (headers: Record<string, string>, body: Buffer, at = url) => raw('PATCH', at, { 'Content-Type': 'application/offset+octet-stream', ...headers }, body);
  const first = await patch({ ...me, 'Upload-Offset': '0' }, Buffer.from('01234'));
  t.equal(first.status, 204);
  t.equal(first.headers.get('upload-offset'), '5');
  const conflict = await patch({ ...me, 'Upload-Offset': '0' }, Buffer.from('01234'));
  t.equal(conflict.status, 409, 'at an offset already passed');
  t.equal((await patch({ ...me, 'Upload-Offset': '7' }, Buffer.from('7'))).status, 409, 'past the offset');
  t.equal((await patch({ ...me, 'Upload-Offset': '5' }, Buffer.from('567890'))).status, 413, 'more than the length');
  t.equal((await patch({ ...me, 'Upload-Offset': '5', 'Content-Type': 'text/plain' }, Buffer.from('56789'))).status, 415);
  t.equal((await patch({ ...me }, Buffer.from('56789'))).status, 400, 'no Upload-Offset');
  t.equal((await patch({ ...TUS, 'Upload-Offset': '5' }, Buffer.from('56789'))).status, 401);
  // Another user's upload is unknown to them (404), for HEAD and PATCH alike, through either gateway.
  const theirs = { ...TUS, ...auth(s.demo.admin) };
  t.equal((await patch({ ...theirs, 'Upload-Offset': '5' }, Buffer.from('56789'), `${other}${url}`)).status, 404);
  t.equal((await raw('HEAD', url, theirs)).status, 404);
  t.equal((await raw('HEAD', '/api/v1/tus/AAAAAAAAAAAAAAAAAAAAAAAA', me)).status, 404);
  t.equal((await patch({ ...me, 'Upload-Offset': '0' }, Buffer.from('x'), '/api/v1/tus/AAAAAAAAAAAAAAAAAAAAAAAA')).status, 404);
  const del = await raw('DELETE', url, me);
  t.equal(del.status, 405, 'termination is not offered');
  t.equal((await raw('HEAD', url, me)).headers.get('upload-offset'), '5', 'nothing refused changed the upload');
  const last = await patch({ ...me, 'Upload-Offset': '5' }, Buffer.from('56789'), `${other}${url}`);
  t.equal(last.status, 200);
  const body = (await last.json()) as { url: string; filename: string };
  t.equal(body.filename, 'ten.txt');
  t.equal(await (await download(s.demo.member1, body.url)).text(), '0123456789');
});

t.test('tus - an abandoned upload expires: its bytes and its row go (embedded, with a short expiry)', { skip: s.dataDir ? false : 'needs a server of its own with PARLEY_TUS_EXPIRY_SECS' }, async (t) => {
  const short = await serverFor(t, { env: { PARLEY_TUS_EXPIRY_SECS: '2' } });
  const me = { ...TUS, ...auth(short.demo.member1) };
  const made = await fetch(`${short.urls[0]}/api/v1/tus`, { method: 'POST', headers: { ...me, 'Upload-Length': '10', 'Content-Type': 'application/offset+octet-stream' }, body: new Uint8Array(Buffer.from('01234')) });
  t.equal(made.status, 201);
  t.equal(made.headers.get('upload-offset'), '5');
  const url = `${short.urls[0]}${made.headers.get('location')}`;
  const id = url.split('/').pop()!;
  const uploads = join(short.dataDir!, 'data', 'uploads');
  const part = readdirSync(uploads).map((realm) => join(uploads, realm, 'tus', id, '0')).find((p) => existsSync(p)) ?? '';
  t.ok(existsSync(part), 'the received bytes are in the data directory');
  const deadline = Date.now() + 10_000;
  while (existsSync(part) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  t.notOk(existsSync(part), 'removed at expiry');
  const head = await fetch(url, { method: 'HEAD', headers: me });
  t.equal(head.status, 404, 'and the upload is gone');
  const late = await fetch(url, { method: 'PATCH', headers: { ...me, 'Content-Type': 'application/offset+octet-stream', 'Upload-Offset': '5' }, body: new Uint8Array(Buffer.from('56789')) });
  t.equal(late.status, 404);
});
