// Parley behind real load balancers: nginx (deploy/nginx/parley.conf), HAProxy
// (deploy/haproxy/haproxy.cfg) and the nginx that ingress-nginx makes of
// k8s/base/ingress.yaml, each from Debian's packages (scripts/install-lb.sh),
// in front of the two gateways of a local cluster over the real NATS, Redis
// and Cassandra (started by test/run.sh). The long poll's heartbeat is 2 s
// here, and each proxy's long-poll timeout 4 s: between the heartbeat and the
// gateway's own limit, as 90 s is for the default 50 s heartbeat.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import t from 'tap';
import { freePort, startProcess, type ClusterProcess } from '../../scripts/cluster-launcher.ts';
import { type Api, uniq } from '../helpers/api.ts';
import { startTestCluster, transportFailure } from '../cluster/helpers.ts';
import { haproxyServers, type Proxy, startHaproxy, startNginx } from './proxies.ts';

const HEARTBEAT_SECS = 2;
const POLL_TIMEOUT_SECS = 4;
/** The gateway's budget for requests without credentials, per client address. */
const IP_BUDGET = 5;

const c = await startTestCluster({
  PARLEY_HEARTBEAT_SECS: String(HEARTBEAT_SECS),
  PARLEY_TRUST_FORWARDED_FOR: 'true',
  PARLEY_RATE_LIMIT_IP: `${IP_BUDGET}/60`,
  // Longer than the proxies keep an idle connection to a gateway (4 s): see Gateway.drain.
  PARLEY_DRAIN_DELAY_SECS: '5',
});
t.teardown(() => c.stop());
const hostPort = (url: string) => url.replace(/^http:\/\//, '');
const gateways = c.gateways.map(hostPort) as [string, string];
const options = { gateways, pollTimeoutSecs: POLL_TIMEOUT_SECS };
const proxies: Proxy[] = [await startNginx(options), await startHaproxy(options), await startNginx(options, 'ingress-nginx')];
t.teardown(() => Promise.all(proxies.map((p) => p.stop())));

const channel = uniq('lb');
await c.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [c.memberId] });
const basic = `Basic ${Buffer.from(`${c.owner.creds!.email}:${c.owner.creds!.apiKey}`).toString('base64')}`;

/** Writes `text` on a fresh connection; resolves with what came back when the server closes, or after `waitMs`. */
function raw(port: number, text: string, waitMs = 3000): Promise<{ ms: number; reply: string; closed: boolean }> {
  return new Promise((res) => {
    const started = Date.now();
    let reply = '';
    const s = connect(port, '127.0.0.1', () => s.write(text));
    const timer = setTimeout(() => {
      s.destroy();
      res({ ms: Date.now() - started, reply, closed: false });
    }, waitMs);
    s.on('data', (d) => (reply += d));
    s.on('error', () => {});
    s.on('close', () => {
      clearTimeout(timer);
      res({ ms: Date.now() - started, reply, closed: true });
    });
  });
}

/** GET from a given local address (127.0.0.x), on a connection of its own. */
function getFrom(base: string, path: string, localAddress: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const url = new URL(base);
  return new Promise((res, rej) => {
    const req = request({ host: url.hostname, port: url.port, path, localAddress, agent: false, headers }, (r) => {
      r.resume();
      r.on('end', () => res({ status: r.statusCode!, headers: r.headers }));
    });
    req.on('error', rej);
    req.end();
  });
}

const remaining = (r: { headers: Record<string, string | string[] | undefined> }) => Number(r.headers['x-ratelimit-remaining']);

