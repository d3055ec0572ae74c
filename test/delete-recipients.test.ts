// Who hears of a channel message's deletion (`delete_message`) and of the channel's new first message
// (`stream` update of `first_message_id`): the same users whether the realm lists them or the queue shards
// find them (the channel's subscribers and the deleter; the channel's audience).
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { type Queue, register, waitFor } from './helpers/events.ts';
import { newPerson } from './helpers/people.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const admin = s.api.as(s.demo.admin);
const ids = (key: (typeof DEMO_KEYS)[number]) => s.demo[key].userId;

// Everyone is subscribed to this one: a deletion there reaches every queue, after what came before it.
const everyone = uniq('del-all');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: everyone }], principals: DEMO_KEYS.map(ids) });
const sendTo = async (to: string, topic: string) => (await owner.ok('POST', '/messages', { type: 'stream', to, topic, content: 'to be deleted' })).id as number;

const watchers = ['admin', 'moderator', 'member1', 'member2', 'guest'] as const;
type Watcher = (typeof watchers)[number];

/** What each queue heard about each of `channelIds` until the sentinel deletion in the channel everyone is in. */
async function heardAll(queues: Record<Watcher, Queue>, channelIds: number[]): Promise<Record<number, Record<Watcher, string[]>>> {
  const sentinel = await sendTo(everyone, 'sentinel');
  await owner.ok('DELETE', `/messages/${sentinel}`);
  const out: Record<number, Record<Watcher, string[]>> = {};
  for (const id of channelIds) out[id] = {} as Record<Watcher, string[]>;
  for (const who of watchers) {
    for (const id of channelIds) out[id]![who] = [];
    await waitFor(queues[who], (e) => {
      if (e.type === 'delete_message' && channelIds.includes(e.stream_id)) out[e.stream_id]![who].push(`delete ${e.message_ids.join(',')}`);
      if (e.type === 'stream' && e.op === 'update' && e.property === 'first_message_id' && channelIds.includes(e.stream_id)) out[e.stream_id]![who].push(`first ${e.value}`);
      return e.type === 'delete_message' && e.message_ids.includes(sentinel);
    });
  }
  return out;
}
const heard = async (queues: Record<Watcher, Queue>, channelId: number) => (await heardAll(queues, [channelId]))[channelId]!;

const cases = [
  // A public channel: the guest is subscribed; the administrator, who is not, deletes (and hears of it, FL 274).
  { label: 'public', params: {}, subscribers: ['owner', 'member1', 'guest'], deleter: admin, deleterKey: 'admin' },
  // A private channel: its subscribers hear of deletions; its audience (the administrators too) of the first message.
  { label: 'private', params: { invite_only: true }, subscribers: ['owner', 'member1'], deleter: owner, deleterKey: 'owner' },
  // A private channel with an administration group naming Mateo: he hears of its first message, not of deletions.
  { label: 'private with an administration group', params: { invite_only: true, can_administer_channel_group: JSON.stringify({ direct_members: [s.demo.member2.userId], direct_subgroups: [] }) }, subscribers: ['owner', 'member1'], deleter: owner, deleterKey: 'owner' },
  // A public channel without the guest: the guest hears nothing, the members not subscribed hear of the first message.
  { label: 'public without the guest', params: {}, subscribers: ['owner', 'member1'], deleter: owner, deleterKey: 'owner' },
] as const;

