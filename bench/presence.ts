/**
 * Presence at scale (issue 20): N active users each report their presence
 * once per 60 s, compressed in time (all N reports within `--secs`), against
 * the demo organization grown to N users. Two rounds: everyone coming
 * online (each report is a change of status), then the steady state (each
 * report only refreshes). The figure is the server's CPU time per round,
 * scaled to the real 60 s period: the share of a core presence costs.
 *
 *   node --import tsx bench/presence.ts [--users 10000] [--secs 6] [--repo DIR ...]
 *
 * Each report is what the web app sends: POST /users/me/presence with
 * status=active, slim_presence=true and last_update_id (so the reply lists
 * everyone's presence). Each `--repo` is another checkout measured the same
 * way (a baseline), before this one.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { benchKey, growDemo } from './lib/grow.ts';
import { procCpuSeconds, REPO, startParley } from './lib/server.ts';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '10000' },
    secs: { type: 'string', default: '6' },
    repo: { type: 'string', multiple: true, default: [] },
  },
});
const USERS = Number(values.users);
const SECS = Number(values.secs);
const PERIOD_SECS = 60;

async function round(url: string, ids: number[]): Promise<{ cpuSecs: number; wallSecs: number; errors: number; replyBytes: number }> {
  const gap = (SECS * 1000) / ids.length;
  const t0 = performance.now();
  let errors = 0;
  let replyBytes = 0;
  let next = 0;
  const cpu0 = procCpuSeconds(Number(process.env.BENCH_SERVER_PID));
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < ids.length) {
        const i = next++;
        // Open loop: report i is due at i × gap.
        const due = t0 + i * gap;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const id = ids[i]!;
        const res = await fetch(`${url}/api/v1/users/me/presence`, {
          method: 'POST',
          headers: { Authorization: `Basic ${Buffer.from(`user${id}@bench.example:${benchKey(id)}`).toString('base64')}`, 'Content-Type': 'application/x-www-form-urlencoded' },
          body: 'status=active&slim_presence=true&last_update_id=-1&new_user_input=true',
        });
        const text = await res.text();
        if (res.status !== 200) errors++;
        replyBytes = text.length;
      }
    }),
  );
  return { cpuSecs: procCpuSeconds(Number(process.env.BENCH_SERVER_PID)) - cpu0, wallSecs: (performance.now() - t0) / 1000, errors, replyBytes };
}

async function measure(repo: string): Promise<Record<string, unknown>> {
  const seeded = await startParley({ repo, readyTimeoutMs: 120_000 });
  await seeded.stop();
  const first = await growDemo(join(seeded.dir, 'data'), USERS);
  const server = await startParley({ repo, dir: seeded.dir, readyTimeoutMs: 300_000 });
  process.env.BENCH_SERVER_PID = String(server.pid);
  try {
    const ids = Array.from({ length: USERS }, (_, i) => first + i);
    const out: Record<string, unknown> = { repo: repo === REPO ? '(this checkout)' : repo, users: USERS, compressedInto: `${SECS} s` };
    for (const name of ['comingOnline', 'steady']) {
      const r = await round(server.url, ids);
      out[name] = {
        serverCpuSecs: +r.cpuSecs.toFixed(2),
        wallSecs: +r.wallSecs.toFixed(1),
        // The same CPU spread over the real period: the share of one core.
        coreShareAt60s: +(r.cpuSecs / PERIOD_SECS).toFixed(3),
        cpuMsPerReport: +((r.cpuSecs * 1000) / USERS).toFixed(3),
        replyBytes: r.replyBytes,
        errors: r.errors,
      };
    }
    return out;
  } finally {
    await server.dispose();
  }
}

for (const repo of [...values.repo, REPO]) process.stdout.write(`${JSON.stringify(await measure(repo))}\n`);