t.test('gateway - HTTP/1.0 and a Host-less request never reach the handler (uWebSockets.js 20.30): no answer', async (t) => {
  // Why the proxies must speak HTTP/1.1 with a Host (deploy/README.md). uWS takes an HTTP/1.0 request (and
  // an HTTP/1.1 one that is a bare request line) for an incomplete one and waits for the rest until its idle
  // timeout (8 to 12 s); an HTTP/1.1 request with headers but no Host it closes. Nothing in Parley runs.
  const port = Number(new URL(c.gateways[0]).port);
  const auth = `Authorization: ${basic}\r\n`;
  const [old, oldHost, bare, hostless, control] = await Promise.all([
    raw(port, `GET /api/v1/users/me HTTP/1.0\r\n${auth}\r\n`),
    raw(port, `GET /api/v1/users/me HTTP/1.0\r\nHost: 127.0.0.1\r\n${auth}\r\n`),
    raw(port, 'GET /api/v1/server_settings HTTP/1.1\r\n\r\n'),
    raw(port, `GET /api/v1/users/me HTTP/1.1\r\n${auth}\r\n`),
    raw(port, `GET /api/v1/users/me HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Connection: close\r\n\r\n`),
  ]);
  t.same([old!.reply, old!.closed], ['', false], 'HTTP/1.0: nothing back, the connection still open after 3 s');
  t.same([oldHost!.reply, oldHost!.closed], ['', false], 'HTTP/1.0 with Host: the same');
  t.same([bare!.reply, bare!.closed], ['', false], 'HTTP/1.1, a request line and no header: the same');
  t.same([hostless!.reply, hostless!.closed], ['', true], `HTTP/1.1 with headers but no Host: closed with no answer, after ${hostless!.ms} ms`);
  t.match(control!.reply, /^HTTP\/1\.1 200 OK/, `the same request in HTTP/1.1 with a Host: answered in ${control!.ms} ms`);
});

for (const [i, proxy] of proxies.entries()) {
  const api: Api = c.owner.at(proxy.url);

  t.test(`${proxy.kind} - sends and history through it, served by both gateways`, async (t) => {
    const topic = uniq('sends');
    const ids: number[] = [];
    for (let n = 0; n < 10; n++) ids.push((await api.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: `${proxy.kind} ${n}` })).id);
    const got = await api.ok('GET', '/messages', { anchor: 'newest', num_before: 20, num_after: 0, narrow: [['stream', channel], ['topic', topic]], apply_markdown: false });
    t.same(got.messages.map((m: { id: number; content: string }) => [m.id, m.content]), ids.map((id, n) => [id, `${proxy.kind} ${n}`]), 'the ten sends, in order, with their content');
    // Which gateway served each request: nginx's access log ($upstream_addr), HAProxy's log line (backend/server).
    const log = proxy.log() + (proxy.kind === 'haproxy' ? '' : await readAccessLog(proxy));
    const served = gateways.map((g, n) => (proxy.kind === 'haproxy' ? log.includes(`parley_gateways/gw${n + 1} `) : log.includes(` ${g} `)));
    t.same(served, [true, true], 'both gateways served requests');
  });

  t.test(`${proxy.kind} - a long poll is held for the heartbeat and answered, not cut by the proxy`, async (t) => {
    const q = await api.ok('POST', '/register', { event_types: ['message'] });
    const started = Date.now();
    const r = await api.get('/events', { queue_id: q.queue_id, last_event_id: q.last_event_id });
    const held = (Date.now() - started) / 1000;
    t.equal(r.status, 200, 'answered by the gateway');
    t.same(r.body.events?.map((e: { type: string }) => e.type), ['heartbeat'], 'with a heartbeat event');
    t.ok(held >= HEARTBEAT_SECS * 0.85, `held ${held.toFixed(2)} s (heartbeat ${HEARTBEAT_SECS} s, proxy timeout ${POLL_TIMEOUT_SECS} s)`);
  });

  t.test(`${proxy.kind} - the client's address reaches the rate limiter through X-Forwarded-For`, async (t) => {
    const [a, b] = [`127.0.0.${2 * i + 2}`, `127.0.0.${2 * i + 3}`];
    const a1 = await getFrom(proxy.url, '/api/v1/server_settings', a);
    const a2 = await getFrom(proxy.url, '/api/v1/server_settings', a, { 'X-Forwarded-For': '10.9.9.9' });
    const b1 = await getFrom(proxy.url, '/api/v1/server_settings', b);
    t.same([a1.status, a2.status, b1.status], [200, 200, 200]);
    t.equal(remaining(a1), IP_BUDGET - 1, `${a}: its first request`);
    t.equal(remaining(a2), IP_BUDGET - 2, `${a} again, claiming another address in X-Forwarded-For: counted as ${a}`);
    t.equal(remaining(b1), IP_BUDGET - 1, `${b}: a budget of its own`);
  });

  t.test(`${proxy.kind} - HTTP/1.0 and a request without Host are answered through it`, async (t) => {
    // The shipped file itself says so (docs/operations.md, "Known limitations of the HTTP edge").
    if (proxy.kind === 'haproxy') {
      t.match(proxy.config, /\n\s*use_backend parley_http11 if HTTP_1\.0\n/, 'HTTP/1.0 clients upgraded through HAProxy\'s own hop');
      t.match(proxy.config, /\n\s*http-request set-header Host \S+ unless \{ req\.hdr\(host\) -m found \}\n/, 'a missing Host set');
      t.match(proxy.config, /\n\s*http-check send meth GET uri \/readyz ver HTTP\/1\.1 hdr Host \S+\n/, 'health checks in HTTP/1.1 with a Host');
    } else {
      t.match(proxy.config, /\n\s*proxy_http_version 1\.1;\n/, 'proxy_http_version 1.1');
      t.match(proxy.config, /\n\s*proxy_set_header Host \$host;\n/, 'proxy_set_header Host $host');
    }
    for (const [what, text] of [
      ['HTTP/1.0 without Host', `GET /api/v1/users/me HTTP/1.0\r\nAuthorization: ${basic}\r\n\r\n`],
      ['HTTP/1.0 with Host', `GET /api/v1/users/me HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: ${basic}\r\n\r\n`],
      ['HTTP/1.1 without Host', `GET /api/v1/users/me HTTP/1.1\r\nAuthorization: ${basic}\r\nConnection: close\r\n\r\n`],
    ]) {
      const r = await raw(proxy.port, text!);
      const status = /^HTTP\/1\.[01] (\d+)/.exec(r.reply)?.[1];
      // nginx answers a Host-less HTTP/1.1 request 400 itself (RFC 9112 requires Host), as it should.
      const expected = what === 'HTTP/1.1 without Host' && proxy.kind !== 'haproxy' ? '400' : '200';
      t.equal(status, expected, `${what}: ${expected} in ${r.ms} ms`);
      if (expected === '200') t.match(r.reply, `"email":"${c.owner.creds!.email}"`, `${what}: the gateway's answer`);
    }
  });

  t.test(`${proxy.kind} - /metrics is not served to the public`, async (t) => {
    const r = await fetch(`${proxy.url}/metrics`);
    await r.arrayBuffer();
    t.equal(r.status, 404);
    t.notMatch(r.headers.get('content-type') ?? '', /json/, "the proxy's answer, not the gateway's");
  });
}

