/**
 * Builds one large organization through Parley's own interfaces, so that
 * what it makes is what the server serves: users through the bulk path
 * (`parley users import`, its default batches), then as the organization's
 * owner over HTTP: user groups, channels with a Zipf-like distribution of
 * members (channel k of C gets about `--zipf-top / k` members) plus one
 * channel of `--big` members (each created with its members in one
 * `POST /users/me/subscriptions`), and a message history spread over the
 * channels (8 senders at a time).
 *
 *   npm run bench:generate -- --users 100000 [--channels 5000] [--big 50000] [--groups 300] [--messages 20000] [--data-dir DIR --resume]
 *
 * Without `--site` it starts an embedded server on a data directory it
 * keeps (`--data-dir`, or a new one it prints) and stops it at the end; the
 * directory then starts with `PARLEY_DATA_DIR=<dir>/data PARLEY_DEMO_DIR=<dir>/demo npm start`.
 * With `--site URL --zuliprc owner.zuliprc` it fills a running deployment
 * (cluster mode: the CLI reaches it with PARLEY_MODE=cluster and the
 * cluster's NATS settings in the environment). Generated users' API keys are
 * written to `<dir>/keys.csv` (email,user_id,api_key); every 100th user also
 * gets the password `generated-password` (argon2 costs ~20 ms each).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { hashPassword } from '../lib/secrets.ts';
import { api, type Credentials, readZuliprc, REPO, startParley } from './lib/server.ts';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '100000' },
    channels: { type: 'string', default: '5000' },
    big: { type: 'string', default: '50000' },
    'zipf-top': { type: 'string', default: '10000' },
    groups: { type: 'string', default: '300' },
    messages: { type: 'string', default: '20000' },
    site: { type: 'string' },
    zuliprc: { type: 'string' },
    org: { type: 'string', default: '.' },
    'data-dir': { type: 'string' },
    resume: { type: 'boolean', default: false },
  },
});
const N = Number(values.users);
const CHANNELS = Number(values.channels);
const BIG = Math.min(Number(values.big), N);
const ZIPF_TOP = Number(values['zipf-top']);
const GROUPS = Number(values.groups);
const MESSAGES = Number(values.messages);

const FIRST = ['Amara', 'Bruno', 'Chen', 'Dalia', 'Emeka', 'Farah', 'Goran', 'Hana', 'Ivan', 'Jun', 'Kofi', 'Lena', 'Mateo', 'Nadia', 'Omar', 'Priya', 'Quentin', 'Rosa', 'Sven', 'Tariq', 'Uma', 'Viktor', 'Wen', 'Ximena', 'Yusuf', 'Zofia', 'Aiko', 'Bilal', 'Carmen', 'Dmitri', 'Elif', 'Femi', 'Greta', 'Hugo', 'Ines', 'Jonas', 'Kavya', 'Luca', 'Mei', 'Nils'];
const LAST = ['Okafor', 'Silva', 'Wang', 'Haddad', 'Nwosu', 'Rahman', 'Petrov', 'Kim', 'Novak', 'Tanaka', 'Mensah', 'Fischer', 'Garcia', 'Ivanova', 'Khan', 'Patel', 'Dubois', 'Romero', 'Larsen', 'Aziz', 'Iyer', 'Horvat', 'Liu', 'Torres', 'Demir', 'Kowalski', 'Sato', 'Hassan', 'Lopez', 'Volkov', 'Yilmaz', 'Adeyemi', 'Berg', 'Moreau', 'Costa', 'Weber', 'Nair', 'Rossi', 'Zhang', 'Olsen'];
const TEAMS = ['platform', 'payments', 'mobile', 'search', 'infra', 'design', 'sales', 'support', 'legal', 'finance', 'data', 'security', 'growth', 'people', 'research'];

/** A small deterministic generator (mulberry32), so two runs build the same organization. */
let seed = 20;
function random(): number {
  seed = (seed + 0x6d2b79f5) | 0;
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;

/** `k` distinct entries of `xs` (a partial Fisher-Yates shuffle of a copy when k is large, rejection when small). */
function sample(xs: number[], k: number): number[] {
  if (k >= xs.length) return [...xs];
  if (k < xs.length / 4) {
    const out = new Set<number>();
    while (out.size < k) out.add(xs[Math.floor(random() * xs.length)]!);
    return [...out];
  }
  const a = [...xs];
  for (let i = 0; i < k; i++) {
    const j = i + Math.floor(random() * (a.length - i));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, k);
}

/** The generated users' IDs, from the keys the import wrote (listing 100,000 users through GET /users takes long). */
function generatedIds(): number[] {
  return readFileSync(join(dir, 'keys.csv'), 'utf8')
    .split('\n')
    .slice(1)
    .filter(Boolean)
    .map((line) => Number(line.split(',')[1]));
}

function step<T>(what: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  return fn().then((r) => {
    console.log(`${what}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    return r;
  });
}

const started = performance.now();
const dir = values['data-dir'] ?? mkdtempSync(join(tmpdir(), 'parley-generated-'));
mkdirSync(dir, { recursive: true });
const server = values.site ? null : await startParley({ dir, readyTimeoutMs: 120_000, env: { PARLEY_RATE_LIMITS: 'false', PARLEY_CHANNEL_CREATION_LIMIT: '1000000/60', PARLEY_MAX_BODY_BYTES: String(16 << 20) } });
const site = values.site ?? server!.url;
const owner: Credentials = values.zuliprc ? readZuliprc(values.zuliprc) : server!.users.owner!;
const cliEnv = values.site ? process.env : { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(dir, 'data') };

try {
  // Users, through the bulk path.
  const userIds = await step(`${N.toLocaleString('en')} users imported`, async () => {
    const hash = await hashPassword('generated-password');
    const lines: string[] = [];
    for (let i = 1; i <= N; i++) {
      const first = pick(FIRST);
      const last = pick(LAST);
      const r = random();
      const role = r < 0.001 ? 'admin' : r < 0.006 ? 'moderator' : r < 0.026 ? 'guest' : 'member';
      lines.push(JSON.stringify({ email: `${first}.${last}.${i}@generated.example`.toLowerCase(), full_name: `${first} ${last}`, role, ...(i % 100 === 0 ? { password_hash: hash } : {}) }));
    }
    // --resume: the users of an earlier run of this directory (their keys are in keys.csv) are kept.
    if (values.resume && existsSync(join(dir, 'keys.csv'))) return generatedIds();
    const file = join(dir, 'users.jsonl');
    writeFileSync(file, `${lines.join('\n')}\n`);
    const r = spawnSync('node', ['bin/parley.mjs', '--json', 'users', '--org', values.org, 'import', file, '--skip-existing', '--keys-out', join(dir, 'keys.csv')], { cwd: REPO, encoding: 'utf8', env: cliEnv, maxBuffer: 256 << 20 });
    if (r.status !== 0) throw new Error(`import failed: ${r.stderr || r.stdout}`);
    const out = JSON.parse(r.stdout) as { created: number; users_per_second: number; longest_batch_ms: number };
    console.log(`  ${out.created} created, ${Math.round(out.users_per_second)} users/s, longest batch ${Math.round(out.longest_batch_ms)} ms`);
    return generatedIds();
  });
  const members = userIds;

  await step(`${GROUPS} user groups`, async () => {
    for (let g = 0; g < GROUPS; g++) {
      const size = Math.max(2, Math.round(2000 / (g + 1)));
      await api(site, owner, 'POST', '/user_groups/create', { name: `${pick(TEAMS)}-${g}`, description: `Generated group ${g}`, members: sample(members, size) });
    }
  });

  const channelNames: string[] = [];
  await step(`${CHANNELS.toLocaleString('en')} channels (Zipf-like, top ${ZIPF_TOP.toLocaleString('en')}) and one of ${BIG.toLocaleString('en')}`, async () => {
    await api(site, owner, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: 'everyone-big', description: `The ${BIG}-member channel` }], principals: sample(members, BIG) });
    channelNames.push('everyone-big');
    for (let k = 1; k <= CHANNELS; k++) {
      const name = `${pick(TEAMS)}-${k}`;
      const size = Math.max(2, Math.round(ZIPF_TOP / k));
      await api(site, owner, 'POST', '/users/me/subscriptions', { subscriptions: [{ name, description: `Generated channel ${k}` }], principals: sample(members, size) });
      channelNames.push(name);
    }
  });

  await step(`${MESSAGES.toLocaleString('en')} messages`, async () => {
    let next = 0;
    const worker = async () => {
      while (next < MESSAGES) {
        const i = next++;
        // The owner is subscribed to every channel it created; most traffic goes to the largest channels.
        const channel = channelNames[Math.min(channelNames.length - 1, Math.floor(channelNames.length * random() ** 3))]!;
        await api(site, owner, 'POST', '/messages', { type: 'stream', to: channel, topic: `topic ${i % 50}`, content: `Generated message ${i}: ${pick(FIRST)} asks ${pick(FIRST)} about ${pick(TEAMS)}.` });
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
  });
  console.log(`generated in ${((performance.now() - started) / 1000).toFixed(0)} s; data in ${dir}${server ? ` (start it with PARLEY_DATA_DIR=${join(dir, 'data')} PARLEY_DEMO_DIR=${join(dir, 'demo')} npm start)` : ''}; keys in ${join(dir, 'keys.csv')}`);
} finally {
  await server?.stop();
}
