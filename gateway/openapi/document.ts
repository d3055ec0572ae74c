/**
 * The OpenAPI 3.1 document of the API, built from the routes themselves:
 * each route's parameters from its zod shape (`gateway/params.ts` records how
 * each decoder reads its text: plain, integer, or JSON), its responses from
 * the catalog (`responses.ts`), converted to JSON Schema (2020-12, the
 * dialect of OpenAPI 3.1) by zod. Served at GET /api/v1/openapi.json.
 */
import { z } from 'zod';
import { type Wire, isUnsupported, wireOf } from '../params.ts';
import type { Route } from '../route.ts';
import { SERVER_VERSION } from '../../lib/version.ts';
import type { ErrorCode } from '../../lib/errors.ts';
import {
  ChannelFolderObject,
  ChannelObject,
  ClientEvent,
  DraftObject,
  FetchedMessage,
  LinkifierObject,
  MessageObject,
  ProfileFieldObject,
  RealmEmojiObject,
  SavedSnippetObject,
  ReminderObject,
  ScheduledMessageObject,
  SubscriptionObject,
  UserGroupObject,
  UserObject,
} from '../../actors/events/schema.ts';
import { AUTH_ERRORS, COMMON_ERRORS, ERROR_CODES, ERROR_ENVELOPES } from './envelope.ts';
import { errorCases, RESPONSES, type RouteResponses, routeKey } from './responses.ts';

type JsonSchema = Record<string, unknown>;

/** The objects many replies share, named once under components.schemas. */
const SHARED: Record<string, z.ZodType> = {
  User: UserObject,
  Channel: ChannelObject,
  Subscription: SubscriptionObject,
  Message: MessageObject,
  FetchedMessage,
  ScheduledMessage: ScheduledMessageObject,
  Reminder: ReminderObject,
  UserGroup: UserGroupObject,
  ProfileField: ProfileFieldObject,
  Linkifier: LinkifierObject,
  ChannelFolder: ChannelFolderObject,
  Draft: DraftObject,
  SavedSnippet: SavedSnippetObject,
  RealmEmoji: RealmEmojiObject,
  Event: ClientEvent,
};

const errorSchemaId = (code: ErrorCode) => `Error_${code}`;

/** `get_users_me_subscriptions` for GET /users/me/subscriptions. */
export const operationId = (r: Route): string => `${r.method.toLowerCase()}${r.path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+/g, '_')}`.replace(/_$/, '');

/** Drops what JSON Schema output carries that the document does not need: `$schema`, `$id`, and the safe-integer bounds zod adds to every integer. */
function tidy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tidy);
  if (!node || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema' || k === '$id') continue;
    if ((k === 'minimum' && v === Number.MIN_SAFE_INTEGER) || (k === 'maximum' && v === Number.MAX_SAFE_INTEGER)) continue;
    out[k] = tidy(v);
  }
  return out;
}

