// GET, PUT and DELETE /bot_storage (Zulip's zerver/views/storage.py; only for
// bots since FL 494): over HTTP as each role, Zulip's errors and size limit,
// one bot's storage unseen by another, zulip_bots' StateHandler from Python,
// and (embedded) a restart keeping it.
import t from 'tap';
import { type Api, type Creds, uniq } from './helpers/api.ts';
import { pythonClient, runPython } from './helpers/python.ts';
import { isError } from './helpers/roles.ts';
import { serverFor } from './helpers/server.ts';

let s = await serverFor(t);
const maria = s.api.as(s.demo.member1);

/** A new generic bot of Maria's, with its credentials: each case its own storage, whatever else the shared server holds. */
async function newBot(): Promise<Creds & { userId: number; api: Api }> {
  const short = uniq('store').replace(/[^a-z0-9]/g, '');
  const made = await maria.ok('POST', '/bots', { full_name: `Storage ${short}`, short_name: short });
  const email = made.email ?? (await maria.ok('GET', `/users/${made.user_id}`)).user.email;
  const creds = { email, apiKey: made.api_key as string };
  return { ...creds, userId: made.user_id, api: s.api.as(creds) };
}

/** An object's own entries by key (a `__proto__` key included). */
const sorted = (o: Record<string, string>) => Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1));
const stored = async (bot: Api, keys?: string[]) => (await bot.ok('GET', '/bot_storage', keys ? { keys } : {})).storage;

t.test('bot storage - PUT sets and replaces, GET gives all or the keys asked, DELETE removes the keys named or all', async (t) => {
  const bot = (await newBot()).api;
  t.same(await stored(bot), {}, 'a new bot stores nothing');
  const put = await bot.call('PUT', '/bot_storage', { storage: { a: '1', b: '2', 'ключ 🔑': 'значение', __proto__x: 'x' } });
  t.same([put.status, put.body.result], [200, 'success']);
  // A `__proto__` key is a key like any other (JSON gives it as an own property).
  await bot.ok('PUT', '/bot_storage', { storage: '{"__proto__": "p", "b": "two"}' });
  t.same(sorted(await stored(bot)), [['__proto__', 'p'], ['__proto__x', 'x'], ['a', '1'], ['b', 'two'], ['ключ 🔑', 'значение']], 'every key, b replaced');
  t.same(sorted(await stored(bot, ['__proto__'])), [['__proto__', 'p']]);
  t.same(await stored(bot, ['a', 'ключ 🔑']), { a: '1', 'ключ 🔑': 'значение' }, 'only the keys asked');
  t.same(await stored(bot, []), await stored(bot), 'an empty list of keys means all, as in Zulip');
  // The empty key is a key too (Zulip's is a text column).
  await bot.ok('PUT', '/bot_storage', { storage: { '': 'empty key' } });
  t.same(await stored(bot, ['']), { '': 'empty key' });
  await bot.ok('DELETE', '/bot_storage', { keys: ['a', '__proto__', ''] });
  t.same(await stored(bot), { b: 'two', 'ключ 🔑': 'значение', __proto__x: 'x' }, 'the keys named are gone');
  await bot.ok('DELETE', '/bot_storage', { keys: ['b'] }, { encoding: 'form' });
  t.same(Object.keys(await stored(bot)).sort(), ['__proto__x', 'ключ 🔑'], 'DELETE reads its keys from the body too');
  await bot.ok('DELETE', '/bot_storage');
  t.same(await stored(bot), {}, 'no keys: every key removed');
  await bot.ok('DELETE', '/bot_storage');
  t.same(await stored(bot), {}, 'removing all of nothing succeeds');
});

