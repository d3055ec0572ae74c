/** Every demo role (and no credentials), for tests that check an operation's outcome per role. */
import type { Api } from './api.ts';
import type { DemoKey, TestServer } from './server.ts';

export const ROLE_KEYS = ['owner', 'admin', 'moderator', 'member1', 'guest', 'bot'] as const;

/** The API as each role, plus `anonymous` without credentials. */
export function asRoles(s: TestServer): Array<[DemoKey | 'anonymous', Api]> {
  return [...ROLE_KEYS.map((k): [DemoKey, Api] => [k, s.api.as(s.demo[k])]), ['anonymous', s.api]];
}

/** Asserts an error envelope with its status and code (and message, when given). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function isError(t: any, r: { status: number; body: Record<string, any> }, status: number, code: string, msg?: RegExp, what = '') {
  t.equal(r.status, status, `${what} status`);
  t.equal(r.body.result, 'error', `${what} result`);
  t.equal(r.body.code, code, `${what} code`);
  if (msg) t.match(r.body.msg, msg, `${what} msg`);
}
