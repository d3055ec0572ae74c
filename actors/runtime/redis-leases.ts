/**
 * Shard leases in Redis for the cluster mode.
 *
 * Keys (prefix `parley` by default):
 *   <p>:nodes                 sorted set of live nodes, score = heartbeat expiry (Redis clock, ms)
 *   <p>:lease:<shard>         `<nodeId>:<token>` with a PX ttl; present = owned
 *   <p>:lease:<shard>:epoch   last fencing token minted for the shard
 *
 * Every ttl/3 a node renews all its leases and its heartbeat in one script,
 * then moves towards its fair share, ceil(shards / live nodes): it hands over
 * shards beyond it (listener.lost() first, then the key is deleted) and takes
 * free ones up to it (the key is set first, then listener.acquired()). A node
 * that dies stops renewing; its keys expire and the others take the shards.
 *
 * Only Redis's clock decides expiry; this process keeps its own monotonic
 * deadline per lease (when the renew was sent + ttl - safety margin). The
 * Redis key outlives that deadline, so once `valid()` turns false no other
 * node can yet hold the shard, and a process that was paused past its ttl
 * learns it may not write the moment it resumes, before any I/O.
 */
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { fnv1a } from '../../lib/hash.ts';
import { log as rootLog } from '../../lib/log.ts';
import { leaseRenewals, leaseRenewDuration, liveNodes, shardMoves } from '../../lib/metrics.ts';
import type { LeaseListener, Leases, LeaseView, ShardGrant } from './leases.ts';

export interface RedisLeasesOptions {
  /** Lease and heartbeat lifetime in Redis. */
  ttlMs?: number;
  /** Key prefix, so several clusters can share one Redis. */
  prefix?: string;
  /** How long before Redis would expire a lease this node stops treating it as valid. */
  safetyMs?: number;
  /** Period of the renew/rebalance loop; ttl/3 by default. */
  loopMs?: number;
  log?: Logger;
}

/** Renews the caller's heartbeat and leases. Returns [live nodes, 1|0 per lease]. */
const RENEW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local out = { redis.call('ZCARD', KEYS[1]) }
for i = 2, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i + 1] then
    redis.call('PEXPIRE', KEYS[i], ttl)
    out[i] = 1
  else
    out[i] = 0
  end
