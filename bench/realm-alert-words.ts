/**
 * The realm actor's own work for one send when many users keep alert words
 * (issue 20): `sendMessage`'s check, apply and events, in process, to a
 * channel of 2 members (the sender and one other), on a realm of N further
 * users holding 5 alert words each (a word, a phrase, a word with
 * punctuation, all distinct), with content that matches none of them and
 * content that matches one word of the other member. Also a content edit's
 * match (`alertedUsers`, what `updateMessage` calls) and the words' load
 * (setting every user's words, as `RealmState.load` does: its time and, with
 * --expose-gc, the heap it adds beyond the word lists themselves).
 *
 * `--before <dir>` runs the same on another tree (e.g. main before the
 * change, `git archive <commit> | tar -x -C <dir>` with a node_modules link),
 * in the same process, alternating builds per round: the machine's load
 * drifts.
 *
 *   node --expose-gc --import tsx bench/realm-alert-words.ts [--sizes 1000,50000] [--sends 2000] [--rounds 3] [--before /tmp/parley-base]
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,50000' }, sends: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '3' }, before: { type: 'string' } } });
const sends = Number(values.sends);
const rounds = Number(values.rounds);
const WORDS_PER_USER = 5;

/** One build's modules, imported from its tree. */
async function build(root: string) {
  const at = (p: string) => import(pathToFileURL(join(root, p)).href);
  const [action, messages, state, model, tables] = await Promise.all([
    at('actors/runtime/action.ts'),
    at('actors/realm/actions/messages/messages.ts'),
    at('actors/realm/state/state.ts'),
    at('actors/model.ts'),
    at('storage/tables.ts'),
  ]);
  return { Tx: action.Tx, sendMessage: messages.sendMessage, alertedUsers: messages.alertedUsers, RealmState: state.RealmState, GROUP_ID: model.GROUP_ID, T: tables };
}
type Build = Awaited<ReturnType<typeof build>>;

const wordsOf = (id: number) => [`alpha${id}`, `beta${id}x`, `release ${id} plan`, `c${id}++`, `gamma_${id}`];

/** A realm of `n` users with alert words besides the sender (1) and the other member (2), who both hold words too. */
function realm(b: Build, n: number) {
  const { T } = b;
  const s = new b.RealmState(1);
  const channel = (id: number, name: string) =>
    T.ChannelRecord.parse({ id, recipientId: id, name, description: '', renderedDescription: '', inviteOnly: false, isWebPublic: false, historyPublicToSubscribers: true, messageRetentionDays: null, dateCreated: 0, creatorId: null, groups: Object.fromEntries(T.CHANNEL_GROUP_SETTINGS.map((k: string) => [k, b.GROUP_ID['role:everyone']])) });
  for (let id = 1; id <= n + 2; id++) {
    s.indexUser(T.UserRecord.parse({ id, email: `u${id}@x`, fullName: `User ${id}`, role: 400, isBot: false, botType: null, botOwnerId: null, isActive: true, passwordHash: null, dateJoined: '' }));
    if (id <= 2) s.indexSub(T.SubscriptionRecord.parse({ streamId: 2, userId: id, active: true, color: '#fff', startMessageId: 0 }));
  }
  s.indexChannel(channel(2, 'pair'));
  const lists = Array.from({ length: n + 2 }, (_, i) => wordsOf(i + 1));
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heap = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  for (let id = 1; id <= n + 2; id++) s.alertWords.set(id, lists[id - 1]!);
  const loadMs = performance.now() - t0;
  gc?.();
  return { s, loadMs, heapMb: gc ? (process.memoryUsage().heapUsed - heap) / 1e6 : NaN };
}

const CONTENT = {
  none: (i: number) => `hello ${i}, nothing to see here: the weekly notes are in the usual place, see you at the meeting`,
  one: (i: number) => `hello ${i}, the Release 2 Plan is in the usual place, see you at the meeting`,
};

/** µs of realm work per send (check, apply, events) to the 2-member channel. */
function perSend(b: Build, s: unknown, content: (i: number) => string, count: number): number {
  const run = (i: number) => {
    const msg = { type: 'sendMessage', caller: { realmId: 1, userId: 1 }, client: 'bench', recipientType: 'stream', to: 2, topic: 'bench', content: content(i), readBySender: null, queueId: null, localId: null } as never;
    const plan = b.sendMessage.check(s, msg, undefined as never, undefined as never);
    const tx = new b.Tx({ kind: 'realm', id: '1', shard: 0 });
    const made = b.sendMessage.apply(s, plan, tx, undefined as never);
    b.sendMessage.events!(s, plan, made);
    return plan.alerted as number[];
  };
  for (let i = 0; i < 100; i++) run(i);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) run(i);
  return ((performance.now() - t0) * 1000) / count;
}

/** µs per content match of an edit (`alertedUsers` over the realm, sender 1). */
function perEdit(b: Build, s: unknown, content: (i: number) => string, count: number): number {
  const t0 = performance.now();
  for (let i = 0; i < count; i++) b.alertedUsers(s, content(i), 1);
  return ((performance.now() - t0) * 1000) / count;
}

const builds: Array<[string, Build]> = [['after', await build(resolve(import.meta.dirname, '..'))]];
if (values.before) builds.unshift(['before', await build(resolve(values.before))]);

console.log(`load average at start: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
for (const n of values.sizes!.split(',').map(Number)) {
  const realms = new Map(builds.map(([name, b]) => [name, realm(b, n)]));
  // What each build finds, to be sure they agree.
  for (const [name, b] of builds) {
    const { s } = realms.get(name)!;
    const check = (c: string) => JSON.stringify(b.alertedUsers(s, c, 1));
    if (check(CONTENT.none(0)) !== '[]' || check(CONTENT.one(0)) !== '[2]') throw new Error(`${name}: unexpected matches ${check(CONTENT.none(0))} ${check(CONTENT.one(0))}`);
  }
  const best = new Map<string, { none: number; one: number; edit: number }>();
  for (let r = 0; r < rounds; r++) {
    for (const [name, b] of builds) {
      const { s } = realms.get(name)!;
      // Fewer sends for a build that walks every user at 50,000: its figure is steady long before.
      const count = name === 'before' && n > 5000 ? Math.max(50, Math.round((sends * 2000) / n)) : sends;
      const got = { none: perSend(b, s, CONTENT.none, count), one: perSend(b, s, CONTENT.one, count), edit: perEdit(b, s, CONTENT.one, count) };
      const prev = best.get(name);
      best.set(name, prev ? { none: Math.min(prev.none, got.none), one: Math.min(prev.one, got.one), edit: Math.min(prev.edit, got.edit) } : got);
    }
  }
  for (const [name] of builds) {
    const x = best.get(name)!;
    console.log(
      `${n.toLocaleString('en-US')} users × ${WORDS_PER_USER} words, ${name}: send matching none ${x.none.toFixed(1)} µs, matching one ${x.one.toFixed(1)} µs, edit's match ${x.edit.toFixed(1)} µs; words set in ${realms.get(name)!.loadMs.toFixed(0)} ms (heap +${realms.get(name)!.heapMb.toFixed(1)} MB)`,
    );
  }
}
console.log(`load average at end: ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
