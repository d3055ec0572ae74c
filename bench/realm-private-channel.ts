/**
 * The realm actor's own work for one event of a private channel (issue 20):
 * `updateStream` (a new description) of an invite-only channel of 10
 * subscribers, by its owner, in process: check, apply and events, whose
 * audience is the channel's subscribers, the administrators and its
 * administration group's members (`channelAudience`, found twice: before and
 * after). A realm of N users, 3 of them administrators; the channel's
 * administration group is the organization's administrators, or a user group
 * of 5. `--before <dir>` runs the same on another tree in the same process,
 * alternating builds per round.
 *
 *   node --import tsx bench/realm-private-channel.ts [--sizes 1000,50000] [--updates 1000] [--rounds 3] [--before /tmp/parley-base]
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,50000' }, updates: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '3' }, before: { type: 'string' } } });
const updates = Number(values.updates);
const rounds = Number(values.rounds);

async function build(root: string) {
  const at = (p: string) => import(pathToFileURL(join(root, p)).href);
  const [action, streams, state, model, tables] = await Promise.all([at('actors/runtime/action.ts'), at('actors/realm/actions/channels/streams.ts'), at('actors/realm/state/state.ts'), at('actors/model.ts'), at('storage/tables.ts')]);
  return { Tx: action.Tx, updateStream: streams.updateStream, RealmState: state.RealmState, GROUP_ID: model.GROUP_ID, T: tables };
}
type Build = Awaited<ReturnType<typeof build>>;

function realm(b: Build, n: number, administer: 'administrators' | 'group') {
  const { T } = b;
  const s = new b.RealmState(1);
  for (let id = 1; id <= n; id++) {
    s.indexUser(T.UserRecord.parse({ id, email: `u${id}@x`, fullName: `User ${id}`, role: id <= 3 ? 200 : 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: '' }));
    if (id <= 10) s.indexSub(T.SubscriptionRecord.parse({ streamId: 2, userId: id, active: true, color: '#fff', startMessageId: 0 }));
  }
  s.groups.set(101, T.UserGroupRecord.parse({ id: 101, name: 'stewards', description: '', renderedDescription: '', members: [11, 12, 13, 14, 15], subgroups: [], creatorId: null, dateCreated: null, settings: Object.fromEntries(T.USER_GROUP_SETTINGS.map((k: string) => [k, b.GROUP_ID['role:nobody']])) }));
  const groups = { ...Object.fromEntries(T.CHANNEL_GROUP_SETTINGS.map((k: string) => [k, b.GROUP_ID['role:everyone']])), can_administer_channel_group: administer === 'group' ? 101 : b.GROUP_ID['role:administrators'] };
  s.indexChannel(T.ChannelRecord.parse({ id: 2, recipientId: 2, name: 'private', description: '', renderedDescription: '', inviteOnly: true, isWebPublic: false, historyPublicToSubscribers: false, messageRetentionDays: null, dateCreated: 0, creatorId: 1, groups }));
  return s;
}

/** One description change; how many users its events are addressed to. */
function update(b: Build, s: unknown, i: number): number {
  const msg = { type: 'updateStream', caller: { realmId: 1, userId: 1 }, streamId: 2, description: `about ${i}`, groups: {} } as never;
  const plan = b.updateStream.check(s, msg, undefined as never, undefined as never);
  const tx = new b.Tx({ kind: 'realm', id: '1', shard: 0 });
  const made = b.updateStream.apply(s, plan, tx, undefined as never);
  const events = b.updateStream.events!(s, plan, made) as Array<{ userIds?: number[] }>;
  return events.reduce((n, e) => n + (e.userIds?.length ?? 0), 0);
}

/** µs of realm work per description change. */
function perUpdate(b: Build, s: unknown, count: number): number {
  const run = (i: number) => update(b, s, i);
  for (let i = 0; i < 50; i++) run(i);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) run(i);
  return ((performance.now() - t0) * 1000) / count;
}

const builds: Array<[string, Build]> = [['after', await build(resolve(import.meta.dirname, '..'))]];
if (values.before) builds.unshift(['before', await build(resolve(values.before))]);

console.log(`load average at start: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
for (const n of values.sizes!.split(',').map(Number)) {
  for (const administer of ['administrators', 'group'] as const) {
    const realms = new Map(builds.map(([name, b]) => [name, realm(b, n, administer)]));
    const best = new Map<string, number>();
    for (let r = 0; r < rounds; r++) {
      for (const [name, b] of builds) {
        const count = name === 'before' && n > 5000 ? Math.max(50, Math.round((updates * 1000) / n)) : updates;
        const us = perUpdate(b, realms.get(name)!, count);
        best.set(name, Math.min(best.get(name) ?? Infinity, us));
      }
    }
    for (const [name, b] of builds) {
      const addressed = update(b, realms.get(name)!, -1);
      console.log(`${n.toLocaleString('en-US')} users, administered by ${administer === 'group' ? 'a group of 5' : 'the administrators'}, ${name}: ${best.get(name)!.toFixed(1)} µs per description change of a 10-subscriber private channel (events addressed to ${addressed} users)`);
    }
  }
}
console.log(`load average at end: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
