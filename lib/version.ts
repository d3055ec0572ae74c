/** The server's version, reported beside its feature level (`lib/features.ts`). */
export const SERVER_VERSION = '0.2.0';

/**
 * When this server process started, in seconds (Zulip's `SERVER_GENERATION`,
 * `server_generation` in POST /register): a client that sees it change knows
 * the server restarted.
 */
export const SERVER_GENERATION = Math.floor(Date.now() / 1000);
