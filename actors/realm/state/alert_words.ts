/**
 * Users' alert words (Zulip's `AlertWord`) and the index a send finds them
 * by, so that matching a message costs O(its length + the candidate words
 * + the users alerted), whatever the number of users keeping alert words.
 *
 * A word matches where the lower-cased content holds it with neither a
 * letter, a digit nor `_` on either side (`alertPattern`). Every maximal run
 * of such word characters in the word is then a maximal run of the content
 * too (the word's ends are bounded by the pattern, its inner runs by its own
 * other characters), so each word is indexed under one of its runs (the
 * longest) and a send looks up only the runs its content holds; the pattern
 * runs on those candidates alone, and not at all for a word that is one run
 * (the run found is the match). A word with no word character at all (`!!!`)
 * is indexed under its first character, looked up by the content's other
 * characters.
 *
 * Only active users' words are indexed (a deactivated user receives no
 * message): `RealmState.indexUser` reports every change of a user's activity.
 */

/** Characters that make up words: a match may not touch one on either side. */
const WORD_RUN = /[\p{L}\p{N}_]+/gu;
const NON_WORD_CHAR = /[^\p{L}\p{N}_]/gu;

/** candidate key -> word -> the active users who keep it. */
type Index = Map<string, Map<string, Set<number>>>;

export class AlertWords {
  /** userId -> their alert words (lower-cased, as stored); users without any are absent. */
  private readonly byUser = new Map<number, readonly string[]>();
  /** Words with at least one word character, by their longest run. */
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
    const consider = (index: Index, key: string, direct: boolean) => {
      if (seen.has(key)) return;
      seen.add(key);
      for (const [word, users] of index.get(key) ?? []) {
        // A word that is the whole run found matches without a pattern.
        if ((direct && word === key) || alertPattern(word).test(text)) for (const id of users) out.add(id);
      }
    };
    for (const [run] of text.matchAll(WORD_RUN)) consider(this.byRun, run, true);
    if (this.byChar.size) {
      seen.clear();
      for (const [c] of text.matchAll(NON_WORD_CHAR)) consider(this.byChar, c, false);
    }
    return out;
  }

  private index(userId: number): void {
    for (const word of this.byUser.get(userId)!) {
      const [index, key] = keyOf(word);
      addTo(addTo(index === 'run' ? this.byRun : this.byChar, key, () => new Map()), word.toLowerCase(), () => new Set()).add(userId);
    }
    this.indexed.add(userId);
  }

  private unindex(userId: number): void {
    if (!this.indexed.delete(userId)) return;
    for (const word of this.byUser.get(userId)!) {
      const [which, key] = keyOf(word);
      const index = which === 'run' ? this.byRun : this.byChar;
      const words = index.get(key);
      const users = words?.get(word.toLowerCase());
      users?.delete(userId);
      if (users && !users.size) words!.delete(word.toLowerCase());
      if (words && !words.size) index.delete(key);
    }
  }
}

/** Where a word is indexed: its longest run of word characters, else its first character. */
function keyOf(word: string): ['run' | 'char', string] {
  const w = word.toLowerCase();
  let longest = '';
  for (const [run] of w.matchAll(WORD_RUN)) if (run.length > longest.length) longest = run;
  return longest ? ['run', longest] : ['char', w ? String.fromCodePoint(w.codePointAt(0)!) : ''];
}

function addTo<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let v = map.get(key);
  if (v === undefined) map.set(key, (v = make()));
  return v;
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
