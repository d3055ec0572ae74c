/**
 * An actor node: competes for shard leases and, for each shard it owns,
 * serves the shard's subjects, hosting the realm, user and queue actors that
 * hash to it. Actors are created on their first message, loading their state
 * from the store, and dropped when the shard is lost.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError, badRequest, shardMoving } from '../../lib/errors.ts';
import type { NarrowTerm } from '../../lib/narrow.ts';
import { FencedError, type Store } from '../../storage/store.ts';
import { Delivery } from '../events.ts';
import { RealmMsg, QueueMsg, UserMsg } from '../protocol.ts';
import { QueueActor } from '../queue/actor.ts';
import { RealmActor } from '../realm/actor.ts';
import { parseShardSubject, shardOf, subjects } from '../subjects.ts';
import { UserActor } from '../user/actor.ts';
import type { MessageSource } from '../user/messages.ts';
import type { Bus, Subscription } from './bus.ts';
import type { ActorContext } from './context.ts';
import { Journal } from './journal.ts';
import type { Leases, ShardGrant } from './leases.ts';
import { Mailbox, Parked } from './mailbox.ts';

export interface NodeOptions {
  nodeId: string;
  shards: number;
  siteUrl: string;
  requestTimeoutMs: number;
  heartbeatSecs: number;
}

const BootstrapMsg = z.object({
  type: z.literal('bootstrap'),
  name: z.string(),
  users: z.array(z.object({ email: z.string(), fullName: z.string(), role: z.number().int(), isBot: z.boolean().optional(), canCreateUsers: z.boolean().optional(), password: z.string().optional() })),
});
const RealmOrBootstrap = z.union([RealmMsg, BootstrapMsg]);
const QueueEnvelope = z.object({ userId: z.number().int(), msg: QueueMsg });

/** A hosted actor: its mailbox, its journal and the instance once loaded. */
interface Hosted<A> {
  mailbox: Mailbox;
  journal: Journal;
  actor: Promise<A>;
}

interface ShardHost {
  grant: ShardGrant;
  subs: Subscription[];
  realms: Map<number, Hosted<RealmActor>>;
  users: Map<number, Hosted<UserActor>>;
  queue: QueueActor;
  queueMailbox: Mailbox;
}

export class ActorNode {
  private shards = new Map<number, ShardHost>();
  private ticker: NodeJS.Timeout | null = null;
  private publicSub: Promise<Subscription> | null = null;

  constructor(
    private readonly bus: Bus,
    private readonly leases: Leases,
    private readonly store: Store,
    private readonly opts: NodeOptions,
    private readonly log: Logger,
  ) {}

  /**
   * Public-channel messages are broadcast to every node that holds a queue
   * registered with all_public_streams: the node subscribes when it gets its
   * first such queue (before the register is answered) and unsubscribes on
   * the tick after its last one is gone, so other nodes pay nothing for them.
   */
  private async watchPublic(): Promise<void> {
    this.publicSub ??= this.bus
      .subscribe(
        subjects.publicMessagesAll,
        (body) => {
          const d = Delivery.safeParse(body);
          if (!d.success || d.data.kind !== 'message') return this.log.warn('dropped a malformed public delivery');
          const delivery = d.data;
          for (const host of this.shards.values()) {
            void host.queueMailbox.post(() => host.queue.deliverPublic(delivery)).catch((err: unknown) => this.log.error({ err }, 'delivery failed'));
          }
        },
        { broadcast: true },
      )
      .then(async (s) => {
        await this.bus.flush();
        return s;
      });
    await this.publicSub;
  }

  private unwatchPublicIfUnused(): void {
    if (!this.publicSub) return;
    for (const host of this.shards.values()) if (host.queue.allPublicCount > 0) return;
    const sub = this.publicSub;
    this.publicSub = null;
    void sub.then((s) => s.unsubscribe()).catch(() => {});
  }

  async start(): Promise<void> {
    await this.leases.start(this.opts.nodeId, this.opts.shards, {
      acquired: (grant) => this.acquire(grant),
      lost: (shard) => this.release(shard),
    });
    const tickMs = Math.max(50, Math.min(1000, (this.opts.heartbeatSecs * 1000) / 5));
    this.ticker = setInterval(() => {
      for (const host of this.shards.values()) host.queue.tick();
      this.unwatchPublicIfUnused();
    }, tickMs);
    this.ticker.unref();
  }

  get ownedShards(): number[] {
    return [...this.shards.keys()];
  }

