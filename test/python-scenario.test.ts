// One organization's day, driven entirely through the official Python client
// (zulip 0.9.1, unchanged): an owner sets the organization up, members talk,
// react, edit, star, read, keep drafts and snippets, upload files, schedule
// messages, listen, and leave. Every route the server serves is called at
// least once through the client: its own method where it has one,
// call_endpoint otherwise (and its authenticated session for the two routes
// that answer file bytes, which its JSON-decoding call_endpoint cannot
// return). Each step lists the routes it calls, and the list is checked
// against the requests its clients really made (the script records every
// request of requests.Session); the last test fails naming any route of
// ROUTES that no step requested.
//
// Every client method that maps onto a route here is called, including
// call_on_each_message, move_topic, get_subscribers, get_members and
// list_subscriptions; those whose routes this server does not have are listed
// in NO_ROUTE_HERE and skipped.
import { SignJWT } from 'jose';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { PathTable } from '../gateway/path.ts';
import type { Route } from '../gateway/route.ts';
import { ROUTES } from '../gateway/routes/index.ts';
import { settled, uniq } from './helpers/api.ts';
import { runPython } from './helpers/python.ts';
import { serverFor } from './helpers/server.ts';

// Token sign-in needs keys in the server's configuration: the embedded server
// this file starts has one; the shared cluster has none and answers so.
const JWT_SECRET = 'python-scenario-shared-secret-for-hs256';
const cluster = Boolean(process.env.PARLEY_TEST_GATEWAYS);
const s = await serverFor(t, cluster ? {} : { env: { PARLEY_JWT_AUTH_KEYS: JSON.stringify({ '1': [{ key: JWT_SECRET, algorithms: ['HS256'] }] }) } });
const site = s.urls[0]!;
const { owner, admin, member1, member2 } = s.demo;

/** Every `METHOD /path` (as ROUTES spells it) the scenario's clients have requested. */
const called = new Set<string>();

/** The server's routes by path, to name the route each request the client made went to (the first that fits, as the gateway picks). */
const table = new PathTable<Route>();
for (const r of ROUTES) table.add(r.path, r, { tail: r.pathTail === true });
const routeOf = (method: string, path: string): string => {
  const r = table.match(path).find((m) => m.value.method === method)?.value;
  return r ? `${r.method} ${r.path}` : `no route: ${method} ${path}`;
};

const logDir = mkdtempSync(join(tmpdir(), 'parley-py-scenario-'));
t.teardown(() => rmSync(logDir, { recursive: true, force: true }));
let steps = 0;

/** Records every request any client of the script makes (through requests), written at exit. */
const recorder = (log: string) => `
import atexit, requests
_made = []
_request = requests.Session.request
def _recording(self, method, url, *args, **kwargs):
    _made.append([method.upper(), url])
    return _request(self, method, url, *args, **kwargs)
requests.Session.request = _recording
atexit.register(lambda: open(${JSON.stringify(log)}, "w").write(json.dumps(_made)))
`;

const PRELUDE = `
def ok(r):
    assert r.get("result") == "success", r
    return r
def api_get(path):
    # The client's own authenticated session: these routes answer bytes, not JSON.
    return client.session.get(client.base_url + "v1/" + path)
def site_get(path):
    # A URL of the server outside /api (an uploaded file as message content links it), with the client's session.
    return client.session.get(client.base_url[: -len("api/")] + path)
`;

/**
 * Runs one step's script as `creds`; checks that the routes its clients
 * requested are the ones the step lists, and records them.
 */
function step(t: Test, creds: { email: string; apiKey: string }, routes: string[], body: string): any {
  const log = join(logDir, `step-${++steps}.json`);
  const out = runPython(site, creds, recorder(log) + PRELUDE + body);
  const made = JSON.parse(readFileSync(log, 'utf8')) as Array<[string, string]>;
  const requested = new Set(made.map(([method, url]) => routeOf(method, new URL(url).pathname.replace(/^\/api\/v1(?=\/)/, ''))));
  t.same([...requested].sort(), [...new Set(routes)].sort(), 'the step lists the routes its clients requested');
  for (const r of requested) called.add(r);
  return out;
}

const J = JSON.stringify;
const channel = uniq('py-town');
const side = uniq('py-side');
const topic = 'lunch plans';
let streamId = 0;
let sideId = 0;
let groupId = 0;
let firstMsg = 0;
let dmMsg = 0;
let linkifierId = 0;
let fieldId = 0;

t.test('python scenario - the owner sets up the organization', async (t) => {
  const out = step(t, owner, [
    'GET /server_settings', 'GET /openapi.json', 'PATCH /realm', 'POST /register', 'PATCH /realm/user_settings_defaults',
    'POST /users/me/subscriptions', 'POST /channels/create', 'GET /get_stream_id', 'GET /streams/{stream_id}', 'PATCH /streams/{stream_id}', 'GET /streams',
    'GET /streams/{stream_id}/members', 'POST /default_streams', 'GET /default_streams', 'DELETE /default_streams',
    'POST /default_stream_groups/create', 'PATCH /default_stream_groups/{group_id}', 'PATCH /default_stream_groups/{group_id}/streams', 'DELETE /default_stream_groups/{group_id}',
  ], `
settings = ok(client.get_server_settings())
# The API description is JSON too: call_endpoint decodes it (it has no "result").
described = client.call_endpoint("openapi.json", method="GET")
before = ok(client.register(fetch_event_types=["realm", "realm_user_settings_defaults"]))
desc = ${J(`Run by Python ${channel}`)}
ok(client.call_endpoint("realm", method="PATCH", request={"description": desc}))
ok(client.call_endpoint("realm/user_settings_defaults", method="PATCH", request={"twenty_four_hour_time": not before["realm_user_settings_defaults"]["twenty_four_hour_time"]}))
state = ok(client.register(fetch_event_types=["realm", "realm_user_settings_defaults"]))
# Leave the shared organization as it was (the cluster run shares it with the other files).
ok(client.call_endpoint("realm/user_settings_defaults", method="PATCH", request={"twenty_four_hour_time": before["realm_user_settings_defaults"]["twenty_four_hour_time"]}))
if before["realm_description"] == "":
    ok(client.call_endpoint("realm", method="PATCH", request={"description": ""}))
subbed = ok(client.add_subscriptions([{"name": ${J(channel)}, "description": "the town square"}, {"name": ${J(side)}}], principals=[${J(member1.email)}, ${J(member2.email)}]))
sid = ok(client.get_stream_id(${J(channel)}))["stream_id"]
# FL 417: a channel made by POST /channels/create, with its subscribers; its name again is a 409.
made = ok(client.call_endpoint("channels/create", method="POST", request={"name": ${J(`${side}-made`)}, "description": "made by python", "subscribers": [${member1.userId}]}))["id"]
made_subscribers = ok(client.call_endpoint(f"streams/{made}/members", method="GET"))["subscribers"]
again = client.call_endpoint("channels/create", method="POST", request={"name": ${J(`${side}-made`)}, "subscribers": []})
side_id = ok(client.get_stream_id(${J(side)}))["stream_id"]
one = ok(client.call_endpoint(f"streams/{sid}", method="GET"))["stream"]
ok(client.update_stream({"stream_id": sid, "description": "where the town meets"}))
listed = [x for x in ok(client.get_streams())["streams"] if x["stream_id"] == sid]
subscribers = ok(client.get_subscribers(stream=${J(channel)}))["subscribers"]
ok(client.add_default_stream(sid))
defaults = [x["stream_id"] for x in ok(client.call_endpoint("default_streams", method="GET"))["default_streams"]]
ok(client.call_endpoint("default_streams", method="DELETE", request={"stream_id": sid}))
after = [x["stream_id"] for x in ok(client.call_endpoint("default_streams", method="GET"))["default_streams"]]
group_name = ${J(`Py group ${channel}`)}
ok(client.call_endpoint("default_stream_groups/create", method="POST", request={"group_name": group_name, "description": "from python", "stream_names": [${J(channel)}]}))
gid = [g["id"] for g in ok(client.register(fetch_event_types=["default_stream_groups"]))["realm_default_stream_groups"] if g["name"] == group_name][0]
ok(client.call_endpoint(f"default_stream_groups/{gid}", method="PATCH", request={"new_description": "changed by python"}))
ok(client.call_endpoint(f"default_stream_groups/{gid}/streams", method="PATCH", request={"op": "add", "stream_names": [${J(side)}]}))
group = [g for g in ok(client.register(fetch_event_types=["default_stream_groups"]))["realm_default_stream_groups"] if g["id"] == gid][0]
ok(client.call_endpoint(f"default_stream_groups/{gid}", method="DELETE"))
groups_after = [g["id"] for g in ok(client.register(fetch_event_types=["default_stream_groups"]))["realm_default_stream_groups"]]
print(json.dumps({"group": group, "group_gone": gid not in groups_after, "zulip_version": settings["zulip_version"], "openapi": described["openapi"], "described_paths": len(described["paths"]), "realm_description": state["realm_description"], "h24": [before["realm_user_settings_defaults"]["twenty_four_hour_time"], state["realm_user_settings_defaults"]["twenty_four_hour_time"]],
  "created": subbed["subscribed"], "sid": sid, "side_id": side_id, "name": one["name"], "desc": listed[0]["description"], "subscribers": subscribers, "defaults": sid in defaults, "after": sid in after,
  "made_subscribers": made_subscribers, "again": [again["result"], again.get("code"), again["msg"]]}))`);
  t.same(out.made_subscribers, [member1.userId], 'POST /channels/create subscribed who it was given (FL 417)');
  t.same(out.again, ['error', 'CHANNEL_ALREADY_EXISTS', `Channel '${side}-made' already exists`], 'and refuses an existing name');
  t.type(out.zulip_version, 'string');
  t.match(out.openapi, /^3\.1/);
  t.ok(out.described_paths > 50, 'the description lists the paths');
  t.equal(out.realm_description, `<p>Run by Python ${channel}</p>`, 'register gives the description rendered');
  t.equal(out.h24[1], !out.h24[0], 'the new default is in the register snapshot');
  t.same(Object.keys(out.created).sort(), [String(member1.userId), String(member2.userId)].sort(), 'the principals are subscribed, by user ID');
  t.equal(out.name, channel);
  t.equal(out.desc, 'where the town meets');
  t.same([out.group.description, [...out.group.streams].sort()], ['changed by python', [out.sid, out.side_id].sort()], 'a default channel group made, changed and given a channel through the Python client');
  t.ok(out.group_gone, 'and deleted');
  t.same([...out.subscribers].sort(), [member1.userId, member2.userId].sort((a, b) => a - b));
  t.equal(out.defaults, true);
  t.equal(out.after, false);
  streamId = out.sid;
  sideId = out.side_id;
});

