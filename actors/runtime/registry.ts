/**
 * Actor kinds register themselves here; the runtime (`node.ts`, `host.ts`)
 * finds them by name and knows nothing else of them. Adding a kind touches no
 * runtime file: write its `ref.ts` (name and placement, what callers import)
 * and its `actor.ts` (`defineActor`), and import the latter in
 * `actors/index.ts`.
 */
import { z } from 'zod';
import type { Delivery } from '../events/delivery.ts';
import type { AnyHandler, Caller, FieldsOf, Msg, ReplyOf, TimerDef } from './action.ts';
import type { ActorContext } from './context.ts';
import type { WriteOp } from '../../storage/store.ts';

const Id = z.number().int().nonnegative();
export const CallerSchema = z.object({ realmId: Id, userId: Id.nullable() }).strict();

/**
 * What a caller needs to reach an actor kind: its name and where its actors
 * live, typed by the kind's handlers (a type-only import) so that messages
 * and replies are checked at compile time.
 */
export interface ActorRef<H> {
  readonly kind: string;
  /** The placement key of an actor ID: actors with equal keys share a shard. */
  placement(id: string): string;
  /** Type only: the kind's handlers. */
  readonly __handlers?: H;
}

export function actorRef<H>(kind: string, placement: (id: string) => string): ActorRef<H> {
  return { kind, placement };
}

export interface ActorKindDef<S, H extends Record<string, AnyHandler<S>>> {
  ref: ActorRef<unknown>;
  /** Whether the state is stored: the host claims the actor's scope and journals its changes. */
  durable: boolean;
  /** One instance per shard serving every ID that hashes there (the queue actor), not one per ID. */
  perShard?: boolean;
  /** Builds the state (from the store, for durable kinds) when the first message arrives. */
  load(ctx: ActorContext, id: string, first: Msg<unknown>): Promise<S>;
  handlers: H;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  timers?: Record<string, TimerDef<S, any, any, any, any>>;
  /** Per-shard kinds: takes the events published for the shard (or, `broadcast`, for every node). */
  onDelivery?(state: S, delivery: Delivery, broadcast: boolean): void;
  /** Per-shard kinds: whether the node must take broadcast deliveries for this shard now. */
  wantsBroadcasts?(state: S): boolean;
  /** Per-shard kinds: deliveries published for the shard may have been lost (the node was off the bus for a while). */
  eventsLost?(state: S): void;
  /** Per-shard kinds: called a few times a second (heartbeats, expiry). */
  tick?(state: S, now: number): void;
  /** Per-shard kinds: counts for the operator's view of a node (`parley cluster status`); read-only. */
  stats?(state: S): Record<string, number>;
  /**
   * Called after each change is applied (in the mailbox, before it is
   * durable), with the change's writes and events: for state derived from
   * the rest that must follow it (the realm's pre-encoded register parts).
   */
  changed?(state: S, writes: readonly WriteOp[], events: readonly Delivery[]): void;
  /**
   * Called after `changed`, in the mailbox and in commit order: writes to
   * add to the change's own commit (the realm's journal rows and checkpoint
   * parts, `actors/realm/state/checkpoint.ts`). May add writes to a change that
   * made none.
   */
  journalWrites?(state: S, writes: readonly WriteOp[]): WriteOp[];
  /** Called when the node stops hosting the actor (shard released). */
  unload?(state: S): void;
  /**
   * Per-shard kinds: sends what the kind owes other actors and has not sent
   * yet (the queue's activity reports), resolving once they have it. A
   * stopping node runs it in every shard before it releases any, so that the
   * actors it goes to (realms, in any shard) are still loaded here.
   */
  flush?(state: S): Promise<void>;
  /**
   * Per-shard kinds whose memory-only state moves with the shard when it is
   * handed over gracefully (`actors/runtime/handoff.ts`). `quiesce`: the
   * shard takes no more requests here; answer the ones held (long polls).
   * `handOff`: the state as JSON data, run in the mailbox once the last
   * delivery this node takes for the shard has been applied. `takeOver`:
   * the next owner's `load` when such data came.
   */
  quiesce?(state: S): void;
  /** Whether there is anything to hand over (an empty shard is not offered: nobody waits for it). */
  holdsState?(state: S): boolean;
  handOff?(state: S): unknown;
  takeOver?(ctx: ActorContext, data: unknown): Promise<S>;
}

/** A registered kind, with the zod union of its messages. */
export interface ActorKind<S, H extends Record<string, AnyHandler<S>>> extends ActorKindDef<S, H> {
  readonly name: string;
  /** Validates a message that crossed the bus. */
  parse(body: unknown): z.ZodSafeParseResult<Msg<unknown>>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyKind = ActorKind<any, Record<string, AnyHandler<any>>>;
const kinds = new Map<string, AnyKind>();

export function defineActor<S, H extends Record<string, AnyHandler<S>>>(def: ActorKindDef<S, H>): ActorKind<S, H> {
  const name = def.ref.kind;
  if (kinds.has(name)) throw new Error(`actor kind ${name} defined twice`);
  const variants = Object.entries(def.handlers).map(([type, h]) => {
    if (h.type !== type) throw new Error(`${name}: handler ${type} declares type ${h.type}`);
    return h.fields.extend({ type: z.literal(type), caller: CallerSchema });
  });
  if (variants.length === 0) throw new Error(`${name}: no handlers`);
  const union = z.discriminatedUnion('type', variants as [(typeof variants)[number], ...(typeof variants)[number][]]);
  const kind: ActorKind<S, H> = { ...def, name, parse: (body) => union.safeParse(body) as z.ZodSafeParseResult<Msg<unknown>> };
  kinds.set(name, kind as unknown as AnyKind);
  return kind;
}

export function actorKind(name: string): AnyKind | undefined {
  return kinds.get(name);
}

export function allKinds(): AnyKind[] {
  return [...kinds.values()];
}

/** Any message a kind with handlers `H` takes. */
export type MessageOf<H> = { [T in keyof H & string]: { type: T; caller: Caller } & FieldsOf<H[T]> }[keyof H & string];
/** The reply to a message of type `T`. */
export type ReplyFor<H, T> = T extends keyof H ? ReplyOf<H[T]> : never;
