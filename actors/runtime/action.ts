/**
 * The one shape of every state change, and of every read.
 *
 * An action runs in its actor's mailbox in these steps, and no other message
 * of the actor runs in between:
 *
 *   prepare?  async reads from the store (after earlier writes are durable);
 *             what it writes outside the store, `discard` undoes on refusal
 *   check     on read-only state: throws the API error, or returns a plan
 *   apply     changes the state in memory and records the writes in a `Tx`
 *   events?   the events the change causes, each with its audience
 *
 * Then, outside the mailbox, the journal makes the writes durable, and only
 * then are the events published and the reply sent. A rejected request has
 * thrown in `check`, before anything changed. Later messages see the new
 * state at once, but their replies too wait until every change made before
 * them is durable (see `ActorHost`), so no client ever sees a change that
 * could still be lost. (Zulip's `check_*` / `do_*` / `send_event_on_commit`.)
 *
 * A query reads state and replies; it may hand back `later(fn)` for work that
 * reads the store, which runs outside the mailbox once earlier writes are
 * durable.
 */
import type { z } from 'zod';
import type { WriteOp } from '../../storage/store.ts';
import { T, type TimerRecord } from '../../storage/tables.ts';
import type { Delivery } from '../events/delivery.ts';
import type { ActorContext } from './context.ts';
import type { Parked } from './mailbox.ts';
import type { JsonPieces, JsonText } from './bus.ts';

/** Who sends a message: a user of a realm, or the server itself (`userId` null). */
export interface Caller {
  realmId: number;
  userId: number | null;
}

/** A message as it reaches a handler: its type, its caller and its fields. */
export type Msg<F> = F & { type: string; caller: Caller };

/** A timer change recorded by an action, applied to the in-memory wheel once durable. */
export type TimerChange = { set: TimerRecord } | { clear: TimerRecord };

/** A bus message for every process that listens (not an event for a user's queue), sent once the change is durable. */
export interface Announcement {
  subject: string;
  body: unknown;
}

/**
 * How long after its commit a follow-up (a timer an action sets for work
 * after the commit: marking read on mute, outgoing webhooks) runs: at once;
 * tests raise `PARLEY_FOLLOW_UP_DELAY_MS` to stop the server in between.
 */
export const FOLLOW_UP_DELAY_MS = Number(process.env.PARLEY_FOLLOW_UP_DELAY_MS ?? 0);

/** The writes and timer changes of one action, made durable together. */
export class Tx {
  readonly ops: WriteOp[] = [];
  readonly timers: TimerChange[] = [];
  readonly announcements: Announcement[] = [];

  constructor(
    /** The actor: kind, id and shard, which own its timers. */
    private readonly actor: { kind: string; id: string; shard: number },
  ) {}

  write(...ops: WriteOp[]): void {
    this.ops.push(...ops);
  }

  /**
   * A durable timer: at `at` (ms since the epoch) the actor's `name` timer
   * handler runs with `payload`, at least once, also after restarts and shard
   * moves. `ref` tells timers of the same name apart (e.g. an object's ID).
   * A time in the past means now; returns the time used, which `clearTimer`
   * needs.
   */
  setTimer(name: string, at: number, payload: unknown, ref: number): number {
    const when = Math.max(at, Date.now());
    const t: TimerRecord = { kind: this.actor.kind, actor: this.actor.id, name, ref, at: when, payload };
    this.ops.push(T.timers.at(this.actor.shard, t).put(t));
    this.timers.push({ set: t });
    return when;
  }

  /**
   * Tells every process listening on `subject` (e.g. every gateway's
   * directory of organizations) about the change, once it is durable.
   */
  announce(subject: string, body: unknown): void {
    this.announcements.push({ subject, body });
  }