t.test('python scenario - folders, linkifiers, profile fields, groups and emoji', async (t) => {
  const out = step(t, owner, [
    'POST /channel_folders/create', 'GET /channel_folders', 'PATCH /channel_folders/{channel_folder_id}', 'PATCH /channel_folders',
    'POST /realm/filters', 'GET /realm/linkifiers', 'PATCH /realm/filters/{filter_id}', 'PATCH /realm/linkifiers', 'DELETE /realm/filters/{filter_id}',
    'POST /realm/profile_fields', 'GET /realm/profile_fields', 'PATCH /realm/profile_fields/{field_id}', 'PATCH /realm/profile_fields', 'DELETE /realm/profile_fields/{field_id}',
    'POST /user_groups/create', 'GET /user_groups', 'PATCH /user_groups/{user_group_id}', 'POST /user_groups/{user_group_id}/members',
    'POST /user_groups/{user_group_id}/subgroups', 'GET /user_groups/{user_group_id}/members', 'GET /user_groups/{user_group_id}/members/{user_id}',
    'GET /user_groups/{user_group_id}/subgroups', 'POST /user_groups/{user_group_id}/deactivate',
    'POST /realm/emoji/{emoji_name}', 'GET /realm/emoji', 'GET /realm/emoji/{emoji_id}/image', 'DELETE /realm/emoji/{emoji_name}',
    'POST /realm/playgrounds', 'DELETE /realm/playgrounds/{playground_id}',
    'GET /realm/domains', 'POST /realm/domains', 'PATCH /realm/domains/{domain}', 'DELETE /realm/domains/{domain}',
    'POST /export/realm', 'GET /export/realm', 'DELETE /export/realm/{export_id}', 'GET /export/realm/consents',
  ], `
import io
tag = ${J(uniq('x').slice(-6))}
# Exports (five a week): a full export is refused while members have not consented, so none is spent here.
consents = ok(client.call_endpoint("export/realm/consents", method="GET"))["export_consents"]
assert consents and all(set(c) == {"user_id", "consented", "email_address_visibility"} for c in consents), consents
refused = client.call_endpoint("export/realm", method="POST", request={"export_type": "full_with_consent"})
assert refused["result"] == "error" and refused["msg"].startswith("Make sure every member consents"), refused
assert isinstance(ok(client.call_endpoint("export/realm", method="GET"))["exports"], list)
gone = client.call_endpoint("export/realm/999999", method="DELETE")
assert gone["result"] == "error" and gone["msg"] == "Invalid data export ID", gone
domain = tag.lower() + ".python.example"
ok(client.call_endpoint("realm/domains", method="POST", request={"domain": domain, "allow_subdomains": False}))
ok(client.call_endpoint(f"realm/domains/{domain}", method="PATCH", request={"allow_subdomains": True}))
domains = ok(client.call_endpoint("realm/domains", method="GET"))["domains"]
ok(client.call_endpoint(f"realm/domains/{domain}", method="DELETE"))
playground = ok(client.call_endpoint("realm/playgrounds", method="POST", request={"name": "Py " + tag, "pygments_language": "python", "url_template": "https://play.example/?code={code}"}))["id"]
ok(client.call_endpoint(f"realm/playgrounds/{playground}", method="DELETE"))
folder = ok(client.call_endpoint("channel_folders/create", method="POST", request={"name": "Py " + tag, "description": "python things"}))["channel_folder_id"]
ok(client.call_endpoint(f"channel_folders/{folder}", method="PATCH", request={"description": "python and snakes"}))
# The new order names every folder, archived ones too.
folders = ok(client.call_endpoint("channel_folders", method="GET", request={"include_archived": True}))["channel_folders"]
order = [f["id"] for f in folders]
order.reverse()
ok(client.call_endpoint("channel_folders", method="PATCH", request={"order": order}))
reordered = [f["id"] for f in ok(client.call_endpoint("channel_folders", method="GET", request={"include_archived": True}))["channel_folders"]]
mine = [f for f in folders if f["id"] == folder][0]

fid = ok(client.add_realm_filter("PY-" + tag + "-(?P<id>[0-9]+)", "https://tracker.example/" + tag + "/{id}"))["id"]
ok(client.call_endpoint(f"realm/filters/{fid}", method="PATCH", request={"pattern": "PY-" + tag + "-(?P<id>[0-9]+)", "url_template": "https://issues.example/{id}"}))
links = ok(client.get_realm_linkifiers())["linkifiers"]
mylink = [l for l in links if l["id"] == fid][0]
ids = [l["id"] for l in links]
ids.reverse()
ok(client.call_endpoint("realm/linkifiers", method="PATCH", request={"ordered_linkifier_ids": ids}))
relinks = [l["id"] for l in ok(client.get_realm_linkifiers())["linkifiers"]]
fid2 = ok(client.add_realm_filter("PYTMP-" + tag + "-(?P<id>[0-9]+)", "https://tmp.example/{id}"))["id"]
ok(client.remove_realm_filter(fid2))
gone_link = fid2 in [l["id"] for l in ok(client.get_realm_linkifiers())["linkifiers"]]

field = ok(client.create_realm_profile_field(name="Team " + tag, hint="your team", field_type=1))["id"]
field2 = ok(client.create_realm_profile_field(name="Desk " + tag, hint="", field_type=1))["id"]
ok(client.update_realm_profile_field(field, hint="which team you are on"))
fields = ok(client.get_realm_profile_fields())["custom_fields"]
forder = [f["id"] for f in fields]
forder.reverse()
ok(client.reorder_realm_profile_fields(order=forder))
refields = [f["id"] for f in ok(client.get_realm_profile_fields())["custom_fields"]]
ok(client.remove_realm_profile_field(field2))
gone_field = field2 in [f["id"] for f in ok(client.get_realm_profile_fields())["custom_fields"]]
myfield = [f for f in fields if f["id"] == field][0]

ok(client.create_user_group({"name": "cooks " + tag, "description": "they cook", "members": [${member1.userId}]}))
ok(client.create_user_group({"name": "tasters " + tag, "description": "they taste", "members": [${member2.userId}]}))
groups = ok(client.get_user_groups())["user_groups"]
cooks = [g["id"] for g in groups if g["name"] == "cooks " + tag][0]
tasters = [g["id"] for g in groups if g["name"] == "tasters " + tag][0]
ok(client.update_user_group({"group_id": cooks, "description": "they cook lunch"}))
ok(client.update_user_group_members(cooks, {"add": [${admin.userId}]}))
ok(client.call_endpoint(f"user_groups/{cooks}/subgroups", method="POST", request={"add": [tasters]}))
members = ok(client.call_endpoint(f"user_groups/{cooks}/members", method="GET"))["members"]
is_member = ok(client.call_endpoint(f"user_groups/{cooks}/members/${member2.userId}", method="GET"))["is_user_group_member"]
subgroups = ok(client.call_endpoint(f"user_groups/{cooks}/subgroups", method="GET"))["subgroups"]
# A group in use as a subgroup cannot be deactivated: take it out first.
ok(client.call_endpoint(f"user_groups/{cooks}/subgroups", method="POST", request={"delete": [tasters]}))
ok(client.call_endpoint(f"user_groups/{tasters}/deactivate", method="POST"))
active = [g["id"] for g in ok(client.get_user_groups())["user_groups"] if not g.get("deactivated")]
cooks_desc = [g["description"] for g in groups if g["id"] == cooks]

png = io.BytesIO(bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"))
png.name = "pyemoji.png"
emoji = "py_" + tag.replace("-", "_")
ok(client.upload_custom_emoji(emoji, png))
listed = [e for e in ok(client.get_realm_emoji())["emoji"].values() if e["name"] == emoji]
image = api_get(f"realm/emoji/{listed[0]['id']}/image")
ok(client.delete_custom_emoji(emoji))
after = [e for e in ok(client.get_realm_emoji())["emoji"].values() if e["name"] == emoji]
print(json.dumps({"domain": [d for d in domains if d["domain"] == domain], "fid": fid, "field_id": field, "folder": mine, "reordered": reordered == order, "link": mylink, "relinked": relinks == ids, "gone_link": gone_link,
  "field": myfield, "refields": refields == forder, "gone_field": gone_field, "cooks": cooks, "tasters": tasters,
  "members": members, "is_member": is_member, "subgroups": subgroups, "tasters_active": tasters in active,
  "image": [image.status_code, image.content.hex()[:16]], "emoji_after": after[0]["deactivated"] if after else None}))`);
  t.same(out.domain.map((d: any) => d.allow_subdomains), [true], 'a realm domain, changed');
  t.match(out.folder, { name: /^Py /, description: 'python and snakes' });
  t.ok(out.reordered, 'channel folders come back in the new order');
  t.equal(out.link.url_template, 'https://issues.example/{id}');
  t.ok(out.relinked, 'linkifiers come back in the new order');
  t.equal(out.gone_link, false);
  t.match(out.field, { hint: 'which team you are on', type: 1 });
  t.ok(out.refields, 'profile fields come back in the new order');
  t.equal(out.gone_field, false);
  t.ok(out.members.includes(member1.userId) && out.members.includes(admin.userId), 'direct members listed');
  t.ok(out.members.includes(member2.userId), 'a subgroup member is a member');
  t.equal(out.is_member, true);
  t.same(out.subgroups, [out.tasters]);
  t.equal(out.tasters_active, false);
  t.same(out.image, [200, '89504e470d0a1a0a']);
  t.equal(out.emoji_after, true, 'a deleted emoji is deactivated');
  groupId = out.cooks;
  linkifierId = out.fid;
  fieldId = out.field_id;
});

