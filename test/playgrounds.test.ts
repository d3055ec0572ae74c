// Code playgrounds over HTTP (FL 49): administrators add and remove them, with
// Zulip's checks; every user gets the whole list in realm_playgrounds at
// register and in realm_playgrounds events; the Python client through
// call_endpoint (it has no method for them).
import t from 'tap';
import { uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { runPython } from './helpers/python.ts';
import { asRoles, isError } from './helpers/roles.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const admin = s.api.as(s.demo.admin);
const maria = s.api.as(s.demo.member1);
const guest = s.api.as(s.demo.guest);
const FETCH = { fetch_event_types: ['realm_playgrounds'], event_types: ['realm_playgrounds'] };

/** A playground unique to this run (tests sharing an organization do not collide on name and language). */
const playground = (over: Record<string, string | undefined> = {}): Record<string, string | undefined> => ({ name: uniq('Play'), pygments_language: 'python', url_template: 'https://play.example/?code={code}', ...over });
const listed = async (id: number) => ((await maria.ok('POST', '/register', { fetch_event_types: ['realm_playgrounds'] })).realm_playgrounds as Array<{ id: number; url_template: string }>).find((p) => p.id === id);

t.test('playgrounds - add and remove by role', async (t) => {
  for (const [role, api] of asRoles(s)) {
    const r = await api.post('/realm/playgrounds', playground());
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') {
      t.type(r.body.id, 'number', `${role} adds one`);
      await admin.ok('DELETE', `/realm/playgrounds/${r.body.id}`);
    } else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, role);
  }
  const { id } = await admin.ok('POST', '/realm/playgrounds', playground());
  for (const [role, api] of asRoles(s)) {
    if (role === 'owner' || role === 'admin') continue;
    const r = await api.delete(`/realm/playgrounds/${id}`);
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, role);
  }
  t.ok(await listed(id), 'still there after every refused removal');
  await s.api.as(s.demo.owner).ok('DELETE', `/realm/playgrounds/${id}`);
  t.notOk(await listed(id), 'an owner removed it');
  isError(t, await admin.delete(`/realm/playgrounds/${id}`), 400, 'BAD_REQUEST', /^Invalid playground$/, 'removed twice');
});

t.test('playgrounds - names, languages and URL templates are checked', async (t) => {
  const cases: Array<[Record<string, string | undefined>, RegExp, string?]> = [
    [playground({ name: '   ' }), /^This field cannot be blank\.$/],
    [playground({ pygments_language: '' }), /^This field cannot be blank\.$/],
    [playground({ pygments_language: 'py thon' }), /^Invalid characters in pygments language$/],
    [playground({ pygments_language: 'x'.repeat(41) }), /^pygments_language is too long \(limit: 40 characters\)$/],
    [playground({ url_template: 'https://play.example/{code' }), /^Invalid URL template\.$/],
    [playground({ url_template: 'not a url {code}' }), /^Invalid URL template\.$/],
    [playground({ url_template: 'https://play.example/{snippet}' }), /^Missing the required variable "code" in the URL template$/],
    [playground({ url_template: 'https://play.example/{code}/{lang}' }), /^"code" should be the only variable present in the URL template$/],
    [playground({ url_template: undefined }), /^Missing 'url_template' argument$/, 'REQUEST_VARIABLE_MISSING'],
    [{ pygments_language: 'python', url_template: 'https://play.example/{code}' }, /^Missing 'name' argument$/, 'REQUEST_VARIABLE_MISSING'],
  ];
  for (const [params, msg, code = 'BAD_REQUEST'] of cases) isError(t, await admin.post('/realm/playgrounds', params), 400, code, msg, JSON.stringify(params).slice(0, 80));
  const bad = await admin.post('/realm/playgrounds', playground({ url_template: 'https://play.example/{snippet}' }));
  t.same(bad.body.errors, { __all__: ['Missing the required variable "code" in the URL template'] }, 'errors by field, as Zulip gives them');
  const p = playground({ name: `  ${uniq('Trim')}  `, pygments_language: ' Rust ' });
  const { id } = await admin.ok('POST', '/realm/playgrounds', p);
  t.same(await listed(id), { id, name: (p.name as string).trim(), pygments_language: 'Rust', url_template: p.url_template }, 'name and language are trimmed');
  isError(t, await admin.post('/realm/playgrounds', { ...p, url_template: 'https://other.example/{code}' }), 400, 'BAD_REQUEST', /already exists/, 'the same name and language twice');
  const other = await admin.ok('POST', '/realm/playgrounds', { ...p, pygments_language: 'C++' });
  t.type(other.id, 'number', 'the same name for another language');
  const legacy = await admin.ok('POST', '/realm/playgrounds', { name: uniq('Old'), pygments_language: 'c', url_prefix: 'https://old.example/?run=' });
  t.equal((await listed(legacy.id))?.url_template, 'https://old.example/?run={code}', 'url_prefix, the name before FL 196, becomes <prefix>{code}');
  for (const x of [id, other.id, legacy.id]) await admin.ok('DELETE', `/realm/playgrounds/${x}`);
});

t.test('playgrounds - every user gets the list and its events; snapshot plus events equals a fresh register', async (t) => {
  const queues = await Promise.all([maria, guest, admin].map((api) => register(api, FETCH)));
  const snaps = queues.map((q) => structuredClone(q.snapshot)) as Array<Record<string, any>>;
  const a = await admin.ok('POST', '/realm/playgrounds', playground({ pygments_language: 'javascript' }));
  const b = await admin.ok('POST', '/realm/playgrounds', playground({ pygments_language: 'haskell' }));
  await admin.ok('DELETE', `/realm/playgrounds/${a.id}`);
  for (const [i, q] of queues.entries()) {
    let n = 0;
    await waitFor(q, (e) => (applyEvent(snaps[i]!, e), ++n === 3));
    const fresh = (await register([maria, guest, admin][i]!, FETCH)).snapshot.realm_playgrounds;
    t.same(snaps[i]!.realm_playgrounds, fresh, `user ${i}: snapshot plus events`);
    t.ok(fresh.some((p: any) => p.id === b.id) && !fresh.some((p: any) => p.id === a.id));
  }
  await admin.ok('DELETE', `/realm/playgrounds/${b.id}`);
});

t.test('python client - code playgrounds through call_endpoint', async (t) => {
  const name = uniq('Py');
  const out = runPython(s.urls[0]!, s.demo.admin, `
added = client.call_endpoint("realm/playgrounds", method="POST", request={"name": ${JSON.stringify(name)}, "pygments_language": "python", "url_template": "https://py.example/?c={code}"})
reg = client.register(fetch_event_types=["realm_playgrounds"])
removed = client.call_endpoint(f"realm/playgrounds/{added['id']}", method="DELETE")
print(json.dumps({"added": added["result"], "listed": [p["url_template"] for p in reg["realm_playgrounds"] if p["id"] == added["id"]], "removed": removed["result"]}))`) as Record<string, any>;
  t.same(out, { added: 'success', listed: ['https://py.example/?c={code}'], removed: 'success' });
});
