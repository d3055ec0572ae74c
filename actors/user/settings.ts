/**
 * Every personal setting: its type, the values it allows, where the API
 * accepts it (`S`: PATCH /settings; `D`: PATCH /realm/user_settings_defaults)
 * and the server's default. Requests to both operations are validated
 * against this table, and the `user_settings` register object lists every
 * setting with its value.
 *
 * The realm owns the values (the `user_settings` table, loaded with the
 * realm), since it needs them on its own paths (typing delivery, topic
 * auto-follow on send) and never calls a user actor.
 */

export type SettingValue = string | number | boolean;

interface SettingDef {
  type: 'bool' | 'int' | 'string';
  default: SettingValue;
  /** Accepted by PATCH /settings. */
  s: boolean;
  /** Accepted by PATCH /realm/user_settings_defaults. */
  d: boolean;
  /** The allowed values for PATCH /settings (any value of the type when absent). */
  values?: readonly SettingValue[];
  /** The allowed values for the organization defaults, when they differ from `values`. */
  defaultsValues?: readonly SettingValue[];
  /** An administrator may not change it for other users (`target_users`): Zulip's security-sensitive settings. */
  personal?: true;
}

const bool = (value: boolean, where: 'SD' | 'S' | 'D' = 'SD', extra: Partial<SettingDef> = {}): SettingDef => ({ type: 'bool', default: value, s: where !== 'D', d: where !== 'S', ...extra });
const int = (value: number, values?: readonly number[], where: 'SD' | 'S' | 'D' = 'SD', extra: Partial<SettingDef> = {}): SettingDef => ({ type: 'int', default: value, s: where !== 'D', d: where !== 'S', ...(values ? { values } : {}), ...extra });
const str = (value: string, values?: readonly string[], where: 'SD' | 'S' | 'D' = 'SD'): SettingDef => ({ type: 'string', default: value, s: where !== 'D', d: where !== 'S', ...(values ? { values } : {}) });

/** The four automatic topic visibility policies (1 participate, 2 send, 3 start, 4 never). */
const VISIBILITY_POLICIES = [1, 2, 3, 4] as const;

/** Languages the server has translations for (the `default_language` values it accepts). */
export const LANGUAGES: Readonly<Record<string, string>> = {
  en: 'English',
  de: 'Deutsch',
  es: 'Español',
  fr: 'Français',
  it: 'Italiano',
  ja: '日本語',
  ko: '한국어',
  nl: 'Nederlands',
  pl: 'Polski',
  pt: 'Português',
  'pt-br': 'Português (Brasil)',
  ru: 'Русский',
  tr: 'Türkçe',
  uk: 'Українська',
  'zh-hans': '简体中文',
};

/** Notification sounds the server ships (`none` turns sounds off). */
export const NOTIFICATION_SOUNDS = ['zulip', 'ding', 'chime', 'chime-dn', 'chirp', 'bark', 'bright', 'cheerful', 'chirp-down', 'chirp-up', 'clear', 'collapse', 'conclusion', 'drum', 'knock', 'pluck', 'ring', 'swing', 'none'] as const;

/** One week: the longest email batching period. */
export const MAX_EMAIL_BATCHING_SECONDS = 7 * 24 * 60 * 60;

