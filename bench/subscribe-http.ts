/**
 * `POST /users/me/subscriptions` of every user of an organization of N to a new channel, over HTTP
 * against an embedded server (the demo organization grown to N through the store): the request's
 * time, the slowest answer to another user's `GET /users/me` sent every 20 ms meanwhile (how long
 * the realm was held at most, plus the request's own way), and the server's peak memory (VmHWM).
 *
 *   node --import tsx bench/subscribe-http.ts [--users 33645] [--repo DIR] [--profile DIR]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { growDemo } from './lib/grow.ts';
import { api, startParley } from './lib/server.ts';

const { values } = parseArgs({ options: { users: { type: 'string', default: '33645' }, repo: { type: 'string' }, /** Write the server's CPU profile there. */ profile: { type: 'string' } } });
const N = Number(values.users);

const peakRssMb = (pid: number): number => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

const seeded = await startParley({ repo: values.repo, readyTimeoutMs: 120_000 });
await seeded.stop();
await growDemo(join(seeded.dir, 'data'), N - 5);
const srv = await startParley({ repo: values.repo, dir: seeded.dir, readyTimeoutMs: 300_000, ...(values.profile ? { cpuProfDir: values.profile } : {}) });
try {
  const { members } = await api<{ members: Array<{ user_id: number; is_active: boolean; is_bot: boolean }> }>(srv.url, srv.users.owner!, 'GET', '/users');
  const principals = members.filter((m) => m.is_active && !m.is_bot).map((m) => m.user_id);
  const before = peakRssMb(srv.pid);
  let stop = false;
  let slowest = 0;
  let probes = 0;
  const probe = (async () => {
    while (!stop) {
      const t0 = performance.now();
      await api(srv.url, srv.users.member1!, 'GET', '/users/me');
      slowest = Math.max(slowest, performance.now() - t0);
      probes++;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const t0 = performance.now();
  const reply = await api<{ subscribed: Record<string, string[]> }>(srv.url, srv.users.owner!, 'POST', '/users/me/subscriptions', { subscriptions: [{ name: `everyone-${N}` }], principals });
  const total = performance.now() - t0;
  stop = true;
  await probe;
  console.log(
    `${principals.length.toLocaleString('en')} principals: answered in ${(total / 1000).toFixed(1)} s, ${Object.keys(reply.subscribed).length.toLocaleString('en')} subscribed; ` +
      `another user's GET /users/me meanwhile: slowest ${slowest.toFixed(0)} ms over ${probes}; server peak RSS ${before.toFixed(0)} MB before, ${peakRssMb(srv.pid).toFixed(0)} MB after`,
  );
} finally {
  await srv.dispose();
}
