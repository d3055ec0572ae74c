// Zulip's verify_action: a register snapshot with the events that followed
// applied to it equals a fresh register.
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { applyEvent as apply, type Snap } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
// A modern client: channel notification settings that follow the user's defaults stay null (events carry null too).
const FETCH = { include_subscribers: 'true', fetch_event_types: ['realm_user', 'subscription', 'stream', 'message', 'recent_private_conversations'], client_capabilities: { notification_settings_null: true } };

const byId = (key: string) => (a: any, b: any) => a[key] - b[key];
function normalize(snap: Snap) {
  const subs = (list: any[]) => list.map((x) => ({ ...x, subscribers: [...x.subscribers].sort() })).sort(byId('stream_id'));
  return {
    realm_users: [...snap.realm_users].sort(byId('user_id')),
    subscriptions: subs(snap.subscriptions),
    never_subscribed: subs(snap.never_subscribed),
    streams: [...snap.streams].sort(byId('stream_id')),
    max_message_id: snap.max_message_id,
    recent_private_conversations: snap.recent_private_conversations,
  };
}


t.test('snapshot - events applied in order reproduce the next register', async (t) => {
  const q = await register(maria, FETCH);
  const snap = structuredClone(q.snapshot);
  const { user_id } = await owner.ok('POST', '/users', { email: `${uniq('joiner')}@parley.example`, password: 'pw', full_name: 'Joiner Two' });
  const mine = uniq('mine');
  await maria.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: mine }] });
  const theirs = uniq('theirs');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: theirs }] });
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: mine }], principals: [user_id] });
  const dm = await owner.ok('POST', '/messages', { type: 'direct', to: [s.demo.member1.userId, user_id], content: 'three-way' });
  const seen: string[] = [];
  await waitFor(q, (e) => {
    seen.push(`${e.type}/${e.op ?? ''}`);
    apply(snap, e);
    return e.type === 'message' && e.message.id === dm.id;
  });
  // The new user joins the default channel (general, Maria's too); Maria's channel; the owner's public
  // channel (Maria sees its creator join); the joiner added to Maria's.
  t.same(seen, ['realm_user/add', 'subscription/peer_add', 'stream/create', 'subscription/add', 'stream/create', 'subscription/peer_add', 'subscription/peer_add', 'message/']);
  const fresh = (await register(maria, FETCH)).snapshot;
  t.same(normalize(snap), normalize(fresh));
});
