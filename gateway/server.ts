/**
 * The gateway: a uWebSockets.js HTTP server that speaks the API under
 * /api/v1, authenticates, validates each route's parameters and forwards the
 * call to the owning actor. It holds no state: any gateway serves any request.
 */
import uWS from 'uWebSockets.js';
import type { Logger } from 'pino';
import { JsonPieces } from '../actors/runtime/bus.ts';
import { type ActorClient, RawJson } from '../actors/runtime/client.ts';
import { ApiError, asApiError, invalidSubdomain, realmDeactivated, unavailable } from '../lib/errors.ts';
import type { OrganizationRecord } from '../storage/tables.ts';
import { featureLevel } from '../lib/features.ts';
import { AuthCache } from './auth.ts';
import { knownStats, readRequest, Reply, type RequestInfo, statsOf } from './http.ts';
import { heldPolls, presenceAnswerFetches, requestsInFlight } from '../lib/metrics.ts';
import { checkResponse, RESPONSE_CHECK } from './openapi/check.ts';
import { PathTable } from './path.ts';
import type { LimitHeaders, RateLimits } from './rate_limits.ts';
import { collectParams, type RawParams, type UploadedFile, validateParams } from './params.ts';
import { BinaryReply, type CallContext, IGNORED, type Route } from './route.ts';
import { ROUTES } from './routes/index.ts';
import { getEvents } from './routes/events.ts';
import { PAGES } from './pages/index.ts';
import { document, escapeHtml, matchPage, type Page } from './pages/page.ts';
import type { Organizations } from './organizations.ts';
import { acceptsGzip, PerSecond, piecesBody, SharedReplies } from './shared-replies.ts';
import { isTusUrl, serveTus } from './tus.ts';

export { ROUTES };

/** Routes by method, matched segment by segment; `{name}` segments capture path parameters. */
class Router {
  private table = new PathTable<Route>();

  add(route: Route): void {
    this.table.add(route.path, route, { tail: route.pathTail === true });
  }

  /** The routes of a path by method (the first added wins), with the path parameters, or null when no route has this path. */
  match(path: string): Map<string, { route: Route; params: RawParams }> | null {
    const found = new Map<string, { route: Route; params: RawParams }>();
    for (const { value: route, params } of this.table.match(path)) if (!found.has(route.method)) found.set(route.method, { route, params });
    return found.size ? found : null;
  }
}

export interface GatewayOptions {
  host: string;
  port: number;
  /** The directory of organizations by host (none on an actor node's health gateway: it serves no organization). */
  organizations?: Organizations | null;
  maxBodyBytes: number;
  longPollTimeoutMs: number;
  queueIdleSecs: number;
  /** Readiness of this process's dependencies, for /readyz. */
  ready: () => boolean;
  /** How long a successful authentication is reused (0: ask the realm actor every time). */
  authCacheMs?: number;
  /** Pages outside /api/v1 (HTML, redirects); the API gateway serves `PAGES`. */
  pages?: readonly Page[];
  /** Rate limits of API requests and pages (`gateway/rate_limits.ts`); none when absent. */
  rateLimits?: RateLimits | null;
  /** Take the client's address from X-Forwarded-For (behind a trusted proxy). */
  trustForwardedFor?: boolean;
}

const PREFIX = '/api/v1';
/** After a drain, how long `close` waits with no request arriving before it lets the process exit. */
const CLOSE_SETTLE_MS = 300;

/** The success envelope around an actor's reply object, given as JSON text. */
function successEnvelope(objectJson: string, extra: Record<string, unknown>): string {
  const inner = objectJson.trim().slice(1, -1).trim();
  const tail = Object.keys(extra).length ? JSON.stringify(extra).slice(1, -1) : '';
  return `{"result":"success","msg":""${inner ? `,${inner}` : ''}${tail ? `,${tail}` : ''}}`;
}

