/**
 * Zulip's `apply_events` for the tests: how a client folds each event into its
 * register snapshot. `test/snapshot.test.ts` (and the snapshot tests of each
 * area) check that a snapshot with the events that followed applied equals a
 * fresh register (Zulip's `verify_action`). Each event type has its applier
 * below; add one beside the event when adding an event type.
 */
import { inaccessibleUser } from '../../actors/format.ts';
import { SYSTEM_GROUPS } from '../../actors/model.ts';
import { type Queue, waitFor } from './events.ts';

export type Snap = Record<string, any>;
type Applier = (snap: Snap, e: Record<string, any>) => void;

const byStreamId = (list: any[], id: number) => list.find((x) => x.stream_id === id);

const sortedIds = (ids: number[]) => [...new Set(ids)].sort((a, b) => a - b);
/** A channel's subscriber list, complete or partial (FL 412): peer events add to and take from whichever the client holds. */
const LIST_KEYS = ['subscribers', 'partial_subscribers'] as const;
const GROUP_SETTING_KEYS = ['can_add_members_group', 'can_join_group', 'can_leave_group', 'can_manage_group', 'can_mention_group', 'can_remove_members_group'];

/** A user who is no longer active leaves every member list the client keeps (Zulip's apply_events). */
function forgetDeactivated(snap: Snap, userId: number): void {
  for (const g of snap.realm_user_groups ?? []) {
    g.members = g.members.filter((id: number) => id !== userId);
    for (const k of GROUP_SETTING_KEYS) if (typeof g[k] === 'object') g[k] = { ...g[k], direct_members: g[k].direct_members.filter((id: number) => id !== userId) };
  }
  for (const list of [snap.subscriptions, snap.never_subscribed, snap.unsubscribed]) for (const x of list ?? []) for (const k of LIST_KEYS) if (x[k]) x[k] = x[k].filter((id: number) => id !== userId);
  // Nor in the direct members of any permission (FL 303).
  const without = (v: any) => (v && typeof v === 'object' && Array.isArray(v.direct_members) ? { ...v, direct_members: v.direct_members.filter((id: number) => id !== userId) } : v);
  for (const k of Object.keys(snap)) if (k.startsWith('realm_can_') || /^realm_.*_group$/.test(k)) snap[k] = without(snap[k]);
  for (const list of [snap.subscriptions, snap.never_subscribed, snap.unsubscribed, snap.streams]) for (const x of list ?? []) for (const k of Object.keys(x)) if (k.startsWith('can_')) x[k] = without(x[k]);
}

/** Whether the snapshot's own user is in a group-setting value (system groups by role, user groups by their members). */
function holds(snap: Snap, value: number | { direct_members: number[]; direct_subgroups: number[] }): boolean {
  const inGroup = (id: number, seen: Set<number>): boolean => {
    const system = SYSTEM_GROUPS.find((g) => g.id === id);
    if (system) return snap.role <= system.maxRole;
    const g = (snap.realm_user_groups ?? []).find((x: any) => x.id === id);
    if (!g || seen.has(id)) return false;
    seen.add(id);
    return g.members.includes(snap.user_id) || g.direct_subgroup_ids.some((sub: number) => inGroup(sub, seen));
  };
  if (typeof value === 'number') return inGroup(value, new Set());
  return value.direct_members.includes(snap.user_id) || value.direct_subgroups.some((g) => inGroup(g, new Set()));
}

