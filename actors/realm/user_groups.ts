/**
 * User groups: the system groups (derived from roles: `role:owners` ...
 * `role:internet`, `role:nobody`) and user-defined groups (stored by the
 * realm), with their members, subgroups, permission settings and
 * deactivation. `RealmState.inGroup` resolves membership recursively for
 * every permission check; this file handles the group operations.
 *
 * Clients without the `include_deactivated_groups` capability never see a
 * deactivated group: they get `remove` where others get an update, and
 * nothing about a deactivated group until it is reactivated (an `add`).
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../lib/errors.ts';
import { GroupSettingValue, T, USER_GROUP_SETTINGS, type UserGroupRecord, type UserGroupSetting, type UserRecord } from '../../storage/tables.ts';
import { type Delivery, toUsers, withCapability } from '../events/delivery.ts';
import type { ClientEventBody, UserGroupObject } from '../events/schema.ts';
import { GROUP_ID, isGuest, isSystemGroupId, SYSTEM_GROUPS } from '../model.ts';
import { defineAction, defineQuery } from '../runtime/action.ts';
import { actingUser, activeUsers } from './access.ts';
import { renderDescription } from './markdown.ts';
import { roleGroups, SYSTEM_SUBGROUPS } from './people.ts';
import type { RealmState } from './state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

const MAX_NAME_LENGTH = 100;
const INVALID_NAME_PREFIXES = ['@', 'role:', 'user:', 'stream:', 'channel:'];

/** Which system groups each permission setting refuses (Zulip's permission configuration, and the spec's rule for can_mention_group). */
const REFUSED: Record<UserGroupSetting, string[]> = {
  can_add_members_group: ['role:internet', 'role:everyone'],
  can_join_group: ['role:internet', 'role:everyone'],
  can_leave_group: ['role:internet'],
  can_manage_group: ['role:internet', 'role:everyone'],
  can_mention_group: ['role:internet', 'role:owners'],
  can_remove_members_group: ['role:internet', 'role:everyone'],
};

/** Settings whose holders may not include guests unless the value allows everyone (Zulip: `allow_everyone_group`). */
const GUESTS_ALLOWED = new Set<UserGroupSetting>(['can_leave_group', 'can_mention_group']);

/** A user group that exists, system or user-defined (deactivated ones only when allowed). */
export function usableGroup(state: Readonly<RealmState>, id: number, allowDeactivated: boolean): boolean {
  if (isSystemGroupId(id)) return true;
  const g = state.groups.get(id);
  return g !== undefined && (allowDeactivated || !g.deactivated);
}

/** Active users who are direct members of a group. */
function directMembers(state: Readonly<RealmState>, id: number): number[] {
  const active = (uid: number) => state.users.get(uid)?.isActive === true;
  if (isSystemGroupId(id)) return [...state.users.values()].filter((u) => u.isActive && roleGroups(u.role).includes(id)).map((u) => u.id).sort((a, b) => a - b);
  return (state.groups.get(id)?.members ?? []).filter(active);
}

function directSubgroups(state: Readonly<RealmState>, id: number): number[] {
  return isSystemGroupId(id) ? (SYSTEM_SUBGROUPS[id] ?? []) : (state.groups.get(id)?.subgroups ?? []);
}

