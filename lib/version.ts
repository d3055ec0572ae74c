/** The server's version, reported beside its feature level (`lib/features.ts`). */
export const SERVER_VERSION = '0.2.0';
