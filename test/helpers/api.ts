/**
 * A small HTTP client for the tests: real requests to a running gateway,
 * form-encoded like the Python client (or multipart / query string when a
 * test asks), with Basic credentials.
 */

/**
 * Whether a synchronous child process (the Python client, `runPython`) blocked this process's event loop
 * since the last request. Meanwhile the server may have closed an idle keep-alive connection of fetch's
 * pool (uWebSockets closes them after 10 s), and the close is not seen until the loop turns: a request
 * sent at once on that connection fails with "other side closed".
 */
let loopWasBlocked = false;
export function noteBlockedLoop(): void {
  loopWasBlocked = true;
}
/** After a blocked loop: one turn through the poll phase, so fetch's pool learns of connections the server closed. */
export async function settled(): Promise<void> {
  if (!loopWasBlocked) return;
  loopWasBlocked = false;
  await new Promise((r) => setTimeout(r, 1));
  await new Promise((r) => setImmediate(r));
}
export interface Creds {
  email: string;
  apiKey: string;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: Record<string, any>;
}

export type Params = Record<string, string | number | boolean | object | null | undefined>;

/** Encodes a value the way clients do: strings bare, everything else as JSON. */
export function encodeValue(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

export interface CallOptions {
  creds?: Creds | null;
  /** `form` (default for POST/PATCH), `multipart`, or `query`. */
  encoding?: 'form' | 'multipart' | 'query';
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export class Api {
  constructor(
    readonly base: string,
    readonly creds: Creds | null = null,
  ) {}

  as(creds: Creds): Api {
    return new Api(this.base, creds);
  }

  at(base: string): Api {
    return new Api(base, this.creds);
  }

  async call(method: string, path: string, params: Params = {}, opts: CallOptions = {}): Promise<ApiResponse> {
    const creds = opts.creds === undefined ? this.creds : opts.creds;
    const headers: Record<string, string> = { ...opts.headers };
    if (creds) headers.authorization = `Basic ${Buffer.from(`${creds.email}:${creds.apiKey}`).toString('base64')}`;
    const entries = Object.entries(params).filter(([, v]) => v !== undefined).map(([k, v]) => [k, encodeValue(v)] as [string, string]);
    const encoding = opts.encoding ?? (method === 'GET' || method === 'DELETE' ? 'query' : 'form');
    let url = `${this.base}/api/v1${path}`;
    let body: string | FormData | undefined;
    if (encoding === 'query') {
      if (entries.length) url += `?${new URLSearchParams(entries)}`;
    } else if (encoding === 'form') {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(entries).toString();
    } else {
      const fd = new FormData();
      for (const [k, v] of entries) fd.append(k, v);
      body = fd;
    }
    await settled();
    const res = await fetch(url, { method, headers, body, signal: opts.signal });
    const text = await res.text();
    let parsed: Record<string, any>;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${path}: non-JSON reply ${res.status}: ${text.slice(0, 200)}`);
    }
    return { status: res.status, headers: res.headers, body: parsed };
  }

  get = (path: string, params?: Params, opts?: CallOptions) => this.call('GET', path, params, opts);
  post = (path: string, params?: Params, opts?: CallOptions) => this.call('POST', path, params, opts);
  delete = (path: string, params?: Params, opts?: CallOptions) => this.call('DELETE', path, params, opts);

  /** Calls and asserts success; returns the body. */
  async ok(method: string, path: string, params?: Params, opts?: CallOptions): Promise<Record<string, any>> {
    const r = await this.call(method, path, params, opts);
    if (r.status !== 200 || r.body.result !== 'success') throw new Error(`${method} ${path} -> ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }
}

/** A unique suffix so tests sharing one realm (cluster runs) never collide. */
export const uniq = (prefix: string): string => `${prefix}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
