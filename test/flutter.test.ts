// What zulip-flutter, the official mobile app, requires at connect: its POST
// /register parameters are taken, and every key its models parse as required
// (non-nullable, no default) is in the register and in the channel objects
// of events. A key missing there makes the app fail to connect.
//
// The lists are read off zulip-flutter's lib/api/model (initial_snapshot.dart,
// model.dart and their generated fromJson code, as of August 2026).
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { callers, newPerson, outcome, ROLE } from './helpers/people.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const as = callers(s);

/** Required keys of each object the app parses; `nested` names the object type of a key's value (list items, map values). */
const REQUIRED: Record<string, { keys: string[]; nested?: Record<string, string> }> = {
  InitialSnapshot: {
    keys: ['last_event_id', 'zulip_feature_level', 'zulip_version', 'zulip_merge_base', 'alert_words', 'custom_profile_fields', 'max_stream_name_length', 'max_topic_length', 'server_presence_ping_interval_seconds', 'server_presence_offline_threshold_seconds', 'muted_users', 'presences', 'realm_emoji', 'realm_user_groups', 'recent_private_conversations', 'subscriptions', 'unread_msgs', 'starred_messages', 'streams', 'user_status', 'user_settings', 'user_topics', 'realm_wildcard_mention_policy', 'realm_name', 'realm_waiting_period_threshold', 'realm_allow_message_editing', 'realm_enable_read_receipts', 'realm_icon_url', 'realm_presence_disabled', 'realm_default_external_accounts', 'max_file_upload_size_mib', 'server_emoji_data_url', 'event_queue_longpoll_timeout_seconds', 'realm_users', 'realm_non_active_users', 'cross_realm_bots'],
    nested: { custom_profile_fields: 'CustomProfileField', muted_users: 'MutedUserItem', presences: 'PerUserPresence', realm_emoji: 'RealmEmojiItem', realm_user_groups: 'UserGroup', recent_private_conversations: 'RecentDmConversation', saved_snippets: 'SavedSnippet', subscriptions: 'Subscription', channel_folders: 'ChannelFolder', unread_msgs: 'UnreadMessagesSnapshot', streams: 'ZulipStream', user_settings: 'UserSettings', user_topics: 'UserTopicItem', realm_default_external_accounts: 'RealmDefaultExternalAccount', server_thumbnail_formats: 'ThumbnailFormat', realm_users: 'User', realm_non_active_users: 'User', cross_realm_bots: 'User' },
  },
  UserSettings: { keys: ['starred_message_counts', 'display_emoji_reaction_users', 'emojiset', 'presence_enabled'] },
  User: { keys: ['user_id', 'email', 'full_name', 'date_joined', 'is_active', 'is_bot', 'role', 'timezone', 'avatar_version'] },
  ZulipStream: { keys: ['stream_id', 'name', 'description', 'rendered_description', 'date_created', 'invite_only', 'is_web_public', 'history_public_to_subscribers', 'can_add_subscribers_group', 'can_delete_any_message_group', 'can_delete_own_message_group', 'can_send_message_group', 'can_subscribe_group'] },
  Subscription: { keys: ['stream_id', 'name', 'description', 'rendered_description', 'date_created', 'invite_only', 'is_web_public', 'history_public_to_subscribers', 'can_add_subscribers_group', 'can_delete_any_message_group', 'can_delete_own_message_group', 'can_send_message_group', 'can_subscribe_group', 'pin_to_top', 'is_muted', 'color'] },
  UserGroup: { keys: ['id', 'members', 'direct_subgroup_ids', 'name', 'description', 'is_system_group'] },
  CustomProfileField: { keys: ['id', 'type', 'order', 'name', 'hint', 'field_data'] },
  UnreadMessagesSnapshot: { keys: ['count', 'pms', 'streams', 'huddles', 'mentions', 'old_unreads_missing'], nested: { pms: 'UnreadDmSnapshot', streams: 'UnreadChannelSnapshot', huddles: 'UnreadHuddleSnapshot' } },
  UnreadDmSnapshot: { keys: ['other_user_id', 'unread_message_ids'] },
  UnreadChannelSnapshot: { keys: ['topic', 'stream_id', 'unread_message_ids'] },
  UnreadHuddleSnapshot: { keys: ['user_ids_string', 'unread_message_ids'] },
  RealmEmojiItem: { keys: ['id', 'name', 'source_url', 'deactivated'] },
  MutedUserItem: { keys: ['id'] },
  PerUserPresence: { keys: ['active_timestamp', 'idle_timestamp'] },
  RecentDmConversation: { keys: ['max_message_id', 'user_ids'] },
  UserTopicItem: { keys: ['stream_id', 'topic_name', 'last_updated', 'visibility_policy'] },
  RealmDefaultExternalAccount: { keys: ['name', 'text', 'hint', 'url_pattern'] },
  SavedSnippet: { keys: ['id', 'title', 'content', 'date_created'] },
  ChannelFolder: { keys: ['id', 'name', 'description', 'rendered_description', 'is_archived'] },
  ThumbnailFormat: { keys: ['name', 'max_width', 'max_height', 'animated', 'format'] },
};

/** Every required key missing (absent or null) from `obj` read as `type`, with its path. */
function missing(obj: unknown, type: string, path: string): string[] {
  const spec = REQUIRED[type]!;
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return [`${path}: not an object`];
  const o = obj as Record<string, unknown>;
  const out = spec.keys.filter((k) => o[k] === undefined || o[k] === null).map((k) => `${path}.${k}`);
  for (const [k, inner] of Object.entries(spec.nested ?? {})) {
    const v = o[k];
    if (v === undefined || v === null) continue;
    const items = Array.isArray(v) ? v : type === 'InitialSnapshot' && ['user_settings', 'unread_msgs'].includes(k) ? [v] : Object.values(v as object);
    items.forEach((item, i) => out.push(...missing(item, inner, `${path}.${k}[${i}]`)));
  }
  return out;
}

