// Fencing and durable timers under faults, in a cluster whose store can be
// told to misbehave (storage/faulty.ts, PARLEY_FAULTS=1, armed through Redis):
// a commit held past the owner's lease, a write re-sent after a takeover, and
// the node owning a scheduled message killed before and at delivery time.
import t from 'tap';
import { freePort, startProcess, type ClusterProcess } from '../../scripts/cluster-launcher.ts';
import { uniq } from '../helpers/api.ts';
import { channelSend, checkAcked, history, startTestCluster, traffic } from './helpers.ts';

const c = await startTestCluster({ PARLEY_FAULTS: '1' });
t.teardown(() => c.stop());
const { owner } = c;
const maria = c.member;
const faultKey = `parley_${c.tag}:faults`;
let spare = 0;

/** Starts one more actor node, so a kill leaves two. */
async function addNode(): Promise<ClusterProcess> {
  const p = await startProcess('actors', `actors-x${++spare}`, await freePort(), { PARLEY_DEMO_DIR: c.demoDir, ...c.env }, false);
  c.procs.push(p);
  await new Promise((r) => setTimeout(r, 2500)); // it takes its fair share
  return p;
}

/** Arms a fault and waits until every process has polled it (they poll every 100 ms). */
async function arm(fault: { scope: string; stage: 'commit' | 'apply'; action: 'delay' | 'duplicate'; ms: number }): Promise<string> {
  const id = uniq('fault');
  await c.redis.set(faultKey, JSON.stringify({ id, ...fault }));
  await new Promise((r) => setTimeout(r, 400));
  return id;
}

async function waitKey(key: string, pred: (v: string | null) => boolean, timeoutMs = 20_000): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  let v: string | null = null;
  while (Date.now() < deadline && !pred((v = await c.redis.get(key)))) await new Promise((r) => setTimeout(r, 50));
  return v;
}

const until = async (pred: () => Promise<boolean>, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await pred()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
};

t.test('faults - a scheduled message whose node is killed before its time is sent once, by the new owner', async (t) => {
  const channel = uniq('timer');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [c.ownerId, c.memberId] });
  const at = Math.floor(Date.now() / 1000) + 5;
  const content = uniq('scheduled');
  await owner.ok('POST', '/scheduled_messages', { type: 'stream', to: await streamId(channel), topic: 'timers', content, scheduled_delivery_timestamp: at });
  const victim = await c.realmOwner();
  victim!.child.kill('SIGKILL');
  t.ok(await c.waitForNewOwner(victim), 'another node owns the realm');
  t.ok(await until(async () => (await history(maria, channel)).some(([, m]) => m === content), 20_000), 'delivered');
  await new Promise((r) => setTimeout(r, 2000));
  const found = (await history(maria, channel)).filter(([, m]) => m === content);
  t.equal(found.length, 1, 'exactly once');
  t.same((await owner.ok('GET', '/scheduled_messages')).scheduled_messages.filter((m: any) => m.content === content), [], 'and no longer scheduled');
});

async function streamId(name: string): Promise<number> {
  const subs = (await owner.ok('GET', '/users/me/subscriptions')).subscriptions;
  return subs.find((x: any) => x.name === name).stream_id;
}

t.test('faults - scheduled messages due while their node is killed are each sent exactly once', async (t) => {
  await addNode();
  const channel = uniq('due');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [c.ownerId, c.memberId] });
  const to = await streamId(channel);
  const first = Math.floor(Date.now() / 1000) + 4;
  const contents: string[] = [];
  // Due in two consecutive seconds, around the moment of the kill.
  for (let i = 0; i < 6; i++) {
    const content = uniq(`due${i}`);
    contents.push(content);
    await owner.ok('POST', '/scheduled_messages', { type: 'stream', to, topic: 'timers', content, scheduled_delivery_timestamp: first + (i % 2) });
  }
  const victim = await c.realmOwner();
  const killAt = first * 1000 + 150;
  await new Promise((r) => setTimeout(r, Math.max(0, killAt - Date.now())));
  victim!.child.kill('SIGKILL');
  t.ok(await c.waitForNewOwner(victim), 'another node owns the realm');
  t.ok(await until(async () => (await history(maria, channel)).length >= contents.length, 20_000), 'all delivered');
  await new Promise((r) => setTimeout(r, 2000));
  const got = (await history(maria, channel)).map(([, m]) => m);
  for (const content of contents) t.equal(got.filter((m) => m === content).length, 1, `${content} sent exactly once`);
  t.equal(got.length, contents.length, 'nothing else');
});

