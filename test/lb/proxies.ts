/**
 * Real nginx and HAProxy for the load-balancer suite, each run from the
 * configuration shipped in deploy/ (or rendered from the ingress-nginx
 * manifests in k8s/), in a temporary directory, on a free port of 127.0.0.1.
 * The shipped files are changed only where a test must: addresses, ports,
 * paths, and the long poll's timeouts (scaled down with the cluster's
 * heartbeat). Each change must match exactly where expected, so a shipped
 * file that drifts from the suite fails here instead of being tested as
 * something else.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { diesWithThisProcess, freePort } from '../../scripts/cluster-launcher.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
export const NGINX = '/usr/sbin/nginx';
export const HAPROXY = '/usr/sbin/haproxy';

export interface ProxyOptions {
  /** The gateways' `host:port`, in order. */
  gateways: [string, string];
  /** The long poll's read timeout, in seconds (90 in the shipped files). */
  pollTimeoutSecs: number;
}

export interface Proxy {
  kind: 'nginx' | 'haproxy' | 'ingress-nginx';
  url: string;
  port: number;
  dir: string;
  /** The configuration it runs, as written to `dir`. */
  config: string;
  /** What it printed and logged so far (error log, HAProxy's stdout). */
  log(): string;
  stop(): Promise<void>;
}

/** `text` with each `[from, to, times]` replaced, each found exactly `times` times. */
export function substitute(name: string, text: string, changes: Array<[string, string, number]>): string {
  for (const [from, to, times] of changes) {
    const found = text.split(from).length - 1;
    if (found !== times) throw new Error(`${name}: expected "${from}" ${times} time(s), found ${found}`);
    text = text.split(from).join(to);
  }
  return text;
}

