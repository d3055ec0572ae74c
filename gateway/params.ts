/**
 * Request parameters: gathered from the query string (every method) and from
 * `application/x-www-form-urlencoded` or `multipart/form-data` bodies, then
 * decoded and validated by each route's zod schema. Clients JSON-encode every
 * value that is not a string, so the helpers below accept JSON text for lists,
 * objects, booleans and integers; strings are taken as sent, except channel
 * names, which the contract lets clients send JSON-encoded too.
 */
import { Busboy, type BusboyInstance } from '@fastify/busboy';
import { z } from 'zod';
import { ApiError, badRequest, invalidParam, missingParam } from '../lib/errors.ts';

export type RawParams = Map<string, string>;

function addSearchParams(into: RawParams, text: string): void {
  for (const [k, v] of new URLSearchParams(text)) into.set(k, v);
}

/** A file sent in a multipart body (to a route that takes files). */
export interface UploadedFile {
  field: string;
  filename: string;
  contentType: string;
  data: Buffer;
}

/** Types by file extension, for parts sent without a Content-Type (the common ones Python's mimetypes knows). */
const TYPES_BY_EXTENSION: Readonly<Record<string, string>> = {
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', avif: 'image/avif', bmp: 'image/bmp', tif: 'image/tiff', tiff: 'image/tiff',
  pdf: 'application/pdf', zip: 'application/zip', json: 'application/json', txt: 'text/plain', md: 'text/markdown', csv: 'text/csv',
  mp3: 'audio/mpeg', ogg: 'audio/ogg', wav: 'audio/x-wav', mp4: 'video/mp4', webm: 'video/webm', mov: 'video/quicktime',
};

/**
 * A file part's type. busboy reports a part sent without a Content-Type as
 * text/plain (the Python client sends its files so, through requests); then,
 * as Zulip's get_file_info, the type comes from the file name, or is
 * application/octet-stream.
 */
function partType(mimetype: string, filename: string): string {
  if (mimetype && mimetype !== 'text/plain') return mimetype;
  const ext = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase();
  return (ext && TYPES_BY_EXTENSION[ext]) || mimetype || 'application/octet-stream';
}

function parseMultipart(contentType: string, body: Buffer, into: RawParams, files: UploadedFile[] | null): Promise<void> {
  return new Promise((resolve, reject) => {
    let bb: BusboyInstance;
    try {
      bb = new Busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: body.length + 1, files: files ? 16 : 0, fileSize: body.length + 1 } });
    } catch {
      reject(badRequest('Malformed multipart/form-data body'));
      return;
    }
    bb.on('field', (name: string, value: string) => into.set(name, value));
    bb.on('file', (field: string, stream: NodeJS.ReadableStream, filename: string, _encoding: string, mimetype: string) => {
      if (!files) return void stream.resume();
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => files.push({ field, filename: filename ?? '', contentType: partType(mimetype, filename ?? ''), data: Buffer.concat(chunks) }));
    });
    bb.on('filesLimit', () => reject(badRequest(files ? 'Too many files in one request' : 'File uploads are not accepted by this endpoint')));
    bb.on('error', () => reject(badRequest('Malformed multipart/form-data body')));
    bb.on('finish', () => resolve());
    bb.end(body);
  });
}

/** Collects the raw parameters of a request: query first, body values override. */
export async function collectParams(query: string, contentType: string, body: Buffer, files: UploadedFile[] | null = null): Promise<RawParams> {
  const params: RawParams = new Map();
  try {
    if (query) addSearchParams(params, query);
  } catch {
    throw badRequest('Malformed query string');
  }
  if (body.length === 0) return params;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') addSearchParams(params, body.toString('utf8'));
  else if (type === 'multipart/form-data') await parseMultipart(contentType, body, params, files);
  else throw new ApiError('BAD_REQUEST', `Unsupported Content-Type: ${type || '(none)'}`, 415);
  return params;
}

// ---- how each value is written, for the API description (gateway/openapi/) ----

/** How a decoder reads its text: plain text, an integer, JSON text of a schema, or a word or an integer. */
export type Wire =
  | { kind: 'string' }
  | { kind: 'integer' }
  | { kind: 'json'; schema: z.ZodType }
  | { kind: 'wordOrInt'; words: readonly string[]; min: number }
  | { kind: 'idsOrNames' };

const WIRES = new WeakMap<z.ZodType, Wire>();
const wire = <T extends z.ZodType>(schema: T, w: Wire): T => (WIRES.set(schema, w), schema);

/** How a decoder made by the helpers below reads its text (undefined for any other schema). */
export const wireOf = (schema: z.ZodType): Wire | undefined => WIRES.get(schema);

// ---- value decoders -------------------------------------------------------

/** A string, taken as sent: quotes are part of the value (`"quoted text"` stays quoted). */
export const str = () => wire(z.string(), { kind: 'string' });

/**
 * A channel name: the one kind of string the contract lets a client send
 * JSON-encoded as well as plain (`general` or `"general"`).
 */
export const channelName = () => wire(z.string().transform(unquoted), { kind: 'string' });

/**
 * A user's full name on PATCH /users/{user_id}: before FL 106 Zulip took it
 * JSON-encoded, and clients reading a level below 106 send it so (the Python
 * client's update_user_by_id). A name may not contain `"`, so a quoted value
 * is only ever that encoding.
 */
