/**
 * One suite, every Bus implementation: LocalBus in process, and NatsBus on a
 * real nats-server started for this file. Each case gets a client bus `a`
 * and a second bus `b` on the same fabric (for NATS, two connections; for
 * LocalBus, the same instance).
 */
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { type Bus, BusError, JsonPieces } from '../actors/runtime/bus.ts';
import { LocalBus } from '../actors/runtime/local-bus.ts';
import { NatsBus } from '../actors/runtime/nats-bus.ts';
import { CHUNKED_HEADER } from '../actors/runtime/nats-chunks.ts';
import { Empty, headers } from '@nats-io/transport-node';
import { ApiError, streamDoesNotExist } from '../lib/errors.ts';
import { deflatePiece } from '../lib/gzip-join.ts';
import { startNats, startRelay } from './helpers/services.ts';

t.setTimeout(60_000);

const log = pino({ level: process.env.PARLEY_LOG_LEVEL ?? 'silent' });

interface Fabric {
  a: Bus;
  b: Bus;
}
type Setup = (t: Test, opts?: { maxInFlight?: number }) => Promise<Fabric>;
/** Cases an implementation is known to fail, with the reason, reported as todo. */
type Known = { throwingSubscriber?: string };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** A reply in pieces: texts, UTF-8 bytes and a deflated piece (a register's cached parts, issue 20). */
function piecesOf(users: string): JsonPieces {
  return new JsonPieces(['{"a":', { utf8: Buffer.from(JSON.stringify(users)) }, ',"b":', { deflated: deflatePiece(Buffer.from(JSON.stringify([users, 'é👋']))) }, '}']);
}

/** The behaviour every Bus must have. */
async function busSuite(t: Test, setup: Setup, known: Known = {}): Promise<void> {
  await t.test('bus - a reply in pieces comes as its pieces to requestReply (bytes as they were), and as its JSON text to requestText', async (t) => {
    const { a, b } = await setup(t);
    const reply = piecesOf('everyone é👋');
    await b.serve('t.pieces', async () => reply);
    await b.flush();
    const got = await a.requestReply('t.pieces', null, 2000);
    if (!(got instanceof JsonPieces)) throw new Error('not pieces');
    t.equal(got.pieces.length, 5);
    t.same(got.pieces.filter((p) => typeof p === 'string'), ['{"a":', ',"b":', '}'], 'the texts');
    const [utf8, deflated] = got.pieces.filter((p) => typeof p !== 'string') as [{ utf8: Buffer }, { deflated: { data: Buffer; crc: number; size: number } }];
    t.ok(utf8.utf8.equals((reply.pieces[1] as { utf8: Buffer }).utf8), 'the UTF-8 bytes');
    const sent = (reply.pieces[3] as { deflated: { data: Buffer; crc: number; size: number } }).deflated;
    t.ok(deflated.deflated.data.equals(sent.data), 'the deflated bytes, not inflated on the way');
    t.same([deflated.deflated.crc, deflated.deflated.size], [sent.crc, sent.size], 'with their CRC-32 and size');
    t.strictSame(JSON.parse(await a.requestText('t.pieces', null, 2000)), { a: 'everyone é👋', b: ['everyone é👋', 'é👋'] });
    t.equal(await a.requestReply('t.echo.none', null, 2000).catch((e: unknown) => (e instanceof BusError ? e.reason : e)), 'no_responders');
    await b.serve('t.plain', async () => ({ x: 1 }));
    await b.flush();
    t.equal(await a.requestReply('t.plain', null, 2000), '{"x":1}', 'any other reply: its JSON text');
  });

  await t.test('bus - request/reply round trip: the server reads the request, the caller gets a JSON copy of the reply', async (t) => {
    const { a, b } = await setup(t);
    const seen: unknown[] = [];
    const reply = { n: 1, list: [1, 2], nested: { s: 'é👋' } };
    await b.serve('t.echo', async (body, subject) => {
      seen.push(body, subject);
      return reply;
    });
    await b.flush();
    const sent = { x: [1, 2, 3], s: 'héllo "q"' };
    const got = await a.request('t.echo', sent, 2000);
    t.strictSame(seen, [sent, 't.echo'], 'the server got the request and the subject');
    if (a.sharesRequests) t.equal(seen[0], sent, 'in process: the value itself (the actor node parses it into its own copy)');
    else t.not(seen[0], sent, 'over NATS: a decoded copy');
    t.strictSame(got, reply);
    t.not(got, reply, 'the reply is a copy');
    await b.serve('t.void', async () => undefined);
    await b.flush();
    t.equal(await a.request('t.void', null, 2000), null, 'undefined comes back as null');
  });

  await t.test('bus - a server that changes a shared request fails in check mode', { skip: !process.env.PARLEY_CHECK && 'check mode only (PARLEY_CHECK=1, as the test suites run)' }, async (t) => {
    const { a, b } = await setup(t);
    await b.serve('t.change', async (body) => {
      (body as { x: number[] }).x.push(99);
      return null;
    });
    await b.flush();
    const sent = { x: [1, 2, 3] };
    if (a.sharesRequests) t.match(await rejection(a.request('t.change', sent, 2000)), { status: 500 }, 'frozen: the change throws, and the caller gets an error');
    else t.equal(await a.request('t.change', sent, 2000), null, 'over NATS the server changes its own copy');
    t.strictSame(sent.x, [1, 2, 3], "the caller's value is unchanged");
  });

  await t.test('bus - an ApiError thrown by a handler arrives as the same ApiError', async (t) => {
    const { a, b } = await setup(t);
    await b.serve('t.fail', async () => {
      throw streamDoesNotExist('nowhere');
    });
    await b.serve('t.limit', async () => {
      throw new ApiError('RATE_LIMIT_HIT', 'slow down', 429, { 'retry-after': 1.5, tags: ['a', 'b'], none: null, ok: false });
    });
    await b.flush();
    const err = await rejection(a.request('t.fail', {}, 2000));
    t.ok(err instanceof ApiError);
    t.match(err, { code: 'STREAM_DOES_NOT_EXIST', status: 400, message: "Channel 'nowhere' does not exist", extra: { stream: 'nowhere' } });
    const err2 = (await rejection(a.request('t.limit', {}, 2000))) as ApiError;
    t.ok(err2 instanceof ApiError);
    t.equal(err2.code, 'RATE_LIMIT_HIT');
    t.equal(err2.status, 429);
    t.strictSame(err2.extra, { 'retry-after': 1.5, tags: ['a', 'b'], none: null, ok: false });
  });

  await t.test('bus - any other error becomes INTERNAL_SERVER_ERROR 500 without its message', async (t) => {
    const { a, b } = await setup(t);
    await b.serve('t.bug', async () => {
      throw new TypeError('secret detail');
    });
    await b.flush();
    const err = await rejection(a.request('t.bug', {}, 2000));
    t.ok(err instanceof ApiError);
    t.match(err, { code: 'INTERNAL_SERVER_ERROR', status: 500 });
    t.notMatch((err as Error).message, /secret/);
  });

  await t.test('bus - a subject nobody serves gives BusError no_responders at once', async (t) => {
    const { a } = await setup(t);
    const start = performance.now();
    const err = await rejection(a.request('t.nobody.home', {}, 5000));
    const ms = performance.now() - start;
    t.ok(err instanceof BusError);
    t.match(err, { reason: 'no_responders', subject: 't.nobody.home' });
    t.ok(ms < 1000, `answered in ${ms.toFixed(0)} ms`);
  });

  await t.test('bus - a handler slower than the timeout gives BusError timeout', async (t) => {
    const { a, b } = await setup(t);
    await b.serve('t.slow', () => sleep(1500).then(() => 'late'));
    await b.flush();
    const start = performance.now();
    const err = await rejection(a.request('t.slow', {}, 200));
    const ms = performance.now() - start;
    t.ok(err instanceof BusError);
    t.match(err, { reason: 'timeout', subject: 't.slow' });
    t.ok(ms >= 190 && ms < 1000, `timed out after ${ms.toFixed(0)} ms`);
    t.equal(await a.request('t.slow', {}, 3000), 'late', 'a longer per-call timeout waits for the reply');
  });

  await t.test('bus - a `>` subject serves every subject below it', async (t) => {
    const { a, b } = await setup(t);
    await b.serve('t.shard.3.>', async (body, subject) => ({ body, subject }));
    await b.flush();
    t.strictSame(await a.request('t.shard.3.realm.7', { k: 1 }, 2000), { body: { k: 1 }, subject: 't.shard.3.realm.7' });
    t.strictSame(await a.request('t.shard.3.user.12', 'x', 2000), { body: 'x', subject: 't.shard.3.user.12' });
    t.match(await rejection(a.request('t.shard.4.realm.7', {}, 2000)), { reason: 'no_responders' }, 'another shard is not served');
    t.match(await rejection(a.request('t.shard.3', {}, 2000)), { reason: 'no_responders' }, '`>` needs at least one more token');
  });

  await t.test('bus - requests run concurrently: a parked request does not hold up others', async (t) => {
    const { a, b } = await setup(t);
    let release!: () => void;
    const parked = new Promise<void>((r) => (release = r));
    await b.serve('t.park.>', async (body, subject) => {
      if (subject === 't.park.wait') await parked;
      if (subject === 't.park.go') release();
      return body;
    });
    await b.flush();
    const waiting = a.request('t.park.wait', 'w', 3000);
    t.equal(await a.request('t.park.go', 'g', 3000), 'g');
    t.equal(await waiting, 'w');
  });

  await t.test('bus - each event reaches exactly one of two subscribers', async (t) => {
    const { a, b } = await setup(t);
    const got: [string, unknown][] = [];
    await a.subscribe('t.events.1', (body) => got.push(['a', body]));
    await b.subscribe('t.events.1', (body) => got.push(['b', body]));
    await a.flush();
    await b.flush();
    for (let i = 0; i < 50; i++) a.publish('t.events.1', { i });
    a.publish('t.events.other', { i: -1 });
    await a.flush();
    await sleep(200);
    t.equal(got.length, 50, 'no event lost, none delivered twice');
    t.strictSame(got.map(([, b]) => (b as { i: number }).i).sort((x, y) => x - y), Array.from({ length: 50 }, (_, i) => i));
  });

  await t.test('bus - a broadcast event reaches every broadcast subscriber, and one queue subscriber', async (t) => {
    const { a, b } = await setup(t);
    const got: string[] = [];
    await a.subscribe('t.public.>', (body) => got.push(`a:${(body as { i: number }).i}`), { broadcast: true });
    await b.subscribe('t.public.>', (body) => got.push(`b:${(body as { i: number }).i}`), { broadcast: true });
    await a.subscribe('t.public.1', () => got.push('queue-a'));
    await b.subscribe('t.public.1', () => got.push('queue-b'));
    await a.flush();
    await b.flush();
    a.publish('t.public.1', { i: 1 });
    await a.flush();
    await sleep(200);
    t.strictSame(got.filter((g) => !g.startsWith('queue')).sort(), ['a:1', 'b:1']);
    t.equal(got.filter((g) => g.startsWith('queue')).length, 1, 'queue-group subscribers still share');
  });

  await t.test('bus - publishMany delivers one event to each subject', async (t) => {
    const { a, b } = await setup(t);
    const got: string[] = [];
    await a.subscribe('t.many.1', (body) => got.push(`1:${(body as { x: number }).x}`));
    await b.subscribe('t.many.2', (body) => got.push(`2:${(body as { x: number }).x}`));
    await a.flush();
    await b.flush();
    a.publishMany(['t.many.1', 't.many.2', 't.many.nobody'], { x: 7 });
    await a.flush();
    await sleep(200);
    t.strictSame(got.sort(), ['1:7', '2:7']);
  });

  await t.test('bus - a subscriber that throws does not stop later events', { todo: known.throwingSubscriber ?? false }, async (t) => {
    const { a, b } = await setup(t);
    const got: number[] = [];
    await b.subscribe('t.events.throwing', (body) => {
      const { i } = body as { i: number };
      if (i === 0) throw new Error('boom');
      got.push(i);
    });
    await b.flush();
    a.publish('t.events.throwing', { i: 0 });
    a.publish('t.events.throwing', { i: 1 });
    await a.flush();
    await sleep(100);
    t.strictSame(got, [1]);
  });

  await t.test('bus - unsubscribe stops delivery of requests and events', async (t) => {
    const { a, b } = await setup(t);
    const events: string[] = [];
    const first = await b.serve('t.un.req.>', async () => 'first');
    const sub1 = await b.subscribe('t.un.events', () => events.push('first'));
    await b.flush();
    t.equal(await a.request('t.un.req.x', {}, 2000), 'first');
    await first.unsubscribe();
    await sub1.unsubscribe();
    t.match(await rejection(a.request('t.un.req.x', {}, 2000)), { reason: 'no_responders' });
    a.publish('t.un.events', {});
    await a.flush();
    await sleep(100);
    t.strictSame(events, [], 'no event after unsubscribe');
    await a.serve('t.un.req.>', async () => 'second');
    await a.subscribe('t.un.events', () => events.push('second'));
    await a.flush();
    t.equal(await a.request('t.un.req.x', {}, 2000), 'second', 'another server takes over');
    a.publish('t.un.events', {});
    await a.flush();
    await sleep(100);
    t.strictSame(events, ['second']);
    await first.unsubscribe();
    t.pass('unsubscribing twice is harmless');
  });

  await t.test('bus - requests beyond the in-flight limit get BusError busy', async (t) => {
    const { a, b } = await setup(t, { maxInFlight: 2 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await b.serve('t.busy', async (body) => {
      await gate;
      return body;
    });
    await b.flush();
    const held = [a.request('t.busy', 1, 3000), a.request('t.busy', 2, 3000)];
    await sleep(50);
    t.match(await rejection(a.request('t.busy', 3, 3000)), { reason: 'busy', subject: 't.busy' });
    release();
    t.strictSame(await Promise.all(held), [1, 2]);
    t.equal(await a.request('t.busy', 4, 3000), 4, 'room again once replies came back');
  });

  await t.test('bus - a closed bus refuses requests with BusError closed', async (t) => {
    const { a } = await setup(t);
    await a.close();
    t.match(await rejection(a.request('t.any', {}, 1000)), { reason: 'closed' });
    a.publish('t.any', {});
    t.pass('publishing on a closed bus is a no-op');
  });
}

t.test('LocalBus', async (t) => {
  await busSuite(
    t,
    async (t, opts) => {
      const bus = new LocalBus(opts?.maxInFlight);
      t.teardown(() => bus.close());
      return { a: bus, b: bus };
    },
    {},
  );
});

t.test('NatsBus', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const connectBus = async (t: Test, name: string, opts?: { maxInFlight?: number }) => {
    const bus = await NatsBus.connect(nats.url, name, { ...opts, log });
    t.teardown(() => bus.close());
    return bus;
  };
  await busSuite(t, async (t, opts) => ({ a: await connectBus(t, 'test-a', opts), b: await connectBus(t, 'test-b') }));

  await t.test('nats bus - clusters sharing one NATS hear only themselves', async (t) => {
    const connectAs = async (name: string, namespace?: string) => {
      const bus = await NatsBus.connect(nats.url, name, { namespace, log });
      t.teardown(() => bus.close());
      return bus;
    };
    const [one, two, plain] = [await connectAs('ns-one', 'parley_one'), await connectAs('ns-two', 'parley_two'), await connectAs('ns-plain')];
    const seen: string[] = [];
    await one.serve('parley.shard.7.>', async (_body, subject) => `one:${subject}`);
    await one.subscribe('parley.events.7', (body, subject) => seen.push(`one:${String(body)}:${subject}`));
    await two.subscribe('parley.events.7', (body, subject) => seen.push(`two:${String(body)}:${subject}`));
    await Promise.all([one.flush(), two.flush()]);
    t.equal(await one.request('parley.shard.7.realm.1', null, 2000), 'one:parley.shard.7.realm.1', 'a server sees the subject as subjects.ts names it');
    const err = await rejection(two.request('parley.shard.7.realm.1', null, 500));
    t.ok(err instanceof BusError && err.reason === 'no_responders', 'another cluster\'s server does not answer');
    t.ok((await rejection(plain.request('parley.shard.7.realm.1', null, 500))) instanceof BusError, 'nor does it answer the default namespace');
    two.publish('parley.events.7', 'from-two');
    plain.publish('parley.events.7', 'from-plain');
    await two.flush();
    await plain.flush();
    await sleep(200);
    t.same(seen, ['two:from-two:parley.events.7'], 'events stay in their cluster');
  });

  await t.test('nats bus - serving resumes after the server restarts', async (t) => {
    const server = await startNats();
    t.teardown(() => server.stop());
    const a = await NatsBus.connect(server.url, 'restart-a', { reconnectTimeWaitMs: 50, log });
    const b = await NatsBus.connect(server.url, 'restart-b', { reconnectTimeWaitMs: 50, log });
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    await b.serve('t.restart.>', async (body) => body);
    await b.flush();
    t.equal(await a.request('t.restart.x', 1, 2000), 1);
    await server.stop();
    const err = await rejection(a.request('t.restart.x', 2, 200));
    t.ok(err instanceof BusError, `while the server is down: ${(err as Error).message}`);
    const again = await startNats({ port: server.port });
    t.teardown(() => again.stop());
    const until = Date.now() + 10_000;
    let answer: unknown;
    while (Date.now() < until) {
      try {
        answer = await a.request('t.restart.x', 3, 300);
        break;
      } catch {
        await sleep(50);
      }
    }
    t.equal(answer, 3, 'both connections came back and the subscription was restored');
  });

  await t.test('nats bus - a process cut off from NATS misses what is published meanwhile, and hears so once back', async (t) => {
    const relay = await startRelay(nats);
    t.teardown(() => relay.stop());
    const cutOff = await NatsBus.connect(relay.url, 'cut-off', { reconnectTimeWaitMs: 50, log });
    const other = await connectBus(t, 'publisher');
    t.teardown(() => cutOff.close());
    let lost = 0;
    cutOff.onEventsLost(() => lost++);
    const seen: unknown[] = [];
    await cutOff.subscribe('t.partition', (body) => seen.push(body));
    await cutOff.flush();
    const publish = async (body: string) => {
      other.publish('t.partition', body);
      await other.flush();
      await sleep(100);
    };
    await publish('before');
    await relay.cut();
    await sleep(300);
    await publish('while cut off');
    await relay.restore();
    for (const until = Date.now() + 10_000; lost === 0 && Date.now() < until; ) await sleep(50);
    await cutOff.flush();
    await publish('after');
    t.same(seen, ['before', 'after'], 'the event published while it was away never arrives (NATS delivers at most once)');
    t.equal(lost, 1, 'the bus told its listener once, after reconnecting');
  });

  await t.test('nats bus - requests and replies larger than max_payload cross in chunks', async (t) => {
    const small = await startNats({ maxPayload: 64 * 1024 });
    t.teardown(() => small.stop());
    const a = await NatsBus.connect(small.url, 'chunks-a', { maxInFlight: 2, log });
    const b = await NatsBus.connect(small.url, 'chunks-b', { log });
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    const max = a.nc.info!.max_payload;
    t.equal(max, 64 * 1024, 'the server announces the small max_payload');
    // Multi-byte characters, so chunk boundaries fall inside them.
    const text = (n: number, seed: string) => Array.from({ length: n }, (_, i) => `${seed}${i}é👋`).join(',');
    const bigReply = { users: text(80_000, 'u'), n: 1 };
    await b.serve('t.chunks.>', async (body, subject) => {
      if (subject === 't.chunks.echo') return body;
      if (subject === 't.chunks.big') return bigReply;
      if (subject === 't.chunks.small') return 'fine';
      throw streamDoesNotExist(text(20_000, 'e'));
    });
    await b.flush();
    const replyBytes = Buffer.byteLength(JSON.stringify(bigReply));
    t.ok(replyBytes > 15 * max, `the reply is ${replyBytes} bytes, ${(replyBytes / max).toFixed(1)} × max_payload`);
    const start = performance.now();
    t.strictSame(await a.request('t.chunks.big', {}, 5000), bigReply, 'a reply of many chunks arrives whole');
    t.comment(`a ${(replyBytes / 1e6).toFixed(1)} MB reply in ${Math.ceil(replyBytes / max)} chunks took ${(performance.now() - start).toFixed(0)} ms`);
    const bigRequest = { text: text(30_000, 'r') };
    t.ok(Buffer.byteLength(JSON.stringify(bigRequest)) > 5 * max, 'the request exceeds max_payload');
    t.strictSame(await a.request('t.chunks.echo', bigRequest, 5000), bigRequest, 'a request of many chunks reaches the server whole, and its echo comes back');
    const err = await rejection(a.request('t.chunks.error', {}, 5000));
    t.ok(err instanceof ApiError && err.code === 'STREAM_DOES_NOT_EXIST' && (err.extra.stream as string).length > max, 'an error reply larger than max_payload arrives as the same ApiError');
    t.strictSame(
      await Promise.all([a.request('t.chunks.big', {}, 5000), a.request('t.chunks.echo', bigRequest, 5000)]),
      [bigReply, bigRequest],
      'two chunked requests at once, each with its own chunks',
    );
    for (let i = 0; i < 3; i++) t.equal(await a.request('t.chunks.small', {}, 2000), 'fine', `in-flight slots (2) were all given back (${i + 1})`);
    const text2 = await a.requestText('t.chunks.big', {}, 5000);
    t.equal(text2, JSON.stringify(bigReply), 'requestText gives the reply value\'s JSON text');
    const bigPieces = piecesOf(text(40_000, 'p'));
    await b.serve('t.pieces.big', async () => bigPieces);
    await b.flush();
    const got = await a.requestReply('t.pieces.big', {}, 5000);
    t.ok(got instanceof JsonPieces && got.text() === bigPieces.text(), 'a reply in pieces larger than max_payload arrives whole, as its pieces');
  });

  await t.test('nats bus - a chunked reply whose sender is gone fails at once with BusError closed, which callers do not retry', async (t) => {
    const a = await connectBus(t, 'gone-a');
    const b = await connectBus(t, 'gone-b');
    // A server that answers with a chunked reply's header, then is gone: nothing serves its chunks.
    const sub = b.nc.subscribe('t.gone', {
      callback: (_err, msg) => {
        const h = headers();
        h.set(CHUNKED_HEADER, `_INBOX.nobody.1 ${3 * 1024 * 1024} ${1024 * 1024}`);
        msg.respond(Empty, { headers: h });
      },
    });
    t.teardown(() => sub.unsubscribe());
    await b.flush();
    const start = performance.now();
    const err = await rejection(a.request('t.gone', {}, 5000));
    const ms = performance.now() - start;
    t.match(err, { name: 'BusError', reason: 'closed', subject: 't.gone' }, 'not no_responders: the request ran, so it must not be retried');
    t.ok(ms < 1000, `answered in ${ms.toFixed(0)} ms`);
  });

  await t.test('nats bus - a chunk that never comes ends in BusError timeout at the request\'s timeout', async (t) => {
    const a = await connectBus(t, 'lost-a');
    const b = await connectBus(t, 'lost-b');
    const fetched: string[] = [];
    const silent = b.nc.subscribe('_INBOX.silent.>', { callback: (_err, msg) => void fetched.push(msg.subject) });
    const sub = b.nc.subscribe('t.lost', {
      callback: (_err, msg) => {
        const h = headers();
        h.set(CHUNKED_HEADER, `_INBOX.silent.1 ${2 * 1024 * 1024} ${1024 * 1024}`);
        msg.respond(Empty, { headers: h });
      },
    });
    t.teardown(() => {
      sub.unsubscribe();
      silent.unsubscribe();
    });
    await b.flush();
    const start = performance.now();
    const err = await rejection(a.request('t.lost', {}, 600));
    const ms = performance.now() - start;
    t.match(err, { name: 'BusError', reason: 'timeout', subject: 't.lost' });
    t.ok(ms >= 550 && ms < 1500, `timed out after ${ms.toFixed(0)} ms, the request's own timeout`);
    t.strictSame(fetched.sort(), ['_INBOX.silent.1.0', '_INBOX.silent.1.1'], 'both chunks were asked for');
    t.equal(await a.request('t.lost.none', {}, 500).catch((e: BusError) => e.reason), 'no_responders', 'the bus goes on');
  });

  await t.test('nats bus - close() waits for a chunked reply to be fetched before it closes the connection', async (t) => {
    const small = await startNats({ maxPayload: 64 * 1024 });
    t.teardown(() => small.stop());
    const a = await NatsBus.connect(small.url, 'close-chunks-a', { log });
    const b = await NatsBus.connect(small.url, 'close-chunks-b', { log });
    t.teardown(() => a.close());
    const big = 'y'.repeat(1024 * 1024);
    await b.serve('t.close.big', async () => {
      await sleep(100);
      return big;
    });
    await b.flush();
    const pending = a.request('t.close.big', {}, 5000);
    await sleep(30);
    const closed = b.close();
    t.equal(await pending, big, 'the reply of 17 chunks arrived whole while its server was closing');
    await closed;
    t.ok(b.nc.isClosed(), 'then the connection closed');
  });

  await t.test('nats bus - close() lets a running handler reply first', async (t) => {
    const a = await connectBus(t, 'close-a');
    const b = await NatsBus.connect(nats.url, 'close-b', { log });
    await b.serve('t.closing', async () => {
      await sleep(200);
      return 'done';
    });
    await b.flush();
    const pending = a.request('t.closing', {}, 2000);
    await sleep(50);
    await b.close();
    t.equal(await pending, 'done');
  });
});
