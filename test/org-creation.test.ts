// The organization-creation page (/new/<token>) in a real browser (Chromium
// from Debian's packages, driven by playwright-core), then the new
// organization over HTTP at its own host; and the production setting, under
// which no demo is seeded. The server runs in this process (startParley) so
// the test can ask the directory actor for a creation link, as `parley org
// link` does; nothing else is seeded, as in production.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import t from 'tap';
import { DIRECTORY_ID, directoryRef, SERVER_CALLER } from '../actors/directory/ref.ts';
import { startParley } from '../lib/app.ts';
import { loadConfig } from '../lib/config.ts';
import { diesWithThisProcess, freePort } from '../scripts/cluster-launcher.ts';
import { serverArgs } from '../scripts/build.ts';
import type { Creds, Params } from './helpers/api.ts';
import { atHost } from './org-creation-http.ts';

const ROOT = resolve(import.meta.dirname, '..');
const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(ROOT, '.parley', 'test-logs');

const dir = mkdtempSync(join(tmpdir(), 'parley-orgs-'));
const port = await freePort();
// `<sub>.localhost` resolves to the loopback address in Chromium without DNS.
const site = `http://localhost:${port}`;
const parley = await startParley(loadConfig({ ...process.env, PARLEY_MODE: 'embedded', PARLEY_ROLE: 'all', PARLEY_PORT: String(port), PARLEY_METRICS_PORT: '0', PARLEY_DATA_DIR: join(dir, 'data'), PARLEY_SITE_URL: site }));
t.teardown(async () => {
  await parley.stop();
  rmSync(dir, { recursive: true, force: true });
});

const newLink = async () => (await parley.actors.call(directoryRef, DIRECTORY_ID, { type: 'createOrganizationLink', caller: SERVER_CALLER, validDays: 1 })).token;

const at = (sub: string, method: string, path: string, params?: Params, creds?: Creds) => atHost(`http://127.0.0.1:${port}`, sub, method, path, params, creds);

async function fillForm(page: Page, v: { name: string; subdomain: string; fullName: string; email: string; password: string; password2?: string }) {
  await page.fill('#name', v.name);
  await page.fill('#subdomain', v.subdomain);
  await page.fill('#full_name', v.fullName);
  await page.fill('#email', v.email);
  await page.fill('#password', v.password);
  await page.fill('#password2', v.password2 ?? v.password);
}

t.test('org creation - an unknown link is a clear page, not an error', async (t) => {
  const r = await at('', 'GET', '/new/not-a-token');
  t.equal(r.status, 404);
  t.match(r.body, /invalid, has expired or has already been used/);
  const posted = await at('', 'POST', '/new/not-a-token', { name: 'X', subdomain: 'xyz', full_name: 'X', email: 'x@x.example', password: 'long enough', password2: 'long enough' });
  t.equal(posted.status, 404, 'nor can it be posted to');
  t.match(posted.body, /invalid, has expired/);
  // A link past its validity (here under a second) is refused the same way.
  const { token } = await parley.actors.call(directoryRef, DIRECTORY_ID, { type: 'createOrganizationLink', caller: SERVER_CALLER, validDays: 0.5 / 86_400 });
  await new Promise((r) => setTimeout(r, 700));
  const expired = await at('', 'GET', `/new/${token}`);
  t.equal(expired.status, 404, 'an expired link');
  t.match(expired.body, /invalid, has expired/);
});