export const USER_SETTINGS: Readonly<Record<string, SettingDef>> = {
  twenty_four_hour_time: bool(false),
  web_mark_read_on_scroll_policy: int(1, [1, 2, 3]),
  // 3, the list of topics, came at FL 383. The spec notes that Zulip's description of PATCH /settings lists
  // only 1, 2 and 4; Zulip's server takes 1 to 4 in both places (WEB_CHANNEL_DEFAULT_VIEW_CHOICES), as here.
  web_channel_default_view: int(1, [1, 2, 3, 4]),
  starred_message_counts: bool(true),
  receives_typing_notifications: bool(true),
  web_suggest_update_timezone: bool(true),
  fluid_layout_width: bool(false),
  high_contrast_mode: bool(false),
  web_font_size_px: int(16),
  web_line_height_percent: int(140),
  color_scheme: int(1, [1, 2, 3]),
  enable_drafts_synchronization: bool(true),
  translate_emoticons: bool(false),
  display_emoji_reaction_users: bool(true),
  default_language: str('en', Object.keys(LANGUAGES), 'S'),
  web_home_view: str('inbox', ['recent', 'inbox', 'all_messages']),
  web_escape_navigates_to_home_view: bool(true),
  left_side_userlist: bool(false),
  emojiset: str('emojiset_a', ['emojiset_a', 'emojiset_b', 'text']),
  demote_inactive_streams: int(1, [1, 2, 3]),
  user_list_style: int(2, [1, 2, 3]),
  web_animate_image_previews: str('on_hover', ['always', 'on_hover', 'never']),
  web_stream_unreads_count_display_policy: int(2, [1, 2, 3]),
  hide_ai_features: bool(false),
  web_inbox_show_channel_folders: bool(true),
  web_left_sidebar_show_channel_folders: bool(true),
  web_left_sidebar_unreads_count_summary: bool(true),
  timezone: { ...str('', undefined, 'S'), personal: true },
  enable_stream_desktop_notifications: bool(false),
  enable_stream_email_notifications: bool(false),
  enable_stream_push_notifications: bool(false),
  enable_stream_audible_notifications: bool(false),
  notification_sound: str('zulip', NOTIFICATION_SOUNDS),
  enable_desktop_notifications: bool(true),
  enable_sounds: bool(true),
  enable_followed_topic_desktop_notifications: bool(true),
  enable_followed_topic_email_notifications: bool(true),
  enable_followed_topic_push_notifications: bool(true),
  enable_followed_topic_audible_notifications: bool(true),
  email_notifications_batching_period_seconds: int(120),
  enable_offline_email_notifications: bool(true),
  enable_offline_push_notifications: bool(true),
  enable_online_push_notifications: bool(true),
  enable_digest_emails: bool(true, 'SD', { personal: true }),
  message_content_in_email_notifications: bool(true),
  pm_content_in_desktop_notifications: bool(true),
  wildcard_mentions_notify: bool(true),
  enable_followed_topic_wildcard_mentions_notify: bool(true),
  desktop_icon_count_display: int(1, [1, 2, 3, 4]),
  realm_name_in_email_notifications_policy: int(1, [1, 2, 3]),
  automatically_follow_topics_policy: int(3, VISIBILITY_POLICIES),
  automatically_unmute_topics_in_muted_streams_policy: int(4, VISIBILITY_POLICIES),
  automatically_follow_topics_where_mentioned: bool(true),
  resolved_topic_notice_auto_read_policy: str('except_followed', ['always', 'except_followed', 'never']),
  presence_enabled: bool(true, 'SD', { personal: true }),
  enter_sends: bool(false),
  // Settings after enter_sends are not shown by the spec; these are the ones Zulip's clients send.
  send_private_typing_notifications: bool(true, 'SD', { personal: true }),
  send_stream_typing_notifications: bool(true, 'SD', { personal: true }),
  send_read_receipts: bool(true, 'SD', { personal: true }),
  allow_private_data_export: bool(false, 'SD', { personal: true }),
  email_address_visibility: int(1, [1, 2, 3, 4, 5], 'SD', { personal: true }),
  web_navigate_to_sent_message: bool(true),
  enable_login_emails: bool(true, 'SD', { personal: true }),
  enable_marketing_emails: bool(true, 'SD', { personal: true }),
};

export const SETTING_NAMES = Object.keys(USER_SETTINGS);

