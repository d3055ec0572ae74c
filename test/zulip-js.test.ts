// The real client: zulip-js from npm sends POST bodies as multipart/form-data
// and GET/DELETE parameters in the query string.
import t from 'tap';
import zulip from 'zulip-js';
import { join } from 'node:path';
import { uniq } from './helpers/api.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);

t.test('zulip-js - register, subscribe, send and receive through a long poll', async (t) => {
  const sender = await zulip({ username: s.demo.owner.email, apiKey: s.demo.owner.apiKey, realm: s.urls[0] });
  const receiver = s.dataDir
    ? await zulip({ zuliprc: join(s.dataDir, 'demo', 'member1.zuliprc') })
    : await zulip({ username: s.demo.member1.email, apiKey: s.demo.member1.apiKey, realm: s.urls[s.urls.length - 1] });
  const channel = uniq('zulipjs');
  const sub = await sender.users.me.subscriptions.add({ subscriptions: JSON.stringify([{ name: channel }]), principals: JSON.stringify([s.demo.member1.email]) });
  t.equal(sub.result, 'success', JSON.stringify(sub));
  const reg = await receiver.queues.register({ event_types: ['message'] });
  t.equal(reg.result, 'success', JSON.stringify(reg).slice(0, 200));
  const poll = receiver.events.retrieve({ queue_id: reg.queue_id, last_event_id: reg.last_event_id });
  const sent = await sender.messages.send({ type: 'stream', to: channel, topic: 'from zulip-js', content: 'Hello from the real client' });
  t.equal(sent.result, 'success', JSON.stringify(sent));
  const got = await poll;
  t.equal(got.result, 'success');
  t.equal(got.events.length, 1);
  t.equal(got.events[0].message.id, sent.id);
  t.equal(got.events[0].message.content, 'Hello from the real client');
  t.equal(got.events[0].message.display_recipient, channel);
  const history = await receiver.messages.retrieve({ anchor: 'newest', num_before: 1, num_after: 0, narrow: [{ operator: 'stream', operand: channel }] });
  t.equal(history.result, 'success', JSON.stringify(history).slice(0, 200));
  t.equal(history.messages[0].id, sent.id);
  const subs = await receiver.streams.subscriptions.retrieve();
  t.ok(subs.subscriptions.some((x: { name: string }) => x.name === channel));
  const gone = await receiver.queues.deregister({ queue_id: reg.queue_id });
  t.equal(gone.result, 'success');
});
