/**
 * An actor node: competes for shard leases and, for each shard it owns,
 * serves the shard's subjects, hosting whatever actor kinds are registered
 * (`registry.ts`); it imports none of them. Actors are created on their first
 * message (a durable actor first claims its scope in the store with the
 * shard's fencing token, then loads its state) and dropped when the shard is
 * lost. Each owned shard also runs its durable timers.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { ApiError, badRequest, shardMoving, unavailable } from '../../lib/errors.ts';
import type { Release } from '../../lib/version.ts';
import { actorsHosted, shardsOwned } from '../../lib/metrics.ts';
import { FencedError, type Store } from '../../storage/store.ts';
import { T, type TimerRecord } from '../../storage/tables.ts';
import { CHECK } from '../events/check.ts';
import { Delivery, deliveryPlacements, isRealmWide } from '../events/delivery.ts';
import { parseShardSubject, shardOf, subjects } from '../subjects.ts';
import type { AnyHandler } from './action.ts';
import { type Bus, BusError, sharedEvent, type Subscription } from './bus.ts';
import type { ActorClient } from './client.ts';
import { type ActorContext, type ActorLimits, DEFAULT_ACTOR_LIMITS } from './context.ts';
import { ActorHost } from './host.ts';
import { clearHandoff, type Handoff, HANDOFF_REQUEST_MS, HANDOFF_SKIP_MS, HANDOFF_WAIT_MS, handoffScope, readHandoff, writeHandoff } from './handoff.ts';
import { Journal } from './journal.ts';
import type { Leases, ShardGrant } from './leases.ts';
import { actorKind, allKinds, type ActorKind } from './registry.ts';
import { ShardTimers } from './timers.ts';

export interface NodeOptions {
  nodeId: string;
  shards: number;
  siteUrl: string;
  heartbeatSecs: number;
  /** `DEFAULT_ACTOR_LIMITS` when absent. */
  limits?: ActorLimits;
  /** The release this process runs: event queues of another one get a restart event here (`lib/version.ts`). */
  release?: Release;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyKind = ActorKind<any, Record<string, AnyHandler<any>>>;

interface ShardHost {
  grant: ShardGrant;
  /** The shard's requests. */
  subs: Subscription[];
  /** The shard's deliveries (kept apart: a leaving owner takes them until the next one asks for the handoff). */
  events: Subscription | null;
  /** What the previous owner handed over (null: nothing); per-shard kinds load once it is settled. */
  handedOver: Promise<Handoff | null>;
  /** IDs of deliveries the previous owner applied to what it handed over: not applied again here. */
  skip: Set<string> | null;
  /** While this node hands the shard over: IDs of the deliveries it took since it stopped serving requests. */
  seen: Set<string> | null;
  /** Whether `handedOver` has settled (broadcasts for a kind not loaded wait for it till then). */
  settled: boolean;
  /** Actors by `<kind>:<id>`; per-shard kinds by `<kind>`. */
  hosts: Map<string, ActorHost<unknown>>;
  timers: ShardTimers | null;
}

export class ActorNode {
  private shards = new Map<number, ShardHost>();
  private ticker: NodeJS.Timeout | null = null;
  /** The operator's subjects (`parley cluster ...`). */
  private adminSubs: Subscription[] = [];
  /** Told by the operator to hand its shards over (`parley cluster drain`). */
  private draining = false;
  private broadcastSub: Promise<Subscription> | null = null;
  private readonly perShardKinds: AnyKind[];
  /** Removes this node's gauges (`lib/metrics.ts`) at stop. */
  private unreport: Array<() => void> = [];
  /** Handoffs this node offered that are not finished (stop waits for them). */
  private handoffs = new Set<Promise<void>>();
  /** Stopping with no other live node: nothing is offered. */
  private alone = false;
  /** Stopping in process (embedded): the per-shard kinds' state is written to the store for the next start (`park`). */
  private parking = false;
  /** Shards being handed over: they still take broadcasts until the next owner asks. */
  private leaving = new Map<number, ShardHost>();
  /** Makes `Delivery.id`s unique across nodes and restarts: `<node>.<random>.<n>`. */
  private readonly deliveryPrefix: string;
  private deliveries = 0;