/** A group's subgroups at any depth (itself excluded unless it is in a cycle, which the API prevents). */
function recursiveSubgroups(state: Readonly<RealmState>, ids: number[]): Set<number> {
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
function settingForApi(state: Readonly<RealmState>, v: GroupSettingValue): GroupSettingValue {
  if (typeof v === 'number') return v;
  return { direct_members: v.direct_members.filter((id) => state.users.get(id)?.isActive), direct_subgroups: v.direct_subgroups };
}

function systemGroupObject(state: Readonly<RealmState>, g: (typeof SYSTEM_GROUPS)[number]): UserGroupObject {
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
function holds(state: Readonly<RealmState>, g: UserGroupRecord, setting: UserGroupSetting, user: UserRecord): boolean {
  if (isGuest(user) && !GUESTS_ALLOWED.has(setting)) return false;
  return state.can(g.settings[setting], user);
}

/** The realm's `can_manage_all_groups` (owners) and the group's `can_manage_group`. */
function canManage(state: Readonly<RealmState>, g: UserGroupRecord, user: UserRecord): boolean {
  return state.can(GROUP_ID['role:owners'], user) || holds(state, g, 'can_manage_group', user);
}

/** The group an operation changes: user-defined, and (unless allowed) not deactivated. */
function groupForUpdate(state: Readonly<RealmState>, id: number, allowDeactivated: boolean): UserGroupRecord {
  if (isSystemGroupId(id)) throw badRequest('Insufficient permission');
  const g = state.groups.get(id);
  if (!g) throw badRequest('Invalid user group');
  if (g.deactivated && !allowDeactivated) throw badRequest('User group is deactivated.');
  return g;
}

function requireMember(user: UserRecord): void {
  if (isGuest(user)) throw badRequest('Not allowed for guest users');
}

// ---- values ------------------------------------------------------------------

function checkName(state: Readonly<RealmState>, raw: string, except: number | null): string {
  const name = raw;
  if (!name.trim()) throw badRequest("User group name can't be empty!");
  if ([...name].length > MAX_NAME_LENGTH) throw badRequest(`User group name cannot exceed ${MAX_NAME_LENGTH} characters.`);
  for (const prefix of INVALID_NAME_PREFIXES) if (name.startsWith(prefix)) throw badRequest(`User group name cannot start with '${prefix}'.`);
  const taken = [...state.groups.values()].some((g) => g.id !== except && g.name === name) || SYSTEM_GROUPS.some((g) => g.name === name);
  if (taken) throw badRequest(`User group '${name}' already exists.`);
  return name;
}

/** Checks a permission setting's new value; returns it normalized (one subgroup and no members is that group's ID). */
function checkSettingValue(state: Readonly<RealmState>, setting: UserGroupSetting, v: GroupSettingValue): GroupSettingValue {
  if (typeof v === 'number') {
    if (!usableGroup(state, v, true)) throw badRequest('Invalid user group');
    if (!usableGroup(state, v, false)) throw badRequest('User group is deactivated.');
    const system = SYSTEM_GROUPS.find((g) => g.id === v);
    if (system && REFUSED[setting].includes(system.name)) throw badRequest(`'${setting}' setting cannot be set to '${system.name}' group.`);
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
function sameValue(a: GroupSettingValue, b: GroupSettingValue): boolean {
  if (typeof a === 'number' || typeof b === 'number') return a === b;
  const eq = (x: number[], y: number[]) => x.length === y.length && [...x].sort().join() === [...y].sort().join();
  return eq([...new Set(a.direct_members)], [...new Set(b.direct_members)]) && eq([...new Set(a.direct_subgroups)], [...new Set(b.direct_subgroups)]);
}

function checkUsers(state: Readonly<RealmState>, ids: number[]): number[] {
  for (const id of ids) if (!state.users.get(id)?.isActive) throw badRequest(`Invalid user ID: ${id}`);
  return [...new Set(ids)];
}

function checkSubgroups(state: Readonly<RealmState>, ids: number[]): number[] {
  for (const id of ids) {
    if (!usableGroup(state, id, true)) throw badRequest(`Invalid user group ID: ${id}`);
    if (!usableGroup(state, id, false)) throw badRequest('User group is deactivated.');
  }
  return [...new Set(ids)];
}

// ---- events ------------------------------------------------------------------

/** A group event for every active user. */
const toAll = (state: Readonly<RealmState>, event: ClientEventBody): Delivery => toUsers(state.realmId, activeUsers(state), event);

/** An event about a group: clients without `include_deactivated_groups` get `forOthers` (or nothing) instead. */
function groupEvent(state: Readonly<RealmState>, event: ClientEventBody, forOthers: ClientEventBody | null): Delivery {
  return withCapability(state.realmId, activeUsers(state), 'include_deactivated_groups', event, forOthers);
}

/**
 * After a reactivation: the group settings whose explicit members name the
 * user, sent again (clients dropped the user from them on deactivation).
 */
export function settingsNamingUser(state: Readonly<RealmState>, userId: number): Delivery[] {
  const out: Delivery[] = [];
  for (const g of state.groups.values()) {
    const data: Partial<Record<UserGroupSetting, GroupSettingValue>> = {};
    for (const k of USER_GROUP_SETTINGS) {
      const v = g.settings[k];
      if (typeof v !== 'number' && v.direct_members.includes(userId)) data[k] = settingForApi(state, v);
    }
    if (Object.keys(data).length === 0) continue;
    const event: ClientEventBody = { type: 'user_group', op: 'update', group_id: g.id, data };
    out.push(g.deactivated ? groupEvent(state, event, null) : toAll(state, event));
  }
  return out;
}

// ---- operations --------------------------------------------------------------

export const listGroups = query({
  type: 'listGroups',
  fields: z.object({ includeDeactivated: z.boolean() }),
  run(state, msg) {
    requireMember(actingUser(state, msg.caller));
    return { user_groups: groupObjects(state, msg.includeDeactivated) };
  },
});

function readableGroup(state: Readonly<RealmState>, id: number): number {
  if (!usableGroup(state, id, true)) throw badRequest('Invalid user group');
  return id;
}

export const groupMembers = query({
  type: 'groupMembers',
  fields: z.object({ groupId: z.number().int(), directOnly: z.boolean() }),
  run(state, msg) {
    requireMember(actingUser(state, msg.caller));
    const id = readableGroup(state, msg.groupId);
    return { members: msg.directOnly ? directMembers(state, id) : groupMembersRecursive(state, id) };
  },
});

export const isGroupMember = query({
  type: 'isGroupMember',
  fields: z.object({ groupId: z.number().int(), userId: z.number().int(), directOnly: z.boolean() }),
  run(state, msg) {
    requireMember(actingUser(state, msg.caller));
    const id = readableGroup(state, msg.groupId);
    if (!state.users.has(msg.userId)) throw badRequest('No such user');
    const members = msg.directOnly ? directMembers(state, id) : groupMembersRecursive(state, id);
    return { is_user_group_member: members.includes(msg.userId) };
  },
});

export const groupSubgroups = query({
  type: 'groupSubgroups',
  fields: z.object({ groupId: z.number().int(), directOnly: z.boolean() }),
  run(state, msg) {
    requireMember(actingUser(state, msg.caller));
    const id = readableGroup(state, msg.groupId);
    return { subgroups: msg.directOnly ? [...directSubgroups(state, id)].sort((a, b) => a - b) : [...recursiveSubgroups(state, [id])].sort((a, b) => a - b) };
  },
});

const SettingsInput = z.object(Object.fromEntries(USER_GROUP_SETTINGS.map((k) => [k, GroupSettingValue.optional()])) as Record<UserGroupSetting, z.ZodOptional<typeof GroupSettingValue>>);

/** POST /user_groups/create: members (not guests) may create groups; the creator manages and adds to it by default. */
export const createGroup = action({
  type: 'createGroup',
  fields: z.object({ name: z.string(), description: z.string(), members: z.array(z.number().int()), subgroups: z.array(z.number().int()), settings: SettingsInput }),
  check(state, msg) {
    const actor = actingUser(state, msg.caller);
    if (isGuest(actor)) throw badRequest('Insufficient permission');
    const name = checkName(state, msg.name, null);
    const members = checkUsers(state, msg.members).sort((a, b) => a - b);
    const subgroups = checkSubgroups(state, msg.subgroups).sort((a, b) => a - b);
    const creator = { direct_members: [actor.id], direct_subgroups: [] };
    const defaults: Record<UserGroupSetting, GroupSettingValue> = {
      can_add_members_group: creator,
      can_join_group: GROUP_ID['role:nobody'],
      can_leave_group: GROUP_ID['role:everyone'],
      can_manage_group: creator,
      can_mention_group: GROUP_ID['role:everyone'],
      can_remove_members_group: GROUP_ID['role:nobody'],
    };
    for (const k of USER_GROUP_SETTINGS) {
      const v = msg.settings[k];
      if (v !== undefined) defaults[k] = checkSettingValue(state, k, v);
    }
    const record: UserGroupRecord = {
      id: -1,
      name,
      description: msg.description,
      renderedDescription: renderDescription(msg.description),
      members,
      subgroups,
      creatorId: actor.id,
      dateCreated: Math.floor(Date.now() / 1000),
      deactivated: false,
      settings: defaults,
    };
    return record;
  },
  apply(state, g, tx) {
    const id = state.take('group', tx);
    const record = { ...g, id };
    state.groups.set(id, record);
    tx.write(T.userGroups.at(state.realmId, id).put(record));
    return { group_id: id };
  },
  events(state, _g, reply) {
    return [toAll(state, { type: 'user_group', op: 'add', group: groupObject(state, state.groups.get(reply.group_id)!) })];
  },
});

const SettingChange = z.object({ new: GroupSettingValue, old: GroupSettingValue.optional() });

interface UpdateGroupPlan {
  before: UserGroupRecord;
  after: UserGroupRecord;
  data: Partial<Record<string, unknown>>;
}

/** PATCH /user_groups/{user_group_id}: name, description, permission settings ({new, old}), reactivation. */
export const updateGroup = action({
  type: 'updateGroup',
  fields: z.object({
    groupId: z.number().int(),
    name: z.string().nullable(),
    description: z.string().nullable(),
    settings: z.object(Object.fromEntries(USER_GROUP_SETTINGS.map((k) => [k, SettingChange.optional()])) as Record<UserGroupSetting, z.ZodOptional<typeof SettingChange>>),
    deactivated: z.boolean().nullable(),
  }),
  check(state, msg): UpdateGroupPlan {
    const actor = actingUser(state, msg.caller);
    const changesSettings = USER_GROUP_SETTINGS.some((k) => msg.settings[k] !== undefined);
    if (msg.name === null && msg.description === null && !changesSettings && msg.deactivated === null) throw badRequest('No new data supplied');
    // Settings of a deactivated group stay editable (FL 340); so does reactivating it (FL 386).
    const g = groupForUpdate(state, msg.groupId, true);
    if (!canManage(state, g, actor)) throw badRequest('Insufficient permission');
    const after: UserGroupRecord = { ...g, settings: { ...g.settings } };
    const data: UpdateGroupPlan['data'] = {};
    if (msg.name !== null && msg.name !== g.name) {
      after.name = checkName(state, msg.name, g.id);
      data.name = after.name;
    }
    if (msg.description !== null && msg.description !== g.description) {
      after.description = msg.description;
      after.renderedDescription = renderDescription(msg.description);
      data.description = after.description;
      data.rendered_description = after.renderedDescription;
    }
    for (const k of USER_GROUP_SETTINGS) {
      const change = msg.settings[k];
      if (!change) continue;
      const current = settingForApi(state, g.settings[k]);
      if (change.old !== undefined && !sameValue(change.old, current)) throw new ApiError('EXPECTATION_MISMATCH', "'old' value does not match the expected value.", 400);
      const next = checkSettingValue(state, k, change.new);
      if (sameValue(next, current)) continue;
      after.settings[k] = next;
      data[k] = settingForApi(state, next);
    }
    // `deactivated: true` does nothing: deactivation has its own operation.
    if (msg.deactivated === false && g.deactivated) {
      after.deactivated = false;
      data.deactivated = false;
    }
    return { before: g, after, data };
  },
  apply(state, p, tx) {
    if (Object.keys(p.data).length === 0) return {};
    state.groups.set(p.after.id, p.after);
    tx.write(T.userGroups.at(state.realmId, p.after.id).put(p.after));
    return {};
  },
  events(state, p) {
    if (Object.keys(p.data).length === 0) return [];
    const id = p.after.id;
    const full = { type: 'user_group' as const, op: 'update' as const, group_id: id, data: p.data };
    if (p.data.deactivated === false) {
      // Clients that never saw the deactivated group get it whole again.
      return [groupEvent(state, full, { type: 'user_group', op: 'add', group: groupObject(state, p.after) })];
    }
    // Changes to a deactivated group only reach the clients that list deactivated groups.
    return [p.before.deactivated ? groupEvent(state, full, null) : toAll(state, full)];
  },
});

/** Where a group is used, so that it cannot be deactivated (Zulip's objections). */
function objections(state: Readonly<RealmState>, id: number): Array<Record<string, unknown>> {
  const uses = (v: GroupSettingValue) => (typeof v === 'number' ? v === id : v.direct_subgroups.includes(id));
  const out: Array<Record<string, unknown>> = [];
  const supergroups = [...state.groups.values()].filter((g) => !g.deactivated && g.subgroups.includes(id)).map((g) => g.id);
  if (supergroups.length) out.push({ type: 'subgroup', supergroup_ids: supergroups });
  for (const c of state.channels.values()) {
    if (c.isArchived) continue;
    const settings = Object.entries(c.groups).filter(([, v]) => uses(v)).map(([k]) => k);
    if (settings.length) out.push({ type: 'channel', channel_id: c.id, settings });
  }
  for (const g of state.groups.values()) {
    if (g.deactivated || g.id === id) continue;
    const settings = USER_GROUP_SETTINGS.filter((k) => uses(g.settings[k]));
    if (settings.length) out.push({ type: 'user_group', group_id: g.id, settings });
  }
  if (state.meta && uses(state.meta.canMentionManyUsersGroup)) out.push({ type: 'realm', settings: ['can_mention_many_users_group'] });
  return out;
}

/** POST /user_groups/{user_group_id}/deactivate. */
export const deactivateGroup = action({
  type: 'deactivateGroup',
  fields: z.object({ groupId: z.number().int() }),
  check(state, msg) {
    const actor = actingUser(state, msg.caller);
    const g = groupForUpdate(state, msg.groupId, false);
    if (!canManage(state, g, actor)) throw badRequest('Insufficient permission');
    const found = objections(state, g.id);
    if (found.length) throw new ApiError('CANNOT_DEACTIVATE_GROUP_IN_USE', 'Cannot deactivate user group in use.', 400, { objections: found });
    return g;
  },
  apply(state, g, tx) {
    const next = { ...g, deactivated: true };
    state.groups.set(g.id, next);
    tx.write(T.userGroups.at(state.realmId, g.id).put(next));
    return {};
  },
  events(state, g) {
    return [groupEvent(state, { type: 'user_group', op: 'update', group_id: g.id, data: { deactivated: true } }, { type: 'user_group', op: 'remove', group_id: g.id })];
  },
});

interface MembersPlan {
  group: UserGroupRecord;
  add: number[];
  remove: number[];
  addSubgroups: number[];
  removeSubgroups: number[];
}

/** POST /user_groups/{user_group_id}/members: users and subgroups in and out, by the group's permission settings. */
export const updateGroupMembers = action({
  type: 'updateGroupMembers',
  fields: z.object({ groupId: z.number().int(), add: z.array(z.number().int()), remove: z.array(z.number().int()), addSubgroups: z.array(z.number().int()), removeSubgroups: z.array(z.number().int()) }),
  check(state, msg): MembersPlan {
    const actor = actingUser(state, msg.caller);
    if (!msg.add.length && !msg.remove.length && !msg.addSubgroups.length && !msg.removeSubgroups.length) {
      throw badRequest('Nothing to do. Specify at least one of "add", "delete", "add_subgroups" or "delete_subgroups".');
    }
    // Members of a deactivated group stay editable (FL 391).
    const g = groupForUpdate(state, msg.groupId, true);
    const manage = canManage(state, g, actor);
    const may = (setting: UserGroupSetting) => manage || holds(state, g, setting, actor);
    const add = checkUsers(state, msg.add);
    if (add.length) {
      const onlySelf = add.length === 1 && add[0] === actor.id;
      if (!(may('can_add_members_group') || (onlySelf && may('can_join_group')))) throw badRequest('Insufficient permission');
      for (const id of add) if (g.members.includes(id)) throw badRequest(`User ${id} is already a member of this group`);
    }
    const remove = [...new Set(msg.remove)];
    if (remove.length) {
      for (const id of remove) if (!state.users.has(id)) throw badRequest(`Invalid user ID: ${id}`);
      const onlySelf = remove.length === 1 && remove[0] === actor.id;
      if (!(may('can_remove_members_group') || (onlySelf && may('can_leave_group')))) throw badRequest('Insufficient permission');
      for (const id of remove) if (!g.members.includes(id)) throw badRequest(`There is no member '${id}' in this user group`);
    }
    const addSubgroups = checkSubgroups(state, msg.addSubgroups);
    if (addSubgroups.length) {
      if (!may('can_add_members_group')) throw badRequest('Insufficient permission');
      for (const id of addSubgroups) if (g.subgroups.includes(id)) throw badRequest(`User group ${id} is already a subgroup of this group.`);
      if (addSubgroups.includes(g.id) || recursiveSubgroups(state, addSubgroups).has(g.id)) throw badRequest(`User group ${g.id} is already a subgroup of one of the passed subgroups.`);
    }
    const removeSubgroups = [...new Set(msg.removeSubgroups)];
    if (removeSubgroups.length) {
      for (const id of removeSubgroups) if (!usableGroup(state, id, true)) throw badRequest(`Invalid user group ID: ${id}`);
      if (!may('can_remove_members_group')) throw badRequest('Insufficient permission');
      for (const id of removeSubgroups) if (!g.subgroups.includes(id)) throw badRequest(`User group ${id} is not a subgroup of this group.`);
    }
    return { group: g, add, remove, addSubgroups, removeSubgroups };
  },
  apply(state, p, tx) {
    const g = p.group;
    const members = [...g.members.filter((id) => !p.remove.includes(id)), ...p.add].sort((a, b) => a - b);
    const subgroups = [...g.subgroups.filter((id) => !p.removeSubgroups.includes(id)), ...p.addSubgroups].sort((a, b) => a - b);
    const next = { ...g, members, subgroups };
    state.groups.set(g.id, next);
    tx.write(T.userGroups.at(state.realmId, g.id).put(next));
    return {};
  },
  events(state, p) {
    const id = p.group.id;
    const events: ClientEventBody[] = [];
    if (p.add.length) events.push({ type: 'user_group', op: 'add_members', group_id: id, user_ids: [...p.add].sort((a, b) => a - b) });
    if (p.remove.length) events.push({ type: 'user_group', op: 'remove_members', group_id: id, user_ids: [...p.remove].sort((a, b) => a - b) });
    if (p.addSubgroups.length) events.push({ type: 'user_group', op: 'add_subgroups', group_id: id, direct_subgroup_ids: [...p.addSubgroups].sort((a, b) => a - b) });
    if (p.removeSubgroups.length) events.push({ type: 'user_group', op: 'remove_subgroups', group_id: id, direct_subgroup_ids: [...p.removeSubgroups].sort((a, b) => a - b) });
    return events.map((e) => (p.group.deactivated ? groupEvent(state, e, null) : toAll(state, e)));
  },
});
