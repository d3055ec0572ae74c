/**
 * What the user-group operations (`user_groups.ts`) share: membership of
 * system and user-defined groups (direct and recursive), group objects as
 * the API shows them, who holds a group's permissions, the checks on names
 * and setting values, and group events by client capability.
 * `RealmState.inGroup` answers membership for permission checks.
 */
import { badRequest } from '../../../lib/errors.ts';
import { type GroupSettingValue, USER_GROUP_SETTINGS, type UserGroupRecord, type UserGroupSetting, type UserRecord } from '../../../storage/tables.ts';
import { type Delivery, toRealm, toUsers, withCapability, withCapabilityToRealm } from '../../events/delivery.ts';
import type { ClientEventBody, UserGroupObject } from '../../events/schema.ts';
import { GROUP_ID, isGuest, isSystemGroupId, SYSTEM_GROUPS } from '../../model.ts';
import { renderDescription } from './markdown.ts';
import { roleGroups, SYSTEM_SUBGROUPS } from './people.ts';
import type { RealmState } from '../state/state.ts';

export const MAX_NAME_LENGTH = 100;
export const INVALID_NAME_PREFIXES = ['@', 'role:', 'user:', 'stream:', 'channel:'];

/**
 * What values a group-setting permission takes, in the form Zulip's register
 * lists it (`server_supported_permission_settings`, FL 221, 225) and
 * `check_setting_configuration_for_system_groups` enforces: whether only a
 * system group will do, which of `role:internet`, `role:nobody` and
 * `role:everyone` it may be, the only system groups it may be (when
 * listed), and its default. Every check of such a value here goes through
 * `checkPermissionConfig` with the same entry the register shows.
 */
export interface PermissionConfig {
  require_system_group: boolean;
  allow_internet_group: boolean;
  allow_nobody_group: boolean;
  allow_everyone_group: boolean;
  /** A system group's name, or `group_creator` / `channel_creator` (an anonymous group of the creator). */
  default_group_name: string;
  /** For user-group settings: the default of a system group's setting. */
  default_for_system_groups: string | null;
  allowed_system_groups: string[];
}

/** A permission's configuration: `nobody` and `everyone` say whether those groups are allowed (Zulip's defaults for the rest). */
export function permission(nobody: boolean, everyone: boolean, defaultName: string, extra: Partial<PermissionConfig> = {}): PermissionConfig {
  return { require_system_group: false, allow_internet_group: false, allow_nobody_group: nobody, allow_everyone_group: everyone, default_group_name: defaultName, default_for_system_groups: null, allowed_system_groups: [], ...extra };
}

/**
 * Zulip's configuration of the user-group settings, except that
 * `can_mention_group` may not be `role:owners` (the spec's rule): every
 * system group but those two is listed instead.
 */
export const GROUP_PERMISSIONS: Readonly<Record<UserGroupSetting, PermissionConfig>> = {
  can_add_members_group: permission(true, false, 'group_creator', { default_for_system_groups: 'role:nobody' }),
  can_join_group: permission(true, false, 'role:nobody', { default_for_system_groups: 'role:nobody' }),
  can_leave_group: permission(true, true, 'role:everyone', { default_for_system_groups: 'role:nobody' }),
  can_manage_group: permission(true, false, 'group_creator', { default_for_system_groups: 'role:nobody' }),
  can_mention_group: permission(true, true, 'role:everyone', {
    default_for_system_groups: 'role:nobody',
    allowed_system_groups: SYSTEM_GROUPS.map((g) => g.name).filter((n) => n !== 'role:internet' && n !== 'role:owners'),
  }),
  can_remove_members_group: permission(true, false, 'role:nobody', { default_for_system_groups: 'role:nobody' }),
};

/**
 * Refuses a value a permission's configuration does not allow, with Zulip's
 * errors (`check_setting_configuration_for_system_groups`; an anonymous group
 * where a system group is required is `SystemGroupRequiredError`). Call with
 * a value already normalized (one subgroup and no members is that group's
 * ID) that names groups which exist.
 */
