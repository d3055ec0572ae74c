/**
 * A queue shard's subscriber index: for the users holding an event queue in
 * this shard, which channels each is subscribed to, and per channel which of
 * those users are. A channel message reaches the shard once (it names no
 * recipients) and is expanded from here, in O(local subscribers with a queue).
 *
 * A user's entry is made when their first queue here registers, from the
 * channel IDs the gateway read from the realm just before (`seed`), and kept
 * current by the `subscription` `add` / `remove` events the realm sends the
 * user on every change of their own subscriptions (joining, leaving, being
 * added or removed by someone else, a new user's default channels, an
 * unarchived channel; `note`). Those events reach this shard whether or not
 * the user has a queue, whatever the queue's `event_types`, and the shard
 * keeps the recent ones of each user (`RECENT_MS`): a change made between
 * the gateway's read and the queue's registration is applied on top of the
 * seed, so no change is lost in that window. Applying a change the seed
 * already shows does nothing wrong: for each channel the last change wins,
 * and changes arrive in the order the realm made them (one publisher, one
 * connection). The entry goes with the user's last queue (`forget`);
 * deactivated users lose their queues, archived channels take no messages.
 */

/** How long a user's subscription changes are kept for a queue registered meanwhile. */
export const RECENT_MS = 5 * 60_000;

interface Change {
  at: number;
  channelIds: number[];
  subscribed: boolean;
}

/** What a subscriber index hands over: each indexed user's channels and recent changes. */
export interface SubscriberIndexSnapshot {
  channelsOf: Array<[string, number[]]>;
  recent: Array<[string, Change[]]>;
}

export class SubscriberIndex {
  /** `${realm}:${user}` -> channels they are subscribed to (users with a queue here only). */
  private channelsOf = new Map<string, Set<number>>();
  /** realm -> channel -> its subscribers with a queue here. */
  private members = new Map<number, Map<number, Set<number>>>();
  /** `${realm}:${user}` -> their subscription changes of the last RECENT_MS, oldest first. */
  private recent = new Map<string, Change[]>();
  private prunedAt = 0;

  /** The channel's subscribers that hold a queue here (do not change the set while iterating). */
  subscribers(realmId: number, channelId: number): ReadonlySet<number> | undefined {
    return this.members.get(realmId)?.get(channelId);
  }

  /** A user's channels as indexed here (undefined: no queue of theirs here), e.g. to carry over with their queues and `seed` elsewhere. */
  channelsOfUser(realmId: number, userId: number): number[] | undefined {
    const channels = this.channelsOf.get(`${realmId}:${userId}`);
    return channels && [...channels];
  }

  /**
   * A user's first queue here: their channels as the realm gave them, with
   * the changes received since applied on top. A user already indexed (another
   * queue of theirs is here) keeps their entry, current since it was made.
   * O(their channels + their recent changes).
   */
  seed(realmId: number, userId: number, channelIds: readonly number[]): void {
    const key = `${realmId}:${userId}`;
    if (this.channelsOf.has(key)) return;
    const channels = new Set(channelIds);
    for (const c of this.recent.get(key) ?? []) for (const id of c.channelIds) c.subscribed ? channels.add(id) : channels.delete(id);
    this.channelsOf.set(key, channels);
    for (const id of channels) this.join(realmId, id, userId);
  }

  /** The user was subscribed to (or unsubscribed from) channels: recorded, and applied if they are indexed. O(channels). */
  note(realmId: number, userId: number, channelIds: number[], subscribed: boolean, now: number): void {
    const key = `${realmId}:${userId}`;
    let changes = this.recent.get(key);
    if (!changes) this.recent.set(key, (changes = []));
    changes.push({ at: now, channelIds, subscribed });
    const channels = this.channelsOf.get(key);
    if (!channels) return;
    for (const id of channelIds) {
      if (subscribed && !channels.has(id)) {
        channels.add(id);
        this.join(realmId, id, userId);
      } else if (!subscribed && channels.delete(id)) this.leave(realmId, id, userId);
    }
  }

  /** The user's last queue here is gone. O(their channels). */
  forget(realmId: number, userId: number): void {
    const key = `${realmId}:${userId}`;
    const channels = this.channelsOf.get(key);
    if (!channels) return;
    this.channelsOf.delete(key);
    for (const id of channels) this.leave(realmId, id, userId);
  }

  /** Drops changes older than RECENT_MS (O(users with changes), at most once a minute). */
  prune(now: number): void {
    if (now - this.prunedAt < 60_000) return;
    this.prunedAt = now;
    for (const [key, changes] of this.recent) {
      let i = 0;
      while (i < changes.length && now - changes[i]!.at > RECENT_MS) i++;
      if (i === changes.length) this.recent.delete(key);
      else if (i) changes.splice(0, i);
    }
  }

  /** The index as data, for the shard's next owner (`actors/runtime/handoff.ts`). */
  snapshot(): SubscriberIndexSnapshot {
    return { channelsOf: [...this.channelsOf].map(([k, v]) => [k, [...v]]), recent: [...this.recent] };
  }

  /** The index a previous owner handed over (this one empty). */
  restore(s: SubscriberIndexSnapshot): void {
    for (const [key, changes] of s.recent) this.recent.set(key, changes);
    for (const [key, channels] of s.channelsOf) {
      const [realmId, userId] = key.split(':').map(Number) as [number, number];
      this.channelsOf.set(key, new Set(channels));
      for (const id of channels) this.join(realmId, id, userId);
    }
  }

  /** Index sizes, for tests and stats. */
  get size(): { users: number; recent: number } {
    return { users: this.channelsOf.size, recent: this.recent.size };
  }

  private join(realmId: number, channelId: number, userId: number): void {
    let channels = this.members.get(realmId);
    if (!channels) this.members.set(realmId, (channels = new Map()));
    let users = channels.get(channelId);
    if (!users) channels.set(channelId, (users = new Set()));
    users.add(userId);
  }

  private leave(realmId: number, channelId: number, userId: number): void {
    const channels = this.members.get(realmId);
    const users = channels?.get(channelId);
    if (!users) return;
    users.delete(userId);
    if (users.size === 0) channels!.delete(channelId);
    if (channels!.size === 0) this.members.delete(realmId);
  }
}
