/**
 * POST /register in a large organization (issue 20): the demo organization
 * grown to N users (written straight into the embedded store while the
 * server is stopped, every one subscribed to `general`), then registers by a
 * member, one at a time and 8 at a time, timed at the client.
 *
 *   node --import tsx bench/register.ts [--users 1000,10000] [--count 200] [--repo DIR ...] [--profile DIR]
 *
 * Three kinds of register are timed: `full` (what the official clients ask
 * for: every event type, subscribers left out), `subscribers` (the same with
 * include_subscribers=true) and `modern` (client_capabilities
 * user_list_incomplete, include_subscribers="partial", as the current web
 * and mobile apps). Latency is timed at the client (p50/p99, one at a time
 * and 8 at a time); `serverCpuMs` is the server process's CPU time per
 * register over the one-at-a-time run, which other work on a shared machine
 * does not inflate as much. Each queue is deleted after its register, outside the
 * timing. Each `--repo` is another checkout measured the same way (a
 * baseline), before this one.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { growDemo } from './lib/grow.ts';
import { procCpuSeconds, REPO, startParley, type Credentials } from './lib/server.ts';
import { percentile } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '1000,10000' },
    count: { type: 'string', default: '200' },
    repo: { type: 'string', multiple: true, default: [] },
    /** Write the server's CPU profile there (bench/profile.ts reads it). */
    profile: { type: 'string' },
  },
});
const SIZES = values.users.split(',').map(Number);
const COUNT = Number(values.count);

interface Kind {
  name: string;
  params: Record<string, string>;
}

const KINDS: Kind[] = [
  { name: 'full', params: {} },
  { name: 'subscribers', params: { include_subscribers: 'true' } },
  { name: 'modern', params: { include_subscribers: 'partial', client_capabilities: JSON.stringify({ notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: true, stream_typing_notifications: true, user_settings_object: true, linkifier_url_template: true, user_list_incomplete: true, include_deactivated_groups: true, archived_channels: true, empty_topic_name: true, simplified_presence_events: true }) } },
];

async function post(url: string, who: Credentials, path: string, params: Record<string, string>, method = 'POST'): Promise<{ status: number; text: string }> {
  const auth = `Basic ${Buffer.from(`${who.email}:${who.apiKey}`).toString('base64')}`;
  const body = new URLSearchParams(params).toString();
  const res = await fetch(`${url}/api/v1${path}${method === 'DELETE' ? `?${body}` : ''}`, { method, headers: { Authorization: auth, 'Content-Type': 'application/x-www-form-urlencoded' }, body: method === 'DELETE' ? undefined : body });
  return { status: res.status, text: await res.text() };
}

/** Registers `n` times, `parallel` at once; the latencies in ms and the reply's size. */
async function registers(url: string, who: Credentials, kind: Kind, n: number, parallel: number): Promise<{ ms: number[]; bytes: number }> {
  const ms: number[] = [];
  let bytes = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < n) {
        next++;
        const t0 = performance.now();
        const r = await post(url, who, '/register', kind.params);
        ms.push(performance.now() - t0);
        if (r.status !== 200) throw new Error(`register ${kind.name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
        bytes = Buffer.byteLength(r.text);
        const queue = (JSON.parse(r.text) as { queue_id: string }).queue_id;
        await post(url, who, '/events', { queue_id: queue }, 'DELETE');
      }
    }),
  );
  return { ms, bytes };
}

const round = (x: number) => +x.toFixed(1);
const pct = (ms: number[], p: number) => round(percentile(Float64Array.from(ms).sort(), p));

async function measure(repo: string, users: number): Promise<Record<string, unknown>> {
  const seeded = await startParley({ repo, readyTimeoutMs: 120_000 });
  await seeded.stop();
  await growDemo(join(seeded.dir, 'data'), users - 5);
  const server = await startParley({ repo, dir: seeded.dir, readyTimeoutMs: 300_000, ...(values.profile ? { cpuProfDir: values.profile } : {}) });
  try {
    const who = server.users.member1!;
    const out: Record<string, unknown> = { repo: repo === REPO ? '(this checkout)' : repo, users };
    for (const kind of KINDS) {
      await registers(server.url, who, kind, 10, 1); // warm-up
      const cpu0 = procCpuSeconds(server.pid);
      const one = await registers(server.url, who, kind, COUNT, 1);
      // The server's CPU per register (and its queue's deletion): steadier than latency on a shared machine.
      const cpuMs = ((procCpuSeconds(server.pid) - cpu0) * 1000) / COUNT;
      const eight = await registers(server.url, who, kind, COUNT, 8);
      out[kind.name] = {
        bytes: one.bytes,
        serverCpuMs: round(cpuMs),
        p50ms: pct(one.ms, 50),
        p99ms: pct(one.ms, 99),
        p50ms8: pct(eight.ms, 50),
        p99ms8: pct(eight.ms, 99),
      };
    }
    return out;
  } catch (err) {
    process.stderr.write(`server output:\n${server.output().slice(-3000)}\n`);
    throw err;
  } finally {
    await server.dispose();
  }
}

for (const repo of [...values.repo, REPO]) {
  for (const users of SIZES) process.stdout.write(`${JSON.stringify(await measure(repo, users))}\n`);
}