/** deploy/nginx/parley.conf for this test, and the nginx.conf around it (the http { } context it expects). */
function nginxFiles(dir: string, port: number, site: string): string {
  for (const d of ['body', 'proxy']) mkdirSync(join(dir, d));
  writeFileSync(join(dir, 'parley.conf'), site);
  return [
    // As root, nginx runs its workers as `nobody`, who cannot write the buffered bodies into this private directory.
    process.getuid?.() === 0 ? 'user root;' : '',
    'daemon off;',
    'worker_processes 1;',
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log info;`,
    'events { worker_connections 1024; }',
    'http {',
    // Which gateway served each request: $upstream_addr.
    "  log_format upstream '$remote_addr \"$request\" $status $upstream_addr ';",
    `  access_log ${dir}/access.log upstream;`,
    `  client_body_temp_path ${dir}/body;`,
    `  proxy_temp_path ${dir}/proxy;`,
    `  include ${dir}/parley.conf;`,
    '}',
    '',
  ].join('\n');
}

export function renderNginx(port: number, o: ProxyOptions): string {
  return substitute('deploy/nginx/parley.conf', readFileSync(join(ROOT, 'deploy/nginx/parley.conf'), 'utf8'), [
    ['server 10.0.0.11:9991 ', `server ${o.gateways[0]} `, 1],
    ['server 10.0.0.12:9991 ', `server ${o.gateways[1]} `, 1],
    ['    listen 80;', `    listen 127.0.0.1:${port};`, 1],
    ['        proxy_read_timeout 90s;', `        proxy_read_timeout ${o.pollTimeoutSecs}s;`, 1],
    ['        proxy_send_timeout 90s;', `        proxy_send_timeout ${o.pollTimeoutSecs}s;`, 1],
  ]);
}

export function renderHaproxy(dir: string, port: number, o: ProxyOptions): string {
  return substitute('deploy/haproxy/haproxy.cfg', readFileSync(join(ROOT, 'deploy/haproxy/haproxy.cfg'), 'utf8'), [
    ['stats socket /run/haproxy/admin.sock ', `stats socket ${dir}/admin.sock `, 1],
    ['pidfile /run/haproxy.pid', `pidfile ${dir}/haproxy.pid`, 1],
    ['    bind :80\n', `    bind 127.0.0.1:${port}\n`, 1],
    [' 10.0.0.11:9991', ` ${o.gateways[0]}`, 2],
    [' 10.0.0.12:9991', ` ${o.gateways[1]}`, 2],
    // An abstract socket's name is one per machine: two suites at once must not share it.
    ['abns@parley-http11', `abns@parley-http11-${process.pid}-${port}`, 2],
    // `timeout client` stays as shipped (90 s): HAProxy closes an idle client connection after the
    // smaller of it and `timeout http-keep-alive` (10 s), and that must stay above the test client's
    // own keep-alive (Node's fetch: 4 s), or a request sent on a connection as HAProxy closes it fails
    // ("other side closed"). A client's keep-alive must always be the shorter one (deploy/README.md).
    ['    timeout server 90s', `    timeout server ${o.pollTimeoutSecs}s`, 2],
  ]);
}

/** What each ingress-nginx annotation of k8s/base/ingress.yaml becomes in the controller's nginx.conf. */
const ANNOTATIONS: Record<string, (value: string) => string> = {
  'proxy-read-timeout': (v) => `proxy_read_timeout ${v}s;`,
  'proxy-send-timeout': (v) => `proxy_send_timeout ${v}s;`,
  'proxy-buffering': (v) => `proxy_buffering ${v};`,
  'proxy-body-size': (v) => `client_max_body_size ${v};`,
  'proxy-http-version': (v) => `proxy_http_version ${v};`,
  'proxy-next-upstream': (v) => `proxy_next_upstream ${v};`,
  // Makes the Ingress path a case-insensitive regular expression location (below).
  'use-regex': () => '',
};

/** What each key of k8s/ingress-nginx/controller-configmap.yaml becomes. */
const CONTROLLER_KEYS: Record<string, (value: string) => string> = {
  'upstream-keepalive-timeout': (v) => `keepalive_timeout ${v}s;`,
};

interface IngressDoc {
  metadata: { annotations: Record<string, string> };
  spec: { rules: Array<{ host: string; http: { paths: Array<{ path: string; pathType: string; backend: { service: { name: string } } }> } }> };
}

/**
 * The server ingress-nginx makes of k8s/base/ingress.yaml and the controller
 * settings: its defaults (HTTP/1.1 and keep-alive to the pods, X-Forwarded-For
 * set to the client's address, Host passed on) and the directives of the
 * annotations. An annotation or key the table above does not know fails.
 */
export function renderIngress(port: number, o: ProxyOptions): string {
  const ingress = parse(readFileSync(join(ROOT, 'k8s/base/ingress.yaml'), 'utf8')) as IngressDoc;
  const controller = parse(readFileSync(join(ROOT, 'k8s/ingress-nginx/controller-configmap.yaml'), 'utf8')) as { data: Record<string, string> };
  const annotations = Object.entries(ingress.metadata.annotations).map(([k, v]) => {
    const name = k.replace(/^nginx\.ingress\.kubernetes\.io\//, '');
    const directive = ANNOTATIONS[name];
    if (!directive) throw new Error(`k8s/base/ingress.yaml: annotation ${k} has no nginx directive in test/lb/proxies.ts`);
    // The long poll's timeouts, scaled down with the cluster's heartbeat.
    return directive(name === 'proxy-read-timeout' || name === 'proxy-send-timeout' ? String(o.pollTimeoutSecs) : v);
  });
  const upstream = Object.entries(controller.data).map(([k, v]) => {
    const directive = CONTROLLER_KEYS[k];
    if (!directive) throw new Error(`k8s/ingress-nginx/controller-configmap.yaml: key ${k} has no nginx directive in test/lb/proxies.ts`);
    return directive(v);
  });
  const rule = ingress.spec.rules[0]!;
  const path = rule.http.paths[0]!;
  if (path.backend.service.name !== 'parley-gateway') throw new Error('the Ingress does not route to parley-gateway');
  const regex = ingress.metadata.annotations['nginx.ingress.kubernetes.io/use-regex'] === 'true';
  return [
    'upstream parley_ingress {',
    `    server ${o.gateways[0]};`,
    `    server ${o.gateways[1]};`,
    '    keepalive 320;',
    ...upstream.map((d) => `    ${d}`),
    '}',
    // The controller's Connection header: empty (keep-alive) unless the client upgrades.
    "map $http_upgrade $connection_upgrade { default upgrade; '' ''; }",
    'server {',
    `    listen 127.0.0.1:${port} default_server;`,
    `    server_name ${rule.host};`,
    `    location ${regex ? `~* "^${path.path}"` : path.path} {`,
    '        proxy_set_header Host $host;',
    '        proxy_set_header Connection $connection_upgrade;',
    '        proxy_set_header X-Forwarded-For $remote_addr;',
    '        proxy_set_header X-Real-IP $remote_addr;',
    '        proxy_set_header X-Forwarded-Proto $scheme;',
    '        proxy_connect_timeout 5s;',
    ...annotations.filter(Boolean).map((d) => `        ${d}`),
    '        proxy_pass http://parley_ingress;',
    '    }',
    // The controller's default backend answers what no Ingress path takes.
    '    location / { return 404; }',
    '}',
    '',
  ].join('\n');
}

async function waitForPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited (${child.exitCode}):\n${log()}`);
    const up = await new Promise<boolean>((res) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        res(true);
      });
      s.on('error', () => res(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`not listening on ${port} after 10 s:\n${log()}`);
}

/** Checks the configuration with `checkArgs`, then runs `cmd args` until `stop`. */
function startChild(kind: Proxy['kind'], dir: string, port: number, config: string, cmd: string, args: string[], checkArgs: string[], logFile: string | null): Promise<Proxy> {
  const check = spawnSync(cmd, checkArgs, { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`${kind}: the configuration does not load:\n${check.stdout}${check.stderr}`);
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  diesWithThisProcess(child);
  let out = '';
  const keep = (d: Buffer) => {
    out = (out + d.toString()).slice(-50_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const log = () => {
    let file = '';
    try {
      if (logFile) file = readFileSync(logFile, 'utf8');
    } catch {
      // not written yet
    }
    return out + file;
  };
  return waitForPort(port, child, log).then(() => ({
    kind,
    url: `http://127.0.0.1:${port}`,
    port,
    dir,
    config,
    log,
    stop: () =>
      new Promise<void>((res) => {
        const done = () => {
          rmSync(dir, { recursive: true, force: true });
          res();
        };
        if (child.exitCode !== null || child.signalCode !== null) return done();
        child.once('exit', done);
        child.kill('SIGTERM');
      }),
  }));
}

export async function startNginx(o: ProxyOptions, kind: 'nginx' | 'ingress-nginx' = 'nginx'): Promise<Proxy> {
  const dir = mkdtempSync(join(tmpdir(), `parley-${kind}-`));
  const port = await freePort();
  const site = kind === 'nginx' ? renderNginx(port, o) : renderIngress(port, o);
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, nginxFiles(dir, port, site));
  // -e: the error log before the configuration is read (the default, /var/log/nginx, may not be writable).
  const args = ['-e', join(dir, 'error.log'), '-c', conf];
  return startChild(kind, dir, port, site, NGINX, args, [...args, '-t'], join(dir, 'error.log'));
}

export async function startHaproxy(o: ProxyOptions): Promise<Proxy> {
  const dir = mkdtempSync(join(tmpdir(), 'parley-haproxy-'));
  const port = await freePort();
  const config = renderHaproxy(dir, port, o);
  const file = join(dir, 'haproxy.cfg');
  writeFileSync(file, config);
  // -db: in the foreground, logging to stdout (the shipped `log stdout`).
  return startChild('haproxy', dir, port, config, HAPROXY, ['-db', '-f', file], ['-c', '-f', file], null);
}

/** One command to HAProxy's runtime API (the shipped `stats socket`). */
export function haproxyCommand(p: Proxy, command: string): Promise<string> {
  return new Promise((res, rej) => {
    let out = '';
    const s = connect(join(p.dir, 'admin.sock'), () => s.end(`${command}\n`));
    s.on('data', (d) => (out += d));
    s.on('end', () => res(out));
    s.on('error', rej);
  });
}

/** HAProxy's view of each gateway of `parley_gateways`: name → UP, DOWN, MAINT... */
export async function haproxyServers(p: Proxy): Promise<Record<string, string>> {
  const csv = await haproxyCommand(p, 'show stat');
  const out: Record<string, string> = {};
  for (const line of csv.split('\n')) {
    const f = line.split(',');
    if (f[0] === 'parley_gateways' && f[1] !== 'BACKEND') out[f[1]!] = f[17]!;
  }
  return out;
}
