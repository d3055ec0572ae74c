/**
 * What creating a user costs as the organization grows: an embedded server,
 * users created through `POST /users` (8 in flight) until each size in
 * `--sizes`, and at each size the rate and the server's CPU per user over
 * the last `--window` creations. With `--import`, the organization grows
 * between sizes through the bulk path (`parley users import`, measured as
 * its own rate) and only the window goes through `POST /users`.
 *
 *   node --import tsx bench/provision.ts --sizes 1000,10000 [--window 300] [--import] [--cpu-prof DIR]
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { api, procCpuSeconds, REPO, startParley, type ParleyServer } from './lib/server.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '1000,10000' },
    window: { type: 'string', default: '300' },
    import: { type: 'boolean', default: false },
    'cpu-prof': { type: 'string' },
  },
});
const sizes = values.sizes.split(',').map(Number);
const WINDOW = Number(values.window);
const IN_FLIGHT = 8;

let created = 0;

/** Creates `n` users through POST /users, `IN_FLIGHT` at a time; returns users/s and server CPU ms per user. */
async function createThroughApi(srv: ParleyServer, n: number): Promise<{ rate: number; cpuMs: number }> {
  const cpu0 = procCpuSeconds(srv.pid);
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      next++;
      const i = ++created;
      await api(srv.url, srv.users.owner!, 'POST', '/users', { email: `p${i}@bench.example`, password: `pw-${i}-bench`, full_name: `Bench User ${i}` });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const secs = (performance.now() - t0) / 1000;
  return { rate: n / secs, cpuMs: ((procCpuSeconds(srv.pid) - cpu0) * 1000) / n };
}

/** Creates `n` users through `parley users import` (a JSON-lines file); returns users/s. */
function createThroughImport(srv: ParleyServer, n: number): number {
  const file = join(srv.dir, `import-${created}.jsonl`);
  const lines: string[] = [];
  for (let k = 0; k < n; k++) {
    const i = ++created;
    lines.push(JSON.stringify({ email: `p${i}@bench.example`, full_name: `Bench User ${i}` }));
  }
  writeFileSync(file, `${lines.join('\n')}\n`);
  const t0 = performance.now();
  const r = spawnSync('node', ['bin/parley.mjs', 'users', '--org', '.', 'import', file], { cwd: REPO, encoding: 'utf8', env: { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(srv.dir, 'data') } });
  if (r.status !== 0) throw new Error(`import failed: ${r.stderr || r.stdout}`);
  return n / ((performance.now() - t0) / 1000);
}

const srv = await startParley({ cpuProfDir: values['cpu-prof'], readyTimeoutMs: 120_000 });
try {
  const base = (await api<{ members: unknown[] }>(srv.url, srv.users.owner!, 'GET', '/users')).members.length;
  created = 0;
  let size = base;
  console.log(`organization starts with ${base} users; window ${WINDOW} creations through POST /users (${IN_FLIGHT} in flight)`);
  for (const target of sizes) {
    const grow = target - size - WINDOW;
    if (grow > 0) {
      if (values.import) console.log(`  grew ${size} -> ${size + grow} by import: ${Math.round(createThroughImport(srv, grow))} users/s`);
      else await createThroughApi(srv, grow);
      size += grow;
    }
    const w = await createThroughApi(srv, WINDOW);
    size += WINDOW;
    console.log(`${size} users: POST /users ${w.rate.toFixed(1)} users/s, server CPU ${w.cpuMs.toFixed(1)} ms per user (argon2 hashing in the gateway included)`);
  }
} finally {
  await srv.dispose();
}