export function checkPermissionConfig(name: string, config: PermissionConfig, v: GroupSettingValue): void {
  const system = typeof v === 'number' ? SYSTEM_GROUPS.find((g) => g.id === v) : undefined;
  if (config.require_system_group && !system) throw badRequest(`'${name}' must be a system user group.`);
  if (!system) return;
  const refuse = () => badRequest(`'${name}' setting cannot be set to '${system.name}' group.`);
  if (system.name === 'role:internet' && !config.allow_internet_group) throw refuse();
  if (system.name === 'role:nobody' && !config.allow_nobody_group) throw refuse();
  if (system.name === 'role:everyone' && !config.allow_everyone_group) throw refuse();
  if (config.allowed_system_groups.length > 0 && !config.allowed_system_groups.includes(system.name)) throw refuse();
}

/** `{direct_members: [], direct_subgroups: [id]}` is the group `id` (Zulip stores and shows it so). */
export function normalizeGroupValue(v: GroupSettingValue): GroupSettingValue {
  return typeof v !== 'number' && v.direct_members.length === 0 && v.direct_subgroups.length === 1 ? v.direct_subgroups[0]! : v;
}

/** Settings whose holders may not include guests unless the value allows everyone (Zulip: `allow_everyone_group`). */
export const GUESTS_ALLOWED = new Set<UserGroupSetting>(['can_leave_group', 'can_mention_group']);

/** A user group that exists, system or user-defined (deactivated ones only when allowed). */
export function usableGroup(state: Readonly<RealmState>, id: number, allowDeactivated: boolean): boolean {
  if (isSystemGroupId(id)) return true;
  const g = state.groups.get(id);
  return g !== undefined && (allowDeactivated || !g.deactivated);
}

/** Active users who are direct members of a group. */
export function directMembers(state: Readonly<RealmState>, id: number): number[] {
  const active = (uid: number) => state.users.get(uid)?.isActive === true;
  if (isSystemGroupId(id)) return [...state.users.values()].filter((u) => u.isActive && roleGroups(u.role).includes(id)).map((u) => u.id).sort((a, b) => a - b);
  return (state.groups.get(id)?.members ?? []).filter(active);
}

export function directSubgroups(state: Readonly<RealmState>, id: number): number[] {
  return isSystemGroupId(id) ? (SYSTEM_SUBGROUPS[id] ?? []) : (state.groups.get(id)?.subgroups ?? []);
}

/** A group's subgroups at any depth (itself excluded unless it is in a cycle, which the API prevents). */
export function recursiveSubgroups(state: Readonly<RealmState>, ids: number[]): Set<number> {
  const seen = new Set<number>();
  const stack = ids.flatMap((id) => directSubgroups(state, id));
  while (stack.length) {
    const g = stack.pop()!;
    if (seen.has(g)) continue;
    seen.add(g);
    stack.push(...directSubgroups(state, g));
  }
  return seen;
}

/** Every active user in a group, directly or through subgroups. */
export function groupMembersRecursive(state: Readonly<RealmState>, id: number): number[] {
  const out = new Set(directMembers(state, id));
  for (const g of recursiveSubgroups(state, [id])) for (const u of directMembers(state, g)) out.add(u);
  return [...out].sort((a, b) => a - b);
}

/** A setting value as the API shows it: deactivated users are left out of direct members (FL 303). */
export function settingForApi(state: Readonly<RealmState>, v: GroupSettingValue): GroupSettingValue {
  if (typeof v === 'number') return v;
  return { direct_members: v.direct_members.filter((id) => state.users.get(id)?.isActive), direct_subgroups: v.direct_subgroups };
}

