/** A route: its method and path, its parameters' schema, and its handler. */
import type { z } from 'zod';
import type { JsonPieces } from '../actors/runtime/bus.ts';
import type { ActorClient, RawJson } from '../actors/runtime/client.ts';
import type { Caller } from '../actors/runtime/action.ts';
import type { Authenticated } from '../actors/realm/actions/people/users.ts';
import type { OrganizationRecord } from '../storage/tables.ts';
import type { ParamShape, UploadedFile } from './params.ts';
import type { PerSecond } from './shared-replies.ts';

export interface CallContext {
  /** The authenticated user; null only on routes declared `auth: 'none'`. */
  user: Authenticated | null;
  /** The organization of the request's host (0 only on routes declared `organization: 'optional'` when there is none). */
  realmId: number;
  /** That organization, as the gateway's directory knows it; null only on `organization: 'optional'` routes. */
  organization: OrganizationRecord | null;
  /** The organization's URL (links in mail and pages point there). */
  realmUrl: string;
  actors: ActorClient;
  /** Client name from the User-Agent (`ZulipPython/0.9` gives `ZulipPython`). */
  client: string;
  /** The raw User-Agent header and the client's address (the new-login email names them). */
  userAgent?: string;
  ip?: string;
  /** Tunables the routes need (long-poll timeout, queue lifetime). */
  limits: { longPollTimeoutMs: number; queueIdleSecs: number };
  /** The feature level this server implements (`lib/features.ts`). */
  featureLevel: number;
  /** Files of a multipart body, for routes declared with `files: true` (empty otherwise). */
  files: UploadedFile[];
  /** Whether the client takes a gzip answer (its Accept-Encoding): a route answering `JsonPieces` may then give deflated pieces. */
  acceptsGzip: boolean;
  /** The web app's presence-ping answers, fetched by this gateway at most once a second per organization and form (`gateway/shared-replies.ts`). */
  presenceAnswers: PerSecond<RawJson>;
}

/** A reply that is not JSON: a file's bytes with their type (GET /user_uploads/...). */
export class BinaryReply {
  constructor(
    readonly contentType: string,
    readonly data: Buffer,
    readonly headers: Record<string, string> = {},
  ) {}
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A handler's reply may name more ignored parameters (parts of a parameter, such as unhonored client capabilities) under this key. */
export const IGNORED = Symbol('ignored');

export interface Route<S extends ParamShape = ParamShape> {
  method: Method;
  /** The path under /api/v1; `{name}` segments are path parameters, passed with the others. */
  path: string;
  /** The last path parameter takes the rest of the path, slashes included (Zulip's `<path:...>`, as in `/navigation_views/narrow/is/starred`). */
  pathTail?: boolean;
  /** `none`: no credentials needed (the handler gets no user). */
  auth: 'required' | 'none';
  /** `optional`: also served for a host that names no organization, or a deactivated one (GET /server_settings); others answer NONEXISTENT_SUBDOMAIN / REALM_DEACTIVATED. */
  organization?: 'optional';
  /** Takes credentials as parameters (a password, a token): counted as failed authentication when it answers 401, and refused while the address has used up its failures (`gateway/rate_limits.ts`). */
  checksCredentials?: boolean;
  params: S;
  /** Takes files in a multipart body (other routes refuse them). */
  files?: boolean;
  /** A body limit of its own (uploads), instead of the gateway's. */
  maxBodyBytes?: number;
  /** Its answer is the same text for many callers (everyone's presence): encoded and gzipped once (`gateway/shared-replies.ts`). */
  sharedReply?: boolean;
  handle(ctx: CallContext, params: z.infer<z.ZodObject<S>>): Promise<Record<string, unknown> | RawJson | JsonPieces | BinaryReply>;
}

/** Declares a route with its parameter types inferred from its schema. */
export const route = <S extends ParamShape>(r: Route<S>): Route => r as unknown as Route;

/** The authenticated user of a route that requires authentication. */
export function me(ctx: CallContext): Authenticated {
  if (!ctx.user) throw new Error('route requires authentication but has no user');
  return ctx.user;
}

/** The caller field of an actor message sent on behalf of the authenticated user. */
export function caller(ctx: CallContext): Caller {
  const u = me(ctx);
  return { realmId: u.realmId, userId: u.userId };
}

/** The caller field of an actor message sent by the server itself (no user). */
export const serverCaller = (ctx: CallContext): Caller => ({ realmId: ctx.realmId, userId: null });
