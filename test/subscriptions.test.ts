import t from 'tap';
import { type Params, uniq } from './helpers/api.ts';
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
