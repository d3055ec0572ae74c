import t from 'tap';
import { type Params, uniq } from './helpers/api.ts';
import { newPerson, ROLE } from './helpers/people.ts';
import { runPython } from './helpers/python.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const mateo = s.api.as(s.demo.member2);

t.test('subscriptions - subscribe creates missing channels with the given settings', async (t) => {
  const name = uniq('created');
  const res = await maria.ok('POST', '/users/me/subscriptions', {
    subscriptions: [{ name, description: 'About **things**' }],
    invite_only: true,
    history_public_to_subscribers: false,
    topics_policy: 'disable_empty_topic',
    can_add_subscribers_group: { direct_members: [s.demo.member2.userId], direct_subgroups: [] },
  });
  t.same(res.subscribed, { [String(s.demo.member1.userId)]: [name] });
  t.same(res.already_subscribed, {});
  const list = (await maria.ok('GET', '/users/me/subscriptions', { include_subscribers: true })).subscriptions;
  const sub = list.find((x: any) => x.name === name);
  t.equal(sub.invite_only, true);
  t.equal(sub.history_public_to_subscribers, false);
  t.equal(sub.topics_policy, 'disable_empty_topic');
  t.equal(sub.description, 'About **things**');
  t.equal(sub.rendered_description, '<p>About <strong>things</strong></p>');
  t.same(sub.subscribers, [s.demo.member1.userId]);
  t.same(sub.can_add_subscribers_group, { direct_members: [s.demo.member2.userId], direct_subgroups: [] });
  t.equal(sub.creator_id, s.demo.member1.userId);
  t.type(sub.color, 'string');
  t.equal(sub.is_muted, false);
  t.equal(sub.in_home_view, true);
  const again = await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  t.same(again.already_subscribed, { [String(s.demo.member1.userId)]: [name] });
  const noSubs = (await maria.ok('GET', '/users/me/subscriptions')).subscriptions.find((x: any) => x.name === name);
  t.notOk('subscribers' in noSubs, 'subscribers only with include_subscribers');
});

t.test('subscriptions - principals by ID and by email; bad principals are 400', async (t) => {
  const name = uniq('principals');
  const res = await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], principals: [s.demo.member1.userId, s.demo.member2.email] });
  t.same(Object.keys(res.subscribed).sort(), [String(s.demo.member1.userId), String(s.demo.member2.userId)].sort());
  const bad = await owner.post('/users/me/subscriptions', { subscriptions: [{ name }], principals: [987654] });
  t.equal(bad.status, 400);
  t.equal(bad.body.code, 'BAD_REQUEST');
  const badEmail = await owner.post('/users/me/subscriptions', { subscriptions: [{ name }], principals: ['ghost@nowhere.example'] });
  t.equal(badEmail.status, 400);
});

t.test('subscriptions - private channels: authorization_errors_fatal decides 400 or an unauthorized list', async (t) => {
  const secret = uniq('secret');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], invite_only: true });
  const fatal = await mateo.post('/users/me/subscriptions', { subscriptions: [{ name: secret }] });
  t.equal(fatal.status, 400);
  t.match(fatal.body.msg, /Unable to access channel/);
  const open = uniq('open');
  const lenient = await mateo.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }, { name: open }], authorization_errors_fatal: false });
  t.same(lenient.unauthorized, [secret]);
  t.same(lenient.subscribed, { [String(s.demo.member2.userId)]: [open] });
  const send = await mateo.post('/messages', { type: 'stream', to: secret, topic: 't', content: 'x' });
  t.equal(send.status, 400, 'cannot post to a private channel one is not in');
});

t.test('subscriptions - invalid input gets clear 400s', async (t) => {
  const cases: Array<[Params, RegExp]> = [
    [{}, /Missing 'subscriptions'/],
    [{ subscriptions: 'not json' }, /Invalid subscriptions/],
    [{ subscriptions: [{ description: 'no name' }] }, /Invalid subscriptions/],
    [{ subscriptions: [{ name: '' }] }, /can't be empty/],
    [{ subscriptions: [{ name: 'x'.repeat(61) }] }, /too long/],
    [{ subscriptions: [{ name: uniq('d'), description: 'd'.repeat(1025) }] }, /description too long/],
    [{ subscriptions: [{ name: uniq('t') }], invite_only: 'yes' }, /Invalid invite_only/],
    [{ subscriptions: [{ name: uniq('t') }], topics_policy: 'sometimes' }, /Invalid topics_policy/],
    [{ subscriptions: [{ name: uniq('t') }], can_add_subscribers_group: 424242 }, /Invalid user group ID/],
    [{ subscriptions: [{ name: uniq('t') }], message_retention_days: 30 }, /organization owner/],
    [{ subscriptions: [{ name: uniq('t') }], is_web_public: true }, /Web-public/],
  ];
  for (const [params, msg] of cases) {
    const r = await maria.post('/users/me/subscriptions', params);
    t.equal(r.status, 400, JSON.stringify(params).slice(0, 80));
    t.equal(r.body.result, 'error');
    t.match(r.body.msg, msg);
  }
  const retention = await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: uniq('kept') }], message_retention_days: 'unlimited' });
  t.ok(retention.subscribed);
  const listBad = await maria.get('/users/me/subscriptions', { include_subscribers: 'maybe' });
  t.equal(listBad.status, 400);
});

