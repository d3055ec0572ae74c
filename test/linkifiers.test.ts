// Linkifiers over HTTP: who may manage them, pattern and template checks,
// messages and topics rendered with them (GET /messages and message events),
// and realm_linkifiers events only for clients with linkifier_url_template.
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
const CAPS = { client_capabilities: { linkifier_url_template: true } };

/** A pattern unique to this test run, so tests sharing a realm do not match each other's linkifiers. */
const prefix = () => uniq('P').replace(/[^A-Za-z]/g, '').slice(0, 8).toUpperCase();

t.test('linkifiers - create by role; list', async (t) => {
  for (const [role, api] of asRoles(s)) {
    const p = prefix();
    const r = await api.post('/realm/filters', { pattern: `${p}-(?P<id>[0-9]+)`, url_template: `https://tracker.example/${p}/{id}` });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.type(r.body.id, 'number', `${role} creates`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', /organization administrator/, role);
  }
  const list = (await maria.ok('GET', '/realm/linkifiers')).linkifiers;
  t.ok(list.length >= 2);
  t.match(list[list.length - 1], { pattern: String, url_template: String, example_input: null, reverse_template: null, alternative_url_templates: [] });
  isError(t, await s.api.get('/realm/linkifiers'), 401, 'UNAUTHORIZED');
});

t.test('linkifiers - patterns and templates are checked', async (t) => {
  const cases: Array<[Record<string, any>, RegExp, string?]> = [
    [{ pattern: '(?<=x)(?P<id>[0-9]+)', url_template: 'https://x.example/{id}' }, /Bad regular expression: lookbehind/],
    [{ pattern: '(?P<id>[0-9]+)(?P=id)', url_template: 'https://x.example/{id}' }, /Bad regular expression: backreferences/],
    [{ pattern: '(?P<id>[0-9]+', url_template: 'https://x.example/{id}' }, /Bad regular expression/],
    [{ pattern: '(?<id>[0-9]+)', url_template: 'https://x.example/{id}' }, /Bad regular expression: named groups are written/],
    [{ pattern: '  ', url_template: 'https://x.example/' }, /cannot be blank/],
    [{ pattern: 'Q(?P<id>[0-9]+)', url_template: 'https://x.example/{id' }, /Invalid URL template/],
    [{ pattern: 'Q(?P<id>[0-9]+)', url_template: 'not a url/{id}' }, /Invalid URL template/],
    [{ pattern: 'Q(?P<id>[0-9]+)', url_template: 'https://x.example/{id}/{other}' }, /Group 'other' in URL template is not present in linkifier pattern/],
    [{ pattern: 'Q(?P<id>[0-9]+)(?P<x>[a-z])', url_template: 'https://x.example/{id}' }, /Group 'x' in linkifier pattern is not present in URL template/],
    [{ pattern: 'Q(?P<id>[0-9]+)', url_template: 'https://x.example/{id}', example_input: 'R12' }, /does not match/],
    [{ pattern: 'Q(?P<id>[0-9]+)', url_template: 'https://x.example/{id}', example_input: 'Q12', reverse_template: 'Q{id}0' }, /does not reproduce/],
    [{ pattern: 'Q(?P<id>[0-9]+)', url_template: 'https://x.example/{id}', example_input: 'Q12', reverse_template: 'Q{nope}' }, /Group 'nope' in reverse template/],
    [{ pattern: 'Q(?P<id>[0-9]+)', url_template: 'https://x.example/{id}', reverse_template: 'Q{id}' }, /example input is required/],
    [{ pattern: 'Q(?P<id>[0-9]+)', url_template: 'https://x.example/{id}', alternative_url_templates: ['{bad'] }, /Invalid URL template/],
    [{ url_template: 'https://x.example/' }, /Missing 'pattern'/, 'REQUEST_VARIABLE_MISSING'],
  ];
  for (const [params, msg, code = 'BAD_REQUEST'] of cases) {
    const r = await admin.post('/realm/filters', params);
    isError(t, r, 400, code, msg, JSON.stringify(params).slice(0, 70));
  }
  const bad = await admin.post('/realm/filters', cases[0]![0]);
  t.match(bad.body.errors, { pattern: [/Bad regular expression/] }, 'errors by field, as Zulip gives them');
  // Valid: inline flags, doubled braces in a reverse template, empty strings resetting to null.
  const p = prefix();
  const { id } = await admin.ok('POST', '/realm/filters', { pattern: `(?i)${p}\\{(?P<id>[0-9]+)\\}`, url_template: 'https://x.example/{id}', example_input: `${p}{7}`, reverse_template: `${p}{{{id}}}`, alternative_url_templates: ['https://x.example/alt/{id}'] });
  let got = (await maria.ok('GET', '/realm/linkifiers')).linkifiers.find((l: any) => l.id === id);
  t.match(got, { example_input: `${p}{7}`, reverse_template: `${p}{{{id}}}`, alternative_url_templates: ['https://x.example/alt/{id}'] });
  await admin.ok('PATCH', `/realm/filters/${id}`, { pattern: got.pattern, url_template: got.url_template, example_input: '', reverse_template: '' });
  got = (await maria.ok('GET', '/realm/linkifiers')).linkifiers.find((l: any) => l.id === id);
  t.same([got.example_input, got.reverse_template], [null, null], 'an empty string resets to null (FL 471)');
});

t.test('linkifiers - update, delete and reorder, with their errors', async (t) => {
  const a = (await admin.ok('POST', '/realm/filters', { pattern: `${prefix()}(?P<n>[0-9]+)`, url_template: 'https://a.example/{n}' })).id;
  const b = (await admin.ok('POST', '/realm/filters', { pattern: `${prefix()}(?P<n>[0-9]+)`, url_template: 'https://b.example/{n}' })).id;
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('PATCH', `/realm/filters/${a}`, { pattern: `${prefix()}(?P<n>[0-9]+)`, url_template: 'https://a2.example/{n}' });
    if (role === 'anonymous') isError(t, r, 401, 'UNAUTHORIZED', undefined, role);
    else if (role === 'owner' || role === 'admin') t.equal(r.status, 200, `${role} updates`);
    else isError(t, r, 400, 'UNAUTHORIZED_PRINCIPAL', undefined, role);
  }
  isError(t, await admin.call('PATCH', '/realm/filters/987654', { pattern: 'X(?P<n>1)', url_template: 'https://x.example/{n}' }), 400, 'BAD_REQUEST', /Linkifier not found/);
  isError(t, await admin.call('PATCH', `/realm/filters/${a}`, { pattern: '(?=x)', url_template: 'https://x.example/' }), 400, 'BAD_REQUEST', /lookahead/);
  const ids = (await maria.ok('GET', '/realm/linkifiers')).linkifiers.map((l: any) => l.id);
  const reversed = [...ids].reverse();
  isError(t, await maria.call('PATCH', '/realm/linkifiers', { ordered_linkifier_ids: reversed }), 400, 'UNAUTHORIZED_PRINCIPAL');
  await admin.ok('PATCH', '/realm/linkifiers', { ordered_linkifier_ids: reversed });
  t.same((await maria.ok('GET', '/realm/linkifiers')).linkifiers.map((l: any) => l.id), reversed);
  isError(t, await admin.call('PATCH', '/realm/linkifiers', { ordered_linkifier_ids: [...reversed, reversed[0]] }), 400, 'BAD_REQUEST', /duplicated/);
  isError(t, await admin.call('PATCH', '/realm/linkifiers', { ordered_linkifier_ids: reversed.slice(1) }), 400, 'BAD_REQUEST', /exactly once/);
  isError(t, await maria.delete(`/realm/filters/${b}`), 400, 'UNAUTHORIZED_PRINCIPAL');
  await owner.ok('DELETE', `/realm/filters/${b}`);
  isError(t, await owner.delete(`/realm/filters/${b}`), 400, 'BAD_REQUEST', /Linkifier not found/);
});

