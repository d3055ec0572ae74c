/**
 * User-group mentions (Zulip's `MentionData.init_user_group_data`,
 * `check_user_group_mention_allowed` and the group expansion in
 * `build_message_send_dict`): `@*group*` names an active user-defined group
 * (system groups are not mentionable by name, as in Zulip); a non-silent
 * mention needs the group's `can_mention_group`, and makes every member of
 * the group (through subgroups too) mentioned, with the `mentioned` flag and
 * the notifications of a personal mention.
 */
import { badRequest } from '../../../lib/errors.ts';
import type { UserGroupRecord, UserRecord } from '../../../storage/tables.ts';
import { GROUP_ID } from '../../model.ts';
import { groupMembersRecursive, holds } from './groups.ts';
import type { Rendered } from './markdown.ts';
import type { RealmState } from '../state/state.ts';

/** The active user-defined group named `name` (case-insensitive), for the renderer. O(groups). */
export function mentionableGroup(state: Readonly<RealmState>, name: string): { id: number; name: string } | undefined {
  const lower = name.toLowerCase();
  for (const g of state.groups.values()) if (!g.deactivated && g.name.toLowerCase() === lower) return { id: g.id, name: g.name };
  return undefined;
}

/** Whether `sender` may mention `g` (Zulip's `sender_can_mention_group`: the organization's system bots only groups everyone may mention). */
function mayMention(state: Readonly<RealmState>, g: UserGroupRecord, sender: UserRecord): boolean {
  if (sender.isSystemBot) return g.settings.can_mention_group === GROUP_ID['role:everyone'];
  return holds(state, g, 'can_mention_group', sender);
}

/**
 * Who a rendered message mentions: the users named, and the members of the
 * groups mentioned (not silently). Throws Zulip's error for a group the
 * sender may not mention. O(members of the groups mentioned).
 */
export function mentionedUsers(state: Readonly<RealmState>, sender: UserRecord, rendered: Rendered): number[] {
  if (!rendered.groupMentions.length) return rendered.mentions;
  const out = new Set(rendered.mentions);
  for (const id of rendered.groupMentions) {
    const g = state.groups.get(id)!;
    if (!mayMention(state, g, sender)) throw badRequest(`You are not allowed to mention user group '${g.name}'.`);
    for (const member of groupMembersRecursive(state, id)) out.add(member);
  }
  return [...out];
}