t.test('all proxies - uploads: a 20 MB file round-trips through each to the cluster; 26 MiB is refused', async (t) => {
  // Proxies of their own with the shipped timeouts' order of magnitude (30 s, where the suite's others have
  // 4 s for the long poll): a 20 MB file takes seconds to cross the bus and reach Cassandra on a busy machine.
  const mine = [await startNginx({ gateways, pollTimeoutSecs: 30 }), await startHaproxy({ gateways, pollTimeoutSecs: 30 }), await startNginx({ gateways, pollTimeoutSecs: 30 }, 'ingress-nginx')];
  t.teardown(() => Promise.all(mine.map((p) => p.stop())));
  const limit = (await c.owner.ok('POST', '/register', { fetch_event_types: ['realm'] })).max_file_upload_size_mib as number;
  t.equal(limit, 25, "the realm's max_file_upload_size_mib: Zulip's 25 MiB, in a cluster too");
  for (const [i, proxy] of mine.entries()) {
    const data = Buffer.alloc(20 * 1000 * 1000);
    for (let n = 0; n < data.length; n += 4096) data.writeUInt32LE(((n + i) * 2654435761) >>> 0, n);
    const before = memory();
    let started = Date.now();
    const up = await upload(proxy, data);
    t.equal(up.status, 200, `${proxy.kind}: 20 MB uploaded in ${Date.now() - started} ms ${up.status === 200 ? '' : JSON.stringify(up.body).slice(0, 200)}`);
    started = Date.now();
    const file = await fetch(`${proxy.url}${up.body.url}`, { headers: { authorization: basic } });
    const back = Buffer.from(await file.arrayBuffer());
    t.equal(file.status, 200, `${proxy.kind}: GET ${up.body.url} in ${Date.now() - started} ms`);
    t.equal(createHash('sha256').update(back).digest('hex'), createHash('sha256').update(data).digest('hex'), `${proxy.kind}: the 20 MB back, byte for byte`);
    // Peak resident memory (VmHWM) of each process before and after: what one 20 MB file costs the gateway and actor node that carry it.
    const after = memory();
    t.comment(`RSS MiB around one 20 MB upload and download through ${proxy.kind}: ${after.map((m, n) => `${m.name} peak ${before[n]!.peakMiB}->${m.peakMiB}, now ${m.rssMiB}`).join('; ')}`);
    for (const [n, m] of after.entries()) t.ok(m.peakMiB - before[n]!.peakMiB < 400, `${proxy.kind}: ${m.name}'s peak grew ${m.peakMiB - before[n]!.peakMiB} MiB (bound 400)`);
    // Just over the limit (25 MiB + 1 KiB): under every body limit (the proxies' 26m, the gateway's 25 MiB + framing),
    // so the gateway judges the file itself, in the API's envelope, before it crosses the bus.
    const over = await upload(proxy, Buffer.alloc(25 * 1024 * 1024 + 1024, 7));
    t.same([over.status, over.body.code, over.body.msg], [400, 'BAD_REQUEST', "File is larger than this server's configured maximum upload size (25 MiB)."], `${proxy.kind}: 25 MiB + 1 KiB gets the API's error`);
    // 26 MiB: over every body limit. nginx answers itself (its HTML 413); HAProxy has none, so the gateway does (its JSON 413).
    const big = await upload(proxy, Buffer.alloc(26 * 1024 * 1024, 7));
    if (proxy.kind === 'haproxy') t.same([big.status, big.body.code], [413, 'REQUEST_TOO_LARGE'], "haproxy: 26 MiB gets the gateway's 413");
    else t.same([big.status, /413 Request Entity Too Large/.test(big.body.text ?? '')], [413, true], `${proxy.kind}: 26 MiB gets nginx's own 413`);
  }
});