t.test('python scenario - members talk: send, react, edit, star, read', async (t) => {
  const first = step(t, member1, [
    'POST /messages', 'POST /typing', 'GET /messages', 'GET /messages/{message_id}', 'PATCH /messages/{message_id}', 'GET /messages/{message_id}/history',
    'GET /messages/matches_narrow', 'POST /messages/{message_id}/reactions', 'DELETE /messages/{message_id}/reactions', 'GET /users/me/{stream_id}/topics',
    'POST /messages/{message_id}/typing',
  ], `
ok(client.set_typing_status({"op": "start", "type": "stream", "stream_id": ${streamId}, "topic": ${J(topic)}}))
sent = ok(client.send_message({"type": "stream", "to": ${J(channel)}, "topic": ${J(topic)}, "content": "Pizza at noon?"}))
mid = sent["id"]
ok(client.set_typing_status({"op": "stop", "type": "stream", "stream_id": ${streamId}, "topic": ${J(topic)}}))
ok(client.call_endpoint(f"messages/{mid}/typing", method="POST", request={"op": "start"}))
ok(client.update_message({"message_id": mid, "content": "Pizza at **one**?"}))
raw_reply = ok(client.get_raw_message(mid))
raw = raw_reply["message"]
history = ok(client.get_message_history(mid))["message_history"]
match = ok(client.check_messages_match_narrow(msg_ids=[mid], narrow=[{"operator": "topic", "operand": ${J(topic)}}]))["messages"]
ok(client.add_reaction({"message_id": mid, "emoji_name": "pizza"}))
ok(client.add_reaction({"message_id": mid, "emoji_name": "thumbs_up"}))
ok(client.remove_reaction({"message_id": mid, "emoji_name": "thumbs_up"}))
got = ok(client.get_messages({"anchor": mid, "num_before": 0, "num_after": 0, "apply_markdown": False}))["messages"][0]
topics = [x["name"] for x in ok(client.get_stream_topics(${streamId}))["topics"]]
print(json.dumps({"mid": mid, "raw": raw["content"], "raw_content": raw_reply["raw_content"], "history": [h.get("content") for h in history], "match": list(match.keys()), "reactions": [r["emoji_name"] for r in got["reactions"]], "content": got["content"], "topics": topics}))`);
  t.match(first.raw, /Pizza at <strong>one<\/strong>\?/);
  t.equal(first.raw_content, 'Pizza at **one**?', 'get_raw_message gives the source too');
  t.same(first.history, ['Pizza at noon?', 'Pizza at **one**?']);
  t.same(first.match, [String(first.mid)]);
  t.same(first.reactions, ['pizza']);
  t.equal(first.content, 'Pizza at **one**?');
  t.ok(first.topics.includes(topic));
  firstMsg = first.mid;

  const second = step(t, member2, [
    'POST /messages', 'GET /messages', 'POST /messages/flags', 'POST /messages/flags/narrow', 'POST /mark_topic_as_read', 'POST /mark_stream_as_read', 'POST /mark_all_as_read',
    'POST /user_topics', 'PATCH /users/me/subscriptions/muted_topics', 'DELETE /messages/{message_id}',
  ], `
reply = ok(client.send_message({"type": "stream", "to": ${J(channel)}, "topic": ${J(topic)}, "content": "Yes please"}))["id"]
ok(client.update_message_flags({"messages": [${firstMsg}], "op": "add", "flag": "starred"}))
starred = ok(client.get_messages({"anchor": "newest", "num_before": 10, "num_after": 0, "narrow": [{"operator": "channel", "operand": ${streamId}}, {"operator": "is", "operand": "starred"}]}))["messages"]
ok(client.call_endpoint("messages/flags/narrow", method="POST", request={"anchor": ${firstMsg}, "num_before": 0, "num_after": 0, "narrow": [], "op": "add", "flag": "read"}))
def unread_in(narrow):
    return [m["id"] for m in ok(client.get_messages({"anchor": "newest", "num_before": 20, "num_after": 0, "narrow": narrow + [{"operator": "is", "operand": "unread"}]}))["messages"]]
after_narrow = unread_in([{"operator": "channel", "operand": ${J(channel)}}])
ok(client.send_message({"type": "stream", "to": ${J(channel)}, "topic": "other", "content": "unrelated"}))
ok(client.mark_topic_as_read(${streamId}, ${J(topic)}))
ok(client.mark_stream_as_read(${streamId}))
ok(client.mark_all_as_read())
unread_after = unread_in([{"operator": "channel", "operand": ${J(channel)}}])
ok(client.call_endpoint("user_topics", method="POST", request={"stream_id": ${streamId}, "topic": ${J(topic)}, "visibility_policy": 3}))
ok(client.mute_topic({"stream": ${J(channel)}, "topic": "other", "op": "add"}))
ok(client.mute_topic({"stream": ${J(channel)}, "topic": "other", "op": "remove"}))
followed = [m["id"] for m in ok(client.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": [{"operator": "channel", "operand": ${streamId}}, {"operator": "is", "operand": "followed"}]}))["messages"]]
oops = ok(client.send_message({"type": "stream", "to": ${J(channel)}, "topic": ${J(topic)}, "content": "oops"}))["id"]
ok(client.delete_message(oops))
ids_after = [m["id"] for m in ok(client.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": [{"operator": "channel", "operand": ${J(channel)}}]}))["messages"]]
print(json.dumps({"reply": reply, "starred": [m["id"] for m in starred], "after_narrow": after_narrow, "unread_after": unread_after, "followed": followed, "oops": oops, "ids_after": ids_after}))`);
  t.ok(second.starred.includes(firstMsg), 'the starred message is in is:starred');
  t.notOk(second.after_narrow.includes(firstMsg), 'flags by narrow marked it read');
  t.same(second.unread_after, [], 'nothing in the channel is unread after marking topic, channel and all as read');
  t.ok(second.followed.includes(firstMsg), 'the followed topic is in is:followed');
  t.notOk(second.ids_after.includes(second.oops), 'a deleted message is gone');
});

