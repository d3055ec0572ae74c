// Channel folders over HTTP (FL 389): who may create and change them, their
// limits and errors, folder_id on channels, and the channel_folder events.
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { runPython } from './helpers/python.ts';
import { asRoles, isError } from './helpers/roles.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);

t.test('channel folders - create by role', async (t) => {
  for (const [role, api] of asRoles(s)) {
    const r = await api.post('/channel_folders/create', { name: uniq(role), description: '' });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.type(r.body.channel_folder_id, 'number', `${role} creates`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, role);
  }
});

t.test('channel folders - names, descriptions and their limits', async (t) => {
  const name = uniq('Backend');
  const { channel_folder_id: id } = await admin.ok('POST', '/channel_folders/create', { name: `  ${name}  `, description: 'Server **side**' });
  const got = (await maria.ok('GET', '/channel_folders')).channel_folders.find((f: any) => f.id === id);
  t.match(got, { name, description: 'Server **side**', rendered_description: '<p>Server <strong>side</strong></p>', creator_id: s.demo.admin.userId, is_archived: false });
  const cases: Array<[Record<string, any>, RegExp]> = [
    [{ name: '', description: '' }, /can't be empty/],
    [{ name: 'x'.repeat(61), description: '' }, /too long/],
    [{ name: uniq('d'), description: 'd'.repeat(1025) }, /description too long/],
    [{ name: name.toUpperCase(), description: '' }, /already in use/],
    [{ name: uniq('n') }, /Missing 'description'/],
    [{ description: 'x' }, /Missing 'name'/],
  ];
  // A missing parameter is Zulip's REQUEST_VARIABLE_MISSING; every other refusal BAD_REQUEST.
  for (const [params, msg] of cases) isError(t, await admin.post('/channel_folders/create', params), 400, /Missing '/.test(msg.source) ? 'REQUEST_VARIABLE_MISSING' : 'BAD_REQUEST', msg, JSON.stringify(params).slice(0, 50));
});

t.test('channel folders - update, archive, reorder; channels in folders', async (t) => {
  const a = (await admin.ok('POST', '/channel_folders/create', { name: uniq('A'), description: '' })).channel_folder_id;
  const b = (await admin.ok('POST', '/channel_folders/create', { name: uniq('B'), description: '' })).channel_folder_id;
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', `/channel_folders/${a}`, { description: role });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} updates`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', undefined, role);
  }
  const ch = uniq('in-folder');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: ch }] });
  const { stream_id } = await owner.ok('GET', '/get_stream_id', { stream: ch });
  await owner.ok('PATCH', `/streams/${stream_id}`, { folder_id: a });
  t.equal((await owner.ok('GET', `/streams/${stream_id}`)).stream.folder_id, a);
  isError(t, await admin.call('PATCH', `/channel_folders/${a}`, { is_archived: true }), 400, 'BAD_REQUEST', /remove all the channels/);
  await owner.ok('PATCH', `/streams/${stream_id}`, { folder_id: null });
  await admin.ok('PATCH', `/channel_folders/${a}`, { is_archived: true, name: uniq('A2') });
  t.notOk((await maria.ok('GET', '/channel_folders')).channel_folders.some((f: any) => f.id === a), 'archived folders are left out by default');
  t.ok((await maria.ok('GET', '/channel_folders', { include_archived: true })).channel_folders.some((f: any) => f.id === a && f.is_archived));
  isError(t, await admin.call('PATCH', '/channel_folders/987654', { name: 'x' }), 400, 'BAD_REQUEST', /Invalid channel folder ID/);
  isError(t, await admin.call('PATCH', `/channel_folders/${b}`, {}), 400, 'BAD_REQUEST', /No fields/);
  isError(t, await admin.call('PATCH', `/channel_folders/${b}`, { name: '' }), 400, 'BAD_REQUEST', /can't be empty/);
  const all = (await admin.ok('GET', '/channel_folders', { include_archived: true })).channel_folders.map((f: any) => f.id);
  const reversed = [...all].reverse();
  await admin.ok('PATCH', '/channel_folders', { order: reversed });
  t.same((await admin.ok('GET', '/channel_folders', { include_archived: true })).channel_folders.map((f: any) => f.id), reversed);
  isError(t, await admin.call('PATCH', '/channel_folders', { order: reversed.slice(1) }), 400, 'BAD_REQUEST', /Invalid order mapping/);
  isError(t, await maria.call('PATCH', '/channel_folders', { order: reversed }), 400, 'UNAUTHORIZED_PRINCIPAL');
});

t.test('channel folders - snapshot plus channel_folder events equals a fresh register', async (t) => {
  const FETCH = { fetch_event_types: ['channel_folders'] };
  const q = await register(maria, FETCH);
  const snap = structuredClone(q.snapshot);
  const id = (await admin.ok('POST', '/channel_folders/create', { name: uniq('S'), description: 'd' })).channel_folder_id;
  await admin.ok('PATCH', `/channel_folders/${id}`, { description: 'new *text*', name: uniq('S2') });
  const order = (await admin.ok('GET', '/channel_folders', { include_archived: true })).channel_folders.map((f: any) => f.id).reverse();
  await admin.ok('PATCH', '/channel_folders', { order });
  await admin.ok('PATCH', `/channel_folders/${id}`, { is_archived: true });
  const seen: string[] = [];
  await waitFor(q, (e) => (seen.push(e.op), applyEvent(snap, e), e.op === 'update' && e.data.is_archived === true));
  t.same(seen, ['add', 'update', 'reorder', 'update']);
  t.same(snap.channel_folders, (await register(maria, FETCH)).snapshot.channel_folders);
});

t.test('python client - channel folders', async (t) => {
  const out = runPython(s.urls[0]!, s.demo.admin, `
# zulip 0.9.1 predates channel folders: call_endpoint reaches them.
c = client.call_endpoint("channel_folders/create", method="POST", request={"name": ${JSON.stringify(uniq('py'))}, "description": "from python"})
u = client.call_endpoint(f"channel_folders/{c['channel_folder_id']}", method="PATCH", request={"description": "edited"})
l = client.call_endpoint("channel_folders", method="GET")
print(json.dumps({"c": c["result"], "u": u["result"], "d": [f["description"] for f in l["channel_folders"] if f["id"] == c["channel_folder_id"]]}))`) as Record<string, any>;
  t.same(out, { c: 'success', u: 'success', d: ['edited'] });
});