const POLICY: Record<number, number> = { 7: 7, 6: 2, 5: 4, 4: 3, 3: 1, 2: 5, 8: 6 };
const WILDCARD_POLICY: Record<number, number> = { 2: 1, 3: 2, 4: 3, 5: 7, 6: 5, 8: 6 };
/** Zulip's apply_event recomputes the legacy policy values from the group settings an update_dict changes. */
function recomputePolicies(snap: Snap, data: Record<string, any>): void {
  const policy = (v: any, map: Record<number, number>, valid: number[], fallback: number) => (typeof v === 'number' && valid.includes(map[v] ?? 0) ? map[v]! : fallback);
  if ('can_create_public_channel_group' in data) snap.realm_create_public_stream_policy = policy(data.can_create_public_channel_group, POLICY, [1, 2, 3, 4], 1);
  if ('can_create_private_channel_group' in data) snap.realm_create_private_stream_policy = policy(data.can_create_private_channel_group, POLICY, [1, 2, 3, 4], 1);
  if ('can_create_web_public_channel_group' in data) snap.realm_create_web_public_stream_policy = policy(data.can_create_web_public_channel_group, POLICY, [2, 4, 6, 7], 4);
  if ('can_mention_many_users_group' in data) snap.realm_wildcard_mention_policy = policy(data.can_mention_many_users_group, WILDCARD_POLICY, [1, 2, 3, 5, 6, 7], 1);
}

/** Zulip's apply_event recomputes the own user's permissions when a realm permission or their role changes. */
function recomputePermissions(snap: Snap): void {
  if (!('can_create_streams' in snap) || snap.realm_can_create_public_channel_group === undefined) return;
  snap.can_create_private_streams = holds(snap, snap.realm_can_create_private_channel_group);
  snap.can_create_public_streams = holds(snap, snap.realm_can_create_public_channel_group);
  snap.can_create_streams = snap.can_create_private_streams || snap.can_create_public_streams || snap.can_create_web_public_streams;
  snap.can_invite_others_to_realm = snap.role !== 600 && holds(snap, snap.realm_can_invite_users_group);
}

/** Set on a snapshot (false) to apply events as a client without `user_list_incomplete` does. */
export const USER_LIST_INCOMPLETE = '__user_list_incomplete';

/** `realm_user` update: one property of one user, in the lists and, for oneself, at the top level. */
function updatePerson(snap: Snap, p: Record<string, any>): void {
  const id = p.user_id;
  const self = snap.user_id === id;
  if ('is_active' in p) {
    const from = p.is_active ? 'realm_non_active_users' : 'realm_users';
    const to = p.is_active ? 'realm_users' : 'realm_non_active_users';
    const moved = snap[from]?.find((u: any) => u.user_id === id);
    if (moved) {
      snap[from] = snap[from].filter((u: any) => u.user_id !== id);
      snap[to].push({ ...moved, is_active: p.is_active });
    }
    if (!p.is_active) forgetDeactivated(snap, id);
    return;
  }
  const person = [...(snap.realm_users ?? []), ...(snap.realm_non_active_users ?? [])].find((u: any) => u.user_id === id);
  if (!person) return;
  if ('full_name' in p) person.full_name = p.full_name;
  if ('timezone' in p) person.timezone = p.timezone;
  if ('date_joined' in p) person.date_joined = p.date_joined;
  if ('delivery_email' in p) person.delivery_email = p.delivery_email;
  if ('new_email' in p) person.email = p.new_email;
  if ('bot_owner_id' in p) person.bot_owner_id = p.bot_owner_id;
  if ('avatar_url' in p) Object.assign(person, { avatar_url: p.avatar_url, avatar_version: p.avatar_version });
  if ('role' in p) Object.assign(person, { role: p.role, is_owner: p.role === 100, is_admin: p.role <= 200, is_guest: p.role === 600 });
  if ('custom_profile_field' in p) {
    const f = p.custom_profile_field;
    person.profile_data ??= {};
    if (f.value === null) delete person.profile_data[String(f.id)];
    else person.profile_data[String(f.id)] = { value: f.value, ...(f.rendered_value !== undefined ? { rendered_value: f.rendered_value } : {}) };
  }
  if (!self) return;
  if ('full_name' in p) snap.full_name = p.full_name;
  if ('delivery_email' in p) snap.delivery_email = p.delivery_email;
  if ('new_email' in p) snap.email = p.new_email;
  if ('role' in p) {
    Object.assign(snap, { role: p.role, is_owner: p.role === 100, is_admin: p.role <= 200, is_guest: p.role === 600, is_moderator: p.role <= 300 });
    recomputePermissions(snap);
  }
}

