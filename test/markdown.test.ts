// Zulip's message dialect: mentions, channel links, code, quotes, spoilers, math, time, emoji; escaping.
import fc from 'fast-check';
import t from 'tap';
import { renderMessage, renderParsed } from '../actors/realm/rules/markdown.ts';
import { compileLinkifier } from '../lib/linkifiers.ts';
import { uniq } from './helpers/api.ts';
import { runPython } from './helpers/python.ts';
import { DEMO_KEYS, serverFor } from './helpers/server.ts';

const s = await serverFor(t);
const owner = s.api.as(s.demo.owner);
const maria = s.api.as(s.demo.member1);
const channel = uniq('md');
await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: channel }], principals: DEMO_KEYS.map((k) => s.demo[k].userId) });
const streamId = ((await owner.ok('GET', '/users/me/subscriptions')).subscriptions as any[]).find((x) => x.name === channel).stream_id as number;

async function render(content: string, topic = 'md') {
  const { id } = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content });
  return (await maria.ok('GET', `/messages/${id}`)).message as { content: string; flags: string[] };
}

t.test('markdown - mentions: users, silent, wildcards; none inside code', async (t) => {
  const m = await render('hi @**Maria Member** and @_**Mateo Member**');
  t.equal(m.content, `<p>hi <span class="user-mention" data-user-id="${s.demo.member1.userId}">@Maria Member</span> and <span class="user-mention silent" data-user-id="${s.demo.member2.userId}">Mateo Member</span></p>`);
  t.same(m.flags, ['mentioned']);
  const all = await render('@**all** and @**topic**');
  t.equal(all.content, '<p><span class="user-mention channel-wildcard-mention" data-user-id="*">@all</span> and <span class="topic-mention">@topic</span></p>');
  t.same(all.flags, ['stream_wildcard_mentioned', 'wildcard_mentioned'], 'with the deprecated wildcard_mentioned last, as Zulip gives it');
  const code = await render('`@**Maria Member**`');
  t.equal(code.content, '<p><code>@**Maria Member**</code></p>');
  t.same(code.flags, []);
  t.equal((await render('@**Nobody Here**')).content, '<p>@<strong>Nobody Here</strong></p>');
  const system = await render('@_*role:members* heard');
  t.equal(system.content, '<p><span class="user-group-mention silent" data-user-group-id="3">Everyone except guests</span> heard</p>', 'a system group, silently (FL 333)');
  t.same(system.flags, [], 'which notifies nobody');
});

t.test('markdown - channel and topic links, time, emoji, math', async (t) => {
  const enc = channel.replace(/-/g, '-');
  t.equal((await render(`#**${channel}**`)).content, `<p><a class="stream" data-stream-id="${streamId}" href="/#narrow/channel/${streamId}-${enc}">#${channel}</a></p>`);
  t.equal((await render(`#**${channel}>my topic**`)).content, `<p><a class="stream-topic" data-stream-id="${streamId}" href="/#narrow/channel/${streamId}-${enc}/topic/my.20topic">#${channel} &gt; my topic</a></p>`);
  t.equal((await render('#**no-such-channel-here**')).content, '<p>#<strong>no-such-channel-here</strong></p>');
  t.equal((await render('<time:2024-01-01T10:00:00+05:30>')).content, '<p><time datetime="2024-01-01T04:30:00Z">2024-01-01T10:00:00+05:30</time></p>');
  t.equal((await render('<time:whenever>')).content, '<p>&lt;time:whenever&gt;</p>', 'an invalid time is plain escaped text (FL 451)');
  t.equal((await render(':octopus: :not_an_emoji_xyz:')).content, '<p><span aria-label="octopus" class="emoji emoji-1f419" role="img" title="octopus">:octopus:</span> :not_an_emoji_xyz:</p>');
  t.match((await render('$$x^2$$')).content, /^<p><span class="katex">.*<annotation encoding="application\/x-tex">x\^2<\/annotation>/);
  t.match((await render('```math\n\\frac{1}{2}\n```')).content, /^<span class="katex-display">/);
});

