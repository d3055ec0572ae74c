// Message retention (FL 452) over HTTP and the operator's CLI: a channel with
// a 1-day period loses its old messages and keeps its newer ones, its
// subscribers get delete_message events; unlimited channels keep everything;
// channels on the realm default and direct messages follow the
// organization's setting. Embedded mode, on a server of its own:
// PARLEY_RETENTION_DAY_SECS makes a day DAY seconds, and
// `parley org retention <org> --now` runs the realm's own retention timer,
// due at once.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { poll, type Queue, register } from './helpers/events.ts';
import { newPerson, ROLE } from './helpers/people.ts';
import { startServer } from './helpers/server.ts';

const ROOT = resolve(import.meta.dirname, '..');
/** A "day" of retention, in seconds: long enough for two CLI runs after the newer messages are sent. */
const DAY = 10;
const s = await startServer({ env: { PARLEY_RETENTION_DAY_SECS: String(DAY) } });
const dataDir = s.dataDir!;
t.teardown(async () => {
  await s.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function retentionNow(): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin/parley.mjs'), 'org', 'retention', '.', '--now'], { env: { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(dataDir, 'data') } }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

const owner = s.api.as(s.demo.owner);
const member = await newPerson(s, ROLE.member, 'Retention Member');
const other = await newPerson(s, ROLE.member, 'Retention Other');
const asMember = s.api.as(member);

async function channel(retention: number | 'unlimited' | null): Promise<{ name: string; id: number }> {
  const name = uniq('ret');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: JSON.stringify([{ name }]), principals: JSON.stringify([member.userId]) });
  const id = (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  if (retention !== null) await owner.ok('PATCH', `/streams/${id}`, { message_retention_days: retention });
  return { name, id };
}
const send = async (api: Api, to: string | number[], content: string): Promise<number> =>
  (await api.ok('POST', '/messages', typeof to === 'string' ? { type: 'stream', to, topic: 'old times', content } : { type: 'direct', to: JSON.stringify(to), content })).id as number;
/** Whether the member (subscribed to every channel here, a participant of the direct messages) still reads message `id`. */
const exists = async (id: number): Promise<boolean> => (await asMember.call('GET', `/messages/${id}`)).status === 200;

/** delete_message events of `q` until every one of `ids` was told (or 20 s). */
async function deletions(q: Queue, ids: number[]): Promise<Array<Record<string, any>>> {
  const seen: Array<Record<string, any>> = [];
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline && !ids.every((id) => seen.some((e) => e.message_ids.includes(id)))) {
    for (const e of await poll(q, { timeoutMs: 3000 }).catch(() => [])) if (e.type === 'delete_message') seen.push(e);
  }
  return seen;
}

await t.test('retention - without a limited period the operator run is refused', async (t) => {
  const r = await retentionNow();
  t.not(r.code, 0, r.stdout);
  t.match(r.stderr + r.stdout, /No retention period/);
});

let oneDay: { name: string; id: number };
let unlimited: { name: string; id: number };
let realmDefault: { name: string; id: number };
let old: { oneDay: number[]; unlimited: number; realmDefault: number; dm: number };

await t.test('retention - a channel with a 1-day period loses its old messages, with delete_message events; unlimited, realm-default channels and direct messages keep theirs', async (t) => {
  // Channels: one of 1 day, one unlimited, one on the realm default; old messages in each and in a direct message conversation.
  oneDay = await channel(1);
  unlimited = await channel('unlimited');
  realmDefault = await channel(null);
  old = {
    oneDay: [await send(asMember, oneDay.name, 'old 1'), await send(owner, oneDay.name, 'old 2')],
    unlimited: await send(asMember, unlimited.name, 'old forever'),
    realmDefault: await send(asMember, realmDefault.name, 'old default'),
    dm: await send(asMember, [other.userId], 'old direct'),
  };
  await sleep((DAY + 1) * 1000);
  const q = await register(asMember, { event_types: JSON.stringify(['delete_message', 'stream']), client_capabilities: JSON.stringify({ bulk_message_deletion: true }) });
  const fresh = await send(asMember, oneDay.name, 'new');
  const r = await retentionNow();
  t.equal(r.code, 0, r.stderr);
  const events = await deletions(q, old.oneDay);
  const ev = events.find((e) => e.message_ids.includes(old.oneDay[0]));
  t.same(ev && { ...ev, id: undefined }, { id: undefined, type: 'delete_message', message_type: 'stream', message_ids: old.oneDay, stream_id: oneDay.id, topic: 'old times' });
  t.notOk(events.some((e) => e.message_ids.some((id: number) => [fresh, old.unlimited, old.realmDefault, old.dm].includes(id))), 'nothing else deleted');
  for (const id of old.oneDay) t.notOk(await exists(id), `old message ${id} gone`);
  for (const id of [fresh, old.unlimited, old.realmDefault, old.dm]) t.ok(await exists(id), `message ${id} kept`);
  // The channel's first message is now the newer one.
  const c = (await owner.ok('GET', `/streams/${oneDay.id}`)).stream;
  t.equal(c.first_message_id, fresh);
});

await t.test('retention - the organization setting applies to realm-default channels and direct messages, not to unlimited channels', async (t) => {
  const q = await register(asMember, { event_types: JSON.stringify(['delete_message']), client_capabilities: JSON.stringify({ bulk_message_deletion: true }) });
  const qOther = await register(s.api.as(other), { event_types: JSON.stringify(['delete_message']), client_capabilities: JSON.stringify({ bulk_message_deletion: true }) });
  const freshDm = await send(asMember, [other.userId], 'new direct');
  const freshDefault = await send(asMember, realmDefault.name, 'new default');
  await owner.ok('PATCH', '/realm', { message_retention_days: 1 });
  t.teardown(() => owner.ok('PATCH', '/realm', { message_retention_days: 'unlimited' }));
  const r = await retentionNow();
  t.equal(r.code, 0, r.stderr);
  const events = await deletions(q, [old.realmDefault, old.dm]);
  t.ok(events.some((e) => e.message_type === 'stream' && e.stream_id === realmDefault.id && e.message_ids.includes(old.realmDefault)), 'realm-default channel event');
  t.ok(events.some((e) => e.message_type === 'private' && e.message_ids.includes(old.dm)), 'direct message event');
  t.ok((await deletions(qOther, [old.dm])).some((e) => e.message_ids.includes(old.dm)), 'the other participant is told too');
  t.notOk(await exists(old.realmDefault));
  t.notOk(await exists(old.dm));
  for (const id of [old.unlimited, freshDm, freshDefault]) t.ok(await exists(id), `message ${id} kept`);
});