end
return out`;

/**
 * Takes up to ARGV[3] free leases among KEYS (pairs: lease key, epoch key).
 * Returns [candidate index, token, ...]. A missing epoch is seeded from the
 * Redis clock in ms, so tokens keep growing even if Redis lost its data.
 */
const ACQUIRE = `
local want = tonumber(ARGV[3])
local out = {}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, #KEYS, 2 do
  if #out >= want * 2 then break end
  if redis.call('EXISTS', KEYS[i]) == 0 then
    if redis.call('EXISTS', KEYS[i + 1]) == 0 then redis.call('SET', KEYS[i + 1], string.format('%d', now)) end
    local token = redis.call('INCR', KEYS[i + 1])
    redis.call('SET', KEYS[i], ARGV[1] .. ':' .. string.format('%d', token), 'PX', ARGV[2])
    out[#out + 1] = (i - 1) / 2
    out[#out + 1] = token
  end
end
return out`;

/** Deletes each lease in KEYS whose value is still ARGV[i]. Returns how many. */
const RELEASE = `
local n = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then
    redis.call('DEL', KEYS[i])
    n = n + 1
  end
end
return n`;

interface Scripts {
  parleyLeaseRenew(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
  parleyLeaseAcquire(numKeys: number, ...args: (string | number)[]): Promise<number[]>;
  parleyLeaseRelease(numKeys: number, ...args: (string | number)[]): Promise<number>;
}

interface Held {
  token: number;
  /** The lease key's value while we hold it. */
  value: string;
  /** performance.now() after which we may no longer write. */
  deadline: number;
  /** Being handed over: still renewed until listener.lost() has returned. */
  releasing: boolean;
}

class RedisTimeout extends Error {
  constructor(what: string, ms: number) {
    super(`redis ${what} took more than ${ms} ms`);
  }
}

export class RedisLeases implements Leases {
  private readonly redis: Redis;
  private readonly scripts: Scripts;
  private readonly ownsClient: boolean;
  /** Subscriber connection for `<p>:changes`, so handovers take effect at once, not at the next loop. */
  private changes: Redis | null = null;
  private quick: NodeJS.Timeout | null = null;
  private quickTick: Promise<void> | null = null;
  private readonly ttlMs: number;
  private readonly safetyMs: number;
  private readonly loopMs: number;
  private readonly prefix: string;
  private log: Logger;

  private nodeId = '';
  private shards = 0;
  private listener: LeaseListener | null = null;
  private held = new Map<number, Held>();
  /** Per shard, the listener calls in order (acquired before lost, lost before re-acquired). */
  private chains = new Map<number, Promise<void>>();
  private live = 1;
  private loopTimer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private rebalancing: Promise<void> | null = null;
  private settled = false;
  private stopped = false;
  private lastErrorLog = 0;
  /** Removes this node's live-node gauge at stop. */
  private unreport: (() => void) | null = null;

  /** `redis` is a URL (the client is then owned and closed by stop()) or a client of the caller's. */
  constructor(redis: string | Redis, opts: RedisLeasesOptions = {}) {
    this.ttlMs = opts.ttlMs ?? 5000;
    this.safetyMs = opts.safetyMs ?? Math.max(50, Math.round(this.ttlMs / 5));
    this.loopMs = opts.loopMs ?? Math.max(10, Math.floor(this.ttlMs / 3));
    this.prefix = opts.prefix ?? 'parley';
    this.log = opts.log ?? rootLog.child({ component: 'leases' });
    if (this.safetyMs >= this.ttlMs - this.loopMs) throw new Error('RedisLeases: safetyMs must leave room for at least one renewal within the ttl');
    if (typeof redis === 'string') {
      // No offline queue: while Redis is away commands fail at once, the loop
      // keeps ticking and local deadlines expire, instead of commands piling up.
      this.redis = new Redis(redis, {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        connectTimeout: Math.max(1000, this.ttlMs),
        commandTimeout: this.ttlMs,
        retryStrategy: (n) => Math.min(50 * n, 1000),
      });
      this.ownsClient = true;
    } else {
      this.redis = redis;
      this.ownsClient = false;
    }
    this.redis.on('error', (err: Error) => {
      const now = Date.now();
      if (now - this.lastErrorLog < 5000) return;
      this.lastErrorLog = now;
      this.log.warn({ err: err.message }, 'redis connection error; leases will expire unless it comes back');
    });
    this.redis.defineCommand('parleyLeaseRenew', { lua: RENEW });
    this.redis.defineCommand('parleyLeaseAcquire', { lua: ACQUIRE });
    this.redis.defineCommand('parleyLeaseRelease', { lua: RELEASE });
    this.scripts = this.redis as unknown as Scripts;
  }

  /** Registers the node, takes a first share of shards (awaiting listener.acquired) and starts the loop. */
  async start(nodeId: string, shards: number, listener: LeaseListener): Promise<void> {
    if (this.listener) throw new Error('RedisLeases: already started');
    this.nodeId = nodeId;
    this.shards = shards;
    this.listener = listener;
    this.log = this.log.child({ nodeId });
    this.unreport = liveNodes.add((set) => set(this.live));
    if (this.ownsClient && this.redis.status === 'wait') await this.redis.connect();
    await this.watchChanges();
    await this.renew(true);
    // The loop renews while the listener is still taking the first shards.
    this.schedule();
    this.rebalancing = this.rebalance().finally(() => (this.rebalancing = null));
    await this.rebalancing;
    this.settled = true;
    // Others learn of a new node at once and hand shards over to it.
    this.announce();
  }

  valid(shard: number, token: number): boolean {
    const h = this.held.get(shard);
    return h !== undefined && h.token === token && performance.now() < h.deadline;
  }

  ready(): boolean {
    return this.settled && !this.stopped;
  }

  async describe(): Promise<LeaseView> {
    const now = Date.now();
    const nodes = await this.redis.zrange(this.key('nodes'), '0', '-1', 'WITHSCORES');
    const out: LeaseView = { nodes: [], shards: [] };
    // The scores are Redis's clock; this process's is close enough for an operator's view.
    for (let i = 0; i < nodes.length; i += 2) out.nodes.push({ nodeId: nodes[i]!, heartbeatExpiresInMs: Math.max(0, Number(nodes[i + 1]) - now) });
    const pipe = this.redis.pipeline();
    for (let s = 0; s < this.shards; s++) pipe.get(this.key('lease', s)).pttl(this.key('lease', s));
    const res = (await pipe.exec()) ?? [];
    for (let s = 0; s < this.shards; s++) {
      const value = res[2 * s]?.[1] as string | null;
      const pttl = Number(res[2 * s + 1]?.[1]);
      const at = value ? value.lastIndexOf(':') : -1;
      out.shards.push(value ? { shard: s, owner: value.slice(0, at), token: Number(value.slice(at + 1)), renewedMsAgo: pttl >= 0 ? Math.max(0, this.ttlMs - pttl) : null } : { shard: s, owner: null, token: null, renewedMsAgo: null });
    }
    return out;
  }

  /** Shards held now, for logs and tests. */
  owned(): ShardGrant[] {
    return [...this.held].map(([shard, h]) => ({ shard, token: h.token }));
  }

  /** Hands every shard over (listener.lost(), then the key is deleted) and leaves the cluster. */
  async stop(): Promise<void> {
    if (!this.listener || this.stopped) return;
    this.stopped = true;
    this.unreport?.();
    if (this.loopTimer) clearTimeout(this.loopTimer);
    if (this.watchdog) clearTimeout(this.watchdog);
    if (this.quick) clearTimeout(this.quick);
    await this.ticking;
    await this.quickTick;
    await this.rebalancing;
    const listener = this.listener;
    const held = [...this.held];
    shardMoves.inc({ move: 'handed_over' }, held.length);
    await Promise.all(held.map(([shard]) => this.enqueue(shard, () => listener.lost(shard, true))));
    this.held.clear();
    await this.release(held.map(([shard, h]) => [shard, h.value]));
    try {
      await this.redis.zrem(this.key('nodes'), this.nodeId);
    } catch (err) {
      this.log.warn({ err }, 'could not leave the live node set; it expires on its own');
    }
    await Promise.all([...this.chains.values()]);
    this.changes?.disconnect();
    if (this.ownsClient) await this.redis.quit().catch(() => this.redis.disconnect());
    this.log.info({ shards: held.length }, 'leases released');
  }

  /**
   * Listens on `<p>:changes`: a node that joined or released shards says so
   * there, and the others renew and rebalance within milliseconds instead of
   * at their next loop, so a handed-over shard is without an owner only
   * briefly. Without the subscription the loop still converges, only slower.
   */
  private async watchChanges(): Promise<void> {
    try {
      const sub = this.redis.duplicate({ lazyConnect: true, enableOfflineQueue: true });
      sub.on('error', () => {});
      await sub.connect();
      await sub.subscribe(this.key('changes'));
      sub.on('message', (_channel: string, from: string) => {
        if (from !== this.nodeId) this.soon();
      });
      this.changes = sub;
    } catch (err) {
      this.log.warn({ err: err instanceof Error ? err.message : err }, 'cannot watch lease changes; rebalancing at the loop period only');
    }
  }

  private announce(): void {
    this.redis.publish(this.key('changes'), this.nodeId).catch(() => {});
  }

  /** A renew and rebalance round now, outside the loop's period. */
  private soon(): void {
    if (this.quick || this.stopped || !this.settled) return;
    this.quick = setTimeout(() => {
      this.quick = null;
      if (this.stopped || this.ticking || this.quickTick) return;
      this.quickTick = this.tick().finally(() => (this.quickTick = null));
    }, 10);
  }

  private key(...parts: (string | number)[]): string {
    return [this.prefix, ...parts].join(':');
  }

  private schedule(): void {
    if (this.stopped) return;
    this.loopTimer = setTimeout(() => {
      this.ticking = this.tick().finally(() => {
        this.ticking = null;
        this.schedule();
      });
    }, this.loopMs);
  }

  /** Renewal never waits for listener calls; rebalancing does, so it runs beside the loop. */
  private async tick(): Promise<void> {
    await this.renew(false);
    if (this.stopped || this.rebalancing) return;
    this.rebalancing = this.rebalance()
      .catch((err: unknown) => this.log.error({ err }, 'rebalance failed'))
      .finally(() => (this.rebalancing = null));
  }

  /** One round trip: heartbeat, live node count, and every held lease renewed. */
  private async renew(first: boolean): Promise<void> {
    const held = [...this.held];
    const sent = performance.now();
    let res: number[];
    try {
      res = await this.bounded(
        'renew',
        this.scripts.parleyLeaseRenew(1 + held.length, this.key('nodes'), ...held.map(([s]) => this.key('lease', s)), this.nodeId, this.ttlMs, ...held.map(([, h]) => h.value)),
      );
    } catch (err) {
      leaseRenewals.inc({ result: 'failed' });
      if (first) throw err;
      this.log.warn({ err: err instanceof Error ? err.message : err, shards: held.length }, 'lease renewal failed');
      return;
    }
    leaseRenewals.inc({ result: 'ok' });
    leaseRenewDuration.observe((performance.now() - sent) / 1000);
    this.live = Math.max(1, Number(res[0]));
    const deadline = sent + this.ttlMs - this.safetyMs;
    const now = performance.now();
    held.forEach(([shard, h], i) => {
      if (this.held.get(shard) !== h) return;
      if (res[i + 1] !== 1) this.lose(shard, 'lease expired or taken by another node', false);
      else if (deadline <= now) this.lose(shard, 'lease renewed too late to be trusted', true);
      else h.deadline = Math.max(h.deadline, deadline);
    });
    this.armWatchdog();
  }

  /** Moves towards the fair share: hands over extras or takes free shards. */
  private async rebalance(): Promise<void> {
    const fair = Math.ceil(this.shards / this.live);
    const mine = [...this.held].filter(([, h]) => !h.releasing).map(([s]) => s);
    if (mine.length > fair) await this.handOver(mine.sort((a, b) => b - a).slice(0, mine.length - fair));
    else if (mine.length < fair) await this.acquire(fair - mine.length);
  }

  private async handOver(shards: number[]): Promise<void> {
    const listener = this.listener!;
    this.log.info({ shards, live: this.live }, 'handing shards over');
    const leaving = shards.map((s) => [s, this.held.get(s)!] as const);
    for (const [, h] of leaving) h.releasing = true;
    await Promise.all(leaving.map(([s]) => this.enqueue(s, () => listener.lost(s, true))));
    const still = leaving.filter(([s, h]) => this.held.get(s) === h);
    for (const [s] of still) this.held.delete(s);
    shardMoves.inc({ move: 'handed_over' }, still.length);
    await this.release(still.map(([s, h]) => [s, h.value]));
  }

  private async acquire(want: number): Promise<void> {
    const listener = this.listener!;
    // Start at a node-specific shard so nodes joining together rarely contend.
    const start = fnv1a(this.nodeId) % this.shards;
    const candidates: number[] = [];
    for (let i = 0; i < this.shards; i++) {
      const s = (start + i) % this.shards;
      if (!this.held.has(s)) candidates.push(s);
    }
    const keys = candidates.flatMap((s) => [this.key('lease', s), this.key('lease', s, 'epoch')]);
    const sent = performance.now();
    let res: number[];
    try {
      res = await this.bounded('acquire', this.scripts.parleyLeaseAcquire(keys.length, ...keys, this.nodeId, this.ttlMs, want));
    } catch (err) {
      this.log.warn({ err: err instanceof Error ? err.message : err }, 'lease acquisition failed');
      return;
    }
    const deadline = sent + this.ttlMs - this.safetyMs;
    const grants: ShardGrant[] = [];
    const late: [number, string][] = [];
    for (let i = 0; i + 1 < res.length; i += 2) {
      const shard = candidates[Number(res[i])]!;
      const token = Number(res[i + 1]);
      const value = `${this.nodeId}:${token}`;
      if (deadline <= performance.now() || this.stopped) late.push([shard, value]);
      else {
        this.held.set(shard, { token, value, deadline, releasing: false });
        grants.push({ shard, token });
      }
    }
    if (late.length) await this.release(late);
    if (!grants.length) return;
    shardMoves.inc({ move: 'acquired' }, grants.length);
    this.armWatchdog();
    this.log.info({ shards: grants.map((g) => g.shard), live: this.live }, 'shards acquired');
    await Promise.all(
      grants.map((g) =>
        this.enqueue(g.shard, async () => {
          if (this.held.get(g.shard)?.token !== g.token) return;
          try {
            await listener.acquired(g);
          } catch (err) {
            this.log.error({ err, shard: g.shard }, 'listener failed to take a shard; giving it back');
            this.lose(g.shard, 'listener failed', true);
          }
        }),
      ),
    );
  }

  /** Drops a lease now (valid() turns false at once) and tells the listener. */
  private lose(shard: number, why: string, releaseKey: boolean): void {
    const h = this.held.get(shard);
    if (!h) return;
    this.held.delete(shard);
    shardMoves.inc({ move: 'lost' });
    this.log.warn({ shard, token: h.token }, `shard lost: ${why}`);
    const listener = this.listener!;
    void this.enqueue(shard, async () => {
      await listener.lost(shard, false);
      if (releaseKey) await this.release([[shard, h.value]]);
    });
  }

  /** Fires at the earliest local deadline, so lost() is called before Redis can give the shard away. */
  private armWatchdog(): void {
    if (this.watchdog) clearTimeout(this.watchdog);
    this.watchdog = null;
    if (this.stopped || !this.held.size) return;
    let first = Infinity;
    for (const h of this.held.values()) first = Math.min(first, h.deadline);
    this.watchdog = setTimeout(() => {
      this.watchdog = null;
      const now = performance.now();
      for (const [shard, h] of [...this.held]) if (h.deadline <= now) this.lose(shard, 'lease not renewed in time', true);
      this.armWatchdog();
    }, Math.max(0, first - performance.now()));
  }

  /** Compare-and-delete; failures only delay the handover until the keys expire. */
  private async release(leases: (readonly [number, string])[]): Promise<void> {
    if (!leases.length) return;
    try {
      await this.bounded('release', this.scripts.parleyLeaseRelease(leases.length, ...leases.map(([s]) => this.key('lease', s)), ...leases.map(([, v]) => v)));
      this.announce();
    } catch (err) {
      this.log.warn({ err: err instanceof Error ? err.message : err, shards: leases.map(([s]) => s) }, 'lease release failed; the leases expire on their own');
    }
  }

  /** Runs `fn` after the shard's earlier listener calls; never rejects. */
  private enqueue(shard: number, fn: () => Promise<void>): Promise<void> {
    const next = (this.chains.get(shard) ?? Promise.resolve()).then(fn).catch((err: unknown) => this.log.error({ err, shard }, 'lease listener failed'));
    this.chains.set(shard, next);
    void next.then(() => {
      if (this.chains.get(shard) === next) this.chains.delete(shard);
    });
    return next;
  }

  /** Stops waiting for Redis after one loop period, so a hung call cannot stall the loop. */
  private bounded<T>(what: string, p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RedisTimeout(what, this.loopMs)), this.loopMs);
    });
    p.catch(() => {});
    return Promise.race([p, limit]).finally(() => clearTimeout(timer));
  }
}