t.test('markdown - topic links follow the topic with its latest message (FL 347, 400), message links (FL 319), the empty topic (FL 346)', async (t) => {
  const base = `/#narrow/channel/${streamId}-${channel}`;
  const topic = uniq('linked');
  const first = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'first' });
  const second = await owner.ok('POST', '/messages', { type: 'stream', to: channel, topic, content: 'second' });
  const enc = encodeURIComponent(topic).replace(/[.!~*'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%/g, '.');
  t.equal((await render(`#**${channel}>${topic}**`)).content, `<p><a class="stream-topic" data-stream-id="${streamId}" href="${base}/topic/${enc}/with/${second.id}">#${channel} &gt; ${topic}</a></p>`, 'with/<its latest message> (FL 400; its first before)');
  t.equal((await render(`#**${channel}>${topic}@${first.id}**`)).content, `<p><a class="message-link" href="${base}/topic/${enc}/near/${first.id}">#${channel} &gt; ${topic} @ 💬</a></p>`, 'a message link');
  t.equal((await render(`#**${channel}>**`)).content, `<p><a class="stream-topic" data-stream-id="${streamId}" href="${base}/topic/">#${channel} &gt; <em>general chat</em></a></p>`, 'the empty topic, without messages');
  t.equal((await render(`#**${channel}>@7**`)).content, `<p><a class="message-link" href="${base}/topic//near/7">#${channel} &gt; <em>general chat</em> @ 💬</a></p>`, 'a message of the empty topic');
});

t.test('markdown - code blocks with a language, quotes, spoilers; HTML is escaped', async (t) => {
  t.equal((await render('```python\nprint("<b>")\n```')).content, '<div class="codehilite" data-code-language="python"><pre><span></span><code>print(&quot;&lt;b&gt;&quot;)\n</code></pre></div>');
  t.equal((await render('```\nplain\n```')).content, '<div class="codehilite"><pre><span></span><code>plain\n</code></pre></div>');
  t.equal((await render('> quoted')).content, '<blockquote>\n<p>quoted</p>\n</blockquote>');
  t.equal((await render('```quote\nq\n```')).content, '<blockquote>\n<p>q</p>\n</blockquote>');
  t.equal((await render('```spoiler Plot\nsecret\n```')).content, '<div class="spoiler-block"><div class="spoiler-header">\n<p>Plot</p>\n</div><div class="spoiler-content" aria-hidden="true">\n<p>secret</p>\n</div></div>');
  t.equal((await render('<script>alert(1)</script> <img src=x onerror=alert(1)>')).content, '<p>&lt;script&gt;alert(1)&lt;/script&gt; &lt;img src=x onerror=alert(1)&gt;</p>');
  t.match((await render('$$\\href{javascript:alert(1)}{x}$$')).content, /katex/);
  t.notMatch((await render('$$\\href{javascript:alert(1)}{x}$$')).content, /href="javascript/);
});

t.test('markdown - !avatar() and !gravatar() are plain text (FL 24)', async (t) => {
  t.equal((await render('!avatar(Maria Member)')).content, '<p>!avatar(Maria Member)</p>');
  t.equal((await render('!gravatar(Maria Member)')).content, '<p>!gravatar(Maria Member)</p>');
});

t.test('markdown - a topic wildcard in a topic with many participants needs permission', async (t) => {
  const own = await serverFor(t, { env: { PARLEY_WILDCARD_MENTION_THRESHOLD: '2' } });
  const ch = uniq('busy');
  await own.api.as(own.demo.owner).ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: ch }], principals: DEMO_KEYS.map((k) => own.demo[k].userId) });
  const topic = uniq('t');
  for (const key of ['owner', 'member2', 'guest'] as const) await own.api.as(own.demo[key]).ok('POST', '/messages', { type: 'stream', to: ch, topic, content: 'here' });
  const refused = await own.api.as(own.demo.member1).post('/messages', { type: 'stream', to: ch, topic, content: 'hey @**topic**' });
  t.same([refused.status, refused.body.code], [400, 'TOPIC_WILDCARD_MENTION_NOT_ALLOWED']);
  // Silent wildcards notify nobody, and a quiet topic is fine.
  await own.api.as(own.demo.member1).ok('POST', '/messages', { type: 'stream', to: ch, topic, content: 'hey @_**topic**' });
  await own.api.as(own.demo.member1).ok('POST', '/messages', { type: 'stream', to: ch, topic: uniq('quiet'), content: 'hey @**topic**' });
  // Administrators are in can_mention_many_users_group.
  await own.api.as(own.demo.admin).ok('POST', '/messages', { type: 'stream', to: ch, topic, content: 'hey @**topic**' });
});

