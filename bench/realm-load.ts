/**
 * How long loading a realm takes (what a moved or restarted realm costs
 * before it serves again), on the data directory of a stopped embedded
 * server (`npm run bench:generate -- --data-dir DIR`):
 *
 *   node --import tsx bench/realm-load.ts --data-dir DIR [--realm 1] [--repo /path/to/older/checkout]
 *
 * Times `RealmState.load` from the tables, writes the realm's checkpoint as
 * its actor would (claiming the realm's scope with the embedded token) if it
 * has none, then times the load from the checkpoint; with `--repo`, also the
 * older checkout's `RealmState.load` (before checkpoints) on the same store.
 */
import os from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CHECKPOINT_VERSION } from '../actors/realm/state/checkpoint.ts';
import { RealmState } from '../actors/realm/state/state.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import { T } from '../storage/tables.ts';

const { values } = parseArgs({ options: { 'data-dir': { type: 'string' }, realm: { type: 'string', default: '1' }, repo: { type: 'string' }, rounds: { type: 'string', default: '2' } } });
if (!values['data-dir']) throw new Error('--data-dir DIR (the generator\'s directory) is needed');
const store = new EmbeddedStore(join(values['data-dir'], 'data'));
const realmId = Number(values.realm);
const rounds = Number(values.rounds);

async function timed(what: string, load: () => Promise<{ users: Map<number, unknown>; subs: Map<number, Map<number, unknown>> }>): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    global.gc?.();
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const s = await load();
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    let subs = 0;
    for (const m of s.subs.values()) subs += m.size;
    console.log(
      `${what}: ${(ms / 1000).toFixed(2)} s, CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s (${s.users.size.toLocaleString('en')} users, ${subs.toLocaleString('en')} subscriptions, heap ${Math.round(process.memoryUsage().heapUsed / 2 ** 20)} MiB, load average ${os.loadavg()[0]!.toFixed(1)})`,
    );
  }
}

if (values.repo) {
  const older = (await import(resolve(values.repo, 'actors/realm/state/state.ts'))) as { RealmState: { load(store: unknown, realmId: number): Promise<RealmState> } };
  await timed('before (older checkout, every table)', () => older.RealmState.load(store, realmId));
}
await timed('from the tables', () => RealmState.load(store, realmId, { fromTables: true }));

const head = await T.realmCheckpoints.at(realmId, 'head').get(store);
if (!head || head.version !== CHECKPOINT_VERSION || (await T.realmCheckpoints.at(realmId, 'stale').get(store))) {
  const t0 = performance.now();
  const state = await RealmState.load(store, realmId, { fromTables: true });
  while (!state.image.pending) await new Promise((r) => setTimeout(r, 20));
  const prepared = performance.now();
  const writer = (await store.claim(`realm:${realmId}`, 1))!;
  let bytes = 0;
  for (;;) {
    const ops = state.image.journalWrites([]);
    if (!ops.length) break;
    for (const op of ops) if (op.op === 'put' && op.table === 'realm_checkpoint_chunks') bytes += (op.value as { data: string }).data.length;
    await writer.commit(ops);
    if (ops.some((op) => op.table === 'realm_checkpoints')) break;
  }
  console.log(`checkpoint written: encoded in ${((prepared - t0) / 1000).toFixed(2)} s after the load, ${(bytes / 2 ** 20).toFixed(1)} MiB as base64`);
}
await timed('from the checkpoint', async () => {
  const s = await RealmState.load(store, realmId);
  if (s.image.stats.loadedFrom !== 'checkpoint') throw new Error('not loaded from the checkpoint');
  return s;
});
await store.close();
