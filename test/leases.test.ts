/**
 * RedisLeases on a real redis-server started for this file. Each case uses its
 * own key prefix; a watcher checks throughout that no shard ever has two
 * owners, by the listener callbacks and by valid() against the Redis keys.
 */
import { Redis } from 'ioredis';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import type { ShardGrant } from '../actors/runtime/leases.ts';
import { RedisLeases, type RedisLeasesOptions } from '../actors/runtime/redis-leases.ts';
import { startRedis } from './helpers/services.ts';

t.setTimeout(60_000);

const log = pino({ level: process.env.PARLEY_LOG_LEVEL ?? 'silent' });
const TTL = 1000;
const LOOP = Math.floor(TTL / 3);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs: number): Promise<number> {
  const start = performance.now();
  while (!(await cond())) {
    if (performance.now() - start > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    await sleep(10);
  }
  return performance.now() - start;
}

interface Member {
  id: string;
  leases: RedisLeases;
  /** Shards this node holds according to its listener calls. */
  held: Map<number, number>;
  lost: number[];
}

/** Nodes sharing one prefix, and a watcher of the no-two-owners rule. */
class Cluster {
  readonly members: Member[] = [];
  readonly violations: string[] = [];
  /** Shard -> node, by listener calls. */
  private holders = new Map<number, string>();
  /** Shard -> every token granted, in order. */
  readonly tokens = new Map<number, number[]>();
  private timer: NodeJS.Timeout | null = null;
  private checks = 0;

  constructor(
    readonly t: Test,
    readonly redis: Redis,
    readonly prefix: string,
    readonly shards: number,
  ) {
    t.teardown(async () => {
      if (this.timer) clearInterval(this.timer);
      for (const m of this.members) await m.leases.stop();
    });
  }

  async add(id: string, client?: Redis, opts: RedisLeasesOptions = {}): Promise<Member> {
    const leases = new RedisLeases(client ?? urlOf(this.redis), { ttlMs: TTL, prefix: this.prefix, log, ...opts });
    const m: Member = { id, leases, held: new Map(), lost: [] };
    this.members.push(m);
    await leases.start(id, this.shards, {
      acquired: async (g: ShardGrant) => {
        const other = this.holders.get(g.shard);
        if (other !== undefined && other !== id) this.violations.push(`${id} acquired shard ${g.shard} while ${other} still held it`);
        this.holders.set(g.shard, id);
        m.held.set(g.shard, g.token);
        const seq = this.tokens.get(g.shard) ?? [];
        if (seq.length && g.token <= seq[seq.length - 1]!) this.violations.push(`shard ${g.shard}: token ${g.token} after ${seq[seq.length - 1]}`);
        seq.push(g.token);
        this.tokens.set(g.shard, seq);
      },
      lost: async (shard: number) => {
        m.held.delete(shard);
        m.lost.push(shard);
        if (this.holders.get(shard) === id) this.holders.delete(shard);
      },
    });
    return m;
  }

  /** Every ~15 ms: at most one node's valid() per shard, and its token is the one in Redis. */
  watch(): void {
    let busy = false;
    this.timer = setInterval(() => {
      if (busy) return;
      busy = true;
      void this.check().finally(() => (busy = false));
    }, 15);
  }

  private validNow(): Map<number, string[]> {
    const out = new Map<number, string[]>();
    for (const m of this.members) {
      for (const [shard, token] of m.held) {
        if (m.leases.valid(shard, token)) out.set(shard, [...(out.get(shard) ?? []), `${m.id}:${token}`]);
      }
    }
    return out;
  }

  private async check(): Promise<void> {
    const before = this.validNow();
    const keys = Array.from({ length: this.shards }, (_, s) => `${this.prefix}:lease:${s}`);
    const values = await this.redis.mget(...keys);
    const after = this.validNow();
    this.checks++;
    for (let s = 0; s < this.shards; s++) {
      const b = before.get(s) ?? [];
      const a = after.get(s) ?? [];
      if (b.length > 1 || a.length > 1) this.violations.push(`shard ${s} valid on ${[...b, ...a].join(', ')} at once`);
      const throughout = b.filter((v) => a.includes(v));
      for (const v of throughout) if (values[s] !== v) this.violations.push(`shard ${s}: ${v} says valid but Redis has ${values[s]}`);
    }
  }

  get checked(): number {
    return this.checks;
  }

  counts(): number[] {
    return this.members.map((m) => m.held.size);
  }

  async redisOwners(): Promise<(string | null)[]> {
    const keys = Array.from({ length: this.shards }, (_, s) => `${this.prefix}:lease:${s}`);
    return (await this.redis.mget(...keys)).map((v) => (v === null ? null : v.slice(0, v.lastIndexOf(':'))));
  }
}

function urlOf(redis: Redis): string {
  return `redis://${redis.options.host}:${redis.options.port}`;
}

const server = await startRedis();
t.teardown(() => server.stop());
const admin = new Redis(server.url);
t.teardown(() => admin.quit());

let seq = 0;
const cluster = (t: Test, shards: number) => new Cluster(t, admin, `lt${++seq}`, shards);

t.test('leases - one node takes every shard with a fencing token each', async (t) => {
  const c = cluster(t, 8);
  c.watch();
  const a = await c.add('a');
  t.ok(a.leases.ready(), 'ready once start() returns');
  t.equal(a.held.size, 8);
  t.strictSame(await c.redisOwners(), Array(8).fill('a'));
  for (const [shard, token] of a.held) {
    t.ok(a.leases.valid(shard, token));
    t.notOk(a.leases.valid(shard, token - 1), 'an older token is not valid');
    t.equal(await admin.get(`${c.prefix}:lease:${shard}`), `a:${token}`);
    t.ok(Number.isSafeInteger(token) && token > 0);
  }
  t.notOk(a.leases.valid(99, 1), 'a shard it does not hold');
  t.strictSame(await admin.zrange(`${c.prefix}:nodes`, '0', '-1'), ['a'], 'registered as a live node');
  await sleep(TTL * 2);
  t.equal(a.held.size, 8, 'renewals keep every lease');
  t.strictSame(a.lost, []);
  t.strictSame(c.violations, []);
});

t.test('leases - joining nodes get a fair split and no shard has two owners', async (t) => {
  const c = cluster(t, 8);
  c.watch();
  const a = await c.add('a');
  const b = await c.add('b');
  t.ok(b.leases.ready(), 'a node is ready even when it got nothing in its first round');
  const ms2 = await waitFor('a 4/4 split', () => a.held.size === 4 && b.held.size === 4, 4 * TTL);
  t.pass(`two nodes split 4/4 after ${ms2.toFixed(0)} ms`);
  const owners = await c.redisOwners();
  t.equal(owners.filter((o) => o === 'a').length, 4, 'Redis agrees');
  t.equal(owners.filter((o) => o === 'b').length, 4);
  t.strictSame([...b.held.keys()].every((s) => owners[s] === 'b'), true);
  await c.add('c');
  const ms3 = await waitFor('a 3/3/2 split', () => [...c.counts()].sort().join() === '2,3,3', 4 * TTL);
  t.pass(`three nodes split 3/3/2 after ${ms3.toFixed(0)} ms`);
  await sleep(TTL);
  t.strictSame([...c.counts()].sort().join(), '2,3,3', 'the split is stable');
  t.ok(c.checked > 20, `ownership checked ${c.checked} times`);
  t.strictSame(c.violations, []);
});

t.test('leases - stop() hands every shard to the other node within 2 × ttl', async (t) => {
  const c = cluster(t, 8);
  c.watch();
  const a = await c.add('a');
  const b = await c.add('b');
  await waitFor('a 4/4 split', () => a.held.size === 4 && b.held.size === 4, 4 * TTL);
  const had = [...a.held.keys()];
  const start = performance.now();
  await a.leases.stop();
  t.equal(a.held.size, 0, 'lost() was called for every shard before stop() returned');
  t.strictSame(a.lost.slice(-4).sort(), had.sort());
  t.notOk(a.leases.ready());
  t.strictSame(await admin.zrange(`${c.prefix}:nodes`, '0', '-1'), ['b'], 'left the live node set');
  await waitFor('b holds all 8', () => b.held.size === 8, 2 * TTL);
  const ms = performance.now() - start;
  t.ok(ms <= 2 * TTL, `handed over in ${ms.toFixed(0)} ms`);
  t.strictSame(await c.redisOwners(), Array(8).fill('b'));
  t.strictSame(c.violations, []);
});

t.test('leases - a node that dies without stop loses its shards to the other within ttl + one loop', async (t) => {
  const c = cluster(t, 8);
  c.watch();
  const clientA = new Redis(server.url);
  t.teardown(() => clientA.disconnect());
  const a = await c.add('a', clientA);
  const b = await c.add('b');
  await waitFor('a 4/4 split', () => a.held.size === 4 && b.held.size === 4, 4 * TTL);
  const had = [...a.held.keys()];
  const lostBefore = a.lost.length;
  const start = performance.now();
  clientA.disconnect(); // abrupt: no release, no deregistration, renewals fail from now on
  await waitFor('b holds all 8', () => b.held.size === 8, 3 * TTL);
  const ms = performance.now() - start;
  t.ok(ms <= TTL + LOOP + 150, `taken over in ${ms.toFixed(0)} ms (ttl ${TTL}, loop ${LOOP})`);
  t.strictSame(a.lost.slice(lostBefore).sort(), had.sort(), 'the cut-off node stopped serving its shards itself');
  for (const s of had) t.notOk(a.leases.valid(s, c.tokens.get(s)![0]!));
  t.strictSame(c.violations, [], 'its lost() came before the other node acquired');
});

t.test('leases - fencing tokens strictly increase across owner changes', async (t) => {
  const c = cluster(t, 4);
  c.watch();
  const a = await c.add('a');
  const b = await c.add('b');
  await waitFor('a 2/2 split', () => a.held.size === 2 && b.held.size === 2, 4 * TTL);
  await a.leases.stop();
  await waitFor('b holds all 4', () => b.held.size === 4, 2 * TTL);
  const a2 = await c.add('a2');
  await waitFor('a 2/2 split again', () => a2.held.size === 2 && b.held.size === 2, 4 * TTL);
  await b.leases.stop();
  await waitFor('a2 holds all 4', () => a2.held.size === 4, 2 * TTL);
  for (const [shard, seq] of c.tokens) {
    t.ok(seq.length >= 2, `shard ${shard} changed owner ${seq.length - 1} times`);
    t.ok(seq.every((v, i) => i === 0 || v > seq[i - 1]!), `shard ${shard} tokens ${seq.join(' < ')}`);
  }
  t.strictSame(c.violations, []);
});

t.test('leases - tokens keep growing after Redis loses its data', async (t) => {
  const c = cluster(t, 2);
  const a = await c.add('a');
  const before = Math.max(...a.held.values());
  await a.leases.stop();
  const keys = await admin.keys(`${c.prefix}:*`);
  if (keys.length) await admin.del(...keys);
  const b = await c.add('b');
  const after = Math.min(...b.held.values());
  t.ok(after > before, `first token after the loss ${after} > last before ${before}`);
});

t.test('leases - valid() turns false at the local deadline when renewals stall', async (t) => {
  const c = cluster(t, 4);
  const a = await c.add('a');
  const grants = [...a.held];
  const pauseMs = 3 * TTL;
  const start = performance.now();
  await admin.client('PAUSE', String(pauseMs), 'WRITE'); // the node's renew script now waits in Redis
  t.teardown(() => admin.client('UNPAUSE'));
  const ms = await waitFor('every lease invalid', () => grants.every(([s, tok]) => !a.leases.valid(s, tok)), 2 * TTL);
  const elapsed = performance.now() - start;
  t.ok(elapsed < TTL, `valid() false after ${elapsed.toFixed(0)} ms, before Redis could expire the lease (ttl ${TTL})`);
  t.pass(`(waited ${ms.toFixed(0)} ms)`);
  await waitFor('lost() for every shard', () => a.held.size === 0, TTL);
  t.strictSame(a.lost.sort(), grants.map(([s]) => s).sort());
  await admin.client('UNPAUSE');
  await waitFor('shards taken again after Redis answers', () => a.held.size === 4, 4 * TTL);
  for (const [s, tok] of grants) t.ok(a.held.get(s)! > tok, `shard ${s} came back with a newer token`);
  t.strictSame(c.violations, []);
});

t.test('leases - a process paused past its ttl knows at once on resume that it may not write', async (t) => {
  const c = cluster(t, 4);
  const a = await c.add('a');
  const grants = [...a.held];
  t.ok(grants.every(([s, tok]) => a.leases.valid(s, tok)));
  // Block the event loop as SIGSTOP would: no timer, no I/O, no renewal.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, TTL + 100);
  t.ok(
    grants.every(([s, tok]) => !a.leases.valid(s, tok)),
    'no lease is valid on the first instruction after the pause',
  );
  t.equal(await admin.exists(...grants.map(([s]) => `${c.prefix}:lease:${s}`)), 0, 'Redis expired the keys meanwhile');
  await waitFor('shards taken again', () => a.held.size === 4 && [...a.held].every(([s, tok]) => tok > new Map(grants).get(s)!), 4 * TTL);
  t.strictSame(c.violations, []);
});
