/**
 * Default channel groups ("default stream groups" in Zulip's names): named
 * sets of channels new users may pick at sign-up. POST
 * /default_stream_groups/create, PATCH /default_stream_groups/{id} (name,
 * description), PATCH /default_stream_groups/{id}/streams (add, remove) and
 * DELETE /default_stream_groups/{id}, by organization administrators only
 * (Zulip's `can_manage_default_streams`). Every change sends the whole list
 * in a `default_stream_groups` event to active members who are not guests,
 * as Zulip's `notify_default_stream_groups`; guests get an empty list at
 * register. An archived channel leaves every group it was in.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { type ChannelRecord, type RealmSettings, T, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toUsers } from '../../../events/delivery.ts';
import type { DefaultChannelGroupObject } from '../../../events/schema.ts';
import { isAdmin, isGuest } from '../../../model.ts';
import { defineAction, type Tx } from '../../../runtime/action.ts';
import { actingUser, activeNonGuests } from '../../rules/access.ts';
import type { RealmState } from '../../state/state.ts';
import { hasContentAccess } from './streams.ts';

const action = defineAction<RealmState>();

type Group = RealmSettings['defaultChannelGroups'][number];

/** Zulip's `DefaultStreamGroup.MAX_NAME_LENGTH`. */
export const MAX_GROUP_NAME_LENGTH = 60;
/** The length of Zulip's `DefaultStreamGroup.description` column. */
export const MAX_GROUP_DESCRIPTION_LENGTH = 1024;

