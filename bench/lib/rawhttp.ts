/**
 * A minimal keep-alive HTTP/1.1 client on one TCP connection, one request at
 * a time. The holder opens tens of thousands of these, so it avoids
 * node:http's per-request objects, and it can bind each connection to a
 * source address (`localAddress`): loopback has ~28k ephemeral ports per
 * source address, and 127.0.0.0/8 gives as many source addresses as needed.
 *
 * Precondition: responses carry Content-Length (uWebSockets.js' `end()` does).
 */
import net from 'node:net';

export interface RawResponse {
  status: number;
  body: string;
}

export interface Target {
  host: string;
  port: number;
  /** `Basic ...` credentials sent with every request. */
  authorization?: string;
}

const HEADER_END = Buffer.from('\r\n\r\n');

export class RawConn {
  private sock: net.Socket | null = null;
  private chunks: Buffer[] = [];
  private length = 0;
  /** Bytes of the current response (headers + body) once its headers are read; -1 before. */
  private expected = -1;
  private status = 0;
  private bodyStart = 0;
  private waiter: { resolve: (r: RawResponse) => void; reject: (e: Error) => void } | null = null;
  private closeAfter = false;
  dead = false;

  constructor(
    private readonly target: Target,
    private readonly localAddress?: string,
  ) {}

  connect(timeoutMs = 10_000): Promise<void> {
    this.sock?.destroy();
    this.chunks = [];
    this.length = 0;
    this.expected = -1;
    this.waiter = null;
    this.dead = false;
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host: this.target.host, port: this.target.port, localAddress: this.localAddress, noDelay: true });
      this.sock = sock;
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new Error(`connect timeout after ${timeoutMs} ms`));
      }, timeoutMs);
      sock.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      // Events of a socket this connection has since replaced are ignored.
      sock.once('error', (err) => {
        clearTimeout(timer);
        if (this.sock === sock) this.fail(err);
        reject(err);
      });
      sock.on('data', (d: Buffer) => this.sock === sock && this.onData(d));
      sock.on('close', () => this.sock === sock && this.fail(new Error('connection closed')));
    });
  }

  get busy(): boolean {
    return this.waiter !== null;
  }

  /** One request; `authorization` replaces the target's credentials for it (one connection, many users). */
  request(method: string, path: string, body?: string, contentType = 'application/x-www-form-urlencoded', authorization = this.target.authorization, headers: Record<string, string> = {}): Promise<RawResponse> {
    if (!this.sock || this.dead) return Promise.reject(new Error('not connected'));
    if (this.waiter) return Promise.reject(new Error('a request is already in flight on this connection'));
    const auth = authorization ? `Authorization: ${authorization}\r\n` : '';
    const more = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    const head = `${method} ${path} HTTP/1.1\r\nHost: ${this.target.host}:${this.target.port}\r\nUser-Agent: parley-bench\r\n${auth}${more}`;
    const text = body === undefined ? `${head}\r\n` : `${head}Content-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    return new Promise<RawResponse>((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.sock!.write(text);
    });
  }

  close(): void {
    this.dead = true;
    this.sock?.destroy();
  }

  private onData(d: Buffer): void {
    this.chunks.push(d);
    this.length += d.length;
    if (this.expected === -1) {
      const buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
      this.chunks = [buf];
      const end = buf.indexOf(HEADER_END);
      if (end === -1) return;
      const head = buf.toString('latin1', 0, end);
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      if (!m || !cl) return this.fail(new Error(`unparsable response head: ${head.slice(0, 200)}`));
      this.status = Number(m[1]);
      this.bodyStart = end + 4;
      this.expected = this.bodyStart + Number(cl[1]);
      this.closeAfter = /\r\nconnection:\s*close/i.test(head);
    }
    if (this.length < this.expected) return;
    const buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const body = buf.toString('utf8', this.bodyStart, this.expected);
    const rest = buf.subarray(this.expected);
    this.chunks = rest.length ? [rest] : [];
    this.length = rest.length;
    this.expected = -1;
    const w = this.waiter;
    this.waiter = null;
    if (this.closeAfter) this.close();
    w?.resolve({ status: this.status, body });
  }

  private fail(err: Error): void {
    this.dead = true;
    const w = this.waiter;
    this.waiter = null;
    w?.reject(err);
  }
}

export function basicAuth(email: string, apiKey: string): string {
  return `Basic ${Buffer.from(`${email}:${apiKey}`).toString('base64')}`;
}

/** Source addresses 127.0.0.2, 127.0.0.3, ...: connection `i` uses `sourceAddress(i, n)`. */
export function sourceAddress(i: number, spread: number): string {
  const k = 2 + (i % spread);
  return `127.0.${Math.floor(k / 256)}.${k % 256}`;
}
