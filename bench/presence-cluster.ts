/**
 * Presence at scale in a running cluster (issue 20): N users of an
 * organization each report their presence once per 60 s, compressed in time
 * (all N reports within `--secs`), through every gateway in turn. The same
 * rounds as `presence.ts` (coming online and steady with `ping_only`, then the
 * web app's ping with everyone's presence in the answer, for one user in
 * `--full-every`, plain and as a browser asks with gzip); the CPU of every
 * process of the cluster (gateways and actor nodes, from /proc) per report,
 * scaled to N reports per real 60 s, and how many times the gateways fetched
 * the shared answer (`parley_presence_answer_fetches_total`).
 *
 *   node --import tsx bench/presence-cluster.ts --cluster .parley/cluster.json --keys DIR/keys.csv [--users 10000] [--secs 6] [--full-every 10]
 *
 * The users come from `bench/generate-org.ts --site` (its keys.csv); the
 * cluster from `scripts/cluster.ts` (its cluster.json).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { basicAuth, RawConn } from './lib/rawhttp.ts';
import { procCpuSeconds } from './lib/server.ts';

const { values } = parseArgs({
  options: {
    cluster: { type: 'string', default: '.parley/cluster.json' },
    keys: { type: 'string' },
    users: { type: 'string', default: '10000' },
    secs: { type: 'string', default: '6' },
    'full-every': { type: 'string', default: '10' },
  },
});
if (!values.keys) throw new Error('--keys DIR/keys.csv (from bench/generate-org.ts --site) is required');
const SECS = Number(values.secs);
const FULL_EVERY = Number(values['full-every']);
const PERIOD_SECS = 60;

interface Proc {
  role: string;
  name: string;
  pid: number;
  url: string;
  metricsUrl: string;
}
const procs = (JSON.parse(readFileSync(values.cluster, 'utf8')) as { processes: Proc[] }).processes;
const gateways = procs.filter((p) => p.role === 'gateway');
const users = readFileSync(values.keys, 'utf8')
  .trim()
  .split('\n')
  .slice(1)
  .map((line) => line.split(','))
  .map(([email, , key]) => basicAuth(email!, key!))
  .slice(0, Number(values.users));
const N = users.length;

const BODIES = {
  full: 'status=active&slim_presence=true&last_update_id=-1&new_user_input=true',
  ping: 'status=active&ping_only=true&new_user_input=true',
};

const cpu = () => Object.fromEntries(procs.map((p) => [p.name, procCpuSeconds(p.pid)]));

async function fetches(): Promise<number> {
  let n = 0;
  for (const g of gateways) n += Number(/^parley_presence_answer_fetches_total (\d+)/m.exec(await (await fetch(g.metricsUrl)).text())?.[1] ?? 0);
  return n;
}

/** `auths.length` reports spread evenly over SECS (open loop, 32 connections per gateway, user i through gateway i mod G). */
async function round(auths: string[], body: string, headers: Record<string, string> = {}) {
  const conns = gateways.map((g) => {
    const { hostname, port } = new URL(g.url);
    return Array.from({ length: 32 }, () => new RawConn({ host: hostname, port: Number(port) }));
  });
  await Promise.all(conns.flat().map((c) => c.connect()));
  const gap = (SECS * 1000) / auths.length;
  let errors = 0;
  let replyBytes = 0;
  const f0 = await fetches();
  const cpu0 = cpu();
  const t0 = performance.now();
  await Promise.all(
    conns.map(async (mine, g) => {
      const ids = auths.map((_, i) => i).filter((i) => i % gateways.length === g);
      let next = 0;
      await Promise.all(
        mine.map(async (c) => {
          while (next < ids.length) {
            const i = ids[next++]!;
            const wait = t0 + i * gap - performance.now();
            if (wait > 0) await new Promise((r) => setTimeout(r, wait));
            const res = await c.request('POST', '/api/v1/users/me/presence', body, undefined, auths[i]!, headers);
            if (res.status !== 200) errors++;
            replyBytes = res.body.length;
          }
        }),
      );
    }),
  );
  const wallSecs = (performance.now() - t0) / 1000;
  const cpu1 = cpu();
  for (const c of conns.flat()) c.close();
  const byProc = Object.fromEntries(procs.map((p) => [p.name, +(cpu1[p.name]! - cpu0[p.name]!).toFixed(2)]));
  const cpuSecs = Object.values(byProc).reduce((a, b) => a + b, 0);
  const reports = auths.length;
  return {
    reports,
    wallSecs: +wallSecs.toFixed(1),
    cpuSecsByProcess: byProc,
    cpuMsPerReport: +((cpuSecs * 1000) / reports).toFixed(3),
    // N reports of this kind spread over the real period: the share of one core (all processes together).
    coreShareAt60s: +((cpuSecs / reports) * (N / PERIOD_SECS)).toFixed(3),
    answerFetches: (await fetches()) - f0,
    replyBytes,
    errors,
  };
}

const out: Record<string, unknown> = { users: N, gateways: gateways.length, compressedInto: `${SECS} s` };
out.comingOnline = await round(users, BODIES.ping);
out.steadyPing = await round(users, BODIES.ping);
const some = users.filter((_, i) => i % FULL_EVERY === 0);
out.steadyFull = await round(some, BODIES.full);
out.steadyFullGzip = await round(some, BODIES.full, { 'Accept-Encoding': 'gzip, deflate, br' });
process.stdout.write(`${JSON.stringify(out)}\n`);
