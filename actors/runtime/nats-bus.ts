/**
 * NATS Bus for the cluster mode. Bodies travel as JSON and replies as a
 * WireReply (bus.ts), so an ApiError thrown by an actor is rebuilt as the same
 * ApiError in the caller. Servers and subscribers join the queue group
 * 'parley', so exactly one of them gets each request or event even while a
 * shard is handed from one node to another.
 *
 * Request subjects and event subjects must not overlap: NATS gives a message
 * to one member of a queue group among all matching subscriptions, so an
 * event that also matched a served `>` subject could go to the server (which
 * runs it without replying) instead of the subscriber. subjects.ts keeps
 * them apart (`parley.shard.*` vs `parley.events.*`).
 *
 * A request or reply larger than one NATS message (the server's
 * max_payload) crosses in chunks its receiver pulls (nats-chunks.ts), within
 * the request's timeout: a lost chunk ends as a timeout, a sender that died
 * meanwhile as BusError 'closed', never a hang. Events must fit in one
 * message.
 */
import {
  ClosedConnectionError,
  connect,
  DrainingConnectionError,
  Empty,
  type Msg,
  type NatsConnection,
  NoRespondersError,
  RequestError,
  type RequestOptions,
  type Subscription as NatsSubscription,
  TimeoutError,
} from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { unavailable } from '../../lib/errors.ts';
import { log as rootLog } from '../../lib/log.ts';
import { type SubscribeOptions, type Bus, BusError, decodePieces, encodePieces, encodeReply, INTERNAL_ERROR_REPLY, isPiecesReply, JsonPieces, replyText, sharedEvent, type EventHandler, type RequestHandler, type Subscription, type WireReply } from './bus.ts';
import { ChunkFetchError, chunkBytes, chunkedHeader, ChunkStore, fetchChunks } from './nats-chunks.ts';

export interface NatsBusOptions {
  /** Requests this bus may have waiting for a reply at once; more get BusError('busy'). */
  maxInFlight?: number;
  /** Queue group every server and subscriber joins. */
  queue?: string;
  /** How long close() waits for handlers still running before it closes the connection. */
  closeGraceMs?: number;
  /**
   * The cluster's name on the wire: subjects (`parley.shard.…`) go out as
   * `<namespace>.shard.…`, so clusters sharing one NATS never answer each
   * other's requests. `parley` (the default) leaves them as they are.
   */
  namespace?: string;
  /**
   * How long a reply too large for one message is held for its caller to
   * fetch, and how long a server waits for the chunks of a large request.
   * The caller's own timeout bounds what it waits for.
   */
  chunkTtlMs?: number;
  log?: Logger;
}

export interface NatsConnectOptions extends NatsBusOptions {
  /** Delay between reconnect attempts (the client adds jitter). */
  reconnectTimeWaitMs?: number;
  /** Keep trying when the server is not up yet instead of failing at once. */
  waitOnFirstConnect?: boolean;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const encode = (v: unknown): Uint8Array => encoder.encode(JSON.stringify(v ?? null));
const decode = (data: Uint8Array): unknown => (data.length === 0 ? null : JSON.parse(decoder.decode(data)));

export class NatsBus implements Bus {
  readonly sharesEvents = false;
  readonly sharesRequests = false;
  private inFlight = 0;
  private closing = false;
  private readonly maxInFlight: number;
  private readonly queue: string;
  private outbox: Array<() => void> = [];
  private readonly closeGraceMs: number;
  private readonly log: Logger;
  private readonly subs = new Set<NatsSubscription>();
  /** Handlers started by serve() that have not replied yet. */
  private readonly running = new Set<Promise<void>>();
  /** What replaces the leading `parley.` of a subject on the wire (null: nothing). */
  private readonly ns: string | null;
  /** Gives up each request waiting for its reply (see `connectionLost`). */
  private readonly waiting = new Set<() => void>();
  /** Between a disconnect and the reconnect: requests fail at once (see `connectionLost`). */
  private offline = false;
  /** Told after a reconnect that events may have been lost meanwhile (`onEventsLost`). */
  private readonly lostListeners: Array<() => void> = [];
  /** Requests and replies too large for one message, held for their receivers. */
  private readonly chunks: ChunkStore;
  private readonly chunkTtlMs: number;