t.test('bot storage - errors: keys not stored, bad storage and keys, a key too long; a refused request changes nothing', async (t) => {
  const bot = (await newBot()).api;
  await bot.ok('PUT', '/bot_storage', { storage: { kept: 'v', other: 'w' } });
  isError(t, await bot.call('GET', '/bot_storage', { keys: ['kept', 'missing'] }), 400, 'BAD_REQUEST', /^Key does not exist\.$/, 'GET of a key not stored');
  isError(t, await bot.call('DELETE', '/bot_storage', { keys: ['kept', 'missing'] }), 400, 'BAD_REQUEST', /^Key does not exist\.$/, 'DELETE of a key not stored');
  isError(t, await bot.call('DELETE', '/bot_storage', { keys: ['kept', 'kept'] }), 400, 'BAD_REQUEST', /^Key does not exist\.$/, 'DELETE naming a key twice (Zulip counts the rows found)');
  t.same(await stored(bot), { kept: 'v', other: 'w' }, 'a refused DELETE removes nothing');
  isError(t, await bot.call('PUT', '/bot_storage', { storage: { x: 1 } }), 400, 'BAD_REQUEST', /^Invalid storage: storage\["x"\] is not a string$/, 'a value that is not a string');
  for (const bad of ['[]', '"text"', 'null', '{', '5']) isError(t, await bot.call('PUT', '/bot_storage', { storage: bad }), 400, 'BAD_REQUEST', /^Invalid storage: /, `storage ${bad}`);
  isError(t, await bot.call('PUT', '/bot_storage', {}), 400, 'REQUEST_VARIABLE_MISSING', /^Missing 'storage' argument$/, 'no storage');
  isError(t, await bot.call('GET', '/bot_storage', { keys: '["a", 1]' }), 400, 'BAD_REQUEST', /^Invalid keys: /, 'keys that are not strings');
  isError(t, await bot.call('DELETE', '/bot_storage', { keys: 'kept' }), 400, 'BAD_REQUEST', /^Invalid keys: /, 'keys that are not a JSON list');
  const long = 'k'.repeat(401);
  isError(t, await bot.call('PUT', '/bot_storage', { storage: { fine: 'v', [long]: 'v' } }), 400, 'BAD_REQUEST', /^Key is too long \(limit: 400 characters\)$/, 'a key over 400 characters');
  await bot.ok('PUT', '/bot_storage', { storage: { ['🔑'.repeat(400)]: 'v' } });
  isError(t, await bot.call('GET', '/bot_storage', { keys: ['fine'] }), 400, 'BAD_REQUEST', /^Key does not exist\.$/, 'a refused PUT stores none of its entries');
  t.same(Object.keys(await stored(bot)).length, 3, '400 four-byte characters make a key');
});

t.test("bot storage - the limit: Zulip's USER_STATE_SIZE_LIMIT of 10,000,000 characters of keys and values", async (t) => {
  const bot = (await newBot()).api;
  // Ten entries of 1,000,000 characters each (a key of two, a value of 999,998): exactly the limit.
  const value = 'x'.repeat(999_998);
  for (let i = 0; i < 10; i++) await bot.ok('PUT', '/bot_storage', { storage: { [`k${i}`]: value } });
  isError(t, await bot.call('PUT', '/bot_storage', { storage: { k10: 'x' } }), 400, 'BAD_REQUEST', /^Request exceeds storage limit by 4 characters\. The limit is 10000000 characters\.$/, 'one entry more');
  // A replaced value counts by the difference: k0 one character shorter leaves room for key `k` with an empty value.
  await bot.ok('PUT', '/bot_storage', { storage: { k0: 'x'.repeat(999_997), k: '' } });
  isError(t, await bot.call('PUT', '/bot_storage', { storage: { k: 'y' } }), 400, 'BAD_REQUEST', /^Request exceeds storage limit by 1 characters\./, 'full again to the character');
  t.same(await stored(bot, ['k']), { k: '' }, 'an empty value is a value');
  // Characters (code points), not UTF-8 bytes or UTF-16 units: a four-byte character counts one.
  await bot.ok('DELETE', '/bot_storage', { keys: ['k1', 'k2'] });
  await bot.ok('PUT', '/bot_storage', { storage: { k1: '🔑'.repeat(49_998) } });
  await bot.ok('PUT', '/bot_storage', { storage: { k2: value } });
  await bot.ok('PUT', '/bot_storage', { storage: { z: 'x'.repeat(949_999) } });
  isError(t, await bot.call('PUT', '/bot_storage', { storage: { y: '' } }), 400, 'BAD_REQUEST', /^Request exceeds storage limit by 1 characters\./, 'exactly full with 50,000 characters of emoji');
  t.equal((await stored(bot, ['k1'])).k1, '🔑'.repeat(49_998), 'the emoji come back whole');
  t.equal((await stored(bot, ['k3'])).k3, value, 'a value of a million characters comes back whole');
  await bot.ok('DELETE', '/bot_storage');
  await bot.ok('PUT', '/bot_storage', { storage: { k10: 'x' } });
  t.same(await stored(bot), { k10: 'x' }, 'removing makes room again');
});

