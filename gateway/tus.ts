/**
 * The tus 1.0.0 resumable-upload protocol at /api/v1/tus (FL 295), as
 * Zulip serves it through tusd: core (HEAD, PATCH), creation (POST with
 * Upload-Length and Upload-Metadata `filename`/`filetype`),
 * creation-with-upload and expiration. Termination is not offered (Zulip
 * runs tusd without it: DELETE answers 405), nor deferred lengths (411, as
 * Zulip's pre-create hook refuses them), nor concatenation.
 *
 * Every request but OPTIONS needs the API's credentials (HTTP Basic; this
 * server has no browser sessions), as Zulip's hooks check them; the upload
 * belongs to its creator, so another user's upload is 404 as an unknown
 * one. The state lives in the uploader's user actor (`actors/user/tus.ts`),
 * so a PATCH may reach any gateway. Answers are not the API envelope but
 * tus's: its statuses and headers, and on a refusal a JSON body
 * `{"message": ...}` as Zulip's hooks give (tus clients show the status and
 * the body).
 *
 * `@tus/server` is not used: it is a node:http request handler (it reads
 * the body from an `IncomingMessage` stream and writes a `ServerResponse`)
 * with its own storage (`DataStore`: files or S3, its offset in memory or
 * a local file), where here the bytes must cross the bus to the user actor
 * and the offset live in the store; an adapter would emulate node:http on
 * uWS and replace its storage, leaving little of it in use.
 */
import type { Logger } from 'pino';
import { userActorId, userRef } from '../actors/user/ref.ts';
import { type TusStatus, TUS_MAX_BYTES } from '../actors/user/tus.ts';
import type { Authenticated } from '../actors/realm/actions/people/users.ts';
import type { ActorClient } from '../actors/runtime/client.ts';
import { ApiError, asApiError, invalidSubdomain, realmDeactivated } from '../lib/errors.ts';
import { FILE_TIMEOUT_MS } from '../storage/files.ts';
import type { OrganizationRecord } from '../storage/tables.ts';
import { type Reply, type RequestInfo, statsOf } from './http.ts';
import type { RateLimits } from './rate_limits.ts';

export const TUS_PATH = '/api/v1/tus';
export const TUS_VERSION = '1.0.0';
export const TUS_EXTENSIONS = 'creation,creation-with-upload,expiration';
/** The request headers the protocol reads (lower case, as uWS names them). */
export const TUS_HEADERS = ['tus-resumable', 'upload-length', 'upload-defer-length', 'upload-metadata', 'upload-offset'] as const;
/** The largest body: one PATCH (or POST with upload) carries at most the whole file. */
const BODY_LIMIT = TUS_MAX_BYTES;
const OCTETS = 'application/offset+octet-stream';

/** Whether a request is for the tus endpoint. */
export const isTusUrl = (url: string): boolean => url === TUS_PATH || url.startsWith(`${TUS_PATH}/`);

export interface TusDeps {
  actors: ActorClient;
  authenticate(realmId: number, authorization: string, ip: string): Promise<Authenticated>;
  organization(host: string): Promise<OrganizationRecord | null>;
  rateLimits: RateLimits | null;
  log: Logger;
}

const refuse = (message: string, status: number, headers: Record<string, string> = {}) => new ApiError('BAD_REQUEST', message, status, {}, headers);

/** Parses Upload-Metadata: comma-separated `key base64value` pairs (a key alone has an empty value). */
export function parseMetadata(header: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!header.trim()) return out;
  for (const pair of header.split(',')) {
    const [key = '', value = '', ...rest] = pair.trim().split(' ');
    if (!key || rest.length || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) throw refuse('Upload-Metadata is not a list of keys and base64 values', 400);
    out.set(key, Buffer.from(value, 'base64').toString('utf8'));
  }
  return out;
}

/** A non-negative integer header, or null when absent; 400 when malformed. */
function count(value: string, name: string): number | null {
  if (value === '') return null;
  if (!/^\d{1,15}$/.test(value)) throw refuse(`Invalid ${name} header`, 400);
  return Number(value);
}

/** The headers that describe an upload's state (HEAD, and the answers to POST and PATCH). */
function statusHeaders(s: TusStatus): Record<string, string> {
  return { 'Upload-Offset': String(s.offset), 'Upload-Expires': new Date(s.expiresAt).toUTCString() };
}

/**
 * Serves one request under /api/v1/tus, answering with tus's statuses;
 * never throws. The body is read before anything else is done with it.
 */
