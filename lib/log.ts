import { pino, type LoggerOptions } from 'pino';

/**
 * Secrets never reach the logs: credentials and keys are replaced wherever
 * they appear in a logged object, at the top or one level down (an `err`'s
 * fields, a request's `headers`, a message's fields).
 */
const SECRET_FIELDS = ['authorization', 'apiKey', 'api_key', 'key', 'password', 'passwordHash', 'new_password', 'old_password', 'token', 'secret', 'client_secret'];

/** A path segment that may be a token (invitation, confirmation and organization-creation links, 20+ URL-safe characters; a temporary upload URL's `<payload>.<signature>`). */
const TOKEN_SEGMENT = /\/[A-Za-z0-9_-]{20,}(\.[A-Za-z0-9_-]+)?(?=[/?#]|$)/g;

/** A logged `url` without the tokens its path may carry (`/new/<token>` → `/new/[redacted]`). */
const redactUrl = (url: unknown): unknown => (typeof url === 'string' ? url.replace(TOKEN_SEGMENT, '/[redacted]') : url);

export const logOptions: LoggerOptions = {
  level: process.env.PARLEY_LOG_LEVEL ?? 'info',
  base: { pid: process.pid, role: process.env.PARLEY_ROLE ?? 'all' },
  redact: { paths: SECRET_FIELDS.flatMap((f) => [f, `*.${f}`]), censor: '[redacted]' },
  serializers: { url: redactUrl },
};

/** The process logger; children add `component` so lines say who wrote them. */
export const log = pino(logOptions);
