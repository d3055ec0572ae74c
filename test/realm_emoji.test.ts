// Custom emoji: upload, list, deactivate; events in both formats; reactions and markdown with them.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { type Creds, uniq } from './helpers/api.ts';
import { applyEvent } from './helpers/apply.ts';
import { register, waitFor } from './helpers/events.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const base = s.urls[0]!;
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const auth = (c: Creds) => ({ authorization: `Basic ${Buffer.from(`${c.email}:${c.apiKey}`).toString('base64')}` });
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
const emojiName = () => uniq('e').toLowerCase().replace(/[^a-z0-9]/g, '_').replace(/_+$/, '');

async function addEmoji(c: Creds, name: string, files: Array<{ type: string; data: Buffer }> = [{ type: 'image/png', data: PNG }]) {
  const fd = new FormData();
  files.forEach((f, i) => fd.append(`f${i}`, new Blob([new Uint8Array(f.data)], { type: f.type }), `${name}.png`));
  const res = await fetch(`${base}/api/v1/realm/emoji/${encodeURIComponent(name)}`, { method: 'POST', headers: auth(c), body: fd });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

t.test('realm emoji - add, list, image, deactivate; snapshot plus events, both formats', async (t) => {
  for (const individual of [false, true]) {
    const FETCH = { fetch_event_types: ['realm_emoji'], event_types: ['realm_emoji'], client_capabilities: { individual_emoji_changes: individual } };
    const q = await register(maria, FETCH);
    const snap = structuredClone(q.snapshot);
    const name = emojiName();
    t.equal((await addEmoji(s.demo.member1, name)).status, 200);
    const listed = Object.values((await maria.ok('GET', '/realm/emoji')).emoji) as any[];
    const mine = listed.find((e) => e.name === name);
    t.same({ ...mine, id: 'x' }, { id: 'x', name, source_url: `/api/v1/realm/emoji/${mine.id}/image`, still_url: null, deactivated: false, author_id: s.demo.member1.userId });
    const img = await fetch(`${base}${mine.source_url}`, { headers: auth(s.demo.member2) });
    t.equal(img.status, 200);
    t.ok(Buffer.from(await img.arrayBuffer()).equals(PNG));
    await maria.ok('DELETE', `/realm/emoji/${name}`);
    let n = 0;
    await waitFor(q, (e) => {
      applyEvent(snap, e);
      if (e.type === 'realm_emoji') {
        t.equal(e.op === 'update', !individual, `op ${e.op} for individual_emoji_changes=${individual}`);
        n++;
      }
      return n === 2;
    });
    const fresh = (await register(maria, FETCH)).snapshot;
    t.same(snap.realm_emoji, fresh.realm_emoji);
    t.equal(fresh.realm_emoji[mine.id].deactivated, true);
  }
});

t.test('realm emoji - permissions per role and errors', async (t) => {
  const expected: Record<string, number> = { owner: 200, admin: 200, moderator: 200, member1: 200, member2: 200, guest: 400, bot: 200 };
  for (const key of DEMO_KEYS) {
    const r = await addEmoji(s.demo[key], emojiName());
    t.equal(r.status, expected[key], key);
    if (r.status !== 200) t.equal(r.body.msg, 'Insufficient permission');
  }
  const name = emojiName();
  await addEmoji(s.demo.member1, name);
  t.equal((await addEmoji(s.demo.member2, name)).body.msg, 'A custom emoji with this name already exists.');
  t.equal((await s.api.as(s.demo.member2).call('DELETE', `/realm/emoji/${name}`)).body.msg, 'Must be an organization administrator or emoji author');
  await owner.ok('DELETE', `/realm/emoji/${name}`);
  const gone = await owner.call('DELETE', `/realm/emoji/${name}`);
  t.same([gone.status, gone.body.code, gone.body.msg], [404, 'BAD_REQUEST', `Emoji '${name}' does not exist`], 'an emoji that does not exist is 404 (FL 190)');
  t.match((await addEmoji(s.demo.member1, 'Bad Name!')).body.msg, /Emoji names must contain only/);
  t.equal((await addEmoji(s.demo.member1, emojiName(), [])).body.msg, 'You must upload exactly one file.');
  t.equal((await addEmoji(s.demo.member1, 'octopus')).body.msg, 'Only administrators can override default emoji.');
  t.equal((await s.api.get('/realm/emoji', {}, { creds: null })).status, 401);
});

/** Every file under the embedded file store's directory (bytes and descriptions). */
const storedFiles = (dataDir: string): string[] => {
  try {
    return readdirSync(join(dataDir, 'data', 'uploads'), { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => join(d.parentPath, d.name));
  } catch {
    return [];
  }
};

t.test('realm emoji - a refused upload leaves no file in the file store', { skip: s.dataDir ? false : 'the file store is a directory only in embedded mode' }, async (t) => {
  const name = emojiName();
  t.equal((await addEmoji(s.demo.member1, name)).status, 200);
  const before = storedFiles(s.dataDir!);
  t.ok(before.length >= 2, 'an accepted upload is stored (bytes and description)');
  // Both refusals pass the input checks and are refused on the realm's state, after the bytes were written.
  t.equal((await addEmoji(s.demo.member2, name)).body.msg, 'A custom emoji with this name already exists.');
  t.equal((await addEmoji(s.demo.member1, 'octopus')).body.msg, 'Only administrators can override default emoji.');
  t.same(storedFiles(s.dataDir!), before, 'no file is left by the refused uploads');
  await owner.ok('DELETE', `/realm/emoji/${name}`);
});

t.test('realm emoji - reactions and :name: in messages use them', async (t) => {
  const name = emojiName();
  await addEmoji(s.demo.member1, name);
  const id = (Object.values((await maria.ok('GET', '/realm/emoji')).emoji) as any[]).find((e) => e.name === name).id;
  const msg = await owner.ok('POST', '/messages', { type: 'stream', to: 'general', topic: uniq('t'), content: `look :${name}:` });
  const got = await maria.ok('GET', `/messages/${msg.id}`);
  t.equal(got.message.content, `<p>look <img alt=":${name}:" class="emoji" src="/api/v1/realm/emoji/${id}/image" title="${name.replace(/_/g, ' ')}"></p>`);
  await maria.ok('POST', `/messages/${msg.id}/reactions`, { emoji_name: name });
  t.same((await maria.ok('GET', `/messages/${msg.id}`)).message.reactions[0], { emoji_name: name, emoji_code: id, reaction_type: 'realm_emoji', user_id: s.demo.member1.userId });
  await maria.ok('DELETE', `/messages/${msg.id}/reactions`, { emoji_name: name, reaction_type: 'realm_emoji' });
  t.same((await maria.ok('GET', `/messages/${msg.id}`)).message.reactions, []);
});

t.test('realm emoji - a file part without a Content-Type is typed by its name', async (t) => {
  const name = emojiName();
  const boundary = 'parley-boundary';
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="${name}.png"\r\n\r\n`),
    PNG,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const res = await fetch(`${base}/api/v1/realm/emoji/${name}`, { method: 'POST', headers: { ...auth(s.demo.member1), 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
  t.equal(res.status, 200, JSON.stringify(await res.json()));
  const mine = (Object.values((await maria.ok('GET', '/realm/emoji')).emoji) as any[]).find((e) => e.name === name);
  const img = await fetch(`${base}${mine.source_url}`, { headers: auth(s.demo.member2) });
  t.equal(img.headers.get('content-type'), 'image/png');
  await maria.ok('DELETE', `/realm/emoji/${name}`);
});

t.test('realm emoji - the official Python client uploads, lists and deletes them', async (t) => {
  const name = emojiName();
  // upload_custom_emoji sends the file through requests, with no Content-Type on the part.
  const out = runPython(base, s.demo.member2, `
import io
f = io.BytesIO(bytes.fromhex(${JSON.stringify(PNG.toString('hex'))}))
f.name = "${name}.png"
up = client.upload_custom_emoji(${JSON.stringify(name)}, f)
listed = [e["name"] for e in client.get_realm_emoji()["emoji"].values() if not e["deactivated"]]
gone = client.delete_custom_emoji(${JSON.stringify(name)})
print(json.dumps({"up": up["result"], "listed": ${JSON.stringify(name)} in listed, "gone": gone["result"]}))`) as any;
  t.same(out, { up: 'success', listed: true, gone: 'success' });
});
