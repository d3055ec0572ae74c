/**
 * The queue actor of a shard: holds the event queues of the users in that
 * shard, serves their long polls, and turns deliveries from realm actors into
 * per-queue events (filtered by event_types, narrow and all_public_streams).
 *
 * Queues live in memory only, as in Zulip: if a shard moves to another node,
 * its queues are gone and clients get BAD_EVENT_QUEUE_ID and register again.
 */
import { randomBytes } from 'node:crypto';
import { badEventQueue } from '../../lib/errors.ts';
import { matchesNarrow } from '../../lib/narrow.ts';
import type { Delivery } from '../events.ts';
import { avatarUrl, defaultFlags, formatMessage } from '../format.ts';
import type { StoredMessage } from '../model.ts';
import type { QueueMsg } from '../protocol.ts';
import { Parked } from '../runtime/mailbox.ts';
import { messageView } from '../user/messages.ts';
import { EventQueue, MAX_PENDING_EVENTS, type PollReply } from './event-queue.ts';

export interface QueueTiming {
  /** Seconds a poll waits before it gets a heartbeat (jittered by ±10%). */
  heartbeatSecs: number;
}

export class QueueActor {
  private queues = new Map<string, EventQueue>();
  private byUser = new Map<number, Set<EventQueue>>();
  private allPublic = new Set<EventQueue>();

  constructor(private readonly timing: QueueTiming) {}

  get size(): number {
    return this.queues.size;
  }

  /** Queues registered with all_public_streams. */
  get allPublicCount(): number {
    return this.allPublic.size;
  }

  handle(userId: number, msg: QueueMsg): unknown {
    switch (msg.type) {
      case 'register': {
        const q = new EventQueue(randomBytes(12).toString('base64url'), msg.realmId, userId, msg.options);
        this.queues.set(q.id, q);
        let set = this.byUser.get(userId);
        if (!set) this.byUser.set(userId, (set = new Set()));
        set.add(q);
        if (msg.options.allPublicStreams) this.allPublic.add(q);
        return { queue_id: q.id, last_event_id: q.lastEventId };
      }
      case 'getEvents': {
        const q = this.own(userId, msg.queueId);
        if (msg.lastEventId !== null) q.acknowledge(msg.lastEventId);
        q.lastActive = Date.now();
        if (q.pending > 0 || msg.dontBlock) return q.reply();
        const jitter = 0.9 + Math.random() * 0.2;
        return new Parked<PollReply>(q.wait(Date.now() + this.timing.heartbeatSecs * 1000 * jitter));
      }
      case 'deleteQueue': {
        this.drop(this.own(userId, msg.queueId));
        return {};
      }
      default: {
        const never: never = msg;
        throw new Error(`unhandled queue message ${JSON.stringify(never)}`);
      }
    }
  }

  private own(userId: number, queueId: string): EventQueue {
    const q = this.queues.get(queueId);
    if (!q || q.userId !== userId) throw badEventQueue(queueId);
    return q;
  }

  private drop(q: EventQueue): void {
    q.close();
    this.queues.delete(q.id);
    this.byUser.get(q.userId)?.delete(q);
    if (this.byUser.get(q.userId)?.size === 0) this.byUser.delete(q.userId);
    this.allPublic.delete(q);
  }

  deliver(d: Delivery): void {
    const formatted = new Map<string, string>();
    for (const id of d.userIds) {
      for (const q of this.byUser.get(id) ?? []) {
        if (q.realmId !== d.realmId) continue;
        if (d.kind === 'message') this.deliverMessage(q, d, true, formatted);
        else if (q.wants(d.event.type)) {
          const event = d.event.type === 'realm_user' && d.event.person ? { ...d.event, person: withAvatar(d.event.person as Record<string, unknown>, q.options.clientExtavatar) } : d.event;
          q.push(event);
        }
        if (q.pending > MAX_PENDING_EVENTS) this.drop(q);
      }
    }
  }

  /** A public-channel message for the all_public_streams queues of users who did not receive it. */
  deliverPublic(d: Extract<Delivery, { kind: 'message' }>): void {
    if (this.allPublic.size === 0) return;
    const recipients = new Set(d.userIds);
    const formatted = new Map<string, string>();
    for (const q of this.allPublic) {
      if (q.realmId !== d.realmId || recipients.has(q.userId)) continue;
      this.deliverMessage(q, d, false, formatted);
      if (q.pending > MAX_PENDING_EVENTS) this.drop(q);
    }
  }

  /** `formatted` caches the message's JSON per format options across the queues of one delivery. */
  private deliverMessage(q: EventQueue, d: Extract<Delivery, { kind: 'message' }>, isRecipient: boolean, formatted: Map<string, string>): void {
    if (!q.wants('message')) return;
    const m = d.message as unknown as StoredMessage;
    const flags = isRecipient ? defaultFlags(m, q.userId) : ['read'];
    if (!matchesNarrow(q.options.narrow, messageView(m, flags))) return;
    const echo = d.localEcho && d.localEcho.queueId === q.id && d.localEcho.senderId === q.userId ? { local_message_id: d.localEcho.localId } : {};
    const key = `${q.options.applyMarkdown}:${q.options.clientExtavatar}`;
    let message = formatted.get(key);
    if (!message) formatted.set(key, (message = JSON.stringify(formatMessage(m, q.options))));
    const tail = 'local_message_id' in echo ? `,"local_message_id":${JSON.stringify(echo.local_message_id)}` : '';
    q.pushEncoded(`{"type":"message","message":${message},"flags":${JSON.stringify(flags)}${tail}}`);
  }

  /** Heartbeats for polls that waited long enough; discards queues idle too long. */
  tick(now = Date.now()): void {
    for (const q of this.queues.values()) {
      if (q.polling) q.heartbeatIfDue(now);
      else if (now - q.lastActive > q.options.idleSecs * 1000) this.drop(q);
    }
  }

  /** Ends every waiting poll (shutdown or shard handover). */
  closeAll(): void {
    for (const q of this.queues.values()) q.close();
  }
}

function withAvatar(person: Record<string, unknown>, clientExtavatar: boolean): Record<string, unknown> {
  return typeof person.email === 'string' ? { ...person, avatar_url: avatarUrl(person.email, clientExtavatar) } : person;
}
