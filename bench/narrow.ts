/**
 * A narrow's cost per message scanned, by operand size:
 * `node --import tsx bench/narrow.ts [--messages N]`. Matches N message views
 * against a `sender` narrow naming 1, 100 and 1,000 user IDs (the cap,
 * `NARROW_LIMITS` in lib/narrow.ts) and prints the time of each; with narrows
 * compiled once (`compileNarrow`) the three should be about the same.
 */
import { parseArgs } from 'node:util';
import { matchesNarrow, NARROW_LIMITS, type MessageView, type NarrowTerm } from '../lib/narrow.ts';

const { values } = parseArgs({ options: { messages: { type: 'string', default: '20000' } } });
const count = Number(values.messages);
const views: MessageView[] = Array.from({ length: count }, (_, i) => ({ id: i, type: 'stream', streamId: 1, topic: 't', senderId: 1 + (i % 50), dmUserIds: null, content: 'hello world', flags: [] }));
for (const n of [1, 100, NARROW_LIMITS.operandItems]) {
  const narrow: NarrowTerm[] = [{ operator: 'sender', operand: Array.from({ length: n }, (_, i) => (i === n - 1 ? 7 : 100_000 + i)), negated: false }];
  const t0 = performance.now();
  let hits = 0;
  for (const v of views) if (matchesNarrow(narrow, v)) hits++;
  console.log(`sender operand of ${n} IDs, ${count} messages: ${(performance.now() - t0).toFixed(1)} ms (${hits} matches)`);
}
