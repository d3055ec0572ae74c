/**
 * Channel administration: GET /streams, GET /streams/{id}, GET
 * /get_stream_id, GET /streams/{id}/members, PATCH /streams/{id}, DELETE
 * /streams/{id} (archive) and the default channels. Who may see and change
 * what follows Zulip's `zerver/lib/streams.py`: realm administrators see
 * every channel's metadata and administer every channel; members of a
 * channel's `can_administer_channel_group` administer it.
 */
import { z } from 'zod';
import { ApiError, badRequest } from '../../../../lib/errors.ts';
import { type ChannelGroupSetting, type ChannelRecord, CHANNEL_GROUP_SETTINGS, GroupSettingValue, type StoredMessage, T, TopicsPolicy, type UserRecord } from '../../../../storage/tables.ts';
import { type Delivery, toUsers, toUsersIf } from '../../../events/delivery.ts';
import type { ChannelObject, ClientEventBody } from '../../../events/schema.ts';
import { type ChannelActivity, formatChannel, formatSubscription } from '../../../format.ts';
import { GROUP_ID, isAdmin, isGuest, isSystemGroupId, Role, SYSTEM_GROUPS } from '../../../model.ts';
import { checkPermissionConfig, normalizeGroupValue, permission, type PermissionConfig, settingForApi } from '../../rules/groups.ts';
import { defineAction, defineQuery, type Tx } from '../../../runtime/action.ts';
import { actingUser, activeUsers, canAccess, channelAudience, contentAccessByGroups } from '../../rules/access.ts';
import { defaultChannelGroupsDelivery, dropFromChannelGroups, inChannelGroups } from './default_channel_groups.ts';
import { renderDescription } from '../../rules/markdown.ts';
import { armRetention } from '../messages/retention.ts';
import { archivedNotice, channelEventsNotice, descriptionNotice, permissionNotice, postingNotice, renamedNotice, retentionNotice, topicsPolicyNotice } from './channel_events.ts';
import { systemBotDeliveries } from '../organization/system_bots.ts';
import type { RealmState } from '../../state/state.ts';
import { MAX_STREAM_DESCRIPTION_LENGTH, MAX_STREAM_NAME_LENGTH } from './subscriptions.ts';

const action = defineAction<RealmState>();
const query = defineQuery<RealmState>();

// ---- access rules -----------------------------------------------------------

/** The fields computed from a channel's traffic and its subscriptions: O(1) (the subscriber count is kept by the state). */
export function channelActivity(state: Readonly<RealmState>, c: ChannelRecord): ChannelActivity {
  return {
    isRecentlyActive: state.org.isRecentlyActive(c.id, c.dateCreated),
    weeklyTraffic: state.org.weeklyTraffic(c.id, c.dateCreated),
    subscriberCount: state.subscriberCount(c.id),
    isActive: (id) => state.users.get(id)?.isActive === true,
  };
}

/** A channel object with its computed fields. */
export const channelObject = (state: Readonly<RealmState>, c: ChannelRecord): ChannelObject => formatChannel(c, channelActivity(state, c));

/** Whether the user may see that the channel exists, its name, description and subscribers (metadata access). */
export function hasMetadataAccess(state: Readonly<RealmState>, c: ChannelRecord, user: UserRecord): boolean {
  if (isAdmin(user) || canAccess(state, c, user)) return true;
  return !isGuest(user) && (state.can(c.groups.can_add_subscribers_group, user) || state.can(c.groups.can_subscribe_group, user));
}

/** Whether the user may read the channel's messages (content access; Zulip's `user_has_content_access`). */
export function hasContentAccess(state: Readonly<RealmState>, c: ChannelRecord, user: UserRecord): boolean {
  return canAccess(state, c, user) || contentAccessByGroups(state, c, user);
}

/** Who may choose a channel's topics_policy (FL 392): organization administrators, and can_set_topics_policy_group. */
export function canSetTopicsPolicy(state: Readonly<RealmState>, user: UserRecord): boolean {
  return isAdmin(user) || state.can(realmPermission(state, 'can_set_topics_policy_group', GROUP_ID['role:members']), user);
}