t.test('python scenario - who read a message (read receipts)', async (t) => {
  // Other suites may turn read receipts off in a shared organization: on for this step, as it was after.
  const before = (await s.api.as(owner).ok('POST', '/register', { fetch_event_types: ['realm'] })).realm_enable_read_receipts as boolean;
  await s.api.as(admin).ok('PATCH', '/realm', { enable_read_receipts: true });
  t.teardown(() => s.api.as(admin).ok('PATCH', '/realm', { enable_read_receipts: before }));
  const out = step(t, member1, ['GET /messages/{message_id}/read_receipts'], `
print(json.dumps(ok(client.call_endpoint("messages/${firstMsg}/read_receipts", method="GET"))["user_ids"]))`);
  t.ok(out.includes(member2.userId), 'the member who marked it read is listed');
  t.notOk(out.includes(member1.userId), 'the sender is not');
});

t.test('python scenario - direct messages, uploads, drafts, snippets, navigation views, alert words, muting', async (t) => {
  const navFragment = `narrow/topic/${uniq('lunch')}`;
  const out = step(t, member1, [
    'POST /user_uploads', 'POST /messages', 'GET /user_uploads/{realm_id}/{dir}/{name}/{filename}', 'GET /attachments', 'DELETE /attachments/{attachment_id}', 'POST /register', 'GET /drafts', 'POST /drafts', 'PATCH /drafts/{draft_id}', 'DELETE /drafts/{draft_id}',
    'GET /saved_snippets', 'POST /saved_snippets', 'PATCH /saved_snippets/{saved_snippet_id}', 'DELETE /saved_snippets/{saved_snippet_id}',
    'GET /navigation_views', 'POST /navigation_views', 'PATCH /navigation_views/{fragment}', 'DELETE /navigation_views/{fragment}',
    'GET /users/me/alert_words', 'POST /users/me/alert_words', 'DELETE /users/me/alert_words',
    'POST /users/me/muted_users/{muted_user_id}', 'DELETE /users/me/muted_users/{muted_user_id}',
  ], `
import io, time
f = io.BytesIO(b"minutes of the lunch meeting\\n")
f.name = "minutes.txt"
up = ok(client.upload_file(f))
uri = up.get("url") or up["uri"]
dm = ok(client.send_message({"type": "private", "to": [${member2.userId}], "content": f"[minutes]({uri})"}))["id"]
body = site_get(uri[1:])
scratch = io.BytesIO(b"scratch")
scratch.name = "scratch.txt"
scratch_path = (lambda u: u.get("url") or u["uri"])(ok(client.upload_file(scratch)))[len("/user_uploads/"):]
listed = ok(client.get_attachments())["attachments"]
aid = [a["id"] for a in listed if a["path_id"] == scratch_path][0]
ok(client.call_endpoint(f"attachments/{aid}", method="DELETE"))
attachment_left = [a["id"] for a in ok(client.call_endpoint("attachments", method="GET"))["attachments"] if a["path_id"] == scratch_path]
ok(client.call_endpoint("drafts", method="POST", request={"drafts": [{"type": "stream", "to": [${streamId}], "topic": ${J(topic)}, "content": "maybe sushi", "timestamp": int(time.time())}]}))
drafts = ok(client.call_endpoint("drafts", method="GET"))["drafts"]
did = [d["id"] for d in drafts if d["content"] == "maybe sushi"][0]
ok(client.call_endpoint(f"drafts/{did}", method="PATCH", request={"draft": {"type": "stream", "to": [${streamId}], "topic": ${J(topic)}, "content": "definitely sushi", "timestamp": int(time.time())}}))
edited = [d["content"] for d in ok(client.call_endpoint("drafts", method="GET"))["drafts"] if d["id"] == did]
ok(client.call_endpoint(f"drafts/{did}", method="DELETE"))
left = [d["id"] for d in ok(client.call_endpoint("drafts", method="GET"))["drafts"]]
snip = ok(client.call_endpoint("saved_snippets", method="POST", request={"title": "order", "content": "One margherita"}))["saved_snippet_id"]
ok(client.call_endpoint(f"saved_snippets/{snip}", method="PATCH", request={"content": "Two margheritas"}))
snips = [x["content"] for x in ok(client.call_endpoint("saved_snippets", method="GET"))["saved_snippets"] if x["id"] == snip]
ok(client.call_endpoint(f"saved_snippets/{snip}", method="DELETE"))
snips_left = [x["id"] for x in ok(client.call_endpoint("saved_snippets", method="GET"))["saved_snippets"]]
ok(client.call_endpoint("navigation_views", method="POST", request={"fragment": ${J(navFragment)}, "is_pinned": True, "name": "Lunch"}))
ok(client.call_endpoint("navigation_views/${navFragment}", method="PATCH", request={"is_pinned": False}))
views = [[v["name"], v["is_pinned"]] for v in ok(client.call_endpoint("navigation_views", method="GET"))["navigation_views"] if v["fragment"] == ${J(navFragment)}]
ok(client.call_endpoint("navigation_views/${navFragment}", method="DELETE"))
views_left = [v["fragment"] for v in ok(client.call_endpoint("navigation_views", method="GET"))["navigation_views"]]
ok(client.add_alert_words(["pizza", "sushi"]))
ok(client.remove_alert_words(["sushi"]))
words = ok(client.get_alert_words())["alert_words"]
ok(client.remove_alert_words(["pizza"]))
ok(client.call_endpoint("users/me/muted_users/${member2.userId}", method="POST"))
muted = [m["id"] for m in ok(client.register(fetch_event_types=["muted_users"]))["muted_users"]]
ok(client.call_endpoint("users/me/muted_users/${member2.userId}", method="DELETE"))
unmuted = [m["id"] for m in ok(client.register(fetch_event_types=["muted_users"]))["muted_users"]]
print(json.dumps({"uri": uri, "dm": dm, "download": [body.status_code, body.text], "attachment_left": attachment_left, "edited": edited, "draft_left": did in left, "snips": snips, "snip_left": snip in snips_left, "views": views, "view_left": ${J(navFragment)} in views_left, "words": words, "muted": muted, "unmuted": unmuted}))`);
  t.match(out.uri, /^\/user_uploads\/\d+\/.+\/minutes\.txt$/);
  t.same(out.download, [200, 'minutes of the lunch meeting\n']);
  t.same(out.attachment_left, [], 'get_attachments, and DELETE /attachments/{id} through call_endpoint');
  t.same(out.edited, ['definitely sushi']);
  t.equal(out.draft_left, false);
  t.same(out.snips, ['Two margheritas']);
  t.same(out.views, [['Lunch', false]], 'a custom navigation view, unpinned through its fragment path');
  t.equal(out.view_left, false);
  t.equal(out.snip_left, false);
  t.same(out.words, ['pizza']);
  t.same(out.muted, [member2.userId]);
  t.same(out.unmuted, []);
  dmMsg = out.dm;

  const seen = step(t, member2, ['GET /user_uploads/{realm_id}/{dir}/{name}/{filename}'], `
r = site_get(${J(out.uri)}[1:])
print(json.dumps([r.status_code, r.text]))`);
  t.same(seen, [200, 'minutes of the lunch meeting\n'], 'the recipient of a linking message may read the file');
  t.ok(dmMsg > 0);
});

