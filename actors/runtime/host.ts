/**
 * Hosts one actor: its mailbox, its state and (for durable kinds) its journal,
 * and runs each message in the one shape of `action.ts`:
 *
 *   check (read-only) -> apply (memory + Tx) -> events computed
 *   -> journal makes the Tx durable -> events published -> reply
 *
 * Replies of queries wait for the changes made before them to be durable
 * (`Journal.barrier`), so a reply never shows a change that could still be
 * lost. A failed commit breaks the journal: the node then drops this host and
 * loads the actor again from the store.
 */
import { ApiError } from '../../lib/errors.ts';
import { mailboxStats } from '../../lib/metrics.ts';
import { FencedError } from '../../storage/store.ts';
import { T, type TimerRecord } from '../../storage/tables.ts';
import type { Delivery } from '../events/delivery.ts';
import { checkDelivery } from '../events/check.ts';
import { type ActionDef, type AnyHandler, Later, type Msg, type TimerDef, Tx } from './action.ts';
import type { ActorContext } from './context.ts';
import type { Journal } from './journal.ts';
import { Mailbox, Parked } from './mailbox.ts';
import type { ActorKind } from './registry.ts';

/**
 * A pause between the steps of an action done in steps (ms, `PARLEY_STEP_PAUSE_MS`; 0, the default:
 * one turn of the event loop). Tests raise it to make a request outlast the gateway's timeout.
 */
const STEP_PAUSE_MS = Number(process.env.PARLEY_STEP_PAUSE_MS ?? 0);

export class ActorHost<S> {
  readonly mailbox: Mailbox;
  /** The state, once loaded (after the actor's scope was claimed, for durable kinds). */
  readonly state: Promise<S>;
  /** Null until loaded, and always for kinds whose state is memory only. */
  private journal: Journal | null = null;
  /** The state once loaded, for synchronous looks (undefined before). */
  current: S | undefined;

  constructor(
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    readonly kind: ActorKind<S, Record<string, AnyHandler<any>>>,
    readonly id: string,
    private readonly ctx: ActorContext,
    loaded: Promise<{ state: S; journal: Journal | null }>,
  ) {
    this.mailbox = new Mailbox(mailboxStats(kind.name));
    this.state = loaded.then((l) => {
      this.journal = l.journal;
      this.current = l.state;
      return l.state;
    });
  }

  /** True once a commit failed: the node must load the actor again. */
  get broken(): boolean {
    return this.journal?.broken ?? false;
  }

  /**
   * Resolves once a durable actor is loaded (its load reads the store: a node must not close it under
   * one) and every commit started so far has finished; a load that failed has nothing to wait for.
   */
  async drain(): Promise<void> {
    if (this.kind.durable) await this.state.catch(() => {});
    await this.journal?.drain();
  }

  /** Runs a validated message; resolves with its reply once it may be sent. */
  async handle(msg: Msg<unknown>): Promise<unknown> {
    const state = await this.state;
    const handler = this.kind.handlers[msg.type];
    if (!handler) throw new Error(`${this.kind.name}: no handler for ${msg.type}`);
    if (handler.kind === 'query' && handler.concurrent) {
      const now = this.runQuery(handler, state, msg);
      return now instanceof Parked ? now.promise : now;
    }
    if (handler.kind === 'action' && handler.rest) return this.runSteps(handler, state, msg);
    const out = await this.mailbox.post(() => (handler.kind === 'action' ? this.runAction(handler, state, msg) : this.runQuery(handler, state, msg)));
    return out instanceof Parked ? out.promise : out;
  }

  /**
   * An action in steps (`ActionDef.rest`): each step a message of the mailbox of its own, posted
   * once the step before is durable and the event loop has taken the I/O that came meanwhile, so
   * that the requests waiting run before the next step, not after it.
   */
  private async runSteps(def: ActionDef<S, any, unknown, unknown, unknown, unknown>, state: S, msg: Msg<unknown>): Promise<unknown> {
    const replies: unknown[] = [];
    for (let step: Msg<unknown> | null = msg; step; ) {
      const current: Msg<unknown> = step;
      step = null;
      const out = await this.mailbox.post(() => this.runAction(def, state, current, (next) => (step = next)));
      replies.push(out instanceof Parked ? await out.promise : out);
      // The step's commit resolved in a callback of the event loop: the next step, posted now, would
      // run before the requests that arrived meanwhile have reached the mailbox.
      if (step) await new Promise((r) => (STEP_PAUSE_MS > 0 ? setTimeout(r, STEP_PAUSE_MS) : setImmediate(r)));
    }
    return def.merge ? def.merge(replies) : replies[replies.length - 1];
  }

  /** Runs a due timer's handler; the timer's row is deleted in the same commit. */
  async fire(timer: TimerRecord): Promise<void> {
    const state = await this.state;
    const def = this.kind.timers?.[timer.name];
    if (!def) throw new Error(`${this.kind.name}: no timer handler ${timer.name}`);
    // A failed effect throws out of `fire`: the wheel runs the timer again later.
    const done = def.effect ? await def.effect(state, timer.payload, this.ctx) : undefined;
    const out = await this.mailbox.post(() =>
      def.settle
        ? (async () => {
            await this.barrier();
            return this.runTimer(def, state, timer, timer.payload, await def.settle!(state, timer.payload, this.ctx, done));
          })()
        : this.runTimer(def, state, timer, timer.payload, done),
    );
    if (out instanceof Parked) await out.promise;
  }