t.test('subscriptions - GET /users/{user_id}/subscriptions/{stream_id}: is_subscribed for every role, with Zulip\'s errors', async (t) => {
  const pub = uniq('status-pub');
  const secret = uniq('status-secret');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: pub }], principals: [s.demo.owner.userId, s.demo.member1.userId] });
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], invite_only: true, principals: [s.demo.owner.userId, s.demo.member1.userId] });
  const id = async (name: string) => (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  const [pubId, secretId] = [await id(pub), await id(secret)];
  const ask = (who: keyof typeof s.demo, userId: number, streamId: number) => s.api.as(s.demo[who]).get(`/users/${userId}/subscriptions/${streamId}`);
  const outcome = (r: { status: number; body: any }) => (r.status === 200 ? String(r.body.is_subscribed) : `${r.status} ${r.body.msg}`);
  const maria = s.demo.member1.userId;
  const mateo = s.demo.member2.userId;
  // A public channel: everyone but a guest outside it sees it; a private one: its subscribers and administrators.
  const expected: Record<string, [string, string, string]> = {
    owner: ['true', 'false', 'true'],
    admin: ['true', 'false', 'true'],
    moderator: ['true', 'false', '400 Invalid channel ID'],
    member1: ['true', 'false', 'true'],
    member2: ['true', 'false', '400 Invalid channel ID'],
    guest: ['400 Invalid channel ID', '400 Invalid channel ID', '400 Invalid channel ID'],
    bot: ['true', 'false', '400 Invalid channel ID'],
  };
  for (const [who, want] of Object.entries(expected)) {
    const got = [outcome(await ask(who as keyof typeof s.demo, maria, pubId)), outcome(await ask(who as keyof typeof s.demo, mateo, pubId)), outcome(await ask(who as keyof typeof s.demo, maria, secretId))];
    t.same(got, want, who);
  }
  // GET /users/{user_id}/channels (FL 440): Maria's channels, those each caller has metadata access to.
  const sees: Record<string, [boolean, boolean]> = { owner: [true, true], admin: [true, true], moderator: [true, false], member1: [true, true], member2: [true, false], guest: [false, false], bot: [true, false] };
  for (const [who, want] of Object.entries(sees)) {
    const ids = (await s.api.as(s.demo[who as keyof typeof s.demo]).ok('GET', `/users/${maria}/channels`)).subscribed_channel_ids as number[];
    t.same([ids.includes(pubId), ids.includes(secretId)], want, `${who}: GET /users/{user_id}/channels`);
  }
  t.equal((await s.api.get(`/users/${maria}/channels`)).status, 401, 'GET /users/{user_id}/channels without credentials');
  // Bots are asked about as users since FL 458; the system bots, outside the organization in Zulip, are no one here.
  t.equal(outcome(await ask('member1', s.demo.bot.userId, pubId)), 'false', 'a bot not subscribed (FL 458)');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: pub }], principals: [s.demo.bot.userId] });
  t.equal(outcome(await ask('member1', s.demo.bot.userId, pubId)), 'true', 'a subscribed bot (FL 458)');
  t.ok((await owner.ok('GET', `/users/${s.demo.bot.userId}/channels`)).subscribed_channel_ids.includes(pubId), "a bot's channels (FL 458)");
  const [systemBot] = (await owner.ok('POST', '/register', { fetch_event_types: ['realm_user'] })).cross_realm_bots as { user_id: number }[];
  t.equal(outcome(await ask('owner', systemBot!.user_id, pubId)), '400 No such user', 'a system bot');
  t.equal(outcome(await owner.get(`/users/${systemBot!.user_id}/channels`)), '400 No such user', "a system bot's channels");
  // Errors: as Zulip's access_user_by_id and access_stream_by_id.
  t.equal(outcome(await ask('owner', 999_999, pubId)), '400 No such user');
  t.equal(outcome(await ask('owner', maria, 999_999)), '400 Invalid channel ID');
  const gone = await newPerson(s, ROLE.member, uniq('Gone'));
  await owner.ok('DELETE', `/users/${gone.userId}`);
  t.equal(outcome(await ask('owner', gone.userId, pubId)), '400 User is deactivated');
  const bad = await owner.get(`/users/${maria}/subscriptions/x`);
  t.same([bad.status, bad.body.code], [400, 'BAD_REQUEST']);
  t.equal((await s.api.get(`/users/${maria}/subscriptions/${pubId}`)).status, 401, 'without credentials');
  // It follows leaving, and answers for an archived channel too.
  await s.api.as(s.demo.member1).ok('DELETE', '/users/me/subscriptions', { subscriptions: [pub] });
  t.equal(outcome(await ask('owner', maria, pubId)), 'false', 'after leaving');
  await owner.ok('DELETE', `/streams/${pubId}`);
  t.equal(outcome(await ask('owner', s.demo.owner.userId, pubId)), 'true', 'an archived channel');
  const py = runPython(s.urls[0]!, s.demo.member1, `print(json.dumps(client.get_subscription_status(user_id=${s.demo.owner.userId}, stream_id=${secretId})))`) as { result: string; is_subscribed: boolean };
  t.same([py.result, py.is_subscribed], ['success', true], "the Python client's get_subscription_status");
});