  async stop(): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    await this.publicSub?.then((s) => s.unsubscribe()).catch(() => {});
    await this.leases.stop();
    for (const shard of [...this.shards.keys()]) await this.release(shard);
  }

  private async acquire(grant: ShardGrant): Promise<void> {
    const host: ShardHost = { grant, subs: [], realms: new Map(), users: new Map(), queue: new QueueActor({ heartbeatSecs: this.opts.heartbeatSecs }), queueMailbox: new Mailbox() };
    this.shards.set(grant.shard, host);
    host.subs.push(await this.bus.serve(subjects.shardAll(grant.shard), (body, subject) => this.dispatch(subject, body)));
    host.subs.push(
      await this.bus.subscribe(subjects.events(grant.shard), (body) => {
        const d = Delivery.safeParse(body);
        if (!d.success) return this.log.warn({ issues: d.error.issues }, 'dropped a malformed delivery');
        void host.queueMailbox.post(() => host.queue.deliver(d.data)).catch((err: unknown) => this.log.error({ err }, 'delivery failed'));
      }),
    );
    await this.bus.flush();
    this.log.debug({ shard: grant.shard, token: grant.token }, 'shard acquired');
  }

  private async release(shard: number): Promise<void> {
    const host = this.shards.get(shard);
    if (!host) return;
    // From here the journals refuse new writes (the guard sees the shard gone);
    // wait for writes already sent, so the next owner loads what they wrote.
    this.shards.delete(shard);
    await Promise.all(host.subs.map((s) => s.unsubscribe()));
    await Promise.all([...host.realms.values(), ...host.users.values()].map((h) => h.journal.drain()));
    host.queue.closeAll();
    this.log.debug({ shard }, 'shard released');
  }

  private context(host: ShardHost, scope: string): { ctx: ActorContext; journal: Journal } {
    const { shard, token } = host.grant;
    const journal = new Journal(this.store, () => {
      if (!this.leases.valid(shard, token) || this.shards.get(shard) !== host) throw new FencedError(scope);
    });
    const ctx: ActorContext = { store: this.store, journal, publish: (d) => this.publishDelivery(d), siteUrl: this.opts.siteUrl, log: this.log.child({ actor: scope }) };
    return { ctx, journal };
  }

  private hosted<A>(host: ShardHost, map: Map<number, Hosted<A>>, id: number, scope: string, load: (ctx: ActorContext) => Promise<A>): Hosted<A> {
    let h = map.get(id);
    if (h && !h.journal.broken) return h;
    const { ctx, journal } = this.context(host, scope);
    const actor = (async () => {
      if (!(await this.store.claimFence(scope, host.grant.token))) throw new FencedError(scope);
      return load(ctx);
    })();
    h = { mailbox: new Mailbox(), journal, actor };
    map.set(id, h);
    actor.catch(() => map.get(id) === h && map.delete(id));
    return h;
  }

  private async run<A>(h: Hosted<A>, fn: (actor: A) => unknown): Promise<unknown> {
    const actor = await h.actor;
    const result = await h.mailbox.post(() => fn(actor));
    return result instanceof Parked ? result.promise : result;
  }

  private async dispatch(subject: string, body: unknown): Promise<unknown> {
    const target = parseShardSubject(subject);
    const host = target && this.shards.get(target.shard);
    if (!target || !host) throw shardMoving();
    try {
      switch (target.kind) {
        case 'realm': {
          const msg = parse(RealmOrBootstrap, body);
          const h = this.hosted(host, host.realms, target.id, `realm:${target.id}`, (ctx) => RealmActor.load(ctx, target.id));
          return await this.run(h, (a) => a.handle(msg));
        }
        case 'user': {
          const msg = parse(UserMsg, body);
          const lookup = (realmId: number, userId: number, narrow: NarrowTerm[]) =>
            this.bus.request(subjects.realm(shardOf('realm', realmId, this.opts.shards), realmId), { type: 'messageSources', userId, narrow }, this.opts.requestTimeoutMs) as Promise<{ sources: MessageSource[] }>;
          const h = this.hosted(host, host.users, target.id, `user:${target.id}`, (ctx) => UserActor.load(ctx, msg.realmId, target.id, lookup));
          return await this.run(h, (a) => a.handle(msg));
        }
        case 'queue': {
          const { userId, msg } = parse(QueueEnvelope, body);
          if (userId !== target.id) throw badRequest('Queue request for another user');
          const result = await host.queueMailbox.post(() => host.queue.handle(userId, msg));
          if (msg.type === 'register' && msg.options.allPublicStreams) await this.watchPublic();
          return result instanceof Parked ? await result.promise : result;
        }
      }
    } catch (err) {
      if (err instanceof FencedError) {
        this.log.warn({ shard: target.shard, err: err.message }, 'fenced: another node owns this shard now');
        throw shardMoving();
      }
      if (!(err instanceof ApiError)) this.log.error({ err, subject }, 'actor failed');
      throw err;
    }
  }

  /**
   * Sends a delivery to the queue actors of the shards its recipients live in:
   * the same payload to each (encoded once); each queue actor picks the
   * recipients whose queues it holds.
   */
  private publishDelivery(d: Delivery): void {
    const shards = new Set<number>();
    for (const id of d.userIds) shards.add(shardOf('user', id, this.opts.shards));
    const to = [...shards].map((s) => subjects.events(s));
    // A public-channel message also goes to every node's all_public_streams
    // queues; the recipients, listed in it, are skipped there.
    if (d.kind === 'message' && d.allPublic) to.push(subjects.publicMessages(d.realmId));
    this.bus.publishMany(to, d);
  }
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (!r.success) throw badRequest(`Invalid actor message: ${r.error.issues[0]?.message ?? 'malformed'}`);
  return r.data;
}
