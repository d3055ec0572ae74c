/**
 * Shard leases: which actor node owns which shard. In-process (embedded: this
 * node owns every shard) and Redis (cluster: owners renew a lease, and shards
 * move when a node stops or dies).
 *
 * Each grant carries a fencing token that grows with every change of owner.
 * An owner checks `valid()` before it makes a write durable, and the store
 * rejects writes fenced by an older token (see Store.claimFence).
 */
import { shardMoves } from '../../lib/metrics.ts';

export interface ShardGrant {
  shard: number;
  /** Fencing token: strictly greater than any earlier owner's token. */
  token: number;
}

export interface LeaseListener {
  /** The node now owns `grant.shard`; it may start serving it. */
  acquired(grant: ShardGrant): Promise<void>;
  /** The node no longer owns the shard (released or lost); stop serving it. */
  lost(shard: number): Promise<void>;
}

export interface Leases {
  /** Joins the cluster as `nodeId` and starts taking a fair share of shards. */
  start(nodeId: string, shards: number, listener: LeaseListener): Promise<void>;
  /** True while this node's lease on `shard` with `token` has not expired. */
  valid(shard: number, token: number): boolean;
  /** True once the first round of acquisition has settled. */
  ready(): boolean;
  /** Releases every shard (handing them over) and leaves the cluster. */
  stop(): Promise<void>;
}

/** Embedded mode: one node owns every shard, forever. */
export class LocalLeases implements Leases {
  private owned = new Set<number>();
  private started = false;

  async start(_nodeId: string, shards: number, listener: LeaseListener): Promise<void> {
    for (let shard = 0; shard < shards; shard++) {
      await listener.acquired({ shard, token: 1 });
      this.owned.add(shard);
      shardMoves.inc({ move: 'acquired' });
    }
    this.started = true;
  }

  valid(shard: number, token: number): boolean {
    return token === 1 && this.owned.has(shard);
  }

  ready(): boolean {
    return this.started;
  }

  async stop(): Promise<void> {
    this.owned.clear();
  }
}