/** Realm administrators, and members of the channel's administration group, administer it. */
export function canAdminister(state: Readonly<RealmState>, c: ChannelRecord, user: UserRecord): boolean {
  return isAdmin(user) || state.can(c.groups.can_administer_channel_group, user);
}

/** Archived channels are shown only to clients that declared the `archived_channels` capability. */
export const shownTo = (c: ChannelRecord, archivedChannels: boolean): boolean => archivedChannels || !c.isArchived;

const invalidChannelId = () => badRequest('Invalid channel ID');

/** A channel the user may see, for reads; archived ones only when `allowArchived`. */
function accessById(state: Readonly<RealmState>, user: UserRecord, id: number, opts: { content: boolean; allowArchived?: boolean }): ChannelRecord {
  const c = state.channels.get(id);
  if (!c || (c.isArchived && !opts.allowArchived)) throw invalidChannelId();
  if (!(opts.content ? hasContentAccess(state, c, user) : hasMetadataAccess(state, c, user))) throw invalidChannelId();
  return c;
}

/**
 * The channel an update or archive targets (Zulip's
 * `access_stream_for_delete_or_update_requiring_metadata_access`): a user who
 * may not see it gets the same error as for a missing channel.
 */
function accessForUpdate(state: Readonly<RealmState>, user: UserRecord, id: number): ChannelRecord {
  const c = state.channels.get(id);
  if (!c) throw invalidChannelId();
  if (canAdminister(state, c, user)) return c;
  if (hasContentAccess(state, c, user)) throw badRequest('You do not have permission to administer this channel.');
  throw invalidChannelId();
}

export function checkChannelName(raw: string): string {
  const name = raw.trim();
  if (!name) throw badRequest("Channel name can't be empty.");
  if ([...name].length > MAX_STREAM_NAME_LENGTH) throw badRequest(`Channel name too long (limit: ${MAX_STREAM_NAME_LENGTH} characters).`);
  const bad = [...name].findIndex((ch) => /[\u0000-\u001f\u007f-\u009f]/.test(ch));
  if (bad !== -1) throw badRequest(`Invalid character in channel name, at position ${bad + 1}.`);
  return name;
}

/**
 * Zulip's configuration of the channel permissions this server has
 * (`Stream.stream_permission_group_settings`), with the defaults a new
 * channel gets (`subscribe`).
 */
export const CHANNEL_PERMISSIONS: Readonly<Record<ChannelGroupSetting, PermissionConfig>> = {
  can_add_subscribers_group: permission(true, false, 'role:nobody'),
  can_administer_channel_group: permission(true, false, 'channel_creator'),
  can_delete_any_message_group: permission(true, true, 'role:nobody'),
  can_delete_own_message_group: permission(true, true, 'role:nobody'),
  can_remove_subscribers_group: permission(true, true, 'role:administrators'),
  can_send_message_group: permission(true, true, 'role:everyone'),
  can_move_messages_out_of_channel_group: permission(true, true, 'role:nobody'),
  can_move_messages_within_channel_group: permission(true, true, 'role:nobody'),
  can_resolve_topics_group: permission(true, true, 'role:nobody'),
  can_subscribe_group: permission(true, false, 'role:nobody'),
  can_create_topic_group: permission(true, true, 'role:everyone'),
};

/**
 * A permission's new value: groups (system, or user groups not deactivated)
 * and active users that exist, allowed by the setting's configuration
 * (`checkPermissionConfig`); returned normalized.
 */
