/**
 * Grows the demo organization of a stopped bench server (`startParley`,
 * then `stop`) to a large one, straight through the embedded store: the
 * users `POST /users` would make (at ~30/s today), in seconds.
 */
import { DEMO_REALM_ID } from '../../lib/demo.ts';
import { forgetCheckpoint } from '../../actors/realm/state/checkpoint.ts';
import { EmbeddedStore } from '../../storage/embedded.ts';
import { objectBucket, T } from '../../storage/tables.ts';

const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken', 'Radia', 'Leslie', 'Margaret', 'Dennis'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Thompson', 'Perlman', 'Lamport', 'Hamilton', 'Ritchie'];

/** The API key of a user `growDemo` made (their email is user<ID>@bench.example). */
export const benchKey = (id: number): string => `benchkey${id}benchkey${id}`.slice(0, 32);

/**
 * Adds `count` users to the demo organization (stopped server): members, 2%
 * administrators, 3% guests, each subscribed to `general`. Written with a
 * fence scope of its own, so the realm's lease is left alone.
 */
export async function growDemo(dataDir: string, count: number): Promise<number> {
  const store = new EmbeddedStore(dataDir);
  try {
    const realm = DEMO_REALM_ID;
    const ids = (await T.allocators.at(realm).get(store))!;
    const general = (await T.channels.partition(realm, objectBucket(1)).values(store)).find((c) => c.name === 'general')!;
    const writer = (await store.claim('bench:grow', 1))!;
    let ops = [];
    const first = ids.user;
    for (let i = 0; i < count; i++) {
      const id = first + i;
      const role = i % 50 === 0 ? 200 : i % 33 === 0 ? 600 : 400;
      const name = `${FIRST[i % FIRST.length]} ${LAST[Math.floor(i / FIRST.length) % LAST.length]} ${i}`;
      ops.push(
        T.users.at(realm, id).put({
          id,
          email: `user${id}@bench.example`,
          fullName: name,
          role,
          isBot: false,
          botType: null,
          botOwnerId: null,
          isActive: true,
          // A plain key, hashed when the realm loads (as rows written before keys were hashed).
          apiKey: benchKey(id),
          passwordHash: null,
          dateJoined: new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString(),
          timezone: i % 3 === 0 ? 'Europe/Berlin' : '',
          canCreateUsers: false,
          apiKeys: [],
          loggedIn: true,
          canChangeUserEmails: false,
          profileData: {},
          status: { text: '', emojiName: '', emojiCode: '', reactionType: '' },
          pendingEmail: null,
          service: null,
          isSystemBot: false,
          onboardingAt: null,
          onboarding: [],
          avatarSource: 'G',
        }),
        T.subscriptions.at(realm, general.id, id).put({
          streamId: general.id,
          userId: id,
          active: true,
          color: '#76ce90',
          pinToTop: false,
          isMuted: false,
          endMessageId: null,
          startMessageId: 1,
          desktopNotifications: null,
          emailNotifications: null,
          pushNotifications: null,
          audibleNotifications: null,
          wildcardMentionsNotify: null,
        }),
      );
      if (ops.length >= 4000) {
        await writer.commit(ops);
        ops = [];
      }
    }
    // Rows written beside the realm actor: its next load reads the tables, not its checkpoint.
    ops.push(T.allocators.at(realm).put({ ...ids, user: first + count }), forgetCheckpoint(realm));
    await writer.commit(ops);
    return first;
  } finally {
    await store.close();
  }
}

