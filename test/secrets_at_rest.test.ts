/**
 * Secrets at rest: the embedded data directory and the demo zuliprc files are
 * the server's user's alone (0700 directories, 0600 files), also when they
 * were made looser by an older version; and no secret reaches the logs.
 * Always an embedded server of its own (the data directory is the point).
 */
import { chmodSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { logOptions } from '../lib/log.ts';
import { serverFor } from './helpers/server.ts';

const mode = (path: string) => statSync(path).mode & 0o777;

/** Every directory and file under `dir`, with its mode. */
function modes(dir: string): Array<[string, number]> {
  const out: Array<[string, number]> = [[dir, mode(dir)]];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(e.parentPath, e.name);
    out.push([path, mode(path)]);
  }
  return out;
}

t.test('secrets at rest - the data directory, uploads and zuliprc files are private to the server user', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-perm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // As an older version left them: world-readable.
  mkdirSync(join(dir, 'demo'), { mode: 0o755 });
  chmodSync(join(dir, 'demo'), 0o755);
  const s = await serverFor(t, { dataDir: dir, env: { PARLEY_LOG_LEVEL: 'warn' } });
  const owner = s.api.as(s.demo.owner);
  const form = new FormData();
  form.append('file', new Blob(['secret bytes'], { type: 'text/plain' }), 'note.txt');
  const up = await fetch(`${s.urls[0]}/api/v1/user_uploads`, { method: 'POST', body: form, headers: { authorization: `Basic ${Buffer.from(`${s.demo.owner.email}:${s.demo.owner.apiKey}`).toString('base64')}` } });
  t.equal(up.status, 200, 'an upload is stored');
  t.ok((await owner.call('GET', '/users/me')).status === 200);
  const loose = [...modes(join(dir, 'data')), ...modes(join(dir, 'demo'))].filter(([path, m]) => (statSync(path).isDirectory() ? m !== 0o700 : m !== 0o600));
  t.same(loose.map(([p, m]) => `${p} ${m.toString(8)}`), [], 'every directory 0700 and every file 0600');
  t.ok(readdirSync(join(dir, 'data')).some((f) => f.endsWith('.mdb')), 'the lmdb files are among them');
  await s.stop();

  // Files a looser version left are tightened at the next start.
  for (const [path] of modes(join(dir, 'data'))) chmodSync(path, statSync(path).isDirectory() ? 0o755 : 0o644);
  for (const f of readdirSync(join(dir, 'demo'))) chmodSync(join(dir, 'demo', f), 0o644);
  const again = await s.restart();
  t.teardown(() => again.stop());
  t.equal(mode(join(dir, 'data')), 0o700, 'data directory tightened');
  t.same(readdirSync(join(dir, 'data')).filter((f) => f.endsWith('.mdb')).map((f) => mode(join(dir, 'data', f)).toString(8)), ['600', '600'], 'lmdb files tightened');
  t.same(readdirSync(join(dir, 'demo')).map((f) => mode(join(dir, 'demo', f)).toString(8)), Array(readdirSync(join(dir, 'demo')).length).fill('600'), 'zuliprc files tightened');
});

t.test('secrets at rest - keys, passwords and authorization headers are redacted in log lines', async (t) => {
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
  const log = pino({ ...logOptions, level: 'info' }, sink);
  log.info({ apiKey: 'k-123', password: 'p-456', headers: { authorization: 'Basic czNjcjN0' }, msg: { api_key: 'k-789', email: 'a@b.c' } }, 'a request');
  log.info({ err: { password: 'p-000' } }, 'failed');
  const text = lines.join('');
  for (const secret of ['k-123', 'p-456', 'czNjcjN0', 'k-789', 'p-000']) t.notOk(text.includes(secret), `${secret} not logged`);
  t.ok(text.includes('a@b.c'), 'other fields are kept');
  t.ok(text.includes('[redacted]'));
});
