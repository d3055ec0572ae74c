/**
 * The Bus: how gateways reach actors and actors publish events. Two
 * implementations: in-process (embedded mode) and NATS (cluster mode). The
 * same tests run against both.
 *
 * Messages are plain JSON data, so an actor behaves the same whether its
 * caller is in this process or another machine. Over NATS a server gets a
 * decoded copy of a request; in process it gets the caller's value itself
 * (`sharesRequests`), which it only reads: the actor node's server parses
 * each one with its kind's schema, and actors get that parse's new objects.
 * An event published to several subjects is decoded once and the same value
 * given to each subscriber that gets it: subscribers only read it. In process
 * there is nothing to decode: the published value itself is handed over
 * (`sharesEvents`). In check mode shared values are frozen, so a write fails
 * the test that makes it.
 */
import { constants, inflateRawSync } from 'node:zlib';
import { ApiError, type WireError } from '../../lib/errors.ts';
import type { DeflatedPiece } from '../../lib/gzip-join.ts';

export interface Subscription {
  unsubscribe(): Promise<void>;
}

export interface SubscribeOptions {
  /** Every subscriber gets each event (no queue group). */
  broadcast?: boolean;
}

export type RequestHandler = (body: unknown, subject: string) => Promise<unknown>;
/** Gets a decoded event; the value may be shared with other subscribers: read it, never change it. */
export type EventHandler = (body: unknown, subject: string) => void;

const FREEZE_EVENTS = process.env.PARLEY_CHECK === '1';

/** An event value as subscribers get it: frozen all the way down in check mode. */
export function sharedEvent<T>(value: T): T {
  if (FREEZE_EVENTS) deepFreeze(value);
  return value;
}

function deepFreeze(v: unknown): void {
  if (v === null || typeof v !== 'object' || Object.isFrozen(v)) return;
  Object.freeze(v);
  for (const x of Object.values(v)) deepFreeze(x);
}

export interface Bus {
  /** Sends a request to the one server of `subject` and waits for its reply.
   *  Rejects with an ApiError the server threw, or a BusError. */
  request(subject: string, body: unknown, timeoutMs: number): Promise<unknown>;
  /** As `request`, but resolves with the reply value's JSON text, for a
   *  caller that forwards it (the gateway) instead of decoding it. */
  requestText(subject: string, body: unknown, timeoutMs: number): Promise<string>;
  /** As `requestText`, but a reply built in pieces (`JsonPieces`) comes as those pieces, its bytes never turned into text. */
  requestReply(subject: string, body: unknown, timeoutMs: number): Promise<string | JsonPieces>;
  /**
   * Whether subscribers get the very value given to `publish` (in process)
   * rather than a decoded copy of it (NATS). On such a bus the publisher
   * hands the value over: it must be one nothing else holds or changes.
   */
  readonly sharesEvents: boolean;
  /**
   * Whether a server gets the very value given to `request` (in process)
   * rather than a decoded copy of it (NATS): the server reads it and never
   * changes it. The reply is a copy on either bus.
   */
  readonly sharesRequests: boolean;
  /** Publishes an event; one subscriber of the subject's queue group gets it. */
  publish(subject: string, body: unknown): void;
  /** Publishes the same event to several subjects, encoding it once. */
  publishMany(subjects: string[], body: unknown): void;
  /** Serves requests on a subject (`>` may end it). One server of a subject
   *  gets each request; what the handler returns is the reply. */
  serve(subject: string, handler: RequestHandler): Promise<Subscription>;
  /** Takes events on a subject; one subscriber of the subject gets each, or
   *  every subscriber with `broadcast`. */
  subscribe(subject: string, handler: EventHandler, opts?: SubscribeOptions): Promise<Subscription>;
  /** Waits until subscriptions made so far are known to the bus. */
  flush(): Promise<void>;
  /**
   * Calls `fn` each time events published to this process's subscriptions
   * may have been lost: its connection dropped and is back (NATS delivers at
   * most once, and while a process is away it holds none of its
   * subscriptions). A bus in one process loses nothing and never calls it.
   */
  onEventsLost(fn: () => void): void;
  close(): Promise<void>;
}

/** A reply value already encoded as JSON (a handler that built its answer as text). */
export class JsonText {
  constructor(readonly text: string) {}
}

/** A piece of a reply's JSON kept encoded: its UTF-8 bytes, or those bytes deflated as a piece of a gzip stream (`lib/gzip-join.ts`). */
export type EncodedJson = { utf8: Buffer } | { deflated: DeflatedPiece };

/**
 * A reply value's JSON text as pieces, in order: texts, and parts encoded
 * once for many replies (a register's `realm_users`, issue 20), which
 * cross the bus and reach the client as the bytes they are. A caller that
 * wants the text gets it joined (`text`); the register route writes the
 * bytes, or the deflated pieces as one gzip stream.
 */