export async function serveTus(d: TusDeps, info: RequestInfo, reply: Reply): Promise<void> {
  // The creation URL with or without its slash (Zulip's web app posts to `/api/v1/tus/`, tusd's base path).
  const id = info.url === TUS_PATH || info.url === `${TUS_PATH}/` ? null : info.url.slice(TUS_PATH.length + 1);
  reply.stats = id === null ? statsOf(`tus ${info.method}`, TUS_PATH, info.method) : statsOf(`tus/id ${info.method}`, `${TUS_PATH}/{upload_id}`, info.method);
  const common = { 'Tus-Resumable': TUS_VERSION, 'Cache-Control': 'no-store' };
  try {
    if (info.contentLength !== null && info.contentLength > BODY_LIMIT) throw refuse(`Uploaded file is larger than the allowed limit of ${BODY_LIMIT / 1024 / 1024} MiB`, 413, { Connection: 'close' });
    // An interrupted PATCH still delivers what came (tusd does the same): the upload resumes after it.
    const { data: body, complete } = await reply.bodyOrPart(BODY_LIMIT);
    if (!complete && (info.method !== 'PATCH' || body.length === 0)) return;
    const h = info.tus ?? {};
    if (info.method === 'OPTIONS') {
      return reply.send(204, 'text/plain', '', { ...common, 'Tus-Version': TUS_VERSION, 'Tus-Extension': TUS_EXTENSIONS, 'Tus-Max-Size': String(TUS_MAX_BYTES) });
    }
    if (h['tus-resumable'] !== TUS_VERSION) throw refuse('Missing, invalid or unsupported Tus-Resumable header', 412, { 'Tus-Version': TUS_VERSION });
    const allowed = id === null ? ['POST', 'OPTIONS'] : ['HEAD', 'PATCH', 'OPTIONS'];
    if (!allowed.includes(info.method)) throw refuse(`Method Not Allowed (allowed: ${allowed.join(', ')})`, 405, { Allow: allowed.join(', ') });
    if (id !== null && id.includes('/')) throw refuse('Upload not found', 404);

    const org = await d.organization(info.host);
    if (!org) throw invalidSubdomain();
    if (org.deactivated) throw realmDeactivated();
    let user: Authenticated;
    try {
      user = await d.authenticate(org.realmId, info.authorization, info.ip);
    } catch (err) {
      // Zulip's hooks answer a missing or refused credential (a deactivated user's too) this way.
      if (asApiError(err).status === 401) throw refuse('Unauthenticated upload', 401);
      throw err;
    }
    const limitHeaders = d.rateLimits ? await d.rateLimits.user(user) : {};
    const actor = userActorId(user.realmId, user.userId);
    const caller = { realmId: user.realmId, userId: user.userId };

    if (info.method === 'HEAD') {
      const s = await d.actors.call(userRef, actor, { type: 'tusStatus', caller, id: id! });
      return reply.send(200, 'text/plain', '', { ...common, ...limitHeaders, ...statusHeaders(s), 'Upload-Length': String(s.length) });
    }
    // A change: as the gateway's other changes, the connection is not read until it is answered.
    reply.holdNextRequest();
    await new Promise((r) => setImmediate(r));
    if (reply.aborted && info.method !== 'PATCH') return;
    if (info.method === 'POST') {
      if (h['upload-defer-length'] !== undefined && h['upload-defer-length'] !== '') throw refuse('SizeIsDeferred is not supported', 411);
      const length = count(h['upload-length'] ?? '', 'Upload-Length');
      if (length === null) throw refuse('Missing Upload-Length header', 400);
      if (body.length && !info.contentType.toLowerCase().startsWith(OCTETS)) throw refuse(`Content-Type must be ${OCTETS}`, 415);
      const meta = parseMetadata(h['upload-metadata'] ?? '');
      const s = await d.actors.call(userRef, actor, { type: 'tusCreate', caller, length, filename: meta.get('filename') ?? '', filetype: meta.get('filetype') ?? '', data: body.toString('base64') }, FILE_TIMEOUT_MS);
      return answer(reply, s.done ? 200 : 201, s, { ...common, ...limitHeaders, Location: `${TUS_PATH}/${s.id}` });
    }
    // PATCH
    if (!info.contentType.toLowerCase().startsWith(OCTETS)) throw refuse(`Content-Type must be ${OCTETS}`, 415);
    const offset = count(h['upload-offset'] ?? '', 'Upload-Offset');
    if (offset === null) throw refuse('Missing Upload-Offset header', 400);
    const s = await d.actors.call(userRef, actor, { type: 'tusAppend', caller, id: id!, offset, data: body.toString('base64') }, FILE_TIMEOUT_MS);
    return answer(reply, s.done ? 200 : 204, s, { ...common, ...limitHeaders });
  } catch (err) {
    const e = asApiError(err);
    if (e.status >= 500 && !(err instanceof ApiError)) d.log.error({ err, url: info.url }, 'tus request failed');
    reply.send(e.status, 'application/json', JSON.stringify({ message: e.message }), { ...common, ...e.headers });
  }
}

/**
 * The answer to bytes received: the new offset; once the upload is
 * finished, 200 with POST /user_uploads's `url` and `filename` as the body,
 * as Zulip's pre-finish hook makes tusd answer.
 */
function answer(reply: Reply, status: number, s: TusStatus, headers: Record<string, string>): void {
  if (s.done) return reply.send(200, 'application/json', JSON.stringify(s.done), { ...headers, ...statusHeaders(s) });
  reply.send(status, 'text/plain', '', { ...headers, ...statusHeaders(s) });
}
