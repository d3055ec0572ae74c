/**
 * Missed-message email across a kill -9 of the realm's owner node: the
 * decision was stored with the message and the batch's timer with it, so the
 * node that takes the realm over mails the batch, once, to a real SMTP
 * server (`test/helpers/smtp.ts`) the cluster was started against.
 */
import t from 'tap';
import { Api, uniq } from '../helpers/api.ts';
import { startSmtp } from '../helpers/smtp.ts';
import { startTestCluster } from './helpers.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const c = await startTestCluster({ PARLEY_SMTP_URL: smtp.url });
t.teardown(() => c.stop());

t.test('notifications - a batch waiting when the realm owner is killed -9 is mailed once by the next owner', async (t) => {
  const email = `${uniq('idle')}@parley.example`;
  const password = `pw-${uniq('s')}`;
  const { user_id } = await c.owner.ok('POST', '/users', { email, password, full_name: 'Idle Reader' });
  const key = (await new Api(c.gateways[1]).ok('POST', '/fetch_api_key', { username: email, password })).api_key as string;
  const reader = new Api(c.gateways[1], { email, apiKey: key });
  await reader.ok('PATCH', '/settings', { email_notifications_batching_period_seconds: 6 });

  const content = `before the kill ${uniq('k')}`;
  await c.owner.ok('POST', '/messages', { type: 'direct', to: JSON.stringify([user_id]), content });
  const victim = await c.realmOwner();
  t.ok(victim, 'the realm has an owner');
  const exited = new Promise((r) => victim!.child.once('exit', r));
  victim!.child.kill('SIGKILL');
  await exited;
  t.ok(await c.waitForNewOwner(victim), 'another node took the realm over');

  await smtp.waitFor(() => smtp.to(email).length > 0, 45_000);
  await sleep(8000); // a second copy would come within a retry or a batch
  const mails = smtp.to(email);
  t.equal(mails.length, 1, 'mailed once');
  t.match(mails[0]!.text ?? '', content);
});