export const APPLIERS: Record<string, Applier> = {
  realm_user(snap, e) {
    // As Zulip's apply_event keeps users by ID: an add replaces the user (an "Unknown user" placeholder
    // of a user one now sees), a remove takes them out (and a client without user_list_incomplete keeps
    // the placeholder it is given for users it may not see).
    const id = e.op === 'update' ? null : e.person.user_id;
    if (id !== null) {
      const known = [...(snap.realm_users ?? []), ...(snap.realm_non_active_users ?? [])].some((u: any) => u.user_id === id);
      if (e.op === 'remove' && !known) return;
      snap.realm_users = snap.realm_users.filter((u: any) => u.user_id !== id);
      if (snap.realm_non_active_users) snap.realm_non_active_users = snap.realm_non_active_users.filter((u: any) => u.user_id !== id);
    }
    if (e.op === 'add') (e.person.is_active === false ? snap.realm_non_active_users : snap.realm_users).push(e.person);
    else if (e.op === 'update') updatePerson(snap, e.person);
    else if (e.op === 'remove' && snap[USER_LIST_INCOMPLETE] === false) snap.realm_users.push(inaccessibleUser(id!));
  },
  stream(snap, e) {
    if (e.op === 'create') {
      snap.streams.push(...e.streams);
      for (const st of e.streams) if (!byStreamId(snap.subscriptions, st.stream_id) && !byStreamId(snap.unsubscribed ?? [], st.stream_id)) snap.never_subscribed.push({ ...st, subscribers: [] });
    } else if (e.op === 'update') {
      for (const list of [snap.streams, snap.subscriptions, snap.unsubscribed, snap.never_subscribed]) {
        const x = list && byStreamId(list, e.stream_id);
        if (!x) continue;
        x[e.property] = e.value;
        if (e.property === 'description') x.rendered_description = e.rendered_description;
        if (e.property === 'invite_only') Object.assign(x, { history_public_to_subscribers: e.history_public_to_subscribers, is_web_public: e.is_web_public });
      }
    } else if (e.op === 'delete') {
      for (const key of ['streams', 'subscriptions', 'unsubscribed', 'never_subscribed']) if (snap[key]) snap[key] = snap[key].filter((x: any) => !e.stream_ids.includes(x.stream_id));
    }
  },
  realm_bot(snap, e) {
    if (e.op === 'add') snap.realm_bots.push(e.bot);
    else if (e.op === 'update') Object.assign(snap.realm_bots.find((b: any) => b.user_id === e.bot.user_id) ?? {}, e.bot);
    else if (e.op === 'delete') snap.realm_bots = snap.realm_bots.filter((b: any) => b.user_id !== e.bot.user_id);
  },
  realm(snap, e) {
    if (e.op === 'update') {
      snap[`realm_${e.property}`] = e.value;
      // Zulip's apply_event: the deprecated jitsi_server_url follows the organization's, else the server's.
      if (e.property === 'jitsi_server_url' && 'jitsi_server_url' in snap) snap.jitsi_server_url = e.value ?? snap.server_jitsi_server_url;
      // And the deprecated realm_allow_edit_history follows message_edit_history_visibility_policy (FL 358).
      if (e.property === 'message_edit_history_visibility_policy') snap.realm_allow_edit_history = e.value !== 'none';
    } else if (e.op === 'update_dict') {
      for (const [k, v] of Object.entries(e.data)) snap[`realm_${k}`] = v;
      recomputePermissions(snap);
      recomputePolicies(snap, e.data);
    }
  },
  channel_folder(snap, e) {
    if (e.op === 'add') snap.channel_folders = [...snap.channel_folders, e.channel_folder];
    else if (e.op === 'update') snap.channel_folders = snap.channel_folders.map((f: any) => (f.id === e.channel_folder_id ? { ...f, ...e.data } : f));
    else if (e.op === 'reorder') snap.channel_folders = e.order.map((id: number, order: number) => ({ ...snap.channel_folders.find((f: any) => f.id === id), order }));
  },
  realm_linkifiers(snap, e) {
    snap.realm_linkifiers = e.realm_linkifiers;
  },
  realm_domains(snap, e) {
    if (e.op === 'add') snap.realm_domains = [...snap.realm_domains, e.realm_domain];
    else if (e.op === 'change') snap.realm_domains = snap.realm_domains.map((d: any) => (d.domain === e.realm_domain.domain ? e.realm_domain : d));
    else if (e.op === 'remove') snap.realm_domains = snap.realm_domains.filter((d: any) => d.domain !== e.domain);
  },
  realm_playgrounds(snap, e) {
    snap.realm_playgrounds = e.realm_playgrounds;
  },
  /** Carries no data: clients fetch GET /invites again; no register key changes. */
  invites_changed() {},
  // No register key: clients fetch GET /export/realm.
  realm_export() {},
  realm_export_consent() {},
  has_videoprovider_token(snap, e) {
    snap.has_videoprovider_token = e.value;
  },
  default_stream_groups(snap, e) {
    snap.realm_default_stream_groups = e.default_stream_groups;
  },
  default_streams(snap, e) {
    snap.realm_default_streams = e.default_streams;
  },
  user_group(snap, e) {
    const g = snap.realm_user_groups.find((x: any) => x.id === e.group_id);
    if (e.op === 'add') snap.realm_user_groups = [...snap.realm_user_groups, e.group].sort((a: any, b: any) => a.id - b.id);
    else if (e.op === 'remove') snap.realm_user_groups = snap.realm_user_groups.filter((x: any) => x.id !== e.group_id);
    else if (!g) return;
    else if (e.op === 'update') Object.assign(g, e.data);
    else if (e.op === 'add_members') g.members = sortedIds([...g.members, ...e.user_ids]);
    else if (e.op === 'remove_members') g.members = g.members.filter((id: number) => !e.user_ids.includes(id));
    else if (e.op === 'add_subgroups') g.direct_subgroup_ids = sortedIds([...g.direct_subgroup_ids, ...e.direct_subgroup_ids]);
    else if (e.op === 'remove_subgroups') g.direct_subgroup_ids = g.direct_subgroup_ids.filter((id: number) => !e.direct_subgroup_ids.includes(id));
  },
  user_settings(snap, e) {
    snap.user_settings[e.property] = e.value;
    // As Zulip's apply_event: a client without user_settings_object keeps the legacy settings at the top level (FL 439: no legacy events).
    if (e.property in snap) snap[e.property] = e.value;
  },
  // Legacy settings live at the top level of the snapshot (clients without user_settings_object).
  update_display_settings(snap, e) {
    if (e.setting_name in snap) snap[e.setting_name] = e.setting;
  },
  update_global_notifications(snap, e) {
    if (e.notification_name in snap) snap[e.notification_name] = e.setting;
  },
  realm_user_settings_defaults(snap, e) {
    snap.realm_user_settings_defaults[e.property] = e.value;
  },
  user_status(snap, e) {
    const key = String(e.user_id);
    const st = (snap.user_status[key] ??= {});
    if (e.away !== undefined) {
      if (e.away) st.away = true;
      else delete st.away;
    }
    if (e.status_text !== undefined) {
      if (e.status_text) st.status_text = e.status_text;
      else delete st.status_text;
    }
    if (e.emoji_name !== undefined) {
      if (e.emoji_name) Object.assign(st, { emoji_name: e.emoji_name, emoji_code: e.emoji_code, reaction_type: e.reaction_type });
      else for (const k of ['emoji_name', 'emoji_code', 'reaction_type']) delete st[k];
    }
    if (Object.keys(st).length === 0) delete snap.user_status[key];
  },
  custom_profile_fields(snap, e) {
    snap.custom_profile_fields = e.fields;
  },
  subscription(snap, e) {
    if (e.op === 'add') {
      for (const sub of e.subscriptions) {
        snap.never_subscribed = snap.never_subscribed.filter((x: any) => x.stream_id !== sub.stream_id);
        if (snap.unsubscribed) snap.unsubscribed = snap.unsubscribed.filter((x: any) => x.stream_id !== sub.stream_id);
        snap.subscriptions.push(sub);
        // The user's own subscription is told by this event, not by a peer_add: its subscriber_count is the channel's (FL 394).
        const channel = snap.streams ? byStreamId(snap.streams, sub.stream_id) : undefined;
        if (channel) channel.subscriber_count = sub.subscriber_count;
      }
    } else if (e.op === 'peer_add') {
      for (const list of [snap.subscriptions, snap.never_subscribed, snap.unsubscribed ?? [], snap.streams ?? []]) {
        for (const x of list) {
          if (!e.stream_ids.includes(x.stream_id)) continue;
          x.subscriber_count += e.user_ids.length;
          for (const k of LIST_KEYS) if (x[k]) x[k] = [...new Set([...x[k], ...e.user_ids])];
        }
      }
    } else if (e.op === 'peer_remove') {
      for (const list of [snap.subscriptions, snap.never_subscribed, snap.unsubscribed ?? [], snap.streams ?? []]) {
        for (const x of list) {
          if (!e.stream_ids.includes(x.stream_id)) continue;
          x.subscriber_count -= e.user_ids.length;
          for (const k of LIST_KEYS) if (x[k]) x[k] = x[k].filter((id: number) => !e.user_ids.includes(id));
        }
      }
    } else if (e.op === 'remove') {
      for (const { stream_id } of e.subscriptions) {
        const sub = byStreamId(snap.subscriptions, stream_id);
        snap.subscriptions = snap.subscriptions.filter((x: any) => x.stream_id !== stream_id);
        const channel = snap.streams ? byStreamId(snap.streams, stream_id) : undefined;
        if (channel) channel.subscriber_count -= 1;
        if (!sub) continue;
        const left = { ...sub, subscriber_count: sub.subscriber_count - 1 };
        // A former subscriber keeps seeing a private channel's subscribers only as an administrator (else an empty list, FL 37).
        for (const k of LIST_KEYS) if (left[k]) left[k] = left.invite_only && !snap.is_admin ? [] : left[k].filter((id: number) => id !== snap.user_id);
        snap.unsubscribed = [...(snap.unsubscribed ?? []), left];
      }
    } else if (e.op === 'update') {
      const sub = byStreamId(snap.subscriptions, e.stream_id);
      if (sub) sub[e.property] = e.value;
    }
  },
  message(snap, e) {
    snap.max_message_id = Math.max(snap.max_message_id, e.message.id);
    if (snap.unread_msgs && !e.flags.includes('read')) addUnread(snap, snap.user_id, e.message.id, unreadDetailsOf(snap.user_id, e.message, e.flags));
    if (e.message.type === 'private' && snap.recent_private_conversations) {
      const others = e.message.display_recipient.map((r: any) => r.id).filter((id: number) => id !== snap.user_id).sort((a: number, b: number) => a - b);
      snap.recent_private_conversations = [
        { max_message_id: e.message.id, user_ids: others },
        ...snap.recent_private_conversations.filter((c: any) => JSON.stringify(c.user_ids) !== JSON.stringify(others)),
      ];
    }
  },
  scheduled_messages(snap, e) {
    if (e.op === 'add') snap.scheduled_messages = [...snap.scheduled_messages, ...e.scheduled_messages].sort((a, b) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp || a.scheduled_message_id - b.scheduled_message_id);
    else if (e.op === 'update') snap.scheduled_messages = snap.scheduled_messages.map((m: any) => (m.scheduled_message_id === e.scheduled_message.scheduled_message_id ? e.scheduled_message : m));
    else if (e.op === 'remove') snap.scheduled_messages = snap.scheduled_messages.filter((m: any) => m.scheduled_message_id !== e.scheduled_message_id);
  },
  reminders(snap, e) {
    if (e.op === 'add') snap.reminders = [...snap.reminders, ...e.reminders].sort((a, b) => a.scheduled_delivery_timestamp - b.scheduled_delivery_timestamp || a.reminder_id - b.reminder_id);
    else if (e.op === 'remove') snap.reminders = snap.reminders.filter((r: any) => r.reminder_id !== e.reminder_id);
  },
  update_message_flags(snap, e) {
    if (e.flag === 'starred' && snap.starred_messages) {
      const set = new Set<number>(snap.starred_messages);
      for (const id of e.messages) e.op === 'add' ? set.add(id) : set.delete(id);
      snap.starred_messages = [...set].sort((a, b) => a - b);
    }
    if (e.flag === 'read' && snap.unread_msgs) {
      if (e.op === 'add' && e.all) Object.assign(snap.unread_msgs, { count: 0, pms: [], streams: [], huddles: [], mentions: [] });
      else if (e.op === 'add') removeUnread(snap, new Set(e.messages));
      else for (const id of e.messages) addUnread(snap, snap.user_id, id, e.message_details[String(id)]);
    }
  },
  delete_message(snap, e) {
    if (snap.unread_msgs) removeUnread(snap, new Set(e.message_ids ?? [e.message_id]));
    if (snap.starred_messages) snap.starred_messages = snap.starred_messages.filter((id: number) => !(e.message_ids ?? [e.message_id]).includes(id));
  },
  update_message(snap, e) {
    if (!snap.unread_msgs) return;
    // A content edit may add or remove a mention: an unread message's place in `mentions` follows
    // the event's flags (as the web client's unread.update_message_for_mention does).
    if (e.content !== undefined && !e.flags.includes('read')) {
      const mentioned = e.flags.some((f: string) => f === 'mentioned' || f.endsWith('wildcard_mentioned'));
      const rest = snap.unread_msgs.mentions.filter((id: number) => id !== e.message_id);
      snap.unread_msgs.mentions = mentioned ? [...rest, e.message_id].sort((a: number, b: number) => a - b) : rest;
    }
    // Zulip's apply_event: unread messages follow a move to their new channel and topic.
    if (e.subject === undefined && e.new_stream_id === undefined) return;
    const moved = new Set<number>(e.message_ids);
    const ids = snap.unread_msgs.streams.flatMap((x: any) => x.unread_message_ids.filter((id: number) => moved.has(id)));
    if (!ids.length) return;
    const mentioned = new Set<number>(snap.unread_msgs.mentions);
    removeUnread(snap, new Set(ids));
    for (const id of ids) addUnread(snap, snap.user_id, id, { type: 'stream', stream_id: e.new_stream_id ?? e.stream_id, topic: e.subject ?? e.orig_subject, mentioned: mentioned.has(id) });
  },
  user_topic(snap, e) {
    if (!snap.user_topics) return;
    const same = (x: any) => x.stream_id === e.stream_id && x.topic_name.toLowerCase() === e.topic_name.toLowerCase();
    const rest = snap.user_topics.filter((x: any) => !same(x));
    snap.user_topics = e.visibility_policy === 0 ? rest : [...rest, { stream_id: e.stream_id, topic_name: e.topic_name, last_updated: e.last_updated, visibility_policy: e.visibility_policy }];
  },
  muted_topics(snap, e) {
    if (snap.muted_topics) snap.muted_topics = e.muted_topics;
  },
  presence(snap, e) {
    if (!snap.presences) return;
    // Simplified events (modern format keyed by user ID); the legacy form is for registers keyed by email.
    if (e.presences) Object.assign(snap.presences, e.presences);
    else snap.presences[e.email] = { aggregated: { client: 'website', status: e.presence.website.status, timestamp: e.presence.website.timestamp }, ...e.presence };
  },
  muted_users(snap, e) {
    if (snap.muted_users) snap.muted_users = e.muted_users;
  },
  alert_words(snap, e) {
    if (snap.alert_words) snap.alert_words = e.alert_words;
  },
  onboarding_steps(snap, e) {
    if (snap.onboarding_steps) snap.onboarding_steps = e.onboarding_steps;
  },
  drafts(snap, e) {
    if (!snap.drafts) return;
    if (e.op === 'add') snap.drafts = [...snap.drafts, ...e.drafts];
    else if (e.op === 'update') snap.drafts = snap.drafts.map((d: any) => (d.id === e.draft.id ? e.draft : d));
    else snap.drafts = snap.drafts.filter((d: any) => d.id !== e.draft_id);
    snap.drafts.sort((a: any, b: any) => a.timestamp - b.timestamp || a.id - b.id);
  },
  device(snap, e) {
    if (!snap.devices) return;
    const key = String(e.device_id);
    if (e.op === 'add') snap.devices[key] = { push_key_id: null, push_token_id: null, pending_push_token_id: null, push_token_last_updated_timestamp: null, push_registration_error_code: null };
    else if (e.op === 'remove') delete snap.devices[key];
    else if (snap.devices[key]) {
      for (const k of ['push_key_id', 'push_token_id', 'pending_push_token_id', 'push_token_last_updated_timestamp', 'push_registration_error_code']) if (k in e) snap.devices[key][k] = e[k];
    }
  },
  navigation_view(snap, e) {
    if (!snap.navigation_views) return;
    if (e.op === 'add') snap.navigation_views = [...snap.navigation_views, e.navigation_view];
    else if (e.op === 'update') snap.navigation_views = snap.navigation_views.map((x: any) => (x.fragment === e.fragment ? { ...x, ...e.data } : x));
    else snap.navigation_views = snap.navigation_views.filter((x: any) => x.fragment !== e.fragment);
  },
  saved_snippets(snap, e) {
    if (!snap.saved_snippets) return;
    if (e.op === 'add') snap.saved_snippets = [...snap.saved_snippets, e.saved_snippet];
    else if (e.op === 'update') snap.saved_snippets = snap.saved_snippets.map((x: any) => (x.id === e.saved_snippet.id ? e.saved_snippet : x));
    else snap.saved_snippets = snap.saved_snippets.filter((x: any) => x.id !== e.saved_snippet_id);
  },
  realm_emoji(snap, e) {
    if (!snap.realm_emoji) return;
    if (e.op === 'update') snap.realm_emoji = e.realm_emoji;
    else if (e.op === 'add') snap.realm_emoji = { ...snap.realm_emoji, [e.emoji.id]: e.emoji };
    else if (e.op === 'edit') snap.realm_emoji = { ...snap.realm_emoji, [e.emoji_id]: { ...snap.realm_emoji[e.emoji_id], ...e.data } };
  },
  typing() {},
  typing_edit_message() {},
  reaction() {},
  heartbeat() {},
  // Neither changes state (Zulip's apply_event ignores both).
  restart() {},
  web_reload_client() {},
};

