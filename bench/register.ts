/**
 * POST /register in a large organization (issue 20): the demo organization
 * grown to N users (written straight into the embedded store while the
 * server is stopped, every one subscribed to `general`), then registers by a
 * member, one at a time and 8 at a time, timed at the client.
 *
 *   node --import tsx bench/register.ts [--users 1000,10000] [--count 200] [--kinds full,subscribers,modern] [--encodings identity,gzip] [--repo DIR ...] [--profile DIR]
 *
 * Three kinds of register are timed: `full` (what the official clients ask
 * for: every event type, subscribers left out), `subscribers` (the same with
 * include_subscribers=true) and `modern` (client_capabilities
 * user_list_incomplete, include_subscribers="partial", as the current web
 * and mobile apps). Each is asked without Accept-Encoding (`identity`) and
 * with `Accept-Encoding: gzip` as every official client sends it (`gzip`:
 * the client's gunzip is in the time; `wireBytes` is what crossed the
 * socket). Latency is timed at the client (p50/p99, one at a time
 * and 8 at a time); `serverCpuMs` is the server process's CPU time per
 * register over the one-at-a-time run, which other work on a shared machine
 * does not inflate as much. Each queue is deleted after its register, outside the
 * timing. Each `--repo` is another checkout measured the same way (a
 * baseline), before this one.
 */
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { growDemo } from './lib/grow.ts';
import { procCpuSeconds, REPO, startParley, type Credentials } from './lib/server.ts';
import { percentile } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '1000,10000' },
    count: { type: 'string', default: '200' },
    kinds: { type: 'string', default: 'full,subscribers,modern' },
    encodings: { type: 'string', default: 'identity,gzip' },
    repo: { type: 'string', multiple: true, default: [] },
    /** Write the server's CPU profile there (bench/profile.ts reads it). */
    profile: { type: 'string' },
  },
});
const SIZES = values.users.split(',').map(Number);
const COUNT = Number(values.count);
const ENCODINGS = values.encodings.split(',') as Array<'identity' | 'gzip'>;

interface Kind {
  name: string;
  params: Record<string, string>;
}

const ALL_KINDS: Kind[] = [
  { name: 'full', params: {} },
  { name: 'subscribers', params: { include_subscribers: 'true' } },
  { name: 'modern', params: { include_subscribers: 'partial', client_capabilities: JSON.stringify({ notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: true, stream_typing_notifications: true, user_settings_object: true, linkifier_url_template: true, user_list_incomplete: true, include_deactivated_groups: true, archived_channels: true, empty_topic_name: true, simplified_presence_events: true }) } },
];

const KINDS = values.kinds.split(',').map((name) => ALL_KINDS.find((k) => k.name === name)!);

/** One request on a connection of its own (a kept-alive one the server closed while idle would fail the run); the body decoded as a client does (gunzipped if it came so), and its size on the wire. */
function post(url: string, who: Credentials, path: string, params: Record<string, string>, method = 'POST', encoding: 'identity' | 'gzip' = 'identity'): Promise<{ status: number; text: string; wire: number }> {
  const auth = `Basic ${Buffer.from(`${who.email}:${who.apiKey}`).toString('base64')}`;
  const body = new URLSearchParams(params).toString();
  const headers: Record<string, string> = { Authorization: auth, 'Content-Type': 'application/x-www-form-urlencoded', ...(encoding === 'gzip' ? { 'Accept-Encoding': 'gzip' } : {}) };
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/api/v1${path}${method === 'DELETE' ? `?${body}` : ''}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = (res.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString();
        resolve({ status: res.statusCode!, text, wire: raw.length });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(method === 'DELETE' ? undefined : body);
  });
}

/** Registers `n` times, `parallel` at once; the latencies in ms, the reply's size and its size on the wire. */
async function registers(url: string, who: Credentials, kind: Kind, n: number, parallel: number, encoding: 'identity' | 'gzip'): Promise<{ ms: number[]; bytes: number; wire: number; failures: string[] }> {
  const ms: number[] = [];
  let bytes = 0;
  let wire = 0;
  const failures: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < n) {
        next++;
        const t0 = performance.now();
        let r;
        try {
          r = await post(url, who, '/register', kind.params, 'POST', encoding);
        } catch (err) {
          // A connection the server closed (uWS closes one that stays silent for 10 s): counted, not fatal.
          failures.push(`${(err as Error).message} after ${Math.round(performance.now() - t0)} ms`);
          continue;
        }
        ms.push(performance.now() - t0);
        if (r.status !== 200) throw new Error(`register ${kind.name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
        bytes = Buffer.byteLength(r.text);
        wire = r.wire;
        // The queue's ID from the reply's head: parsing megabytes here would time this one-threaded client, not the server.
        const queue = /"queue_id":"([^"]+)"/.exec(r.text.slice(0, 2000))![1]!;
        await post(url, who, '/events', { queue_id: queue }, 'DELETE');
      }
    }),
  );
  return { ms, bytes, wire, failures };
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
      for (const encoding of ENCODINGS) {
      await registers(server.url, who, kind, 5, 1, encoding); // warm-up
      const cpu0 = procCpuSeconds(server.pid);
      const one = await registers(server.url, who, kind, COUNT, 1, encoding);
      // The server's CPU per register (and its queue's deletion): steadier than latency on a shared machine.
      const cpuMs = ((procCpuSeconds(server.pid) - cpu0) * 1000) / COUNT;
      const eight = await registers(server.url, who, kind, COUNT, 8, encoding);
      out[`${kind.name}/${encoding}`] = {
        bytes: one.bytes,
        wireBytes: one.wire,
        serverCpuMs: round(cpuMs),
        p50ms: pct(one.ms, 50),
        p99ms: pct(one.ms, 99),
        p50ms8: pct(eight.ms, 50),
        p99ms8: pct(eight.ms, 99),
        ...(one.failures.length + eight.failures.length ? { failures: [...one.failures, ...eight.failures] } : {}),
      };
      process.stderr.write(`${users} ${kind.name}/${encoding}: ${JSON.stringify(out[`${kind.name}/${encoding}`])}\n`);
      }
    }
    out.loadavg = (await import('node:os')).loadavg().map((x) => +x.toFixed(1));
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
