/**
 * How the gateway reaches actors: one bus request per call, to the subject
 * of the shard the actor hashes to. Bus failures (no owner for the shard, a
 * timeout, too many requests in flight) become 503 errors the client can
 * retry; they never hang.
 */
import { ApiError, unavailable } from '../lib/errors.ts';
import type { Bus } from '../actors/runtime/bus.ts';
import { BusError } from '../actors/runtime/bus.ts';
import type { QueueMsg, RealmMsg, UserMsg } from '../actors/protocol.ts';
import { shardOf, subjects } from '../actors/subjects.ts';
import { RawJson } from './route.ts';

/** How long a request may wait for a moving shard to get its new owner. */
const RETRY_BUDGET_MS = 3000;

export class ActorClient {
  constructor(
    private readonly bus: Bus,
    private readonly shards: number,
    private readonly timeoutMs: number,
  ) {}

  realm<T = Record<string, unknown>>(realmId: number, msg: RealmMsg): Promise<T> {
    return this.decoded(this.realmRaw(realmId, msg));
  }

  user<T = Record<string, unknown>>(userId: number, msg: UserMsg): Promise<T> {
    return this.decoded(this.userRaw(userId, msg));
  }

  queue<T = Record<string, unknown>>(userId: number, msg: QueueMsg, timeoutMs = this.timeoutMs): Promise<T> {
    return this.decoded(this.queueRaw(userId, msg, timeoutMs));
  }

  /** The realm actor's reply, undecoded, for a route that only forwards it. */
  async realmRaw(realmId: number, msg: RealmMsg): Promise<RawJson> {
    return new RawJson(await this.call(subjects.realm(shardOf('realm', realmId, this.shards), realmId), msg, this.timeoutMs));
  }

  async userRaw(userId: number, msg: UserMsg): Promise<RawJson> {
    return new RawJson(await this.call(subjects.user(shardOf('user', userId, this.shards), userId), msg, this.timeoutMs));
  }

  async queueRaw(userId: number, msg: QueueMsg, timeoutMs = this.timeoutMs): Promise<RawJson> {
    return new RawJson(await this.call(subjects.queue(shardOf('queue', userId, this.shards), userId), { userId, msg }, timeoutMs));
  }

  private async decoded<T>(raw: Promise<RawJson>): Promise<T> {
    return JSON.parse((await raw).text) as T;
  }

  /**
   * One bus request. While a shard moves it may have no owner for a moment
   * (no responders) or reach a node that just let it go (a `retryable` 503);
   * neither ran the request, so it is retried for up to RETRY_BUDGET_MS.
   * A timeout is not retried: the actor may have done the work.
   */
  private async call(subject: string, body: unknown, timeoutMs: number): Promise<string> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.bus.requestText(subject, body, timeoutMs);
      } catch (err) {
        const retryable = (err instanceof BusError && err.reason === 'no_responders') || (err instanceof ApiError && err.extra.retryable === true);
        if (retryable && Date.now() - started < RETRY_BUDGET_MS) {
          await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** attempt, 400)));
          continue;
        }
        if (err instanceof ApiError) throw err;
        if (err instanceof BusError) {
          throw unavailable(err.reason === 'timeout' ? 'The server took too long to answer; try again' : 'The server is busy or restarting; try again');
        }
        throw err;
      }
    }
  }
}
