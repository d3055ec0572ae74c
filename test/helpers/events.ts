/** Long-poll helpers that check every event received against its strict schema. */
import { ClientEvent } from '../../actors/events/schema.ts';
import type { Api, Params } from './api.ts';

export interface Queue {
  api: Api;
  queueId: string;
  lastEventId: number;
  snapshot: Record<string, any>;
  /** Events polled but not yet taken by `waitFor`. */
  buffered: Array<Record<string, any>>;
}

export async function register(api: Api, params: Params = {}): Promise<Queue> {
  const body = await api.ok('POST', '/register', params);
  return { api, queueId: body.queue_id, lastEventId: body.last_event_id, snapshot: body, buffered: [] };
}

/** One GET /events; acknowledges what it returns. Throws if an event breaks its schema. */
export async function poll(q: Queue, opts: { dontBlock?: boolean; timeoutMs?: number } = {}): Promise<Array<Record<string, any>>> {
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 10_000);
  const body = await q.api.ok('GET', '/events', { queue_id: q.queueId, last_event_id: q.lastEventId, dont_block: opts.dontBlock ?? false }, { signal });
  for (const e of body.events) {
    const r = ClientEvent.safeParse(e);
    if (!r.success) throw new Error(`event breaks its schema: ${JSON.stringify(e)}: ${r.error.message}`);
  }
  if (body.events.length) q.lastEventId = body.events[body.events.length - 1].id;
  return body.events;
}

/** Polls until an event satisfies `pred`; returns it and keeps the events after it for the next call. */
export async function waitFor(q: Queue, pred: (e: Record<string, any>) => boolean, timeoutMs = 10_000): Promise<Record<string, any>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    while (q.buffered.length) {
      const e = q.buffered.shift()!;
      if (pred(e)) return e;
    }
    if (Date.now() >= deadline) throw new Error('event did not arrive in time');
    q.buffered.push(...(await poll(q, { timeoutMs: deadline - Date.now() + 100 })));
  }
}
