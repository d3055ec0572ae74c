/**
 * Answers that many requests get word for word, encoded once. The presence
 * actor builds everyone's presence at most once a second per form
 * (`actors/ephemeral/actor.ts`), and at 10,000 users each ping's answer is
 * ~670 KB: writing that string into every answer (its envelope spliced in,
 * then converted to UTF-8 by uWebSockets.js) cost about half a core at one
 * web-app ping per user per minute. Here the envelope and the UTF-8 bytes
 * are made once per distinct text, and a gzip copy once, for the clients
 * that accept it (browsers; the text is very repetitive: ~10x smaller).
 * The few texts kept are compared by content (the same string object in
 * one process: a pointer comparison; a copy off the bus: one memcmp).
 */
import { gzipSync } from 'node:zlib';
import type { JsonPieces } from '../actors/runtime/bus.ts';
import { deflatePiece, gzipJoin } from '../lib/gzip-join.ts';

export interface SharedReply {
  /** The whole answer, envelope included, as UTF-8. */
  body: Buffer;
  /** The same, gzipped (made on first use). */
  gzip(): Buffer;
}

/** How many distinct texts are kept (forms × the second's versions in use at once). */
const KEPT = 8;

export class SharedReplies {
  private entries: Array<{ text: string } & SharedReply> = [];

  constructor(private readonly envelope: (text: string) => string) {}

  get(text: string): SharedReply {
    const hit = this.entries.find((e) => e.text === text);
    if (hit) return hit;
    const body = Buffer.from(this.envelope(text));
    let zipped: Buffer | null = null;
    // Level 1: a tenth of the size already, at a fraction of the default level's time.
    const entry = { text, body, gzip: () => (zipped ??= gzipSync(body, { level: 1 })) };
    this.entries.unshift(entry);
    if (this.entries.length > KEPT) this.entries.pop();
    return entry;
  }
}

/**
 * Answers that stay the same for a second, fetched by this gateway at most
 * once a second per key and version, one fetch in flight (the web app's
 * presence ping, issue 20: in a cluster its ~670 KB answer at 10,000 users
 * would otherwise cross NATS once per ping). A caller gives the version its
 * own change made (fetches start after it): it gets a fetch begun in the
 * current second of this gateway's clock for that version or a later one.
 * A failed fetch is not kept: the next caller fetches again.
 */
export class PerSecond<T> {
  private second = -1;
  private entries = new Map<string, { version: number; answer: Promise<T> }>();

  constructor(private readonly fetched: () => void = () => {}) {}

  get(key: string, version: number, fetch: () => Promise<T>): Promise<T> {
    const now = Math.floor(Date.now() / 1000);
    if (now !== this.second) {
      // Keys of past seconds go at once: the map holds one second's keys at most.
      this.second = now;
      this.entries.clear();
    }
    const hit = this.entries.get(key);
    if (hit && hit.version >= version) return hit.answer;
    const entry = { version, answer: fetch() };
    this.fetched();
    this.entries.set(key, entry);
    entry.answer.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return entry.answer;
  }
}

/** Whether an Accept-Encoding header takes gzip (any q but 0). */
export function acceptsGzip(header: string): boolean {
  for (const part of header.toLowerCase().split(',')) {
    const [coding, ...params] = part.trim().split(';');
    if (coding !== 'gzip' && coding !== 'x-gzip') continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  }
  return false;
}

/**
 * The body of an answer in pieces (a register, issue 20): their bytes back
 * to back, or, when `gzip`, one gzip stream of the deflated pieces as they
 * came (compressed once per change) and the texts between deflated now.
 * Pieces that came deflated need `gzip` (the route asked for them only
 * then); bytes that came uncompressed are deflated here if it is set.
 */
export function piecesBody(data: JsonPieces, gzip: boolean): Buffer {
  if (!gzip) {
    return Buffer.concat(data.pieces.map((p) => {
      if (typeof p === 'string') return Buffer.from(p);
      if ('utf8' in p) return p.utf8;
      throw new Error('a deflated piece in an answer without gzip');
    }));
  }
  // Level 1 for what is compressed per answer: the large pieces came compressed already.
  return Buffer.concat(gzipJoin(data.pieces.map((p) => (typeof p === 'string' ? deflatePiece(Buffer.from(p)) : 'utf8' in p ? deflatePiece(p.utf8) : p.deflated))));
}
