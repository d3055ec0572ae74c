/**
 * The fuzz step: a few thousand seeded requests over every operation the
 * server describes in its OpenAPI document (every API route, from its zod
 * schema) and every page, as each demo user and without credentials, with
 * valid, odd and hostile values (`helpers/fuzz.ts`). It asserts that no
 * request gets a 5xx, none hangs, every API reply is the JSON envelope, the
 * server is alive at the end and its memory is bounded.
 *
 * The fuzzer deactivates users, changes roles and emails and regenerates API
 * keys like any client may: it runs on an embedded server of its own (never a
 * shared cluster), takes a regenerated key from its reply, and puts the demo
 * users back (reactivated, role and email restored) after any request that may
 * have changed them, and the organization after an owner deactivated it (POST
 * /realm/deactivate: the operator's CLI reactivates it), so no route has to be
 * left out.
 *
 * `PARLEY_FUZZ_SEED` replays a run (the seed is printed); `PARLEY_FUZZ_REQUESTS`
 * sets its length (default 4,000, about 30 s) and `PARLEY_FUZZ_CONCURRENCY` how many
 * requests are in flight (default 1: only then is a replay exact).
 */
import { execFile } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import t from 'tap';
import { DEMO_USERS, loadTestLimits } from '../lib/demo.ts';
import { PAGES } from '../gateway/pages/index.ts';
import { type Creds } from './helpers/api.ts';
import { describe, encodeRequest, type FuzzRequest, generate, type Operation, operationsOf, pageOperation, Pools } from './helpers/fuzz.ts';
import { DEMO_KEYS, type DemoKey, serverFor } from './helpers/server.ts';

