/**
 * Helpers for the people suites: fresh users of any role (created by the
 * owner, promoted, logged in through POST /fetch_api_key), each call's
 * outcome as one short string for tables of expected outcomes per role, and
 * the demo roles in order.
 */
import { Api, type ApiResponse, type Creds, type Params, uniq } from './api.ts';
import type { TestServer } from './server.ts';

export interface Person extends Creds {
  userId: number;
  password: string;
  fullName: string;
}

export const ROLE = { owner: 100, admin: 200, moderator: 300, member: 400, guest: 600 } as const;

/** The demo users, one of every role, plus a caller without credentials. */
export const CALLERS = ['owner', 'admin', 'moderator', 'member', 'guest', 'bot', 'anonymous'] as const;
export type CallerName = (typeof CALLERS)[number];

/** Api clients for every caller of `CALLERS`. */
export function callers(s: TestServer): Record<CallerName, Api> {
  return {
    owner: s.api.as(s.demo.owner),
    admin: s.api.as(s.demo.admin),
    moderator: s.api.as(s.demo.moderator),
    member: s.api.as(s.demo.member1),
    guest: s.api.as(s.demo.guest),
    bot: s.api.as(s.demo.bot),
    anonymous: new Api(s.api.base),
  };
}

/** A fresh user of `role`, with a key from POST /fetch_api_key. */
export async function newPerson(s: TestServer, role: number = ROLE.member, name = 'Test Person'): Promise<Person> {
  const owner = s.api.as(s.demo.owner);
  const email = `${uniq('p')}@parley.example`;
  const password = `pw-${uniq('secret')}`;
  const fullName = `${name} ${uniq('n').slice(-6)}`;
  const { user_id } = await owner.ok('POST', '/users', { email, password, full_name: fullName });
  if (role !== ROLE.member) await owner.ok('PATCH', `/users/${user_id}`, { role });
  const key = await new Api(s.api.base).ok('POST', '/fetch_api_key', { username: email, password });
  return { email, apiKey: key.api_key, userId: user_id, password, fullName };
}

/** `ok`, or `<status> <code>` and, with `withMsg`, the message: one string to compare. */
export function outcome(r: ApiResponse, withMsg = false): string {
  if (r.status === 200 && r.body.result === 'success') return 'ok';
  return `${r.status} ${r.body.code}${withMsg ? ` ${r.body.msg}` : ''}`;
}

/** Calls `method path` as every caller (in order, one at a time) and returns each outcome. */
export async function asEveryone(s: TestServer, method: string, path: string | ((who: CallerName) => string), params: Params | ((who: CallerName) => Params | Promise<Params>) = {}, withMsg = false): Promise<Record<CallerName, string>> {
  const apis = callers(s);
  const out = {} as Record<CallerName, string>;
  for (const who of CALLERS) {
    const p = typeof params === 'function' ? await params(who) : params;
    const url = typeof path === 'function' ? path(who) : path;
    out[who] = outcome(await apis[who].call(method, url, p), withMsg);
  }
  return out;
}
