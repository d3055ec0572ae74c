/**
 * Presence at scale (issue 20): N active users each report their presence
 * once per 60 s, compressed in time (all N reports within `--secs`), against
 * the demo organization grown to N users. Three rounds: everyone coming
 * online and the steady state with reports alone (`ping_only`), then the
 * steady state as the web app pings (`last_update_id`, the reply lists
 * everyone's presence: O(users) bytes, so only one user in `--full-every`
 * sends it and the figure is scaled). The figure is the server's CPU time
 * per report (the embedded process: gateway and actors), scaled to N
 * reports per real 60 s: the share of a core presence costs.
 *
 *   node --import tsx bench/presence.ts [--users 10000] [--secs 6] [--full-every 10] [--repo DIR ...]
 *
 * Each `--repo` is another checkout measured the same way (a baseline), before this one.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchKey, growDemo } from './lib/grow.ts';
import { basicAuth, RawConn } from './lib/rawhttp.ts';
import { procCpuSeconds, REPO, startParley } from './lib/server.ts';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '10000' },
    secs: { type: 'string', default: '6' },
    /** Reports with everyone's presence in the reply are sent for one user in this many (the reply is O(users) bytes). */
    'full-every': { type: 'string', default: '10' },
    repo: { type: 'string', multiple: true, default: [] },
    /** Write the server's CPU profile (V8 .cpuprofile) into this directory; read it with bench/profile.ts. */
    profile: { type: 'string' },
  },
});
const USERS = Number(values.users);
const SECS = Number(values.secs);
const FULL_EVERY = Number(values['full-every']);
const PERIOD_SECS = 60;

const BODIES = {
  // The web app's regular ping: everyone's presence in the reply.
  full: 'status=active&slim_presence=true&last_update_id=-1&new_user_input=true',
  // A report alone.
  ping: 'status=active&ping_only=true&new_user_input=true',
};

/** `ids.length` reports spread evenly over SECS (open loop, 64 connections); the server's CPU meanwhile. */
async function round(url: string, pid: number, ids: number[], body: string, headers: Record<string, string> = {}): Promise<{ cpuSecs: number; wallSecs: number; errors: number; replyBytes: number }> {
  const { hostname, port } = new URL(url);
  const conns = Array.from({ length: 64 }, () => new RawConn({ host: hostname, port: Number(port) }));
  await Promise.all(conns.map((c) => c.connect()));
  const gap = (SECS * 1000) / ids.length;
  let errors = 0;
  let replyBytes = 0;
  let next = 0;
  const cpu0 = procCpuSeconds(pid);
  const t0 = performance.now();
  await Promise.all(
    conns.map(async (c) => {
      while (next < ids.length) {
        const i = next++;
        const wait = t0 + i * gap - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const id = ids[i]!;
        const res = await c.request('POST', '/api/v1/users/me/presence', body, undefined, basicAuth(`user${id}@bench.example`, benchKey(id)), headers);
        if (res.status !== 200) errors++;
        replyBytes = res.body.length;
      }
    }),
  );
  const wallSecs = (performance.now() - t0) / 1000;
  const cpuSecs = procCpuSeconds(pid) - cpu0;
  for (const c of conns) c.close();
  return { cpuSecs, wallSecs, errors, replyBytes };
}

async function measure(repo: string): Promise<Record<string, unknown>> {
  const seeded = await startParley({ repo, readyTimeoutMs: 120_000 });
  await seeded.stop();
  const first = await growDemo(join(seeded.dir, 'data'), USERS);
  const server = await startParley({ repo, dir: seeded.dir, readyTimeoutMs: 300_000, cpuProfDir: values.profile });
  try {
    const ids = Array.from({ length: USERS }, (_, i) => first + i);
    const out: Record<string, unknown> = { repo: repo === REPO ? '(this checkout)' : repo, users: USERS, compressedInto: `${SECS} s` };
    const figure = (r: Awaited<ReturnType<typeof round>>, reports: number) => ({
      reports,
      serverCpuSecs: +r.cpuSecs.toFixed(2),
      wallSecs: +r.wallSecs.toFixed(1),
      cpuMsPerReport: +((r.cpuSecs * 1000) / reports).toFixed(3),
      // USERS reports of this kind spread over the real period: the share of one core.
      coreShareAt60s: +((r.cpuSecs / reports) * (USERS / PERIOD_SECS)).toFixed(3),
      replyBytes: r.replyBytes,
      errors: r.errors,
    });
    // Everyone comes online (each report a change of status), then the steady state (each only refreshes).
    out.comingOnline = figure(await round(server.url, server.pid, ids, BODIES.ping), USERS);
    out.steadyPing = figure(await round(server.url, server.pid, ids, BODIES.ping), USERS);
    const some = ids.filter((_, i) => i % FULL_EVERY === 0);
    out.steadyFull = figure(await round(server.url, server.pid, some, BODIES.full), some.length);
    // The same as a browser asks (a server that ignores the header answers as above).
    out.steadyFullGzip = figure(await round(server.url, server.pid, some, BODIES.full, { 'Accept-Encoding': 'gzip, deflate, br' }), some.length);
    return out;
  } finally {
    await server.dispose();
  }
}

for (const repo of [...values.repo, REPO]) process.stdout.write(`${JSON.stringify(await measure(repo))}\n`);
