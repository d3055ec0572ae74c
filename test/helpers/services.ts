/**
 * Real backing servers for tests: each call starts its own nats-server or
 * redis-server on a free loopback port and returns once it answers. A missing
 * binary fails the test (install with `bash scripts/services.sh install`, or
 * `apt-get install -y nats-server redis-server`); it is never skipped.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Service {
  url: string;
  port: number;
  /** Kills the server and waits for it to exit. Safe to call twice. */
  stop(): Promise<void>;
  /** SIGSTOP / SIGCONT: the server stays up but answers nothing. */
  pause(): void;
  resume(): void;
}

/** A port nothing listens on right now (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * nats-server on 127.0.0.1, ready once it sends its INFO banner.
 * `maxPayload` (bytes) replaces the server's 1 MiB default (it has no flag for it: a config file is written).
 */
export async function startNats(opts: { port?: number; maxPayload?: number } = {}): Promise<Service> {
  const port = opts.port ?? (await freePort());
  const args = ['-a', '127.0.0.1', '-p', String(port)];
  let dir: string | null = null;
  if (opts.maxPayload !== undefined) {
    dir = mkdtempSync(join(tmpdir(), 'parley-nats-'));
    writeFileSync(join(dir, 'nats.conf'), `max_payload: ${opts.maxPayload}\n`);
    args.push('-c', join(dir, 'nats.conf'));
  }
  try {
    return await start('nats-server', args, port, `nats://127.0.0.1:${port}`, (s) => s.startsWith('INFO '));
  } finally {
    // Read once at start; a restart (`startNats({ port })`) writes its own.
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** redis-server on 127.0.0.1 without persistence, ready once PING gets PONG. */
export async function startRedis(opts: { port?: number } = {}): Promise<Service> {
  const port = opts.port ?? (await freePort());
  return start(
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--protected-mode', 'no'],
    port,
    `redis://127.0.0.1:${port}`,
    (s) => s.startsWith('+PONG'),
    'PING\r\n',
  );
}

async function start(bin: string, args: string[], port: number, url: string, ready: (banner: string) => boolean, probe?: string): Promise<Service> {
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(err.code === 'ENOENT' ? `${bin} is not installed: run \`bash scripts/services.sh install\` (or apt-get install -y ${bin})` : `${bin}: ${err.message}`)),
    );
    child.once('exit', (code, signal) => reject(new Error(`${bin} exited (${code ?? signal}) before it was ready: ${stderr.trim()}`)));
  });
  failed.catch(() => {});
  const service: Service = {
    url,
    port,
    stop: () => kill(child, exited),
    pause: () => void child.kill('SIGSTOP'),
    resume: () => void child.kill('SIGCONT'),
  };
  try {
    await Promise.race([failed, waitReady(port, ready, probe, 10_000)]);
  } catch (err) {
    await service.stop();
    throw err;
  }
  return service;
}

async function kill(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
  await exited;
  clearTimeout(timer);
}

async function waitReady(port: number, ready: (banner: string) => boolean, probe: string | undefined, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await answers(port, ready, probe)) return;
    if (Date.now() > until) throw new Error(`server on port ${port} not ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function answers(port: number, ready: (banner: string) => boolean, probe: string | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = '';
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.on('error', () => done(false));
    sock.on('connect', () => probe && sock.write(probe));
    sock.on('data', (d) => {
      buf += d.toString();
      if (ready(buf)) done(true);
      else if (buf.includes('\n')) done(false);
    });
  });
}

/** A TCP relay to a server that a test can cut (connections dropped, new ones refused) and restore, as a network partition would. */
export interface Relay {
  url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  stop(): Promise<void>;
}

/** Relays `nats://127.0.0.1:<port>` (or redis://) connections from a port of its own to `target`. */
export async function startRelay(target: Service): Promise<Relay> {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  let server: net.Server | null = null;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect(target.port, '127.0.0.1');
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.on('close', () => sockets.delete(sock));
          sock.on('error', () => {});
        }
        client.pipe(upstream).pipe(client);
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve());
      server = s;
    });
  const close = async () => {
    const s = server;
    server = null;
    for (const sock of sockets) sock.destroy();
    if (s) await new Promise((r) => s.close(r));
  };
  await listen();
  return { url: target.url.replace(`:${target.port}`, `:${port}`), cut: close, restore: listen, stop: close };
}
