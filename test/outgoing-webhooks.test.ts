// Bots created through the API (POST /bots, GET /bots) and outgoing-webhook
// bots: a mention or a direct message is posted to the bot's URL (a small
// HTTP server in this test), and its answer comes back as the bot.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import t from 'tap';
import { type Api, uniq } from './helpers/api.ts';
import { register, waitFor } from './helpers/events.ts';
import { asRoles } from './helpers/roles.ts';
import { serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);

/** The bot server: records each post and answers with what `reply` says. */
const received: Array<Record<string, any>> = [];
let reply: (body: Record<string, any>) => { status: number; body: unknown } = (b) => ({ status: 200, body: { content: `pong: ${b.data}` } });
const botServer = createServer((req: IncomingMessage, res: ServerResponse) => {
  let text = '';
  req.on('data', (d) => (text += d));
  req.on('end', () => {
    const body = JSON.parse(text) as Record<string, any>;
    received.push(body);
    const r = reply(body);
    res.writeHead(r.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(r.body));
  });
});
await new Promise<void>((r) => botServer.listen(0, '127.0.0.1', r));
t.teardown(() => botServer.close());
const payloadUrl = `http://127.0.0.1:${(botServer.address() as { port: number }).port}/hook`;

async function newBot(api: Api, params: Record<string, unknown>) {
  const short = uniq('hook').replace(/[^a-z0-9]/g, '');
  return api.call('POST', '/bots', { full_name: `Hook ${short}`, short_name: short, ...params });
}

/** The newest messages of a narrow as `api` sees them. */
async function newest(api: Api, narrow: unknown[], n = 5) {
  return (await api.ok('GET', '/messages', { anchor: 'newest', num_before: n, num_after: 0, apply_markdown: false, narrow })).messages as any[];
}

async function until<T>(get: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T | undefined> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await get();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  return undefined;
}

t.test('bots - POST /bots: who may create one, and its checks', async (t) => {
  const outcome = async (api: Api) => {
    const r = await newBot(api, { bot_type: 1 });
    return r.status === 200 ? 'ok' : `${r.status} ${r.body.msg}`;
  };
  const seen: Record<string, string> = {};
  for (const [role, api] of asRoles(s)) seen[role] = await outcome(api);
  t.same(seen, {
    owner: 'ok',
    admin: 'ok',
    moderator: 'ok',
    member1: 'ok',
    guest: '400 Not allowed for guest users',
    bot: '400 This endpoint does not accept bot requests.',
    anonymous: '401 Missing authorization header for basic auth',
  });
  const made = await newBot(maria, { bot_type: 1 });
  t.equal(made.status, 200);
  t.match(made.body, { user_id: Number, api_key: /^[A-Za-z0-9]{32}$/, default_all_public_streams: false });
  const me = await s.api.as({ email: (await maria.ok('GET', `/users/${made.body.user_id}`)).user.email, apiKey: made.body.api_key }).ok('GET', '/users/me');
  t.equal(me.is_bot, true, 'the bot signs in with its key');
  t.equal(me.bot_owner_id, s.demo.member1.userId, 'and belongs to its creator');
  t.equal((await newBot(maria, { bot_type: 4 })).body.msg, 'Invalid bot type', 'embedded bots are not available');
  t.equal((await newBot(maria, { bot_type: 3, payload_url: 'not a url' })).body.msg, 'payload_url is not a URL');
  t.equal((await newBot(maria, { bot_type: 3, payload_url: payloadUrl, interface_type: 2 })).body.msg, 'Invalid interface type', 'the Slack format is not spoken');
  // The organization decides who may: can_create_bots_group (any bot), can_create_write_only_bots_group (incoming webhooks).
  await owner.ok('PATCH', '/realm', { can_create_bots_group: { new: 6 }, can_create_write_only_bots_group: { new: 6 } });
  t.equal((await newBot(maria, { bot_type: 1 })).body.msg, 'Insufficient permission', 'administrators only: a member may not');
  await owner.ok('PATCH', '/realm', { can_create_write_only_bots_group: { new: 3 } });
  t.equal((await newBot(maria, { bot_type: 2 })).status, 200, 'but an incoming-webhook bot, with can_create_write_only_bots_group');
  t.equal((await newBot(maria, { bot_type: 3, payload_url: payloadUrl })).body.msg, 'Insufficient permission', 'not an outgoing-webhook one');
  t.equal((await newBot(s.api.as(s.demo.admin), { bot_type: 1 })).status, 200, 'administrators still may');
  await owner.ok('PATCH', '/realm', { can_create_bots_group: { new: 3 }, can_create_write_only_bots_group: { new: 3 } });
  const short = uniq('twice').replace(/[^a-z0-9]/g, '');
  await maria.ok('POST', '/bots', { full_name: 'Twice', short_name: short });
  t.equal((await maria.call('POST', '/bots', { full_name: 'Twice', short_name: short })).body.msg, 'Username already in use');
});

