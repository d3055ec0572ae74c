/**
 * Linkifiers: Python-dialect patterns translated to JavaScript regular
 * expressions, RFC 6570 URL templates (expanded by `url-template`), and
 * applying them to text. Zulip compiles patterns with RE2, so what RE2
 * refuses (lookarounds, backreferences, possessive quantifiers) is refused
 * here too, with a message saying why.
 */
import { parseTemplate } from 'url-template';

/** Why a pattern or template is refused (the message is the API error's). */
export class LinkifierError extends Error {}

export interface TranslatedPattern {
  source: string;
  flags: string;
  groups: string[];
}

const REFUSED: Array<[RegExp, string]> = [
  [/^\(\?[=!]/, 'lookahead assertions are not supported'],
  [/^\(\?<[=!]/, 'lookbehind assertions are not supported'],
  [/^\(\?P=/, 'backreferences are not supported'],
  [/^\(\?#/, 'comments are not supported'],
  [/^\(\?\(/, 'conditional groups are not supported'],
  [/^\(\?>/, 'atomic groups are not supported'],
];

/** Translates a Python regular expression (named groups `(?P<name>...)`) into a JavaScript one. */
export function translatePattern(pattern: string): TranslatedPattern {
  let out = '';
  let flags = '';
  let inClass = false;
  const groups: string[] = [];
  let i = 0;
  // Inline flags are allowed at the very start only, as in modern Python.
  const lead = /^\(\?([a-zA-Z]+)\)/.exec(pattern);
  if (lead) {
    for (const f of lead[1]!) {
      if (f === 'i' || f === 'm' || f === 's') flags += flags.includes(f) ? '' : f;
      else if (f !== 'u') throw new LinkifierError(`the inline flag '${f}' is not supported`);
    }
    i = lead[0].length;
  }
  while (i < pattern.length) {
    const ch = pattern[i]!;
    const rest = pattern.slice(i);
    if (ch === '\\') {
      const next = pattern[i + 1];
      if (next === undefined) throw new LinkifierError('bad escape (end of pattern)');
      if (!inClass && /[1-9]/.test(next)) throw new LinkifierError('backreferences are not supported');
      if (next === 'Z' || next === 'z') out += '$';
      else if (next === 'A') out += '^';
      else if (next === 'N') throw new LinkifierError('named Unicode escapes are not supported');
      else out += ch + next;
      i += 2;
      continue;
    }
    if (inClass) {
      if (ch === ']') inClass = false;
      out += ch;
      i++;
      continue;
    }
    if (ch === '[') {
      inClass = true;
      out += ch;
      // A leading ']' (or '^]') is a literal in Python.
      if (pattern[i + 1] === '^') {
        out += '^';
        i++;
      }
      if (pattern[i + 1] === ']') {
        out += '\\]';
        i++;
      }
      i++;
      continue;
    }
    if (ch === '(' && pattern[i + 1] === '?') {
      for (const [re, why] of REFUSED) if (re.test(rest)) throw new LinkifierError(why);
      const named = /^\(\?P<([A-Za-z_][A-Za-z0-9_]*)>/.exec(rest);
      if (named) {
        if (groups.includes(named[1]!)) throw new LinkifierError(`redefinition of group name '${named[1]}'`);
        groups.push(named[1]!);
        out += `(?<${named[1]}>`;
        i += named[0].length;
        continue;
      }
      if (rest.startsWith('(?:')) {
        out += '(?:';
        i += 3;
        continue;
      }
      if (/^\(\?<[A-Za-z_]/.test(rest)) throw new LinkifierError("named groups are written (?P<name>...)");
      throw new LinkifierError('unknown extension ' + rest.slice(0, 3));
    }
    if ((ch === '+' || ch === '*' || ch === '?' || ch === '}') && pattern[i + 1] === '+') throw new LinkifierError('possessive quantifiers are not supported');
    out += ch;
    i++;
  }
  if (inClass) throw new LinkifierError('unterminated character set');
  try {
    new RegExp(out, flags);
  } catch (err) {
    throw new LinkifierError((err as Error).message.replace(/^Invalid regular expression: /, ''));
  }
  return { source: out, flags, groups };
}

const VARSPEC = /^[A-Za-z0-9_.%]+(?::[1-9][0-9]{0,3}|\*)?$/;

/** The variables of an RFC 6570 template; throws if it is not a valid template. */
export function templateVariables(template: string): string[] {
  const vars: string[] = [];
  let depth = 0;
  for (const ch of template) {
    if (ch === '{') depth++;
    if (ch === '}') depth--;
    if (depth < 0 || depth > 1) throw new LinkifierError('Invalid URL template.');
  }
  if (depth !== 0) throw new LinkifierError('Invalid URL template.');
  for (const m of template.matchAll(/\{([^}]*)\}/g)) {
    let expr = m[1]!;
    if (/^[+#./;?&]/.test(expr)) expr = expr.slice(1);
    if (!expr) throw new LinkifierError('Invalid URL template.');
    for (const spec of expr.split(',')) {
      if (!VARSPEC.test(spec)) throw new LinkifierError('Invalid URL template.');
      vars.push(spec.replace(/(:\d+|\*)$/, ''));
    }
  }
  return [...new Set(vars)];
}

/** Checks a URL template: valid RFC 6570, expanding to an absolute URL. */
export function checkUrlTemplate(template: string): string[] {
  const vars = templateVariables(template);
  try {
    new URL(parseTemplate(template).expand(Object.fromEntries(vars.map((v) => [v, 'x']))));
  } catch {
    throw new LinkifierError('Invalid URL template.');
  }
  return vars;
}

/** Fills a reverse template: `{name}` takes the value, doubled braces are literal braces. */
export function fillReverseTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string | undefined) => (whole === '{{' ? '{' : whole === '}}' ? '}' : (values[name!] ?? whole)));
}

/** The variables of a reverse template (doubled braces are not variables). */
export function reverseTemplateVariables(template: string): string[] {
  const out: string[] = [];
  for (const m of template.matchAll(/\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) if (m[1]) out.push(m[1]);
  return out;
}

/** A linkifier ready to apply: its pattern compiled with Zulip's boundaries, and its template. */
export interface CompiledLinkifier {
  regex: RegExp;
  template: ReturnType<typeof parseTemplate>;
}

/**
 * Compiles a stored linkifier. A match must start after whitespace, a quote,
 * a parenthesis, a comma, a colon or '<' (or at the start) and must not be
 * followed by a word character, as in Zulip's Markdown processor.
 */
export function compileLinkifier(pattern: string, urlTemplate: string): CompiledLinkifier | null {
  try {
    const t = translatePattern(pattern);
    return { regex: new RegExp(`(?<![^\\s'"(,:<])(?:${t.source})(?!\\w)`, `g${t.flags}`), template: parseTemplate(urlTemplate) };
  } catch {
    return null;
  }
}

export interface LinkMatch {
  start: number;
  end: number;
  text: string;
  url: string;
}

/** Every linkifier match in `text`, earliest first; where matches overlap, the earlier linkifier wins. */
export function findLinks(text: string, linkifiers: readonly CompiledLinkifier[]): LinkMatch[] {
  const found: LinkMatch[] = [];
  for (const l of linkifiers) {
    l.regex.lastIndex = 0;
    for (const m of text.matchAll(l.regex)) {
      if (!m[0]) continue;
      const start = m.index!;
      const end = start + m[0].length;
      if (found.some((f) => start < f.end && f.start < end)) continue;
      found.push({ start, end, text: m[0], url: l.template.expand({ ...(m.groups ?? {}) }) });
    }
  }
  return found.sort((a, b) => a.start - b.start);
}

/** A topic's links: its linkifier matches and the URLs written in it (Zulip's `topic_links`). */
export function topicLinks(topic: string, linkifiers: readonly CompiledLinkifier[]): Array<{ text: string; url: string }> {
  const links = findLinks(topic, linkifiers);
  for (const m of topic.matchAll(/\bhttps?:\/\/[^\s<>"]+[^\s<>".,;:!?)\]]/g)) {
    const start = m.index!;
    if (!links.some((l) => start < l.end && l.start < start + m[0].length)) links.push({ start, end: start + m[0].length, text: m[0], url: m[0] });
  }
  return links.sort((a, b) => a.start - b.start).map(({ text, url }) => ({ text, url }));
}