  constructor(
    private readonly bus: Bus,
    private readonly leases: Leases,
    private readonly store: Store,
    private readonly actors: ActorClient,
    private readonly opts: NodeOptions,
    private readonly log: Logger,
  ) {
    this.perShardKinds = allKinds().filter((k) => k.perShard);
    this.deliveryPrefix = `${opts.nodeId}.${randomBytes(4).toString('hex')}.`;
  }

  async start(): Promise<void> {
    await this.leases.start(this.opts.nodeId, this.opts.shards, {
      acquired: (grant) => this.acquire(grant),
      lost: (shard, graceful) => this.release(shard, graceful),
    });
    // The operator's CLI: the cluster's leases from any node, this node's counts and drain from this one.
    this.adminSubs.push(await this.bus.serve(subjects.admin, () => this.leases.describe()));
    this.adminSubs.push(await this.bus.serve(subjects.nodeAdmin(this.opts.nodeId), (body) => this.admin(body)));
    this.bus.onEventsLost(() => this.eventsLost());
    this.unreport = [shardsOwned.add((set) => set(this.shards.size)), actorsHosted.add((set) => this.countActors(set))];
    const tickMs = Math.max(50, Math.min(1000, (this.opts.heartbeatSecs * 1000) / 5));
    this.ticker = setInterval(() => this.tick(), tickMs);
    this.ticker.unref();
  }

  get ownedShards(): number[] {
    return [...this.shards.keys()];
  }

  /** What the operator asks this node: its counts (`status`), or to hand every shard over (`drain`, as SIGTERM does, the process staying up). */
  private async admin(body: unknown): Promise<unknown> {
    const op = (body as { op?: string } | null)?.op;
    if (op === 'drain') {
      this.draining = true;
      // No longer the one to ask about the cluster: its leases are gone.
      await this.adminSubs.shift()?.unsubscribe();
      await this.stop();
      return this.status();
    }
    if (op === 'status') return this.status();
    throw badRequest(`unknown node operation ${String(op)}`);
  }

  private async status(): Promise<Record<string, unknown>> {
    const totals: Record<string, number> = {};
    for (const host of this.shards.values()) {
      for (const kind of this.perShardKinds) {
        if (!kind.stats) continue;
        const h = this.hostFor(host, kind, '0');
        for (const [k, v] of Object.entries(kind.stats(await h.state))) totals[k] = (totals[k] ?? 0) + v;
      }
    }
    return { nodeId: this.opts.nodeId, draining: this.draining, shards: this.ownedShards.sort((a, b) => a - b), ...totals };
  }

  async stop(): Promise<void> {
    for (const stop of this.unreport) stop();
    if (this.ticker) clearInterval(this.ticker);
    // The last node hands nothing over: nobody would ask for it.
    this.alone = await this.leases
      .describe()
      .then((v) => !v.nodes.some((n) => n.nodeId !== this.opts.nodeId))
      .catch(() => false);
    // What per-shard actors owe other actors goes before any shard is released and unloads its actors.
    await this.flushPerShard();
    // In process nothing runs while this process is down, so no event can be missed: the queues wait in the store.
    this.parking = this.bus.sharesEvents;
    await this.leases.stop();
    for (const shard of [...this.shards.keys()]) await this.release(shard, false);
    // The next owners ask for what this node hands over once the leases are released.
    await Promise.all(this.handoffs);
    await this.broadcastSub?.then((s) => s.unsubscribe()).catch(() => {});
  }

  /** Actors loaded, by kind, for the scrape: O(actors), at scrape time only. */
  private countActors(set: (value: number, labels: { kind: string }) => void): void {
    const counts = new Map<string, number>();
    for (const shard of this.shards.values()) for (const h of shard.hosts.values()) counts.set(h.kind.name, (counts.get(h.kind.name) ?? 0) + 1);
    for (const [kind, n] of counts) set(n, { kind });
  }

