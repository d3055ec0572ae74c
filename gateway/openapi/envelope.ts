/**
 * The two envelopes of every API reply, as zod schemas: success (`result`,
 * an empty `msg`, the route's fields and `ignored_parameters_unsupported`
 * when a parameter had no effect) and error (`result`, `msg`, `code` and the
 * extra fields of that code, `lib/errors.ts`). Strict: a key not described
 * here is a violation in check mode.
 */
import { z } from 'zod';
import type { ErrorCode } from '../../lib/errors.ts';

export const Id = z.number().int();

/** A success reply: the envelope around a route's fields. */
export const success = <S extends z.ZodRawShape>(fields: S) =>
  z
    .object({
      result: z.literal('success'),
      msg: z.literal(''),
      ...fields,
      /** Parameters the request carried that had no effect (FL 167). */
      ignored_parameters_unsupported: z.array(z.string()).optional(),
    })
    .strict();

/** Every error code of `lib/errors.ts`, as a value. */
export const ERROR_CODES = [
  'BAD_REQUEST',
  'REQUEST_VARIABLE_MISSING',
  'BAD_NARROW',
  'STREAM_DOES_NOT_EXIST',
  'STREAM_WILDCARD_MENTION_NOT_ALLOWED',
  'MOVE_MESSAGES_TIME_LIMIT_EXCEEDED',
  'TOPIC_WILDCARD_MENTION_NOT_ALLOWED',
  'UNAUTHORIZED_PRINCIPAL',
  'CANNOT_DEACTIVATE_LAST_USER',
  'EXPECTATION_MISMATCH',
  'CANNOT_DEACTIVATE_GROUP_IN_USE',
  'USER_DEACTIVATED',
  'REALM_DEACTIVATED',
  'NONEXISTENT_SUBDOMAIN',
  'AUTHENTICATION_FAILED',
  'BAD_EVENT_QUEUE_ID',
  'UNAUTHORIZED',
  'INVITATION_FAILED',
  'REACTION_ALREADY_EXISTS',
  'REACTION_DOES_NOT_EXIST',
  'INVALID_VIDEOPROVIDER_TOKEN',
  'REQUEST_TOO_LARGE',
  'RATE_LIMIT_HIT',
  'SERVICE_UNAVAILABLE',
  'INTERNAL_SERVER_ERROR',
  'INVALID_PUSH_DEVICE_TOKEN',
  'NO_ACTIVE_PUSH_DEVICE',
  'PUSH_SERVICE_NOT_CONFIGURED',
  'CHANNEL_ALREADY_EXISTS',
] as const satisfies readonly ErrorCode[];
// A code added to lib/errors.ts and not here fails to compile.
type Missing = Exclude<ErrorCode, (typeof ERROR_CODES)[number]>;
const allListed: [Missing] extends [never] ? true : Missing = true;
void allListed;

/** The extra fields each code adds beside result, msg and code (none unless listed). */
const EXTRA: Partial<Record<ErrorCode, z.ZodRawShape>> = {
  BAD_REQUEST: {
    /** The parameter that is missing or invalid. */
    var_name: z.string().optional(),
    /** Per-field messages (linkifiers). */
    errors: z.record(z.string(), z.array(z.string())).optional(),
  },
  /** The parameter that is missing. */
  REQUEST_VARIABLE_MISSING: { var_name: z.string() },
  STREAM_DOES_NOT_EXIST: { stream: z.string().optional(), stream_id: Id.optional() },
  BAD_EVENT_QUEUE_ID: { queue_id: z.string() },
  /** How many of the topic's most recent messages the user may move (FL 172). */
  MOVE_MESSAGES_TIME_LIMIT_EXCEEDED: { first_message_id_allowed_to_move: Id.nullable(), total_messages_allowed_to_move: z.number().int().nonnegative(), total_messages_in_topic: z.number().int().nonnegative() },
  /** Seconds until one more request is allowed (also the Retry-After header, rounded up). */
  RATE_LIMIT_HIT: { 'retry-after': z.number().nonnegative() },
  CANNOT_DEACTIVATE_LAST_USER: { is_last_owner: z.boolean(), entity: z.string() },
  CANNOT_DEACTIVATE_GROUP_IN_USE: { objections: z.array(z.record(z.string(), z.unknown())) },
  INVITATION_FAILED: {
    /** Each address that was not invited: the address, why, and whether it belongs to a deactivated user. */
    errors: z.array(z.tuple([z.string(), z.string(), z.boolean()])),
    sent_invitations: z.boolean(),
    license_limit_reached: z.boolean(),
    daily_limit_reached: z.boolean(),
  },
};

/** The error envelope of one code. */
export const errorEnvelope = (code: ErrorCode) =>
  z
    .object({
      result: z.literal('error'),
      msg: z.string(),
      code: z.literal(code),
      ...(EXTRA[code] ?? {}),
    })
    .strict();

export const ERROR_ENVELOPES = Object.fromEntries(ERROR_CODES.map((c) => [c, errorEnvelope(c)])) as Record<ErrorCode, ReturnType<typeof errorEnvelope>>;

/** An error a route may answer: its code and HTTP status. */
export type ErrorCase = readonly [ErrorCode, number];

/**
 * What any route may answer: an invalid or missing parameter, an unknown
 * method (405) or body type (415), a body over the limit, a client over its
 * rate limit (429), and a server that cannot answer now (503) or failed (500).
 */
export const COMMON_ERRORS: readonly ErrorCase[] = [
  ['BAD_REQUEST', 400],
  ['REQUEST_VARIABLE_MISSING', 400],
  ['BAD_REQUEST', 405],
  ['BAD_REQUEST', 415],
  ['REQUEST_TOO_LARGE', 413],
  ['RATE_LIMIT_HIT', 429],
  ['INTERNAL_SERVER_ERROR', 500],
  ['SERVICE_UNAVAILABLE', 503],
  // A host that names no organization, or a deactivated one's (every route but GET /server_settings).
  ['NONEXISTENT_SUBDOMAIN', 404],
  ['REALM_DEACTIVATED', 401],
];

/** What a route that requires credentials may answer besides: missing, malformed or wrong ones, or a deactivated account's. */
export const AUTH_ERRORS: readonly ErrorCase[] = [
  ['UNAUTHORIZED', 401],
  ['USER_DEACTIVATED', 401],
  ['BAD_REQUEST', 400],
];
