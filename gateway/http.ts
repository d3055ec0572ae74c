/**
 * uWebSockets.js rules, kept in this one module: copy what is needed from the
 * request before the first `await` (uWS reuses it), set an aborted flag in
 * `onAborted` and check it before every write, read the whole body before
 * answering, write the status before headers, and `cork` the writes.
 */
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { ApiError } from '../lib/errors.ts';
import { isTusUrl, TUS_HEADERS } from './tus.ts';
import { type CounterChild, type HistogramChild, httpDuration, httpRequests, secondsSince } from '../lib/metrics.ts';

/** What a handler may keep of a request after it awaits. */
export interface RequestInfo {
  method: string;
  url: string;
  /** The Host header: which organization the request is for. */
  host: string;
  query: string;
  contentType: string;
  authorization: string;
  userAgent: string;
  /** The Accept-Encoding header ('' when none). */
  acceptEncoding: string;
  contentLength: number | null;
  /** Why the request's framing cannot be trusted (two differing Content-Length headers, or one beside Transfer-Encoding), or null. */
  badFraming: string | null;
  /** The client's address: the peer's, or with `trustForwardedFor` the last one a proxy appended to X-Forwarded-For. */
  ip: string;
  /** The tus protocol's headers (`gateway/tus.ts`), read only for requests under /api/v1/tus. */
  tus: Record<string, string> | null;
}

/**
 * The address the nearest proxy appended to X-Forwarded-For: the last entry
 * of the header's last line. nginx appends to the line the client sent;
 * HAProxy (`option forwardfor`) adds a line of its own after it; uWS's
 * `getHeader` gives the first line only, the one a client may have written.
 */
function forwardedFor(req: HttpRequest): string {
  let last = '';
  req.forEach((name, value) => {
    if (name === 'x-forwarded-for') last = value;
  });
  return last.slice(last.lastIndexOf(',') + 1).trim();
}

export function readRequest(req: HttpRequest, res: HttpResponse, trustForwardedFor = false): RequestInfo {
  const length = req.getHeader('content-length');
  const forwarded = trustForwardedFor ? forwardedFor(req) : '';
  const url = req.getUrl();
  return {
    tus: isTusUrl(url) ? Object.fromEntries(TUS_HEADERS.map((name) => [name, req.getHeader(name)])) : null,
    badFraming: length === '' && req.getHeader('transfer-encoding') === '' ? null : framingProblem(req, length),
    ip: forwarded || Buffer.from(res.getRemoteAddressAsText()).toString(),
    method: req.getCaseSensitiveMethod().toUpperCase(),
    url,
    host: req.getHeader('host'),
    query: req.getQuery() ?? '',
    contentType: req.getHeader('content-type'),
    authorization: req.getHeader('authorization'),
    userAgent: req.getHeader('user-agent'),
    acceptEncoding: req.getHeader('accept-encoding'),
    contentLength: length === '' ? null : Number(length),
  };
}

/**
 * uWS takes the first Content-Length header and ignores the others; a proxy
 * in front may take another one, and the two would then disagree on where the
 * next request starts (request smuggling). A request whose length is not
 * stated exactly once is refused (RFC 9112, 6.3).
 */
function framingProblem(req: HttpRequest, length: string): string | null {
  let lengths = 0;
  let differ = false;
  let chunked = false;
  req.forEach((name, value) => {
    if (name === 'content-length') {
      lengths++;
      if (value.trim() !== length.trim()) differ = true;
    } else if (name === 'transfer-encoding') chunked = true;
  });
  if (differ) return 'Conflicting Content-Length headers';
  if (lengths > 0 && chunked) return 'Both Content-Length and Transfer-Encoding';
  if (length !== '' && !/^\s*\d+\s*$/.test(length)) return 'Invalid Content-Length';
  return null;
}

/**
 * Where answers of one route template and method are counted
 * (`parley_http_requests_total`, `parley_http_request_duration_seconds`):
 * made once per route, so counting an answer builds no label string.
 */
export class RouteStats {
  private byStatus = new Map<number, CounterChild>();
  private readonly duration: HistogramChild;

  constructor(
    private readonly route: string,
    private readonly method: string,
  ) {
    this.duration = httpDuration.child(route, method);
  }

  record(status: number, seconds: number): void {
    let c = this.byStatus.get(status);
    if (!c) this.byStatus.set(status, (c = httpRequests.child(this.route, this.method, String(status))));
    c.inc();
    this.duration.observe(seconds);
  }
}

const routeStats = new Map<object | string, RouteStats>();

/** The stats of a route (an API route or a page, by its object; a fixed path by itself), made on first use. */
export function statsOf(key: object | string, route: string, method: string): RouteStats {
  let s = routeStats.get(key);
  if (!s) routeStats.set(key, (s = new RouteStats(route, method)));
  return s;
}

/** The stats of a route made earlier, if any: a lookup that builds no label. */
export const knownStats = (key: object | string): RouteStats | undefined => routeStats.get(key);

/** Requests no route took (404, 405, refused framing): one series, whatever their path. */
const UNMATCHED = statsOf('unmatched', 'unmatched', 'any');