t.test('python scenario - a preview rendered, a subscription status, and a temporary file URL', async (t) => {
  const out = step(t, member1, ['POST /messages/render', 'GET /users/{user_id}/subscriptions/{stream_id}', 'GET /users/{user_id}/channels', 'POST /user_uploads', 'GET /user_uploads/{realm_id}/{dir}/{name}/{filename}', 'GET /thumbnail/status/{realm_id}/{dir}/{name}/{filename}', 'GET /streams/{stream_id}/email_address', 'POST /calls/zoom/create', 'POST /calls/bigbluebutton/create', 'POST /calls/constructorgroups/create', 'POST /calls/nextcloud_talk/create', 'POST /users/me/onboarding_steps', 'POST /register'], `
import io
preview = ok(client.render_message({"content": "**town** meeting"}))["rendered"]
channel_email = ok(client.get_stream_email_address(${streamId}))["email"]
zoom = client.call_endpoint("calls/zoom/create", method="POST", request={"is_video_call": False})
bbb = client.call_endpoint("calls/bigbluebutton/create", method="POST", request={"meeting_name": "standup", "voice_only": True})
others = [client.call_endpoint(f"calls/{p}/create", method="POST") for p in ("constructorgroups", "nextcloud_talk")]
ok(client.call_endpoint("users/me/onboarding_steps", method="POST", request={"onboarding_step": "intro_recent_view_modal"}))
steps = [x["name"] for x in ok(client.register(fetch_event_types=["onboarding_steps"]))["onboarding_steps"]]
mine = ok(client.get_subscription_status(user_id=${member2.userId}, stream_id=${streamId}))["is_subscribed"]
their_channels = ok(client.call_endpoint(f"users/${member2.userId}/channels", method="GET"))["subscribed_channel_ids"]
f = io.BytesIO(b"agenda")
f.name = "agenda.txt"
uri = ok(client.upload_file(f))["uri"]
temporary = ok(client.call_endpoint(url=uri[1:], method="GET"))["url"]
thumbnail = ok(client.call_endpoint(url=uri[1:].replace("user_uploads/", "thumbnail/status/", 1), method="GET"))["has_thumbnail"]
print(json.dumps({"preview": preview, "subscribed": mine, "temporary": temporary, "thumbnail": thumbnail, "channel_email": channel_email, "zoom": [zoom["result"], zoom["msg"]], "bbb": [bbb["result"], bbb.get("url", "")], "others": [[x["result"], x["msg"]] for x in others], "steps": steps, "their_channels": their_channels}))`);
  t.equal(out.preview, '<p><strong>town</strong> meeting</p>');
  t.equal(out.channel_email, '', 'get_stream_email_address: no email gateway here');
  t.same(out.zoom, ['error', 'Zoom credentials have not been configured']);
  t.match(out.bbb, ['success', /^\/calls\/bigbluebutton\/join\?bigbluebutton=/], 'a BigBlueButton join link, as Zulip gives it (FL 337)');
  t.same(out.others, [['error', 'Constructor Groups is not configured.'], ['error', 'Nextcloud Talk is not configured.']], 'no Constructor Groups (FL 460) or Nextcloud Talk (FL 465) here');
  t.notOk(out.steps.includes('intro_recent_view_modal'), 'an onboarding step marked through call_endpoint is no longer listed');
  t.equal(out.subscribed, true);
  t.ok(out.their_channels.includes(streamId), 'GET /users/{user_id}/channels lists the channel (FL 440)');
  t.match(out.temporary, /^\/user_uploads\/temporary\/[^/]+\/agenda\.txt$/);
  t.equal(out.thumbnail, false, 'GET /thumbnail/status: no thumbnail is made here (FL 479)');
  await settled();
  const anonymous = await fetch(`${site}${out.temporary}`);
  t.same([anonymous.status, await anonymous.text()], [200, 'agenda'], 'the temporary URL serves the file without credentials');
});

