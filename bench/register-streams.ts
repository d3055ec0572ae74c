/**
 * The realm's CPU for the channel part of one POST /register (`streams`, `subscriptions`,
 * `unsubscribed`, `never_subscribed`, `realm_default_streams`; subscribers left out, as the
 * official clients ask), in process, on an organization of N users and C channels: one channel
 * of N/2 members, the others of Zipf-like sizes (⌈3000 / rank⌉ + 2). The registering user is a
 * member subscribed to a few of them. Prints the median of `--rounds` registers for each
 * `--include` (`include_subscribers`); for `partial`, `--recent` of the users (a share) were
 * active lately and are listed in the large channels' `partial_subscribers`, the others idle.
 *
 *   node --import tsx bench/register-streams.ts [--orgs 10000:500,100000:5000] [--rounds 30] [--include false,true,partial] [--recent 0.1]
 */
import { parseArgs } from 'node:util';
import { RealmState } from '../actors/realm/state/state.ts';
import { channelSnapshot } from '../actors/realm/actions/channels/subscription_settings.ts';
import type { IncludeSubscribers } from '../actors/realm/actions/channels/subscriptions.ts';
import { GROUP_ID } from '../actors/model.ts';
import { CHANNEL_GROUP_SETTINGS, ChannelRecord, RealmMeta, SubscriptionRecord, UserRecord } from '../storage/tables.ts';

const { values } = parseArgs({ options: { orgs: { type: 'string', default: '10000:500,100000:5000' }, rounds: { type: 'string', default: '30' }, include: { type: 'string', default: 'false' }, recent: { type: 'string', default: '0.1' } } });

const channel = (id: number) =>
  ChannelRecord.parse({ id, recipientId: id, name: `channel ${id}`, description: '', renderedDescription: '', inviteOnly: false, isWebPublic: false, historyPublicToSubscribers: true, messageRetentionDays: null, dateCreated: 0, creatorId: null, groups: Object.fromEntries(CHANNEL_GROUP_SETTINGS.map((k) => [k, GROUP_ID['role:everyone']])) });

function realm(n: number, channels: number): { s: RealmState; subs: number } {
  const s = new RealmState(1);
  s.meta = RealmMeta.parse({ name: 'Bench', dateCreated: 0 });
  for (let id = 1; id <= n; id++) s.indexUser(UserRecord.parse({ id, email: `u${id}@x`, fullName: `User ${id}`, role: 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: '' }));
  let subs = 0;
  for (let c = 1; c <= channels; c++) {
    s.indexChannel(channel(c));
    const size = c === 1 ? Math.floor(n / 2) : Math.min(n, Math.ceil(3000 / c) + 2);
    // Members spread over the organization (user 1, the registering one, is in every tenth channel).
    for (let k = 0; k < size; k++) {
      const userId = ((c * 7919 + k * 104_729) % n) + 1;
      s.indexSub(SubscriptionRecord.parse({ streamId: c, userId, active: true, color: '#fff', startMessageId: 0 }));
    }
    if (c % 10 === 0) s.indexSub(SubscriptionRecord.parse({ streamId: c, userId: 1, active: true, color: '#fff', startMessageId: 0 }));
  }
  for (const m of s.subs.values()) subs += m.size;
  // As a load finds them: a share of the users seen active lately, the others idle for weeks.
  const now = Date.now();
  for (let id = 1; id <= n; id++) if (id % Math.round(1 / Number(values.recent)) === 0) s.lastActive.set(id, now);
  s.relistSubscribers(now);
  return { s, subs };
}

for (const org of values.orgs.split(',')) {
  const [n, c] = org.split(':').map(Number) as [number, number];
  const { s, subs } = realm(n, c);
  for (const include of values.include.split(',') as IncludeSubscribers[]) {
  const user = s.users.get(1)!;
  const want = (t: string) => t === 'subscription' || t === 'stream' || t === 'default_streams';
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < Number(values.rounds) + 3; i++) {
    const t0 = performance.now();
    const out = channelSnapshot(s, user, want, include, false);
    const ms = performance.now() - t0;
    if (i >= 3) times.push(ms);
    bytes = JSON.stringify(out).length;
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)]!;
  console.log(`${n.toLocaleString('en')} users, ${c.toLocaleString('en')} channels, ${subs.toLocaleString('en')} subscriptions, include_subscribers=${include}: channel part of register ${median.toFixed(2)} ms (median of ${times.length}; min ${times[0]!.toFixed(2)}), ${(bytes / 2 ** 20).toFixed(2)} MB as JSON`);
  }
}