  private tick(): void {
    const now = Date.now();
    this.postToEveryShard('tick', (kind) => kind.tick && ((s) => kind.tick!(s, now)));
    this.syncBroadcasts();
  }

  /** The bus may have lost deliveries to this node's shards: each per-shard kind hears it (the queue actor ends its queues). */
  private eventsLost(): void {
    this.log.warn({ shards: this.shards.size }, 'events published while this node was off the bus may be lost');
    this.postToEveryShard('eventsLost', (kind) => kind.eventsLost && ((s) => kind.eventsLost!(s)));
  }

  /** Runs `flush` in the mailbox of each per-shard actor loaded here, and waits for every one (a failure is logged). */
  private async flushPerShard(): Promise<void> {
    const runs: Promise<unknown>[] = [];
    for (const host of this.shards.values()) {
      for (const kind of this.perShardKinds) {
        const h = kind.flush ? host.hosts.get(kind.name) : undefined;
        if (h) runs.push(h.state.then((s) => h.mailbox.post(() => kind.flush!(s))).catch((err: unknown) => this.log.warn({ err, kind: kind.name }, 'flush failed')));
      }
    }
    await Promise.all(runs);
  }

  /** Runs, in the mailbox of each per-shard kind of every shard held, what `job` gives for that kind (nothing: the kind is skipped). */
  private postToEveryShard(what: string, job: (kind: AnyKind) => ((state: unknown) => void) | undefined): void {
    for (const host of this.shards.values()) {
      for (const kind of this.perShardKinds) {
        const run = job(kind);
        if (!run) continue;
        const h = this.hostFor(host, kind, '0');
        void h.state.then((s) => h.mailbox.post(() => run(s))).catch((err: unknown) => this.log.error({ err, kind: kind.name }, `${what} failed`));
      }
    }
  }

  private async acquire(grant: ShardGrant): Promise<void> {
    let settle!: (h: Handoff | null) => void;
    const handedOver = new Promise<Handoff | null>((resolve) => (settle = resolve));
    const host: ShardHost = { grant, subs: [], events: null, handedOver, skip: null, seen: null, settled: false, hosts: new Map(), timers: null };
    this.shards.set(grant.shard, host);
    host.subs.push(await this.bus.serve(subjects.shardAll(grant.shard), (body, subject) => this.dispatch(subject, body)));
    // Every subscriber gets each delivery (no queue group): while a shard is handed over, the leaving
    // owner and this one both take them, and `skip` drops those the leaving owner applied (handoff.ts).
    host.events = await this.bus.subscribe(
      subjects.events(grant.shard),
      (body) => {
        const d = this.checkDelivery(body);
        if (d) this.deliver(host, d, false);
      },
      { broadcast: true },
    );
    // Channel messages come as broadcasts: taken before asking too, so none published meanwhile is missed.
    if (!this.bus.sharesEvents) await this.watchBroadcasts();
    await this.bus.flush();
    // Asked now that this node takes the deliveries; not awaited: other shards' acquisition goes on, and the
    // per-shard kinds of this one load once it is settled (requests and deliveries wait for them).
    const taken = this.takeHandoff(host).then(
      (h) => {
        host.settled = true;
        settle(h);
        return this.loadHandedOver(host, h).catch((err: unknown) => this.log.error({ err, shard: grant.shard }, 'loading the handed-over state failed'));
      },
      (err: unknown) => {
        this.log.warn({ err, shard: grant.shard }, 'taking the handed-over state failed; the shard starts empty');
        host.settled = true;
        settle(null);
      },
    );
    // In process, the queues kept at the last stop are loaded and take broadcasts before a timer fires or a request comes.
    if (this.bus.sharesEvents) await taken;
    const writer = await this.store.claim(`shard:${grant.shard}`, grant.token);
    if (!writer) throw new FencedError(`shard:${grant.shard}`);
    if (this.shards.get(grant.shard) !== host) return;
    host.timers = new ShardTimers(grant.shard, this.store, writer, (t) => this.fire(host, t), this.log.child({ shard: grant.shard }));
    await host.timers.start();
    this.log.debug({ shard: grant.shard, token: grant.token }, 'shard acquired');
  }

