/** POST /messages (send) and GET /messages (history). */
import { z } from 'zod';
import { clientExtavatar } from '../../actors/format.ts';
import { MAX_MESSAGE_LENGTH } from '../../actors/realm/actions/messages/messages.ts';
import { realmActorId, realmRef } from '../../actors/realm/ref.ts';
import { userActorId, userRef } from '../../actors/user/ref.ts';
import { badRequest, missingParam } from '../../lib/errors.ts';
import { parseNarrow } from '../../lib/narrow.ts';
import { bool, idsOrNames, int, json, str, wordOrInt } from '../params.ts';
import { caller, me, route } from '../route.ts';

const MAX_FETCH = 5000;
/** A (non-silent) topic wildcard mention; `sendMessageWithTopicWildcard` checks it against the topic's participants. */
const TOPIC_WILDCARD = /@\*\*topic\*\*/i;

/** `stream`/`channel` or `private`/`direct`, as the actors name them. */
export const MessageType = str().pipe(z.enum(['stream', 'channel', 'private', 'direct'], { message: 'must be one of stream, channel, private, direct' })).transform((t) => (t === 'stream' || t === 'channel' ? 'stream' : 'private') as 'stream' | 'private');

export const sendMessage = route({
  method: 'POST',
  path: '/messages',
  auth: 'required',
  params: {
    type: MessageType,
    to: idsOrNames(),
    content: str().pipe(z.string().max(MAX_MESSAGE_LENGTH * 4, { message: `must not be longer than ${MAX_MESSAGE_LENGTH} characters` })),
    topic: str().optional(),
    subject: str().optional(),
    queue_id: str().optional(),
    local_id: str().optional(),
    read_by_sender: bool().optional(),
  },
  async handle(ctx, p) {
    if ((p.queue_id === undefined) !== (p.local_id === undefined)) {
      throw missingParam(p.queue_id === undefined ? 'queue_id' : 'local_id');
    }
    if (p.type === 'stream' && Array.isArray(p.to) && p.to.length !== 1) throw badRequest("Invalid 'to': a channel message goes to one channel");
    // Outgoing-webhook bots the message triggers are served by a follow-up of the send's commit (`actors/realm/actions/messages/outgoing_webhooks.ts`).
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), {
      // A topic wildcard mention needs the topic's participants counted first; other sends skip that read.
      type: TOPIC_WILDCARD.test(p.content) ? 'sendMessageWithTopicWildcard' : 'sendMessage',
      caller: caller(ctx),
      client: ctx.client,
      recipientType: p.type,
      to: p.to,
      topic: p.topic ?? p.subject ?? null,
      content: p.content,
      queueId: p.queue_id ?? null,
      localId: p.local_id ?? null,
      readBySender: p.read_by_sender ?? null,
    });
  },
});

const Anchor = wordOrInt(['newest', 'oldest', 'first_unread', 'date'] as const, 0, "must be a message ID, 'newest', 'oldest', 'first_unread' or 'date'");
/** `anchor_date` (FL 445): an ISO 8601 date or date and time (UTC unless it gives an offset), as milliseconds. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;
const AnchorDate = str().transform((text, c) => {
  const ms = ISO_8601.test(text) ? Date.parse(/[T ]\d{2}:\d{2}.*(?:Z|[+-]\d{2}:?\d{2})$/i.test(text) || !/[T ]/.test(text) ? text : `${text}Z`) : Number.NaN;
  if (Number.isNaN(ms)) {
    c.addIssue({ code: 'custom', message: 'must be an ISO 8601 date' });
    return z.NEVER;
  }
  return ms;
});

export const getMessages = route({
  method: 'GET',
  path: '/messages',
  auth: 'required',
  params: {
    anchor: Anchor.optional(),
    /** FL 445: with `anchor: "date"`, the page is anchored at the first message sent at or after this date. */
    anchor_date: AnchorDate.optional(),
    num_before: int().pipe(z.number().nonnegative({ message: 'must not be negative' })).optional(),
    num_after: int().pipe(z.number().nonnegative({ message: 'must not be negative' })).optional(),
    include_anchor: bool().optional(),
    /** FL 300: the messages to fetch by ID, instead of a range around an anchor. */
    message_ids: json(z.array(z.number().int().nonnegative())).optional(),
    narrow: json(z.array(z.unknown())).optional(),
    apply_markdown: bool().optional(),
    client_extavatar: bool().optional(),
    client_gravatar: bool().optional(),
    use_first_unread_anchor: bool().optional(),
    allow_empty_topic_name: bool().optional(),
  },
  async handle(ctx, p) {
    const user = me(ctx);
    if (p.message_ids !== undefined) {
      // Zulip's IncompatibleParametersError: message_ids replaces the range (num_before: 0 is no range).
      if (p.num_before || p.num_after || p.anchor !== undefined || p.use_first_unread_anchor) throw badRequest('Unsupported parameter combination: num_before, num_after, anchor, message_ids, include_anchor, use_first_unread_anchor');
      if (p.message_ids.length > MAX_FETCH) throw badRequest(`Too many messages requested (maximum ${MAX_FETCH}).`);
    } else {
      if (p.num_before === undefined) throw missingParam('num_before');
      if (p.num_after === undefined) throw missingParam('num_after');
      if (p.num_before + p.num_after > MAX_FETCH) throw badRequest(`Too many messages requested (maximum ${MAX_FETCH}).`);
    }
    const anchor = p.message_ids !== undefined ? 'newest' : p.use_first_unread_anchor ? 'first_unread' : p.anchor;
    if (anchor === undefined) throw missingParam('anchor');
    if (anchor === 'date' && p.anchor_date === undefined) throw missingParam('anchor_date');
    return ctx.actors.raw(userRef, userActorId(user.realmId, user.userId), {
      type: 'getMessages',
      caller: caller(ctx),
      anchor,
      anchorDate: anchor === 'date' ? p.anchor_date! : null,
      numBefore: p.num_before ?? 0,
      numAfter: p.num_after ?? 0,
      messageIds: p.message_ids ?? null,
      includeAnchor: p.include_anchor ?? true,
      narrow: parseNarrow(p.narrow ?? []),
      applyMarkdown: p.apply_markdown ?? true,
      clientExtavatar: clientExtavatar(p),
      allowEmptyTopicName: p.allow_empty_topic_name ?? false,
    });
  },
});

/** POST /messages/render: content to HTML, by the realm's renderer (its linkifiers, emoji and mentions apply). */
export const renderMessage = route({
  method: 'POST',
  path: '/messages/render',
  auth: 'required',
  params: { content: str().pipe(z.string().max(MAX_MESSAGE_LENGTH * 4, { message: `must not be longer than ${MAX_MESSAGE_LENGTH} characters` })) },
  async handle(ctx, p) {
    return ctx.actors.raw(realmRef, realmActorId(me(ctx).realmId), { type: 'renderContent', caller: caller(ctx), content: p.content });
  },
});