/** `successEnvelope` for an answer in pieces: only its first and last texts change. */
function envelopePieces(data: JsonPieces, extra: Record<string, unknown>): JsonPieces {
  const pieces = [...data.pieces];
  const first = pieces[0];
  const last = pieces[pieces.length - 1];
  if (typeof first !== 'string' || typeof last !== 'string' || !first.startsWith('{') || !last.endsWith('}')) throw new Error('an answer in pieces must begin and end with text');
  if (pieces.length === 1) return new JsonPieces([successEnvelope(first, extra)]);
  const tail = Object.keys(extra).length ? `,${JSON.stringify(extra).slice(1, -1)}` : '';
  pieces[0] = `{"result":"success","msg":"",${first.slice(1)}`;
  pieces[pieces.length - 1] = `${last.slice(0, -1)}${tail}}`;
  return new JsonPieces(pieces);
}

function clientName(userAgent: string): string {
  const name = userAgent.split(/[/ ]/, 1)[0]?.trim();
  return name ? name.slice(0, 30) : 'Unspecified';
}

/** The routes a gateway serves, as `METHOD /path` (what `lib/features.ts` checks entries against). */
const servedRoutes = (routes: readonly Route[]): Set<string> => new Set(routes.map((r) => `${r.method} ${r.path}`));

/** The feature level a gateway serving `routes` advertises: actor nodes record it in event queues (`lib/version.ts`). */
export const servedFeatureLevel = (routes: readonly Route[] = ROUTES): number => featureLevel(servedRoutes(routes));

export class Gateway {
  private router = new Router();
  /** What this gateway serves, as `METHOD /path`, and the feature level that follows (`lib/features.ts`). */
  readonly served: ReadonlySet<string>;
  readonly featureLevel: number;
  private listenSocket: uWS.us_listen_socket | null = null;
  private app: uWS.TemplatedApp;
  private draining = false;
  /** Long polls waiting for their queue actor, with their queue IDs. */
  private polls = new Map<Reply, string>();
  /** Requests being served, so a shutdown answers each of them before it exits. */
  private inflight = new Set<Reply>();
  private shared = new SharedReplies((text) => successEnvelope(text, {}));
  private presenceAnswers = new PerSecond<RawJson>(() => presenceAnswerFetches.inc());
  /** When the last request arrived (ms), so a shutdown waits out connections accepted just before the listener closed. */
  private lastRequestAt = 0;
  private auth: AuthCache;
  /** Removes this gateway's gauges (`lib/metrics.ts`) at close. */
  private unreport: Array<() => void>;

