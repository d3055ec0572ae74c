/**
 * Missed-message email and mobile push across a kill -9 of the realm's owner
 * node: the decision was stored with the message and its timer with it, so
 * the node that takes the realm over mails the batch, once, to a real SMTP
 * server (`test/helpers/smtp.ts`), and sends the push, once, to the push
 * service the test runs (`test/helpers/push-service.ts`), which the cluster
 * was started against. And the digest in cluster mode: a run started with
 * the CLI over NATS (its crash case is in `test/digest.test.ts`: the first
 * case leaves one actor node; the push case starts a replacement).
 */
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import t, { type Test } from 'tap';
import { Api, uniq } from '../helpers/api.ts';
import { startPushService } from '../helpers/push-service.ts';
import { mailKind, startSmtp } from '../helpers/smtp.ts';
import { freePort, startProcess } from '../../scripts/cluster-launcher.ts';
import { startTestCluster } from './helpers.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const svc = await startPushService();
t.teardown(() => svc.close());
const c = await startTestCluster({
  PARLEY_SMTP_URL: smtp.url,
  PARLEY_FOLLOW_UP_DELAY_MS: '4000',
  PARLEY_PUSH_SERVICE_URL: svc.url,
  PARLEY_PUSH_SERVER_UUID: svc.uuid,
  PARLEY_PUSH_SERVER_KEY: svc.key,
  PARLEY_PUSH_CONTACT_EMAIL: 'ops@parley.test',
});
t.teardown(() => c.stop());

/** Kills the realm's owner node with SIGKILL and waits until another node has taken the realm over. */
async function killRealmOwner(t: Test): Promise<void> {
  const victim = await c.realmOwner();
  t.ok(victim, 'the realm has an owner');
  const exited = new Promise((r) => victim!.child.once('exit', r));
  victim!.child.kill('SIGKILL');
  await exited;
  t.ok(await c.waitForNewOwner(victim), 'another node took the realm over');
}

t.test('notifications - a batch waiting when the realm owner is killed -9 is mailed once by the next owner', async (t) => {
  const email = `${uniq('idle')}@parley.example`;
  const password = `pw-${uniq('s')}`;
  const { user_id } = await c.owner.ok('POST', '/users', { email, password, full_name: 'Idle Reader' });
  const key = (await new Api(c.gateways[1]).ok('POST', '/fetch_api_key', { username: email, password })).api_key as string;
  const reader = new Api(c.gateways[1], { email, apiKey: key });
  await reader.ok('PATCH', '/settings', { email_notifications_batching_period_seconds: 6 });

  const content = `before the kill ${uniq('k')}`;
  await c.owner.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([user_id]), content });
  await killRealmOwner(t);

  const missed = () => smtp.to(email).filter((m) => mailKind(m) === 'missed'); // a new user also gets the account email
  await smtp.waitFor(() => missed().length > 0, 45_000);
  await sleep(8000); // a second copy would come within a retry or a batch
  const mails = missed();
  t.equal(mails.length, 1, 'mailed once');
  t.match(mails[0]!.text ?? '', content);
});

t.test('notifications - a digest run over NATS by the CLI is composed by the realm owner and mailed once, after its commit', async (t) => {
  const ROOT = resolve(import.meta.dirname, '../..');
  const cli = (args: string[]) =>
    new Promise<{ code: number; stderr: string }>((done) => {
      execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), ...args], { env: { ...process.env, ...c.env, PARLEY_MODE: 'cluster' } }, (err, _out, stderr) => done({ code: err ? 1 : 0, stderr }));
    });
  await c.owner.ok('PATCH', '/realm', { digest_emails_enabled: true });
  const channel = uniq('digest');
  const email = `${uniq('away')}@parley.example`;
  const password = `pw-${uniq('s')}`;
  const { user_id } = await c.owner.ok('POST', '/users', { email, password, full_name: 'Away Reader' });
  await c.owner.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name: channel }]), principals: JSON.stringify([c.ownerId, c.memberId, user_id]) });
  await c.owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'news', content: 'the owner speaks' });
  await c.member.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'news', content: 'the member answers' });

  const run = await cli(['org', 'digest', '.', '--now']);
  t.equal(run.code, 0, run.stderr);
  const digestsTo = () => smtp.to(email).filter((m) => mailKind(m) === 'digest');
  await smtp.waitFor(() => digestsTo().length > 0, 45_000);
  t.equal((await cli(['org', 'digest', '.', '--now'])).code, 0, 'a second run');
  await sleep(6000); // its mail would leave 4 s after its commit
  t.equal(digestsTo().length, 1, 'mailed once: the second run finds the digest of the first');
  t.match(digestsTo()[0]!.text ?? '', 'the owner speaks');
  t.match(digestsTo()[0]!.text ?? '', /Unsubscribe from digest emails:/);
});

t.test('push - a notification the service refused when the realm owner is killed -9 is sent once by the next owner', async (t) => {
  // The node the first case killed is replaced, as its Deployment would: a node must be left to take the realm.
  c.procs.push(await startProcess('actors', 'actors-replacement', await freePort(), { ...c.env, PARLEY_DEMO_DIR: c.demoDir }, false));
  const email = `${uniq('away')}@parley.example`;
  const password = `pw-${uniq('s')}`;
  const { user_id } = await c.owner.ok('POST', '/users', { email, password, full_name: 'Away Phone' });
  const key = (await new Api(c.gateways[1]).ok('POST', '/fetch_api_key', { username: email, password })).api_key as string;
  const phone = new Api(c.gateways[1], { email, apiKey: key });
  const token = uniq('fcm');
  await phone.ok('POST', '/users/me/android_gcm_reg_id', { token });
  await svc.waitFor(() => svc.devices.has(`${user_id}:2:${token}`), 30_000);
  const mine = () => svc.of('push/notify').filter((call) => call.body.user_id === user_id);

  // The service is down: the send is answered, its push waits in the realm's timer, retried.
  svc.down = true;
  const refusedBefore = svc.refused;
  const content = `while the service is down ${uniq('p')}`;
  const sent = await c.owner.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([user_id]), content });
  await svc.waitFor(() => svc.refused > refusedBefore, 30_000);
  await killRealmOwner(t);
  svc.down = false;

  await svc.waitFor(() => mine().length > 0, 45_000);
  await sleep(8000); // a second copy would come within a retry (5 s)
  t.equal(mine().length, 1, 'pushed once');
  const payload = mine()[0]!.body.gcm_payload as Record<string, unknown>;
  t.equal(payload.zulip_message_id, sent.id, 'the message the push names');
});