  private async release(shard: number, graceful: boolean): Promise<void> {
    const host = this.shards.get(shard);
    if (!host) return;
    // From here the journals refuse new writes (the guard sees the shard gone);
    // wait for writes already sent, so the next owner loads what they wrote.
    this.shards.delete(shard);
    // Still given broadcasts and noting deliveries from this moment, should it be handed over.
    if (graceful) {
      host.seen = new Set();
      this.leaving.set(shard, host);
    }
    host.timers?.stop();
    await Promise.all(host.subs.map((s) => s.unsubscribe()));
    await Promise.all([...host.hosts.values()].map((h) => h.drain()));
    if (graceful && this.handsOver(host)) return this.offerHandoff(host);
    if (this.parking) await this.park(host);
    if (this.leaving.get(shard) === host) this.leaving.delete(shard);
    await host.events?.unsubscribe();
    this.unload(host);
    this.log.debug({ shard }, 'shard released');
  }

  private unload(host: ShardHost): void {
    for (const h of host.hosts.values()) {
      if (h.kind.unload) void h.state.then((s) => h.kind.unload!(s)).catch(() => {});
    }
  }

  /** Whether the shard has memory-only state to hand over: a per-shard kind with `handOff` is loaded (in a cluster). */
  private handsOver(host: ShardHost): boolean {
    if (this.bus.sharesEvents || !host.events || this.alone) return false;
    return this.perShardKinds.some((k) => {
      const state = k.handOff ? host.hosts.get(k.name)?.current : undefined;
      return state !== undefined && (k.holdsState?.(state) ?? true);
    });
  }

  /**
   * The leaving side of a handover (handoff.ts): held requests answered, the
   * shard's deliveries still taken and noted, `handoff.<shard>` served until
   * the next owner asks or HANDOFF_WAIT_MS pass. Returns once offered; `stop`
   * waits for `this.handoffs`.
   */
  private async offerHandoff(host: ShardHost): Promise<void> {
    const { shard, token } = host.grant;
    const writer = await this.store.claim(handoffScope(shard), token).catch(() => null);
    const kinds = this.perShardKinds.filter((k) => k.handOff && host.hosts.has(k.name));
    const end = async () => {
      if (this.leaving.get(shard) === host) this.leaving.delete(shard);
      await host.events?.unsubscribe();
      host.events = null;
      this.unload(host);
    };
    if (!writer) return end();
    for (const kind of kinds) {
      const h = host.hosts.get(kind.name)!;
      void h.state.then((s) => h.mailbox.post(() => kind.quiesce?.(s))).catch(() => {});
    }
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    this.handoffs.add(finished);
    let asked = false;
    let sub: Subscription | null = null;
    const close = () => {
      clearTimeout(timer);
      if (this.leaving.get(shard) === host) this.leaving.delete(shard);
      this.handoffs.delete(finished);
      void sub?.unsubscribe().catch(() => {});
      finish();
    };
    const timer = setTimeout(() => {
      this.log.warn({ shard }, 'no node asked for the handed-over shard in time; its queues end');
      this.leaving.delete(shard);
      void end().finally(close);
    }, HANDOFF_WAIT_MS);
    sub = await this.bus.serve(subjects.handoff(shard), async () => {
      if (asked) throw shardMoving();
      asked = true;
      clearTimeout(timer);
      try {
        // From here the next owner alone takes the shard's deliveries; the mailbox runs those taken before `handOff`.
        if (this.leaving.get(shard) === host) this.leaving.delete(shard);
        await host.events?.unsubscribe();
        host.events = null;
        const data: Record<string, unknown> = {};
        for (const kind of kinds) {
          const h = host.hosts.get(kind.name)!;
          data[kind.name] = await h.state.then((s) => h.mailbox.post(() => kind.handOff!(s)));
        }
        await writeHandoff(writer, shard, { token, seen: [...host.seen!], kinds: data });
        this.log.info({ shard, token, deliveriesNoted: host.seen!.size }, 'shard state handed over');
        return { token };
      } finally {
        this.unload(host);
        setTimeout(close, 100).unref();
      }
    });
    await this.bus.flush();
  }

