/**
 * Zulip's helpers for the Markdown that Notification Bot's messages quote
 * and link (reminders, message reports): fences, truncation, lists of
 * mentions and message links.
 */
import type { UserRecord } from '../../../storage/tables.ts';
import { silentMention } from './people.ts';

/** Zulip's `get_unused_fence`: a backtick fence longer than any fence line of the content. */
export function unusedFence(content: string): string {
  let longest = 0;
  for (const m of content.matchAll(/^[ \t]*(`{3,})/gm)) longest = Math.max(longest, m[1]!.length);
  return '`'.repeat(Math.max(3, longest + 1));
}

/** Zulip's `truncate_content`: at most `max` characters, the suffix included. */
export function truncate(content: string, max: number, suffix: string): string {
  const chars = [...content];
  return chars.length <= max ? content : chars.slice(0, max - [...suffix].length).join('') + suffix;
}

/** Zulip's `get_user_mentions_for_display`: "A", "A and B", "A, B, and C". */
export function mentionList(users: UserRecord[]): string {
  const names = users.map(silentMention);
  if (names.length <= 2) return names.join(' and ');
  return `${names.slice(0, -1).join(', ')}, and ${names.at(-1)}`;
}

/** Zulip's `get_message_link_syntax`: `#**channel>topic@id**`, or a plain link where the names would break it. */
export function messageLinkSyntax(channel: string, topic: string, id: number, url: string): string {
  if (/[*`>$\n]/.test(channel) || /[*`$\n]/.test(topic)) return `[#${channel} > ${topic} @ 💬](${url})`;
  return `#**${channel}>${topic}@${id}**`;
}