export function checkGroupValue(state: Readonly<RealmState>, name: string, raw: GroupSettingValue, config: PermissionConfig): GroupSettingValue {
  const v = normalizeGroupValue(raw);
  const known = (g: number) => {
    if (!isSystemGroupId(g) && !state.groups.has(g)) throw badRequest(`Invalid user group ID: ${g}`, { var_name: name });
    if (!state.isUsableGroup(g)) throw badRequest('User group is deactivated.');
  };
  if (typeof v === 'number') known(v);
  else {
    for (const id of v.direct_members) if (!state.users.get(id)?.isActive) throw badRequest(`Invalid user ID: ${id}`, { var_name: name });
    for (const id of v.direct_subgroups) known(id);
  }
  checkPermissionConfig(name, config, v);
  return typeof v === 'number' ? v : { direct_members: [...new Set(v.direct_members)].sort((a, b) => a - b), direct_subgroups: [...new Set(v.direct_subgroups)].sort((a, b) => a - b) };
}

/**
 * A private channel with protected history lets everyone start topics (FL 441): its subscribers
 * could not read a topic's earlier messages, so "new topic" is not theirs to judge.
 */
export function checkTopicCreationAllowedWithHistory(inviteOnly: boolean, historyPublic: boolean, value: GroupSettingValue): void {
  if (inviteOnly && !historyPublic && !sameGroupValue(value, GROUP_ID['role:everyone'])) throw badRequest('Unsupported parameter combination: history_public_to_subscribers, can_create_topic_group');
}

/** The channel permissions only members of the organization's can_set_delete_message_policy_group change (FL 407). */
export const DELETE_POLICY_SETTINGS: readonly ChannelGroupSetting[] = ['can_delete_any_message_group', 'can_delete_own_message_group'];
export const canSetDeletePolicy = (state: Readonly<RealmState>, user: UserRecord): boolean => state.can(realmPermission(state, 'can_set_delete_message_policy_group', GROUP_ID['role:moderators']), user);

/** Group-setting values are equal when they name the same group or the same members and subgroups. */
export function sameGroupValue(a: GroupSettingValue, b: GroupSettingValue): boolean {
  const norm = (v: GroupSettingValue) => (typeof v === 'number' ? v : JSON.stringify({ m: [...v.direct_members].sort((x, y) => x - y), g: [...v.direct_subgroups].sort((x, y) => x - y) }));
  return norm(a) === norm(b);
}

/** A realm-level group permission, by its API name, with its default. */
export function realmPermission(state: Readonly<RealmState>, name: string, fallback: number): GroupSettingValue {
  return state.org.settings.groups[name] ?? fallback;
}

export function defaultStreamIds(state: Readonly<RealmState>): number[] {
  return [...state.channels.values()].filter((c) => c.isDefault && !c.isArchived).map((c) => c.id).sort((a, b) => a - b);
}

/** The `default_streams` event for everyone who is told of default channels (members, not guests). */
export function defaultStreamsDelivery(state: Readonly<RealmState>): Delivery {
  const audience = [...state.users.values()].filter((u) => u.isActive && !isGuest(u)).map((u) => u.id);
  return toUsers(state.realmId, audience, { type: 'default_streams', default_streams: defaultStreamIds(state) });
}

// ---- reads -----------------------------------------------------------------

export const listStreams = query({
  type: 'listStreams',
  fields: z.object({
    includePublic: z.boolean(),
    includeWebPublic: z.boolean(),
    includeSubscribed: z.boolean(),
    excludeArchived: z.boolean(),
    includeAll: z.boolean(),
    includeDefault: z.boolean(),
    includeOwnerSubscribed: z.boolean(),
    includeCanAccessContent: z.boolean(),
  }),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    const owner = user.isBot && user.botOwnerId !== null ? state.users.get(user.botOwnerId) : undefined;
    const defaults = new Set(defaultStreamIds(state));
    const out: Array<ChannelObject & { is_default?: boolean }> = [];
    for (const c of [...state.channels.values()].sort((a, b) => a.id - b.id)) {
      if (msg.excludeArchived && c.isArchived) continue;
      const wanted =
        // Every channel the user may see the metadata of, for every role since FL 356 (all of them for administrators).
        (msg.includeAll && hasMetadataAccess(state, c, user)) ||
        (msg.includeSubscribed && state.isSubscribed(c.id, user.id)) ||
        (msg.includePublic && !isGuest(user) && !c.inviteOnly) ||
        (msg.includeWebPublic && c.isWebPublic) ||
        (msg.includeOwnerSubscribed && owner !== undefined && state.isSubscribed(c.id, owner.id)) ||
        (msg.includeDefault && defaults.has(c.id)) ||
        (msg.includeCanAccessContent && hasContentAccess(state, c, user));
      if (!wanted) continue;
      out.push({ ...channelObject(state, c), ...(msg.includeDefault ? { is_default: defaults.has(c.id) } : {}) });
    }
    return { streams: out };
  },
});