  /**
   * The taking side (handoff.ts): asks the previous owner, then reads what it
   * wrote under the handoff scope (claimed with this node's token first, so
   * nothing older can change it) and deletes it. Null when nothing was handed
   * over: no node is handing the shard over (first start, kill -9), or it failed.
   */
  private async takeHandoff(host: ShardHost): Promise<Handoff | null> {
    if (this.bus.sharesEvents) return this.takeParked(host);
    const { shard, token } = host.grant;
    let answer: { token: number };
    try {
      answer = (await this.bus.request(subjects.handoff(shard), { token }, HANDOFF_REQUEST_MS)) as { token: number };
    } catch (err) {
      if (err instanceof BusError && err.reason === 'no_responders') return null;
      throw err;
    }
    const writer = await this.store.claim(handoffScope(shard), token);
    if (!writer) return null;
    const found = await readHandoff(this.store, shard, answer.token);
    if (!found) throw new Error(`shard ${shard}: no handoff of token ${answer.token} in the store`);
    await clearHandoff(writer, shard, found.chunks);
    host.skip = new Set(found.handoff.seen);
    setTimeout(() => (host.skip = null), HANDOFF_SKIP_MS).unref();
    this.log.info({ shard, from: answer.token, token, skip: host.skip.size }, 'shard state taken over');
    return found.handoff;
  }

  /**
   * In process (embedded), at stop: writes what the per-shard kinds hold (the
   * event queues) under the handoff scope, as a leaving owner does for the
   * next one; the next start of this data directory takes it (`takeParked`),
   * as Zulip's Tornado dumps its queues at exit and loads them at start.
   * Safe only in process: while the process is down nothing else runs, so no
   * delivery is published that the queues would miss. A failure is logged;
   * the queues are then lost, as on a crash.
   */
  private async park(host: ShardHost): Promise<void> {
    const { shard, token } = host.grant;
    try {
      const data: Record<string, unknown> = {};
      for (const kind of this.perShardKinds) {
        const h = kind.handOff ? host.hosts.get(kind.name) : undefined;
        if (!h) continue;
        const state = await h.state;
        if (kind.holdsState && !kind.holdsState(state)) continue;
        data[kind.name] = await h.mailbox.post(() => kind.handOff!(state));
      }
      if (Object.keys(data).length === 0) return;
      const writer = await this.store.claim(handoffScope(shard), token);
      if (!writer) return;
      await writeHandoff(writer, shard, { token, seen: [], kinds: data });
      this.log.info({ shard }, 'shard state kept for the next start');
    } catch (err) {
      this.log.warn({ err, shard }, 'could not keep the shard state for the next start; its queues end');
    }
  }

  /** In process, at start: what the last stop kept for `shard` (`park`), deleted once read; null when nothing was. */
  private async takeParked(host: ShardHost): Promise<Handoff | null> {
    const { shard, token } = host.grant;
    const meta = await T.shardHandoffs.at(shard, -1).get(this.store);
    if (!meta || !('chunks' in meta)) return null;
    const writer = await this.store.claim(handoffScope(shard), token);
    if (!writer) return null;
    const found = await readHandoff(this.store, shard, meta.token);
    await clearHandoff(writer, shard, meta.chunks);
    if (found) this.log.info({ shard }, 'shard state kept at the last stop taken');
    return found?.handoff ?? null;
  }

  /**
   * Loads at once each per-shard kind something was handed over for (its
   * queues take the shard's deliveries from now, without waiting for a
   * request), and in process subscribes to broadcasts if it wants them (a
   * cluster node took them before asking for the handover).
   */
  private async loadHandedOver(host: ShardHost, h: Handoff | null): Promise<void> {
    if (!h || this.shards.get(host.grant.shard) !== host) return;
    for (const kind of this.perShardKinds) {
      if (h.kinds[kind.name] === undefined) continue;
      const state = await this.hostFor(host, kind, '0').state;
      if (this.bus.sharesEvents && kind.wantsBroadcasts?.(state)) await this.watchBroadcasts();
    }
  }

