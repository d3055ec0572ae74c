/**
 * The operator's way into an embedded server: a Unix socket in the data
 * directory (`<data dir>/admin.sock`, mode 0600 in a 0700 directory, so only
 * the server's own OS user can connect) that carries bus requests and
 * publications into the process's in-process bus. The CLI (`cli/`) speaks
 * the same calls over NATS to a cluster; over this socket to one process.
 *
 * The protocol is one JSON object per line each way:
 *   → {id, op: 'request', subject, body, timeoutMs}   ← {id, text} | {id, error: WireError}
 *   → {id, op: 'publish', subject, body}               ← {id, text: 'null'}
 */
import { chmodSync, existsSync, rmSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { type Bus, BusError } from '../actors/runtime/bus.ts';
import { ApiError, type WireError } from './errors.ts';

const Line = z.discriminatedUnion('op', [
  z.object({ id: z.number(), op: z.literal('request'), subject: z.string(), body: z.unknown(), timeoutMs: z.number().positive().max(600_000) }),
  z.object({ id: z.number(), op: z.literal('publish'), subject: z.string(), body: z.unknown() }),
]);

export const adminSocketPath = (dataDir: string): string => `${dataDir}/admin.sock`;

const toWire = (err: unknown): WireError =>
  err instanceof ApiError ? err.toWire() : err instanceof BusError && err.reason === 'no_responders' ? { code: 'SERVICE_UNAVAILABLE', msg: 'No server answers for this actor', status: 503 } : { code: 'INTERNAL_SERVER_ERROR', msg: 'Internal server error', status: 500 };

/** Serves the admin socket for `bus`; returns the server (close it on shutdown). */
export async function serveAdminSocket(path: string, bus: Bus): Promise<Server> {
  // A socket file left by a process that died is in the way; a live server's is not ours to take.
  if (existsSync(path)) {
    const alive = await new Promise<boolean>((resolve) => {
      const c = createConnection(path, () => (c.end(), resolve(true)));
      c.on('error', () => resolve(false));
    });
    if (alive) throw new Error(`another server listens on ${path}`);
    rmSync(path, { force: true });
  }
  const server = createServer((socket) => serveConnection(socket, bus));
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, () => resolve()));
  chmodSync(path, 0o600);
  return server;
}

function serveConnection(socket: Socket, bus: Bus): void {
  socket.on('error', () => socket.destroy());
  const send = (o: object) => {
    if (!socket.destroyed) socket.write(`${JSON.stringify(o)}\n`);
  };
  createInterface({ input: socket }).on('line', (text) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return socket.destroy();
    }
    const line = Line.safeParse(parsed);
    if (!line.success) return socket.destroy();
    const m = line.data;
    if (m.op === 'publish') {
      bus.publish(m.subject, m.body);
      return send({ id: m.id, text: 'null' });
    }
    bus.requestText(m.subject, m.body, m.timeoutMs).then(
      (reply) => send({ id: m.id, text: reply }),
      (err: unknown) => send({ id: m.id, error: toWire(err) }),
    );
  });
}

/** The CLI's side: bus requests into an embedded server through its admin socket. */
export class AdminSocketClient {
  private next = 1;
  private waiting = new Map<number, { resolve: (text: string) => void; reject: (err: unknown) => void }>();

  private constructor(private readonly socket: Socket) {
    createInterface({ input: socket }).on('line', (text) => {
      const m = JSON.parse(text) as { id: number; text?: string; error?: WireError };
      const w = this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id);
      if (m.error) w.reject(ApiError.fromWire(m.error));
      else w.resolve(m.text ?? 'null');
    });
    socket.on('close', () => {
      for (const w of this.waiting.values()) w.reject(new Error('the server closed the admin socket'));
      this.waiting.clear();
    });
  }

  static connect(path: string): Promise<AdminSocketClient> {
    return new Promise((resolve, reject) => {
      const socket = createConnection(path, () => resolve(new AdminSocketClient(socket)));
      socket.once('error', reject);
    });
  }

  requestText(subject: string, body: unknown, timeoutMs: number): Promise<string> {
    return this.send({ op: 'request', subject, body, timeoutMs });
  }

  async publish(subject: string, body: unknown): Promise<void> {
    await this.send({ op: 'publish', subject, body });
  }

  private send(o: object): Promise<string> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.socket.write(`${JSON.stringify({ id, ...o })}\n`);
    });
  }

  close(): void {
    this.socket.end();
  }
}
