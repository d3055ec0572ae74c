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
import type { JsonValue } from '../../../../lib/errors.ts';
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { GroupSettingValue, T, USER_GROUP_SETTINGS, type UserGroupRecord, type UserGroupSetting } from '../../../../storage/tables.ts';
import type { ClientEventBody } from '../../../events/schema.ts';
import { GROUP_ID, isGuest } from '../../../model.ts';
import { defineAction, defineQuery } from '../../../runtime/action.ts';
import { actingUser } from '../../rules/access.ts';
import {
  canManage,
  checkName,
  checkSettingValue,
  checkSubgroups,
  checkUsers,
  directMembers,
  directSubgroups,
  groupEvent,
  groupForUpdate,
  groupMembersRecursive,
  groupObject,
  groupObjects,
  holds,
  recursiveSubgroups,
  requireMember,
  sameValue,
  settingForApi,
  toAll,
  usableGroup,
} from '../../rules/groups.ts';
import { renderDescription } from '../../rules/markdown.ts';
import { REALM_GROUP_SETTINGS, realmGroupSetting } from '../organization/realm_settings.ts';
import type { RealmState } from '../../state/state.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

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
    // Any user of the organization, bots included (FL 458); the system bots live outside it in Zulip.
    const target = state.users.get(msg.userId);
    if (!target || target.isSystemBot) throw badRequest('No such user');
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
    if (isGuest(actor) || !state.can(realmGroupSetting(state, 'can_create_groups'), actor)) throw badRequest('Insufficient permission');
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
      return groupEvent(state, full, { type: 'user_group', op: 'add', group: groupObject(state, p.after) });
    }
    // Changes to a deactivated group only reach the clients that list deactivated groups.
    return p.before.deactivated ? groupEvent(state, full, null) : [toAll(state, full)];
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
  const realm = Object.keys(REALM_GROUP_SETTINGS).filter((k) => uses(realmGroupSetting(state, k)));
  if (realm.length) out.push({ type: 'realm', settings: realm });
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
    if (found.length) throw new ApiError('CANNOT_DEACTIVATE_GROUP_IN_USE', 'Cannot deactivate user group in use.', 400, { objections: found as unknown as JsonValue });
    return g;
  },
  apply(state, g, tx) {
    const next = { ...g, deactivated: true };
    state.groups.set(g.id, next);
    tx.write(T.userGroups.at(state.realmId, g.id).put(next));
    return {};
  },
  events(state, g) {
    return groupEvent(state, { type: 'user_group', op: 'update', group_id: g.id, data: { deactivated: true } }, { type: 'user_group', op: 'remove', group_id: g.id });
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
      // Deactivated users are in no group while deactivated, so none is removed (FL 303).
      for (const id of remove) if (!state.users.get(id)?.isActive) throw badRequest(`Invalid user ID: ${id}`);
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
    return events.flatMap((e) => (p.group.deactivated ? groupEvent(state, e, null) : [toAll(state, e)]));
  },
});