  /** The host of an actor, created (and for durable kinds, claimed and loaded) on first use. */
  private hostFor(shard: ShardHost, kind: AnyKind, id: string, first?: unknown): ActorHost<unknown> {
    const key = kind.perShard ? kind.name : `${kind.name}:${id}`;
    const existing = shard.hosts.get(key);
    if (existing && !existing.broken) return existing;
    // A broken host's state is let go (its timers and follow-ups stop) before the actor loads again.
    if (existing && kind.unload) void existing.state.then((s) => kind.unload!(s)).catch(() => {});
    const ctx = this.context(shard);
    const scope = key;
    const { token } = shard.grant;
    const loaded = (async () => {
      if (kind.perShard) return { state: await this.loadPerShard(shard, kind, ctx, id, first), journal: null };
      if (!kind.durable) return { state: await kind.load(ctx, id, first as never), journal: null };
      const writer = await this.store.claim(scope, token);
      if (!writer) throw new FencedError(scope);
      const journal = new Journal(writer, () => {
        if (!this.leases.valid(shard.grant.shard, token) || this.shards.get(shard.grant.shard) !== shard) throw new FencedError(scope);
      });
      return { state: await kind.load(ctx, id, first as never), journal };
    })();
    const h = new ActorHost<unknown>(kind, id, ctx, loaded);
    shard.hosts.set(key, h);
    h.state.catch(() => shard.hosts.get(key) === h && shard.hosts.delete(key));
    return h;
  }

  /** A per-shard kind's state: from what the previous owner handed over, or loaded afresh. */
  private async loadPerShard(shard: ShardHost, kind: AnyKind, ctx: ActorContext, id: string, first: unknown): Promise<unknown> {
    const handoff = await shard.handedOver;
    const data = handoff?.kinds[kind.name];
    return data !== undefined && kind.takeOver ? kind.takeOver(ctx, data) : kind.load(ctx, id, first as never);
  }

  private context(shard: ShardHost): ActorContext {
    return {
      store: this.store,
      shard: shard.grant.shard,
      actors: this.actors,
      publish: (d) => this.publish(d),
      announce: (a) => this.bus.publish(a.subject, a.body),
      timers: {
        schedule: (t) => shard.timers?.schedule(t),
        cancel: (t) => shard.timers?.cancel(t),
      },
      siteUrl: this.opts.siteUrl,
      heartbeatSecs: this.opts.heartbeatSecs,
      limits: this.opts.limits ?? DEFAULT_ACTOR_LIMITS,
      release: this.opts.release ?? null,
      log: this.log,
    };
  }

  private async fire(shard: ShardHost, t: TimerRecord): Promise<void> {
    const kind = actorKind(t.kind);
    if (!kind) throw new Error(`timer for unknown actor kind ${t.kind}`);
    if (this.shards.get(shard.grant.shard) !== shard) return;
    await this.hostFor(shard, kind, t.actor).fire(t);
  }

  private async dispatch(subject: string, body: unknown): Promise<unknown> {
    const target = parseShardSubject(subject);
    const shard = target && this.shards.get(target.shard);
    // A node whose lease ran out (paused, or cut off from Redis) answers nothing,
    // reads included: another node may own the shard and have moved on.
    if (!target || !shard || !this.leases.valid(target.shard, shard.grant.token)) throw shardMoving();
    try {
      const kind = actorKind(target.kind);
      if (!kind) throw badRequest(`Unknown actor kind ${target.kind}`);
      const parsed = kind.parse(body);
      if (!parsed.success) throw badRequest(`Invalid actor message: ${parsed.error.issues[0]?.message ?? 'malformed'}`);
      const msg = parsed.data;
      const h = this.hostFor(shard, kind, target.id, msg);
      const reply = await h.handle(msg);
      if (kind.wantsBroadcasts) await this.watchBroadcastsIfWanted(h, kind);
      return reply;
    } catch (err) {
      if (err instanceof FencedError) {
        this.log.warn({ shard: target.shard, err: err.message }, 'fenced: another node owns this shard now');
        // Nothing was written: the caller may send the request again, to the new owner.
        throw shardMoving();
      }
      if (err instanceof ApiError) throw err;
      this.log.error({ err, subject }, 'actor failed');
      // The outcome of a failed commit is unknown: the client must not assume either way.
      throw unavailable('The server could not complete the request; try again');
    }
  }

