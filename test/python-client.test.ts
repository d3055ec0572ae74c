// The official Python client, unchanged, against the server: the calls it
// makes for what Parley implements so far.
import t from 'tap';
import { ADVERTISED } from './helpers/features.ts';
import { uniq } from './helpers/api.ts';
import { runPython } from './helpers/python.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const site = s.urls[0]!;

t.test('python client - send a channel message and read it back', async (t) => {
  const topic = uniq('py');
  const out = runPython(site, s.demo.member1, `
sent = client.send_message({"type": "stream", "to": "general", "topic": ${JSON.stringify(topic)}, "content": "from python"})
got = client.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": [{"operator": "topic", "operand": ${JSON.stringify(topic)}}], "apply_markdown": False})
print(json.dumps({"sent": sent, "got": got}))`) as { sent: { result: string; id: number }; got: { messages: Array<{ id: number; content: string }> } };
  t.equal(out.sent.result, 'success');
  t.same(out.got.messages.map((m) => [m.id, m.content]), [[out.sent.id, 'from python']]);
});

t.test('python client - register, then a message arrives on the event queue', async (t) => {
  const out = runPython(site, s.demo.member2, `
q = client.register(event_types=["message"])
client.send_message({"type": "private", "to": [${s.demo.member2.userId}], "content": "note to self"})
ev = client.get_events(queue_id=q["queue_id"], last_event_id=q["last_event_id"], dont_block=True)
print(json.dumps({"level": q["service_feature_level"], "events": ev["events"]}))`) as { level: number; events: Array<{ type: string; message: { content: string } }> };
  t.equal(out.level, ADVERTISED, 'the level derived from the feature table (lib/features.ts)');
  t.same(out.events.filter((e) => e.type === 'message').map((e) => e.message.content), ['note to self']);
});

t.test('python client - scheduled messages: create, list, edit, delete', async (t) => {
  const out = runPython(site, s.demo.owner, `
import time
when = int(time.time()) + 3600
# zulip 0.9.1 has no scheduled-message methods: call_endpoint is how its users reach them.
created = client.call_endpoint("scheduled_messages", method="POST", request={"type": "stream", "to": 1, "topic": "later", "content": "first draft", "scheduled_delivery_timestamp": when})
sid = created["scheduled_message_id"]
edited = client.call_endpoint(f"scheduled_messages/{sid}", method="PATCH", request={"content": "second draft"})
listed = client.call_endpoint("scheduled_messages", method="GET")
deleted = client.call_endpoint(f"scheduled_messages/{sid}", method="DELETE")
after = client.call_endpoint("scheduled_messages", method="GET")
print(json.dumps({"created": created["result"], "edited": edited["result"], "listed": [m["content"] for m in listed["scheduled_messages"] if m["scheduled_message_id"] == sid], "deleted": deleted["result"], "after": [m["scheduled_message_id"] for m in after["scheduled_messages"]], "sid": sid}))`) as Record<string, unknown>;
  t.equal(out.created, 'success');
  t.equal(out.edited, 'success');
  t.same(out.listed, ['second draft']);
  t.equal(out.deleted, 'success');
  t.notOk((out.after as number[]).includes(out.sid as number));
});