  constructor(
    readonly nc: NatsConnection,
    opts: NatsBusOptions = {},
  ) {
    this.maxInFlight = opts.maxInFlight ?? 20_000;
    this.queue = opts.queue ?? 'parley';
    this.closeGraceMs = opts.closeGraceMs ?? 10_000;
    this.log = opts.log ?? rootLog.child({ component: 'nats-bus' });
    this.ns = opts.namespace && opts.namespace !== 'parley' ? `${opts.namespace}.` : null;
    this.chunkTtlMs = opts.chunkTtlMs ?? 30_000;
    this.chunks = new ChunkStore(nc, this.log);
  }

  /** The subject on the wire for a subject of subjects.ts. */
  private wire(subject: string): string {
    return this.ns && subject.startsWith('parley.') ? this.ns + subject.slice(7) : subject;
  }

  /** The subject of subjects.ts a subject on the wire stands for. */
  private local(subject: string): string {
    return this.ns && subject.startsWith(this.ns) ? `parley.${subject.slice(this.ns.length)}` : subject;
  }

  /** Connects to `url` (comma-separated for several servers), reconnecting forever. */
  static async connect(url: string, name: string, opts: NatsConnectOptions = {}): Promise<NatsBus> {
    const log = opts.log ?? rootLog.child({ component: 'nats-bus', name });
    const nc = await connect({
      servers: url.split(',').map((s) => s.trim()).filter(Boolean),
      name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: opts.reconnectTimeWaitMs ?? 250,
      reconnectJitter: 100,
      waitOnFirstConnect: opts.waitOnFirstConnect ?? false,
      // An Error per request only to improve stack traces costs ~10% of throughput.
      noAsyncTraces: true,
    });
    log.info({ server: nc.getServer() }, 'nats connected');
    const bus = new NatsBus(nc, { ...opts, log });
    void watchStatus(nc, log, {
      disconnect: () => bus.connectionLost(),
      reconnect: () => bus.reconnected(),
    });
    return bus;
  }

  onEventsLost(fn: () => void): void {
    this.lostListeners.push(fn);
  }

  /** Back on NATS, subscriptions renewed: requests go out again, and whoever holds state fed by events hears that some may be missing. */
  private reconnected(): void {
    this.offline = false;
    for (const fn of this.lostListeners) fn();
  }

  /**
   * The connection dropped: every request waiting for a reply fails now,
   * and so does every request until the client has reconnected (BusError
   * 'closed': a 503 whose outcome is unknown), instead of at its timeout.
   * Replies sent while the server was away, and requests the client
   * buffered meanwhile, were lost after a restart of NATS (the server knows
   * no subscription until each process has subscribed again): sends waited
   * out their timeout and long polls theirs (15 s and more) after NATS was
   * back (test/cluster/chaos.test.ts).
   */
  connectionLost(): void {
    this.offline = true;
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const abandon of waiting) abandon();
  }

  async request(subject: string, body: unknown, timeoutMs: number): Promise<unknown> {
    return JSON.parse(await this.requestText(subject, body, timeoutMs));
  }

  async requestText(subject: string, body: unknown, timeoutMs: number): Promise<string> {
    const reply = await this.requestReply(subject, body, timeoutMs);
    return typeof reply === 'string' ? reply : reply.text();
  }

  async requestReply(subject: string, body: unknown, timeoutMs: number): Promise<string | JsonPieces> {
    if (this.closing || this.offline || this.nc.isClosed()) throw new BusError('closed', subject);
    if (this.inFlight >= this.maxInFlight) throw new BusError('busy', subject);
    const data = encode(body);
    const deadline = Date.now() + timeoutMs;
    // The slot is held until the whole reply is in, chunks included.
    this.inFlight++;
    let reply: Uint8Array;
    let abandon!: () => void;
    const abandoned = new Promise<never>((_, reject) => (abandon = () => reject(new BusError('closed', subject))));
    this.waiting.add(abandon);
    let held: number | null = null;
    try {
      let payload = data;
      const opts: RequestOptions = { timeout: timeoutMs };
      const size = chunkBytes(this.nc);
      if (data.length > size) {
        const offer = this.chunks.offer(data, size, timeoutMs);
        held = offer.id;
        payload = Empty;
        opts.headers = offer.headers;
      }
      const sent = this.batched(() => this.nc.request(this.wire(subject), payload, opts));
      sent.catch(() => {}); // its timeout may come after it was abandoned
      const msg = await Promise.race([sent, abandoned]);
      const header = chunkedHeader(msg);
      if (header) {
        const whole = fetchChunks(this.nc, header, deadline);
        whole.catch(() => {});
        reply = await Promise.race([whole, abandoned]);
      } else reply = msg.data;
    } catch (err) {
      throw this.requestError(err, subject);
    } finally {
      this.inFlight--;
      this.waiting.delete(abandon);
      if (held !== null) this.chunks.drop(held);
    }
    return isPiecesReply(reply) ? decodePieces(reply) : replyText(decoder.decode(reply));
  }