/** A response that knows whether the client went away. */
export class Reply {
  aborted = false;
  done = false;
  /** Where this answer is counted; the gateway sets it once it knows the route. */
  stats: RouteStats = UNMATCHED;
  private readonly started = performance.now();
  /** The connection is not read until this answer is written (`holdNextRequest`). */
  private holding = false;
  /** The connection is closed once this answer is written (`closeAfterAnswer`). */
  private closing = false;
  /** Sees every JSON reply as it is written (check mode: `gateway/openapi/check.ts`). */
  onJson: ((status: number, text: string) => void) | null = null;

  /** Called when the client goes away (`bodyOrPart`). */
  private onAbort: (() => void) | null = null;

  constructor(private readonly res: HttpResponse) {
    res.onAborted(() => {
      this.aborted = true;
      this.onAbort?.();
      // Counted as nginx logs it: 499, the client closed the connection before the answer.
      if (!this.done) this.stats.record(499, secondsSince(this.started));
    });
  }

  /** Reads the whole body (into `chunks`, as it comes); rejects with 413 past `limit` bytes. */
  body(limit: number, chunks: Buffer[] = []): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      let size = 0;
      this.res.onData((chunk, isLast) => {
        if (size < 0) return;
        size += chunk.byteLength;
        if (size > limit) {
          size = -1;
          reject(new ApiError('REQUEST_TOO_LARGE', `Request body too large (limit: ${limit} bytes)`, 413));
          return;
        }
        // uWS frees the chunk after this callback: copy it.
        chunks.push(Buffer.from(chunk.slice(0)));
        if (isLast) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
      });
    });
  }

  /**
   * Reads the body as `body` does, but resolves with the bytes that came
   * when the client goes away before its end (`complete` false): tus keeps
   * what an interrupted PATCH delivered. Nothing can be answered then.
   */
  bodyOrPart(limit: number): Promise<{ data: Buffer; complete: boolean }> {
    const chunks: Buffer[] = [];
    return new Promise((resolve, reject) => {
      if (this.aborted) return resolve({ data: Buffer.alloc(0), complete: false });
      this.onAbort = () => resolve({ data: Buffer.concat(chunks), complete: false });
      this.body(limit, chunks).then((data) => resolve({ data, complete: true }), reject);
    });
  }

  /**
   * Stops reading the connection until this request is answered. uWS 20.30
   * closes a connection when it parses a request while an earlier one is
   * still being served (async pipelining), and the earlier one's change
   * would then be made but never answered. Held, the next request waits in
   * the kernel and is read, parsed and answered after this one. (A request
   * that came in the same read is parsed at once and still closes the
   * connection, before `serve` makes any change: see its `setImmediate`.)
   * While held, a client that goes away is noticed only when the answer is
   * written, so only requests that change something hold.
   */
  holdNextRequest(): void {
    if (this.aborted || this.done || this.holding) return;
    this.holding = true;
    this.res.pause();
  }

  /** Closes the connection after this request's answer, whatever the answer (a gateway that is draining). */
  closeAfterAnswer(): void {
    this.closing = true;
  }

  /** Reading the connection again, inside the cork that writes the answer (the response is gone after `end`). */
  private release(): void {
    if (!this.holding) return;
    this.holding = false;
    this.res.resume();
  }

  json(status: number, payload: unknown, headers: Record<string, string> = {}): void {
    this.raw(status, JSON.stringify(payload), headers);
  }

  /** Answers with a body that is already JSON text; with `close`, closes the connection after it. */
  raw(status: number, text: string, headers: Record<string, string> = {}, close = false): void {
    if (this.aborted || this.done) return;
    this.onJson?.(status, text);
    this.send(status, 'application/json', text, headers, close);
  }

  /** Answers with bytes of the given type (a file). */
  binary(status: number, contentType: string, data: Buffer, headers: Record<string, string> = {}): void {
    this.send(status, contentType, data, headers);
  }

  /** Answers with a body of any type (HTML pages, redirects, files); with `close`, closes the connection after it. */
  send(status: number, contentType: string, body: string | Buffer, headers: Record<string, string> = {}, close = false): void {
    if (this.aborted || this.done) return;
    this.done = true;
    this.stats.record(status, secondsSince(this.started));
    this.res.cork(() => {
      this.release();
      this.res.writeStatus(STATUS[status] ?? `${status}`);
      this.res.writeHeader('Content-Type', contentType);
      for (const [k, v] of Object.entries(headers)) this.res.writeHeader(k, v);
      this.res.end(body, close || this.closing);
    });
  }

  /**
   * Answers and closes the connection at once: where the request's framing
   * cannot be trusted, or the server is shutting down.
   */
  jsonAndClose(status: number, payload: unknown): void {
    this.raw(status, JSON.stringify(payload), {}, true);
  }

  /**
   * Answers a request whose body will not be read (413), telling the client
   * to close; the connection stays open while the client is still sending,
   * so it reads the answer instead of failing its write (EPIPE).
   */
  jsonAskingToClose(status: number, payload: unknown): void {
    this.json(status, payload, { Connection: 'close' });
  }
}

const STATUS: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  204: '204 No Content',
  302: '302 Found',
  303: '303 See Other',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  410: '410 Gone',
  411: '411 Length Required',
  412: '412 Precondition Failed',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};
