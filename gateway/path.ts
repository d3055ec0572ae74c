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
}

const node = <T>(): TrieNode<T> => ({ literal: new Map(), param: null, ends: [] });

/**
 * Path templates looked up segment by segment, so a lookup costs the path's
 * length, not the number of templates. A literal segment and a `{name}` at the
 * same depth are both tried; `match` returns every template that fits, in the
 * order they were added (the first one wins where callers want one).
 */
export class PathTable<T> {
  private root = node<T>();
  private added = 0;

  add(template: string, value: T): void {
    let n = this.root;
    const names: string[] = [];
    for (const segment of segmentsOf(template)) {
      if (isParam(segment)) {
        names.push(segment.slice(1, -1));
        n = n.param ??= node();
      } else {
        let next = n.literal.get(segment);
        if (!next) n.literal.set(segment, (next = node()));
        n = next;
      }
    }
    n.ends.push({ value, order: this.added++, names });
  }

  /** Every template that fits `path`, with its path parameters (percent-decoded), in insertion order. */
  match(path: string): Array<{ value: T; params: RawParams }> {
    const parts = segmentsOf(path);
    const found: Array<{ value: T; params: RawParams; order: number }> = [];
    const walk = (n: TrieNode<T>, depth: number, captured: string[]): void => {
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