/** A parameter's decoded value as JSON Schema (what its decoder accepts). */
const inputSchema = (s: z.ZodType): JsonSchema => tidy(z.toJSONSchema(s, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' })) as JsonSchema;

interface ParamDoc {
  schema: JsonSchema;
  /** The value is JSON text (lists, objects, booleans). */
  json: boolean;
  required: boolean;
  unsupported: boolean;
}

function wireSchema(w: Wire): { schema: JsonSchema; json: boolean } {
  switch (w.kind) {
    case 'string':
      return { schema: { type: 'string' }, json: false };
    case 'integer':
      return { schema: { type: 'integer' }, json: false };
    case 'json':
      return { schema: inputSchema(w.schema), json: true };
    case 'wordOrInt':
      return { schema: { anyOf: [{ type: 'string', enum: [...w.words] }, { type: 'integer', ...(w.min > Number.MIN_SAFE_INTEGER ? { minimum: w.min } : {}) }] }, json: false };
    case 'idsOrNames':
      return {
        schema: { anyOf: [{ type: 'integer' }, { type: 'string' }, { type: 'array', items: { anyOf: [{ type: 'integer' }, { type: 'string' }] } }], description: 'One user ID, channel name or email, or a JSON list of them.' },
        json: false,
      };
  }
}

/** How a parameter is written: its wire form, narrowed by what its decoder's output is piped into. */
function describeValue(s: z.ZodType): { schema: JsonSchema; json: boolean } {
  const w = wireOf(s);
  if (w) return wireSchema(w);
  if (s instanceof z.ZodPipe) {
    const base = describeValue(s.in as z.ZodType);
    const out = inputSchema(s.out as z.ZodType);
    if (Object.keys(out).length === 0) return base; // a transform: the wire form is all there is to say
    if (base.schema.type === 'integer' && out.type === 'number') out.type = 'integer';
    return { schema: out, json: base.json };
  }
  return { schema: inputSchema(s), json: false };
}

export function describeParam(s: z.ZodType): ParamDoc {
  const unsupported = isUnsupported(s);
  let required = true;
  let inner = s;
  while (inner instanceof z.ZodOptional || inner instanceof z.ZodDefault) {
    required = false;
    inner = inner.unwrap() as z.ZodType;
  }
  return { ...describeValue(inner), required, unsupported };
}

const UNSUPPORTED_NOTE = 'Accepted but not acted on by this server: named in ignored_parameters_unsupported when sent.';

const pathParams = (path: string): string[] => [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);

function parametersOf(route: Route): { parameters: JsonSchema[]; requestBody?: JsonSchema } {
  const inPath = new Set(pathParams(route.path));
  const parameters: JsonSchema[] = [];
  const body: Record<string, JsonSchema> = {};
  const required: string[] = [];
  const encoding: Record<string, JsonSchema> = {};
  const inQuery = route.method === 'GET' || route.method === 'DELETE';
  for (const [name, schema] of Object.entries(route.params)) {
    const d = describeParam(schema);
    const note = d.unsupported ? { description: UNSUPPORTED_NOTE } : {};
    if (inPath.has(name)) parameters.push({ name, in: 'path', required: true, schema: d.schema });
    else if (inQuery) {
      const value = d.json ? { content: { 'application/json': { schema: d.schema } } } : { schema: d.schema };
      parameters.push({ name, in: 'query', required: d.required, ...note, ...value });
    } else {
      body[name] = { ...d.schema, ...note };
      if (d.required) required.push(name);
      if (d.json) encoding[name] = { contentType: 'application/json' };
    }
  }
  // Path parameters the route reads as a plain string (no decoder of its own).
  for (const name of inPath) if (!(name in route.params)) parameters.push({ name, in: 'path', required: true, schema: { type: 'string' } });
  if (inQuery) return { parameters };
  const object: JsonSchema = { type: 'object', properties: body, ...(required.length ? { required } : {}) };
  if (route.files) {
    object.properties = { ...body, file: { type: 'string', contentMediaType: 'application/octet-stream', description: 'The file (any field name; one file).' } };
    return { parameters, requestBody: { required: true, content: { 'multipart/form-data': { schema: object, ...(Object.keys(encoding).length ? { encoding } : {}) } } } };
  }
  const content = { 'application/x-www-form-urlencoded': { schema: object, ...(Object.keys(encoding).length ? { encoding } : {}) } };
  return { parameters, ...(Object.keys(body).length ? { requestBody: { required: required.length > 0, content } } : {}) };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request: an invalid or missing parameter, or a request the server refuses',
  401: 'Missing, malformed or wrong credentials',
  403: 'Forbidden',
  404: 'Not found',
  405: 'Method not allowed on this path',
  413: 'Request body too large',
  415: 'Unsupported request body type',
  429: 'Over the rate limit: retry after `retry-after` seconds (also the Retry-After header; X-RateLimit-* headers give the budget)',
  500: 'Internal server error',
  503: 'The server could not answer in time; try again (Retry-After)',
};

/** Each status's usual answer (the first code listed for it, 400 aside): described once, under components.responses, and referred to where it is a route's only code for the status. */
const SHARED_RESPONSES: Partial<Record<number, ErrorCode>> = {};
for (const [code, status] of [...COMMON_ERRORS, ...AUTH_ERRORS]) if (status !== 400) SHARED_RESPONSES[status] ??= code;

const errorResponse = (status: number, codes: ErrorCode[]): JsonSchema => {
  const refs = codes.map((c) => ({ $ref: `#/components/schemas/${errorSchemaId(c)}` }));
  return { description: STATUS_TEXT[status] ?? 'Error', content: { 'application/json': { schema: refs.length === 1 ? refs[0] : { oneOf: refs } } } };
};

function responsesOf(route: Route, responses: RouteResponses, successId: string): JsonSchema {
  const out: Record<string, JsonSchema> = {};
  if (responses.binary === 'application/json') out['200'] = { description: 'Success', content: { 'application/json': { schema: { type: 'object' } } } };
  else if (responses.binary) out['200'] = { description: 'The bytes', content: { [responses.binary]: { schema: { type: 'string', contentMediaType: responses.binary } } } };
  else out['200'] = { description: 'Success', content: { 'application/json': { schema: { $ref: `#/components/schemas/${successId}` } } } };
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const [code, status] of errorCases(route, responses)) {
    if (!byStatus.has(status)) byStatus.set(status, new Set());
    byStatus.get(status)!.add(code);
  }
  for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    const shared = SHARED_RESPONSES[status];
    if (shared && codes.size === 1 && codes.has(shared)) {
      out[String(status)] = { $ref: `#/components/responses/Error${status}` };
      continue;
    }
    out[String(status)] = errorResponse(status, [...codes]);
  }
  return out;
}

