/**
 * Roles, system groups and the rules on them shared by the actors. Stored
 * record types live with their codecs in `storage/tables.ts`.
 */
import type { GroupSettingValue } from '../storage/tables.ts';

/** The most users one batch of `createUsers` may carry (`parley users import --batch`): each batch holds the organization's actor (~0.5 ms per user). */
export const MAX_USERS_PER_BATCH = 1000;

export const Role = { OWNER: 100, ADMIN: 200, MODERATOR: 300, MEMBER: 400, GUEST: 600 } as const;
export type Role = (typeof Role)[keyof typeof Role];

/** System groups every realm has (Zulip's `role:*` groups); `maxRole` is the weakest role in the group. */
export const SYSTEM_GROUPS = [
  { id: 1, name: 'role:internet', maxRole: 600, description: 'Everyone on the internet' },
  { id: 2, name: 'role:everyone', maxRole: Role.GUEST, description: 'Everyone including guests' },
  { id: 3, name: 'role:members', maxRole: Role.MEMBER, description: 'Members of this organization, not including guests' },
  { id: 4, name: 'role:fullmembers', maxRole: Role.MEMBER, description: 'Members of this organization, not including new accounts and guests' },
  { id: 5, name: 'role:moderators', maxRole: Role.MODERATOR, description: 'Moderators of this organization, including administrators' },
  { id: 6, name: 'role:administrators', maxRole: Role.ADMIN, description: 'Administrators of this organization, including owners' },
  { id: 7, name: 'role:owners', maxRole: Role.OWNER, description: 'Owners of this organization' },
  { id: 8, name: 'role:nobody', maxRole: 0, description: 'Nobody' },
] as const;
export const GROUP_ID = Object.fromEntries(SYSTEM_GROUPS.map((g) => [g.name, g.id])) as Record<(typeof SYSTEM_GROUPS)[number]['name'], number>;

/** Whether an ID names a system group (they are the same in every realm and derived from roles). */
export const isSystemGroupId = (id: number): boolean => SYSTEM_GROUPS.some((g) => g.id === id);

export const isAdmin = (u: { role: number }): boolean => u.role <= Role.ADMIN;
export const isGuest = (u: { role: number }): boolean => u.role === Role.GUEST;

/** Whether a user is in a group: by default only the system groups are known (role groups). */
export type GroupMembership = (groupId: number, user: { id: number; role: number }) => boolean;

export const inSystemGroup: GroupMembership = (groupId, user) => {
  const g = SYSTEM_GROUPS.find((x) => x.id === groupId);
  return g !== undefined && user.role <= g.maxRole;
};

/**
 * Whether a user holds a group-setting permission. Realm code calls
 * `RealmState.can`, which passes the realm's own group membership.
 */
export function inGroupSetting(value: GroupSettingValue, user: { id: number; role: number }, inGroup: GroupMembership = inSystemGroup): boolean {
  if (typeof value === 'number') return inGroup(value, user);
  return value.direct_members.includes(user.id) || value.direct_subgroups.some((g) => inGroup(g, user));
}

/** The conversation key of a direct message: its participants' IDs, sorted. */
export const dmKey = (userIds: number[]): string => [...new Set(userIds)].sort((a, b) => a - b).join(',');

/** Where a recipient's messages are stored: `s<channel>` or `d<conversation key>`. */
export const channelRecipientKey = (channelId: number): string => `s${channelId}`;
export const dmRecipientKey = (key: string): string => `d${key}`;

/** Whether message `id` is within a readable range of a recipient's history (a `MessageSource`: from `minId`, up to `maxId` when set). */
export const inSource = (src: { minId: number; maxId?: number | undefined }, id: number): boolean => id >= src.minId && (src.maxId === undefined || id <= src.maxId);

/** Zulip's organization types (`Realm.ORG_TYPES`: `OrgTypeEnum` ID and name, in its display order; 0 is "Unspecified", hidden on its forms). */
export const ORG_TYPES: ReadonlyArray<{ id: number; name: string }> = [
  { id: 0, name: 'Unspecified' },
  { id: 10, name: 'Business' },
  { id: 20, name: 'Open-source project' },
  { id: 30, name: 'Education (non-profit)' },
  { id: 35, name: 'Education (for-profit)' },
  { id: 40, name: 'Research' },
  { id: 50, name: 'Event or conference' },
  { id: 60, name: 'Non-profit (registered)' },
  { id: 70, name: 'Government' },
  { id: 80, name: 'Political group' },
  { id: 90, name: 'Community' },
  { id: 100, name: 'Personal' },
  { id: 1000, name: 'Other' },
];
/** Whether `id` is one of Zulip's organization types. */
export const isOrgType = (id: number): boolean => ORG_TYPES.some((t) => t.id === id);