  private runAction(def: ActionDef<S, any, unknown, unknown, unknown, unknown>, state: S, msg: Msg<unknown>, onRest?: (rest: Msg<unknown> | null) => void): unknown {
    if (!def.prepare) {
      const started = process.cpuUsage();
      return this.commit(state, def.check(state, msg, undefined, this.ctx), def, msg, onRest, started);
    }
    // Facts from the store: read once earlier writes are durable, still inside the mailbox.
    return (async () => {
      await this.barrier();
      const facts = await def.prepare!(state, msg, this.ctx);
      const started = process.cpuUsage();
      let plan: unknown;
      try {
        plan = def.check(state, msg, facts, this.ctx);
      } catch (err) {
        // Refused: what `prepare` wrote outside the store goes before the refusal is answered.
        if (def.discard) await def.discard(facts, this.ctx).catch((e: unknown) => this.ctx.log.warn({ err: e, type: msg.type }, 'discarding a refused request\'s side effect failed'));
        throw err;
      }
      return this.commit(state, plan, def, msg, onRest, started);
    })();
  }

  private runTimer(def: TimerDef<S, unknown, unknown, unknown, unknown>, state: S, timer: TimerRecord, payload: unknown, effect: unknown): unknown {
    const done = T.timers.at(this.ctx.shard, timer).delete();
    let plan: unknown;
    try {
      plan = def.check(state, payload, this.ctx, effect);
    } catch (err) {
      // A timer whose work is no longer possible (or already done) is deleted all the same.
      if (!(err instanceof ApiError)) throw err;
      const tx = this.tx();
      tx.write(done);
      return this.durable(tx, [], null);
    }
    const tx = this.tx();
    const reply = def.apply(state, plan, tx, this.ctx);
    tx.write(done);
    const events = def.events?.(state, plan, reply) ?? [];
    this.kind.changed?.(state, tx.ops, events);
    if (this.kind.journalWrites) tx.write(...this.kind.journalWrites(state, tx.ops));
    return this.durable(tx, events, reply);
  }

  /**
   * `check` has passed (the process's CPU use was `started` before it): apply the plan, compute its
   * events, then wait for durability.
   */
  private commit(state: S, plan: unknown, def: ActionDef<S, any, unknown, unknown, unknown, unknown>, msg: Msg<unknown>, onRest: ((rest: Msg<unknown> | null) => void) | undefined, started: NodeJS.CpuUsage): unknown {
    const tx = this.tx();
    const applied = def.apply(state, plan, tx, this.ctx);
    const events = def.events?.(state, plan, applied) ?? [];
    if (onRest && def.rest) {
      // CPU, not wall time: on a loaded machine a turn's wall time is mostly other processes' (a step
      // sized by it would shrink to its fixed costs and the request take several times as long).
      const cpu = process.cpuUsage(started);
      onRest(def.rest(plan, applied, msg, (cpu.user + cpu.system) / 1000));
    }
    this.kind.changed?.(state, tx.ops, events);
    if (this.kind.journalWrites) tx.write(...this.kind.journalWrites(state, tx.ops));
    return this.durable(tx, events, def.reply ? def.reply(applied) : applied);
  }

  private tx(): Tx {
    return new Tx({ kind: this.kind.name, id: this.id, shard: this.ctx.shard });
  }

  /** Makes the Tx durable, then publishes the events and registers timers; the reply waits for all of it. */
  private durable(tx: Tx, events: Delivery[], reply: unknown): unknown {
    for (const d of events) checkDelivery(d, this.ctx.log);
    if (tx.ops.length === 0) {
      if (this.journal?.idle === false) return new Parked(this.barrier().then(() => this.publish(tx, events, reply)));
      return this.publish(tx, events, reply);
    }
    if (!this.journal) throw new Error(`${this.kind.name} keeps no stored state but an action wrote to the store`);
    return new Parked(this.journal.append(tx.ops).then(() => this.publish(tx, events, reply)));
  }

  private publish(tx: Tx, events: Delivery[], reply: unknown): unknown {
    for (const d of events) this.ctx.publish(d);
    for (const a of tx.announcements) this.ctx.announce(a);
    for (const change of tx.timers) {
      if ('set' in change) this.ctx.timers.schedule(change.set);
      else this.ctx.timers.cancel(change.clear);
    }
    return reply;
  }

  private runQuery(def: Extract<AnyHandler<S>, { kind: 'query' }>, state: S, msg: Msg<unknown>): unknown {
    const out = def.run(state, msg, this.ctx);
    if (out instanceof Parked) return out;
    if (out instanceof Later) return new Parked(this.barrier().then(() => out.run()));
    if (this.journal && !this.journal.idle) return new Parked(this.barrier().then(() => out));
    return out;
  }

  private barrier(): Promise<void> {
    return this.journal ? this.journal.barrier() : Promise.resolve();
  }
}

/** Whether an error means the node lost the actor's shard (nothing was written). */
export const isFenced = (err: unknown): boolean => err instanceof FencedError;
