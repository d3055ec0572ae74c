/**
 * The server-wide address index (`actors/directory/accounts.ts`), in both
 * modes: what the directory holds for an address after each kind of change
 * a realm tells it of (a new user, a deactivation, a new address, a user
 * deleted for good, an organization's creator), read with the operator's
 * `parley org accounts <address>` (the CLI reaches the embedded server
 * through its admin socket, a cluster over NATS, where the realm and the
 * directory may live on different nodes and the index is in Cassandra).
 * The onboarding emails it decides are in signup-email.test.ts.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import t, { type Test } from 'tap';
import { DEMO_REALM_ID } from '../lib/demo.ts';
import { uniq } from './helpers/api.ts';
import { serverFor, startServer } from './helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '..');
const server = await startServer();
t.teardown(() => server.stop());
const owner = server.api.as(server.demo.owner);
const work = mkdtempSync(join(tmpdir(), 'parley-accounts-'));
const cliEnv: Record<string, string> = server.dataDir ? { PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(server.dataDir, 'data') } : { PARLEY_MODE: 'cluster' };

function parley(...args: string[]): Promise<any> {
  return parleyAt(cliEnv, ...args);
}

function parleyAt(env: Record<string, string>, ...args: string[]): Promise<any> {
  return new Promise((done, fail) =>
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), '--json', ...args], { cwd: work, env: { ...process.env, ...env } }, (err, stdout, stderr) =>
      err ? fail(new Error(`parley ${args.join(' ')}: ${stderr}`)) : done(JSON.parse(stdout)),
    ),
  );
}

type Account = { realm_id: number; user_id: number };
const accounts = (address: string): Promise<Account[]> => parley('org', 'accounts', address);

/** Waits until the index holds `want` for `address` (its follow-ups run after the commits), then checks it. */
async function expectAccounts(t: Test, address: string, want: Account[], what: string) {
  const until = Date.now() + 20_000;
  let got = await accounts(address);
  while (JSON.stringify(got) !== JSON.stringify(want) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 300));
    got = await accounts(address);
  }
  t.same(got, want, what);
}

t.test('address index - new, deactivated, moved and deleted accounts; a second organization of the same address; case aside', async (t) => {
  const address = `${uniq('Twice')}@Accounts.Example`;
  const { user_id } = await owner.ok('POST', '/users', { email: address, password: 'a good long password', full_name: `Index Person ${uniq('n').slice(-5)}` });
  await expectAccounts(t, address.toLowerCase(), [{ realm_id: DEMO_REALM_ID, user_id }], 'a new user is indexed under the lower-cased address');

  await owner.ok('DELETE', `/users/${user_id}`);
  await new Promise((r) => setTimeout(r, 500));
  t.same(await accounts(address), [{ realm_id: DEMO_REALM_ID, user_id }], 'deactivated, still counted (as Zulip counts every profile)');

  const subdomain = uniq('second').toLowerCase().replace(/[^a-z0-9]/g, '').slice(0, 20);
  const created = await parley('org', 'create', '--name', 'Second Home', '--subdomain', subdomain, '--owner-email', address.toUpperCase(), '--owner-name', 'Second Owner', '--zuliprc', join(work, `${subdomain}.zuliprc`));
  const realmId = created.organization.realmId as number;
  t.ok(realmId > 0 && realmId !== DEMO_REALM_ID, 'a second organization');
  const both = await (async () => {
    const until = Date.now() + 20_000;
    let got = await accounts(address);
    while (got.length < 2 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 300));
      got = await accounts(address);
    }
    return got;
  })();
  t.equal(both.length, 2, 'its creator is indexed under the same address');
  t.same(both[0], { realm_id: DEMO_REALM_ID, user_id });
  t.equal(both[1]!.realm_id, realmId);

  const moved = `${uniq('moved')}@accounts.example`;
  await owner.ok('PATCH', `/users/${user_id}`, { new_email: moved });
  await expectAccounts(t, address, [both[1]!], 'a new address: the account leaves the old one');
  await expectAccounts(t, moved, [{ realm_id: DEMO_REALM_ID, user_id }], 'and is under the new one');

  await parley('users', '--org', '.', 'delete', String(user_id), '--preserve-messages');
  await expectAccounts(t, moved, [], 'deleted for good: no longer indexed (Zulip scrubs the address)');
  t.same(await accounts(address), [both[1]!], 'the other organization keeps its account');
});

t.test('address index - the follow-up runs after a crash between the commit and it', { skip: server.dataDir ? false : 'restarts an embedded server of its own' }, async (t) => {
  // The follow-up waits 8 s after the commit here, so that the server can be killed in between.
  let srv = await serverFor(t, { env: { PARLEY_FOLLOW_UP_DELAY_MS: '8000' } });
  const env = { PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(srv.dataDir!, 'data') };
  const address = `${uniq('crash')}@accounts.example`;
  const { user_id } = await srv.api.as(srv.demo.owner).ok('POST', '/users', { email: address, password: 'a good long password', full_name: `Crash Person ${uniq('n').slice(-5)}` });
  t.same(await parleyAt(env, 'org', 'accounts', address), [], 'the creation is answered before its follow-up ran');
  await srv.stop('SIGKILL');
  srv = await srv.restart();
  t.teardown(() => srv.stop());
  let got: Account[] = [];
  for (const until = Date.now() + 30_000; Date.now() < until && !got.length; await new Promise((r) => setTimeout(r, 500))) got = await parleyAt(env, 'org', 'accounts', address);
  t.same(got, [{ realm_id: DEMO_REALM_ID, user_id }], 'the follow-up ran after the restart');
  await srv.stop();
});
