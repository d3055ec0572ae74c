/**
 * Message rendering: CommonMark via markdown-it (raw HTML disabled, so user
 * content cannot inject markup) plus Zulip's mention syntax, `@**Full Name**`,
 * `@**Full Name|id**` and silent `@_**Full Name**`.
 */
import MarkdownIt from 'markdown-it';

const md = new MarkdownIt({ html: false, linkify: true, breaks: true });
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
export function renderMessage(content: string, lookup: (name: string, id: number | null) => MentionTarget | undefined): Rendered {
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
    .render(source)
    .trimEnd()
    .replace(/\uE000(\d+)\uE001/g, (_, i: string) => spans[Number(i)] ?? '');
  return { html, mentions: [...mentions], wildcard };
}

/** Renders a channel description (no mentions). */
export const renderDescription = (text: string): string => (text ? md.render(text).trimEnd() : '');
