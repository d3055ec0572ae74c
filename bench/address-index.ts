/**
 * What the server-wide address index costs as it grows (`actors/directory/accounts.ts`):
 * an embedded server in process (lmdb), its directory's `setAccountAddresses` called
 * as a realm's follow-up calls it. The index is filled in batches of 1,000 accounts
 * (a backfill's turns, timed) up to each size in `--sizes`; at each size, `--calls`
 * single-account updates with new addresses (one new user's follow-up: two reads, two
 * writes, one commit) are timed one after another, then the same for an address that
 * already has `--shared` accounts (one per organization), whose partition the update reads.
 *
 *   node --import tsx bench/address-index.ts [--sizes 1000,10000,100000] [--calls 300] [--shared 50]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DIRECTORY_ID, directoryRef } from '../actors/directory/ref.ts';
import { startParley } from '../lib/app.ts';
import { loadConfig } from '../lib/config.ts';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000,100000' }, calls: { type: 'string', default: '300' }, shared: { type: 'string', default: '50' } } });
const CALLS = Number(values.calls);
const SHARED = Number(values.shared);
const dir = mkdtempSync(join(tmpdir(), 'parley-bench-index-'));
const parley = await startParley(loadConfig({ ...process.env, PARLEY_MODE: 'embedded', PARLEY_PORT: '0', PARLEY_METRICS_PORT: '0', PARLEY_DATA_DIR: join(dir, 'data'), PARLEY_LOG_LEVEL: 'warn', PARLEY_SEED_DEMO: 'false' }));

/** Realms 1000.. stand for organizations; user IDs are per realm. */
const set = (realmId: number, entries: Array<{ userId: number; address: string | null }>) => parley.actors.call(directoryRef, DIRECTORY_ID, { type: 'setAccountAddresses', caller: { realmId, userId: null }, entries });
const ms = (xs: number[], q: number) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

let filled = 0;
let nextUser = 1;
const batchMs: number[] = [];
// The shared address: one account in each of SHARED organizations.
for (let r = 0; r < SHARED; r++) await set(2000 + r, [{ userId: 1, address: 'shared@bench.example' }]);
for (const size of values.sizes.split(',').map(Number)) {
  while (filled < size) {
    const n = Math.min(1000, size - filled);
    const entries = Array.from({ length: n }, (_, i) => ({ userId: filled + i + 1, address: `a${filled + i + 1}@bench.example` }));
    const t0 = performance.now();
    await set(1000, entries);
    batchMs.push(performance.now() - t0);
    filled += n;
  }
  const single: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = performance.now();
    const r = await set(1001, [{ userId: nextUser, address: `new${nextUser++}@bench.example` }]);
    single.push(performance.now() - t0);
    if (r.others[0] !== 0) throw new Error('a new address has no other account');
  }
  const shared: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = performance.now();
    const r = await set(1002, [{ userId: nextUser++, address: 'Shared@bench.example' }]);
    shared.push(performance.now() - t0);
    if (r.others[0]! < SHARED) throw new Error('the shared address has its other accounts');
    await set(1002, [{ userId: nextUser - 1, address: null }]); // and leaves again, so the partition stays at SHARED
  }
  const b = batchMs.slice(-5);
  console.log(JSON.stringify({ accounts: filled, newAddressMs: { p50: +ms(single, 0.5).toFixed(2), p95: +ms(single, 0.95).toFixed(2) }, sharedAddressMs: { accounts: SHARED, p50: +ms(shared, 0.5).toFixed(2), p95: +ms(shared, 0.95).toFixed(2) }, batchOf1000Ms: +(b.reduce((x, y) => x + y, 0) / b.length).toFixed(1) }));
}
await parley.stop();
rmSync(dir, { recursive: true, force: true });
