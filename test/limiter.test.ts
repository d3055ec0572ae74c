/**
 * The Limiter interface, one suite for both implementations: LocalLimiter
 * (embedded mode) and RedisLimiter (cluster mode) against the real Redis of
 * PARLEY_REDIS_URL (127.0.0.1:6379 by default), each case under its own key
 * prefix and its keys deleted afterwards. Two RedisLimiters on one prefix
 * stand for two gateways.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { type Limiter, LocalLimiter, type Rule } from '../gateway/limiter.ts';
import { RedisLimiter } from '../gateway/redis-limiter.ts';
import { startRedis } from './helpers/services.ts';

t.setTimeout(60_000);

const REDIS_URL = process.env.PARLEY_REDIS_URL ?? 'redis://127.0.0.1:6379';
const log = pino({ level: process.env.PARLEY_LOG_LEVEL ?? 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const admin = new Redis(REDIS_URL);
t.teardown(() => admin.quit());

interface Impl {
  name: string;
  /** A limiter, or several sharing one budget (several gateways); closed at teardown. */
  make(t: Test, count?: number): Limiter[];
}

const IMPLS: Impl[] = [
  {
    name: 'local',
    make(t, count = 1) {
      // One process has one budget: "several gateways" of the embedded mode are one limiter.
      const l = new LocalLimiter();
      t.teardown(() => l.close());
      return Array.from({ length: count }, () => l);
    },
  },
  {
    name: 'redis',
    make(t, count = 1) {
      const prefix = `limiter-test-${randomBytes(4).toString('hex')}`;
      const ls = Array.from({ length: count }, () => new RedisLimiter(REDIS_URL, { prefix, log }));
      t.teardown(async () => {
        for (const l of ls) await l.close();
        const keys = await admin.keys(`${prefix}:*`);
        if (keys.length) await admin.del(...keys);
      });
      return ls;
    },
  },
];

for (const impl of IMPLS) {
  t.test(`limiter (${impl.name}) - a whole budget at once, then refused with the wait for one more`, async (t) => {
    const [l] = impl.make(t);
    const rule: Rule = { max: 5, windowSecs: 10 };
    for (let i = 0; i < 5; i++) {
      const v = await l!.check('u1', rule, true);
      t.ok(v.allowed, `request ${i + 1} allowed`);
      t.equal(v.limit, 5);
      t.equal(v.remaining, 4 - i, 'remaining counts down');
      t.ok(v.resetSecs > 2 * (i + 1) - 0.5 && v.resetSecs <= 2 * (i + 1) + 0.01, `whole again in ~${2 * (i + 1)} s (got ${v.resetSecs})`);
    }
    const refused = await l!.check('u1', rule, true);
    t.notOk(refused.allowed, 'the sixth is refused');
    t.equal(refused.remaining, 0);
    t.ok(refused.retryAfterSecs > 1.5 && refused.retryAfterSecs <= 2.01, `one more in ~2 s (got ${refused.retryAfterSecs})`);
    const again = await l!.check('u1', rule, true);
    t.notOk(again.allowed, 'a refused request does not count: still refused, not later');
    t.ok(again.retryAfterSecs <= refused.retryAfterSecs + 0.01);
    t.ok((await l!.check('u2', rule, true)).allowed, 'another key has its own budget');
  });

  t.test(`limiter (${impl.name}) - the budget refills at max per window`, async (t) => {
    const [l] = impl.make(t);
    const rule: Rule = { max: 4, windowSecs: 0.4 }; // one more every 100 ms
    for (let i = 0; i < 4; i++) t.ok((await l!.check('k', rule, true)).allowed);
    const refused = await l!.check('k', rule, true);
    t.notOk(refused.allowed);
    await sleep(refused.retryAfterSecs * 1000 + 20);
    t.ok((await l!.check('k', rule, true)).allowed, 'allowed once retry-after has passed');
    t.notOk((await l!.check('k', rule, true)).allowed, 'and only one');
    await sleep(450);
    const whole = await l!.check('k', rule, false);
    t.equal(whole.remaining, 4, 'whole again after a window');
  });

  t.test(`limiter (${impl.name}) - a look without consume counts nothing`, async (t) => {
    const [l] = impl.make(t);
    const rule: Rule = { max: 2, windowSecs: 60 };
    for (let i = 0; i < 10; i++) t.equal((await l!.check('p', rule, false)).remaining, 2);
    await l!.check('p', rule, true);
    await l!.check('p', rule, true);
    const look = await l!.check('p', rule, false);
    t.notOk(look.allowed, 'the look sees the budget used up');
    t.ok(look.retryAfterSecs > 25, 'with the wait');
  });

  t.test(`limiter (${impl.name}) - concurrent checks from several gateways never exceed the budget`, async (t) => {
    const gateways = impl.make(t, 3);
    const rule: Rule = { max: 20, windowSecs: 60 };
    const verdicts = await Promise.all(Array.from({ length: 90 }, (_, i) => gateways[i % 3]!.check('shared', rule, true)));
    t.equal(verdicts.filter((v) => v.allowed).length, 20, 'exactly the budget allowed');
    t.same(verdicts.filter((v) => v.allowed).map((v) => v.remaining).sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i), 'each allowed request saw its own remaining count');
  });
}

t.test('limiter (local) - keys whose budget is whole again are forgotten', async (t) => {
  let now = 1_000_000;
  const l = new LocalLimiter(() => now, 3_600_000);
  t.teardown(() => l.close());
  for (let i = 0; i < 1000; i++) await l.check(`ip:${i}`, { max: 10, windowSecs: 1 }, true);
  t.equal(l.size, 1000);
  now += 50; // one request of 10 per second is made good in 100 ms
  l.sweep();
  t.equal(l.size, 1000, 'kept while a budget is not whole');
  now += 60;
  l.sweep();
  t.equal(l.size, 0, 'forgotten after');
});

t.test('limiter (redis) - a key lives until its budget is whole again', async (t) => {
  const [l] = IMPLS[1]!.make(t);
  const prefix = (l as unknown as { prefix: string }).prefix;
  await l!.check('ttl', { max: 10, windowSecs: 2 }, true);
  const ttl = await admin.pttl(`${prefix}:rl:ttl`);
  t.ok(ttl > 0 && ttl <= 200, `expires when whole (pttl ${ttl} ms)`);
  await l!.check('peek', { max: 10, windowSecs: 2 }, false);
  t.equal(await admin.exists(`${prefix}:rl:peek`), 0, 'a look writes nothing');
});

t.test('limiter (redis) - requests go through while Redis is down, and are limited when it is back', async (t) => {
  const server = await startRedis();
  t.teardown(() => server.stop());
  const l = new RedisLimiter(server.url, { prefix: 'down', log, timeoutMs: 300 });
  t.teardown(() => l.close());
  const rule: Rule = { max: 1, windowSecs: 60 };
  t.ok((await l.check('k', rule, true)).allowed);
  t.notOk((await l.check('k', rule, true)).allowed, 'limited while Redis answers');
  server.pause();
  const started = performance.now();
  t.ok((await l.check('k', rule, true)).allowed, 'let through while Redis does not answer');
  t.ok(performance.now() - started < 1500, 'within the timeout');
  server.resume();
  for (let i = 0; i < 50 && (await l.check('k', rule, false)).allowed; i++) await sleep(100);
  t.notOk((await l.check('k', rule, true)).allowed, 'limited again once Redis answers');
});