t.test('subscriptions - archived channels: left out of GET /users/me/subscriptions; in the register only with archived_channels', async (t) => {
  const name = uniq('archived-sub');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }] });
  const cid = (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  const listed = async () => ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).some((x) => x.stream_id === cid);
  t.ok(await listed());
  await owner.ok('DELETE', `/streams/${cid}`);
  t.notOk(await listed(), 'archived: not listed, as Zulip');
  const plain = await owner.ok('POST', '/register', { fetch_event_types: ['subscription'] });
  t.notOk([...plain.subscriptions, ...plain.unsubscribed, ...plain.never_subscribed].some((x: any) => x.stream_id === cid), 'a register without the capability leaves it out');
  const capable = await owner.ok('POST', '/register', { fetch_event_types: ['subscription'], client_capabilities: { archived_channels: true } });
  t.equal(capable.subscriptions.find((x: any) => x.stream_id === cid)?.is_archived, true, 'with archived_channels, among the subscriptions');
  // The other lists: one left before it was archived (unsubscribed), one never joined (never_subscribed).
  const left = uniq('archived-left');
  const never = uniq('archived-never');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: left }, { name: never }] });
  const [leftId, neverId] = [(await owner.ok('GET', '/get_stream_id', { stream: left })).stream_id, (await owner.ok('GET', '/get_stream_id', { stream: never })).stream_id];
  await s.api.as(s.demo.member1).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: left }] });
  await s.api.as(s.demo.member1).ok('DELETE', '/users/me/subscriptions', { subscriptions: [left] });
  await owner.ok('DELETE', `/streams/${leftId}`);
  await owner.ok('DELETE', `/streams/${neverId}`);
  const lists = (r: any) => [r.subscriptions, r.unsubscribed, r.never_subscribed].map((l: any[]) => l.filter((x) => x.stream_id === leftId || x.stream_id === neverId).map((x) => [x.stream_id, x.is_archived]));
  const member = s.api.as(s.demo.member1);
  t.same(lists(await member.ok('POST', '/register', { fetch_event_types: ['subscription'] })), [[], [], []], 'without archived_channels: in no list');
  t.same(lists(await member.ok('POST', '/register', { fetch_event_types: ['subscription'], client_capabilities: { archived_channels: true } })), [[], [[leftId, true]], [[neverId, true]]], 'with it: unsubscribed and never_subscribed, archived');
  await owner.ok('PATCH', `/streams/${cid}`, { is_archived: false });
  t.ok(await listed(), 'listed again once unarchived');
});

t.test('subscriptions - include_subscribers gives every channel its subscribers, empty where the user may not see them (FL 37)', async (t) => {
  const name = uniq('private-left');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name }], invite_only: true, principals: [s.demo.owner.userId, s.demo.member1.userId] });
  const id = (await owner.ok('GET', '/get_stream_id', { stream: name })).stream_id as number;
  await maria.ok('DELETE', '/users/me/subscriptions', { subscriptions: [name] });
  for (const key of ['member1', 'guest', 'admin'] as const) {
    const r = await s.api.as(s.demo[key]).ok('POST', '/register', { fetch_event_types: ['subscription'], include_subscribers: true });
    const all = [...r.subscriptions, ...r.unsubscribed, ...r.never_subscribed];
    t.ok(all.length > 0 && all.every((x: any) => Array.isArray(x.subscribers)), `${key}: every channel has subscribers`);
    if (key === 'member1') t.same(r.unsubscribed.find((x: any) => x.stream_id === id)?.subscribers, [], 'a private channel the user left: an empty list');
    if (key === 'admin') t.same(r.never_subscribed.find((x: any) => x.stream_id === id)?.subscribers, [s.demo.owner.userId], 'an administrator sees them');
    const plain = await s.api.as(s.demo[key]).ok('POST', '/register', { fetch_event_types: ['subscription'] });
    t.notOk([...plain.subscriptions, ...plain.unsubscribed, ...plain.never_subscribed].some((x: any) => 'subscribers' in x), `${key}: none without include_subscribers`);
  }
});
