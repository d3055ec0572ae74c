/**
 * Bodies larger than one NATS message (the server's `max_payload`: 1 MiB by
 * default, 8 MiB as k8s/ configures it) cross the bus in chunks the receiver
 * pulls. The sender keeps the encoded body in a `ChunkStore` and sends, in
 * its place, an empty message whose `Parley-Chunked` header names where the
 * chunks are (`<subject> <bytes> <chunk size>`); the receiver fetches chunk i as
 * a request to `<subject>.<i>`, a few at a time (`fetchChunks`).
 *
 * Pulling rather than pushing keeps every failure bounded: each fetch is a
 * request with the caller's remaining time, so a chunk that never comes is a
 * timeout, a sender that died is "no responders" at once, and a body the
 * store no longer holds (fetched, expired) is answered with an empty
 * message. Nothing is sent that nobody asked for, so a slow receiver cannot
 * be flooded, and the one-message path costs nothing more than a length
 * check and a header lookup.
 */
import { createInbox, Empty, headers, type Msg, type MsgHdrs, type NatsConnection, NoRespondersError, RequestError, type Subscription, TimeoutError } from '@nats-io/transport-node';
import type { Logger } from 'pino';

/** The header of a message whose body is fetched in chunks: `<subject> <bytes> <chunk size>`. */
export const CHUNKED_HEADER = 'Parley-Chunked';

/** Room left in each chunk below max_payload (protocol framing, a server that counts differently). */
const HEADROOM = 1024;
/** Chunk requests a receiver has out at once. */
const WINDOW = 4;

/** The largest body sent as one message on this connection now (max_payload can change with the server). */
export function chunkBytes(nc: NatsConnection): number {
  const max = nc.info?.max_payload ?? 1024 * 1024;
  return Math.max(1024, max - HEADROOM);
}

interface Held {
  chunks: Uint8Array[];
  /** Chunk indexes not fetched yet; the body is dropped once none is left. */
  left: Set<number>;
  timer: NodeJS.Timeout;
}

/**
 * Bodies waiting for their receiver, served on one subscription of this
 * connection (`<inbox>.<id>.<chunk>`). Each body is held until every chunk
 * was fetched once, or `ttlMs` (the receiver gave up or died).
 */
export class ChunkStore {
  private readonly prefix = createInbox();
  private readonly held = new Map<number, Held>();
  private nextId = 1;
  private readonly sub: Subscription;
  private emptied: (() => void) | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: Logger,
  ) {
    this.sub = nc.subscribe(`${this.prefix}.>`, { callback: (err, msg) => (err ? log.error({ err }, 'chunk subscription failed') : this.serve(msg)) });
  }

  /** Bodies held now (for tests and close). */
  get size(): number {
    return this.held.size;
  }

  /** Holds `data` for `ttlMs` and returns the headers of the empty message that stands for it. */
  offer(data: Uint8Array, size: number, ttlMs: number): { id: number; headers: MsgHdrs } {
    const id = this.nextId++;
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < data.length; at += size) chunks.push(data.subarray(at, at + size));
    const timer = setTimeout(() => this.drop(id), ttlMs);
    timer.unref();
    this.held.set(id, { chunks, left: new Set(chunks.keys()), timer });
    const h = headers();
    h.set(CHUNKED_HEADER, `${this.prefix}.${id} ${data.length} ${size}`);
    return { id, headers: h };
  }

  /** Stops holding body `id` (its receiver is done with it, or will never come). */
  drop(id: number): void {
    const h = this.held.get(id);
    if (!h) return;
    clearTimeout(h.timer);
    this.held.delete(id);
    if (this.held.size === 0) this.emptied?.();
  }

  /** Resolves once no body is held, or after `ms`. */
  async idle(ms: number): Promise<void> {
    if (this.held.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.emptied = resolve;
      timer = setTimeout(resolve, ms);
    });
    clearTimeout(timer);
    this.emptied = null;
  }

  close(): void {
    for (const id of [...this.held.keys()]) this.drop(id);
    this.sub.unsubscribe();
  }

  private serve(msg: Msg): void {
    const [id, index] = msg.subject.slice(this.prefix.length + 1).split('.').map(Number) as [number, number];
    const h = this.held.get(id);
    const chunk = h?.chunks[index];
    try {
      // Empty: no such body (fetched already, expired): the receiver fails at once instead of at its timeout.
      msg.respond(chunk ?? Empty);
    } catch (err) {
      this.log.warn({ err, subject: msg.subject }, 'chunk could not be sent');
    }
    if (!h || !chunk) return;
    h.left.delete(index);
    if (h.left.size === 0) this.drop(id);
  }
}

/** Why a chunked body could not be fetched. */
export class ChunkFetchError extends Error {
  constructor(
    readonly reason: 'timeout' | 'gone' | 'malformed',
    message: string,
  ) {
    super(message);
    this.name = 'ChunkFetchError';
  }
}

/** The `Parley-Chunked` header of a message, if it stands for a chunked body. */
export function chunkedHeader(msg: Msg): string | undefined {
  return msg.headers?.get(CHUNKED_HEADER) || undefined;
}

/**
 * Fetches the body a `Parley-Chunked` header names, by `deadline` (epoch ms).
 * Rejects with a ChunkFetchError ('timeout' when the time ran out, 'gone' when
 * the sender answers no more), or the connection's own error.
 */
export async function fetchChunks(nc: NatsConnection, header: string, deadline: number): Promise<Uint8Array> {
  const [subject, bytesText, sizeText] = header.split(' ');
  const bytes = Number(bytesText);
  const size = Number(sizeText);
  if (!subject || !Number.isSafeInteger(bytes) || !Number.isSafeInteger(size) || bytes < 1 || size < 1) throw new ChunkFetchError('malformed', `malformed ${CHUNKED_HEADER} header: ${header}`);
  const count = Math.ceil(bytes / size);
  const out = new Uint8Array(bytes);
  let next = 0;
  let filled = 0;
  let failed = false;
  const fetchOne = async (i: number): Promise<Uint8Array> => {
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new ChunkFetchError('timeout', `chunk ${i} of ${subject}: no time left`);
    let msg: Msg;
    try {
      msg = await nc.request(`${subject}.${i}`, Empty, { timeout: remaining });
    } catch (err) {
      if (err instanceof TimeoutError) throw new ChunkFetchError('timeout', `chunk ${i} of ${subject} did not come in time`);
      if (err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders())) throw new ChunkFetchError('gone', `the sender of ${subject} is gone`);
      throw err;
    }
    if (msg.data.length === 0) throw new ChunkFetchError('gone', `${subject} is no longer held by its sender`);
    return msg.data;
  };
  // Every chunk is `size` bytes but the last, so each one's place is known before it comes.
  const worker = async (): Promise<void> => {
    while (next < count && !failed) {
      const i = next++;
      try {
        const data = await fetchOne(i);
        const want = Math.min(size, bytes - i * size);
        if (data.length !== want) throw new ChunkFetchError('malformed', `chunk ${i} of ${subject}: ${data.length} bytes, expected ${want}`);
        out.set(data, i * size);
        filled += data.length;
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(WINDOW, count) }, worker));
  if (filled !== bytes) throw new ChunkFetchError('malformed', `${subject}: ${filled} of ${bytes} bytes`);
  return out;
}