/** The register zulip-flutter makes (lib/api/route/events.dart registerQueue). */
const APP_REGISTER = {
  idle_queue_timeout: 'mobile',
  apply_markdown: true,
  client_gravatar: false,
  slim_presence: true,
  client_capabilities: { notification_settings_null: true, bulk_message_deletion: true, user_avatar_url_field_optional: true, stream_typing_notifications: true, user_settings_object: true, include_deactivated_groups: true, empty_topic_name: true, individual_emoji_changes: true },
};

t.test("zulip-flutter - its register is taken and has every key the app requires, for every role", async (t) => {
  // Something in each list: an unread direct message and channel message, a muted user, a followed topic, a status.
  const person = await newPerson(s);
  const p = s.api.as(person);
  const topic = uniq('flutter');
  await as.member.ok('POST', '/messages', { type: 'direct', to: [person.userId], content: 'hello' });
  await as.member.ok('POST', '/messages', { type: 'direct', to: [person.userId, s.demo.member2.userId], content: 'hello both' });
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: 'general' }], principals: [person.userId] });
  await as.member.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content: 'in a channel' });
  await p.ok('POST', `/users/me/muted_users/${s.demo.moderator.userId}`);
  await p.ok('POST', '/user_topics', { stream_id: 1, topic, visibility_policy: 3 });
  await p.ok('POST', '/users/me/status', { status_text: 'on the phone' });
  for (const [who, api] of [['a new member', p], ['owner', as.owner], ['guest', as.guest], ['bot', as.bot]] as const) {
    const reg = await api.ok('POST', '/register', APP_REGISTER);
    t.same(missing(reg, 'InitialSnapshot', 'register'), [], `${who}: nothing the app requires is missing`);
    t.ok([1, 2, 3, 5, 6, 7].includes(reg.realm_wildcard_mention_policy), `${who}: realm_wildcard_mention_policy is one the app knows (it has no fallback)`);
    t.equal(reg.idle_queue_timeout_secs > 0, true, `${who}: idle_queue_timeout=mobile is taken (${reg.idle_queue_timeout_secs} s)`);
  }
  const reg = await p.ok('POST', '/register', APP_REGISTER);
  t.ok(reg.unread_msgs.pms.length > 0 && reg.unread_msgs.huddles.length > 0 && reg.unread_msgs.streams.length > 0, 'the unread lists were checked with items in them');
  t.ok(reg.muted_users.length > 0 && reg.user_topics.length > 0 && Object.keys(reg.user_status).length > 0);
});

t.test('zulip-flutter - idle_queue_timeout: seconds or mobile; anything else is a 400', async (t) => {
  const mobile = await as.member.ok('POST', '/register', { idle_queue_timeout: 'mobile', event_types: ['message'] });
  const seconds = await as.member.ok('POST', '/register', { idle_queue_timeout: 120, event_types: ['message'] });
  t.equal(seconds.idle_queue_timeout_secs, 120);
  t.ok(mobile.idle_queue_timeout_secs >= seconds.idle_queue_timeout_secs, `mobile keeps a queue longer (${mobile.idle_queue_timeout_secs} s)`);
  for (const bad of ['never', 0, -5]) t.equal(outcome(await as.member.call('POST', '/register', { idle_queue_timeout: bad })), '400 BAD_REQUEST', `idle_queue_timeout=${bad}`);
});

t.test('zulip-flutter - channel objects in stream and subscription events carry what the app requires', async (t) => {
  const guest = await newPerson(s, ROLE.guest, 'Flutter Guest');
  const owner = await register(as.owner, { event_types: ['stream', 'subscription'] });
  const g = await register(s.api.as(guest), { event_types: ['stream', 'subscription'] });
  const name = uniq('flutter-ch');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const created = await waitFor(owner, (e) => e.type === 'stream' && e.op === 'create');
  t.same(created.streams.flatMap((c: unknown, i: number) => missing(c, 'ZulipStream', `create[${i}]`)), [], 'stream create');
  const added = await waitFor(owner, (e) => e.type === 'subscription' && e.op === 'add');
  t.same(added.subscriptions.flatMap((c: unknown, i: number) => missing(c, 'Subscription', `add[${i}]`)), [], 'subscription add');
  await as.owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [guest.userId] });
  const shown = await waitFor(g, (e) => e.type === 'stream' && e.op === 'create');
  t.same(shown.streams.flatMap((c: unknown, i: number) => missing(c, 'ZulipStream', `guest create[${i}]`)), [], 'the create a guest gets on being added');
  const guestAdd = await waitFor(g, (e) => e.type === 'subscription' && e.op === 'add');
  t.same(guestAdd.subscriptions.flatMap((c: unknown, i: number) => missing(c, 'Subscription', `guest add[${i}]`)), []);
});

t.test('zulip-flutter - the feature level is one the app admits (277, Zulip 9.0, the lowest it connects to)', async (t) => {
  const settings = (await s.api.ok('GET', '/server_settings')) as { zulip_feature_level: number };
  t.ok(settings.zulip_feature_level >= 277, `GET /server_settings: ${settings.zulip_feature_level}`);
  const reg = await as.member.ok('POST', '/register', APP_REGISTER);
  t.equal(reg.zulip_feature_level, settings.zulip_feature_level, 'the register says the same');
});