t.test('nginx - a long-poll timeout below the heartbeat cuts the poll (why the shipped one is above it)', async (t) => {
  const short = await startNginx({ gateways, pollTimeoutSecs: 1 });
  t.teardown(() => short.stop());
  const api = c.owner.at(short.url);
  const q = await api.ok('POST', '/register', { event_types: ['message'] });
  const r = await fetch(`${short.url}/api/v1/events?queue_id=${q.queue_id}&last_event_id=${q.last_event_id}`, { headers: { authorization: basic } });
  await r.arrayBuffer();
  t.equal(r.status, 504, 'nginx gave up on the poll after 1 s');
});

t.test('X-Forwarded-For - without PARLEY_TRUST_FORWARDED_FOR, every client behind the proxy shares its budget', async (t) => {
  const port = await freePort();
  const untrusting = await startProcess('gateway', 'gateway-untrusting', port, { ...c.env, PARLEY_DEMO_DIR: c.demoDir, PARLEY_TRUST_FORWARDED_FOR: 'false' }, false);
  const proxy = await startNginx({ gateways: [hostPort(untrusting.url), hostPort(untrusting.url)], pollTimeoutSecs: POLL_TIMEOUT_SECS });
  t.teardown(async () => {
    await proxy.stop();
    untrusting.child.kill('SIGTERM');
  });
  const a = await getFrom(proxy.url, '/api/v1/server_settings', '127.0.0.20');
  const b = await getFrom(proxy.url, '/api/v1/server_settings', '127.0.0.21');
  t.equal(remaining(b), remaining(a) - 1, 'the second client spent the first one\'s budget (both are the proxy\'s 127.0.0.1)');
});

