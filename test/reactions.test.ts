// Emoji reactions: add and remove, their events, reactions on fetched messages, has:reaction.
import t from 'tap';
import { type Params, uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
// test/messages.test.ts counts the owner's direct messages with Mateo (and with Maria and Mateo): these tests use the administrator.
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);
const channel = uniq('reactions');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });
const send = async (content = 'react to me') => (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic: uniq('t'), content })).id as number;
const reactionsOf = async (id: number) => (await maria.ok('GET', `/messages/${id}`)).message.reactions as any[];

t.test('reactions - add and remove a unicode emoji, with events to the channel', async (t) => {
  const id = await send();
  const q = await register(mateo, { event_types: ['reaction'] });
  await maria.ok('POST', `/messages/${id}/reactions`, { emoji_name: 'octopus' });
  t.same(await reactionsOf(id), [{ emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji', user_id: s.demo.member1.userId }]);
  const e = await waitFor(q, (x) => x.type === 'reaction');
  // The deprecated `user` object is kept (Zulip 12 removed it at FL 484): zulip-terminal reads it.
  t.same(e, { type: 'reaction', op: 'add', message_id: id, user_id: s.demo.member1.userId, user: { user_id: s.demo.member1.userId, email: s.demo.member1.email, full_name: 'Maria Member' }, emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji', id: e.id });
  const again = await maria.call('POST', `/messages/${id}/reactions`, { emoji_name: 'octopus' });
  t.same([again.status, again.body.code, again.body.msg], [400, 'REACTION_ALREADY_EXISTS', 'Reaction already exists.'], 'FL 193');
  // Another name for the same emoji joins the existing reaction's name.
  await mateo.ok('POST', `/messages/${id}/reactions`, { emoji_name: 'octopus', emoji_code: '1f419', reaction_type: 'unicode_emoji' });
  t.equal((await reactionsOf(id)).length, 2);
  await maria.ok('DELETE', `/messages/${id}/reactions`, { emoji_name: 'octopus' });
  t.same((await waitFor(q, (x) => x.type === 'reaction' && x.op === 'remove')).user_id, s.demo.member1.userId);
  t.same((await reactionsOf(id)).map((r) => r.user_id), [s.demo.member2.userId]);
  const gone = await maria.call('DELETE', `/messages/${id}/reactions`, { emoji_name: 'octopus' });
  t.same([gone.status, gone.body.code, gone.body.msg], [400, 'REACTION_DOES_NOT_EXIST', "Reaction doesn't exist."], 'FL 193');
  const fetched = await maria.ok('GET', '/messages', { anchor: id, num_before: 0, num_after: 0 });
  t.same(fetched.messages[0].reactions.map((r: any) => r.emoji_name), ['octopus']);
});

t.test('reactions - a channel message\'s reaction events reach the channel\'s subscribers of the moment, and nobody else', async (t) => {
  const secret = uniq('secret');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], principals: [s.demo.owner.userId, s.demo.member1.userId], invite_only: true });
  const id = (await owner.ok('POST', '/messages', { type: 'stream', to: secret, topic: 'hush', content: 'private' })).id as number;
  const queues = { maria: await register(maria, { event_types: ['reaction'] }), mateo: await register(mateo, { event_types: ['reaction'] }), admin: await register(admin, { event_types: ['reaction'] }) };
  // What each queue got up to a reaction in the channel everyone is in (deliveries of a realm reach a queue in order).
  const sentinel = await send('sentinel');
  let round = 0;
  const reactedTo = async (who: keyof typeof queues) => {
    const seen: number[] = [];
    const emoji = ['dog', 'cat', 'cow'][round]!;
    await waitFor(queues[who], (e) => {
      if (e.type === 'reaction' && e.message_id !== sentinel) seen.push(e.message_id);
      return e.type === 'reaction' && e.message_id === sentinel && e.emoji_name === emoji;
    });
    return seen;
  };
  const check = async (label: string, expected: Record<keyof typeof queues, number[]>) => {
    await owner.ok('POST', `/messages/${sentinel}/reactions`, { emoji_name: ['dog', 'cat', 'cow'][round]! });
    for (const who of Object.keys(queues) as Array<keyof typeof queues>) t.same(await reactedTo(who), expected[who], `${label}: ${who}`);
    round++;
  };
  await owner.ok('POST', `/messages/${id}/reactions`, { emoji_name: 'octopus' });
  await check('a subscriber gets it; an administrator and a member not subscribed do not', { maria: [id], mateo: [], admin: [] });
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], principals: [s.demo.member2.userId] });
  await owner.ok('DELETE', '/users/me/subscriptions', { subscriptions: [secret], principals: [s.demo.member1.userId] });
  await owner.ok('DELETE', `/messages/${id}/reactions`, { emoji_name: 'octopus' });
  await check('after Mateo joined and Maria left', { maria: [], mateo: [id], admin: [] });
});