t.test('python scenario - a phone registers its push tokens and removes them (no push service here)', async (t) => {
  const out = step(t, member2, ['POST /users/me/apns_device_token', 'DELETE /users/me/apns_device_token', 'POST /users/me/android_gcm_reg_id', 'DELETE /users/me/android_gcm_reg_id', 'POST /mobile_push/test_notification', 'POST /mobile_push/register', 'POST /mobile_push/e2ee/test_notification', 'POST /register_client_device', 'POST /remove_client_device'], `
apns = {"token": "c0ffee" * 8, "appid": "org.zulip.Zulip"}
ok(client.call_endpoint("users/me/apns_device_token", method="POST", request=apns))
ok(client.call_endpoint("users/me/android_gcm_reg_id", method="POST", request={"token": "fcm-token-of-a-phone"}))
test = client.call_endpoint("mobile_push/test_notification", method="POST", request={})
ok(client.call_endpoint("users/me/apns_device_token", method="DELETE", request={"token": apns["token"]}))
ok(client.call_endpoint("users/me/android_gcm_reg_id", method="DELETE", request={"token": "fcm-token-of-a-phone"}))
gone = client.call_endpoint("users/me/android_gcm_reg_id", method="DELETE", request={"token": "fcm-token-of-a-phone"})
device = client.call_endpoint("register_client_device", method="POST", request={})
ok(device)
e2ee = client.call_endpoint("mobile_push/register", method="POST", request={"device_id": device["device_id"], "token_kind": "fcm", "push_key_id": 7, "push_key": "MQ" + "A" * 42, "token_id": "AAAAAAAAAAE=", "bouncer_public_key": "b" * 44, "encrypted_push_registration": "c" * 64})
e2ee_test = client.call_endpoint("mobile_push/e2ee/test_notification", method="POST", request={})
ok(client.call_endpoint("remove_client_device", method="POST", request={"device_id": device["device_id"]}))
removed = client.call_endpoint("remove_client_device", method="POST", request={"device_id": device["device_id"]})
print(json.dumps({"test": test, "gone": gone, "e2ee": e2ee, "e2ee_test": e2ee_test, "device": device, "removed": removed}))`);
  t.match(out.test, { result: 'error', code: 'PUSH_SERVICE_NOT_CONFIGURED' }, 'a test notification without the push service is refused as a server without push refuses it');
  t.match(out.gone, { result: 'error' }, 'a token removed once is not there to remove again');
  t.match(out.e2ee, { result: 'error', code: 'PUSH_SERVICE_NOT_CONFIGURED' }, 'an end-to-end encrypted registration without the push service: refused the same way');
  t.match(out.e2ee_test, { result: 'error', code: 'PUSH_SERVICE_NOT_CONFIGURED' }, 'so is its test notification');
  t.match(out.device, { result: 'success', device_id: Number }, 'a client device is registered without the service all the same (FL 468)');
  t.match(out.removed, { result: 'error', code: 'BAD_REQUEST', msg: 'Invalid `device_id`' }, 'a device removed once is not there to remove again (FL 470)');
});

t.test('python scenario - scheduled messages, subscriptions, status, presence and settings', async (t) => {
  const out = step(t, member1, [
    'POST /register', 'GET /realm/profile_fields', 'POST /scheduled_messages', 'GET /scheduled_messages', 'PATCH /scheduled_messages/{scheduled_message_id}', 'DELETE /scheduled_messages/{scheduled_message_id}',
    'POST /reminders', 'GET /reminders', 'DELETE /reminders/{reminder_id}', 'POST /messages/{message_id}/report',
    'GET /users/me/subscriptions', 'POST /users/me/subscriptions/properties', 'POST /users/me/subscriptions/{stream_id}', 'DELETE /users/me/subscriptions',
    'POST /users/me/status', 'GET /users/{user_id}/status', 'POST /users/me/presence', 'GET /realm/presence', 'GET /users/{user_id_or_email}/presence',
    'PATCH /settings', 'PATCH /settings/display', 'PATCH /settings/notifications', 'PATCH /users/me/profile_data', 'GET /users/me',
    'GET /users', 'GET /users/{user_id}', 'GET /events', 'DELETE /events',
  ], `
import time
q = ok(client.register(event_types=["subscription", "user_settings", "update_display_settings"]))
when = int(time.time()) + 3600
sched = ok(client.call_endpoint("scheduled_messages", method="POST", request={"type": "stream", "to": ${streamId}, "topic": ${J(topic)}, "content": "Reminder: lunch", "scheduled_delivery_timestamp": when}))["scheduled_message_id"]
ok(client.call_endpoint(f"scheduled_messages/{sched}", method="PATCH", request={"content": "Reminder: lunch at one"}))
scheduled = [m["content"] for m in ok(client.call_endpoint("scheduled_messages", method="GET"))["scheduled_messages"] if m["scheduled_message_id"] == sched]
ok(client.call_endpoint(f"scheduled_messages/{sched}", method="DELETE"))
sched_left = [m["scheduled_message_id"] for m in ok(client.call_endpoint("scheduled_messages", method="GET"))["scheduled_messages"]]
remind = ok(client.call_endpoint("reminders", method="POST", request={"message_id": ${firstMsg}, "scheduled_delivery_timestamp": when, "note": "bring forks"}))["reminder_id"]
reminded = [r["reminder_target_message_id"] for r in ok(client.call_endpoint("reminders", method="GET"))["reminders"] if r["reminder_id"] == remind]
ok(client.call_endpoint(f"reminders/{remind}", method="DELETE"))
remind_left = [r["reminder_id"] for r in ok(client.call_endpoint("reminders", method="GET"))["reminders"]]
report = client.call_endpoint(f"messages/${firstMsg}/report", method="POST", request={"report_type": "spam"})

ok(client.update_subscription_settings([{"stream_id": ${streamId}, "property": "pin_to_top", "value": True}]))
ok(client.call_endpoint("users/me/subscriptions/${streamId}", method="POST", request={"property": "color", "value": "#76ce90"}))
sub = [x for x in ok(client.get_subscriptions())["subscriptions"] if x["stream_id"] == ${streamId}][0]
ok(client.remove_subscriptions([${J(side)}]))
still = [x["stream_id"] for x in ok(client.list_subscriptions())["subscriptions"]]

ok(client.call_endpoint("users/me/status", method="POST", request={"status_text": "At lunch", "emoji_name": "pizza"}))
status = ok(client.call_endpoint("users/${member1.userId}/status", method="GET"))["status"]
pres = ok(client.update_presence({"status": "active", "ping_only": False, "new_user_input": True}))
realm_pres = ok(client.get_realm_presence())["presences"]
mine = ok(client.get_user_presence(${J(member1.email)}))["presence"]

prev = ok(client.register(fetch_event_types=["user_settings"]))["user_settings"]
ok(client.call_endpoint("settings", method="PATCH", request={"enter_sends": not prev["enter_sends"]}))
ok(client.call_endpoint("settings/display", method="PATCH", request={"color_scheme": 3 if prev["color_scheme"] == 2 else 2}))
ok(client.update_notification_settings({"enable_sounds": not prev["enable_sounds"]}))
now = ok(client.register(fetch_event_types=["user_settings"]))["user_settings"]
changed = [k for k in ("enter_sends", "color_scheme", "enable_sounds") if now[k] != prev[k]]
ok(client.call_endpoint("settings", method="PATCH", request={k: prev[k] for k in ("enter_sends", "color_scheme", "enable_sounds")}))
fields = [f for f in ok(client.get_realm_profile_fields())["custom_fields"] if f["type"] == 1]
ok(client.call_endpoint("users/me/profile_data", method="PATCH", request={"data": [{"id": fields[0]["id"], "value": "Kitchen"}]}))
me = ok(client.get_profile())
me_full = ok(client.get_user_by_id(${member1.userId}, include_custom_profile_fields=True))["user"]
everyone = [u["user_id"] for u in ok(client.get_users())["members"]]
events = ok(client.get_events(queue_id=q["queue_id"], last_event_id=q["last_event_id"], dont_block=True))["events"]
ok(client.deregister(q["queue_id"]))
ok(client.call_endpoint("users/me/status", method="POST", request={"status_text": "", "emoji_name": ""}))
gone = client.get_events(queue_id=q["queue_id"], last_event_id=q["last_event_id"], dont_block=True)
print(json.dumps({"scheduled": scheduled, "sched_left": sched in sched_left, "reminded": reminded, "remind_left": remind in remind_left, "report": report, "pinned": sub["pin_to_top"], "color": sub["color"], "side_left": ${sideId} in still,
  "status": status, "realm_pres": ${J(member1.email)} in realm_pres, "mine": list(mine.keys()), "me": me["user_id"], "profile": me_full["profile_data"].get(str(fields[0]["id"]), {}).get("value"),
  "everyone": ${member2.userId} in everyone, "changed": changed, "event_types": sorted(set(e["type"] for e in events)), "gone": gone.get("code")}))`);
  t.same(out.scheduled, ['Reminder: lunch at one']);
  t.equal(out.sched_left, false);
  t.same(out.reminded, [firstMsg], 'a reminder of the first message, listed with its target (FL 381, 399)');
  t.equal(out.remind_left, false, 'deleted');
  t.match(out.report, { result: 'error', msg: 'Message reporting is not enabled in this organization.' }, 'a report where the organization has no moderation channel (FL 382)');
  t.equal(out.pinned, true);
  t.equal(out.color, '#76ce90');
  t.equal(out.side_left, false, 'unsubscribed from the side channel');
  t.match(out.status, { status_text: 'At lunch', emoji_name: 'pizza' });
  t.equal(out.realm_pres, true);
  t.ok(out.mine.includes('aggregated'), JSON.stringify(out.mine));
  t.equal(out.me, member1.userId);
  t.equal(out.profile, 'Kitchen');
  t.equal(out.everyone, true);
  t.same(out.changed, ['enter_sends', 'color_scheme', 'enable_sounds'], 'each settings route changed its setting');
  t.ok(out.event_types.includes('subscription') && out.event_types.includes('user_settings'), JSON.stringify(out.event_types));
  t.equal(out.gone, 'BAD_EVENT_QUEUE_ID');
});