export class JsonPieces {
  constructor(readonly pieces: ReadonlyArray<string | EncodedJson>) {}

  /** The whole JSON text (deflated pieces inflated: each ends with a flush, not a final block): for callers that read the value. */
  text(): string {
    const inflate = (data: Buffer) => inflateRawSync(data, { finishFlush: constants.Z_SYNC_FLUSH }).toString();
    return this.pieces.map((p) => (typeof p === 'string' ? p : 'utf8' in p ? p.utf8.toString() : inflate(p.deflated.data))).join('');
  }
}

/** The first byte of a `JsonPieces` reply on the wire (`v` and `e` begin the others). */
const PIECES_TAG = 0x70; // 'p'

/**
 * A `JsonPieces` reply on the wire: `p`, the length of a JSON header (4
 * bytes, big-endian), the header (each piece: its text, or [0, bytes] for
 * UTF-8 bytes, [1, bytes, crc, size] for a deflated piece), then the encoded
 * pieces' bytes back to back.
 */
export function encodePieces(value: JsonPieces): Buffer {
  const blobs: Buffer[] = [];
  const header = value.pieces.map((p) => {
    if (typeof p === 'string') return p;
    if ('utf8' in p) {
      blobs.push(p.utf8);
      return [0, p.utf8.length];
    }
    blobs.push(p.deflated.data);
    return [1, p.deflated.data.length, p.deflated.crc, p.deflated.size];
  });
  const head = Buffer.from(JSON.stringify(header));
  const lead = Buffer.alloc(5);
  lead[0] = PIECES_TAG;
  lead.writeUInt32BE(head.length, 1);
  return Buffer.concat([lead, head, ...blobs]);
}

/** Whether a reply on the wire is a `JsonPieces` one. */
export const isPiecesReply = (data: Uint8Array): boolean => data.length > 0 && data[0] === PIECES_TAG;

/** The `JsonPieces` of `encodePieces`; its parts are views of `data` (not copied). */
export function decodePieces(data: Uint8Array): JsonPieces {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const headLength = buf.readUInt32BE(1);
  const header = JSON.parse(buf.subarray(5, 5 + headLength).toString()) as Array<string | number[]>;
  let at = 5 + headLength;
  const take = (n: number): Buffer => {
    if (at + n > buf.length) throw new Error('a pieces reply shorter than its header says');
    const out = buf.subarray(at, at + n);
    at += n;
    return out;
  };
  return new JsonPieces(header.map((h) => (typeof h === 'string' ? h : h[0] === 0 ? { utf8: take(h[1]!) } : { deflated: { data: take(h[1]!), crc: h[2]!, size: h[3]! } })));
}

/**
 * A reply as it crosses the wire: `v` and the value's JSON, or `e` and the
 * WireError's JSON. The value's JSON is kept intact so the gateway can put it
 * in its HTTP answer without decoding and encoding it again.
 */
export type WireReply = string;

const INTERNAL: WireError = { code: 'INTERNAL_SERVER_ERROR', msg: 'Internal server error', status: 500 };
/** The reply a server sends when its real reply cannot be encoded or sent. */
export const INTERNAL_ERROR_REPLY: WireReply = `e${JSON.stringify(INTERNAL)}`;

export function encodeReply(result: PromiseSettledResult<unknown>): WireReply {
  if (result.status === 'fulfilled') return `v${valueText(result.value)}`;
  const err = result.reason;
  return `e${JSON.stringify(err instanceof ApiError ? err.toWire() : INTERNAL)}`;
}

/** A reply value's JSON text (a `JsonText` is already that). */
export function valueText(value: unknown): string {
  if (value instanceof JsonPieces) return value.text();
  return value instanceof JsonText ? value.text : JSON.stringify(value ?? null);
}

/** The error a caller gets for a server's failure: what `replyText` throws for it, without the wire text between. */
export function callerError(reason: unknown): ApiError {
  return ApiError.fromWire(reason instanceof ApiError ? reason.toWire() : INTERNAL);
}

/** The reply value's JSON text; throws the ApiError an error reply carries. */
export function replyText(reply: WireReply): string {
  if (reply.startsWith('v')) return reply.slice(1);
  throw ApiError.fromWire(JSON.parse(reply.slice(1)) as WireError);
}

/** Why a bus request failed without an answer from its server. */
export class BusError extends Error {
  constructor(
    readonly reason: 'timeout' | 'no_responders' | 'busy' | 'closed',
    readonly subject: string,
  ) {
    super(`bus ${reason} on ${subject}`);
    this.name = 'BusError';
  }
}