for (const c of cases) {
  t.test(`delete recipients - ${c.label}: subscribers and the deleter hear of the deletion, the audience of the first message`, async (t) => {
    const name = uniq('del');
    await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: c.subscribers.map(ids), ...c.params });
    const channelId = (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
    const [m1, m2, m3, m4] = [await sendTo(name, 'a'), await sendTo(name, 'a'), await sendTo(name, 'a'), await sendTo(name, 'b')];
    const queues = {} as Record<Watcher, Queue>;
    for (const who of watchers) queues[who] = await register(s.api.as(s.demo[who]), { event_types: ['delete_message', 'stream'], client_capabilities: { bulk_message_deletion: true } });
    // DELETE /messages/{id} of the first message, then the rest of its topic (POST /streams/{id}/delete_topic).
    await c.deleter.ok('DELETE', `/messages/${m1}`);
    await c.deleter.ok('POST', `/streams/${channelId}/delete_topic`, { topic_name: 'a' });
    const got = await heard(queues, channelId);
    const subscriber = (who: string) => (c.subscribers as readonly string[]).includes(who) || who === c.deleterKey;
    const inAudience = (who: Watcher) => (c.params as { invite_only?: boolean }).invite_only ? (c.subscribers as readonly string[]).includes(who) || who === 'admin' || ('can_administer_channel_group' in c.params && who === 'member2') : who !== 'guest' || (c.subscribers as readonly string[]).includes(who);
    for (const who of watchers) {
      const expected = [
        ...(subscriber(who) ? [`delete ${m1}`] : []),
        ...(inAudience(who) ? [`first ${m2}`] : []),
        ...(subscriber(who) ? [`delete ${m2},${m3}`] : []),
        ...(inAudience(who) ? [`first ${m4}`] : []),
      ];
      t.same(got[who], expected, `${c.label}: ${who}`);
    }
  });
}

t.test('delete recipients - a topic deleted by an administrator not subscribed, after a member left and another joined', async (t) => {
  const name = uniq('del');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [ids('owner'), ids('member1')] });
  const channelId = (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  const m1 = await sendTo(name, 'x');
  const m2 = await sendTo(name, 'y');
  const queues = {} as Record<Watcher, Queue>;
  for (const who of watchers) queues[who] = await register(s.api.as(s.demo[who]), { event_types: ['delete_message', 'stream'], client_capabilities: { bulk_message_deletion: true } });
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [ids('member2')] });
  await owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [name], principals: [ids('member1')] });
  await admin.ok('POST', `/streams/${channelId}/delete_topic`, { topic_name: 'y' });
  const got = await heard(queues, channelId);
  t.same(got, { admin: [`delete ${m2}`], moderator: [], member1: [], member2: [`delete ${m2}`], guest: [] }, 'the subscribers of the moment and the deleter');
  t.ok(m1 < m2);
});

t.test('delete recipients - a deactivated user\'s messages deleted (DELETE /users/{id} with actions): subscribers, the administrator who may read them, the audience of the first message', async (t) => {
  const p = await newPerson(s);
  const expected: Record<string, Record<Watcher, string[]>> = {};
  const made: Array<{ label: string; id: number; first: number; second: number }> = [];
  for (const inviteOnly of [false, true]) {
    const name = uniq('del');
    // The guest is in neither; the administrator, who deletes, is not subscribed (may read the public one only).
    await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [ids('owner'), p.userId, ids('member1')], invite_only: inviteOnly });
    const id = (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
    const first = (await s.api.as(p).ok('POST', '/messages', { type: 'stream', to: name, topic: 'gone', content: 'mine' })).id as number;
    const second = await sendTo(name, 'stays');
    made.push({ label: inviteOnly ? 'private' : 'public', id, first, second });
    expected[id] = inviteOnly
      ? { admin: [`first ${second}`], moderator: [], member1: [`delete ${first}`, `first ${second}`], member2: [], guest: [] }
      : { admin: [`delete ${first}`, `first ${second}`], moderator: [`first ${second}`], member1: [`delete ${first}`, `first ${second}`], member2: [`first ${second}`], guest: [] };
  }
  const queues = {} as Record<Watcher, Queue>;
  for (const who of watchers) queues[who] = await register(s.api.as(s.demo[who]), { event_types: ['delete_message', 'stream'], client_capabilities: { bulk_message_deletion: true } });
  await admin.ok('DELETE', `/users/${p.userId}`, { actions: JSON.stringify({ delete_public_channel_messages: true, delete_private_channel_messages: true }) });
  // The deletion is a follow-up: wait until it is committed (its events are published before anything the realm does after it).
  for (const c of made) {
    for (let i = 0; (await owner.ok('GET', `/streams/${c.id}`)).stream.first_message_id !== c.second; i++) {
      if (i > 200) throw new Error('the messages were not deleted');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const got = await heardAll(queues, made.map((c) => c.id));
  for (const c of made) t.same(got[c.id], expected[c.id], c.label);
});
