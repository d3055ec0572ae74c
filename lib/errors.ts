/**
 * The error catalog: one class per API condition, each with its `code`, HTTP
 * status and extra fields. Errors cross the bus as plain data (`toWire`) and
 * are rebuilt on the other side (`fromWire`), never flattened to a string.
 */

export type ErrorCode =
  | 'BAD_REQUEST'
  | 'REQUEST_VARIABLE_MISSING'
  | 'BAD_NARROW'
  | 'STREAM_DOES_NOT_EXIST'
  | 'CHANNEL_ALREADY_EXISTS'
  | 'STREAM_WILDCARD_MENTION_NOT_ALLOWED'
  | 'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED'
  | 'INVALID_PUSH_DEVICE_TOKEN'
  | 'NO_ACTIVE_PUSH_DEVICE'
  | 'PUSH_SERVICE_NOT_CONFIGURED'
  | 'TOPIC_WILDCARD_MENTION_NOT_ALLOWED'
  | 'UNAUTHORIZED_PRINCIPAL'
  | 'CANNOT_DEACTIVATE_LAST_USER'
  | 'EXPECTATION_MISMATCH'
  | 'CANNOT_DEACTIVATE_GROUP_IN_USE'
  | 'USER_DEACTIVATED'
  | 'REALM_DEACTIVATED'
  | 'NONEXISTENT_SUBDOMAIN'
  | 'AUTHENTICATION_FAILED'
  | 'BAD_EVENT_QUEUE_ID'
  | 'UNAUTHORIZED'
  | 'AUTHENTICATION_FAILED'
  | 'USER_DEACTIVATED'
  | 'INVITATION_FAILED'
  | 'REACTION_ALREADY_EXISTS'
  | 'REACTION_DOES_NOT_EXIST'
  | 'INVALID_VIDEOPROVIDER_TOKEN'
  | 'REQUEST_TOO_LARGE'
  | 'RATE_LIMIT_HIT'
  | 'SERVICE_UNAVAILABLE'
  | 'INTERNAL_SERVER_ERROR';

/** A JSON value, as extra fields may carry (INVITATION_FAILED's `errors`, a validation error's `errors`). */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** Extra fields an error adds to the envelope, beside result/msg/code. */
export type ErrorExtra = Record<string, JsonValue>;

/** The plain-data form of an ApiError, as it crosses the bus. */
export interface WireError {
  code: ErrorCode;
  msg: string;
  status: number;
  extra?: ErrorExtra;
  /** Internal: the request was not run and may be sent again (a shard moving). Never shown to clients. */
  retryable?: boolean;
}

/** An error the API reports in its envelope. */
export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    msg: string,
    readonly status: number = 400,
    readonly extra: ErrorExtra = {},
    readonly headers: Record<string, string> = {},
    /** Internal: nothing was done, so the caller may send the request again (see `shardMoving`). */
    readonly retryable = false,
  ) {
    super(msg);
    this.name = 'ApiError';
  }

  toWire(): WireError {
    return { code: this.code, msg: this.message, status: this.status, extra: this.extra, ...(this.retryable ? { retryable: true } : {}) };
  }

  static fromWire(w: WireError): ApiError {
    return new ApiError(w.code, w.msg, w.status, w.extra ?? {}, statusHeaders(w.status, w.extra ?? {}), w.retryable === true);
  }

  /** The same error without the internal retry hint, as a client gets it. */
  forClient(): ApiError {
    return this.retryable ? new ApiError(this.code, this.message, this.status, this.extra, this.headers) : this;
  }

  envelope(): Record<string, unknown> {
    return { result: 'error', msg: this.message, code: this.code, ...this.extra };
  }
}

/** Headers that go with a status wherever the error was raised. */
function statusHeaders(status: number, extra: ErrorExtra = {}): Record<string, string> {
  if (status === 401) return { 'WWW-Authenticate': 'Basic realm="zulip"' };
  if (status === 503) return { 'Retry-After': '1' };
  // Whole seconds, at least 1; the body's `retry-after` keeps the fraction.
  if (status === 429) return { 'Retry-After': String(Math.max(1, Math.ceil(Number(extra['retry-after']) || 0))) };
  return {};
}

/** Generic invalid request: missing or invalid parameter, unknown user, etc. */
export const badRequest = (msg: string, extra: ErrorExtra = {}): ApiError =>
  new ApiError('BAD_REQUEST', msg, 400, extra);

/** A required parameter is absent (Zulip's RequestVariableMissingError). */
export const missingParam = (name: string): ApiError =>
  new ApiError('REQUEST_VARIABLE_MISSING', `Missing '${name}' argument`, 400, { var_name: name });

/** A parameter is present but malformed. */
export const invalidParam = (name: string, why: string): ApiError =>
  badRequest(`Invalid ${name}: ${why}`, { var_name: name });

/** The target channel does not exist; `stream` names what was asked for. */
export const streamDoesNotExist = (stream: string): ApiError =>
  new ApiError('STREAM_DOES_NOT_EXIST', `Channel '${stream}' does not exist`, 400, { stream });

/** The caller must be an organization administrator. */
export const adminRequired = (): ApiError =>
  new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);

/**
 * The event queue was discarded or never existed (or belongs to someone
 * else). `oldText`: Zulip's wording before 2022, "Bad event queue id", for
 * clients that recognize the error by its text (`gateway/routes/events.ts`).
 */
export const badEventQueue = (queueId: string, oldText = false): ApiError =>
  new ApiError('BAD_EVENT_QUEUE_ID', `Bad event queue ${oldText ? 'id' : 'ID'}: ${queueId}`, 400, { queue_id: queueId });

/** A narrow the server cannot apply. */
export const badNarrow = (msg: string): ApiError => new ApiError('BAD_NARROW', msg, 400);

/** Missing, undecodable or wrong credentials (401 with a WWW-Authenticate challenge). */
export const unauthorized = (msg: string): ApiError => new ApiError('UNAUTHORIZED', msg, 401, {}, statusHeaders(401));

/** Zulip's RealmDeactivatedError: every authenticated request of a deactivated organization. */
export const realmDeactivated = (): ApiError => new ApiError('REALM_DEACTIVATED', 'This organization has been deactivated', 401, {}, statusHeaders(401));

/** Zulip's InvalidSubdomainError: a request to a host that names no organization. */
export const invalidSubdomain = (): ApiError => new ApiError('NONEXISTENT_SUBDOMAIN', 'Invalid subdomain', 404);


/** Over a rate limit or a budget: 429 with `retry-after` (seconds) in the body and the Retry-After header, as Zulip answers. */
export function rateLimitHit(msg: string, retryAfterSecs: number, headers: Record<string, string> = {}): ApiError {
  const extra = { 'retry-after': retryAfterSecs };
  return new ApiError('RATE_LIMIT_HIT', msg, 429, extra, { ...headers, ...statusHeaders(429, extra) });
}

/** A dependency (bus, actor, store) could not answer in time: retry later. */
export const unavailable = (msg: string, extra: ErrorExtra = {}): ApiError => new ApiError('SERVICE_UNAVAILABLE', msg, 503, extra, statusHeaders(503));

/** This node does not (or no longer) own the shard and did nothing: the caller may retry at once. */
export const shardMoving = (): ApiError => new ApiError('SERVICE_UNAVAILABLE', 'Shard is moving; try again', 503, {}, statusHeaders(503), true);

/** Normalizes anything thrown into an ApiError; unknown errors become a 500. */
export function asApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  return new ApiError('INTERNAL_SERVER_ERROR', 'Internal server error', 500);
}
