// The realm's checkpoint (actors/realm/state/checkpoint.ts), on both stores: a realm
// loaded from its checkpoint and the journal since equals one loaded from its
// tables, after a restart (embedded) and a takeover by a greater token
// (Cassandra), and a crash between a checkpoint's chunks and its header loses
// no change answered success.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import '../actors/index.ts';
import { log } from '../lib/log.ts';
import { seedDemo } from '../lib/demo.ts';
import { CHECKPOINT_POLICY, CHECKPOINT_VERSION } from '../actors/realm/state/checkpoint.ts';
import { realmActorId, realmRef } from '../actors/realm/ref.ts';
import { RealmState } from '../actors/realm/state/state.ts';
import { ActorClient } from '../actors/runtime/client.ts';
import type { LeaseListener, Leases, LeaseView } from '../actors/runtime/leases.ts';
import { LocalBus } from '../actors/runtime/local-bus.ts';
import { ActorNode } from '../actors/runtime/node.ts';
import { CassandraStore } from '../storage/cassandra.ts';
import { EmbeddedStore } from '../storage/embedded.ts';
import type { Key, RangeOptions, Store, Writer, WriteOp } from '../storage/store.ts';
import { REALM_JOURNAL_BUCKET, T } from '../storage/tables.ts';
import { dropKeyspace } from '../scripts/drop-keyspace.ts';
import { loadConfig } from '../lib/config.ts';

// Checkpoints every few changes, cut into small chunks written over several commits.
CHECKPOINT_POLICY.every = 6;
CHECKPOINT_POLICY.chunkBytes = 256;
CHECKPOINT_POLICY.chunksPerCommit = 1;

const REALM = 1;

/** One node owns every shard under `token` (a takeover is a node with a greater one). */
class TokenLeases implements Leases {
  private owned = new Set<number>();
  constructor(private readonly token: number) {}
  async start(_nodeId: string, shards: number, listener: LeaseListener): Promise<void> {
    for (let shard = 0; shard < shards; shard++) {
      await listener.acquired({ shard, token: this.token });
      this.owned.add(shard);
    }
  }
  valid(shard: number, token: number): boolean {
    return token === this.token && this.owned.has(shard);
  }
  ready(): boolean {
    return true;
  }
  async stop(): Promise<void> {
    this.owned.clear();
  }
  async describe(): Promise<LeaseView> {
    return { nodes: [], shards: [] };
  }
}

/** A store that dies (every commit refused, nothing written, nothing read) from the first commit that `dies` picks: a crashed process. */
function crashable(inner: Store, dies: (ops: WriteOp[]) => boolean): Store & { crashed: boolean } {
  const s = {
    crashed: false,
    init: () => inner.init(),
    // A dead process reads nothing either (its timers, still running here, must not reach the store after the test closes it).
    get: (table: string, pk: string, ck: Key) => (s.crashed ? Promise.reject(new Error('the process died')) : inner.get(table, pk, ck)),
    range: (table: string, pk: string, opts?: RangeOptions) => (s.crashed ? Promise.reject(new Error('the process died')) : inner.range(table, pk, opts)),
    close: async () => {},
    async claim(scope: string, token: number): Promise<Writer | null> {
      const w = await inner.claim(scope, token);
      if (!w) return null;
      return {
        scope: w.scope,
        token: w.token,
        commit(ops: WriteOp[]): Promise<void> {
          if (!s.crashed && dies(ops)) s.crashed = true;
          if (s.crashed) return Promise.reject(new Error('the process died'));
          return w.commit(ops);
        },
      };
    },
  } as Store & { crashed: boolean };
  return s;
}

/** The parts of a realm's state its tables hold, for comparing two loads. */
function dump(s: RealmState) {
  return {
    meta: s.meta,
    maxMessageId: s.maxMessageId,
    users: s.users,
    channels: s.channels,
    subs: s.subs,
    dms: s.dms,
    scheduled: s.scheduled,
    settings: [...s.settings],
    settingsEdited: s.settingsEdited,
    userDefaults: s.userDefaults,
    groups: s.groups,
    profileFields: s.profileFields,
    topics: s.topics,
    emoji: s.emoji,
    mutedUsers: s.mutedUsers,
    alertWords: new Map(s.alertWords),
    userTopics: s.userTopics,
    missedEmails: s.missedEmails,
    pushDevices: s.pushDevices,
    org: { settings: s.org.settings, folders: s.org.folders, linkifiers: s.org.linkifiers, invites: s.org.invites, traffic: s.org.traffic },
  };
}

