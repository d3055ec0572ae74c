/**
 * Replies larger than one NATS message cross the bus in chunks (nats-chunks.ts).
 * The cluster runs on a nats-server of its own with a small max_payload
 * (32 KiB), so an organization of a couple of hundred users has a register
 * reply many times larger than one message, as 20,000 users would have with
 * the 8 MiB of k8s/.
 */
import t from 'tap';
import { startNats } from '../helpers/services.ts';
import { startTestCluster, type TestCluster } from './helpers.ts';

const MAX_PAYLOAD = 32 * 1024;
const USERS = 200;

const nats = await startNats({ maxPayload: MAX_PAYLOAD });
let c: TestCluster;
try {
  c = await startTestCluster({ PARLEY_NATS_URL: nats.url });
} catch (err) {
  await nats.stop();
  throw err;
}
t.teardown(async () => {
  await c.stop();
  await nats.stop();
});

const tag = c.tag;
const emails = Array.from({ length: USERS }, (_, i) => `big-${tag}-${i}@example.com`);

t.before(async () => {
  const started = performance.now();
  // A few at a time: each creation is a realm request of its own.
  for (let i = 0; i < emails.length; i += 10) {
    await Promise.all(emails.slice(i, i + 10).map((email, j) => c.owner.ok('POST', '/users', { email, password: 'pw', full_name: `Large Organization Member ${i + j} ${'x'.repeat(40)}` })));
  }
  t.comment(`${USERS} users created in ${((performance.now() - started) / 1000).toFixed(1)} s`);
});

t.test('big replies - POST /register of an organization whose snapshot is many times max_payload answers 200 in full, through both gateways', async (t) => {
  for (const [n, gateway] of c.gateways.entries()) {
    const r = await c.member.at(gateway).post('/register', {});
    t.equal(r.status, 200, `gateway ${n + 1}: 200 (${r.status === 200 ? '' : JSON.stringify(r.body).slice(0, 300)})`);
    if (r.status !== 200) continue;
    const bytes = Buffer.byteLength(JSON.stringify(r.body));
    const users = r.body.realm_users as Array<{ email: string; delivery_email?: string }>;
    const found = new Set(users.map((u) => u.delivery_email ?? u.email));
    t.ok(bytes > 3 * MAX_PAYLOAD, `gateway ${n + 1}: the register reply is ${bytes} bytes, ${(bytes / MAX_PAYLOAD).toFixed(1)} × max_payload`);
    t.same(emails.filter((e) => !found.has(e)), [], `gateway ${n + 1}: all ${USERS} users created are in realm_users (${users.length} in all)`);
    t.equal(r.body.result, 'success');
    t.type(r.body.queue_id, 'string', 'with its event queue');
  }
});

t.test('big replies - GET /users?include_custom_profile_fields=true beyond max_payload answers 200 in full', async (t) => {
  const r = await c.owner.get('/users', { include_custom_profile_fields: true, client_gravatar: false });
  t.equal(r.status, 200);
  const bytes = Buffer.byteLength(JSON.stringify(r.body));
  t.ok(bytes > 2 * MAX_PAYLOAD, `${bytes} bytes`);
  const found = new Set((r.body.members as Array<{ delivery_email?: string; email: string }>).map((u) => u.delivery_email ?? u.email));
  t.same(emails.filter((e) => !found.has(e)), [], `all ${USERS} users are listed`);
});

t.test('big replies - a new user created after the big replies is seen at once: the bus went on working', async (t) => {
  const email = `big-${tag}-late@example.com`;
  await c.owner.ok('POST', '/users', { email, password: 'pw', full_name: 'Late Member' });
  const users = (await c.owner.ok('GET', '/users', { client_gravatar: false })).members as Array<{ delivery_email?: string; email: string }>;
  t.ok(users.some((u) => (u.delivery_email ?? u.email) === email));
});