t.test('python scenario - people: invitations, new members, keys, leaving', async (t) => {
  const tag = uniq('pyp').slice(-8);
  const email = `py-newcomer-${tag}@parley.example`;
  const password = `pw-${tag}-long-enough`;
  const byOwner = step(t, owner, [
    'POST /invites', 'POST /invites/multiuse', 'GET /invites', 'POST /invites/{invite_id}/resend', 'DELETE /invites/{invite_id}', 'DELETE /invites/multiuse/{invite_id}',
    'GET /server_settings', 'POST /users', 'PATCH /users/{user_id}', 'GET /users/{user_id}', 'DELETE /users/{user_id}', 'POST /users/{user_id}/reactivate', 'POST /fetch_api_key', 'POST /jwt/fetch_api_key',
    'POST /calls/videoprovider/register', 'POST /calls/videoprovider/create', 'POST /users/{user_id}/status', 'GET /users/{user_id}/status', 'POST /realm/test_welcome_bot_custom_message',
  ], `
invitee = ${J(`py-invitee-${tag}@invitee.example`)}
ok(client.call_endpoint("invites", method="POST", request={"invitee_emails": invitee, "stream_ids": [${streamId}]}))
link = ok(client.call_endpoint("invites/multiuse", method="POST", request={"stream_ids": [${streamId}], "invite_expires_in_minutes": 60}))["invite_link"]
invites = ok(client.call_endpoint("invites", method="GET"))["invites"]
inv = [i for i in invites if i.get("email") == invitee][0]
multi = [i for i in invites if i["is_multiuse"] and i.get("link_url") == link][0]
ok(client.call_endpoint(f"invites/{inv['id']}/resend", method="POST"))
ok(client.call_endpoint(f"invites/{inv['id']}", method="DELETE"))
ok(client.call_endpoint(f"invites/multiuse/{multi['id']}", method="DELETE"))
left = [i["id"] for i in ok(client.call_endpoint("invites", method="GET"))["invites"]]

uid = ok(client.create_user({"email": ${J(email)}, "password": ${J(password)}, "full_name": "Py Newcomer"}))["user_id"]
ok(client.update_user_by_id(uid, full_name="Py Newcomer Renamed"))
ok(client.deactivate_user_by_id(uid))
inactive = ok(client.get_user_by_id(uid))["user"]["is_active"]
ok(client.reactivate_user_by_id(uid))
ok(client.call_endpoint(f"users/{uid}/status", method="POST", request={"status_text": "Set by an administrator"}))
set_status = ok(client.call_endpoint(f"users/{uid}/status", method="GET"))["status"]
welcome_test = ok(client.call_endpoint("realm/test_welcome_bot_custom_message", method="POST", request={"welcome_message_custom_text": "Welcome, from Python"}))["message_id"]
anon = zulip.Client(email=${J(email)}, api_key="x" * 32, site=client.base_url[:-len("/api/")])
key = ok(anon.call_endpoint("fetch_api_key", method="POST", request={"username": ${J(email)}, "password": ${J(password)}}))["api_key"]
jwt = anon.call_endpoint("jwt/fetch_api_key", method="POST", request={"token": ${J(await new SignJWT({ email: member2.email }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode(JWT_SECRET)))}, "include_profile": True})
video = [client.call_endpoint("calls/videoprovider/register", method="POST"), client.call_endpoint("calls/videoprovider/create", method="POST")]
print(json.dumps({"left": [inv["id"] in left, multi["id"] in left], "uid": uid, "inactive": inactive, "key": key, "jwt": jwt, "video": [[v["result"], v.get("msg")] for v in video], "set_status": set_status, "welcome_test": welcome_test}))`);
  t.same(byOwner.left, [false, false], 'revoked invitations are gone');
  t.same(byOwner.set_status, { status_text: 'Set by an administrator' }, 'an administrator set the newcomer\'s status (FL 407)');
  t.type(byOwner.welcome_test, 'number', 'Welcome Bot sent the test message (FL 416)');
  t.equal(byOwner.inactive, false);
  t.match(byOwner.key, /^[A-Za-z0-9]{32}$/);
  if (cluster && byOwner.jwt.result === 'error') t.match(byOwner.jwt, { msg: /JWT authentication is not enabled/ });
  else t.match(byOwner.jwt, { result: 'success', user: { user_id: member2.userId } });
  // The server this file starts has no video provider: both answer so (test/video_calls.test.ts runs the OAuth step with one).
  // A shared cluster may be configured otherwise; there each answers in the envelope.
  const unconfigured = ['error', 'videoprovider credentials have not been configured'];
  if (!cluster) t.same(byOwner.video, [unconfigured, unconfigured]);
  else for (const [result, msg] of byOwner.video) t.ok(result === 'success' || typeof msg === 'string', `video call routes answer: ${result} ${msg}`);

  const newcomer = { email, apiKey: byOwner.key as string };
  const left = step(t, newcomer, ['GET /server_settings', 'GET /users/me', 'POST /users/me/api_key/regenerate', 'DELETE /users/me'], `
renamed = ok(client.get_profile())["full_name"]
new_key = ok(client.call_endpoint("users/me/api_key/regenerate", method="POST"))["api_key"]
again = zulip.Client(email=${J(email)}, api_key=new_key, site=client.base_url[:-len("/api/")])
old = client.get_profile()
ok(again.call_endpoint("users/me", method="DELETE"))
after = again.get_profile()
print(json.dumps({"renamed": renamed, "old": old.get("code"), "after": after.get("code")}))`);
  t.equal(left.renamed, 'Py Newcomer Renamed');
  t.equal(left.old, 'UNAUTHORIZED', 'the old key stops working');
  t.equal(left.after, 'USER_DEACTIVATED', 'a member who left cannot call the API');
});