t.test("bot storage - only bots (FL 494): every human role is refused, without credentials 401; one bot never sees another bot's storage", async (t) => {
  const one = await newBot();
  const two = await newBot();
  await one.api.ok('PUT', '/bot_storage', { storage: { mine: 'one' } });
  for (const role of ['owner', 'admin', 'moderator', 'member1', 'guest'] as const) {
    const api = s.api.as(s.demo[role]);
    isError(t, await api.call('GET', '/bot_storage'), 400, 'BAD_REQUEST', /^Must be a bot user$/, `${role} GET`);
    isError(t, await api.call('PUT', '/bot_storage', { storage: { a: 'b' } }), 400, 'BAD_REQUEST', /^Must be a bot user$/, `${role} PUT`);
    isError(t, await api.call('DELETE', '/bot_storage'), 400, 'BAD_REQUEST', /^Must be a bot user$/, `${role} DELETE`);
  }
  for (const method of ['GET', 'PUT', 'DELETE']) isError(t, await s.api.call(method, '/bot_storage', method === 'PUT' ? { storage: {} } : {}), 401, 'UNAUTHORIZED', undefined, `anonymous ${method}`);
  t.same(await stored(one.api), { mine: 'one' }, 'the refused calls changed nothing');
  t.same(await stored(two.api), {}, 'another bot sees none of it');
  isError(t, await two.api.call('GET', '/bot_storage', { keys: ['mine'] }), 400, 'BAD_REQUEST', /^Key does not exist\.$/, "another bot's key");
  isError(t, await two.api.call('DELETE', '/bot_storage', { keys: ['mine'] }), 400, 'BAD_REQUEST', /^Key does not exist\.$/, "another bot's key, deleted");
  await two.api.ok('PUT', '/bot_storage', { storage: { mine: 'two' } });
  await two.api.ok('DELETE', '/bot_storage');
  t.same(await stored(one.api), { mine: 'one' }, "the other bot's put and delete-all left this one's alone");
  const demoBot = s.api.as(s.demo.bot);
  t.notOk('mine' in (await stored(demoBot)), 'nor does the demo bot see it');
});

t.test("bot storage - zulip_bots' StateHandler and the zulip client, from Python", async (t) => {
  pythonClient('bots');
  const bot = await newBot();
  const out = runPython(s.urls[0]!, bot, `
from zulip_bots.lib import StateHandler
state = StateHandler(client)
state.put("counter", {"n": 41, "who": ["a", "b"]})
state.put("greeting", "héllo")
fresh = StateHandler(client)
got = fresh.get("counter")
try:
    fresh.get("never stored")
    missing = None
except KeyError as e:
    missing = str(e)
listed = client.get_storage()
some = client.get_storage({"keys": ["greeting"]})
removed = client.remove_storage({"keys": ["greeting"]}) if hasattr(client, "remove_storage") else client.call_endpoint(url="bot_storage", method="DELETE", request={"keys": ["greeting"]})
after = client.get_storage()
print(json.dumps({"got": got, "missing": missing, "listed": listed["storage"], "some": some["storage"], "removed": removed["result"], "after": after["storage"]}))`) as Record<string, any>;
  t.same(out.got, { n: 41, who: ['a', 'b'] }, 'a new StateHandler reads what another put');
  t.match(out.missing, /key not found: never stored/, 'a key never stored is a KeyError');
  t.same(out.listed, { counter: '{"n": 41, "who": ["a", "b"]}', greeting: '"h\\u00e9llo"' }, 'get_storage gives the marshalled values');
  t.same(out.some, { greeting: '"h\\u00e9llo"' });
  t.equal(out.removed, 'success');
  t.same(out.after, { counter: '{"n": 41, "who": ["a", "b"]}' });
  t.same(await stored(bot.api), out.after, 'and the same over HTTP');
});

// Last: it restarts the embedded server the other cases used.
t.test('bot storage - a restart keeps it', { skip: process.env.PARLEY_TEST_GATEWAYS ? 'restarts an embedded server; the cluster run keeps it in Cassandra' : false }, async (t) => {
  const bot = await newBot();
  await bot.api.ok('PUT', '/bot_storage', { storage: { a: 'kept', b: 'gone' } });
  await bot.api.ok('DELETE', '/bot_storage', { keys: ['b'] });
  t.equal(await s.stop('SIGTERM'), 0, 'clean exit');
  s = await s.restart();
  t.teardown(() => s.stop());
  const again = s.api.as(bot);
  t.same(await stored(again), { a: 'kept' }, 'the put and the delete are both kept');
  // The limit's count is rebuilt from the store: `a` (5 characters) and ten entries of 999,999 fill it but for 5 characters.
  for (let i = 0; i < 10; i++) await again.ok('PUT', '/bot_storage', { storage: { [`k${i}`]: 'x'.repeat(999_997) } });
  await again.ok('PUT', '/bot_storage', { storage: { c: 'xxxx' } });
  isError(t, await again.call('PUT', '/bot_storage', { storage: { d: '' } }), 400, 'BAD_REQUEST', /^Request exceeds storage limit by 1 characters\./, 'the sizes stored before the restart count');
});