function node(store: Store, token: number) {
  const bus = new LocalBus();
  const actors = new ActorClient(bus, 1, 10_000);
  const n = new ActorNode(bus, new TokenLeases(token), store, actors, { nodeId: `node-${token}`, shards: 1, siteUrl: 'http://x', heartbeatSecs: 50 }, log.child({ test: 'checkpoint', token }));
  return { n, actors, bus };
}

async function suite(t: Test, store: Store): Promise<void> {
  // The first owner: a realm with its users, then changes to per-user and realm tables, checkpoints among them.
  const first = node(store, 1);
  await first.n.start();
  const creds = await seedDemo(first.actors);
  const seeded = await RealmState.load(store, REALM, { fromTables: true });
  const [owner, , , member1, member2] = creds.map((c) => ({ userId: seeded.usersByEmail.get(c.email.toLowerCase())!.id }));
  const as = (userId: number) => ({ realmId: REALM, userId });
  const call = (msg: Record<string, unknown>) => first.actors.call(realmRef, realmActorId(REALM), msg as never) as Promise<Record<string, unknown>>;
  for (let i = 0; i < 8; i++) {
    await call({ type: 'changeAlertWords', caller: as(member1!.userId), words: [`word${i}`], add: true });
    await call({ type: 'sendMessage', caller: as(owner!.userId), client: 'test', recipientType: 'stream', to: 'general', topic: `topic ${i % 3}`, content: `message ${i}`, readBySender: null, queueId: null, localId: null });
  }
  await call({ type: 'muteUser', caller: as(member1!.userId), mutedUserId: member2!.userId, mute: true });
  await call({ type: 'subscribe', caller: as(owner!.userId), subscriptions: [{ name: 'checkpointed' }], principals: [member1!.userId, member2!.userId], authorizationErrorsFatal: true, inviteOnly: false, isWebPublic: false, isDefaultStream: false, historyPublicToSubscribers: null, messageRetentionDays: null, topicsPolicy: null, groups: {}, announce: false });
  await call({ type: 'sendMessage', caller: as(member1!.userId), client: 'test', recipientType: 'private', to: [member2!.userId], topic: null, content: 'a direct message', readBySender: null, queueId: null, localId: null });
  // Let the checkpoint in progress finish (an idle realm writes its parts with empty changes).
  for (let i = 0; i < 100 && !(await T.realmCheckpoints.at(REALM, 'head').get(store)); i++) await new Promise((r) => setTimeout(r, 50));
  const head = await T.realmCheckpoints.at(REALM, 'head').get(store);
  t.ok(head && head.seq > 0, `a checkpoint was written (seq ${head?.seq}, ${head?.chunks} chunks)`);
  await call({ type: 'changeAlertWords', caller: as(member1!.userId), words: ['after-checkpoint'], add: true });

  await t.test('a realm loaded from its checkpoint equals one loaded from its tables', async (t) => {
    const fromCheckpoint = await RealmState.load(store, REALM);
    const fromTables = await RealmState.load(store, REALM, { fromTables: true });
    t.equal(fromCheckpoint.image.stats.loadedFrom, 'checkpoint', 'the load read the checkpoint');
    t.ok(fromCheckpoint.image.stats.replayed > 0, `and replayed the journal since (${fromCheckpoint.image.stats.replayed} rows)`);
    t.same(dump(fromCheckpoint), dump(fromTables), 'same state');
    t.ok(fromCheckpoint.alertWords.get(member1!.userId)?.includes('after-checkpoint'), 'a change after the checkpoint is in it');
    // The alert-word index is made at load: words from the checkpoint and from the journal after it are found by a send.
    for (const [how, s] of [['checkpoint', fromCheckpoint], ['tables', fromTables]] as const) {
      t.same([...s.alertWords.matching('Word0 and WORD7 were said')], [member1!.userId], `loaded from ${how}: words of the checkpoint match`);
      t.same([...s.alertWords.matching('see after-checkpoint.')], [member1!.userId], `loaded from ${how}: a word of the journal after it matches`);
      t.same([...s.alertWords.matching('word77 word-0 after')], [], `loaded from ${how}: parts of words do not`);
    }
  });

  await t.test('a crash between a checkpoint and its header loses nothing answered; the next owner loads what was answered', async (t) => {
    // The first owner dies at the first commit carrying chunks of a checkpoint: after it, nothing of its lands.
    const dying = crashable(store, (ops) => ops.some((op) => op.table === 'realm_checkpoint_chunks'));
    const doomed = node(dying, 2);
    await first.n.stop();
    await doomed.n.start();
    const answered: string[] = [];
    for (let i = 0; i < 30 && !dying.crashed; i++) {
      const word = `crash${i}`;
      const ok = await doomed.actors
        .call(realmRef, realmActorId(REALM), { type: 'changeAlertWords', caller: as(member2!.userId), words: [word], add: true } as never)
        .then(() => true, () => false);
      if (ok) answered.push(word);
    }
    t.ok(dying.crashed, `the owner died while writing a checkpoint's chunks (after ${answered.length} answered changes)`);
    // The next owner, with a greater token, on the store itself.
    const next = node(store, 3);
    await next.n.start();
    t.teardown(() => next.n.stop());
    const words = (await next.actors.call(realmRef, realmActorId(REALM), { type: 'listAlertWords', caller: as(member2!.userId) } as never)) as { alert_words: string[] };
    for (const w of answered) t.ok(words.alert_words.includes(w), `answered change ${w} is there`);
    const fromCheckpoint = await RealmState.load(store, REALM);
    const fromTables = await RealmState.load(store, REALM, { fromTables: true });
    t.same(dump(fromCheckpoint), dump(fromTables), 'the checkpoint and the journal after it still give the tables\' state');
    t.ok(fromCheckpoint.users.has(owner!.userId) && fromCheckpoint.mutedUsers.get(member1!.userId)?.has(member2!.userId), 'with what the first owner answered');
    // The dead owner stops before the store closes (its timers would read a closed store); its stop may not finish.
    await Promise.race([doomed.n.stop().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
  });

  await t.test('a checkpoint of another format, or not matching its checksum, is not read: the load reads the tables and writes a new one', async (t) => {
    const writer = (await store.claim(`realm:${REALM}`, 4))!;
    const head = (await T.realmCheckpoints.at(REALM, 'head').get(store))!;
    t.equal(head.version, CHECKPOINT_VERSION, `the checkpoint written is of format ${CHECKPOINT_VERSION}`);
    const fromTables = dump(await RealmState.load(store, REALM, { fromTables: true }));
    for (const bad of [{ ...head, version: 1 }, { ...head, version: 99 }, { ...head, checksum: '0'.repeat(64) }]) {
      await writer.commit([T.realmCheckpoints.at(REALM, 'head').put(bad)]);
      const s = await RealmState.load(store, REALM);
      t.equal(s.image.stats.loadedFrom, 'tables', `a header of format ${bad.version}${bad.checksum === head.checksum ? '' : ' with another checksum'} is not read`);
      t.same(dump(s), fromTables, 'and the state is the tables\' one');
      // The new checkpoint the load began, written as the actor would.
      for (let i = 0; i < 100 && !s.image.pending; i++) await new Promise((r) => setTimeout(r, 20));
      for (;;) {
        const ops = s.image.journalWrites([]);
        await writer.commit(ops);
        if (!ops.length || ops.some((op) => op.table === 'realm_checkpoints')) break;
      }
      const again = await RealmState.load(store, REALM);
      t.equal(again.image.stats.loadedFrom, 'checkpoint', 'the next load reads the new checkpoint');
      t.same(dump(again), fromTables, 'which gives the same state');
    }
  });

  await t.test('a gap in the journal after the checkpoint (a snapshot restored under writes) loads the realm from its tables, and the journal goes on after its newest row', async (t) => {
    const writer = (await store.claim(`realm:${REALM}`, 5))!;
    const head = (await T.realmCheckpoints.at(REALM, 'head').get(store))!;
    const fromTables = dump(await RealmState.load(store, REALM, { fromTables: true }));
    const row = (seq: number) => T.realmJournal.at(REALM, seq);
    // Rows of no change (the tables stay as they are): a gap inside a bucket, then one across a bucket's end.
    const nextBucket = (Math.floor(head.seq / REALM_JOURNAL_BUCKET) + 1) * REALM_JOURNAL_BUCKET;
    for (const [what, seqs] of [['inside a bucket', [head.seq + 1, head.seq + 3]], ["across a bucket's end", [head.seq + 1, nextBucket + 2]]] as const) {
      await writer.commit(seqs.map((seq) => row(seq).put({ ops: [] })));
      const s = await RealmState.load(store, REALM);
      t.equal(s.image.stats.loadedFrom, 'tables', `a gap ${what} is not replayed over`);
      t.same(dump(s), fromTables, 'the state is the tables\'');
      t.equal(s.image.seq, seqs[1], 'the journal goes on after its newest row (no seq is written twice)');
      s.image.close();
      await writer.commit(seqs.map((seq) => row(seq).delete()));
    }
  });

  await t.test("a checkpoint of an older build that lacks an image table: that table is read from the store, and the next checkpoint holds it", async (t) => {
    const writer = (await store.claim(`realm:${REALM}`, 6))!;
    const head = (await T.realmCheckpoints.at(REALM, 'head').get(store))!;
    t.ok(head.tables?.includes('alert_words'), 'a header lists the tables it holds');
    // A row the checkpoint and its journal do not have, as written while an older build did not checkpoint the table.
    const words = [...((await T.alertWords.at(REALM, member2!.userId).get(store)) ?? []), 'only-in-the-table'];
    await writer.commit([T.alertWords.at(REALM, member2!.userId).put(words)]);
    const fromTables = dump(await RealmState.load(store, REALM, { fromTables: true }));
    const listed = await RealmState.load(store, REALM);
    t.equal(listed.image.stats.loadedFrom, 'checkpoint', 'a header listing the table: the checkpoint is read');
    t.notOk(listed.alertWords.get(member2!.userId)?.includes('only-in-the-table'), 'and the row it lacks is not seen (the control)');
    listed.image.close();

    await writer.commit([T.realmCheckpoints.at(REALM, 'head').put({ ...head, tables: head.tables!.filter((x) => x !== 'alert_words') })]);
    const older = await RealmState.load(store, REALM);
    t.equal(older.image.stats.loadedFrom, 'checkpoint', 'a header without the table: the checkpoint is read');
    t.same(older.image.stats.readFromTables, ['alert_words'], 'and that table from the store');
    t.same(dump(older), fromTables, "the state is the tables'");
    // The new checkpoint the load began, written as the actor would: it holds the table.
    for (let i = 0; i < 100 && !older.image.pending; i++) await new Promise((r) => setTimeout(r, 20));
    for (;;) {
      const ops = older.image.journalWrites([]);
      await writer.commit(ops);
      if (!ops.length || ops.some((op) => op.table === 'realm_checkpoints')) break;
    }
    const next = await RealmState.load(store, REALM);
    t.ok((await T.realmCheckpoints.at(REALM, 'head').get(store))!.tables?.includes('alert_words'), 'the next header lists it again');
    t.same(next.image.stats.readFromTables, [], 'the next load reads every table from the checkpoint');
    t.same(dump(next), fromTables, 'with the same state');
    next.image.close();

    // A header of an older build that lists nothing, under other codecs: it may lack any table.
    await writer.commit([T.realmCheckpoints.at(REALM, 'head').put({ ...head, tables: undefined, shape: 'older' })]);
    const unlisted = await RealmState.load(store, REALM);
    t.equal(unlisted.image.stats.loadedFrom, 'tables', 'a header listing no tables, written under other codecs, is not read');
    t.same(dump(unlisted), fromTables, "the state is the tables'");
    unlisted.image.close();
  });
}

t.test('checkpoint - embedded store, restart', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'parley-checkpoint-'));
  const store = new EmbeddedStore(dir);
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  await suite(t, store);
});

t.test('checkpoint - Cassandra store, takeover', async (t) => {
  const keyspace = `parley_ckpt_${randomBytes(4).toString('hex')}`;
  const config = loadConfig({ PARLEY_CASSANDRA_CONTACT_POINTS: process.env['PARLEY_CASSANDRA_CONTACT_POINTS'], PARLEY_CASSANDRA_DC: process.env['PARLEY_CASSANDRA_DC'] }).cassandra;
  let store: CassandraStore;
  try {
    store = await CassandraStore.connect({ ...config, keyspace, replicationFactor: 1 });
    await store.init();
  } catch (err) {
    t.fail(`Cassandra not reachable: ${String(err)}`);
    return;
  }
  t.teardown(async () => {
    await store.close();
    await dropKeyspace(keyspace).catch(() => {});
  });
  await suite(t, store);
});
