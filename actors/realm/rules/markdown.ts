/**
 * Message rendering: Zulip's message dialect on markdown-it (raw HTML
 * disabled, so user content cannot inject markup; whatever cannot be rendered
 * stays as escaped text, never executed).
 *
 * Zulip's syntax is added as markdown-it inline rules, so none of it applies
 * inside code: user mentions `@**Full Name**`, `@**Full Name|id**`, silent
 * `@_**Name**`, wildcards (`@**all**`, `@**topic**`, ...), group mentions
 * `@*group*`, channel and topic links `#**channel**`, `#**channel>topic**`,
 * `<time:...>`, emoji `:name:` and inline math `$$...$$`; and fenced blocks
 * for code with a language, `quote`, `spoiler` and `math` (KaTeX). An image
 * link to an uploaded audio file is an audio player (FL 405).
 *
 * `renderMessage(content, options)` takes lookups for names (and takes the
 * older `(name, id) => user` function as well). More hooks (linkifiers) join
 * `RenderOptions`.
 */
import { createRequire } from 'node:module';
import MarkdownIt from 'markdown-it';
import { lookup as mimeType } from 'mime-types';
import type Token from 'markdown-it/lib/token.mjs';
import { type CompiledLinkifier, findLinks } from '../../../lib/linkifiers.ts';
import type StateInline from 'markdown-it/lib/rules_inline/state_inline.mjs';
import { unicodeCode } from './emoji.ts';

interface Katex {
  renderToString(tex: string, opts: { displayMode: boolean; throwOnError: boolean; trust: boolean }): string;
}
const katex = createRequire(import.meta.url)('katex') as Katex;

export interface MentionTarget {
  id: number;
  fullName: string;
}

/** What rendering needs to know of the realm; every lookup answers undefined for names it does not know. */
export interface RenderOptions {
  user: (name: string, id: number | null) => MentionTarget | undefined;
  channel?: (name: string) => { id: number; name: string } | undefined;
  /** The message of the channel's topic that a topic link follows with the `with` operator (Zulip: its latest, FL 400); undefined for a topic without messages. */
  topicMessage?: (channelId: number, topic: string) => number | undefined;
  group?: (name: string) => { id: number; name: string } | undefined;
  /** A system group by its name (`role:members`), which may only be mentioned silently (FL 333): its ID and display name. */
  systemGroup?: (name: string) => { id: number; name: string } | undefined;
  /** The realm's custom emoji by name. */
  emoji?: (name: string) => { sourceUrl: string } | undefined;
  /** The realm's linkifiers, applied to text outside links and code. */
  linkifiers?: readonly CompiledLinkifier[];
  /** The language of fenced blocks that name none (the realm's `default_code_block_language`; '' for none). */
  defaultCodeBlockLanguage?: string;
}

export interface Rendered {
  html: string;
  mentions: number[];
  /** Groups mentioned (by ID). */
  groupMentions: number[];
  wildcard: 'stream' | 'topic' | null;
}

interface Env {
  opts: RenderOptions;
  mentions: Set<number>;
  groups: Set<number>;
  wildcard: Rendered['wildcard'];
}