  /** Cancels a timer set with the same name, time and ref. */
  clearTimer(name: string, at: number, ref: number): void {
    const t: TimerRecord = { kind: this.actor.kind, actor: this.actor.id, name, ref, at, payload: null };
    this.ops.push(T.timers.at(this.actor.shard, t).delete());
    this.timers.push({ clear: t });
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Fields = z.ZodObject<any>;

/**
 * `P` is the plan `check` returns, `A` what `apply` returns (what it made:
 * the events are computed from it), `R` the caller's reply (`reply(A)`, or
 * `A` itself when the action has no `reply`), `X` what `prepare` read.
 */
export interface ActionDef<S, Z extends Fields, P, R, X = undefined, A = R> {
  kind: 'action';
  type: string;
  /** The message's own fields (`type` and `caller` are added by the registry). */
  fields: Z;
  /** Reads the store before `check`; runs inside the mailbox once earlier writes are durable. */
  prepare?(state: Readonly<S>, msg: Msg<z.output<Z>>, ctx: ActorContext): Promise<X>;
  /**
   * Undoes what `prepare` did outside the store (e.g. a file's bytes written
   * under a fresh name that only the planned row would name) when `check`
   * refuses the request, before the refusal is answered. Not called when the
   * commit fails: the actor's next claim may still complete that commit.
   */
  discard?(facts: X, ctx: ActorContext): Promise<void>;
  /** Validates and authorizes on read-only state; throws an ApiError or returns the plan. */
  check(state: Readonly<S>, msg: Msg<z.output<Z>>, facts: X, ctx: ActorContext): P;
  /** Makes the planned change in memory and records its writes; returns what it made (the reply, without `reply`). */
  apply(state: S, plan: P, tx: Tx, ctx: ActorContext): A;
  /** The events the change causes, from what `apply` made, computed right after it and published once it is durable. */
  events?(state: Readonly<S>, plan: P, applied: A): Delivery[];
  /** The caller's reply, from what `apply` made (when that is more than the reply). */
  reply?(applied: A): R;
  /**
   * For a request too large for one turn of the mailbox (it would hold every other request of the
   * actor): the rest of it after this step, as a message of its own, or null when it is done.
   * Called after `events`, with `turnMs`, the CPU time this step's turn took so far (check, apply,
   * events; the process's, other threads included), so that the next step can be sized to it. The rest is posted to the
   * mailbox once this step is durable (its events published), behind the messages that came
   * meanwhile, and runs as a message does: check, apply, events, commit. The caller's reply is
   * `merge` of every step's, sent after the last; a step that fails answers its error, the steps
   * before it staying done.
   */
  rest?(plan: P, applied: A, msg: Msg<z.output<Z>>, turnMs: number): Msg<z.output<Z>> | null;
  /** The caller's one reply from every step's, in order (with `rest`). */
  merge?(replies: R[]): R;
}

/** Work a query does outside the mailbox, after earlier writes are durable. */
export class Later<R> {
  constructor(readonly run: () => Promise<R>) {}
}
export const later = <R>(run: () => Promise<R>): Later<R> => new Later(run);

export interface QueryDef<S, Z extends Fields, R> {
  kind: 'query';
  type: string;
  fields: Z;
  /**
   * Returns the reply, or `later(fn)` for store reads (run outside the
   * mailbox once earlier writes are durable), or a `Parked` reply that
   * completes on its own (a long poll), which frees the mailbox at once.
   */
  run(state: Readonly<S>, msg: Msg<z.output<Z>>, ctx: ActorContext): R;
  /**
   * Runs at once, beside the mailbox, instead of waiting behind the messages
   * queued before it. Only for a `run` that reads memory synchronously and
   * returns a plain reply (no `later`, no `Parked`): the state it sees is then
   * the state between two messages' synchronous steps (`check` and `apply`
   * run without an `await` between them), so it shows every change answered
   * before it was asked and none half made. Its reply still waits until the
   * changes it may show are durable.
   */
  concurrent?: boolean;
}

/** A durable timer's handler: an action whose message is the timer's payload. */
export interface TimerDef<S, V, P, R, E = undefined> {
  name: string;
  /**
   * Work outside the mailbox before the handler runs (a side effect such as
   * sending mail, which must not hold the actor): it reads the state without
   * changing it. If it throws, the timer runs again later (its row stays);
   * its result reaches `check`, whose commit records that the work is done.
   */
  effect?(state: Readonly<S>, payload: V, ctx: ActorContext): Promise<E>;
  /**
   * Inside the mailbox, once every earlier write is durable, before `check`
   * (as an action's `prepare`): reads the store again where what `effect`
   * read outside the mailbox may have changed since, and returns what still
   * holds. Nothing else runs between it and the commit.
   */
  settle?(state: Readonly<S>, payload: V, ctx: ActorContext, done: E): Promise<E>;
  check(state: Readonly<S>, payload: V, ctx: ActorContext, done: E): P;
  apply(state: S, plan: P, tx: Tx, ctx: ActorContext): R;
  events?(state: Readonly<S>, plan: P, reply: R): Delivery[];
}

/** Declares a state change; types flow from `fields` into `check`, `apply` and the reply. */
export function defineAction<S>() {
  return <Z extends Fields, P, A, X = undefined, R = A>(def: Omit<ActionDef<S, Z, P, R, X, A>, 'kind'>): ActionDef<S, Z, P, R, X, A> => ({ kind: 'action', ...def });
}

/** Declares a read. */
export function defineQuery<S>() {
  return <Z extends Fields, R>(def: Omit<QueryDef<S, Z, R>, 'kind'>): QueryDef<S, Z, R> => ({ kind: 'query', ...def });
}

/** Declares a durable timer's handler. */
export function defineTimer<S>() {
  return <V, P, R, E = undefined>(def: TimerDef<S, V, P, R, E>): TimerDef<S, V, P, R, E> => def;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyHandler<S> = ActionDef<S, any, any, any, any, any> | QueryDef<S, any, any>;

/** The reply a handler's caller receives. */
export type ReplyOf<H> = H extends { kind: 'action'; reply?: (applied: never) => infer R }
  ? R
  : H extends { kind: 'query'; run: (...args: never[]) => infer Q }
    ? Q extends Later<infer L>
      ? L
      : Q extends Parked<infer K>
        ? K
        : Awaited<Q> extends JsonText | JsonPieces
          ? Record<string, unknown> // a reply built as JSON text: an object (the caller parses it or forwards the text)
          : Awaited<Q>
    : never;

/** The fields a handler's caller sends (its input, before zod defaults). */
export type FieldsOf<H> = H extends { fields: infer Z extends z.ZodType } ? NoIndex<z.input<Z>> : never;
/** `z.object({})` inputs as `Record<string, never>`; a message with no fields of its own is `{}`. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
type NoIndex<I> = string extends keyof I ? {} : I;
