/**
 * Users' alert words (Zulip's `AlertWord`) and the index a send finds them
 * by, so that matching a message costs O(its length + the candidate words
 * + the users alerted), whatever the number of users keeping alert words.
 *
 * A word matches where the lower-cased content holds it with neither a
 * letter, a digit nor `_` on either side (`alertPattern`). Every maximal run
 * of such word characters in the word is then a maximal run of the content
 * too (the word's ends are bounded by the pattern, its inner runs by its own
 * other characters), so each word is indexed under one of its runs and a
 * send looks up only the runs its content holds; the pattern runs on those
 * candidates alone, and not at all for a word that is one run (the run found
 * is the match). A phrase is filed under its run with the fewest words filed
 * so far (`release 2 plan` under `2` rather than under `release`, which many
 * phrases may share), and stays there while anyone keeps it. A word with no
 * word character at all (`!!!`) is indexed under its first character, looked
 * up by the content's other characters.
 *
 * Only active users' words are indexed (a deactivated user receives no
 * message): `RealmState.indexUser` reports every change of a user's activity.
 * The index is built as the realm loads (each user's words set, from the
 * checkpoint or the tables): O(words) time, ~100 bytes per distinct word
 * (`bench/realm-alert-words.ts`); a change costs O(the user's words).
 */

/** Characters that make up words: a match may not touch one on either side. */
const WORD_RUN = /[\p{L}\p{N}_]+/gu;
const NON_WORD_CHAR = /[^\p{L}\p{N}_]/gu;
const ONE_RUN = /^[\p{L}\p{N}_]+$/u;

/**
 * A word in the index and the active users who keep it (one ID, the common
 * case, or a set), chained with the other words filed under the same key:
 * two small objects per distinct word at most, as a realm may hold
 * hundreds of thousands of words.
 */
interface Filed {
  readonly word: string;
  users: number | Set<number>;
  next: Filed | undefined;
}

/** Run or character -> the chain of words filed under it. */
type Index = Map<string, Filed>;

export class AlertWords {
  /** userId -> their alert words (lower-cased, as stored); users without any are absent. */
  private readonly byUser = new Map<number, readonly string[]>();
  /** Words with at least one word character, by one of their runs. */
  private readonly byRun: Index = new Map();
  /** Words without any word character, by their first character. */
  private readonly byChar: Index = new Map();
  /** Users whose words are in the index (active users with words). */
  private readonly indexed = new Set<number>();

  /** `isActive` tells whether a user's words count (read when words are set). */
  constructor(private readonly isActive: (userId: number) => boolean) {}

  get(userId: number): readonly string[] | undefined {
    return this.byUser.get(userId);
  }

  get size(): number {
    return this.byUser.size;
  }

  /** Each user with alert words and their words. */
  [Symbol.iterator](): IterableIterator<[number, readonly string[]]> {
    return this.byUser.entries();
  }

  /** Sets a user's words (an empty list: none). O(their old and new words). */
  set(userId: number, words: readonly string[]): void {
    this.unindex(userId);
    if (!words.length) {
      this.byUser.delete(userId);
      return;
    }
    this.byUser.set(userId, words);
    if (this.isActive(userId)) this.index(userId);
  }

  /** Forgets a user's words; whether they had any. */
  delete(userId: number): boolean {
    this.unindex(userId);
    return this.byUser.delete(userId);
  }

  /** A user was (de)activated: their words count again, or no longer. */
  userActivity(userId: number, active: boolean): void {
    if (active && !this.indexed.has(userId) && this.byUser.has(userId)) this.index(userId);
    else if (!active) this.unindex(userId);
  }