export const getStream = query({
  type: 'getStream',
  fields: z.object({ streamId: z.number().int() }),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    return { stream: channelObject(state, accessById(state, user, msg.streamId, { content: false, allowArchived: true })) };
  },
});

export const getStreamId = query({
  type: 'getStreamId',
  fields: z.object({ name: z.string() }),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    const c = state.channelsByName.get(msg.name.trim().toLowerCase());
    if (!c || c.isArchived || !hasContentAccess(state, c, user)) throw badRequest(`Invalid channel name '${msg.name}'`);
    return { stream_id: c.id };
  },
});

export const streamMembers = query({
  type: 'streamMembers',
  fields: z.object({ streamId: z.number().int() }),
  run(state, msg) {
    const user = actingUser(state, msg.caller);
    const c = accessById(state, user, msg.streamId, { content: false, allowArchived: true });
    return { subscribers: state.activeSubscribers(c.id).sort((a, b) => a - b) };
  },
});

export const listDefaultStreams = query({
  type: 'listDefaultStreams',
  fields: z.object({}),
  run(state, msg) {
    actingUser(state, msg.caller);
    return { default_streams: defaultStreamIds(state).map((id) => channelObject(state, state.channels.get(id)!)) };
  },
});

// ---- default channels ------------------------------------------------------

function requireDefaultsManager(user: UserRecord): void {
  if (!isAdmin(user)) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization administrator', 400);
}