export function systemGroupObject(state: Readonly<RealmState>, g: (typeof SYSTEM_GROUPS)[number]): UserGroupObject {
  const nobody = GROUP_ID['role:nobody'];
  return {
    id: g.id,
    name: g.name,
    description: g.description,
    rendered_description: renderDescription(g.description),
    members: directMembers(state, g.id),
    direct_subgroup_ids: SYSTEM_SUBGROUPS[g.id] ?? [],
    creator_id: null,
    date_created: state.meta?.dateCreated ?? null,
    is_system_group: true,
    deactivated: false,
    can_add_members_group: nobody,
    can_join_group: nobody,
    can_leave_group: nobody,
    can_manage_group: nobody,
    can_mention_group: nobody,
    can_remove_members_group: nobody,
  };
}

export function groupObject(state: Readonly<RealmState>, g: UserGroupRecord): UserGroupObject {
  const settings = Object.fromEntries(USER_GROUP_SETTINGS.map((k) => [k, settingForApi(state, g.settings[k])])) as Record<UserGroupSetting, GroupSettingValue>;
  return {
    id: g.id,
    name: g.name,
    description: g.description,
    rendered_description: g.renderedDescription,
    members: directMembers(state, g.id),
    direct_subgroup_ids: [...g.subgroups].sort((a, b) => a - b),
    creator_id: g.creatorId,
    date_created: g.dateCreated,
    is_system_group: false,
    deactivated: g.deactivated,
    ...settings,
  };
}

/** The `realm_user_groups` register list and GET /user_groups. */
export function groupObjects(state: Readonly<RealmState>, includeDeactivated: boolean): UserGroupObject[] {
  const user = [...state.groups.values()].filter((g) => includeDeactivated || !g.deactivated).map((g) => groupObject(state, g));
  return [...SYSTEM_GROUPS.map((g) => systemGroupObject(state, g)), ...user].sort((a, b) => a.id - b.id);
}

// ---- permissions -------------------------------------------------------------

/** Whether `user` holds a group's permission setting (guests only where the setting admits everyone). */
export function holds(state: Readonly<RealmState>, g: UserGroupRecord, setting: UserGroupSetting, user: UserRecord): boolean {
  if (isGuest(user) && !GUESTS_ALLOWED.has(setting)) return false;
  return state.can(g.settings[setting], user);
}

/** The realm's `can_manage_all_groups` (owners by default; read as `realmGroupSetting` does) and the group's `can_manage_group`. */
export function canManage(state: Readonly<RealmState>, g: UserGroupRecord, user: UserRecord): boolean {
  return state.can(state.org.settings.groups.can_manage_all_groups ?? GROUP_ID['role:owners'], user) || holds(state, g, 'can_manage_group', user);
}

/** The group an operation changes: user-defined, and (unless allowed) not deactivated. */
export function groupForUpdate(state: Readonly<RealmState>, id: number, allowDeactivated: boolean): UserGroupRecord {
  if (isSystemGroupId(id)) throw badRequest('Insufficient permission');
  const g = state.groups.get(id);
  if (!g) throw badRequest('Invalid user group');
  if (g.deactivated && !allowDeactivated) throw badRequest('User group is deactivated.');
  return g;
}

export function requireMember(user: UserRecord): void {
  if (isGuest(user)) throw badRequest('Not allowed for guest users');
}

// ---- values ------------------------------------------------------------------

export function checkName(state: Readonly<RealmState>, raw: string, except: number | null): string {
  const name = raw;
  if (!name.trim()) throw badRequest("User group name can't be empty!");
  if ([...name].length > MAX_NAME_LENGTH) throw badRequest(`User group name cannot exceed ${MAX_NAME_LENGTH} characters.`);
  for (const prefix of INVALID_NAME_PREFIXES) if (name.startsWith(prefix)) throw badRequest(`User group name cannot start with '${prefix}'.`);
  const taken = [...state.groups.values()].some((g) => g.id !== except && g.name === name) || SYSTEM_GROUPS.some((g) => g.name === name);
  if (taken) throw badRequest(`User group '${name}' already exists.`);
  return name;
}

