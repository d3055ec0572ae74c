import type { Logger } from 'pino';
import type { Release } from '../../lib/version.ts';
import type { Store } from '../../storage/store.ts';
import type { TimerRecord } from '../../storage/tables.ts';
import type { Delivery } from '../events/delivery.ts';
import type { Announcement } from './action.ts';
import type { ActorClient } from './client.ts';

/** The in-memory side of a shard's durable timers (see `timers.ts`). */
export interface TimerWheel {
  /** A timer that is now durable: run it when due. */
  schedule(t: TimerRecord): void;
  /** A timer whose deletion is now durable: do not run it. */
  cancel(t: TimerRecord): void;
}

/** Per-user caps on what a user may hold or make (`docs/architecture.md`, Limits). */
export interface ActorLimits {
  /** Live event queues per user. */
  maxQueuesPerUser: number;
  /** Channels a user may create: `max` per `windowSecs` (a budget, as the gateway's rate limits). */
  channelCreation: { max: number; windowSecs: number };
}

/** The defaults of `PARLEY_MAX_QUEUES_PER_USER` and `PARLEY_CHANNEL_CREATION_LIMIT`: 100 channels at once, then one more every 6 s. */
export const DEFAULT_ACTOR_LIMITS: ActorLimits = { maxQueuesPerUser: 100, channelCreation: { max: 100, windowSecs: 600 } };

/** What the runtime gives an actor. */
export interface ActorContext {
  /** For reads; writes go through the actor's `Tx`. */
  store: Store;
  /** The shard the actor lives in. */
  shard: number;
  /** Calls other actors (the realm actor never calls a user actor: calls go one way). */
  actors: ActorClient;
  /** Sends events to the queue actors of the recipients; called only once the change is durable. */
  publish(delivery: Delivery): void;
  /** Publishes a `Tx.announce` to every listening process; called only once the change is durable. */
  announce(a: Announcement): void;
  timers: TimerWheel;
  siteUrl: string;
  /** Seconds a long poll waits before it gets a heartbeat. */
  heartbeatSecs: number;
  /** Per-user caps the actors enforce (`PARLEY_MAX_QUEUES_PER_USER`, `PARLEY_CHANNEL_CREATION_LIMIT`). */
  limits: ActorLimits;
  /** The release this process runs (`lib/version.ts`); null where the node was given none (unit tests): no restart events. */
  release: Release | null;
  log: Logger;
}
