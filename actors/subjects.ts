/**
 * The one place that names the wire. Every bus subject Parley uses is built
 * here; nothing else concatenates subject strings.
 *
 * Actors are grouped into shards. A node that holds a shard's lease serves
 * `parley.shard.<s>.>` and takes `parley.events.<s>`; callers compute the
 * shard from the actor's placement key (its kind's `ActorRef`), so any
 * gateway can reach any actor.
 */
import { fnv1a } from '../lib/hash.ts';

/** Which shard a placement key lives in. */
export function shardOf(placement: string, shards: number): number {
  return fnv1a(placement) % shards;
}

/** Actor IDs are words of digits and colons (`1`, `1:100`): valid in one subject token. */
const ACTOR_ID = /^[0-9]+(:[0-9]+)*$/;
const KIND = /^[a-z][a-z_]*$/;

export const subjects = {
  actor: (shard: number, kind: string, id: string) => {
    if (!KIND.test(kind) || !ACTOR_ID.test(id)) throw new Error(`bad actor address ${kind} ${id}`);
    return `parley.shard.${shard}.${kind}.${id}`;
  },
  /** Everything a shard owner serves (requests to the shard's actors). */
  shardAll: (shard: number) => `parley.shard.${shard}.>`,
  /** Events for the per-shard actors of one shard (published, not requested). */
  events: (shard: number) => `parley.events.${shard}`,
  /** A shard's previous owner, while it hands the shard's memory-only state over (`actors/runtime/handoff.ts`). */
  handoff: (shard: number) => `parley.handoff.${shard}`,
  /** Events every node holding event queues takes: a realm's channel messages, expanded by each queue shard. */
  broadcast: (realmId: number) => `parley.broadcast.${realmId}`,
  broadcastAll: 'parley.broadcast.>',
  /** The operator's questions any one actor node answers (the cluster's leases). */
  admin: 'parley.admin',
  /** The operator's questions for one actor node (its counts; drain). */
  nodeAdmin: (nodeId: string) => `parley.node.${nodeId.replace(/[^\w-]/g, '_')}`,
  /** Every gateway takes these: an organization created, renamed, deactivated or reactivated (the directory actor's). */
  directory: 'parley.directory',
  /** Every gateway takes these: credentials that stopped working (deactivation, a new API key). */
  authRevoked: 'parley.auth.revoked',
} as const;

/** Splits `parley.shard.<s>.<kind>.<id>` into its parts, or null if it is not one. */
export function parseShardSubject(subject: string): { shard: number; kind: string; id: string } | null {
  const parts = subject.split('.');
  if (parts.length !== 5 || parts[0] !== 'parley' || parts[1] !== 'shard') return null;
  const [, , s, kind, id] = parts as [string, string, string, string, string];
  const shard = Number(s);
  if (!Number.isInteger(shard) || !KIND.test(kind) || !ACTOR_ID.test(id)) return null;
  return { shard, kind, id };
}

/**
 * The placement key of a user's actors (their user actor and the queue actor
 * holding their event queues): events for a user go to that shard.
 */
export const userPlacement = (realmId: number, userId: number): string => `user:${realmId}:${userId}`;
