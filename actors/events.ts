/**
 * Events: what the realm actor publishes to queue actors (`Delivery`) and the
 * strict schema of every event a client receives (extra keys rejected). The
 * tests check each event they receive against `ClientEvent`.
 */
import { z } from 'zod';

/** What travels from the realm actor to the queue actors of a shard. */
export const Delivery = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('message'),
    realmId: z.number().int(),
    userIds: z.array(z.number().int()),
    /** Also for queues registered with all_public_streams. */
    allPublic: z.boolean(),
    // The stored message, as the realm actor wrote it; checked for shape, not copied key by key.
    message: z.custom<Record<string, unknown>>((v) => typeof v === 'object' && v !== null && typeof (v as { id?: unknown }).id === 'number', 'message must be a stored message'),
    localEcho: z.object({ senderId: z.number().int(), queueId: z.string(), localId: z.string() }).nullable(),
  }),
  z.object({
    kind: z.literal('event'),
    realmId: z.number().int(),
    userIds: z.array(z.number().int()),
    event: z.custom<Record<string, unknown> & { type: string }>((v) => typeof v === 'object' && v !== null && typeof (v as { type?: unknown }).type === 'string', 'event needs a type'),
  }),
]);
export type Delivery = z.infer<typeof Delivery>;

const Id = z.number().int();
const Obj = z.record(z.string(), z.unknown());
const MessageObject = z.object({
  id: Id,
  sender_id: Id,
  sender_email: z.string(),
  sender_full_name: z.string(),
  sender_realm_str: z.string(),
  avatar_url: z.string().nullable(),
  client: z.string(),
  content: z.string(),
  content_type: z.enum(['text/html', 'text/x-markdown']),
  subject: z.string(),
  topic_links: z.array(z.unknown()),
  timestamp: Id,
  type: z.enum(['stream', 'private']),
  stream_id: Id.optional(),
  display_recipient: z.union([z.string(), z.array(z.object({ id: Id, email: z.string(), full_name: z.string(), is_mirror_dummy: z.boolean() }).strict())]),
  recipient_id: Id,
  reactions: z.array(z.unknown()),
  submessages: z.array(z.unknown()),
  is_me_message: z.boolean(),
}).strict();

/** Every event a client can receive from GET /events. */
export const ClientEvent = z.union([
  z.object({ id: Id, type: z.literal('heartbeat') }).strict(),
  z.object({ id: Id, type: z.literal('message'), message: MessageObject, flags: z.array(z.string()), local_message_id: z.string().optional() }).strict(),
  z.object({ id: Id, type: z.literal('subscription'), op: z.literal('add'), subscriptions: z.array(Obj) }).strict(),
  z.object({ id: Id, type: z.literal('subscription'), op: z.enum(['peer_add', 'peer_remove']), stream_ids: z.array(Id), user_ids: z.array(Id) }).strict(),
  z.object({ id: Id, type: z.literal('stream'), op: z.literal('create'), streams: z.array(Obj) }).strict(),
  z.object({ id: Id, type: z.literal('realm_user'), op: z.literal('add'), person: Obj }).strict(),
]);
export type ClientEvent = z.infer<typeof ClientEvent>;
