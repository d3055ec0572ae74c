/**
 * Personal message flags (Zulip's `actions/message_flags.py`): POST
 * /messages/flags (by ID), POST /messages/flags/narrow (FL 155), and
 * POST /mark_all_as_read, /mark_stream_as_read, /mark_topic_as_read.
 *
 * `prepare` reads what a change needs (the messages, the user's flag rows of
 * their buckets, what the realm says the user may read); `check` works out
 * which flags change; `apply` writes the rows that now differ from the base
 * flags and the marks. Each sends one `update_message_flags` event to the user.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../lib/errors.ts';
import { type NarrowTerm, NarrowTermSchema } from '../../lib/narrow.ts';
import { messageBucket, type StoredMessage, T } from '../../storage/tables.ts';
import { toUsers } from '../events/delivery.ts';
import type { ClientEventBody } from '../events/schema.ts';
import { channelRecipientKey, inSource } from '../model.ts';
import type { MessageSource } from '../realm/actions/messages/messages.ts';
import { realmActorId, realmRef } from '../realm/ref.ts';
import { defineAction, type Tx } from '../runtime/action.ts';
import type { ActorContext } from '../runtime/context.ts';
import type { UserState } from './actor.ts';
import { notePushedRead, notePushedReadBelow } from './push.ts';
import { baseFlags, EDITABLE_FLAGS, FLAG_ORDER, type FlagRows, currentFlags, marksRow, readMessages, sortFlags, userFlags } from './flags.ts';
import { MAX_UNREAD, MessageReader, withTarget } from './messages.ts';

const action = defineAction<UserState>();

/** At most this many messages in one POST /messages/flags/narrow (Zulip's MAX_MESSAGES_PER_UPDATE). */
export const MAX_MESSAGES_PER_UPDATE = 5000;

type Op = 'add' | 'remove';

/** The messages a flag change is about, as `prepare` found them. */
interface Facts {
  /** In the order of the request (or of the range). */
  ids: number[];
  /** The readable ones, with the source they are read through. */
  found: Map<number, { m: StoredMessage; src: MessageSource }>;
  rows: Map<number, FlagRows>;
  subscribed: Set<number>;
}

interface Change {
  m: StoredMessage;
  src: MessageSource;
  next: string[];
  /** Whether `next` equals the base flags (then no row is kept). */
  isBase: boolean;
}

interface FlagPlan {
  op: Op;
  flag: string;
  changes: Change[];
  ignoredChannels: number[];
  rows: Map<number, FlagRows>;
}