t.test('bots - an outgoing-webhook bot answers a mention and a direct message', async (t) => {
  const watcher = await register(owner, { event_types: ['realm_user'] });
  const made = (await newBot(maria, { bot_type: 3, payload_url: payloadUrl })).body;
  const added = await waitFor(watcher, (e) => e.type === 'realm_user' && e.op === 'add' && e.person.user_id === made.user_id);
  t.equal(added.person.bot_type, 3, 'everyone learns of the new bot');
  const listed = (await maria.ok('GET', '/bots')).bots.find((b: any) => b.user_id === made.user_id);
  t.same(listed.services.map((x: any) => x.base_url), [payloadUrl], 'GET /bots shows its service');
  const token = listed.services[0].token;
  t.notOk((await s.api.as(s.demo.member2).ok('GET', '/bots')).bots.some((b: any) => b.user_id === made.user_id), "another member does not see someone else's bot");
  const bot = (await maria.ok('GET', `/users/${made.user_id}`)).user;

  const channel = uniq('hooks');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: [s.demo.owner.userId, s.demo.member1.userId] });
  const text = `@**${bot.full_name}** ping ${uniq('x')}`;
  const sent = await maria.ok('POST', '/messages', { type: 'stream', to: channel, topic: 'ask', content: text });
  t.notOk('serviceBots' in sent, 'the sender gets the usual answer');
  const post = await until(async () => received.find((r) => r.message?.id === sent.id));
  t.ok(post, 'the message was posted to the bot server');
  t.match(post, { data: text, trigger: 'mention', bot_email: bot.email, bot_full_name: bot.full_name, token, message: { id: sent.id, content: text, sender_id: s.demo.member1.userId, subject: 'ask' } });
  const answer = await until(async () => (await newest(owner, [{ operator: 'channel', operand: channel }])).find((m) => m.sender_id === made.user_id));
  t.equal(answer?.content, `pong: ${text}`, 'its answer is in the channel');
  t.equal(answer?.subject, 'ask', 'in the same topic');

  const dm = await maria.ok('POST', '/messages', { type: 'direct', to: [made.user_id], content: 'hello bot' });
  const dmPost = await until(async () => received.find((r) => r.message?.id === dm.id));
  t.equal(dmPost?.trigger, 'direct_message');
  const dmAnswer = await until(async () => (await newest(maria, [{ operator: 'dm', operand: [made.user_id] }])).find((m) => m.sender_id === made.user_id));
  t.equal(dmAnswer?.content, 'pong: hello bot', 'a direct message is answered directly');

  reply = () => ({ status: 200, body: { response_not_required: true } });
  const quiet = await maria.ok('POST', '/messages', { type: 'direct', to: [made.user_id], content: 'no answer needed' });
  await until(async () => received.find((r) => r.message?.id === quiet.id));
  await new Promise((r) => setTimeout(r, 500));
  t.notOk((await newest(maria, [{ operator: 'dm', operand: [made.user_id] }], 1)).some((m) => m.sender_id === made.user_id && m.id > quiet.id), 'response_not_required: no answer');

  let calls = 0;
  reply = () => (++calls < 2 ? { status: 503, body: {} } : { status: 200, body: { content: 'second try' } });
  await maria.ok('POST', '/messages', { type: 'direct', to: [made.user_id], content: 'retry please' });
  const retried = await until(async () => (await newest(maria, [{ operator: 'dm', operand: [made.user_id] }], 1)).find((m) => m.content === 'second try'));
  t.ok(retried, 'a 5xx is tried again');
  reply = (b) => ({ status: 200, body: { content: `pong: ${b.data}` } });
});

t.test('bots - an outgoing-webhook bot is served after a crash between the send\'s commit and its follow-up', { skip: s.dataDir ? false : 'restarts an embedded server of its own' }, async (t) => {
  // The follow-up waits 3 s after the send's commit here, so that the server can be killed in between.
  let srv = await serverFor(t, { env: { PARLEY_FOLLOW_UP_DELAY_MS: '3000' } });
  const ana = srv.api.as(srv.demo.member1);
  const made = (await newBot(ana, { bot_type: 3, payload_url: payloadUrl })).body;
  const content = `before the crash ${uniq('x')}`;
  const dm = await ana.ok('POST', '/messages', { type: 'direct', to: [made.user_id], content });
  await srv.stop('SIGKILL');
  t.notOk(received.some((r) => r.data === content), 'the server was killed before the bot was posted');
  srv = await srv.restart();
  t.teardown(() => srv.stop());
  const post = await until(async () => received.find((r) => r.data === content));
  t.equal(post?.message.id, dm.id, 'the restarted server posts the message to the bot');
  const answer = await until(async () => (await newest(srv.api.as(srv.demo.member1), [{ operator: 'dm', operand: [made.user_id] }], 1)).find((m) => m.sender_id === made.user_id));
  t.equal(answer?.content, `pong: ${content}`, 'and sends its answer');
  await srv.stop();
});

t.test('bots - GET /bots: every role lists the bots it administers; administrators see all', async (t) => {
  const made = (await newBot(maria, { bot_type: 1 })).body;
  const seen: Record<string, string> = {};
  for (const [role, api] of asRoles(s)) {
    const r = await api.call('GET', '/bots');
    seen[role] = r.status === 200 ? (r.body.bots.some((b: any) => b.user_id === made.user_id) ? 'sees it' : 'ok') : `${r.status}`;
  }
  t.same(seen, { owner: 'sees it', admin: 'sees it', moderator: 'ok', member1: 'sees it', guest: 'ok', bot: 'ok', anonymous: '401' });
});