t.test('python scenario - a member adds a bot, which posts in the channel', async (t) => {
  const short = uniq('pybot').slice(-10).replace(/[^a-z0-9]/g, '');
  const out = step(t, member1, ['POST /bots', 'PATCH /bots/{bot_id}', 'GET /bots', 'GET /bots/{bot_id}/api_key', 'GET /server_settings', 'POST /messages', 'GET /messages', 'PUT /bot_storage', 'GET /bot_storage', 'DELETE /bot_storage'], `
made = ok(client.call_endpoint("bots", method="POST", request={"full_name": "Lunch Bot ${short}", "short_name": ${J(short)}}))
renamed = ok(client.call_endpoint(f"bots/{made['user_id']}", method="PATCH", request={"full_name": "Lunch Bot ${short} Renamed"}))["full_name"]
mine = [b for b in ok(client.call_endpoint("bots", method="GET"))["bots"] if b["user_id"] == made["user_id"]][0]
key = ok(client.call_endpoint(f"bots/{made['user_id']}/api_key", method="GET"))["api_key"]
bot = zulip.Client(email=mine["username"], api_key=key, site=client.base_url[:-len("/api/")])
posted = ok(bot.send_message({"type": "stream", "to": ${J(channel)}, "topic": "menu", "content": "Today: soup"}))["id"]
seen = ok(client.get_messages({"anchor": posted, "num_before": 0, "num_after": 0, "apply_markdown": False}))["messages"][0]
# The bot keeps state between runs in its storage (FL 494: bots only).
ok(bot.update_storage({"storage": {"menu": "soup", "day": "monday"}}))
stored = ok(bot.get_storage())["storage"]
ok(bot.call_endpoint("bot_storage", method="DELETE", request={"keys": ["day"]}))
kept = ok(bot.get_storage({"keys": ["menu"]}))["storage"]
print(json.dumps({"bot": made["user_id"], "owner": mine["owner_id"], "type": mine["bot_type"], "sender": seen["sender_id"], "content": seen["content"], "renamed": renamed, "name": mine["full_name"], "stored": stored, "kept": kept}))`);
  t.same([out.owner, out.type], [member1.userId, 1], 'listed as the member\'s generic bot');
  t.same([out.renamed, out.name], [`Lunch Bot ${short} Renamed`, `Lunch Bot ${short} Renamed`], 'its owner renamed it (PATCH /bots/{bot_id})');
  t.same([out.sender, out.content], [out.bot, 'Today: soup'], 'the bot posts with the key GET /bots/{bot_id}/api_key gave (FL 463)');
  t.same([out.stored, out.kept], [{ menu: 'soup', day: 'monday' }, { menu: 'soup' }], 'update_storage and get_storage keep the bot\'s state; a DELETE of a key removes it');
});

t.test('python scenario - a listener gets each message as it comes (call_on_each_message)', async (t) => {
  const out = step(t, member1, ['GET /server_settings', 'POST /register', 'GET /events', 'POST /messages'], `
import threading
class Done(Exception):
    pass
got = []
def on_message(m):
    got.append([m["sender_id"], m["content"]])
    raise Done()
mateo = zulip.Client(email=${J(member2.email)}, api_key=${J(member2.apiKey)}, site=client.base_url[:-len("/api/")])
# Sent once the listener's long poll is waiting (the listener registers first).
threading.Timer(1.0, lambda: ok(mateo.send_message({"type": "private", "to": [${member1.userId}], "content": "are you there?"}))).start()
try:
    client.call_on_each_message(on_message)
except Done:
    pass
print(json.dumps(got))`);
  t.same(out, [[member2.userId, 'are you there?']], 'register without apply_markdown: the source text');
});

t.test('python scenario - the owner moves a topic and archives the channels', async (t) => {
  const out = step(t, owner, ['GET /get_stream_id', 'GET /messages', 'PATCH /messages/{message_id}', 'GET /users', 'DELETE /streams/{stream_id}', 'GET /streams', 'DELETE /realm/filters/{filter_id}', 'DELETE /realm/profile_fields/{field_id}', 'POST /user_groups/{user_group_id}/deactivate', 'POST /streams/{stream_id}/delete_topic', 'POST /realm/deactivate'], `
ok(client.move_topic(${J(channel)}, ${J(side)}, "other", new_topic="moved here"))
def in_moved():
    return ok(client.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0, "apply_markdown": False, "narrow": [{"operator": "channel", "operand": ${sideId}}, {"operator": "topic", "operand": "moved here"}]}))["messages"]
moved = [[m["sender_id"], m["sender_email"], m["content"]] for m in in_moved()]
notice = [m["content"] for m in ok(client.get_messages({"anchor": "newest", "num_before": 5, "num_after": 0, "apply_markdown": False, "narrow": [{"operator": "channel", "operand": ${streamId}}, {"operator": "topic", "operand": "other"}]}))["messages"]]
deleted = ok(client.call_endpoint("streams/${sideId}/delete_topic", method="POST", request={"topic_name": "moved here"}))["complete"]
left = in_moved()
members = [u["user_id"] for u in ok(client.get_members({"user_ids": [${member1.userId}]}))["members"]]
ok(client.delete_stream(${sideId}))
ok(client.delete_stream(${streamId}))
# What else the scenario made, so the shared organization of the cluster run keeps no trace of it.
ok(client.remove_realm_filter(${linkifierId}))
ok(client.remove_realm_profile_field(${fieldId}))
ok(client.call_endpoint("user_groups/${groupId}/deactivate", method="POST"))
active = [x["stream_id"] for x in ok(client.get_streams())["streams"]]
# Deactivating the organization, asked with a deletion delay below the server's minimum: refused, nothing happens (FL 332).
too_soon = client.call_endpoint("realm/deactivate", method="POST", request={"deletion_delay_days": 1})
print(json.dumps({"too_soon": [too_soon["result"], too_soon["msg"]], "moved": moved, "notice": notice, "deleted": deleted, "left": left, "members": members, "active": [${sideId} in active, ${streamId} in active]}))`);
  t.same([out.moved[0].slice(0, 1), out.moved[0][2], out.moved[1]?.[1]], [[member2.userId], 'unrelated', 'notification-bot@zulip.com'], 'move_topic moved the topic to the other channel, renamed; Notification Bot said so there');
  t.match(out.notice, [/^This topic was moved to #\*\*.*>moved here\*\* by @_\*\*/], 'and in the old thread (move_topic asks for both notices)');
  t.same([out.deleted, out.left], [true, []], 'delete_topic deleted the topic');
  t.same(out.members, [member1.userId]);
  t.same(out.active, [false, false]);
  t.same(out.too_soon, ['error', 'Data deletion time must be at least 14 days in the future.'], 'POST /realm/deactivate refuses a deletion delay below the minimum');
});

/** The Python client's methods whose routes this server does not have, with the route each calls. */
const NO_ROUTE_HERE: Record<string, [route: string, why: string]> = {
  remove_user_group: ['DELETE /user_groups/{user_group_id}', 'gone from Zulip: groups are deactivated (called above)'],
};

t.test('python scenario - client methods with no route here are skipped', async (t) => {
  const all = new Set(ROUTES.map((r) => `${r.method} ${r.path}`));
  for (const [method, [route, why]] of Object.entries(NO_ROUTE_HERE)) {
    // Once the route exists, the method belongs in the scenario.
    t.notOk(all.has(route), `${method}: ${route} is still not served`);
    t.pass(`${method} (${route})`, { skip: why });
  }
});

t.test('python scenario - every route was called through the Python client', async (t) => {
  const all = ROUTES.map((r) => `${r.method} ${r.path}`);
  const unknown = [...called].filter((r) => !all.includes(r));
  t.same(unknown, [], 'the steps name only routes the server has');
  const missing = all.filter((r) => !called.has(r));
  t.same(missing, [], `routes the scenario did not call: ${missing.join(', ')}`);
  t.comment(`${all.length - missing.length} of ${all.length} routes called through the Python client`);
});