/**
 * A route missing from the response catalog: described as an open success,
 * so the document still serves; `test/openapi.test.ts` and check mode report
 * the gap.
 */
const undescribed = (): RouteResponses => ({ success: z.object({ result: z.literal('success'), msg: z.literal('') }).catchall(z.unknown()).meta({ description: 'Not described yet.' }), errors: [] });

/** The OpenAPI 3.1 document for `routes`. */
export function buildDocument(routes: readonly Route[], featureLevel: number): Record<string, unknown> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(SHARED)) registry.add(schema, { id });
  for (const code of ERROR_CODES) if (!registry.has(ERROR_ENVELOPES[code])) registry.add(ERROR_ENVELOPES[code], { id: errorSchemaId(code) });
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const responses = RESPONSES[routeKey(route)] ?? undescribed();
    const id = operationId(route);
    if (responses.success) registry.add(responses.success, { id: `${id}_response` });
    const { parameters, requestBody } = parametersOf(route);
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      operationId: id,
      tags: [route.path.split('/')[1]!],
      ...(route.auth === 'none' ? { security: [] } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(requestBody ? { requestBody } : {}),
      responses: responsesOf(route, responses, `${id}_response`),
    };
  }
  const { schemas } = z.toJSONSchema(registry, { target: 'draft-2020-12', uri: (id) => `#/components/schemas/${id}` });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Parley API',
      version: `${SERVER_VERSION} (feature level ${featureLevel})`,
      description: "A team-chat server speaking Zulip's REST API. Parameters are form-encoded (query string for GET and DELETE); lists, objects and booleans are sent as JSON text. Every reply is a JSON envelope with `result` and `msg`.",
      'x-service-feature-level': featureLevel,
    },
    servers: [{ url: '/api/v1' }],
    security: [{ basicAuth: [] }],
    paths,
    components: {
      responses: Object.fromEntries(Object.entries(SHARED_RESPONSES).map(([status, code]) => [`Error${status}`, errorResponse(Number(status), [code!])])),
      securitySchemes: { basicAuth: { type: 'http', scheme: 'basic', description: 'The user\'s email address as the user name and their API key as the password.' } },
      schemas: tidy(schemas),
    },
  };
}
