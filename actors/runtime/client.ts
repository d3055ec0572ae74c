/**
 * How gateways and actors reach actors: one bus request per call, to the
 * subject of the shard the actor's placement key hashes to. Bus failures (no
 * owner for the shard, a timeout, too many requests in flight) become 503
 * errors the client can retry; they never hang.
 */
import { ApiError, unavailable } from '../../lib/errors.ts';
import { busDuration, busErrors, type CounterChild, type HistogramChild, secondsSince } from '../../lib/metrics.ts';
import { shardOf, subjects } from '../subjects.ts';
import { type Bus, BusError, JsonPieces } from './bus.ts';
import { DEFAULT_LEASE_TTL_MS } from './leases.ts';
import type { ActorRef, MessageOf, ReplyFor } from './registry.ts';

/**
 * How long a request may wait for a moving shard to get its new owner, for
 * shard leases of `leaseTtlMs`. After a kill -9 the dead owner's lease
 * lapses within its TTL; another node takes it at its next round of
 * acquisition (every TTL/3, redis-leases.ts), subscribes, and loads the
 * actor while the request waits in its mailbox (its own timeout). The rest
 * of the budget, 2/3 of a TTL, is room for a loaded node's late rounds.
 */
export function shardMoveWaitMs(leaseTtlMs: number): number {
  return 2 * leaseTtlMs;
}

/** An actor's reply as JSON text, passed into an HTTP answer without decoding. */
export class RawJson {
  constructor(readonly text: string) {}
}

/** A target kind's bus series (`lib/metrics.ts`), made once per kind. */
class BusStats {
  readonly duration: HistogramChild;
  private errors = new Map<string, CounterChild>();
  constructor(private readonly kind: string) {
    this.duration = busDuration.child(kind);
    // Every error series from zero, so a rate over it starts at the first one.
    for (const reason of BUS_ERRORS) this.errors.set(reason, busErrors.child(kind, reason));
  }

  error(reason: string): void {
    let c = this.errors.get(reason);
    if (!c) this.errors.set(reason, (c = busErrors.child(this.kind, reason)));
    c.inc();
  }
}

/** Why a call got no answer (BusError's reasons, and a shard that was moving). */
const BUS_ERRORS = ['timeout', 'no_responders', 'busy', 'closed', 'shard_moving'] as const;

const busStats = new Map<string, BusStats>();

function statsOf(kind: string): BusStats {
  let s = busStats.get(kind);
  if (!s) busStats.set(kind, (s = new BusStats(kind)));
  return s;
}

export class ActorClient {
  constructor(
    /** Any way to make a bus request: the process's bus, or the CLI's admin socket. */
    private readonly bus: Pick<Bus, 'requestText'> & Partial<Pick<Bus, 'requestReply'>>,
    readonly shards: number,
    /** How long a call waits for its reply unless it says otherwise. */
    readonly timeoutMs: number,
    /** How long to retry a shard that is moving (`shardMoveWaitMs` of the cluster's lease TTL). */
    private readonly retryBudgetMs = shardMoveWaitMs(DEFAULT_LEASE_TTL_MS),
  ) {}

  /** Sends `msg` to actor `id` of the kind `ref` names and decodes the reply. */
  async call<H, M extends MessageOf<H>>(ref: ActorRef<H>, id: string, msg: M, timeoutMs = this.timeoutMs): Promise<ReplyFor<H, M['type']>> {
    return JSON.parse((await this.raw(ref, id, msg, timeoutMs)).text) as ReplyFor<H, M['type']>;
  }

  /** As `call`, with the reply left as JSON text, for a route that only forwards it. */
  async raw<H, M extends MessageOf<H>>(ref: ActorRef<H>, id: string, msg: M, timeoutMs = this.timeoutMs): Promise<RawJson> {
    const shard = shardOf(ref.placement(id), this.shards);
    return new RawJson(await this.request((s, b, t) => this.bus.requestText(s, b, t), subjects.actor(shard, ref.kind, id), msg, timeoutMs, statsOf(ref.kind)));
  }

  /**
   * As `raw`, with a reply built in pieces left as its pieces (encoded parts
   * never turned into text: a register's `realm_users`, issue 20). Through
   * the CLI's admin socket, which carries text only, the reply is text.
   */
  async pieces<H, M extends MessageOf<H>>(ref: ActorRef<H>, id: string, msg: M, timeoutMs = this.timeoutMs): Promise<RawJson | JsonPieces> {
    const shard = shardOf(ref.placement(id), this.shards);
    const ask = this.bus.requestReply ? this.bus.requestReply.bind(this.bus) : this.bus.requestText.bind(this.bus);
    const reply = await this.request(ask, subjects.actor(shard, ref.kind, id), msg, timeoutMs, statsOf(ref.kind));
    return typeof reply === 'string' ? new RawJson(reply) : reply;
  }

  /**
   * One bus request. While a shard moves it may have no owner for a moment
   * (no responders) or reach a node that just let it go (a `retryable` 503);
   * neither ran the request, so it is retried for up to `retryBudgetMs`:
   * clients see the takeover of a dead node's shards as latency. A timeout
   * is not retried: the actor may have done the work.
   */
  private async request<R>(ask: (subject: string, body: unknown, timeoutMs: number) => Promise<R>, subject: string, body: unknown, timeoutMs: number, stats: BusStats): Promise<R> {
    const started = Date.now();
    const t0 = performance.now();
    for (let attempt = 0; ; attempt++) {
      try {
        const reply = await ask(subject, body, timeoutMs);
        stats.duration.observe(secondsSince(t0));
        return reply;
      } catch (err) {
        // Every failed attempt is counted; the duration once, for the outcome the caller gets.
        if (err instanceof BusError) stats.error(err.reason);
        else if (err instanceof ApiError && err.retryable) stats.error('shard_moving');
        const retryable = (err instanceof BusError && err.reason === 'no_responders') || (err instanceof ApiError && err.retryable);
        if (retryable && Date.now() - started < this.retryBudgetMs) {
          // Short waits: a no-responders answer is cheap, and every wait is added to the takeover's latency.
          await new Promise((r) => setTimeout(r, Math.min(25 * 2 ** attempt, 200)));
          continue;
        }
        stats.duration.observe(secondsSince(t0));
        if (err instanceof ApiError) throw err.retryable ? err.forClient() : err;
        if (err instanceof BusError) {
          throw unavailable(err.reason === 'timeout' ? 'The server took too long to answer; try again' : 'The server is busy or restarting; try again');
        }
        throw err;
      }
    }
  }
}
