/** A route: its method and path, its parameters' schema, and its handler. */
import type { z } from 'zod';
import type { Caller } from '../actors/protocol.ts';
import type { ActorClient } from './actors.ts';
import type { ParamShape } from './params.ts';

export interface CallContext {
  /** The authenticated user; null only on routes declared `auth: 'none'`. */
  caller: Caller | null;
  realmId: number;
  actors: ActorClient;
  /** Client name from the User-Agent (`ZulipPython/0.9` gives `ZulipPython`). */
  client: string;
  /** Tunables the routes need (long-poll timeout, queue lifetime). */
  limits: { longPollTimeoutMs: number; queueIdleSecs: number };
}

/** An actor's reply as JSON text, passed into the HTTP answer without decoding. */
export class RawJson {
  constructor(readonly text: string) {}
}

export type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

export interface Route<S extends ParamShape = ParamShape> {
  method: Method;
  path: string;
  /** `none`: no credentials needed (the handler gets no caller). */
  auth: 'required' | 'none';
  params: S;
  handle(ctx: CallContext, params: z.infer<z.ZodObject<S>>): Promise<Record<string, unknown> | RawJson>;
}

/** Declares a route with its parameter types inferred from its schema. */
export const route = <S extends ParamShape>(r: Route<S>): Route => r as unknown as Route;

/** The caller of a route that requires authentication. */
export function me(ctx: CallContext): Caller {
  if (!ctx.caller) throw new Error('route requires authentication but has no caller');
  return ctx.caller;
}
