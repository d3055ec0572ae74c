/**
 * In-process Bus for the embedded mode. A request is handed to its server as
 * the caller made it, not copied through JSON (`sharesRequests`): the actor
 * node, the only server, parses every actor message with its kind's zod
 * schema, and that parse builds the copy the actor gets (the cluster runs of
 * the test suites hold request bodies to what JSON carries). An event is
 * handed over as published (`sharesEvents`): its publisher gives a value
 * nothing else holds or changes (`ActorNode.publish`).
 */
import { log } from '../../lib/log.ts';
import { type Bus, BusError, callerError, JsonPieces, sharedEvent, valueText, type EventHandler, type RequestHandler, type SubscribeOptions, type Subscription } from './bus.ts';

interface Entry<H> {
  pattern: string;
  handler: H;
}

/** Subject table with NATS-style `>` tails, looked up by prefix. */
class SubjectTable<H> {
  private exact = new Map<string, Entry<H>[]>();
  private tails = new Map<string, Entry<H>[]>();

  add(pattern: string, handler: H): Entry<H> {
    const entry = { pattern, handler };
    const [map, key] = pattern.endsWith('.>') ? [this.tails, pattern.slice(0, -1)] : [this.exact, pattern];
    const list = map.get(key) ?? [];
    list.push(entry);
    map.set(key, list);
    return entry;
  }

  remove(entry: Entry<H>): void {
    const [map, key] = entry.pattern.endsWith('.>') ? [this.tails, entry.pattern.slice(0, -1)] : [this.exact, entry.pattern];
    const list = (map.get(key) ?? []).filter((e) => e !== entry);
    if (list.length) map.set(key, list);
    else map.delete(key);
  }

  /** Every match (broadcast semantics). */
  findAll(subject: string): H[] {
    const out = (this.exact.get(subject) ?? []).map((e) => e.handler);
    for (let i = subject.indexOf('.'); i !== -1; i = subject.indexOf('.', i + 1)) {
      for (const e of this.tails.get(subject.slice(0, i + 1)) ?? []) out.push(e.handler);
    }
    return out;
  }

  /** The first match (queue-group semantics: exactly one receiver). */
  find(subject: string): H | undefined {
    const exact = this.exact.get(subject);
    if (exact?.length) return exact[0]!.handler;
    for (let i = subject.indexOf('.'); i !== -1; i = subject.indexOf('.', i + 1)) {
      const tail = this.tails.get(subject.slice(0, i + 1));
      if (tail?.length) return tail[0]!.handler;
    }
    return undefined;
  }
}

export class LocalBus implements Bus {
  private servers = new SubjectTable<RequestHandler>();
  private listeners = new SubjectTable<EventHandler>();
  private broadcasts = new SubjectTable<EventHandler>();
  private inFlight = 0;
  private closed = false;
  readonly sharesEvents = true;
  readonly sharesRequests = true;

  constructor(private readonly maxInFlight = 100_000) {}

  async request(subject: string, body: unknown, timeoutMs: number): Promise<unknown> {
    return JSON.parse(await this.requestText(subject, body, timeoutMs));
  }

  async requestText(subject: string, body: unknown, timeoutMs: number): Promise<string> {
    const reply = await this.requestReply(subject, body, timeoutMs);
    return typeof reply === 'string' ? reply : reply.text();
  }

  async requestReply(subject: string, body: unknown, timeoutMs: number): Promise<string | JsonPieces> {
    if (this.closed) throw new BusError('closed', subject);
    const handler = this.servers.find(subject);
    if (!handler) throw new BusError('no_responders', subject);
    if (this.inFlight >= this.maxInFlight) throw new BusError('busy', subject);
    this.inFlight++;
    let timer: NodeJS.Timeout | undefined;
    try {
      // The reply's text as NATS would carry it, without the wire string between: a long
      // poll's events are not copied again. Pieces are handed over as they are (their bytes are only read).
      return await Promise.race([
        handler(sharedEvent(body === undefined ? null : body), subject).then(
          (v) => {
            try {
              return v instanceof JsonPieces ? v : valueText(v);
            } catch (err) {
              throw callerError(err); // a value JSON cannot carry: an internal error, as over NATS
            }
          },
          (e: unknown) => {
            throw callerError(e);
          },
        ),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new BusError('timeout', subject)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.inFlight--;
    }
  }

  publish(subject: string, body: unknown): void {
    this.publishMany([subject], body);
  }

  publishMany(subjects: string[], body: unknown): void {
    if (this.closed) return;
    // The one value every subscriber of every subject gets (as a NATS node decodes one).
    const data = sharedEvent(body === undefined ? null : body);
    for (const subject of subjects) {
      const one = this.listeners.find(subject);
      const handlers = one ? [one, ...this.broadcasts.findAll(subject)] : this.broadcasts.findAll(subject);
      if (handlers.length > 0) this.deliver(subject, data, handlers);
    }
  }

  private deliver(subject: string, data: unknown, handlers: EventHandler[]): void {
    for (const handler of handlers) {
      queueMicrotask(() => {
        try {
          handler(data, subject);
        } catch (err) {
          log.error({ err, subject }, 'event handler failed');
        }
      });
    }
  }

  async serve(subject: string, handler: RequestHandler): Promise<Subscription> {
    const entry = this.servers.add(subject, handler);
    return { unsubscribe: async () => this.servers.remove(entry) };
  }

  async subscribe(subject: string, handler: EventHandler, opts: SubscribeOptions = {}): Promise<Subscription> {
    const table = opts.broadcast ? this.broadcasts : this.listeners;
    const entry = table.add(subject, handler);
    return { unsubscribe: async () => table.remove(entry) };
  }

  async flush(): Promise<void> {}

  /** Nothing published in process is lost. */
  onEventsLost(): void {}

  async close(): Promise<void> {
    this.closed = true;
  }
}
