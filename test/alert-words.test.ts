// The realm's alert-word index (actors/realm/state/alert_words.ts) against the rule it stands for:
// a user is alerted when the lower-cased content holds one of their words with no letter, digit or
// `_` on either side (`alertPattern`), which the realm tested for every user and word before.
import t from 'tap';
import { AlertWords, alertPattern } from '../actors/realm/state/alert_words.ts';

/** The rule, by walking every user and word (what a send did before the index). */
function walk(words: Map<number, string[]>, active: Set<number>, content: string): number[] {
  const text = content.toLowerCase();
  return [...words].filter(([id, ws]) => active.has(id) && ws.some((w) => alertPattern(w).test(text))).map(([id]) => id).sort((a, b) => a - b);
}

const sorted = (s: Set<number>) => [...s].sort((a, b) => a - b);

t.test('alert words - the index finds exactly whom the whole-word rule alerts, through changes, removals and (de)activations', async (t) => {
  // A small vocabulary, so that words share runs, phrases overlap and chains form under one key.
  const parts = ['go', 'go-live', 'launch', 'big', 'c', 'c++', '!!', '!!!', '?!', 'ärger', 'x_ray', 'x', 'ray', '2', 'v2.0', 'ünd', '(', 'Ok'];
  let seed = 20;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const pick = () => parts[rand(parts.length)]!;
  const word = () => [pick(), ...(rand(3) === 0 ? [pick()] : [])].join(rand(2) ? ' ' : '').toLowerCase();
  const content = () => Array.from({ length: 1 + rand(8) }, () => (rand(4) ? pick() : pick().toUpperCase())).join([' ', ' ', ', ', '-', ''][rand(5)]!);

  const active = new Set(Array.from({ length: 30 }, (_, i) => i + 1));
  const index = new AlertWords((id) => active.has(id));
  const words = new Map<number, string[]>();
  let checked = 0;
  let alerts = 0;
  for (let step = 0; step < 3000; step++) {
    const user = 1 + rand(30);
    const op = rand(10);
    if (op < 5) {
      const next = [...new Set([...(words.get(user) ?? []), ...Array.from({ length: 1 + rand(3) }, word)])];
      words.set(user, next);
      index.set(user, next);
    } else if (op < 7) {
      const next = (words.get(user) ?? []).filter(() => rand(2) === 0);
      if (next.length) words.set(user, next);
      else words.delete(user);
      index.set(user, next);
    } else if (op < 8) {
      words.delete(user);
      index.delete(user);
    } else if (op < 9) {
      active.delete(user);
      index.userActivity(user, false);
    } else {
      active.add(user);
      index.userActivity(user, true);
    }
    for (let i = 0; i < 3; i++) {
      const c = content();
      const expected = walk(words, active, c);
      const got = sorted(index.matching(c));
      checked++;
      alerts += expected.length;
      if (JSON.stringify(got) !== JSON.stringify(expected)) {
        t.same(got, expected, `step ${step}: ${JSON.stringify(c)} with ${JSON.stringify([...words].filter(([id]) => active.has(id)))}`);
        return;
      }
    }
  }
  t.ok(alerts > 1000, `${checked} contents matched as the rule says (${alerts} alerts among them)`);
  t.same([...index].length, words.size, 'every user with words is listed, whether active or not');
});

t.test('alert words - a user set while inactive is found once active', async (t) => {
  const active = new Set<number>();
  const index = new AlertWords((id) => active.has(id));
  index.set(1, ['deploy']);
  t.same(sorted(index.matching('Deploy now')), [], 'not while inactive');
  active.add(1);
  index.userActivity(1, true);
  t.same(sorted(index.matching('Deploy now')), [1]);
  t.ok(index.delete(1), 'delete says the user had words');
  t.same(sorted(index.matching('Deploy now')), []);
  t.notOk(index.delete(1));
});