/** The `message_details` entry Zulip derives from a message event, for the unread applier. */
function unreadDetailsOf(me: number, m: any, flags: string[]): Record<string, any> {
  const mentioned = flags.some((f) => f === 'mentioned' || f.endsWith('wildcard_mentioned'));
  if (m.type === 'stream') return { type: 'stream', stream_id: m.stream_id, topic: m.subject, mentioned };
  return { type: 'private', user_ids: m.display_recipient.map((r: any) => r.id).filter((id: number) => id !== me), mentioned };
}

/** Zulip's apply_unread_message_event: files one unread message under its conversation. */
function addUnread(snap: Snap, me: number, id: number, d: Record<string, any>): void {
  const before = countUnread(snap);
  const u = snap.unread_msgs;
  const push = (list: any[], match: (x: any) => boolean, make: () => any) => {
    let entry = list.find(match);
    if (!entry) list.push((entry = make()));
    if (!entry.unread_message_ids.includes(id)) entry.unread_message_ids = [...entry.unread_message_ids, id].sort((a: number, b: number) => a - b);
  };
  if (d.type === 'stream') push(u.streams, (x) => x.stream_id === d.stream_id && x.topic === d.topic, () => ({ stream_id: d.stream_id, topic: d.topic, unread_message_ids: [] }));
  else if (d.user_ids.length <= 1) {
    const other = d.user_ids[0] ?? me;
    push(u.pms, (x) => x.other_user_id === other, () => ({ other_user_id: other, sender_id: other, unread_message_ids: [] }));
  } else {
    const key = [...d.user_ids, me].sort((a: number, b: number) => a - b).join(',');
    push(u.huddles, (x) => x.user_ids_string === key, () => ({ user_ids_string: key, unread_message_ids: [] }));
  }
  if (d.mentioned && !u.mentions.includes(id)) u.mentions = [...u.mentions, id].sort((a: number, b: number) => a - b);
  u.count += countUnread(snap) - before;
}