/**
 * The settings a client that does not declare `user_settings_object` reads at
 * the top level of POST /register, when it asks for `update_display_settings`
 * or `update_global_notifications` (Zulip's legacy lists, closed at feature
 * level 89; settings added since exist only in `user_settings`). Their
 * changes come as `user_settings` events only (FL 439).
 */
export const LEGACY_DISPLAY_SETTINGS: readonly string[] = [
  'color_scheme',
  'default_language',
  'web_home_view',
  'demote_inactive_streams',
  'emojiset',
  'enable_drafts_synchronization',
  'enter_sends',
  'fluid_layout_width',
  'high_contrast_mode',
  'left_side_userlist',
  'starred_message_counts',
  'translate_emoticons',
  'twenty_four_hour_time',
];
export const LEGACY_NOTIFICATION_SETTINGS: readonly string[] = [
  'desktop_icon_count_display',
  'email_notifications_batching_period_seconds',
  'enable_desktop_notifications',
  'enable_digest_emails',
  'enable_login_emails',
  'enable_marketing_emails',
  'enable_offline_email_notifications',
  'enable_offline_push_notifications',
  'enable_online_push_notifications',
  'enable_sounds',
  'enable_stream_audible_notifications',
  'enable_stream_desktop_notifications',
  'enable_stream_email_notifications',
  'enable_stream_push_notifications',
  'message_content_in_email_notifications',
  'notification_sound',
  'pm_content_in_desktop_notifications',
  'presence_enabled',
  'realm_name_in_email_notifications_policy',
  'wildcard_mentions_notify',
];

/** The emoji sets a legacy client may choose from (`emojiset_choices`). */
export const EMOJISET_CHOICES = [
  { key: 'emojiset_a', text: 'Emoji set A' },
  { key: 'emojiset_b', text: 'Emoji set B' },
  { key: 'text', text: 'Plain text' },
];
export const DEFAULTS_SETTING_NAMES = SETTING_NAMES.filter((k) => USER_SETTINGS[k]!.d);

/** The server's defaults for every setting (before the organization's own defaults). */
export const DEFAULT_USER_SETTINGS: Readonly<Record<string, SettingValue>> = Object.fromEntries(SETTING_NAMES.map((k) => [k, USER_SETTINGS[k]!.default]));

/**
 * Checks a value for a setting: null when it is allowed, else the error
 * message Zulip gives. `forDefaults` selects the defaults operation's
 * allowed set.
 */
export function settingError(name: string, value: SettingValue, forDefaults: boolean): string | null {
  const def = USER_SETTINGS[name];
  if (!def) return `Unknown setting ${name}`;
  if (def.type === 'bool' && typeof value !== 'boolean') return `${name} is not a boolean`;
  if (def.type === 'int' && !(typeof value === 'number' && Number.isSafeInteger(value))) return `${name} is not an integer`;
  if (def.type === 'string' && typeof value !== 'string') return `${name} is not a string`;
  if (name === 'default_language' && !(value as string in LANGUAGES)) return 'Invalid default_language';
  if (name === 'notification_sound' && !NOTIFICATION_SOUNDS.includes(value as (typeof NOTIFICATION_SOUNDS)[number])) return `Invalid notification sound '${value}'`;
  if (name === 'email_notifications_batching_period_seconds' && ((value as number) <= 0 || (value as number) > MAX_EMAIL_BATCHING_SECONDS)) return `Invalid email batching period: ${value} seconds`;
  if (name === 'timezone' && value !== '' && !isTimezone(value as string)) return `${name} is not a recognized time zone`;
  const allowed = forDefaults ? (def.defaultsValues ?? def.values) : def.values;
  if (allowed && !allowed.includes(value)) return `Invalid ${name}`;
  return null;
}

let zones: Set<string> | null = null;
/** Whether `tz` is an IANA time zone this runtime knows (with the aliases it accepts). */
export function isTimezone(tz: string): boolean {
  zones ??= new Set(Intl.supportedValuesOf('timeZone'));
  if (zones.has(tz)) return true;
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
