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

export class ActorClient {
  constructor(
    private readonly bus: Bus,
    private readonly shards: number,
    private readonly timeoutMs: number,
  ) {}

  realm<T = Record<string, unknown>>(realmId: number, msg: RealmMsg): Promise<T> {
    return this.call(subjects.realm(shardOf('realm', realmId, this.shards), realmId), msg, this.timeoutMs);
  }

  user<T = Record<string, unknown>>(userId: number, msg: UserMsg): Promise<T> {
    return this.call(subjects.user(shardOf('user', userId, this.shards), userId), msg, this.timeoutMs);
  }

  queue<T = Record<string, unknown>>(userId: number, msg: QueueMsg, timeoutMs = this.timeoutMs): Promise<T> {
    return this.call(subjects.queue(shardOf('queue', userId, this.shards), userId), { userId, msg }, timeoutMs);
  }

  private async call<T>(subject: string, body: unknown, timeoutMs: number): Promise<T> {
    try {
      return (await this.bus.request(subject, body, timeoutMs)) as T;
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (err instanceof BusError) {
        throw unavailable(err.reason === 'timeout' ? 'The server took too long to answer; try again' : 'The server is busy or restarting; try again');
      }
      throw err;
    }
  }
}