function removeUnread(snap: Snap, ids: Set<number>): void {
  const u = snap.unread_msgs;
  const before = countUnread(snap);
  for (const key of ['pms', 'streams', 'huddles']) {
    u[key] = u[key].map((x: any) => ({ ...x, unread_message_ids: x.unread_message_ids.filter((id: number) => !ids.has(id)) })).filter((x: any) => x.unread_message_ids.length);
  }
  u.mentions = u.mentions.filter((id: number) => !ids.has(id));
  u.count += countUnread(snap) - before;
}

/**
 * The unread messages the lists hold. The server's `count` leaves out channel messages in muted channels and
 * topics (the lists keep them), which a snapshot without the user's mutes cannot tell: events move `count` by
 * what they add to or take from the lists, so the register's exclusions stay as they were.
 */
const countUnread = (snap: Snap): number => ['pms', 'streams', 'huddles'].reduce((n, k) => n + snap.unread_msgs[k].reduce((m: number, x: any) => m + x.unread_message_ids.length, 0), 0);

/** unread_msgs in a form that compares equal whatever order conversations were listed in. */
export function normalizeUnread(u: any): any {
  const byKey = (key: (x: any) => string) => (a: any, b: any) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0);
  return {
    count: u.count,
    pms: [...u.pms].sort(byKey((x) => String(x.other_user_id).padStart(12, '0'))),
    streams: [...u.streams].sort(byKey((x) => `${String(x.stream_id).padStart(12, '0')}:${x.topic}`)),
    huddles: [...u.huddles].sort(byKey((x) => x.user_ids_string)),
    mentions: [...u.mentions].sort((a, b) => a - b),
    old_unreads_missing: u.old_unreads_missing,
  };
}

/** Folds one event into a snapshot; an event type without an applier is a test failure. */
export function applyEvent(snap: Snap, e: Record<string, any>): void {
  const applier = APPLIERS[e.type];
  if (!applier) throw new Error(`no applier for event type ${e.type}`);
  applier(snap, e);
}

/** Applies every event of `q` up to the first that `marker` satisfies; returns the kinds seen (`type/op`). */
export async function catchUp(q: Queue, snap: Snap, marker: (e: Record<string, any>) => boolean): Promise<Set<string>> {
  const seen = new Set<string>();
  await waitFor(q, (e) => {
    seen.add(`${e.type}/${e.op ?? ''}`);
    applyEvent(snap, e);
    return marker(e);
  }, 20_000);
  return seen;
}