/** Requests through every proxy from two loops each (a send, then a read of the channel), until `stop`; anything but a 200 is wrong. */
function trafficThroughProxies(prefix: string) {
  let running = true;
  let answered = 0;
  const wrong: string[] = [];
  const loops = proxies.flatMap((proxy, p) =>
    [0, 1].map(async (w) => {
      const api = c.owner.at(proxy.url);
      for (let n = 0; running; n++) {
        const started = Date.now();
        try {
          const r = n % 2 ? await api.get('/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [['stream', channel]] }) : await api.post('/messages', { type: 'stream', to: channel, topic: prefix, content: `${prefix} ${proxy.kind} ${w} ${n}` });
          if (r.status === 200) answered++;
          else wrong.push(`${proxy.kind}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
        } catch (err) {
          wrong.push(`${proxy.kind}: ${transportFailure(p, started, err)}`);
        }
      }
    }),
  );
  return {
    wrong,
    answered: () => answered,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

const gateway2 = (): ClusterProcess => c.procs.find((p) => p.name === 'gateway-2')!;

async function restartGateway2(): Promise<void> {
  const old = gateway2();
  const port = Number(new URL(old.url).port);
  const again = await startProcess('gateway', 'gateway-2', port, { ...c.env, PARLEY_DEMO_DIR: c.demoDir }, false);
  c.procs[c.procs.indexOf(old)] = again;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - started;
}

t.test('all proxies - a gateway stopped with SIGTERM: every client is still served, no request fails', async (t) => {
  const load = trafficThroughProxies(uniq('sigterm'));
  await new Promise((r) => setTimeout(r, 500));
  const before = load.answered();
  const leaving = gateway2();
  const exited = new Promise((r) => leaving.child.once('exit', r));
  leaving.child.kill('SIGTERM');
  await exited;
  await new Promise((r) => setTimeout(r, 1000));
  await load.stop();
  t.same(load.wrong, [], `${load.answered()} requests answered 200 (${load.answered() - before} from the signal on), none failed`);
  t.equal(leaving.child.exitCode, 0, 'the gateway drained and exited cleanly');
  await restartGateway2();
  const haproxy = proxies.find((p) => p.kind === 'haproxy')!;
  const ms = await until('HAProxy sees gateway 2 up again', async () => (await haproxyServers(haproxy)).gw2 === 'UP', 10_000);
  t.comment(`HAProxy marked the restarted gateway UP after ${ms} ms`);
});

t.test('all proxies - a gateway killed with kill -9: marked down within seconds, clients still served', async (t) => {
  const haproxy = proxies.find((p) => p.kind === 'haproxy')!;
  t.same(await haproxyServers(haproxy), { gw1: 'UP', gw2: 'UP' }, 'both gateways up before');
  const nginxLogs = proxies.filter((p) => p.kind !== 'haproxy').map((p) => [p, p.log().length] as const);
  const load = trafficThroughProxies(uniq('kill'));
  await new Promise((r) => setTimeout(r, 500));
  const victim = gateway2();
  const killedAt = Date.now();
  victim.child.kill('SIGKILL');
  const downMs = await until('HAProxy marks gateway 2 DOWN', async () => (await haproxyServers(haproxy)).gw2?.startsWith('DOWN') ?? false, 10_000);
  t.ok(downMs < 5000, `HAProxy: gateway 2 DOWN ${Date.now() - killedAt} ms after kill -9 (checks every 1 s, down after 2 failures)`);
  for (const [p, from] of nginxLogs) {
    const ms = await until(`${p.kind} leaves gateway 2 out`, async () => p.log().slice(from).includes('upstream server temporarily disabled'), 5000);
    t.ok(true, `${p.kind}: gateway 2 left out (passive check: "upstream server temporarily disabled") ${ms} ms after the kill`);
  }
  await new Promise((r) => setTimeout(r, 500));
  const after = load.answered();
  await new Promise((r) => setTimeout(r, 1000));
  await load.stop();
  t.ok(load.answered() > after, `clients served through the survivor (${load.answered() - after} answers in the last second)`);
  // In-flight requests on the killed gateway's connections may fail (a POST is not retried once sent): only report them.
  t.comment(`${load.wrong.length} of ${load.answered() + load.wrong.length} requests failed around the kill: ${load.wrong.slice(0, 3).join(' | ')}`);
  await restartGateway2();
});

async function upload(proxy: Proxy, data: Buffer, authorization = basic): Promise<{ status: number; body: Record<string, any> }> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(data)], { type: 'application/octet-stream' }), 'big.bin');
  const r = await fetch(`${proxy.url}/api/v1/user_uploads`, { method: 'POST', headers: { authorization }, body: form });
  const text = await r.text();
  try {
    return { status: r.status, body: JSON.parse(text) };
  } catch {
    return { status: r.status, body: { text: text.slice(0, 200) } };
  }
}

/** Resident memory of the cluster's processes now and at their peak (/proc/<pid>/status: VmRSS, VmHWM), in MiB. */
function memory(): Array<{ name: string; rssMiB: number; peakMiB: number }> {
  return c.procs.map((p) => {
    const status = readFileSync(`/proc/${p.pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
    return { name: p.name, rssMiB: Math.round(kib('VmRSS') / 1024), peakMiB: Math.round(kib('VmHWM') / 1024) };
  });
}

async function readAccessLog(proxy: Proxy): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  return readFile(`${proxy.dir}/access.log`, 'utf8');
}
