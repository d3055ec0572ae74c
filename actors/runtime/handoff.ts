/**
 * A shard's memory-only state (the queue actor's event queues) carried from
 * its owner to the next one when the shard is handed over gracefully (SIGTERM,
 * `parley cluster drain`, a rebalance towards a node that joined), so that a
 * rolling deploy is invisible to clients: same queue IDs, same event IDs,
 * nothing lost, nothing twice. `ActorNode` runs the protocol:
 *
 *   leaving owner (token T)                  next owner (token T' > T)
 *   stops serving the shard's requests;
 *   answers held long polls (`quiesce`);
 *   keeps taking the shard's deliveries,
 *   noting their IDs; serves `handoff.<s>`
 *                    <--- lease released --->  takes the lease; subscribes to
 *                                              the shard's deliveries (held
 *                                              back until the state is here);
 *                    <--- handoff request ---  asks `handoff.<s>`
 *   stops taking deliveries; `handOff` in
 *   the mailbox, after the last one; writes
 *   it (and the noted IDs) under the scope
 *   `handoff:<s>` with T; answers {T}  ----->  claims `handoff:<s>` with T'
 *                                              (fencing the old writer), reads
 *                                              what T wrote, deletes it;
 *                                              `takeOver`; applies the held
 *                                              deliveries but the noted ones
 *
 * Every delivery published meanwhile reaches at least one of the two: the
 * next owner subscribed before it asked, and the leaving owner stopped only
 * when asked. One both took is applied once: the leaving owner's noted IDs
 * (`Delivery.id`, unique per publish) are skipped by the next one. Each
 * publisher's deliveries stay in order (NATS keeps a publisher's order to a
 * subscriber; the leaving owner applied a prefix, the next one the rest).
 *
 * Without a handover (kill -9, a lease that expired, nobody asking within
 * `HANDOFF_WAIT_MS`, a request that failed) the state is not moved: the next
 * owner starts empty and clients register again once (BAD_EVENT_QUEUE_ID).
 */
import type { Store, Writer } from '../../storage/store.ts';
import { T } from '../../storage/tables.ts';

/** What a leaving owner hands over: its token, the deliveries it applied while handing over, each kind's data. */
export interface Handoff {
  token: number;
  seen: string[];
  kinds: Record<string, unknown>;
}

/**
 * How long a leaving owner waits for the next one to ask (then its queues end, as on a node's loss). The
 * next owner asks once it has taken the released lease, which on a loaded node took more than 5 s (the
 * rolling test lost queues at 5 s); well within an actor pod's 60 s termination grace.
 */
export const HANDOFF_WAIT_MS = 15_000;
/** How long the next owner waits for the leaving one to write and answer. */
export const HANDOFF_REQUEST_MS = 15_000;
/** How long the next owner keeps skipping the deliveries its predecessor applied (a copy may arrive late). */
export const HANDOFF_SKIP_MS = 30_000;

/** Characters of JSON text per row, well under the store's entry size. */
const CHUNK_CHARS = 256 * 1024;

export const handoffScope = (shard: number): string => `handoff:${shard}`;

/** Writes `h` for `shard` with the leaving owner's writer: the chunks, then the description (a reader that sees it sees them). */
export async function writeHandoff(writer: Writer, shard: number, h: Handoff): Promise<void> {
  const text = JSON.stringify(h);
  const chunks = Math.ceil(text.length / CHUNK_CHARS);
  const ops = [];
  for (let i = 0; i < chunks; i++) ops.push(T.shardHandoffs.at(shard, i).put({ data: text.slice(i * CHUNK_CHARS, (i + 1) * CHUNK_CHARS) }));
  await writer.commit(ops);
  await writer.commit([T.shardHandoffs.at(shard, -1).put({ token: h.token, chunks })]);
}

/** What was handed over for `shard` by the owner of `token`, or null (none, or another owner's). */
export async function readHandoff(store: Store, shard: number, token: number): Promise<{ handoff: Handoff; chunks: number } | null> {
  const meta = await T.shardHandoffs.at(shard, -1).get(store);
  if (!meta || !('chunks' in meta) || meta.token !== token) return null;
  const rows = await T.shardHandoffs.partition(shard).values(store, { gte: 0, lte: meta.chunks - 1 });
  if (rows.length !== meta.chunks) throw new Error(`shard ${shard}: handoff has ${rows.length} of ${meta.chunks} chunks`);
  const handoff = JSON.parse(rows.map((r) => ('data' in r ? r.data : '')).join('')) as Handoff;
  if (handoff.token !== token) return null;
  return { handoff, chunks: meta.chunks };
}

/** Deletes a handoff once taken over, with the next owner's writer. */
export async function clearHandoff(writer: Writer, shard: number, chunks: number): Promise<void> {
  await writer.commit([T.shardHandoffs.at(shard, -1).delete(), ...Array.from({ length: chunks }, (_, i) => T.shardHandoffs.at(shard, i).delete())]);
}