t.test('faults - a commit held until after its owner was paused past its lease and replaced is refused and leaves no trace', async (t) => {
  await addNode();
  const channel = uniq('held');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [c.memberId] });
  const paused = await c.realmOwner();
  const fault = await arm({ scope: 'realm:1', stage: 'commit', action: 'delay', ms: 7000 });
  const probe = uniq('held-probe');
  const probeAnswer = owner.post('/messages', { type: 'stream', to: channel, topic: 'probe', content: probe }, { signal: AbortSignal.timeout(30_000) });
  t.equal(await waitKey(`${faultKey}:${fault}:state`, (v) => v === 'holding'), 'holding', "the owner holds the probe's commit");
  paused!.child.kill('SIGSTOP');
  t.teardown(() => paused!.child.kill('SIGCONT'));
  const takeover = await c.waitForNewOwner(paused);
  t.ok(takeover, 'another node took the realm over while the owner was paused');
  const load = traffic(c, channelSend(channel), 3, 'after');
  await new Promise((r) => setTimeout(r, 1500));
  paused!.child.kill('SIGCONT');
  t.equal(await waitKey(`${faultKey}:${fault}:outcome`, (v) => v !== null), 'fenced', "the held commit reached the store after the takeover and was refused");
  const answer = await probeAnswer;
  t.not(answer.body.result, 'success', `the probe was never answered success (${answer.status} ${answer.body.code})`);
  await new Promise((r) => setTimeout(r, 1000));
  // Reload the realm from the store on the other node: kill the new owner.
  takeover!.child.kill('SIGKILL');
  t.ok(await c.waitForNewOwner(takeover), 'the resumed node loads the realm from the store');
  await new Promise((r) => setTimeout(r, 1500));
  await load.stop();
  t.same(load.wrong, [], 'only successes and clean 503s');
  const stored = await checkAcked(t, maria, channel, load.acked());
  t.notOk(stored.some(([, m]) => m === probe), 'the held message is nowhere in history');
  t.ok(load.acked().length > 10, `${load.acked().length} acknowledged across two takeovers, ${load.clean().length} clean 503s`);
});

t.test('faults - a write re-sent after a takeover (a late driver retry) changes nothing', async (t) => {
  await addNode();
  // A client retries a 503 (a request that reached the paused node timed out).
  const dms = async (content: string) => {
    for (let i = 0; ; i++) {
      const r = await owner.post('/messages', { type: 'direct', to: [c.memberId], content });
      if (r.status === 200) return r.body as { id: number };
      if (r.status !== 503 || i >= 10) throw new Error(`send failed: ${r.status} ${JSON.stringify(r.body)}`);
    }
  };
  const first = await dms(uniq('dm-before'));
  const original = await c.realmOwner();
  const fault = await arm({ scope: 'realm:1', stage: 'apply', action: 'duplicate', ms: 6000 });
  const p = await dms(uniq('dm-duplicated'));
  t.equal(await waitKey(`${faultKey}:${fault}:state`, (v) => v === 'holding'), 'holding', "the owner keeps a copy of the commit's data writes to send again");
  original!.child.kill('SIGSTOP');
  t.teardown(() => original!.child.kill('SIGCONT'));
  const takeover = await c.waitForNewOwner(original);
  if (!takeover) for (const p of c.procs) t.comment(`${p.name} (${p.child.exitCode ?? p.child.signalCode ?? 'running'}): ${p.output().slice(-3000)}`);
  t.ok(takeover, `another node took the realm over (lease ${JSON.stringify(await c.realmLease())})`);
  const later = [];
  for (let i = 0; i < 3; i++) later.push(await dms(uniq(`dm-after${i}`)));
  original!.child.kill('SIGCONT');
  t.equal(await waitKey(`${faultKey}:${fault}:outcome`, (v) => v !== null), 'ok', 'the old data writes were re-sent and accepted by Cassandra');
  // Reload from the store on the other node: the re-sent rows must not have won.
  takeover!.child.kill('SIGKILL');
  t.ok(await c.waitForNewOwner(takeover), 'the other node loads the realm from the store');
  const recent = (await maria.ok('POST', '/register', { fetch_event_types: ['recent_private_conversations'] })).recent_private_conversations;
  const conv = recent.find((x: any) => x.user_ids.length === 1 && x.user_ids[0] === c.ownerId);
  t.equal(conv?.max_message_id, later.at(-1)!.id, "the conversation's newest message is the newest sent, not the re-sent one");
  const after = await dms(uniq('dm-reloaded'));
  t.ok(after.id > later.at(-1)!.id, 'message IDs keep growing after the reload');
  const all = [first, p, ...later, after].map((x) => x.id);
  const got = await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 50, num_after: 0, narrow: [['dm', [c.ownerId]]], apply_markdown: false });
  const seen = got.messages.map((m: any) => m.id);
  t.same(all.filter((id) => seen.filter((x: number) => x === id).length !== 1), [], 'each DM is in history exactly once');
});