function checkFlag(op: string, flag: string): void {
  if (!(FLAG_ORDER as readonly string[]).includes(flag)) throw badRequest(`Invalid flag: '${flag}'`);
  if (!EDITABLE_FLAGS.has(flag)) throw badRequest(`Flag not editable: '${flag}'`);
  if (op !== 'add' && op !== 'remove') throw badRequest(`Invalid message flag operation: '${op}'`);
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Which flags change, as Zulip's do_update_message_flags decides it. */
function planFlags(state: Readonly<UserState>, op: Op, flag: string, facts: Facts): FlagPlan {
  const adding = op === 'add';
  const changes: Change[] = [];
  const ignored = new Set<number>();
  const seen = new Set<number>();
  for (const id of facts.ids) {
    if (seen.has(id)) continue;
    seen.add(id);
    const hit = facts.found.get(id);
    // Every unread message is in a channel the user is subscribed to: marking others unread is skipped.
    if (flag === 'read' && !adding && hit?.m.streamId != null && !facts.subscribed.has(hit.m.streamId)) {
      ignored.add(hit.m.streamId);
      continue;
    }
    const base = hit ? baseFlags(hit.m, state.userId, hit.src.receivedFrom, state.marks.readBelow) : ['read', 'historical'];
    const row = facts.rows.get(messageBucket(id))?.get(id);
    const current = hit ? userFlags(hit.m, state.userId, hit.src.receivedFrom, state.marks.readBelow, row) : currentFlags(base, row);
    if (current.includes(flag) === adding) continue;
    // A message the user cannot read behaves as a historical one: changing its flag is an error.
    if (!hit) throw badRequest('Invalid message(s)');
    const next = adding ? sortFlags([...current, flag]) : current.filter((f) => f !== flag);
    changes.push({ m: hit.m, src: hit.src, next, isBase: same(next, base) });
  }
  return { op, flag, changes, ignoredChannels: [...ignored].sort((a, b) => a - b), rows: facts.rows };
}

/** Writes a message's new flags: a row where they differ from the base, none where they do not. */
function writeFlags(state: UserState, tx: Tx, id: number, next: string[] | null, rows: FlagRows | undefined): void {
  const row = T.userFlags.at(state.realmId, state.userId, id);
  if (next === null) {
    rows?.delete(id);
    tx.write(row.delete());
  } else {
    rows?.set(id, next);
    tx.write(row.put(next));
  }
  if (next !== null && !next.includes('read')) state.marks.unreadRows.add(id);
  else state.marks.unreadRows.delete(id);
  if (next?.includes('starred')) state.marks.starred.add(id);
  else state.marks.starred.delete(id);
}

function applyFlags(state: UserState, p: FlagPlan, tx: Tx): void {
  for (const c of p.changes) writeFlags(state, tx, c.m.id, c.isBase ? null : c.next, p.rows.get(messageBucket(c.m.id)));
  if (p.changes.length) tx.write(T.userMarks.at(state.realmId, state.userId).put(marksRow(state.marks)));
  // Read now: their push notifications are removed from the user's devices.
  if (p.flag === 'read' && p.op === 'add') notePushedRead(state, p.changes.map((c) => c.m), tx);
}

type MessageDetails = NonNullable<Extract<ClientEventBody, { type: 'update_message_flags' }>['message_details']>;

/** What a client needs to put messages marked unread back into its unread_msgs (Zulip's format_unread_message_details). */
function unreadDetails(userId: number, changes: Change[]): MessageDetails {
  const out: MessageDetails = {};
  for (const { m, next } of changes) {
    const mentioned = next.some((f) => f === 'mentioned' || f.endsWith('wildcard_mentioned'));
    out[String(m.id)] =
      m.type === 'stream'
        ? { type: 'stream', stream_id: m.streamId!, topic: m.topic, unmuted_stream_msg: true, ...(mentioned ? { mentioned: true } : {}) }
        : { type: 'private', user_ids: (m.dmUserIds ?? []).filter((id) => id !== userId), ...(mentioned ? { mentioned: true } : {}) };
  }
  return out;
}

function flagEvents(state: Readonly<UserState>, p: FlagPlan) {
  const messages = p.changes.map((c) => c.m.id);
  const details = p.flag === 'read' && p.op === 'remove' ? { message_details: unreadDetails(state.userId, p.changes) } : {};
  return [toUsers(state.realmId, [state.userId], { type: 'update_message_flags', op: p.op, operation: p.op, flag: p.flag, messages, all: false, ...details })];
}

const callerOf = (s: Readonly<UserState>) => ({ realmId: s.realmId, userId: s.userId });

/** The user's view from the realm and the messages `ids`, with the flag rows of their buckets. */
async function factsFor(state: UserState, ctx: ActorContext, ids: number[], sources?: MessageSource[]): Promise<Facts> {
  const view = await ctx.actors.call(realmRef, realmActorId(state.realmId), { type: 'readerView', caller: callerOf(state) });
  const bySource = new Map((sources ?? view.sources).map((s) => [s.recipientKey, s]));
  const found = new Map<number, { m: StoredMessage; src: MessageSource }>();
  for (const m of await readMessages(ctx.store, state.realmId, ids)) {
    const src = bySource.get(m.recipientKey);
    if (src && inSource(src, m.id)) found.set(m.id, { m, src });
  }
  return { ids, found, rows: await state.flags.loadFor(ids), subscribed: new Set(view.subscribed) };
}

const Op = z.enum(['add', 'remove']);

export const updateFlags = action({
  type: 'updateMessageFlags',
  fields: z.object({ op: z.string(), flag: z.string(), messages: z.array(z.number().int()) }),
  async prepare(state, msg, ctx) {
    checkFlag(msg.op, msg.flag);
    return factsFor(state as UserState, ctx, msg.messages);
  },
  check(state, msg, facts) {
    return { plan: planFlags(state, msg.op as Op, msg.flag, facts), requested: msg.messages };
  },
  apply(state, p, tx) {
    applyFlags(state, p.plan, tx);
    const ignored = p.plan.flag === 'read' && p.plan.op === 'remove' ? { ignored_because_not_subscribed_channels: p.plan.ignoredChannels } : {};
    return { messages: p.requested, ...ignored };
  },
  events: (state, p) => flagEvents(state, p.plan),
});

export const updateFlagsForNarrow = action({
  type: 'updateMessageFlagsForNarrow',
  fields: z.object({
    op: z.string(),
    flag: z.string(),
    anchor: z.union([z.number().int(), z.enum(['newest', 'oldest', 'first_unread'])]),
    includeAnchor: z.boolean(),
    numBefore: z.number().int().nonnegative(),
    numAfter: z.number().int().nonnegative(),
    narrow: z.array(NarrowTermSchema),
  }),
  async prepare(state, msg, ctx) {
    checkFlag(msg.op, msg.flag);
    if (msg.numBefore > 0 && msg.numAfter > 0 && !msg.includeAnchor) throw badRequest('The anchor can only be excluded at an end of the range');
    // The server lowers the range so that it holds at most MAX_MESSAGES_PER_UPDATE messages.
    const numBefore = Math.min(msg.numBefore, Math.max(MAX_MESSAGES_PER_UPDATE - msg.numAfter, MAX_MESSAGES_PER_UPDATE / 2));
    const numAfter = Math.min(msg.numAfter, MAX_MESSAGES_PER_UPDATE - numBefore);
    const s = state as UserState;
    const { narrow, sources } = await ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'messageSources', caller: callerOf(s), narrow: msg.narrow, with: await withTarget(s.realmId, ctx, msg.narrow) });
    const reader = new MessageReader(ctx.store, s.realmId, s.userId, s.marks.readBelow, s.marks.unreadRows);
    const page = await reader.page({ anchor: msg.anchor, numBefore, numAfter, includeAnchor: msg.includeAnchor }, narrow, sources);
    const ids = page.messages.map((m) => m.id);
    return { facts: await factsFor(s, ctx, ids, sources), page };
  },
  check(state, msg, x) {
    return { plan: planFlags(state, msg.op as Op, msg.flag, x.facts), page: x.page, ids: x.facts.ids };
  },
  apply(state, p, tx) {
    applyFlags(state, p.plan, tx);
    return {
      processed_count: p.ids.length,
      updated_count: p.plan.changes.length,
      first_processed_id: p.ids[0] ?? null,
      last_processed_id: p.ids[p.ids.length - 1] ?? null,
      found_oldest: p.page.foundOldest,
      found_newest: p.page.foundNewest,
      ...(p.plan.flag === 'read' && p.plan.op === 'remove' ? { ignored_because_not_subscribed_channels: p.plan.ignoredChannels } : {}),
    };
  },
  events: (state, p) => flagEvents(state, p.plan),
});