t.test('reactions - every role reacts to a message it can read; without credentials 401', async (t) => {
  const id = await send();
  for (const key of DEMO_KEYS) await s.api.as(s.demo[key]).ok('POST', `/messages/${id}/reactions`, { emoji_name: 'thumbs_up' });
  t.equal((await reactionsOf(id)).length, DEMO_KEYS.length);
  t.ok((await reactionsOf(id)).every((r) => r.emoji_code === '1f44d'));
  const r = await s.api.call('POST', `/messages/${id}/reactions`, { emoji_name: 'thumbs_up' }, { creds: null });
  t.equal(r.status, 401);
  const dm = (await admin.ok('POST', '/messages', { type: 'direct', to: [s.demo.member2.userId], content: 'x' })).id;
  t.equal((await maria.call('POST', `/messages/${dm}/reactions`, { emoji_name: 'heart' })).body.msg, 'Invalid message(s)');
});

t.test('reactions - emoji errors and the service extra emoji', async (t) => {
  const id = await send();
  const cases: Array<[Params, string, string?]> = [
    [{ emoji_name: 'no_such_emoji_xyz' }, "Emoji 'no_such_emoji_xyz' does not exist"],
    [{ emoji_name: 'octopus', emoji_code: 'ffffff' }, 'Invalid emoji code.'],
    [{ emoji_name: 'heart', emoji_code: '1f419' }, 'Invalid emoji name.'],
    [{ emoji_name: 'x', emoji_code: '1', reaction_type: 'realm_emoji' }, 'Invalid custom emoji.'],
    [{ emoji_name: 'x', emoji_code: '1', reaction_type: 'sparkly' }, 'Invalid emoji type.'],
    [{}, "Missing 'emoji_name' argument", 'REQUEST_VARIABLE_MISSING'],
  ];
  for (const [params, msg, code = 'BAD_REQUEST'] of cases) {
    const r = await maria.call('POST', `/messages/${id}/reactions`, params);
    t.same([r.status, r.body.code, r.body.msg], [400, code, msg]);
  }
  await maria.ok('POST', `/messages/${id}/reactions`, { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'service_extra_emoji' });
  t.same((await reactionsOf(id))[0], { emoji_name: 'zulip', emoji_code: 'zulip', reaction_type: 'service_extra_emoji', user_id: s.demo.member1.userId });
  t.equal((await maria.call('DELETE', `/messages/${id}/reactions`, {})).status, 400);
});

t.test('reactions - has:reaction finds messages someone reacted to', async (t) => {
  const topic = uniq('t');
  const a = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'a' })).id;
  const b = (await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'b' })).id;
  await mateo.ok('POST', `/messages/${b}/reactions`, { emoji_name: 'tada' });
  const got = await maria.ok('GET', '/messages', { anchor: 'newest', num_before: 10, num_after: 0, narrow: [{ operator: 'topic', operand: topic }, { operator: 'has', operand: 'reaction' }] });
  t.same(got.messages.map((m: any) => m.id), [b]);
  t.ok(a < b);
});

t.test('reactions - the official Python client: add_reaction and remove_reaction', async (t) => {
  const id = await send();
  const out = runPython(s.urls[0]!, s.demo.member2, `
added = client.add_reaction({"message_id": ${id}, "emoji_name": "heart"})
raw = client.call_endpoint(f"messages/${id}", method="GET")
removed = client.remove_reaction({"message_id": ${id}, "emoji_name": "heart"})
print(json.dumps({"added": added["result"], "reactions": raw["message"]["reactions"], "removed": removed["result"]}))`) as any;
  t.equal(out.added, 'success');
  t.same(out.reactions.map((r: any) => [r.emoji_name, r.emoji_code]), [['heart', '2764']]);
  t.equal(out.removed, 'success');
});
