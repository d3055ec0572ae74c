/**
 * The gateway: a uWebSockets.js HTTP server that speaks the API under
 * /api/v1, authenticates, validates each route's parameters and forwards the
 * call to the owning actor. It holds no state: any gateway serves any request.
 */
import uWS from 'uWebSockets.js';
import type { Logger } from 'pino';
import { ApiError, asApiError } from '../lib/errors.ts';
import type { ActorClient } from './actors.ts';
import { AuthCache } from './auth.ts';
import { readRequest, Reply, type RequestInfo } from './http.ts';
import { collectParams, validateParams } from './params.ts';
import { type CallContext, RawJson, type Route } from './route.ts';
import { deleteQueue, getEvents, register } from './routes/events.ts';
import { getMessages, sendMessage } from './routes/messages.ts';
import { listSubscriptions, subscribe } from './routes/subscriptions.ts';
import { createUser, listUsers, serverSettings } from './routes/users.ts';

export const ROUTES: Route[] = [sendMessage, getMessages, subscribe, listSubscriptions, register, getEvents, deleteQueue, listUsers, createUser, serverSettings];

export interface GatewayOptions {
  host: string;
  port: number;
  realmId: number;
  maxBodyBytes: number;
  longPollTimeoutMs: number;
  queueIdleSecs: number;
  /** Readiness of this process's dependencies, for /readyz. */
  ready: () => boolean;
  /** How long a successful authentication is reused (0: ask the realm actor every time). */
  authCacheMs?: number;
}

const PREFIX = '/api/v1';

/** The success envelope around an actor's reply object, given as JSON text. */
function successEnvelope(objectJson: string, extra: Record<string, unknown>): string {
  const inner = objectJson.trim().slice(1, -1).trim();
  const tail = Object.keys(extra).length ? JSON.stringify(extra).slice(1, -1) : '';
  return `{"result":"success","msg":""${inner ? `,${inner}` : ''}${tail ? `,${tail}` : ''}}`;
}

function clientName(userAgent: string): string {
  const name = userAgent.split(/[/ ]/, 1)[0]?.trim();
  return name ? name.slice(0, 30) : 'Unspecified';
}

export class Gateway {
  private table = new Map<string, Map<string, Route>>();
  private listenSocket: uWS.us_listen_socket | null = null;
  private app: uWS.TemplatedApp;
  private draining = false;
  /** Long polls waiting for their queue actor, with their queue IDs. */
  private polls = new Map<Reply, string>();
  private auth: AuthCache;

  constructor(
    private readonly actors: ActorClient,
    private readonly opts: GatewayOptions,
    private readonly log: Logger,
    routes: Route[] = ROUTES,
  ) {
    if (typeof uWS.getParts !== 'function') throw new Error('uWebSockets.js native binary did not load');
    this.auth = new AuthCache(opts.authCacheMs ?? 0);
    for (const r of routes) {
      const byMethod = this.table.get(r.path) ?? new Map<string, Route>();
      byMethod.set(r.method, r);
      this.table.set(r.path, byMethod);
    }
    this.app = uWS.App().any('/*', (res, req) => {
      const info = readRequest(req);
      const reply = new Reply(res);
      void this.serve(info, reply);
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
   * Stops accepting connections (/readyz answers 503 from now on) and answers
   * every waiting long poll at once with no events, so its client polls again
   * (through another gateway) instead of losing the connection at exit.
   */
  close(): void {
    this.draining = true;
    if (this.listenSocket) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    for (const [reply, queueId] of this.polls) reply.json(200, { result: 'success', msg: '', events: [], queue_id: queueId });
    this.polls.clear();
  }

  private async serve(info: RequestInfo, reply: Reply): Promise<void> {
    try {
      if (info.contentLength !== null && info.contentLength > this.opts.maxBodyBytes) {
        throw new ApiError('REQUEST_TOO_LARGE', `Request body too large (limit: ${this.opts.maxBodyBytes} bytes)`, 413);
      }
      const body = await reply.body(this.opts.maxBodyBytes);
      if (info.url === '/healthz') return reply.json(200, { status: 'ok' });
      if (info.url === '/readyz') {
        const ready = !this.draining && this.opts.ready();
        return reply.json(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready' });
      }
      const byMethod = info.url.startsWith(`${PREFIX}/`) ? this.table.get(info.url.slice(PREFIX.length).replace(/\/+$/, '')) : undefined;
      if (!byMethod) throw new ApiError('BAD_REQUEST', 'Not Found', 404);
      const route = byMethod.get(info.method);
      if (!route) throw new ApiError('BAD_REQUEST', `Method Not Allowed (allowed: ${[...byMethod.keys()].join(', ')})`, 405);
      const caller = route.auth === 'required' ? await this.auth.authenticate(this.actors, this.opts.realmId, info.authorization) : null;
      const raw = await collectParams(info.query, info.contentType, body);
      const { params, ignored } = validateParams(route.params, raw);
      const ctx: CallContext = {
        caller,
        realmId: this.opts.realmId,
        actors: this.actors,
        client: clientName(info.userAgent),
        limits: { longPollTimeoutMs: this.opts.longPollTimeoutMs, queueIdleSecs: this.opts.queueIdleSecs },
      };
      const queueId = route === getEvents ? (params as { queue_id?: string }).queue_id : undefined;
      if (queueId !== undefined) this.polls.set(reply, queueId);
      let data: Awaited<ReturnType<Route['handle']>>;
      try {
        data = await route.handle(ctx, params);
      } finally {
        if (queueId !== undefined) this.polls.delete(reply);
      }
      const extra = ignored.length ? { ignored_parameters_unsupported: ignored } : {};
      if (data instanceof RawJson) reply.raw(200, successEnvelope(data.text, extra));
      else reply.json(200, { result: 'success', msg: '', ...data, ...extra });
    } catch (err) {
      const e = asApiError(err);
      if (e.status >= 500 && !(err instanceof ApiError)) this.log.error({ err, url: info.url }, 'request failed');
      if (e.status === 413) reply.jsonAndClose(e.status, e.envelope());
      else reply.json(e.status, e.envelope(), e.headers);
    }
  }
}