/**
 * POST /mark_all_as_read: the read watermark moves past the newest message,
 * so every message is read by default, and each flag row that lacked `read`
 * gets it. One event with `all: true` (clients reload their unread counts).
 */
export const markAllAsRead = action({
  type: 'markAllAsRead',
  fields: z.object({}),
  async prepare(state, _msg, ctx) {
    const s = state as UserState;
    const view = await ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'readerView', caller: callerOf(s) });
    return { readBelow: Math.max(s.marks.readBelow, view.maxMessageId + 1), rows: await s.flags.loadFor(s.marks.unreadRows) };
  },
  check(_state, _msg, x) {
    return x;
  },
  apply(state, x, tx) {
    state.marks.readBelow = x.readBelow;
    for (const id of [...state.marks.unreadRows]) {
      const rows = x.rows.get(messageBucket(id));
      writeFlags(state, tx, id, sortFlags([...(rows?.get(id) ?? []), 'read']), rows);
    }
    tx.write(T.userMarks.at(state.realmId, state.userId).put(marksRow(state.marks)));
    // Everything below the watermark is read: the realm removes the notifications among them.
    notePushedReadBelow(state, x.readBelow, tx);
    return { complete: true };
  },
  events(state) {
    return [toUsers(state.realmId, [state.userId], { type: 'update_message_flags', op: 'add', operation: 'add', flag: 'read', messages: [], all: true })];
  },
});

/** POST /mark_stream_as_read and /mark_topic_as_read: every unread message of a channel (or of one of its topics). */
export const markChannelAsRead = action({
  type: 'markChannelAsRead',
  fields: z.object({ streamId: z.number().int(), topic: z.string().nullable() }),
  async prepare(state, msg, ctx) {
    const s = state as UserState;
    const view = await ctx.actors.call(realmRef, realmActorId(s.realmId), { type: 'readerView', caller: callerOf(s) });
    const key = channelRecipientKey(msg.streamId);
    const sources = view.sources.filter((src) => src.recipientKey === key);
    if (!sources.length && !view.subscribed.includes(msg.streamId)) throw new ApiError('BAD_REQUEST', 'Invalid channel ID', 400);
    const narrow: NarrowTerm[] = [{ operator: 'channel', operand: msg.streamId, negated: false }];
    if (msg.topic) narrow.push({ operator: 'topic', operand: msg.topic, negated: false });
    const reader = new MessageReader(ctx.store, s.realmId, s.userId, s.marks.readBelow, s.marks.unreadRows);
    if (msg.topic) {
      const received = sources.filter((src) => src.receivedFrom !== null).map((src) => ({ ...src, minId: Math.max(src.minId, src.receivedFrom!) }));
      if (!(await reader.collect(received, narrow, 0, Number.MAX_SAFE_INTEGER, true, 1)).length) throw badRequest(`No such topic '${msg.topic}'`);
    }
    const unread = await reader.unread(sources, narrow, MAX_UNREAD);
    const ids = unread.messages.map((m) => m.id).reverse();
    return factsFor(s, ctx, ids, sources);
  },
  check(state, _msg, facts) {
    return planFlags(state, 'add', 'read', facts);
  },
  apply(state, p, tx) {
    applyFlags(state, p, tx);
    return {};
  },
  events: (state, p) => flagEvents(state, p),
});
