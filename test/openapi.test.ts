// The API description: GET /api/v1/openapi.json serves a valid OpenAPI 3.1
// document that names every route with its parameters and responses, and
// real replies validate against it (the document's JSON Schema, not only the
// zod schemas it is made from). In check mode every reply of every suite is
// validated against the same schemas (gateway/openapi/check.ts).
import t from 'tap';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { ROUTES } from '../gateway/routes/index.ts';
import { describeParam, operationId } from '../gateway/openapi/document.ts';
import { responseIssues } from '../gateway/openapi/check.ts';
import { RESPONSES, routeKey } from '../gateway/openapi/responses.ts';
import { uniq } from './helpers/api.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const maria = s.api.as(s.demo.member1);

type Doc = {
  openapi: string;
  info: { version: string; 'x-service-feature-level': number };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown> };
};
type Operation = {
  operationId: string;
  security?: unknown[];
  parameters?: Array<{ name: string; in: string; required: boolean }>;
  requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown>; required?: string[] } }> };
  responses: Record<string, unknown>;
};

const res = await fetch(`${s.urls[0]}/api/v1/openapi.json`);
const doc = (await res.json()) as Doc;

t.test('openapi - the document is served without credentials and is valid OpenAPI 3.1', async (t) => {
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^application\/json/);
  t.equal(doc.openapi, '3.1.0');
  const result = await new Validator().validate(doc as never);
  t.ok(result.valid, 'the OpenAPI 3.1 schema accepts it');
  if (!result.valid) t.comment(JSON.stringify(result.errors).slice(0, 2000));
  const settings = await s.api.ok('GET', '/server_settings');
  t.equal(doc.info['x-service-feature-level'], settings.service_feature_level);
  t.match(doc.info.version, `${settings.service_version} (feature level ${settings.service_feature_level})`);
});

t.test('openapi - every route is in the document with its parameters and responses', async (t) => {
  for (const route of ROUTES) {
    const op = doc.paths[route.path]?.[route.method.toLowerCase()];
    if (!t.ok(op, `${routeKey(route)} is described`) || !op) continue;
    t.equal(op.operationId, operationId(route));
    t.equal(op.security?.length === 0, route.auth === 'none', `${routeKey(route)}: credentials ${route.auth}`);
    t.ok(op.responses['200'], `${routeKey(route)}: success`);
    t.ok(RESPONSES[routeKey(route)], `${routeKey(route)}: in the response catalog`);
    if (route.auth === 'required') t.ok(op.responses['401'], `${routeKey(route)}: 401`);
    t.ok(op.responses['400'], `${routeKey(route)}: 400`);
    const inPath = new Set([...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]));
    const form = Object.values(op.requestBody?.content ?? {})[0]?.schema;
    for (const [name, schema] of Object.entries(route.params)) {
      const param = op.parameters?.find((p) => p.name === name);
      if (inPath.has(name)) t.ok(param?.in === 'path' && param.required, `${routeKey(route)}: path parameter ${name}`);
      else if (route.method === 'GET' || route.method === 'DELETE') t.ok(param?.in === 'query' && param.required === describeParam(schema).required, `${routeKey(route)}: query parameter ${name}`);
      else {
        t.ok(form?.properties[name], `${routeKey(route)}: body parameter ${name}`);
        t.equal(form?.required?.includes(name) ?? false, describeParam(schema).required, `${routeKey(route)}: ${name} required or not`);
      }
    }
  }
  t.equal(Object.values(doc.paths).reduce((n, ops) => n + Object.keys(ops).length, 0), ROUTES.length, 'nothing else');
});

t.test('openapi - parameters say how they are written: JSON for lists and booleans, plain for strings and integers', async (t) => {
  const messages = doc.paths['/messages']!;
  const narrow = messages.get!.parameters!.find((p) => p.name === 'narrow') as unknown as { content?: Record<string, unknown> };
  t.ok(narrow.content?.['application/json'], 'GET: a JSON query parameter names its content type');
  const anchor = messages.get!.parameters!.find((p) => p.name === 'num_before') as unknown as { schema: { type: string } };
  t.equal(anchor.schema.type, 'integer');
  const send = messages.post!.requestBody!.content['application/x-www-form-urlencoded'] as unknown as { encoding: Record<string, { contentType: string }> };
  t.same(send.encoding.read_by_sender, { contentType: 'application/json' }, 'POST: a JSON body parameter has its encoding');
  t.notOk(send.encoding.content, 'a string is sent as it is');
  const upload = doc.paths['/user_uploads']!.post!.requestBody!.content;
  t.ok(upload['multipart/form-data'], 'uploads take a multipart body');
});

