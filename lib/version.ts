/**
 * Which release of Parley this process runs, and when it started.
 *
 * A deploy is a change of release: operators name each release with
 * `PARLEY_VERSION` (their image tag, a `git describe`), checked by
 * `lib/config.ts`; without it the version is the one built in here. An event
 * queue remembers the release it was registered under (`Release`), and a
 * process of another release that comes to serve it (a shard handed over in a
 * rolling deploy, queues reloaded after an embedded restart) gives it one
 * `restart` event (`actors/queue/actor.ts`).
 */

/** The version built into this code, when the operator names none. */
const BUILT_VERSION = '0.2.0';

/** What `PARLEY_VERSION` may be: a short printable name without spaces (`lib/config.ts` refuses others at start). */
export const VERSION_PATTERN = /^[\w.+~-]{1,64}$/;

/** The server's version, reported beside its feature level (`lib/features.ts`) as `zulip_version` and `zulip_merge_base`. */
export const SERVER_VERSION = process.env.PARLEY_VERSION && VERSION_PATTERN.test(process.env.PARLEY_VERSION) ? process.env.PARLEY_VERSION : BUILT_VERSION;

/**
 * When this server process started, in seconds (Zulip's `SERVER_GENERATION`,
 * `server_generation` in POST /register and in `restart` events): a client
 * that sees it change knows the server restarted.
 */
export const SERVER_GENERATION = Math.floor(Date.now() / 1000);

/** A release as clients see it: its version and the feature level it advertises. */
export interface Release {
  version: string;
  featureLevel: number;
}

export const sameRelease = (a: Release | null | undefined, b: Release): boolean => a?.version === b.version && a.featureLevel === b.featureLevel;