export const addDefaultStream = action({
  type: 'addDefaultStream',
  fields: z.object({ streamId: z.number().int() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    requireDefaultsManager(user);
    const c = accessById(state, user, msg.streamId, { content: true });
    if (c.inviteOnly) throw badRequest('Private channels cannot be made default.');
    return { channel: c, changed: !c.isDefault };
  },
  apply(state, p, tx) {
    if (p.changed) {
      const c = { ...p.channel, isDefault: true };
      state.indexChannel(c);
      tx.write(T.channels.at(state.realmId, c.id).put(c));
    }
    return {};
  },
  events(state, p) {
    return p.changed ? [defaultStreamsDelivery(state)] : [];
  },
});

export const removeDefaultStream = action({
  type: 'removeDefaultStream',
  fields: z.object({ streamId: z.number().int() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    requireDefaultsManager(user);
    const c = accessById(state, user, msg.streamId, { content: false });
    return { channel: c, changed: c.isDefault };
  },
  apply(state, p, tx) {
    if (p.changed) {
      const c = { ...p.channel, isDefault: false };
      state.indexChannel(c);
      tx.write(T.channels.at(state.realmId, c.id).put(c));
    }
    return {};
  },
  events(state, p) {
    return p.changed ? [defaultStreamsDelivery(state)] : [];
  },
});

// ---- PATCH /streams/{id} ---------------------------------------------------

const Retention = z.union([z.number().int(), z.literal('realm_default'), z.literal('unlimited'), z.literal('forever')]);
const GroupChange = z.object({ new: GroupSettingValue, old: GroupSettingValue.optional() });

/** The `stream` update events' optional extras (Zulip sends them with some properties). */
type StreamUpdate = Extract<ClientEventBody, { type: 'stream'; op: 'update' }>;

interface UpdatePlan {
  before: ChannelRecord;
  after: ChannelRecord;
  /** Each change as the event's property, value and extras. */
  events: Array<{ property: string; value: unknown } & Record<string, unknown>>;
  /** Users who could see the channel before and after. */
  audienceBefore: number[];
  defaultsChanged: boolean;
  actorId: number;
  /** Notification Bot's "channel events" notices (FL 434): filled by `apply`, delivered by `events`. */
  notices?: Array<StoredMessage | null>;
}

export const updateStream = action({
  type: 'updateStream',
  fields: z.object({
    streamId: z.number().int(),
    description: z.string().optional(),
    newName: z.string().optional(),
    isPrivate: z.boolean().optional(),
    isWebPublic: z.boolean().optional(),
    historyPublicToSubscribers: z.boolean().optional(),
    isDefaultStream: z.boolean().optional(),
    messageRetentionDays: Retention.optional(),
    isArchived: z.boolean().optional(),
    topicsPolicy: TopicsPolicy.optional(),
    /** `null` takes the channel out of its folder; absent leaves it. */
    folderId: z.number().int().nullable().optional(),
    groups: z.record(z.string(), GroupChange),
  }),
  check(state, msg): UpdatePlan {
    const user = actingUser(state, msg.caller);
    const c = accessForUpdate(state, user, msg.streamId);
    const next: ChannelRecord = { ...c, groups: { ...c.groups } };
    const events: UpdatePlan['events'] = [];
    const isPrivate = msg.isPrivate ?? c.inviteOnly;
    const isWebPublic = msg.isWebPublic ?? c.isWebPublic;
    const isDefault = msg.isDefaultStream ?? c.isDefault;
    const history = msg.historyPublicToSubscribers ?? (msg.isPrivate !== undefined ? !msg.isPrivate : c.historyPublicToSubscribers);
    if (isWebPublic && (!history || isPrivate)) throw badRequest('Invalid parameters');
    if (!isPrivate && !history) throw badRequest('Invalid parameters');
    if (isPrivate && isDefault) throw badRequest('A default channel cannot be private.');
    if (!isPrivate && state.org.settings.moderationRequestChannelId === c.id) throw badRequest('Moderation request channel must be private.');
    if (msg.isPrivate !== undefined && !hasContentAccess(state, c, user)) throw badRequest('Channel content access is required.');
    if (msg.isPrivate !== undefined) {
      const allowed = msg.isPrivate ? realmPermission(state, 'can_create_private_channel_group', GROUP_ID['role:members']) : realmPermission(state, 'can_create_public_channel_group', GROUP_ID['role:members']);
      if (!state.can(allowed, user)) throw badRequest('Insufficient permission');
    }
    if (msg.isWebPublic) throw badRequest('Web-public channels are not enabled.');
    if (msg.isPrivate !== undefined || msg.isWebPublic !== undefined || msg.historyPublicToSubscribers !== undefined) {
      if (isPrivate !== c.inviteOnly || history !== c.historyPublicToSubscribers || isWebPublic !== c.isWebPublic) {
        next.inviteOnly = isPrivate;
        next.historyPublicToSubscribers = history;
        next.isWebPublic = isWebPublic;
        events.push({ property: 'invite_only', value: isPrivate, history_public_to_subscribers: history, is_web_public: isWebPublic });
      }
    }
    let defaultsChanged = false;
    if (msg.isDefaultStream !== undefined) {
      if (!isAdmin(user)) throw badRequest('You do not have permission to change default channels.');
      defaultsChanged = msg.isDefaultStream !== c.isDefault;
      next.isDefault = msg.isDefaultStream;
    }
    if (msg.messageRetentionDays !== undefined) {
      if (user.role !== Role.OWNER) throw new ApiError('UNAUTHORIZED_PRINCIPAL', 'Must be an organization owner', 400);
      const r = msg.messageRetentionDays;
      if (typeof r === 'number' && r < 1) throw badRequest("Bad value for 'message_retention_days': must be at least 1", { var_name: 'message_retention_days' });
      const value = r === 'realm_default' ? null : r === 'unlimited' || r === 'forever' ? -1 : r;
      if (value !== c.messageRetentionDays) events.push({ property: 'message_retention_days', value });
      next.messageRetentionDays = value;
    }
    if (msg.isArchived === false && c.isArchived) next.isArchived = false;
    if (msg.topicsPolicy !== undefined) {
      if (!canSetTopicsPolicy(state, user)) throw badRequest('Insufficient permission');
      // Only the empty topic is allowed once every message is in it: a channel with messages keeps its topics.
      if (msg.topicsPolicy === 'empty_topic_only' && c.firstMessageId !== null && c.topicsPolicy !== 'empty_topic_only') {
        throw badRequest('To enable this configuration, all messages in this channel must be in the general chat topic. Consider renaming or deleting other topics.');
      }
      if (msg.topicsPolicy !== c.topicsPolicy) events.push({ property: 'topics_policy', value: msg.topicsPolicy });
      next.topicsPolicy = msg.topicsPolicy;
    }
    if (msg.description !== undefined) {
      const description = msg.description.replace(/\n/g, ' ');
      if ([...description].length > MAX_STREAM_DESCRIPTION_LENGTH) throw badRequest(`Channel description too long (limit: ${MAX_STREAM_DESCRIPTION_LENGTH} characters).`);
      next.description = description;
      next.renderedDescription = renderDescription(description);
      events.push({ property: 'description', value: description, rendered_description: next.renderedDescription });
    }
    if (msg.newName !== undefined) {
      const name = checkChannelName(msg.newName);
      if (name === c.name) throw badRequest('Channel already has that name.');
      const taken = state.channelsByName.get(name.toLowerCase());
      if (taken && taken.id !== c.id) throw badRequest('Channel name already in use.');
      next.name = name;
      events.push({ property: 'name', value: name });
    }
    if (msg.folderId !== undefined) {
      if (msg.folderId !== null && !state.org.folders.has(msg.folderId)) throw badRequest('Invalid channel folder ID');
      if (msg.folderId !== c.folderId) events.push({ property: 'folder_id', value: msg.folderId });
      next.folderId = msg.folderId;
    }
    for (const [name, change] of Object.entries(msg.groups)) {
      if (!(CHANNEL_GROUP_SETTINGS as readonly string[]).includes(name)) throw badRequest(`Invalid parameter: ${name}`);
      const key = name as ChannelGroupSetting;
      const current = next.groups[key];
      // `old` as clients see it (deactivated users left out, FL 303), or as stored.
      if (change.old !== undefined && !sameGroupValue(change.old, settingForApi(state, current)) && !sameGroupValue(change.old, current)) throw badRequest("'old' value does not match the expected value.");
      const value = checkGroupValue(state, name, change.new, CHANNEL_PERMISSIONS[key]);
      if (sameGroupValue(value, current)) continue;
      if ((key === 'can_add_subscribers_group' || key === 'can_subscribe_group') && !hasContentAccess(state, c, user)) throw badRequest('Channel content access is required.');
      if (DELETE_POLICY_SETTINGS.includes(key) && !canSetDeletePolicy(state, user)) throw badRequest('Insufficient permission');
      next.groups[key] = value;
      events.push({ property: key, value: settingForApi(state, value) });
      if (key === 'can_send_message_group') {
        const activity = channelActivity(state, c);
        const before = formatChannel({ ...c, groups: { ...c.groups, can_send_message_group: current } }, activity);
        const after = formatChannel(next, activity);
        if (before.stream_post_policy !== after.stream_post_policy) {
          events.push({ property: 'stream_post_policy', value: after.stream_post_policy });
          events.push({ property: 'is_announcement_only', value: after.is_announcement_only });
        }
      }
    }
    checkTopicCreationAllowedWithHistory(next.inviteOnly, next.historyPublicToSubscribers, next.groups.can_create_topic_group);
    return { before: c, after: next, events, audienceBefore: channelAudience(state, c), defaultsChanged, actorId: user.id };
  },
  apply(state, p, tx) {
    state.indexChannel(p.after);
    tx.write(T.channels.at(state.realmId, p.after.id).put(p.after));
    if (p.after.messageRetentionDays !== p.before.messageRetentionDays) armRetention(state, tx);
    p.notices = updateNotices(state, tx, p);
    return {};
  },
  events(state, p) {
    const c = p.after;
    const out: Delivery[] = [];
    const after = new Set(channelAudience(state, c));
    const before = new Set(p.audienceBefore);
    const stayed = [...after].filter((id) => before.has(id));
    const gained = [...after].filter((id) => !before.has(id));
    const lost = [...before].filter((id) => !after.has(id));
    const obj = channelObject(state, c);
    if (lost.length) out.push(toUsers(state.realmId, lost, { type: 'stream', op: 'delete', streams: [obj], stream_ids: [c.id] }));
    // Updates carry the name the channel had before the change (as Zulip's rename event does).
    let name = p.before.name;
    for (const e of p.events) {
      if (stayed.length) out.push(toUsers(state.realmId, stayed, { type: 'stream', op: 'update', stream_id: c.id, name, ...e } as StreamUpdate));
      if (e.property === 'name') name = String(e.value);
    }
    if (gained.length) out.push(...revealTo(state, c, gained));
    if (p.before.isArchived && !c.isArchived) out.push(...unarchiveEvents(state, c, stayed));
    if (p.defaultsChanged) out.push(defaultStreamsDelivery(state));
    out.push(...systemBotDeliveries(state, p.notices ?? []));
    return out;
  },
});

/** The "channel events" notices of a channel's changes, in the order of their events (Zulip's, one per change). */
function updateNotices(state: RealmState, tx: Tx, p: UpdatePlan): Array<StoredMessage | null> {
  if (!state.org.settings.sendChannelEventsMessages) return [];
  const by = state.users.get(p.actorId)!;
  const { before, after } = p;
  const out: Array<StoredMessage | null> = [];
  for (const e of p.events) {
    const content =
      e.property === 'invite_only' ? permissionNotice(by, before, after)
      : e.property === 'message_retention_days' ? retentionNotice(state, by, before.messageRetentionDays, after.messageRetentionDays)
      : e.property === 'topics_policy' ? topicsPolicyNotice(state, by, before.topicsPolicy, after.topicsPolicy)
      : e.property === 'description' ? descriptionNotice(by, before.description, after.description)
      : e.property === 'name' ? renamedNotice(by, before.name, after.name)
      : e.property === 'can_send_message_group' ? postingNotice(state, by, before.groups.can_send_message_group, after.groups.can_send_message_group)
      : null;
    if (content !== null) out.push(channelEventsNotice(state, tx, after, content));
  }
  return out;
}

/**
 * After a deactivation or reactivation: the channel permissions whose direct members name the
 * user, sent again as the API now shows them (deactivated users left out, FL 303), to those of
 * `audience` who see the channel (an archived one only to clients with `archived_channels`).
 * O(channels), and O(audience) per channel naming the user.
 */
export function channelSettingsNamingUser(state: Readonly<RealmState>, userId: number, audience: number[]): Delivery[] {
  const out: Delivery[] = [];
  for (const c of state.channels.values()) {
    const named = CHANNEL_GROUP_SETTINGS.filter((k) => {
      const v = c.groups[k];
      return typeof v !== 'number' && v.direct_members.includes(userId);
    });
    if (!named.length) continue;
    const who = audience.filter((id) => id !== userId && hasMetadataAccess(state, c, state.users.get(id)!));
    if (!who.length) continue;
    for (const k of named) {
      const event: ClientEventBody = { type: 'stream', op: 'update', stream_id: c.id, name: c.name, property: k, value: settingForApi(state, c.groups[k]) } as ClientEventBody;
      out.push(c.isArchived ? toUsersIf(state.realmId, who, event, { name: 'archived_channels', value: true }) : toUsers(state.realmId, who, event));
    }
  }
  return out;
}

/**
 * Users who can now see a channel are told it exists, and who is subscribed
 * to it: the channel with no subscribers, then a peer_add that names them and
 * counts them in (`subscriber_count`, FL 394).
 */
function revealTo(state: Readonly<RealmState>, c: ChannelRecord, userIds: number[]): Array<Extract<Delivery, { kind: 'event' }>> {
  const subscribers = state.activeSubscribers(c.id);
  const out: Array<Extract<Delivery, { kind: 'event' }>> = [{ kind: 'event', realmId: state.realmId, userIds, event: { type: 'stream', op: 'create', streams: [formatChannel(c, { ...channelActivity(state, c), subscriberCount: 0 })] } }];
  if (subscribers.length) out.push({ kind: 'event', realmId: state.realmId, userIds, event: { type: 'subscription', op: 'peer_add', stream_ids: [c.id], user_ids: subscribers } });
  return out;
}

/**
 * Events for a channel that comes back (unarchived): clients with the
 * `archived_channels` capability get `is_archived` false; the others, which
 * were told it was deleted, get it created again, and its subscribers their
 * subscription.
 */
function unarchiveEvents(state: Readonly<RealmState>, c: ChannelRecord, userIds: number[]): Delivery[] {
  if (!userIds.length) return [];
  const capable = { name: 'archived_channels', value: true };
  const notCapable = { name: 'archived_channels', value: false };
  const subscribers = state.activeSubscribers(c.id);
  const out: Delivery[] = [
    toUsersIf(state.realmId, userIds, { type: 'stream', op: 'update', stream_id: c.id, name: c.name, property: 'is_archived', value: false }, capable),
    ...revealTo(state, c, userIds).map((d) => ({ ...d, capability: notCapable })),
  ];
  const activity = channelActivity(state, c);
  for (const userId of subscribers) {
    const sub = state.subs.get(c.id)!.get(userId)!;
    out.push(toUsersIf(state.realmId, [userId], { type: 'subscription', op: 'add', subscriptions: [formatSubscription(c, sub, { subscribers }, activity)] }, notCapable));
  }
  return out;
}

// ---- DELETE /streams/{id} --------------------------------------------------

export const archiveStream = action({
  type: 'archiveStream',
  fields: z.object({ streamId: z.number().int() }),
  check(state, msg) {
    const user = actingUser(state, msg.caller);
    const c = accessForUpdate(state, user, msg.streamId);
    if (c.isArchived) throw badRequest('Channel is already deactivated');
    return { before: c, audience: channelAudience(state, c), inGroups: inChannelGroups(state, c.id), notice: null as StoredMessage | null };
  },
  apply(state, p, tx) {
    // Posted before the channel is archived (an archived channel takes no messages), read by everyone (Zulip's limit_unread_user_ids=set()).
    p.notice = channelEventsNotice(state, tx, p.before, archivedNotice(p.before), []);
    const c: ChannelRecord = { ...p.before, isArchived: true, isDefault: false };
    state.indexChannel(c);
    tx.write(T.channels.at(state.realmId, c.id).put(c));
    if (p.inGroups) dropFromChannelGroups(state, tx, c.id);
    return {};
  },
  events(state, p) {
    const c = state.channels.get(p.before.id)!;
    const out: Delivery[] = [
      toUsersIf(state.realmId, p.audience, { type: 'stream', op: 'update', stream_id: c.id, name: c.name, property: 'is_archived', value: true }, { name: 'archived_channels', value: true }),
      toUsersIf(state.realmId, p.audience, { type: 'stream', op: 'delete', streams: [channelObject(state, c)], stream_ids: [c.id] }, { name: 'archived_channels', value: false }),
    ];
    if (p.before.isDefault) out.push(defaultStreamsDelivery(state));
    if (p.inGroups) out.push(defaultChannelGroupsDelivery(state));
    out.push(...systemBotDeliveries(state, [p.notice]));
    return out;
  },
});

/** Everyone active, for events every user gets. */
export const everyone = (state: Readonly<RealmState>): number[] => activeUsers(state);