t.test('markdown - plain chat lines skip the parser and render exactly as markdown-it renders them', async (t) => {
  const opts = { user: () => undefined };
  // Lines over the characters the shortcut takes and the ones next to them (a fuzzy link needs a period before letters).
  const line = fc.string({ unit: fc.constantFrom(...'abcxyzABZ019 ,.?!-:#@*_()[]<>&"\'\n'.split('')), minLength: 1, maxLength: 60 });
  fc.assert(
    fc.property(line, (text) => renderMessage(text, opts).html === renderParsed(text, opts).html),
    { seed: 20261124, numRuns: 20_000 },
  );
  for (const text of ['a message from the bench, about the length of a chat line', 'see example.com', 'v1.2 ok', 'a', 'Fine, thanks!']) {
    t.equal(renderMessage(text, opts).html, renderParsed(text, opts).html, text);
  }
  t.equal(renderMessage('see example.com', opts).html, '<p>see <a href="http://example.com">example.com</a></p>', 'a fuzzy link still becomes a link');
  const linkifiers = [compileLinkifier('bench', 'https://x.test/bench')!];
  t.not(renderMessage('the bench', { ...opts, linkifiers }).html, '<p>the bench</p>', 'a realm with linkifiers parses every line');
});

t.test('markdown - POST /messages/render: the realm renderer for every role (mentions, channel links as each sees them, linkifiers); nothing is sent', async (t) => {
  const roles = ['owner', 'admin', 'moderator', 'member1', 'guest', 'bot'] as const;
  const content = `**bold** @**Maria Member** #**${channel}**`;
  const link = `<a class="stream" data-stream-id="${streamId}" href="/#narrow/channel/${streamId}-${channel}">#${channel}</a>`;
  const before = (await owner.ok('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0 })).messages.at(-1)?.id;
  for (const role of roles) {
    const r = await s.api.as(s.demo[role]).ok('POST', '/messages/render', { content });
    t.equal(r.rendered, `<p><strong>bold</strong> <span class="user-mention" data-user-id="${s.demo.member1.userId}">@Maria Member</span> ${link}</p>`, role);
  }
  t.equal((await owner.ok('GET', '/messages', { anchor: 'newest', num_before: 1, num_after: 0 })).messages.at(-1)?.id, before, 'no message was sent');
  // A private channel links only for those who may see it.
  const secret = uniq('secret');
  await owner.ok('POST', '/users/me/subscriptions', { subscriptions: [{ name: secret }], invite_only: true });
  t.match((await owner.ok('POST', '/messages/render', { content: `#**${secret}**` })).rendered, 'class="stream"');
  t.equal((await s.api.as(s.demo.guest).ok('POST', '/messages/render', { content: `#**${secret}**` })).rendered, `<p>#<strong>${secret}</strong></p>`, 'not a link for a guest outside it');
  // The organization's linkifiers apply.
  const word = uniq('TICKET').replace(/[^A-Za-z]/g, '');
  const { id } = await owner.ok('POST', '/realm/filters', { pattern: `${word}-(?P<id>[0-9]+)`, url_template: 'https://tracker.example/{id}' });
  t.teardown(() => owner.ok('DELETE', `/realm/filters/${id}`));
  t.match((await maria.ok('POST', '/messages/render', { content: `see ${word}-42` })).rendered, '<a href="https://tracker.example/42"');
  t.equal((await maria.ok('POST', '/messages/render', { content: '' })).rendered, '');
  const missing = await maria.post('/messages/render', {});
  t.same([missing.status, missing.body.code, missing.body.var_name], [400, 'REQUEST_VARIABLE_MISSING', 'content']);
  t.equal((await s.api.post('/messages/render', { content: 'x' })).status, 401, 'without credentials');
});

t.test('markdown - the Python client: render_message', async (t) => {
  const out = runPython(s.urls[0]!, s.demo.member1, 'print(json.dumps(client.render_message({"content": "**foo** :smile:"})))') as { result: string; rendered: string };
  t.equal(out.result, 'success');
  t.match(out.rendered, /^<p><strong>foo<\/strong> <span aria-label="smile" class="emoji emoji-1f604" role="img" title="smile">:smile:<\/span><\/p>$/);
});