t.test('openapi - replies validate against the document', async (t) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajv.addSchema({ ...doc, $id: 'https://parley.test/openapi.json' });
  const validate = (method: string, path: string, status: number, body: unknown) => {
    const op = doc.paths[path]![method.toLowerCase()]!;
    const response = (op.responses[String(status)] ?? {}) as { $ref?: string; content?: { 'application/json': { schema: unknown } } };
    const schema = response.$ref
      ? (doc as unknown as { components: { responses: Record<string, { content: { 'application/json': { schema: unknown } } }> } }).components.responses[response.$ref.split('/').pop()!]!.content['application/json'].schema
      : response.content?.['application/json'].schema;
    if (!t.ok(schema, `${method} ${path} documents ${status}`)) return;
    // References in the document are relative to it: point them at the document added above.
    const check = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"https://parley.test/openapi.json#/components/')) as object);
    t.ok(check(body), `${method} ${path} ${status} validates: ${JSON.stringify(check.errors ?? []).slice(0, 500)}`);
    const route = ROUTES.find((r) => r.method === method && r.path === path)!;
    t.equal(responseIssues(route, status, body), null, `${method} ${path} ${status}: the zod schema agrees`);
  };
  const call = async (method: string, concrete: string, template: string, params: Record<string, unknown> = {}, api = maria) => {
    const r = await api.call(method, concrete, params as never);
    validate(method, template, r.status, r.body);
    return r;
  };
  await call('GET', '/users', '/users');
  await call('GET', '/users/me', '/users/me');
  await call('GET', '/users/me/subscriptions', '/users/me/subscriptions', { include_subscribers: 'true' });
  const topic = uniq('openapi');
  const sent = await call('POST', '/messages', '/messages', { type: 'stream', to: 'general', topic, content: 'described' });
  await call('GET', `/messages/${sent.body.id}`, '/messages/{message_id}');
  await call('GET', '/messages', '/messages', { anchor: 'newest', num_before: 5, num_after: 0, narrow: [{ operator: 'topic', operand: topic }] });
  await call('POST', '/register', '/register', {});
  await call('GET', '/server_settings', '/server_settings', {}, s.api);
  // Errors: a missing parameter, an unknown channel, no credentials.
  await call('POST', '/messages', '/messages', { type: 'stream', to: 'general' });
  await call('POST', '/messages', '/messages', { type: 'stream', to: uniq('nowhere'), topic, content: 'x' });
  await call('GET', '/users', '/users', {}, s.api);
});

t.test('openapi - check mode names what a reply breaks', async (t) => {
  const route = (method: string, path: string) => ROUTES.find((r) => r.method === method && r.path === path)!;
  const listUsers = route('GET', '/users');
  t.equal(responseIssues(listUsers, 200, { result: 'success', msg: '', members: [] }), null);
  t.equal(responseIssues(listUsers, 200, { result: 'success', msg: '', members: [], ignored_parameters_unsupported: ['x'] }), null, 'ignored parameters are part of the envelope');
  t.match(responseIssues(listUsers, 200, { result: 'success', msg: '', members: [], extra: 1 }), /extra/, 'a key not described');
  t.match(responseIssues(listUsers, 200, { result: 'success', msg: '' }), /members/, 'a missing field');
  t.equal(responseIssues(listUsers, 401, { result: 'error', msg: 'no', code: 'UNAUTHORIZED' }), null);
  t.match(responseIssues(listUsers, 400, { result: 'error', msg: 'no', code: 'INVITATION_FAILED', errors: [], sent_invitations: false, license_limit_reached: false, daily_limit_reached: false }), /not among the route's documented errors/);
  t.match(responseIssues(listUsers, 400, { result: 'error', msg: 'no', code: 'BAD_REQUEST', stray: true }), /stray/, 'error envelopes are strict too');
  t.equal(responseIssues(null, 404, { result: 'error', msg: 'Not Found', code: 'BAD_REQUEST' }), null, 'a path no route serves');
  t.match(responseIssues(null, 200, { result: 'success', msg: '' }), /matched no route/);
});
