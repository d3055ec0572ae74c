/**
 * The one place that names the wire. Every bus subject Parley uses is built
 * here; nothing else concatenates subject strings.
 *
 * Actors are grouped into shards. A node that holds a shard's lease serves
 * `parley.shard.<s>.>` and takes `parley.events.<s>`; callers compute the
 * shard from the actor's key, so any gateway can reach any actor.
 */
import { fnv1a } from '../lib/hash.ts';

export type ActorKind = 'realm' | 'user' | 'queue';

/** Which shard an actor lives in. Queue actors share their user's shard. */
export function shardOf(kind: ActorKind, id: number, shards: number): number {
  const key = kind === 'realm' ? `realm:${id}` : `user:${id}`;
  return fnv1a(key) % shards;
}

export const subjects = {
  realm: (shard: number, realmId: number) => `parley.shard.${shard}.realm.${realmId}`,
  user: (shard: number, userId: number) => `parley.shard.${shard}.user.${userId}`,
  queue: (shard: number, userId: number) => `parley.shard.${shard}.queue.${userId}`,
  /** Everything a shard owner serves (requests to the shard's actors). */
  shardAll: (shard: number) => `parley.shard.${shard}.>`,
  /** Events for the queue actors of one shard (published, not requested). */
  events: (shard: number) => `parley.events.${shard}`,
  /** Public-channel messages for every node's all_public_streams queues (broadcast). */
  publicMessages: (realmId: number) => `parley.public.${realmId}`,
  publicMessagesAll: 'parley.public.>',
} as const;

/** Splits `parley.shard.<s>.<kind>.<id>` into its parts, or null if it is not one. */
export function parseShardSubject(subject: string): { shard: number; kind: ActorKind; id: number } | null {
  const parts = subject.split('.');
  if (parts.length !== 5 || parts[0] !== 'parley' || parts[1] !== 'shard') return null;
  const kind = parts[3];
  if (kind !== 'realm' && kind !== 'user' && kind !== 'queue') return null;
  const shard = Number(parts[2]);
  const id = Number(parts[4]);
  if (!Number.isInteger(shard) || !Number.isInteger(id)) return null;
  return { shard, kind, id };
}