  /** Deliveries already checked, by the bus's value: one published to several of this node's shards is checked once. */
  private checked = new WeakMap<object, Delivery>();
  /**
   * Values that are themselves checked deliveries (a checked copy, a message
   * delivery handed over): a set, not entries that map a value to itself,
   * which V8's young-generation collector keeps alive (an ephemeron's value
   * is reached from its table), so every delivery outlived its scavenge and
   * was promoted.
   */
  private checkedValues = new WeakSet<object>();

  private checkDelivery(body: unknown): Delivery | null {
    const key = body !== null && typeof body === 'object' ? body : null;
    if (key && this.checkedValues.has(key)) return key as Delivery;
    const known = key && this.checked.get(key);
    if (known) return known;
    const d = this.parseDelivery(body);
    if (!d) return null;
    const checked = sharedEvent(d);
    if (key) this.checked.set(key, checked);
    this.checkedValues.add(checked);
    return checked;
  }

  /** A delivery checked against its schema (zod's copy of it), or null, logged, when it is malformed. */
  private parseDelivery(body: unknown): Delivery | null {
    const d = Delivery.safeParse(body);
    if (d.success) return d.data;
    this.log.warn({ issues: d.error.issues }, 'dropped a malformed delivery');
    return null;
  }

  /**
   * Hands a delivery to the per-shard kinds of a shard (the queue actor). A
   * broadcast goes only to the ones loaded (or handed over here): an actor
   * not loaded holds no queue that could want it. Until a handover to this
   * node settles, every delivery waits for it, in the order they came: one
   * that went straight to an actor a request created meanwhile (a client
   * polling its queue here) would pass those held before it, and the queue
   * would get the new realm owner's messages out of order (the rolling test).
   */
  private deliver(shard: ShardHost, d: Delivery, broadcast: boolean): void {
    if (d.id !== undefined) shard.seen?.add(d.id);
    if (!shard.settled) {
      void shard.handedOver.then((h) => this.deliverNow(shard, d, broadcast, h));
      return;
    }
    this.deliverNow(shard, d, broadcast, null);
  }

  private deliverNow(shard: ShardHost, d: Delivery, broadcast: boolean, handoff: Handoff | null): void {
    for (const kind of this.perShardKinds) {
      if (!kind.onDelivery) continue;
      if (broadcast && !shard.hosts.has(kind.name) && handoff?.kinds[kind.name] === undefined) continue;
      this.deliverTo(shard, kind, d, broadcast);
    }
  }

  private deliverTo(shard: ShardHost, kind: AnyKind, d: Delivery, broadcast: boolean): void {
    const h = this.hostFor(shard, kind, '0');
    // `skip` is read once the state is loaded (after a handover settled): the deliveries held back meanwhile included.
    void h.state.then((s) => (d.id !== undefined && shard.skip?.has(d.id) ? undefined : h.mailbox.post(() => kind.onDelivery!(s, d, broadcast)))).catch((err: unknown) => this.log.error({ err }, 'delivery failed'));
  }