  constructor(
    private readonly actors: ActorClient,
    private readonly opts: GatewayOptions,
    private readonly log: Logger,
    routes: Route[] = ROUTES,
  ) {
    if (typeof uWS.getParts !== 'function') throw new Error('uWebSockets.js native binary did not load');
    this.auth = new AuthCache(opts.authCacheMs ?? 0, opts.rateLimits ?? null);
    for (const r of routes) this.router.add(r);
    this.served = servedRoutes(routes);
    this.featureLevel = featureLevel(this.served);
    this.unreport = [heldPolls.add((set) => set(this.polls.size)), requestsInFlight.add((set) => set(this.inflight.size))];
    this.app = uWS.App().any('/*', (res, req) => {
      const info = readRequest(req, res, opts.trustForwardedFor);
      const reply = new Reply(res);
      if (RESPONSE_CHECK && info.url.startsWith(`${PREFIX}/`)) reply.onJson = (status, text) => checkResponse(this.routeOf(info), info.method, info.url, status, text, this.log);
      this.inflight.add(reply);
      this.lastRequestAt = Date.now();
      void this.serve(info, reply).finally(() => this.inflight.delete(reply));
    });
  }

  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(this.opts.host, this.opts.port, (socket) => {
        if (!socket) return reject(new Error(`cannot listen on ${this.opts.host}:${this.opts.port}`));
        this.listenSocket = socket;
        resolve(uWS.us_socket_local_port(socket));
      });
    });
  }

  /**
   * Stops accepting connections (/readyz answers 503 from now on), answers
   * every waiting long poll at once with no events, so its client polls again
   * (through another gateway) instead of losing the connection at exit, and
   * lets the requests in flight finish: each gets its answer, or after
   * `graceMs` a 503, never a reset connection. A request that arrives on an
   * open connection meanwhile is served (a long poll answered at once, with
   * no events) and the connection closed after its answer, so a load
   * balancer in front loses no request: its next connection to this gateway
   * is refused, which it retries on another one. After a `drain` (behind a
   * load balancer), it also waits until no request has arrived for
   * CLOSE_SETTLE_MS: a connection accepted just before the listener closed
   * brings its request only then, and would be reset at exit.
   */
  async close(graceMs = 10_000): Promise<void> {
    const settleMs = this.draining ? CLOSE_SETTLE_MS : 0;
    this.draining = true;
    for (const stop of this.unreport) stop();
    // Right after an event-loop poll, which accepted every connection the kernel had completed:
    // one still in the kernel's queue when the listener closes is reset after its request was sent.
    await new Promise((r) => setImmediate(r));
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    this.answerHeldPolls();
    const unanswered = () => [...this.inflight].filter((r) => !r.done && !r.aborted);
    const deadline = Date.now() + graceMs;
    // A connection accepted just before the listener closed may bring its request only now, and a
    // proxy does not retry a POST whose connection is reset under it at exit: wait until nothing is
    // in flight and no request has arrived for `settleMs` (at once when the gateway was idle).
    const busy = () => unanswered().length > 0 || Date.now() - this.lastRequestAt < settleMs;
    while (busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const reply of unanswered()) reply.jsonAndClose(503, unavailable('The server is shutting down; try again').envelope());
  }

  /**
   * Before `close`, behind a load balancer: for `delayMs` this gateway still
   * serves every request, also on new connections, but /readyz answers 503
   * (an active health check takes it out of rotation), every answer closes
   * its connection and long polls are answered at once. After the delay the
   * load balancer holds no idle connection to it (the shipped configs drop
   * an idle one after 4 s), so none is closed under a request at exit.
   */
  async drain(delayMs: number): Promise<void> {
    this.draining = true;
    this.answerHeldPolls();
    await new Promise((r) => setTimeout(r, delayMs));
  }

  /** Answers every held long poll with no events, closing its connection: the client polls again, elsewhere. */
  private answerHeldPolls(): void {
    for (const [reply, queueId] of this.polls) {
      reply.closeAfterAnswer();
      reply.json(200, { result: 'success', msg: '', events: [], queue_id: queueId });
    }
    this.polls.clear();
  }

  /** What the tus endpoint (`gateway/tus.ts`) uses of this gateway. */
  private get tusDeps() {
    return {
      actors: this.actors,
      authenticate: (realmId: number, authorization: string, ip: string) => this.auth.authenticate(this.actors, realmId, authorization, ip),
      organization: (host: string) => this.organizationOf(host),
      rateLimits: this.opts.rateLimits ?? null,
      log: this.log,
    };
  }

  /** The organization a request's host names, or null (a gateway without a directory serves none). */
  private organizationOf(host: string): Promise<OrganizationRecord | null> {
    return this.opts.organizations ? this.opts.organizations.resolve(host) : Promise.resolve(null);
  }

  /** The route a request under /api/v1 went to, or null when none matched. */
  private routeOf(info: RequestInfo): Route | null {
    return this.router.match(info.url.slice(PREFIX.length))?.get(info.method)?.route ?? null;
  }

  /** Writes an answer in pieces as bytes, gzipped when the client takes it (`piecesBody`). */
  private writePieces(reply: Reply, data: JsonPieces, gzip: boolean, headers: Record<string, string>): void {
    if (reply.onJson) reply.onJson(200, data.text());
    reply.binary(200, 'application/json', piecesBody(data, gzip), { ...headers, Vary: 'Accept-Encoding', ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) });
  }

  private async serve(info: RequestInfo, reply: Reply): Promise<void> {
    const limits = this.opts.rateLimits ?? null;
    if (isTusUrl(info.url) && this.served.size) {
      if (info.badFraming) return reply.send(400, 'text/plain', info.badFraming, {}, true);
      if (this.draining) reply.closeAfterAnswer();
      return serveTus(this.tusDeps, info, reply);
    }
    let limitHeaders: LimitHeaders = {};
    let checksCredentials = false;
    try {
      const byMethod = info.url.startsWith(`${PREFIX}/`) ? this.router.match(info.url.slice(PREFIX.length)) : null;
      // A route may allow a larger body (uploads); every other request gets the gateway's limit.
      const target = byMethod?.get(info.method)?.route;
      if (target) reply.stats = knownStats(target) ?? statsOf(target, PREFIX + target.path, target.method);
      else if (info.url === '/healthz' || info.url === '/readyz') reply.stats = statsOf(info.url, info.url, 'GET');
      const limit = target?.maxBodyBytes ?? this.opts.maxBodyBytes;
      if (info.badFraming) return reply.jsonAndClose(400, new ApiError('BAD_REQUEST', info.badFraming, 400).envelope());
      // Draining: still served, and the connection closed after the answer, so that a proxy in
      // front keeps no connection to this gateway and sends its next request elsewhere.
      if (this.draining) reply.closeAfterAnswer();
      if (info.contentLength !== null && info.contentLength > limit) {
        throw new ApiError('REQUEST_TOO_LARGE', `Request body too large (limit: ${limit} bytes)`, 413);
      }
      const body = await reply.body(limit);
      if (info.url === '/healthz') return reply.json(200, { status: 'ok' });
      if (info.url === '/readyz') {
        const ready = !this.draining && this.opts.ready();
        return reply.json(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' });
      }
      if (!info.url.startsWith(`${PREFIX}/`)) {
        const page = matchPage(this.opts.pages ?? (this.served.size ? PAGES : []), info.method, info.url);
        if (page) {
          reply.stats = statsOf(page.page, page.page.path, page.page.method);
          if (limits) limitHeaders = await limits.ip(info.ip);
          const org = await this.organizationOf(info.host);
          if (page.page.organization !== 'none' && (!org || org.deactivated)) {
            const why = org ? 'This organization has been deactivated.' : `There is no organization at ${escapeHtml(info.host)}.`;
            return reply.send(404, 'text/html; charset=utf-8', document('No organization', `<h1>No organization here</h1><p>${why}</p>`), limitHeaders);
          }
          const params = await collectParams(info.query, info.contentType, body);
          for (const [k, v] of page.params) params.set(k, v);
          const hosts = this.opts.organizations!.hosts;
          const realmId = org?.realmId ?? 0;
          const authenticate = (apiKey: string | null) => (apiKey === null ? this.auth.authenticate(this.actors, realmId, info.authorization, info.ip) : this.auth.authenticateApiKey(this.actors, realmId, apiKey, info.ip));
          if (limits && page.page.checksCredentials) await limits.beforeCredentialCheck(info.ip);
          const r = await page.page.handle({ actors: this.actors, realmId, realmUrl: hosts.realmUrl(org?.subdomain ?? ''), hosts, authenticate, userAgent: info.userAgent, ip: info.ip }, params);
          if (limits && page.page.checksCredentials && r.status === 401) await limits.credentialFailed(info.ip);
          return reply.send(r.status, r.contentType, r.body, { ...limitHeaders, ...r.headers });
        }
      }
      if (!byMethod) throw new ApiError('BAD_REQUEST', 'Not Found', 404);
      const matched = byMethod.get(info.method);
      if (!matched) throw new ApiError('BAD_REQUEST', `Method Not Allowed (allowed: ${[...byMethod.keys()].join(', ')})`, 405);
      const route = matched.route;
      // The host's organization, from this gateway's copy of the directory (no actor call).
      const org = await this.organizationOf(info.host);
      if (route.organization !== 'optional') {
        if (!org) throw invalidSubdomain();
        if (org.deactivated) throw realmDeactivated();
      }
      const realmId = org?.realmId ?? 0;
      // Rate limits before any actor call: a user's budget once authenticated, the address's otherwise.
      const user = route.auth === 'none' ? null : await this.auth.authenticate(this.actors, realmId, info.authorization, info.ip);
      if (limits) limitHeaders = user ? await limits.user(user) : await limits.ip(info.ip);
      checksCredentials = route.checksCredentials === true;
      if (limits && checksCredentials) await limits.beforeCredentialCheck(info.ip);
      const files: UploadedFile[] = [];
      const raw = await collectParams(info.query, info.contentType, body, route.files ? files : null);
      // Path parameters win over any parameter of the same name in the query or body.
      for (const [k, v] of matched.params) raw.set(k, v);
      const { params, ignored } = validateParams(route.params, raw);
      const ctx: CallContext = {
        user,
        realmId,
        organization: org,
        realmUrl: this.opts.organizations!.hosts.realmUrl(org?.subdomain ?? ''),
        actors: this.actors,
        client: clientName(info.userAgent),
        userAgent: info.userAgent,
        ip: info.ip,
        limits: { longPollTimeoutMs: this.opts.longPollTimeoutMs, queueIdleSecs: this.opts.queueIdleSecs },
        featureLevel: this.featureLevel,
        files,
        acceptsGzip: acceptsGzip(info.acceptEncoding),
        presenceAnswers: this.presenceAnswers,
      };
      if (info.method !== 'GET') {
        // uWS 20.30 cannot answer a request pipelined behind one still being
        // served: it drops the connection. A request read later waits in the
        // kernel until this one is answered (`holdNextRequest`); one in the
        // same read is parsed at once: let uWS finish parsing what it read
        // before a change is made, so a dropped request changes nothing and
        // its retry is safe.
        reply.holdNextRequest();
        await new Promise((r) => setImmediate(r));
        if (reply.aborted) return;
      }
      const queueId = route === getEvents ? (params as { queue_id?: string }).queue_id : undefined;
      // As `close` answers the polls it held: the client polls again, through another gateway.
      if (queueId !== undefined && this.draining) return reply.json(200, { result: 'success', msg: '', events: [], queue_id: queueId });
      if (queueId !== undefined) this.polls.set(reply, queueId);
      let data: Awaited<ReturnType<Route['handle']>>;
      try {
        data = await route.handle(ctx, params);
      } finally {
        if (queueId !== undefined) this.polls.delete(reply);
      }
      if (data instanceof BinaryReply) return reply.binary(200, data.contentType, data.data, { ...limitHeaders, ...data.headers });
      const more = [...ignored, ...((data as { [IGNORED]?: string[] })[IGNORED] ?? [])];
      const extra = more.length ? { ignored_parameters_unsupported: more } : {};
      if (data instanceof RawJson && route.sharedReply && !more.length) {
        const shared = this.shared.get(data.text);
        reply.onJson?.(200, shared.body.toString());
        const gzip = acceptsGzip(info.acceptEncoding);
        reply.binary(200, 'application/json', gzip ? shared.gzip() : shared.body, { ...limitHeaders, Vary: 'Accept-Encoding', ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) });
      } else if (data instanceof JsonPieces) this.writePieces(reply, envelopePieces(data, extra), ctx.acceptsGzip, limitHeaders);
      else if (data instanceof RawJson) reply.raw(200, successEnvelope(data.text, extra), limitHeaders);
      else reply.json(200, { result: 'success', msg: '', ...data, ...extra }, limitHeaders);
    } catch (err) {
      const e = asApiError(err);
      if (limits && checksCredentials && e.status === 401) await limits.credentialFailed(info.ip);
      if (e.status >= 500 && !(err instanceof ApiError)) this.log.error({ err, url: info.url }, 'request failed');
      if (e.status === 413) reply.jsonAskingToClose(e.status, e.envelope());
      else reply.json(e.status, e.envelope(), { ...limitHeaders, ...e.headers });
    }
  }
}
