/**
 * Message rendering: CommonMark via markdown-it (raw HTML disabled, so user
 * content cannot inject markup) plus Zulip's mention syntax, `@**Full Name**`,
 * `@**Full Name|id**` and silent `@_**Full Name**`.
 */
import MarkdownIt from 'markdown-it';
import type Token from 'markdown-it/lib/token.mjs';
import { type CompiledLinkifier, findLinks } from '../../lib/linkifiers.ts';

const md = new MarkdownIt({ html: false, linkify: true, breaks: true });

/**
 * The realm's linkifiers (passed in the render environment) turn matching
 * text into links; text already inside a link or code is left alone.
 */
md.core.ruler.after('linkify', 'linkifiers', (state) => {
  const linkifiers = (state.env as { linkifiers?: CompiledLinkifier[] }).linkifiers;
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
const MENTION = /@(_?)\*\*([^*\n]+?)\*\*/g;
const WILDCARDS: Record<string, 'stream' | 'topic'> = { all: 'stream', everyone: 'stream', channel: 'stream', stream: 'stream', topic: 'topic' };

export interface MentionTarget {
  id: number;
  fullName: string;
}

export interface Rendered {
  html: string;
  mentions: number[];
  wildcard: 'stream' | 'topic' | null;
}

const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Renders content; `lookup` resolves a mention's name (and optional id) to a user. */
export function renderMessage(content: string, lookup: (name: string, id: number | null) => MentionTarget | undefined, linkifiers: readonly CompiledLinkifier[] = []): Rendered {
  const spans: string[] = [];
  const mentions = new Set<number>();
  let wildcard: Rendered['wildcard'] = null;
  // Mentions become private-use placeholders that markdown-it passes through
  // untouched; a forged placeholder can only repeat this message's own spans.
  const source = content.replace(MENTION, (whole, silent: string, inner: string) => {
    const [name, idText] = inner.split('|') as [string, string | undefined];
    const wild = WILDCARDS[name.trim().toLowerCase()];
    let html: string;
    if (wild && !idText) {
      if (!silent) wildcard = wildcard === 'stream' || wild === 'stream' ? 'stream' : 'topic';
      html = `<span class="user-mention${silent ? ' silent' : ''}" data-user-id="*">@${escapeHtml(name)}</span>`;
    } else {
      const user = lookup(name.trim(), idText !== undefined && /^\d+$/.test(idText) ? Number(idText) : null);
      if (!user) return whole;
      if (!silent) mentions.add(user.id);
      html = `<span class="user-mention${silent ? ' silent' : ''}" data-user-id="${user.id}">@${escapeHtml(user.fullName)}</span>`;
    }
    spans.push(html);
    return `\uE000${spans.length - 1}\uE001`;
  });
  const html = md
    .render(source, { linkifiers })
    .trimEnd()
    .replace(/\uE000(\d+)\uE001/g, (_, i: string) => spans[Number(i)] ?? '');
  return { html, mentions: [...mentions], wildcard };
}

/** Renders a channel description (no mentions). */
export const renderDescription = (text: string): string => (text ? md.render(text).trimEnd() : '');
