/** Path templates with `{name}` segments, shared by the API routes and the pages. */
import type { RawParams } from './params.ts';

export const segmentsOf = (path: string): string[] => path.split('/').filter(Boolean);

const isParam = (segment: string): boolean => segment.startsWith('{') && segment.endsWith('}');

interface TrieNode<T> {
  literal: Map<string, TrieNode<T>>;
  /** Any `{name}` segment at this depth (templates may name it differently). */
  param: TrieNode<T> | null;
  /** Templates that end here, with their insertion order and parameter names. */
  ends: Array<{ value: T; order: number; names: string[] }>;
  /** Templates whose last parameter starts here and takes every segment left (`add`'s `tail`). */
  tails: Array<{ value: T; order: number; names: string[] }>;
}

const node = <T>(): TrieNode<T> => ({ literal: new Map(), param: null, ends: [], tails: [] });

/**
 * Path templates looked up segment by segment, so a lookup costs the path's
 * length, not the number of templates. A literal segment and a `{name}` at the
 * same depth are both tried; `match` returns every template that fits, in the
 * order they were added (the first one wins where callers want one).
 */
export class PathTable<T> {
  private root = node<T>();
  private added = 0;

  /**
   * `tail`: the template's last segment is a parameter that takes the rest of
   * the path, one segment or more, slashes included (Django's `<path:name>`).
   */
  add(template: string, value: T, opts: { tail?: boolean } = {}): void {
    let n = this.root;
    const names: string[] = [];
    const segments = segmentsOf(template);
    const last = segments.at(-1);
    if (opts.tail) {
      if (!last || !isParam(last)) throw new Error(`tail template ${template} must end with a parameter`);
      segments.pop();
    }
    for (const segment of segments) {
      if (isParam(segment)) {
        names.push(segment.slice(1, -1));
        n = n.param ??= node();
      } else {
        let next = n.literal.get(segment);
        if (!next) n.literal.set(segment, (next = node()));
        n = next;
      }
    }
    if (opts.tail) n.tails.push({ value, order: this.added++, names: [...names, last!.slice(1, -1)] });
    else n.ends.push({ value, order: this.added++, names });
  }

  /** Every template that fits `path`, with its path parameters (percent-decoded), in insertion order. */
  match(path: string): Array<{ value: T; params: RawParams }> {
    const parts = segmentsOf(path);
    const found: Array<{ value: T; params: RawParams; order: number }> = [];
    const walk = (n: TrieNode<T>, depth: number, captured: string[]): void => {
      if (n.tails.length && depth < parts.length) {
        let rest: string | null;
        try {
          rest = parts.slice(depth).map(decodeURIComponent).join('/');
        } catch {
          rest = null; // not a valid parameter
        }
        if (rest !== null) for (const t of n.tails) found.push({ value: t.value, order: t.order, params: new Map(t.names.map((name, i) => [name, i < captured.length ? captured[i]! : rest])) });
      }
      if (depth === parts.length) {
        for (const end of n.ends) found.push({ value: end.value, order: end.order, params: new Map(end.names.map((name, i) => [name, captured[i]!])) });
        return;
      }
      const part = parts[depth]!;
      const literal = n.literal.get(part);
      if (literal) walk(literal, depth + 1, captured);
      if (n.param) {
        let decoded: string;
        try {
          decoded = decodeURIComponent(part);
        } catch {
          return; // not a valid parameter: no template with a parameter here fits
        }
        walk(n.param, depth + 1, [...captured, decoded]);
      }
    };
    walk(this.root, 0, []);
    return found.sort((a, b) => a.order - b.order);
  }
}