t.test('linkifiers - messages and topics are rendered with them (GET /messages and events)', async (t) => {
  const p = prefix();
  await admin.ok('POST', '/realm/filters', { pattern: `${p}#(?P<id>[0-9]+)`, url_template: `https://tracker.example/${p}/{id}` });
  const q = await register(maria, { event_types: ['message'], apply_markdown: true });
  const topic = `fix ${p}#45 today`;
  const content = `See ${p}#123, not \`${p}#9\`, nor x${p}#8, and [${p}#7](https://elsewhere.example/).`;
  const { id } = await owner.ok('POST', '/messages', { type: 'stream', to: 'general', topic, content });
  const ev = await waitFor(q, (e) => e.type === 'message' && e.message.id === id);
  const fetched = (await maria.ok('GET', '/messages', { anchor: id, num_before: 0, num_after: 0, apply_markdown: true })).messages[0];
  for (const m of [ev.message, fetched]) {
    t.match(m.content, `<a href="https://tracker.example/${p}/123">${p}#123</a>`);
    t.notMatch(m.content, `tracker.example/${p}/9`, 'code is not linkified');
    t.notMatch(m.content, `tracker.example/${p}/8`, 'a match must start at a word boundary');
    t.notMatch(m.content, `tracker.example/${p}/7`, 'text already in a link is left alone');
    t.same(m.topic_links, [{ text: `${p}#45`, url: `https://tracker.example/${p}/45` }]);
  }
  const raw = (await maria.ok('GET', '/messages', { anchor: id, num_before: 0, num_after: 0, apply_markdown: false })).messages[0];
  t.equal(raw.content, content, 'the Markdown source is unchanged');
  const dm = await owner.ok('POST', '/messages', { type: 'direct', to: [s.demo.member1.userId], content: `${p}#5` });
  t.match((await maria.ok('GET', '/messages', { anchor: dm.id, num_before: 0, num_after: 0 })).messages[0].content, `tracker.example/${p}/5`);
});

