/**
 * The messages actors take, one zod schema each, so every message that
 * crosses the bus is validated where it lands. A union per actor kind is
 * dispatched with a `switch` on `type`.
 */
import { z } from 'zod';

const Id = z.number().int().nonnegative();
const Person = z.union([z.string(), z.number().int()]);
const NarrowTermSchema = z.object({
  operator: z.string(),
  operand: z.union([z.string(), z.number().int(), z.array(z.number().int())]),
  negated: z.boolean(),
});
/** A group-setting value: a group ID or an explicit set of members and subgroups. */
export const GroupSetting = z.union([
  z.number().int(),
  z.object({ direct_members: z.array(z.number().int()), direct_subgroups: z.array(z.number().int()) }).strict(),
]);
export type GroupSettingValue = z.infer<typeof GroupSetting>;

export const RealmMsg = z.discriminatedUnion('type', [
  z.object({ type: z.literal('authenticate'), email: z.string(), apiKey: z.string() }),
  z.object({ type: z.literal('serverSettings') }),
  z.object({
    type: z.literal('sendMessage'),
    senderId: Id,
    client: z.string(),
    recipientType: z.enum(['stream', 'private']),
    to: z.union([Person, z.array(Person)]),
    topic: z.string().nullable(),
    content: z.string(),
    queueId: z.string().nullable(),
    localId: z.string().nullable(),
    readBySender: z.boolean().nullable(),
  }),
  z.object({
    type: z.literal('subscribe'),
    actorId: Id,
    subscriptions: z.array(z.object({ name: z.string(), description: z.string().optional() })),
    principals: z.array(Person).nullable(),
    authorizationErrorsFatal: z.boolean(),
    announce: z.boolean(),
    inviteOnly: z.boolean(),
    isWebPublic: z.boolean(),
    isDefaultStream: z.boolean(),
    historyPublicToSubscribers: z.boolean().nullable(),
    messageRetentionDays: z.union([z.number().int(), z.literal('realm_default'), z.literal('unlimited'), z.literal('forever')]).nullable(),
    topicsPolicy: z.enum(['inherit', 'allow_empty_topic', 'disable_empty_topic', 'empty_topic_only']).nullable(),
    groups: z.record(z.string(), GroupSetting),
  }),
  z.object({ type: z.literal('listSubscriptions'), userId: Id, includeSubscribers: z.enum(['true', 'false', 'partial']) }),
  z.object({
    type: z.literal('snapshot'),
    userId: Id,
    fetch: z.array(z.string()).nullable(),
    clientExtavatar: z.boolean(),
    includeSubscribers: z.enum(['true', 'false', 'partial']),
  }),
  z.object({ type: z.literal('listUsers'), userId: Id, userIds: z.array(z.number().int()).nullable(), clientExtavatar: z.boolean() }),
  z.object({ type: z.literal('createUser'), actorId: Id, email: z.string(), password: z.string(), fullName: z.string() }),
  z.object({ type: z.literal('messageSources'), userId: Id, narrow: z.array(NarrowTermSchema) }),
]);
export type RealmMsg = z.infer<typeof RealmMsg>;

export const UserMsg = z.discriminatedUnion('type', [
  z.object({ type: z.literal('snapshot'), realmId: Id, fetch: z.array(z.string()).nullable() }),
  z.object({
    type: z.literal('getMessages'),
    realmId: Id,
    anchor: z.union([z.number().int(), z.enum(['newest', 'oldest', 'first_unread'])]),
    numBefore: z.number().int().nonnegative(),
    numAfter: z.number().int().nonnegative(),
    includeAnchor: z.boolean(),
    narrow: z.array(NarrowTermSchema),
    applyMarkdown: z.boolean(),
    clientExtavatar: z.boolean(),
  }),
]);
export type UserMsg = z.infer<typeof UserMsg>;

export const QueueOptions = z.object({
  eventTypes: z.array(z.string()).nullable(),
  narrow: z.array(NarrowTermSchema),
  allPublicStreams: z.boolean(),
  applyMarkdown: z.boolean(),
  clientExtavatar: z.boolean(),
  bulkMessageDeletion: z.boolean(),
  idleSecs: z.number().positive(),
});
export type QueueOptions = z.infer<typeof QueueOptions>;

export const QueueMsg = z.discriminatedUnion('type', [
  z.object({ type: z.literal('register'), realmId: Id, options: QueueOptions }),
  z.object({ type: z.literal('getEvents'), queueId: z.string(), lastEventId: z.number().int().nullable(), dontBlock: z.boolean() }),
  z.object({ type: z.literal('deleteQueue'), queueId: z.string() }),
]);
export type QueueMsg = z.infer<typeof QueueMsg>;

/** What an authenticated request knows of its caller. */
export interface Caller {
  realmId: number;
  userId: number;
  email: string;
  role: number;
  isBot: boolean;
}