  /**
   * Runs `send` at the end of this turn of the event loop, together with every
   * other send made in it. nats.js writes its buffer to the socket once per
   * microtask checkpoint, and a gateway or actor node handles each request in
   * a callback of its own, so without this each request, reply and event was
   * a write system call of its own (a third of a gateway's CPU under load).
   * The cost is at most one event-loop turn of latency.
   */
  private batched<T>(send: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.outbox.push(() => {
        try {
          Promise.resolve(send()).then(resolve, reject);
        } catch (err) {
          reject(err);
        }
      });
      if (this.outbox.length === 1) setImmediate(() => this.drainOutbox());
    });
  }

  private drainOutbox(): void {
    const sends = this.outbox;
    this.outbox = [];
    for (const send of sends) send();
  }

  publish(subject: string, body: unknown): void {
    this.publishMany([subject], body);
  }

  publishMany(subjects: string[], body: unknown): void {
    if (this.closing) return;
    const data = encode(body);
    void this.batched(() => {
      for (const subject of subjects) {
        try {
          this.nc.publish(this.wire(subject), data);
        } catch (err) {
          // Fire and forget, as in LocalBus: the caller is an actor whose write is
          // already durable, and a throw would fail its reply.
          this.log.warn({ err, subject }, 'publish failed; event dropped');
        }
      }
    });
  }

  async serve(subject: string, handler: RequestHandler): Promise<Subscription> {
    return this.track(subject, () =>
      this.nc.subscribe(this.wire(subject), {
        queue: this.queue,
        callback: (err, msg) => {
          if (err) return this.log.error({ err, subject }, 'serve subscription failed');
          const done = this.answer(msg, handler);
          this.running.add(done);
          void done.finally(() => this.running.delete(done));
        },
      }),
    );
  }

  /** The last event decoded, by its bytes: `publishMany` sends one payload to several subjects in a row. */
  private lastEvent: { data: Uint8Array; value: unknown } | null = null;

  /** Decodes an event, or gives the value decoded for the same bytes just before (shared: see `EventHandler`). */
  private decodeEvent(data: Uint8Array): unknown {
    const last = this.lastEvent;
    if (last && last.data.length === data.length && Buffer.compare(last.data, data) === 0) return last.value;
    const value = sharedEvent(decode(data));
    this.lastEvent = { data: data.slice(), value };
    return value;
  }

  async subscribe(subject: string, handler: EventHandler, opts: SubscribeOptions = {}): Promise<Subscription> {
    return this.track(subject, () =>
      this.nc.subscribe(this.wire(subject), {
        ...(opts.broadcast ? {} : { queue: this.queue }),
        callback: (err, msg) => {
          if (err) return this.log.error({ err, subject }, 'event subscription failed');
          try {
            handler(this.decodeEvent(msg.data), this.local(msg.subject));
          } catch (e) {
            this.log.error({ err: e, subject: msg.subject }, 'event handler failed');
          }
        },
      }),
    );
  }

  async flush(): Promise<void> {
    try {
      await this.nc.flush();
    } catch (err) {
      throw this.transportError(err, '(flush)');
    }
  }

  /**
   * Stops taking requests and events, waits up to closeGraceMs for handlers
   * still running to reply, then drains the connection. Requests this bus
   * made that are still waiting fail with BusError('closed').
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.nc.isClosed()) return;
    const graceEnds = Date.now() + this.closeGraceMs;
    await Promise.allSettled([...this.subs].map((s) => s.drain()));
    if (this.running.size) {
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.closeGraceMs)));
      await Promise.race([Promise.allSettled([...this.running]), grace]);
      clearTimeout(timer);
      if (this.running.size) this.log.warn({ handlers: this.running.size }, 'closing with handlers still running; their callers will time out');
    }
    // Replies sent in chunks are still being fetched by their callers.
    await this.chunks.idle(Math.max(0, graceEnds - Date.now()));
    if (this.chunks.size) this.log.warn({ replies: this.chunks.size }, 'closing with chunked replies not fetched; their callers will fail');
    this.chunks.close();
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close().catch(() => {});
    }
  }

  private track(subject: string, open: () => NatsSubscription): Subscription {
    if (this.closing) throw new BusError('closed', subject);
    let sub: NatsSubscription;
    try {
      sub = open();
    } catch (err) {
      throw this.transportError(err, subject);
    }
    this.subs.add(sub);
    return {
      // Drain, not unsubscribe: messages the server already routed here are
      // still handled instead of being dropped (their callers would time out).
      unsubscribe: async () => {
        if (!this.subs.delete(sub) || sub.isClosed()) return;
        await sub.drain().catch(() => {});
      },
    };
  }

  /** Runs one request to completion and replies. Never rejects. */
  private async answer(msg: Msg, handler: RequestHandler): Promise<void> {
    let reply: WireReply | Uint8Array;
    try {
      const header = chunkedHeader(msg);
      const data = header ? await this.fetchRequest(header) : msg.data;
      const value = await handler(decode(data), this.local(msg.subject));
      // A reply in pieces crosses as its bytes (a register's parts, gzipped once: issue 20).
      reply = value instanceof JsonPieces ? encodePieces(value) : encodeReply({ status: 'fulfilled', value });
    } catch (err) {
      reply = encodeReply({ status: 'rejected', reason: err });
    }
    if (!msg.reply) return;
    await this.batched(() => this.respond(msg, reply));
  }

  /** The body of a request sent in chunks; a 503 (the handler never ran) if its caller no longer holds it. */
  private async fetchRequest(header: string): Promise<Uint8Array> {
    try {
      return await fetchChunks(this.nc, header, Date.now() + this.chunkTtlMs);
    } catch (err) {
      this.log.warn({ err }, 'request chunks could not be fetched');
      throw unavailable('The request could not be read in full; try again');
    }
  }

  /** Sends the reply, in chunks its caller fetches if it exceeds one message. */
  private respond(msg: Msg, reply: WireReply | Uint8Array): void {
    try {
      const data = typeof reply === 'string' ? encoder.encode(reply) : reply;
      const size = chunkBytes(this.nc);
      if (data.length <= size) msg.respond(data);
      else msg.respond(Empty, { headers: this.chunks.offer(data, size, this.chunkTtlMs).headers });
    } catch (err) {
      this.log.error({ err, subject: msg.subject }, 'reply could not be sent');
      try {
        msg.respond(encoder.encode(INTERNAL_ERROR_REPLY));
      } catch {
        // The connection is gone; the caller times out.
      }
    }
  }

  private requestError(err: unknown, subject: string): Error {
    if (err instanceof BusError) return err;
    if (err instanceof TimeoutError) return new BusError('timeout', subject);
    if (err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders())) return new BusError('no_responders', subject);
    // The request ran (its reply's chunks were offered): never 'no_responders', which callers retry.
    if (err instanceof ChunkFetchError) return err.reason === 'timeout' ? new BusError('timeout', subject) : new BusError('closed', subject);
    return this.transportError(err, subject);
  }

  /** Connection trouble becomes BusError('closed'); anything else is a bug and kept as is. */
  private transportError(err: unknown, subject: string): Error {
    if (err instanceof ClosedConnectionError || err instanceof DrainingConnectionError || err instanceof RequestError || this.nc.isClosed()) {
      return new BusError('closed', subject);
    }
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** Logs connection status changes, and tells the bus when the connection drops, until it closes. */
async function watchStatus(nc: NatsConnection, log: Logger, on: { disconnect(): void; reconnect(): void }): Promise<void> {
  void nc.closed().then((err) => (err ? log.error({ err }, 'nats connection closed') : log.info('nats connection closed')));
  for await (const s of nc.status()) {
    switch (s.type) {
      case 'disconnect':
        log.warn({ server: s.server }, 'nats disconnected');
        on.disconnect();
        break;
      case 'reconnect':
        log.info({ server: s.server }, 'nats reconnected');
        on.reconnect();
        break;
      case 'reconnecting':
        log.debug('nats reconnecting');
        break;
      case 'error':
        log.error({ err: s.error }, 'nats error');
        break;
      case 'staleConnection':
        log.warn('nats connection stale');
        break;
      case 'slowConsumer':
        log.warn({ subject: s.sub.getSubject(), pending: s.pending }, 'nats slow consumer');
        break;
      case 'ldm':
        log.warn({ server: s.server }, 'nats server entering lame duck mode');
        break;
      case 'update':
      case 'ping':
      case 'forceReconnect':
      case 'close':
        break;
      default: {
        const never: never = s;
        void never;
      }
    }
  }
}
