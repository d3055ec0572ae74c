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

/** How long a shard lease lives without a renewal (PARLEY_LEASE_TTL_MS). */
export const DEFAULT_LEASE_TTL_MS = 5000;

export interface ShardGrant {
  shard: number;
  /** Fencing token: strictly greater than any earlier owner's token. */
  token: number;
}

export interface LeaseListener {
  /** The node now owns `grant.shard`; it may start serving it. */
  acquired(grant: ShardGrant): Promise<void>;
  /**
   * The node no longer owns the shard; stop serving it. `graceful`: handed
   * over while the lease was still valid (stop, rebalance), so the node may
   * still write under its token until the next owner claims; otherwise the
   * lease was lost (expired, fenced) and another node may own the shard.
   */
  lost(shard: number, graceful: boolean): Promise<void>;
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
  /** The cluster as the leases see it: live nodes, and each shard's owner and the time since its lease was last renewed (the operator's CLI). */
  describe(): Promise<LeaseView>;
}

export interface LeaseView {
  nodes: Array<{ nodeId: string; heartbeatExpiresInMs: number }>;
  shards: Array<{ shard: number; owner: string | null; token: number | null; renewedMsAgo: number | null }>;
}

/** Embedded mode: one node owns every shard, forever. */
export class LocalLeases implements Leases {
  private owned = new Set<number>();
  private started = false;

  async start(nodeId: string, shards: number, listener: LeaseListener): Promise<void> {
    this.nodeId = nodeId;
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

  private nodeId = '';

  async describe(): Promise<LeaseView> {
    return { nodes: this.started && this.owned.size ? [{ nodeId: this.nodeId, heartbeatExpiresInMs: 0 }] : [], shards: [...this.owned].map((shard) => ({ shard, owner: this.nodeId, token: 1, renewedMsAgo: 0 })) };
  }
}