  /**
   * Sends a delivery to the shards its recipients live in: the same payload
   * to each (encoded once); each shard's queue actor picks the recipients
   * whose queues it holds. A channel message names no recipients: it is
   * published once, on its realm's broadcast subject, which every node
   * holding event queues takes (O(1) here, whatever the audience); each of
   * that node's queue shards finds the channel's subscribers among its queues.
   */
  private publish(d: Delivery): void {
    // In a cluster each delivery gets an ID, for a shard's handover (handoff.ts); in process no shard moves.
    if (!this.bus.sharesEvents) d = { ...d, id: this.deliveryPrefix + (this.deliveries++).toString(36) };
    const shards = new Set<number>();
    for (const placement of deliveryPlacements(d)) shards.add(shardOf(placement, this.opts.shards));
    const to = [...shards].map((s) => subjects.events(s));
    if (isRealmWide(d)) to.push(subjects.broadcast(d.realmId));
    if (!this.bus.sharesEvents) return this.bus.publishMany(to, d);
    // In process, subscribers get the value published, found again (not checked twice) when it
    // reaches this node's shards. A message delivery goes as built (`handOver`); any other
    // goes as its checked copy (zod's parse builds new objects): those carry records this
    // actor keeps and may change later.
    const checked = d.kind === 'message' ? this.handOver(d) : this.checkDelivery(d);
    if (checked) this.bus.publishMany(to, checked);
  }

  /**
   * A message delivery given to this node's subscribers as it is, not copied:
   * its parts are made for it (the stored message is new, and changed later
   * only as a copy) and the queue actor only reads it. In check mode it is
   * checked against its schema and frozen all the way down, so a change to
   * any part of it, by this actor or a subscriber, throws in the test suites.
   */
  private handOver(d: Delivery): Delivery | null {
    if (CHECK && !this.parseDelivery(d)) return null;
    const shared = sharedEvent(d);
    this.checkedValues.add(shared);
    return shared;
  }

  /**
   * Broadcast deliveries (channel messages) reach a node only while one of
   * its per-shard actors wants them (it holds an event queue): the node
   * subscribes before that request is answered and unsubscribes on the tick
   * after the last one is gone, so other nodes pay nothing for them. One
   * subscription however many requests ask at once (two would deliver every
   * message twice), and each waits until it is in place.
   */
  private async watchBroadcastsIfWanted(h: ActorHost<unknown>, kind: AnyKind): Promise<void> {
    if (!this.broadcastSub && !kind.wantsBroadcasts!(await h.state)) return;
    await this.watchBroadcasts();
  }

  /** Takes broadcasts (one subscription), resolving once it is in place. */
  private async watchBroadcasts(): Promise<void> {
    if (this.broadcastSub) {
      await this.broadcastSub;
      return;
    }
    const sub = this.bus
      .subscribe(
        subjects.broadcastAll,
        (body) => {
          const d = this.checkDelivery(body);
          if (!d) return;
          for (const shard of this.shards.values()) this.deliver(shard, d, true);
          for (const shard of this.leaving.values()) this.deliver(shard, d, true);
        },
        { broadcast: true },
      )
      .then(async (s) => {
        await this.bus.flush();
        return s;
      });
    this.broadcastSub = sub;
    // A failed subscription is not kept: the next request (or tick) tries again.
    sub.catch(() => this.broadcastSub === sub && (this.broadcastSub = null));
    await sub;
  }

  /**
   * On each tick: takes broadcasts while a per-shard actor wants them (its
   * queues may have come other than through a request here, e.g. handed
   * over with a shard), lets them go once none does and no handover is
   * under way (a shard handed over here or away still needs them).
   */
  private syncBroadcasts(): void {
    if (this.leaving.size > 0) return;
    for (const shard of this.shards.values()) {
      if (!shard.settled) return;
      for (const kind of this.perShardKinds) {
        const h = shard.hosts.get(kind.name);
        const state = h?.current;
        if (state === undefined || !kind.wantsBroadcasts?.(state)) continue;
        if (!this.broadcastSub) void this.watchBroadcastsIfWanted(h!, kind).catch((err: unknown) => this.log.error({ err }, 'could not take broadcasts'));
        return;
      }
    }
    if (!this.broadcastSub) return;
    const sub = this.broadcastSub;
    this.broadcastSub = null;
    void sub.then((s) => s.unsubscribe()).catch(() => {});
  }
}