const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A group as the API shows it: its channels by ID, in the order of their names (Zulip's `DefaultStreamGroup.to_dict`). */
function groupObject(state: Readonly<RealmState>, g: Group): DefaultChannelGroupObject {
  const channels = g.streamIds.flatMap((id) => state.channels.get(id) ?? []);
  channels.sort((a, b) => a.name.localeCompare(b.name) || a.id - b.id);
  return { name: g.name, id: g.id, description: g.description, streams: channels.map((c) => c.id) };
}

/** The `realm_default_stream_groups` register key: every group by name, none for guests. */
export function defaultChannelGroupsOf(state: Readonly<RealmState>, user: UserRecord): DefaultChannelGroupObject[] {
  if (isGuest(user)) return [];
  return [...state.org.settings.defaultChannelGroups].sort((a, b) => byCodePoint(a.name, b.name)).map((g) => groupObject(state, g));
}

/** The `default_stream_groups` event with the whole list, to active members who are not guests. */
export function defaultChannelGroupsDelivery(state: Readonly<RealmState>): Delivery {
  const groups = [...state.org.settings.defaultChannelGroups].sort((a, b) => byCodePoint(a.name, b.name)).map((g) => groupObject(state, g));
  return toUsers(state.realmId, activeNonGuests(state), { type: 'default_stream_groups', default_stream_groups: groups });
}

function requireAdmin(state: Readonly<RealmState>, caller: { realmId: number; userId: number | null }): UserRecord {
  const user = actingUser(state, caller);
  if (!isAdmin(user)) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
  return user;
}

/** Zulip's `check_default_stream_group_name`. */
function checkName(name: string): void {
  if (name.trim() === '') throw badRequest(`Invalid default channel group name '${name}'`);
  if ([...name].length > MAX_GROUP_NAME_LENGTH) throw badRequest(`Default channel group name too long (limit: ${MAX_GROUP_NAME_LENGTH} characters)`);
  if (name.includes('\u0000')) throw badRequest(`Default channel group name '${name}' contains NULL (0x00) characters.`);
}

function checkDescription(description: string): void {
  if ([...description].length > MAX_GROUP_DESCRIPTION_LENGTH) throw badRequest(`Default channel group description too long (limit: ${MAX_GROUP_DESCRIPTION_LENGTH} characters)`);
}

/** Channels by name as Zulip's `access_stream_by_name`: active ones whose messages the user may read. */
function channelsByName(state: Readonly<RealmState>, user: UserRecord, names: string[]): ChannelRecord[] {
  return names.map((name) => {
    const c = state.channelsByName.get(name.trim().toLowerCase());
    if (!c || c.isArchived || !hasContentAccess(state, c, user)) throw badRequest(`Invalid channel name '${name}'`);
    return c;
  });
}

function existing(state: Readonly<RealmState>, id: number): Group {
  const g = state.org.settings.defaultChannelGroups.find((x) => x.id === id);
  if (!g) throw badRequest(`Default channel group with id '${id}' does not exist.`);
  return g;
}

function notDefault(channels: ChannelRecord[], groupName: string): void {
  const c = channels.find((x) => x.isDefault);
  if (c) throw badRequest(`'${c.name}' is a default channel and cannot be added to '${groupName}'`);
}

function save(state: RealmState, tx: Tx, groups: Group[]): void {
  state.org.settings = { ...state.org.settings, defaultChannelGroups: groups };
  tx.write(T.realmSettings.at(state.realmId).put(state.org.settings));
}

export const createDefaultChannelGroup = action({
  type: 'createDefaultChannelGroup',
  fields: z.object({ name: z.string(), description: z.string(), streamNames: z.array(z.string()) }),
  check(state, msg) {
    const user = requireAdmin(state, msg.caller);
    const channels = channelsByName(state, user, msg.streamNames);
    notDefault(channels, msg.name);
    checkName(msg.name);
    checkDescription(msg.description);
    if (state.org.settings.defaultChannelGroups.some((g) => g.name === msg.name)) throw badRequest(`Default channel group '${msg.name}' already exists`);
    return { name: msg.name, description: msg.description, streamIds: [...new Set(channels.map((c) => c.id))] };
  },
  apply(state, p, tx) {
    const group: Group = { id: state.org.take('channelGroup', state.realmId, tx), ...p };
    save(state, tx, [...state.org.settings.defaultChannelGroups, group]);
    return {};
  },
  events: (state) => [defaultChannelGroupsDelivery(state)],
});

export const updateDefaultChannelGroup = action({
  type: 'updateDefaultChannelGroup',
  fields: z.object({ id: z.number().int(), newName: z.string().optional(), newDescription: z.string().optional() }),
  check(state, msg): Group {
    requireAdmin(state, msg.caller);
    // As Zulip: empty strings count as absent here.
    if (!msg.newName && !msg.newDescription) throw badRequest('You must pass "new_description" or "new_group_name".');
    const g = existing(state, msg.id);
    const next = { ...g };
    if (msg.newName !== undefined) {
      if (g.name === msg.newName) throw badRequest(`This default channel group is already named '${msg.newName}'`);
      if (state.org.settings.defaultChannelGroups.some((x) => x.name === msg.newName)) throw badRequest(`Default channel group '${msg.newName}' already exists`);
      checkName(msg.newName);
      next.name = msg.newName;
    }
    if (msg.newDescription !== undefined) {
      checkDescription(msg.newDescription);
      next.description = msg.newDescription;
    }
    return next;
  },
  apply(state, g, tx) {
    save(state, tx, state.org.settings.defaultChannelGroups.map((x) => (x.id === g.id ? g : x)));
    return {};
  },
  events: (state) => [defaultChannelGroupsDelivery(state)],
});

export const updateDefaultChannelGroupChannels = action({
  type: 'updateDefaultChannelGroupChannels',
  fields: z.object({ id: z.number().int(), op: z.string(), streamNames: z.array(z.string()) }),
  check(state, msg): Group {
    const user = requireAdmin(state, msg.caller);
    const g = existing(state, msg.id);
    const channels = channelsByName(state, user, msg.streamNames);
    if (msg.op === 'add') {
      notDefault(channels, g.name);
      const ids = new Set(g.streamIds);
      for (const c of channels) {
        if (ids.has(c.id)) throw badRequest(`Channel '${c.name}' is already present in default channel group '${g.name}'`);
        ids.add(c.id);
      }
      return { ...g, streamIds: [...ids] };
    }
    if (msg.op === 'remove') {
      const missing = channels.find((c) => !g.streamIds.includes(c.id));
      if (missing) throw badRequest(`Channel '${missing.name}' is not present in default channel group '${g.name}'`);
      const gone = new Set(channels.map((c) => c.id));
      return { ...g, streamIds: g.streamIds.filter((id) => !gone.has(id)) };
    }
    throw badRequest('Invalid value for "op". Specify one of "add" or "remove".');
  },
  apply(state, g, tx) {
    save(state, tx, state.org.settings.defaultChannelGroups.map((x) => (x.id === g.id ? g : x)));
    return {};
  },
  events: (state) => [defaultChannelGroupsDelivery(state)],
});

export const removeDefaultChannelGroup = action({
  type: 'removeDefaultChannelGroup',
  fields: z.object({ id: z.number().int() }),
  check(state, msg) {
    requireAdmin(state, msg.caller);
    return { id: existing(state, msg.id).id };
  },
  apply(state, p, tx) {
    save(state, tx, state.org.settings.defaultChannelGroups.filter((x) => x.id !== p.id));
    return {};
  },
  events: (state) => [defaultChannelGroupsDelivery(state)],
});

/** Whether a channel is in any group. */
export const inChannelGroups = (state: Readonly<RealmState>, channelId: number): boolean => state.org.settings.defaultChannelGroups.some((g) => g.streamIds.includes(channelId));

/** Takes an archived channel out of every group (Zulip's `do_deactivate_stream`), in the archive's transaction. */
export function dropFromChannelGroups(state: RealmState, tx: Tx, channelId: number): void {
  save(state, tx, state.org.settings.defaultChannelGroups.map((g) => ({ ...g, streamIds: g.streamIds.filter((id) => id !== channelId) })));
}