  /**
   * The active users one of whose words `content` holds as a whole word, in
   * any case. O(content length + candidate words + their users).
   */
  matching(content: string): Set<number> {
    const out = new Set<number>();
    if (!this.indexed.size) return out;
    const text = content.toLowerCase();
    const seen = new Set<string>();
    const consider = (index: Index, key: string, runs: boolean) => {
      if (seen.has(key)) return;
      seen.add(key);
      for (let f = index.get(key); f; f = f.next) {
        // A word that is the whole run found matches without a pattern.
        if (!((runs && f.word === key) || alertPattern(f.word).test(text))) continue;
        if (typeof f.users === 'number') out.add(f.users);
        else for (const id of f.users) out.add(id);
      }
    };
    for (const [run] of text.matchAll(WORD_RUN)) consider(this.byRun, run, true);
    if (this.byChar.size) for (const [c] of text.matchAll(NON_WORD_CHAR)) consider(this.byChar, c, false);
    return out;
  }

  private index(userId: number): void {
    for (const word of this.byUser.get(userId)!) {
      const w = word.toLowerCase();
      const keys = keysOf(w);
      const found = this.find(w, keys);
      if (!found) this.file(w, userId, keys);
      else if (typeof found.users === 'number') {
        if (found.users !== userId) found.users = new Set([found.users, userId]);
      } else found.users.add(userId);
    }
    this.indexed.add(userId);
  }

  private unindex(userId: number): void {
    if (!this.indexed.delete(userId)) return;
    for (const word of this.byUser.get(userId)!) {
      const w = word.toLowerCase();
      const keys = keysOf(w);
      const found = this.find(w, keys);
      if (!found) continue;
      if (typeof found.users === 'number') {
        if (found.users === userId) this.unfile(w, keys);
        continue;
      }
      found.users.delete(userId);
      // Back to one ID: a set is never left with fewer than two.
      if (found.users.size === 1) found.users = found.users.values().next().value!;
    }
  }

  /** The index's entry of a word, looked for under each of its runs (or its first character). */
  private find(w: string, keys: Keys): Filed | undefined {
    for (const [index, key] of keys) for (let f = index === 'run' ? this.byRun.get(key) : this.byChar.get(key); f; f = f.next) if (f.word === w) return f;
    return undefined;
  }

  /** Files a new word under its run with the fewest words filed (the longest of those), else its first character. */
  private file(w: string, userId: number, keys: Keys): void {
    let best: [Index, string] | null = null;
    let fewest = Infinity;
    for (const [which, key] of keys) {
      const index = which === 'run' ? this.byRun : this.byChar;
      let n = 0;
      for (let f = index.get(key); f && n <= fewest; f = f.next) n++; // past `fewest`: not a better key
      if (n < fewest || (n === fewest && key.length > best![1].length)) [best, fewest] = [[index, key], n];
    }
    const [index, key] = best!;
    index.set(key, { word: w, users: userId, next: index.get(key) });
  }

  private unfile(w: string, keys: Keys): void {
    for (const [which, key] of keys) {
      const index = which === 'run' ? this.byRun : this.byChar;
      let prev: Filed | undefined;
      for (let f = index.get(key); f; prev = f, f = f.next) {
        if (f.word !== w) continue;
        if (prev) prev.next = f.next;
        else if (f.next) index.set(key, f.next);
        else index.delete(key);
        return;
      }
    }
  }
}

/** Where a word may be filed: each of its runs of word characters, else its first character. */
type Keys = Array<['run' | 'char', string]>;

function keysOf(w: string): Keys {
  if (ONE_RUN.test(w)) return [['run', w]];
  const runs = [...w.matchAll(WORD_RUN)].map(([run]): ['run', string] => ['run', run]);
  return runs.length ? runs : [['char', w ? String.fromCodePoint(w.codePointAt(0)!) : '']];
}

const alertPatterns = new Map<string, RegExp>();

/** An alert word as a whole-word pattern over lower-cased text, compiled once per word (at most 10,000 kept). */
export function alertPattern(word: string): RegExp {
  let re = alertPatterns.get(word);
  if (!re) {
    if (alertPatterns.size >= 10_000) alertPatterns.clear();
    re = new RegExp(`(^|[^\\p{L}\\p{N}_])${word.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^\\p{L}\\p{N}_])`, 'u');
    alertPatterns.set(word, re);
  }
  return re;
}