const WILDCARDS: Record<string, 'stream' | 'topic'> = { all: 'stream', everyone: 'stream', channel: 'stream', stream: 'stream', topic: 'topic' };

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Zulip's encoding of a narrow URL component (`encodeHashComponent`). */
const hashComponent = (s: string): string => encodeURIComponent(s).replace(/[.!~*'()]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%/g, '.');

const md = new MarkdownIt({ html: false, linkify: true, breaks: true });

/** Adds an inline rule that matches `re` (anchored) at the current position and renders with `render`. */
function inlineRule(name: string, first: string, re: RegExp, render: (m: RegExpExecArray, env: Env) => string | null): void {
  const sticky = new RegExp(re.source, 'y');
  md.inline.ruler.before('text', name, (state: StateInline, silent: boolean) => {
    if (!first.includes(state.src[state.pos]!)) return false;
    sticky.lastIndex = state.pos;
    const m = sticky.exec(state.src);
    if (!m) return false;
    const html = render(m, state.env as Env);
    if (html === null) return false;
    if (!silent) state.push('zulip_html', '', 0).content = html;
    state.pos += m[0].length;
    return true;
  });
}
md.renderer.rules.zulip_html = (tokens, idx) => tokens[idx]!.content;

/**
 * The realm's linkifiers (`RenderOptions.linkifiers`) turn matching text into
 * links; text already inside a link or code is left alone.
 */
md.core.ruler.after('linkify', 'linkifiers', (state) => {
  const linkifiers = (state.env as Env).opts?.linkifiers;
  if (!linkifiers?.length) return;
  for (const block of state.tokens) {
    if (block.type !== 'inline' || !block.children) continue;
    const out: Token[] = [];
    let inLink = 0;
    for (const tok of block.children) {
      if (tok.type === 'link_open') inLink++;
      if (tok.type === 'link_close') inLink--;
      const matches = tok.type === 'text' && inLink === 0 ? findLinks(tok.content, linkifiers) : [];
      if (!matches.length) {
        out.push(tok);
        continue;
      }
      let at = 0;
      const text = (content: string) => {
        const t = new state.Token('text', '', 0);
        t.content = content;
        out.push(t);
      };
      for (const m of matches) {
        if (m.start > at) text(tok.content.slice(at, m.start));
        const open = new state.Token('link_open', 'a', 1);
        open.attrs = [['href', m.url]];
        out.push(open);
        text(m.text);
        out.push(new state.Token('link_close', 'a', -1));
        at = m.end;
      }
      if (at < tok.content.length) text(tok.content.slice(at));
    }
    block.children = out;
  }
});

inlineRule('mention', '@', /@(_?)\*\*([^*\n]+?)\*\*/, (m, env) => {
  const silent = m[1] === '_';
  const [name, idText] = m[2]!.split('|') as [string, string | undefined];
  const wild = idText === undefined ? WILDCARDS[name.trim().toLowerCase()] : undefined;
  const cls = silent ? ' silent' : '';
  const text = `${silent ? '' : '@'}${escapeHtml(name.trim())}`;
  if (wild === 'topic') {
    if (!silent && env.wildcard === null) env.wildcard = 'topic';
    return `<span class="topic-mention${cls}">${text}</span>`;
  }
  if (wild === 'stream') {
    if (!silent) env.wildcard = 'stream';
    return `<span class="user-mention channel-wildcard-mention${cls}" data-user-id="*">${text}</span>`;
  }
  const user = env.opts.user(name.trim(), idText !== undefined && /^\d+$/.test(idText) ? Number(idText) : null);
  if (!user) return null;
  if (!silent) env.mentions.add(user.id);
  return `<span class="user-mention${cls}" data-user-id="${user.id}">${silent ? '' : '@'}${escapeHtml(user.fullName)}</span>`;
});

inlineRule('group_mention', '@', /@(_?)\*([^*\n]+?)\*/, (m, env) => {
  if (m[1] === '_') {
    const system = env.opts.systemGroup?.(m[2]!.trim());
    if (system) return `<span class="user-group-mention silent" data-user-group-id="${system.id}">${escapeHtml(system.name)}</span>`;
  }
  const group = env.opts.group?.(m[2]!.trim());
  if (!group) return null;
  const silent = m[1] === '_';
  if (!silent) env.groups.add(group.id);
  return `<span class="user-group-mention${silent ? ' silent' : ''}" data-user-group-id="${group.id}">${silent ? '' : '@'}${escapeHtml(group.name)}</span>`;
});

/** Zulip's `Message.EMPTY_TOPIC_FALLBACK_NAME`: how links show the empty topic (FL 346). */
const EMPTY_TOPIC_FALLBACK_NAME = 'general chat';

/**
 * `#**channel**`, `#**channel>topic**` (FL 347: following the topic's moves
 * with one of its messages as the `with` operand, its latest since FL 400) and
 * `#**channel>topic@id**` (FL 319: a `message-link` to one message). The
 * topic may be empty (FL 346): shown as Zulip's fallback name in `<em>`.
 */
inlineRule('channel_link', '#', /#\*\*([^*\n]+?)\*\*/, (m, env) => {
  const [channelName, ...rest] = m[1]!.split('>');
  const channel = env.opts.channel?.(channelName!.trim());
  if (!channel) return null;
  const base = `/#narrow/channel/${channel.id}-${hashComponent(channel.name)}`;
  if (!rest.length) return `<a class="stream" data-stream-id="${channel.id}" href="${base}">#${escapeHtml(channel.name)}</a>`;
  let topic = rest.join('>').trim();
  const near = /@(\d+)$/.exec(topic);
  if (near) topic = topic.slice(0, near.index).trim();
  const shown = `#${escapeHtml(channel.name)} &gt; ${topic === '' ? `<em>${EMPTY_TOPIC_FALLBACK_NAME}</em>` : escapeHtml(topic)}`;
  const topicUrl = `${base}/topic/${hashComponent(topic)}`;
  if (near) return `<a class="message-link" href="${topicUrl}/near/${near[1]}">${shown} @ 💬</a>`;
  const latest = env.opts.topicMessage?.(channel.id, topic);
  return `<a class="stream-topic" data-stream-id="${channel.id}" href="${latest === undefined ? topicUrl : `${topicUrl}/with/${latest}`}">${shown}</a>`;
});

inlineRule('time', '<', /<time:([^>\n]+)>/, (m) => {
  const text = m[1]!;
  const when = /^\d+$/.test(text) ? new Date(Number(text) * 1000) : new Date(text);
  // An invalid time stays the text it was, escaped (FL 451; a `timestamp-error` element before).
  if (Number.isNaN(when.getTime())) return escapeHtml(m[0]);
  return `<time datetime="${when.toISOString().replace(/\.\d{3}Z$/, 'Z')}">${escapeHtml(text)}</time>`;
});

inlineRule('emoji', ':', /:([a-z0-9_.+-]+):/, (m, env) => {
  const custom = env.opts.emoji?.(m[1]!);
  if (custom) return `<img alt=":${escapeHtml(m[1]!)}:" class="emoji" src="${escapeHtml(custom.sourceUrl)}" title="${escapeHtml(m[1]!.replace(/_/g, ' '))}">`;
  const code = unicodeCode(m[1]!);
  if (!code) return null;
  return `<span aria-label="${escapeHtml(m[1]!.replace(/_/g, ' '))}" class="emoji emoji-${code}" role="img" title="${escapeHtml(m[1]!.replace(/_/g, ' '))}">:${escapeHtml(m[1]!)}:</span>`;
});

inlineRule('math', '$', /\$\$([^$\n]+?)\$\$/, (m) => katex.renderToString(m[1]!, { displayMode: false, throwOnError: false, trust: false }));

md.renderer.rules.fence = (tokens, idx, _options, env: Env) => {
  const token = tokens[idx]!;
  const [named = '', ...rest] = token.info.trim().split(/\s+/);
  // As Zulip's fenced-code preprocessor: a block naming no language takes the realm's default, quote and math included.
  const lang = named || env.opts.defaultCodeBlockLanguage || '';
  const body = token.content;
  switch (lang.toLowerCase()) {
    case 'math':
    case 'tex':
    case 'latex':
      return `${katex.renderToString(body.trim(), { displayMode: true, throwOnError: false, trust: false })}\n`;
    case 'quote':
      return `<blockquote>\n${md.render(body, env)}</blockquote>\n`;
    case 'spoiler':
      return `<div class="spoiler-block"><div class="spoiler-header">\n${rest.length ? md.render(rest.join(' '), env) : ''}</div><div class="spoiler-content" aria-hidden="true">\n${md.render(body, env)}</div></div>\n`;
    default: {
      const language = lang ? ` data-code-language="${escapeHtml(lang)}"` : '';
      return `<div class="codehilite"${language}><pre><span></span><code>${escapeHtml(body)}</code></pre></div>\n`;
    }
  }
};
/**
 * Image syntax (FL 437). `![name](/user_uploads/...)` naming an audio file:
 * Zulip's player markup (FL 405), `<audio controls preload="metadata" src
 * title>`, the title being the link's text (none when empty); the file is
 * known as audio by its name's extension, as its upload's content type was
 * guessed. Any other image syntax renders as a link to its URL, as a link
 * to an image does (FL 276): this server makes no image previews
 * (`server_inline_image_preview` false), and never has a client load a
 * third-party image.
 */
md.renderer.rules.image = (tokens, idx, options, env, self) => {
  const token = tokens[idx]!;
  const src = token.attrGet('src') ?? '';
  const text = self.renderInlineAsText(token.children ?? [], options, env);
  const type = src.startsWith('/user_uploads/') ? mimeType(src.split(/[?#]/, 1)[0]!) : false;
  if (type && type.startsWith('audio/')) return `<audio controls preload="metadata" src="${escapeHtml(src)}"${text ? ` title="${escapeHtml(text)}"` : ''}></audio>`;
  return `<a href="${escapeHtml(src)}">${escapeHtml(text || src)}</a>`;
};

md.renderer.rules.code_block = (tokens, idx) => `<div class="codehilite"><pre><span></span><code>${escapeHtml(tokens[idx]!.content)}</code></pre></div>\n`;

/**
 * Text that renders as one paragraph of itself, whatever the realm: it starts
 * with a letter, ends with neither a space nor a period, and holds only
 * letters, digits, spaces and `,.?!` with no period followed by a letter or
 * digit, so no Markdown, Zulip syntax, HTML character, emoticon or fuzzy link
 * (`example.com`) can be in it (a property test holds this to markdown-it's
 * output). Most chat lines are such text; they skip the parser.
 */
const PLAIN = /^[A-Za-z](?:[A-Za-z0-9 ,?!]|\.(?![A-Za-z0-9]))*[A-Za-z0-9,?!]$|^[A-Za-z]$/;

/** Renders a message's content with the realm's lookups. */
export function renderMessage(content: string, options: RenderOptions | RenderOptions['user']): Rendered {
  const opts = typeof options === 'function' ? { user: options } : options;
  // A linkifier's pattern may match any text, so a realm with one always parses.
  if (!opts.linkifiers?.length && PLAIN.test(content)) return { html: `<p>${content}</p>`, mentions: [], groupMentions: [], wildcard: null };
  return renderParsed(content, opts);
}

/** `renderMessage` without the plain-text shortcut: markdown-it every time. */
export function renderParsed(content: string, opts: RenderOptions): Rendered {
  const env: Env = { opts, mentions: new Set(), groups: new Set(), wildcard: null };
  const html = md.render(content, env).trimEnd();
  return { html, mentions: [...env.mentions], groupMentions: [...env.groups], wildcard: env.wildcard };
}

/** Renders a channel description (no mentions). */
export const renderDescription = (text: string): string => (text ? md.render(text, { opts: { user: () => undefined }, mentions: new Set(), groups: new Set(), wildcard: null } satisfies Env).trimEnd() : '');