t.test('linkifiers - realm_linkifiers events only for clients with linkifier_url_template; snapshot plus events', async (t) => {
  const FETCH = { fetch_event_types: ['realm_linkifiers'], event_types: ['realm_linkifiers', 'heartbeat'] };
  const capable = await register(maria, { ...FETCH, ...CAPS });
  const plain = await register(maria, FETCH);
  t.same(plain.snapshot.realm_linkifiers, [], 'without the capability, an empty list');
  const snap = structuredClone(capable.snapshot);
  const id = (await admin.ok('POST', '/realm/filters', { pattern: `${prefix()}(?P<n>[0-9]+)`, url_template: 'https://e.example/{n}' })).id;
  await admin.ok('PATCH', `/realm/filters/${id}`, { pattern: `${prefix()}(?P<n>[0-9]+)`, url_template: 'https://e2.example/{n}' });
  await admin.ok('DELETE', `/realm/filters/${id}`);
  let n = 0;
  await waitFor(capable, (e) => (applyEvent(snap, e), ++n === 3));
  t.same(snap.realm_linkifiers, (await register(maria, { ...FETCH, ...CAPS })).snapshot.realm_linkifiers);
  const none = await plain.api.ok('GET', '/events', { queue_id: plain.queueId, last_event_id: plain.lastEventId, dont_block: true });
  t.same(none.events, [], 'no realm_linkifiers events for a client without the capability');
});

t.test('linkifiers - url_format_string, the name before FL 176, is taken as url_template', async (t) => {
  const p = prefix();
  const legacy = await admin.ok('POST', '/realm/filters', { pattern: `${p}(?P<n>[0-9]+)`, url_format_string: 'https://old.example/%(n)s?100%%' });
  const template = await admin.ok('POST', '/realm/filters', { pattern: `${p}X(?P<n>[0-9]+)`, url_format_string: 'https://old.example/x/{n}' });
  await admin.ok('PATCH', `/realm/filters/${template.id}`, { pattern: `${p}X(?P<n>[0-9]+)`, url_format_string: 'https://old.example/y/%(n)s' });
  const list = (await maria.ok('GET', '/realm/linkifiers')).linkifiers as Array<{ id: number; url_template: string }>;
  t.same([legacy.id, template.id].map((id) => list.find((l) => l.id === id)?.url_template), ['https://old.example/{n}?100%', 'https://old.example/y/{n}']);
  isError(t, await admin.post('/realm/filters', { pattern: `${p}Z(?P<n>[0-9]+)` }), 400, 'REQUEST_VARIABLE_MISSING', /^Missing 'url_template' argument$/);
  for (const id of [legacy.id, template.id]) await admin.ok('DELETE', `/realm/filters/${id}`);
});

t.test('python client - linkifiers', async (t) => {
  const p = prefix();
  const out = runPython(s.urls[0]!, s.demo.admin, `
# zulip 0.9.1's add_realm_filter sends url_format_string to a server below FL 176.
c = client.add_realm_filter("${p}(?P<n>[0-9]+)", "https://py.example/{n}")
listed = client.get_realm_linkifiers()
removed = client.remove_realm_filter(c["id"])
print(json.dumps({"c": c["result"], "listed": [l["url_template"] for l in listed["linkifiers"] if l["id"] == c["id"]], "removed": removed["result"]}))`) as Record<string, any>;
  t.same(out, { c: 'success', listed: ['https://py.example/{n}'], removed: 'success' });
});
