// The official Python client (zulip 0.9.1), unchanged, for the people
// operations: its own methods where it has them, call_endpoint for the rest.
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { newPerson } from './helpers/people.ts';
import { runPython } from './helpers/python.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const site = s.urls[0]!;

t.test('python client - profile, users by ID, update and deactivate a user', async (t) => {
  const target = await newPerson(s);
  const out = runPython(site, s.demo.owner, `
me = client.get_profile()
them = client.get_user_by_id(${target.userId}, include_custom_profile_fields=True)
renamed = client.update_user_by_id(${target.userId}, full_name="Renamed From Python", role=300)
after = client.get_user_by_id(${target.userId})
deactivated = client.deactivate_user_by_id(${target.userId})
gone = client.get_user_by_id(${target.userId})
back = client.reactivate_user_by_id(${target.userId})
members = client.get_members({"user_ids": [${target.userId}]})
print(json.dumps({"me": me, "them": them["user"], "renamed": renamed, "after": after["user"], "deactivated": deactivated["result"], "gone": gone["user"]["is_active"], "back": back["result"], "members": members["members"]}))`) as Record<string, any>;
  t.equal(out.me.user_id, s.demo.owner.userId);
  t.equal(out.me.role, 100);
  t.equal(out.them.email, target.email);
  t.type(out.them.profile_data, 'object');
  t.equal(out.renamed.result, 'success');
  t.same([out.after.full_name, out.after.role], ['Renamed From Python', 300]);
  t.equal(out.deactivated, 'success');
  t.equal(out.gone, false);
  t.equal(out.back, 'success');
  t.equal(out.members[0].is_active, true);
});

t.test('python client - user groups: create, list, members, update', async (t) => {
  const name = `py ${uniq('g').slice(-8)}`;
  const out = runPython(site, s.demo.member1, `
created = client.create_user_group({"name": ${JSON.stringify(name)}, "description": "from python", "members": [${s.demo.member1.userId}]})
groups = client.get_user_groups()["user_groups"]
gid = [g["id"] for g in groups if g["name"] == ${JSON.stringify(name)}][0]
added = client.update_user_group_members(gid, {"add": [${s.demo.member2.userId}]})
updated = client.update_user_group({"group_id": gid, "description": "updated"})
members = client.call_endpoint(f"user_groups/{gid}/members", method="GET")
deactivated = client.call_endpoint(f"user_groups/{gid}/deactivate", method="POST")
print(json.dumps({"created": created, "gid": gid, "added": added["result"], "updated": updated, "members": members["members"], "deactivated": deactivated["result"]}))`) as Record<string, any>;
  t.equal(out.created.result, 'success');
  t.equal(out.created.group_id, out.gid);
  t.equal(out.added, 'success');
  t.equal(out.updated.result, 'success');
  t.same(out.updated.ignored_parameters_unsupported, ['group_id'], 'the client also sends the group ID as a parameter');
  t.same(out.members, [s.demo.member1.userId, s.demo.member2.userId].sort((a, b) => a - b));
  t.equal(out.deactivated, 'success');
});

t.test('python client - settings, status, profile fields and API keys through call_endpoint', async (t) => {
  const person = await newPerson(s);
  const out = runPython(site, { email: person.email, apiKey: person.apiKey }, `
settings = client.call_endpoint("settings", method="PATCH", request={"web_home_view": "recent", "enter_sends": True})
status = client.call_endpoint("users/me/status", method="POST", request={"status_text": "Busy", "emoji_name": "car"})
mine = client.call_endpoint("users/${person.userId}/status", method="GET")
fields = client.call_endpoint("realm/profile_fields", method="GET")
state = client.register(fetch_event_types=["user_settings"])
fetched = client.call_endpoint("fetch_api_key", method="POST", request={"username": ${JSON.stringify(person.email)}, "password": ${JSON.stringify(person.password)}})
print(json.dumps({"settings": settings["result"], "status": status["result"], "mine": mine["status"], "fields": fields["result"], "home": state["user_settings"]["web_home_view"], "key": fetched.get("api_key", "")}))`) as Record<string, any>;
  t.equal(out.settings, 'success');
  t.equal(out.status, 'success');
  t.same(out.mine, { status_text: 'Busy', emoji_name: 'car', emoji_code: '1f697', reaction_type: 'unicode_emoji' });
  t.equal(out.fields, 'success');
  t.equal(out.home, 'recent');
  t.match(out.key, /^[A-Za-z0-9]{32}$/);
});