/** Checks a permission setting's new value; returns it normalized (one subgroup and no members is that group's ID). */
export function checkSettingValue(state: Readonly<RealmState>, setting: UserGroupSetting, v: GroupSettingValue): GroupSettingValue {
  if (typeof v === 'number') {
    if (!usableGroup(state, v, true)) throw badRequest('Invalid user group');
    if (!usableGroup(state, v, false)) throw badRequest('User group is deactivated.');
    checkPermissionConfig(setting, GROUP_PERMISSIONS[setting], v);
    return v;
  }
  for (const id of v.direct_members) if (!state.users.get(id)?.isActive) throw badRequest(`Invalid user ID: ${id}`);
  for (const id of v.direct_subgroups) {
    if (!usableGroup(state, id, true)) throw badRequest(`Invalid user group ID: ${id}`);
    if (!usableGroup(state, id, false)) throw badRequest('User group is deactivated.');
  }
  const members = [...new Set(v.direct_members)].sort((a, b) => a - b);
  const subgroups = [...new Set(v.direct_subgroups)].sort((a, b) => a - b);
  if (members.length === 0 && subgroups.length === 1) return checkSettingValue(state, setting, subgroups[0]!);
  return { direct_members: members, direct_subgroups: subgroups };
}

/** Whether two setting values are the same (anonymous ones as sets). */
export function sameValue(a: GroupSettingValue, b: GroupSettingValue): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  const eq = (x: number[], y: number[]) => x.length === y.length && [...x].sort().join() === [...y].sort().join();
  return eq([...new Set(a.direct_members)], [...new Set(b.direct_members)]) && eq([...new Set(a.direct_subgroups)], [...new Set(b.direct_subgroups)]);
}

export function checkUsers(state: Readonly<RealmState>, ids: number[]): number[] {
  for (const id of ids) if (!state.users.get(id)?.isActive) throw badRequest(`Invalid user ID: ${id}`);
  return [...new Set(ids)];
}

export function checkSubgroups(state: Readonly<RealmState>, ids: number[]): number[] {
  for (const id of ids) {
    if (!usableGroup(state, id, true)) throw badRequest(`Invalid user group ID: ${id}`);
    if (!usableGroup(state, id, false)) throw badRequest('User group is deactivated.');
  }
  return [...new Set(ids)];
}

// ---- events ------------------------------------------------------------------

/** A group event for every active user (one realm-wide delivery). */
export const toAll = (state: Readonly<RealmState>, event: ClientEventBody): Delivery => toRealm(state.realmId, event);

/** An event about a group: clients without `include_deactivated_groups` get `forOthers` (or nothing) instead. */
export function groupEvent(state: Readonly<RealmState>, event: ClientEventBody, forOthers: ClientEventBody | null): Delivery[] {
  return withCapabilityToRealm(state.realmId, 'include_deactivated_groups', event, forOthers);
}

/**
 * After a deactivation or reactivation: the group settings whose explicit
 * members name the user, sent again as the API now shows them (deactivated
 * users left out, FL 303), to `audience` (everyone by default).
 */
export function settingsNamingUser(state: Readonly<RealmState>, userId: number, audience?: number[]): Delivery[] {
  const out: Delivery[] = [];
  for (const g of state.groups.values()) {
    const data: Partial<Record<UserGroupSetting, GroupSettingValue>> = {};
    for (const k of USER_GROUP_SETTINGS) {
      const v = g.settings[k];
      if (typeof v !== 'number' && v.direct_members.includes(userId)) data[k] = settingForApi(state, v);
    }
    if (Object.keys(data).length === 0) continue;
    const event: ClientEventBody = { type: 'user_group', op: 'update', group_id: g.id, data };
    if (audience) out.push(...(g.deactivated ? withCapability(state.realmId, audience, 'include_deactivated_groups', event, null) : [toUsers(state.realmId, audience, event)]));
    else out.push(...(g.deactivated ? withCapabilityToRealm(state.realmId, 'include_deactivated_groups', event, null) : [toRealm(state.realmId, event)]));
  }
  return out;
}