const SEED = process.env.PARLEY_FUZZ_SEED ? Number(process.env.PARLEY_FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const REQUESTS = Number(process.env.PARLEY_FUZZ_REQUESTS ?? 4_000);
const CONCURRENCY = Number(process.env.PARLEY_FUZZ_CONCURRENCY ?? 1);
/** Longer than any answer may take: a long poll gets its heartbeat within 1.1 s here, and the gateway answers 503 after 10 s. */
const REQUEST_TIMEOUT_MS = 15_000;
/** The server's resident memory after the run, at most (runs of up to 12,000 requests ended at 190-300 MB). */
const RSS_CEILING_MB = 768;
/**
 * How much it may grow over the second half of the run: the run adds messages, channels,
 * users and queues, which stay in memory; runs of 3,000-12,000 requests grew 0-66 MB.
 */
const RSS_GROWTH_MB = 128;

/** What each page reads of its parameters (pages have no schema). */
const PAGE_PARAMS: Record<string, string[]> = { '/join/{token}': ['full_name', 'email', 'password'], '/calls/videoprovider/complete': ['state', 'code', 'error'], '/login': ['mobile_flow_otp', 'email'], '/accounts/login': ['username', 'password', 'mobile_flow_otp'] };

/** Operations whose success may change who a demo user is: after one, the demo users are put back. */
const CHANGES_PEOPLE = new Set(['DELETE /users/me', 'DELETE /users/{user_id}', 'PATCH /users/{user_id}', 'POST /users/me/api_key/regenerate']);

type Identity = DemoKey | 'anonymous' | 'wrong-key' | 'malformed';
const IDENTITIES: Identity[] = [...DEMO_KEYS, 'anonymous', 'wrong-key', 'malformed'];
const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
/** Authorization headers that are not well-formed Basic credentials. */
const MALFORMED_AUTH = ['Bearer x', 'Basic', 'Basic %%%%', `Basic ${b64('no-colon')}`, `Basic ${b64('\u0000:\u0000')}`, `Basic ${b64(Buffer.from([0xff, 0xfe, 0x3a, 0xc0]))}`, `Basic ${b64(`${'a'.repeat(5_000)}:x`)}`, 'basic  ', `Digest username="x"`];

t.test(`fuzz - ${REQUESTS} seeded requests over every route: no 5xx, no hang, envelope replies, bounded memory (PARLEY_FUZZ_SEED=${SEED})`, async (t) => {
  t.comment(`seed ${SEED}: replay with PARLEY_FUZZ_SEED=${SEED}`);
  const server = await serverFor(t, {
    env: {
      // Budgets like the bench's for the demo users; the fuzzer's requests without credentials
      // (and with wrong ones) all come from one address, so that budget is raised too.
      PARLEY_RATE_LIMIT_OVERRIDES: loadTestLimits().PARLEY_RATE_LIMIT_OVERRIDES!,
      PARLEY_RATE_LIMIT_IP: '1000000/60',
      PARLEY_RATE_LIMIT_AUTH_FAILURES: '1000000/60',
      // Long polls end with a heartbeat within about a second.
      PARLEY_HEARTBEAT_SECS: '1',
    },
  });
  const base = server.urls[0]!;
  /** An owner's POST /realm/deactivate succeeded: only the operator reactivates an organization (`parley org reactivate`). */
  const reactivateOrganization = () =>
    new Promise<void>((done, fail) => {
      const env = { ...process.env, PARLEY_MODE: 'embedded', PARLEY_DATA_DIR: join(server.dataDir!, 'data') };
      execFile(process.execPath, [resolve(import.meta.dirname, '..', 'bin/parley.mjs'), 'org', 'reactivate', '.'], { env }, (err, _out, stderr) => (err ? fail(new Error(`parley org reactivate: ${stderr}`)) : done()));
    });
  const pid = server.process!.pid!;
  const creds: Record<DemoKey, Creds & { userId: number }> = { ...server.demo };
  const original = Object.fromEntries(DEMO_KEYS.map((k) => [k, { ...creds[k], role: DEMO_USERS.find((u) => u.email === creds[k].email)!.role }])) as Record<DemoKey, Creds & { userId: number; role: number }>;

  const doc = (await (await fetch(`${base}/api/v1/openapi.json`)).json()) as Record<string, unknown>;
  const ops: Operation[] = [...operationsOf(doc), ...PAGES.map((p) => pageOperation(p.method, p.path, PAGE_PARAMS[p.path] ?? []))];
  t.ok(ops.length > 100, `${ops.length} operations from the document and the pages`);

  const pools = new Pools();
  const statuses = new Map<number | string, number>();
  const failures: string[] = [];
  const rss: number[] = [];
  /** Operations that answered 200 at least once: how deep the run went. */
  const succeeded = new Set<string>();
  /** The last refusal of each operation's valid requests: why it did not get deeper. */
  const refusals = new Map<string, string>();
  /** Time spent on each operation's requests, ms. */
  const spent = new Map<string, number>();
  const count = (key: number | string) => statuses.set(key, (statuses.get(key) ?? 0) + 1);
  const fail = (what: string, req: FuzzRequest, who: Identity, i: number) => {
    if (failures.length < 40) failures.push(`#${i} as ${who}: ${what}\n    ${describe(req)}`);
  };

  const authHeader = (who: Identity, i = 0): Record<string, string> => {
    if (who === 'anonymous') return {};
    if (who === 'malformed') return { authorization: MALFORMED_AUTH[i % MALFORMED_AUTH.length]! };
    const c = who === 'wrong-key' ? { email: creds.member1.email, apiKey: 'x'.repeat(32) } : creds[who];
    return { authorization: `Basic ${Buffer.from(`${c.email}:${c.apiKey}`).toString('base64')}` };
  };

  async function send(req: FuzzRequest, who: Identity, i: number): Promise<{ status: number; type: string; text: string } | 'timeout' | Error> {
    const { url, body, headers } = encodeRequest(req);
    try {
      const res = await fetch(`${base}${url}`, { method: req.op.method, headers: { ...headers, ...authHeader(who, i) }, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
    } catch (err) {
      return (err as Error).name === 'TimeoutError' ? 'timeout' : (err as Error);
    }
  }

  /** Puts every demo user back as it was: active, with its role and email, as whichever demo user is an owner now. */
  async function restorePeople(): Promise<void> {
    const call = async (as: Creds, method: string, path: string, params: Record<string, string> = {}) => {
      const q = new URLSearchParams(params).toString();
      const res = await fetch(`${base}/api/v1${path}${method === 'GET' && q ? `?${q}` : ''}`, {
        method,
        headers: { authorization: `Basic ${Buffer.from(`${as.email}:${as.apiKey}`).toString('base64')}`, ...(method === 'GET' ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) },
        body: method === 'GET' ? undefined : q,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    let restorer: Creds | null = null;
    for (const k of DEMO_KEYS) {
      const me = await call(creds[k], 'GET', '/users/me');
      if (me.status === 200 && me.body.role === 100) {
        restorer = creds[k];
        break;
      }
    }
    if (!restorer) throw new Error('no demo user is an active owner any more');
    for (const k of DEMO_KEYS) {
      const want = original[k];
      const got = await call(restorer, 'GET', `/users/${want.userId}`);
      if (got.status !== 200) throw new Error(`cannot read demo user ${k}: ${JSON.stringify(got.body)}`);
      const user = got.body.user as { is_active: boolean; role: number; delivery_email?: string; email: string };
      if (!user.is_active) await call(restorer, 'POST', `/users/${want.userId}/reactivate`);
      const patch: Record<string, string> = {};
      if (user.role !== want.role) patch.role = String(want.role);
      if ((user.delivery_email ?? user.email) !== want.email) patch.new_email = want.email;
      if (Object.keys(patch).length) {
        const r = await call(restorer, 'PATCH', `/users/${want.userId}`, patch);
        if (r.status !== 200) throw new Error(`cannot restore demo user ${k} (${JSON.stringify(patch)}): ${JSON.stringify(r.body)}`);
      }
    }
  }

  // Every operation once per round, in an order of the seed's.
  const rounds = new Map<number, Operation[]>();
  const opAt = (i: number): Operation => {
    const round = Math.floor(i / ops.length);
    if (!rounds.has(round)) rounds.set(round, generateOrder(ops, SEED, round));
    return rounds.get(round)![i % ops.length]!;
  };
  let restores = 0;

  /** The `i`th request: generated, sent and judged. Returns false once the server has exited. */
  async function one(i: number): Promise<boolean> {
    const op = opAt(i);
    const req = generate(op, pools, SEED, i);
    const who = op.auth === 'none' && i % 3 === 0 ? 'anonymous' : IDENTITIES[((SEED >>> 0) + i * 7) % IDENTITIES.length]!;
    const sentAt = Date.now();
    const r = await send(req, who, i);
    const key = `${op.method} ${op.path}`;
    spent.set(key, (spent.get(key) ?? 0) + Date.now() - sentAt);
    if (r === 'timeout') {
      count('timeout');
      fail(`no answer within ${REQUEST_TIMEOUT_MS} ms`, req, who, i);
      return true;
    }
    if (r instanceof Error) {
      count('connection error');
      fail(`connection error: ${r.message} (${String((r as { cause?: unknown }).cause ?? '')})`, req, who, i);
      return server.process!.exitCode === null;
    }
    count(r.status);
    if (r.status === 200) succeeded.add(key);
    if (r.status >= 500) fail(`${r.status} ${r.text.slice(0, 300)}`, req, who, i);
    let body: Record<string, any> | null = null;
    if (op.prefix === '/api/v1' && !(r.status === 200 && !op.envelope)) {
      try {
        body = JSON.parse(r.text);
      } catch {
        fail(`${r.status} not JSON: ${r.text.slice(0, 200)}`, req, who, i);
      }
      if (!r.type.startsWith('application/json')) fail(`${r.status} with Content-Type ${r.type}`, req, who, i);
      if (body) {
        const ok = r.status === 200 ? body.result === 'success' && body.msg === '' : body.result === 'error' && typeof body.msg === 'string' && typeof body.code === 'string';
        if (!ok) fail(`${r.status} outside the envelope: ${r.text.slice(0, 200)}`, req, who, i);
        if (r.status === 429 && body.code !== 'RATE_LIMIT_HIT') fail(`429 that is not the rate limit: ${r.text.slice(0, 200)}`, req, who, i);
        if (r.status === 200) pools.harvest(body);
        else if (req.kind === 'valid' && (who in creds)) refusals.set(key, `${r.status} ${String(body.msg).slice(0, 80)}`);
      }
    }
    if (r.status === 200 && key === 'POST /users/me/api_key/regenerate' && who in creds) creds[who as DemoKey].apiKey = body!.api_key;
    if (r.status === 200 && key === 'POST /realm/deactivate') await reactivateOrganization();
    if ((r.status === 200 && CHANGES_PEOPLE.has(key)) || (r.status === 401 && who in creds && op.auth === 'required')) {
      restores++;
      await putPeopleBack();
    }
    if (i % 100 === 0 || i === REQUESTS - 1) rss.push(rssMb(pid));
    return true;
  }

  /**
   * One restore at a time; with several requests in flight another may change
   * a key or a role meanwhile (then its reply or its 401 asks again), so a
   * failed attempt is retried.
   */
  let restoring: Promise<void> = Promise.resolve();
  const putPeopleBack = () =>
    (restoring = restoring.then(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await restorePeople();
        } catch (err) {
          if (attempt === 5) throw err;
        }
      }
    }));

  const started = Date.now();
  // Lane j sends requests j, j + C, j + 2C... One lane (the default) replays exactly from the
  // seed; with more, what each request draws from the server's answers depends on timing.
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, lane) => {
      for (let i = lane; i < REQUESTS; i += CONCURRENCY) if (!(await one(i))) return;
    }),
  );
  const secs = (Date.now() - started) / 1000;

  const table = [...statuses].sort((a, b) => String(a[0]).localeCompare(String(b[0]))).map(([s, n]) => `${s}: ${n}`).join(', ');
  t.comment(`${REQUESTS} requests in ${secs.toFixed(1)} s (seed ${SEED}, ${CONCURRENCY} at a time); by status: ${table}; demo users put back ${restores} times`);
  t.comment(`server RSS (MB) every 100 requests: ${rss.join(' ')}`);
  t.comment(`slowest operations (s): ${[...spent].sort((a, b) => b[1] - a[1]).slice(0, 5).map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)}`).join(', ')}`);
  const never = ops.map((o) => `${o.method} ${o.path}`).filter((k) => !succeeded.has(k));
  t.comment(`${ops.length - never.length} of ${ops.length} operations answered 200 at least once; never: ${never.map((k) => (process.env.PARLEY_FUZZ_VERBOSE ? `${k} (${refusals.get(k) ?? '-'})` : k)).join(', ')}`);
  t.same(failures, [], `no 5xx, hang, dropped connection or reply outside the envelope (PARLEY_FUZZ_SEED=${SEED} to replay)`);

  t.equal(server.process!.exitCode, null, 'the server process is alive');
  const after = await fetch(`${base}/api/v1/users/me`, { headers: authHeader('owner'), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  t.equal(after.status, 200, 'and answers a normal request');
  const final = rssMb(pid);
  t.ok(final < RSS_CEILING_MB, `RSS after the run ${final} MB < ${RSS_CEILING_MB} MB`);
  // Medians of the quarters on each side of the second half, so one collection's saw-tooth does not count as growth.
  const quarter = (k: number) => median(rss.slice(Math.floor((rss.length * k) / 4), Math.floor((rss.length * (k + 1)) / 4)));
  const growth = quarter(3) - quarter(1);
  t.ok(growth < RSS_GROWTH_MB, `RSS grew ${growth} MB from the second quarter to the last (medians; < ${RSS_GROWTH_MB} MB)`);

  const violationsFile = process.env.PARLEY_RESPONSE_VIOLATIONS_FILE;
  if (violationsFile && existsSync(violationsFile)) {
    const mine = readFileSync(violationsFile, 'utf8').split('\n').filter((l) => l.includes(`"pid":${pid}`));
    t.same(mine.slice(0, 10), [], 'every reply matches the OpenAPI description (check mode)');
  }
  if (failures.length && process.env.PARLEY_FUZZ_FAILURES_FILE) appendFileSync(process.env.PARLEY_FUZZ_FAILURES_FILE, `seed ${SEED}\n${failures.join('\n')}\n`);
});

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** The server's resident set size, in MB. */
function rssMb(pid: number): number {
  const kb = Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return Math.round(kb / 1024);
}

/** The operations in an order drawn from the seed (a Fisher-Yates shuffle with a small LCG). */
function generateOrder(ops: Operation[], seed: number, round: number): Operation[] {
  const out = [...ops];
  let x = (seed ^ Math.imul(round + 1, 0x85ebca6b)) >>> 0;
  for (let i = out.length - 1; i > 0; i--) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    const j = x % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
