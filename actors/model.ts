/**
 * Stored records: what the realm actor persists (one JSON value per row) and
 * what the queue and user actors read back.
 */
import type { GroupSettingValue } from './protocol.ts';

export const Role = { OWNER: 100, ADMIN: 200, MODERATOR: 300, MEMBER: 400, GUEST: 600 } as const;

export interface UserRecord {
  id: number;
  email: string;
  fullName: string;
  role: number;
  isBot: boolean;
  botType: number | null;
  botOwnerId: number | null;
  isActive: boolean;
  apiKey: string;
  passwordHash: string | null;
  dateJoined: string;
  timezone: string;
  canCreateUsers: boolean;
}

export type TopicsPolicy = 'inherit' | 'allow_empty_topic' | 'disable_empty_topic' | 'empty_topic_only';

export interface ChannelRecord {
  id: number;
  name: string;
  description: string;
  renderedDescription: string;
  inviteOnly: boolean;
  isWebPublic: boolean;
  historyPublicToSubscribers: boolean;
  messageRetentionDays: number | null;
  topicsPolicy: TopicsPolicy;
  dateCreated: number;
  creatorId: number | null;
  isDefault: boolean;
  firstMessageId: number | null;
  groups: Record<ChannelGroupSetting, GroupSettingValue>;
}

export const CHANNEL_GROUP_SETTINGS = [
  'can_add_subscribers_group',
  'can_remove_subscribers_group',
  'can_administer_channel_group',
  'can_delete_any_message_group',
  'can_delete_own_message_group',
  'can_send_message_group',
] as const;
export type ChannelGroupSetting = (typeof CHANNEL_GROUP_SETTINGS)[number];

export interface SubscriptionRecord {
  streamId: number;
  userId: number;
  active: boolean;
  color: string;
  pinToTop: boolean;
  isMuted: boolean;
  /** First message ID the subscriber received through this subscription. */
  startMessageId: number;
}

export interface DmRecipient {
  id: number;
  email: string;
  full_name: string;
}

/** A message as stored; immutable once written. */
export interface StoredMessage {
  id: number;
  type: 'stream' | 'private';
  streamId: number | null;
  streamName: string | null;
  streamIsPublic: boolean;
  topic: string;
  recipientId: number;
  recipientKey: string;
  senderId: number;
  senderEmail: string;
  senderFullName: string;
  senderRealmStr: string;
  content: string;
  renderedContent: string;
  timestamp: number;
  client: string;
  readBySender: boolean;
  /** Users mentioned by name; `wildcard` for @all/@everyone/@channel/@topic. */
  mentions: number[];
  wildcard: 'stream' | 'topic' | null;
  dmRecipients: DmRecipient[] | null;
}

/** System groups every realm has (Zulip's `role:*` groups). */
export const SYSTEM_GROUPS = [
  { id: 1, name: 'role:internet', maxRole: 600, description: 'Everyone on the internet' },
  { id: 2, name: 'role:everyone', maxRole: 600, description: 'Everyone including guests' },
  { id: 3, name: 'role:members', maxRole: 400, description: 'Members of this organization, not including guests' },
  { id: 4, name: 'role:fullmembers', maxRole: 400, description: 'Members of this organization, not including new accounts and guests' },
  { id: 5, name: 'role:moderators', maxRole: 300, description: 'Moderators of this organization, including administrators' },
  { id: 6, name: 'role:administrators', maxRole: 200, description: 'Administrators of this organization, including owners' },
  { id: 7, name: 'role:owners', maxRole: 100, description: 'Owners of this organization' },
  { id: 8, name: 'role:nobody', maxRole: 0, description: 'Nobody' },
] as const;
export const GROUP_ID = Object.fromEntries(SYSTEM_GROUPS.map((g) => [g.name, g.id])) as Record<(typeof SYSTEM_GROUPS)[number]['name'], number>;

/** Whether a user holds a group-setting permission. */
export function inGroupSetting(value: GroupSettingValue, user: { id: number; role: number }): boolean {
  const groupHas = (groupId: number) => {
    const g = SYSTEM_GROUPS.find((x) => x.id === groupId);
    return g !== undefined && user.role <= g.maxRole;
  };
  if (typeof value === 'number') return groupHas(value);
  return value.direct_members.includes(user.id) || value.direct_subgroups.some(groupHas);
}

/** The conversation key of a direct message: its participants' IDs, sorted. */
export const dmKey = (userIds: number[]): string => [...new Set(userIds)].sort((a, b) => a - b).join(',');

/** Messages are partitioned per recipient in buckets of this many message IDs. */
export const MESSAGE_BUCKET = 10_000;
export const bucketOf = (messageId: number): number => Math.floor(messageId / MESSAGE_BUCKET);