export const fullName = () => wire(z.string().transform(unquoted), { kind: 'string' });

/** A channel name as the contract reads it: JSON string text decoded, anything else as sent. */
function unquoted(s: string): string {
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) {
    try {
      const v: unknown = JSON.parse(s);
      if (typeof v === 'string') return v;
    } catch {
      /* not JSON: the quotes are part of the name */
    }
  }
  return s;
}

/** JSON text decoded and then checked against `schema`. */
export const json = <T extends z.ZodType>(schema: T) =>
  wire(z
    .string()
    .transform((s, ctx) => {
      try {
        return JSON.parse(s) as unknown;
      } catch {
        ctx.addIssue({ code: 'custom', message: 'is not valid JSON' });
        return z.NEVER;
      }
    })
    .pipe(schema), { kind: 'json', schema });

/** A boolean sent as JSON (`true`/`false`). */
export const bool = () => json(z.boolean());


/** An integer sent as text or JSON. */
export const int = () =>
  wire(z.string().transform((s, ctx) => {
    const t = s.trim();
    if (!/^-?\d+$/.test(t) || !Number.isSafeInteger(Number(t))) {
      ctx.addIssue({ code: 'custom', message: 'is not an integer' });
      return z.NEVER;
    }
    return Number(t);
  }), { kind: 'integer' });

/** One of `words`, or an integer of at least `min` (anchors, retention periods). */
/** A user's role: one of Zulip's role values (owner 100 … guest 600). */
export const role = () => int().pipe(z.union([z.literal(100), z.literal(200), z.literal(300), z.literal(400), z.literal(600)], { message: 'Invalid role' }));

export const wordOrInt = <W extends string>(words: readonly W[], min: number, message: string) =>
  wire(str().transform((s, ctx): W | number => {
    const t = s.trim();
    if ((words as readonly string[]).includes(t)) return t as W;
    if (/^-?\d+$/.test(t) && Number.isSafeInteger(Number(t)) && Number(t) >= min) return Number(t);
    ctx.addIssue({ code: 'custom', message });
    return z.NEVER;
  }), { kind: 'wordOrInt', words, min });

/** A list of integers or strings given as JSON, or one bare value. */
export const idsOrNames = () =>
  wire(z.string().transform((s, ctx): Array<number | string> | number | string => {
    const t = s.trim();
    if (t.startsWith('[')) {
      try {
        const v: unknown = JSON.parse(t);
        if (Array.isArray(v) && v.every((x) => typeof x === 'string' || Number.isInteger(x))) return v as Array<number | string>;
      } catch {
        /* fall through */
      }
      ctx.addIssue({ code: 'custom', message: 'must be a list of user IDs or emails' });
      return z.NEVER;
    }
    if (/^\d+$/.test(t)) return Number(t);
    return unquoted(t);
  }), { kind: 'idsOrNames' });

// ---- validation against a route's schema ---------------------------------

export type ParamShape = Record<string, z.ZodType>;

const UNSUPPORTED = new WeakSet<z.ZodType>();

/**
 * A parameter the API defines but this server does not act on (yet): it is
 * validated like any other, and when a request carries it, it is named in
 * `ignored_parameters_unsupported` so the client knows it had no effect.
 */
export function unsupported<T extends z.ZodType>(schema: T): T {
  const marked = schema.optional() as unknown as T;
  UNSUPPORTED.add(marked);
  return marked;
}

/** Whether a parameter is marked `unsupported(...)`. */
export const isUnsupported = (schema: z.ZodType): boolean => UNSUPPORTED.has(schema);

/** Validates raw parameters; unknown ones are returned for ignored_parameters_unsupported. */
// One object schema per route: zod compiles a fast path for each new schema,
// so building it per request would redo that work every time.
const compiled = new WeakMap<ParamShape, z.ZodObject<ParamShape>>();

/** Parameters a request may carry at most (a route takes a few dozen at most). */
export const MAX_PARAMS = 200;
/** How many ignored parameters a reply names, and how much of each name. */
const MAX_IGNORED_LISTED = 50;
const MAX_IGNORED_NAME = 100;

export function validateParams<S extends ParamShape>(shape: S, raw: RawParams): { params: z.infer<z.ZodObject<S>>; ignored: string[] } {
  if (raw.size > MAX_PARAMS) throw badRequest(`Too many parameters (limit: ${MAX_PARAMS})`);
  let schema = compiled.get(shape);
  if (!schema) compiled.set(shape, (schema = z.object(shape)));
  const input: Record<string, string> = {};
  const ignored: string[] = [];
  for (const [k, v] of raw) {
    // The reply names what was ignored, not all of it: a request cannot make its answer as large as itself.
    if (!(k in shape)) {
      if (ignored.length < MAX_IGNORED_LISTED) ignored.push(k.length > MAX_IGNORED_NAME ? `${k.slice(0, MAX_IGNORED_NAME)}…` : k);
    } else {
      input[k] = v;
      if (UNSUPPORTED.has(shape[k]!)) ignored.push(k);
    }
  }
  const r = schema.safeParse(input);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const name = String(issue.path[0] ?? 'request');
    if (input[name] === undefined) throw missingParam(name);
    throw invalidParam(name, issue.message);
  }
  return { params: r.data as z.infer<z.ZodObject<S>>, ignored };
}