t.test('org creation - the page in a browser creates the organization and its owner', async (t) => {
  const token = await newLink();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const url = `${site}/new/${token}`;
  const shown = await page.goto(url);
  t.equal(shown?.status(), 200);
  t.match(await page.textContent('body'), `.localhost:${port}`, 'the form shows where the organization will live');
  const owner = { name: 'Acme Rockets', subdomain: 'acme', fullName: 'Ada Owner', email: 'ada@acme.example', password: 'correct horse battery' };
  // The form's own rules and the directory's subdomain rules show on the form, with the typed values kept.
  await fillForm(page, { ...owner, password2: 'something else' });
  await page.click('#submit');
  t.match(await page.textContent('#password_error'), /do not match/);
  t.equal(await page.inputValue('#name'), owner.name, 'the name is kept');
  t.equal(await page.inputValue('#password'), '', 'a password is never written back');
  for (const [subdomain, message] of [['ab', /length 3 or greater/], ['Bad_Name', /lowercase letters, numbers, and '-'s/], ['www', /reserved/]] as const) {
    await fillForm(page, { ...owner, subdomain });
    await page.click('#submit');
    t.match(await page.textContent('#subdomain_error'), message, `subdomain ${subdomain}`);
    t.equal(await page.inputValue('#email'), owner.email, 'the email is kept');
  }
  await fillForm(page, owner);
  await page.click('#submit');
  t.match(await page.textContent('#created'), 'Acme Rockets is ready');
  const realmUrl = `http://acme.localhost:${port}`;
  t.equal(await page.getAttribute('#realm_url', 'href'), realmUrl, 'the page links to the new organization');
  t.match(await page.textContent('#sign_in'), `${realmUrl}/api/v1/fetch_api_key`, 'and says how to sign in');
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, 'org-creation.png'), fullPage: true });

  // The organization lives at its host: sign-in with the password, its settings, its owner.
  const key = await at('acme', 'POST', '/api/v1/fetch_api_key', { username: owner.email, password: owner.password });
  t.equal(key.status, 200, `fetch_api_key at the new host: ${key.body.msg}`);
  const creds = { email: owner.email, apiKey: key.body.api_key as string };
  t.equal((await at('acme', 'POST', '/api/v1/fetch_api_key', { username: owner.email, password: 'wrong password' })).status, 401, 'a wrong password is refused');
  const settings = await at('acme', 'GET', '/api/v1/server_settings');
  t.equal(settings.body.realm_name, owner.name);
  t.equal(settings.body.realm_url, realmUrl);
  const users = await at('acme', 'GET', '/api/v1/users', {}, creds);
  t.equal(users.status, 200);
  const me = users.body.members.find((m: any) => m.email === owner.email);
  t.equal(me?.role, 100, 'the owner is an owner');
  t.equal(me?.full_name, owner.fullName);
  const root = await at('', 'GET', '/api/v1/users', {}, creds);
  t.equal(root.body.code, 'NONEXISTENT_SUBDOMAIN', 'the root host has no organization');
  const sent = await at('acme', 'POST', '/api/v1/messages', { type: 'direct', to: [me.user_id], content: 'first words' }, creds);
  t.equal(sent.status, 200, 'the owner writes in the new organization');

  // The link is used up: the page says so, and posting again creates nothing.
  const again = await page.goto(url);
  t.equal(again?.status(), 404);
  t.match(await page.textContent('#error'), /already been used/);
  const replay = await at('', 'POST', `/new/${token}`, { name: 'Again', subdomain: 'again', full_name: 'A', email: 'a@again.example', password: 'long enough', password2: 'long enough' });
  t.equal(replay.status, 404);
  t.equal((await at('again', 'GET', '/api/v1/server_settings')).body.realm_name, undefined, 'no organization at again');

  // A second link cannot take the subdomain now in use: the directory's message, on the form.
  await page.goto(`${site}/new/${await newLink()}`);
  await fillForm(page, { ...owner, name: 'Acme Again' });
  await page.click('#submit');
  t.match(await page.textContent('#subdomain_error'), /already in use/);
  t.equal(await page.inputValue('#name'), 'Acme Again');
  await page.screenshot({ path: join(SHOTS, 'org-creation-taken.png'), fullPage: true });
});

/** Runs `main.ts` with `env` until it prints `until` or exits; its output and exit code (null while it runs). */
function runMain(env: Record<string, string>, until: RegExp): Promise<{ out: string; code: number | null; stop: () => void }> {
  const data = mkdtempSync(join(tmpdir(), 'parley-prod-'));
  const child = spawn(process.execPath, serverArgs(), { cwd: ROOT, env: { ...process.env, PARLEY_PORT: '0', PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(data, 'data'), PARLEY_DEMO_DIR: join(data, 'demo'), PARLEY_LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  diesWithThisProcess(child);
  let out = '';
  const stop = () => {
    child.kill('SIGTERM');
    rmSync(data, { recursive: true, force: true });
  };
  return new Promise((res) => {
    const timer = setTimeout(() => res({ out, code: null, stop }), 30_000);
    const seen = (d: Buffer) => {
      out += d.toString();
      if (until.test(out)) {
        clearTimeout(timer);
        res({ out, code: null, stop });
      }
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => {
      clearTimeout(timer);
      res({ out, code, stop });
    });
  });
}

t.test('org creation - production never seeds the demo', async (t) => {
  const refused = await runMain({ PARLEY_PRODUCTION: 'true', PARLEY_SEED_DEMO: 'true' }, /never seeds/);
  refused.stop();
  t.match(refused.out, /PARLEY_SEED_DEMO: a production deployment \(PARLEY_PRODUCTION=true\) never seeds the demo organization/, 'an explicit PARLEY_SEED_DEMO=true is refused with a clear message');
  t.notMatch(refused.out, /at .*\.ts:\d+/, 'as a message, not a stack trace');
  const prod = await runMain({ PARLEY_PRODUCTION: 'true' }, /listening on http:\/\/[^:]+:\d+/);
  const port = Number(/listening on http:\/\/[^:]+:(\d+)/.exec(prod.out)?.[1]);
  t.ok(port > 0, 'production starts');
  const settings = await (await fetch(`http://127.0.0.1:${port}/api/v1/server_settings`)).json();
  t.equal(settings.realm_name, undefined, 'no organization at the root host: the demo was not seeded');
  await new Promise((r) => setTimeout(r, 500));
  prod.stop();
  t.notMatch(prod.out, /Demo organization|zuliprc/, 'no demo credentials printed');
  const demo = await runMain({}, /zuliprc/);
  demo.stop();
  t.match(demo.out, /Demo organization "Parley Demo"/, 'without the setting the demo is seeded, as the README\'s first command shows');
});
