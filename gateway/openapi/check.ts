/**
 * Check mode for replies (`PARLEY_CHECK=1`, set by the test suites): the
 * gateway validates every JSON reply it writes under /api/v1, success and
 * error, against the route's response schema (`responses.ts`, the same zod
 * schemas the OpenAPI document is made from). A violation is logged and
 * appended to `PARLEY_RESPONSE_VIOLATIONS_FILE`, which `test/run.sh`
 * requires to be empty. Outside check mode nothing here runs.
 */
import { appendFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ErrorCode } from '../../lib/errors.ts';
import type { Route } from '../route.ts';
import { ERROR_CODES, ERROR_ENVELOPES } from './envelope.ts';
import { errorCases, RESPONSES, routeKey } from './responses.ts';

export const RESPONSE_CHECK = process.env.PARLEY_CHECK === '1';
const FILE = process.env.PARLEY_RESPONSE_VIOLATIONS_FILE;
const BODY_LIMIT = 2000;

/** Any error envelope: for requests that matched no route (404, 405 before a route is known). */
const AnyError = z.union(ERROR_CODES.map((c) => ERROR_ENVELOPES[c]) as unknown as [z.ZodType, z.ZodType, ...z.ZodType[]]);

function violation(log: Logger, v: { method: string; path: string; url: string; status: number; issues: string; body: string }): void {
  log.error({ method: v.method, path: v.path, status: v.status, issues: v.issues }, 'reply breaks the API description');
  if (FILE) appendFileSync(FILE, `${JSON.stringify({ ...v, body: v.body.length > BODY_LIMIT ? `${v.body.slice(0, BODY_LIMIT)}…` : v.body, pid: process.pid })}\n`);
}

/** Why `body` is not a reply `route` may give with `status`, or null when it is. */
export function responseIssues(route: Route | null, status: number, body: unknown): string | null {
  if (!route) {
    if (status < 400) return `a ${status} reply to a request that matched no route`;
    const r = AnyError.safeParse(body);
    return r.success ? null : z.prettifyError(r.error);
  }
  const responses = RESPONSES[routeKey(route)];
  if (!responses) return `no responses described for ${routeKey(route)}`;
  if (status === 200) {
    if (!responses.success) return 'a JSON reply from a route described as answering bytes';
    const r = responses.success.safeParse(body);
    return r.success ? null : z.prettifyError(r.error);
  }
  const code = (body as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !(ERROR_CODES as readonly string[]).includes(code)) return `an error reply without a known code (status ${status})`;
  if (!errorCases(route, responses).some(([c, s]) => c === code && s === status)) return `${code} with status ${status} is not among the route's documented errors`;
  const r = ERROR_ENVELOPES[code as ErrorCode].safeParse(body);
  return r.success ? null : z.prettifyError(r.error);
}

/** Validates one JSON reply as the gateway writes it; records a violation. */
export function checkResponse(route: Route | null, method: string, url: string, status: number, text: string, log: Logger): void {
  let body: unknown;
  let issues: string | null;
  try {
    body = JSON.parse(text);
    issues = responseIssues(route, status, body);
  } catch (err) {
    issues = `not JSON: ${(err as Error).message}`;
  }
  if (issues) violation(log, { method, path: route?.path ?? url, url, status, issues, body: text });
}
