// A private channel's audience (actors/realm/rules/access.ts `channelAudience`), found from its
// subscribers, the staff and its administration group's members, against the rule it stands for:
// every active user who is subscribed, an administrator, or holds can_administer_channel_group
// (`RealmState.can`), which the realm found by walking every user before.
import t from 'tap';
import { channelAudience } from '../actors/realm/rules/access.ts';
import { RealmState } from '../actors/realm/state/state.ts';
import { GROUP_ID, Role } from '../actors/model.ts';
import { CHANNEL_GROUP_SETTINGS, ChannelRecord, type GroupSettingValue, SubscriptionRecord, UserGroupRecord, UserRecord, USER_GROUP_SETTINGS } from '../storage/tables.ts';

const ROLES = [Role.OWNER, Role.ADMIN, Role.MODERATOR, Role.MEMBER, Role.MEMBER, Role.GUEST];

/** The rule, by walking every user. */
function walk(s: RealmState, c: ChannelRecord): number[] {
  return [...s.users.values()]
    .filter((u) => u.isActive && (s.isSubscribed(c.id, u.id) || u.role <= Role.ADMIN || s.can(c.groups.can_administer_channel_group, u)))
    .map((u) => u.id)
    .sort((a, b) => a - b);
}

t.test('channel audience - a private channel\'s audience is exactly whom the walk of every user finds, for every kind of administration group', async (t) => {
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  let cases = 0;
  for (let round = 0; round < 60; round++) {
    const s = new RealmState(1);
    const users = 40;
    for (let id = 1; id <= users; id++) {
      s.indexUser(UserRecord.parse({ id, email: `u${id}@x`, fullName: `User ${id}`, role: ROLES[rand(ROLES.length)], isBot: rand(8) === 0, botType: null, botOwnerId: null, isActive: rand(6) !== 0, passwordHash: null, dateJoined: '' }));
    }
    // User groups 101..106: members, subgroups (system or user groups, cycles allowed), some deactivated.
    const groupIds = [101, 102, 103, 104, 105, 106];
    const anyGroup = () => (rand(3) === 0 ? 1 + rand(8) : groupIds[rand(groupIds.length)]!);
    for (const id of groupIds) {
      s.groups.set(id, UserGroupRecord.parse({
        id, name: `g${id}`, description: '', renderedDescription: '',
        members: [...new Set(Array.from({ length: rand(6) }, () => 1 + rand(users)))].sort((a, b) => a - b),
        subgroups: [...new Set(Array.from({ length: rand(3) }, anyGroup))].sort((a, b) => a - b),
        creatorId: null, dateCreated: null, deactivated: rand(5) === 0,
        settings: Object.fromEntries(USER_GROUP_SETTINGS.map((k) => [k, GROUP_ID['role:nobody']])),
      }));
    }
    const value = (): GroupSettingValue =>
      rand(2) ? anyGroup() : { direct_members: [...new Set(Array.from({ length: rand(4) }, () => 1 + rand(users)))].sort((a, b) => a - b), direct_subgroups: [...new Set(Array.from({ length: rand(3) }, anyGroup))].sort((a, b) => a - b) };
    const administer = value();
    const c = ChannelRecord.parse({
      id: 1, recipientId: 1, name: 'private', description: '', renderedDescription: '', inviteOnly: true, isWebPublic: false, historyPublicToSubscribers: false, messageRetentionDays: null, dateCreated: 0, creatorId: null,
      groups: { ...Object.fromEntries(CHANNEL_GROUP_SETTINGS.map((k) => [k, GROUP_ID['role:everyone']])), can_administer_channel_group: administer },
    });
    s.indexChannel(c);
    for (let id = 1; id <= users; id++) if (rand(4) === 0) s.indexSub(SubscriptionRecord.parse({ streamId: 1, userId: id, active: rand(5) !== 0, color: '#fff', startMessageId: 0 }));
    const expected = walk(s, c);
    const got = channelAudience(s, c).sort((a, b) => a - b);
    cases++;
    if (JSON.stringify(got) !== JSON.stringify(expected)) {
      t.same(got, expected, `round ${round}: can_administer_channel_group ${JSON.stringify(administer)}, groups ${JSON.stringify([...s.groups.values()].map((g) => [g.id, g.members, g.subgroups, g.deactivated]))}`);
      return;
    }
  }
  t.equal(cases, 60, 'every round agrees with the walk');
});
