// Prints, for each suite log given, the innermost failed assertions with the
// first lines of their diagnostics: the end of a CI run's output then says why
// a case failed, not only which. Usage: node test/failures.mjs LOG...
import { readFileSync } from 'node:fs';

const MAX_LINES_PER_LOG = 60;
const MAX_DIAG_LINES = 12;

for (const file of process.argv.slice(2)) {
  let lines;
  try {
    lines = readFileSync(file, 'utf8').split('\n');
  } catch {
    continue;
  }
  const out = [];
  for (let i = 0; i < lines.length && out.length < MAX_LINES_PER_LOG; i++) {
    const m = /^(\s*)not ok \d+ - (.*)$/.exec(lines[i]);
    if (!m) continue;
    const indent = m[1].length;
    out.push(`${file.split('/').pop()}: ${'  '.repeat(indent / 4)}not ok - ${m[2]}`);
    // A file's own line repeats its cases; its diagnostics are the tap runner's.
    if (indent === 0 || lines[i + 1]?.trim() !== '---') continue;
    let n = 0;
    for (let j = i + 2; j < lines.length && lines[j].trim() !== '...' && n < MAX_DIAG_LINES; j++, n++) {
      if (/^\s*(at|stack|source):/.test(lines[j])) break;
      out.push(`    ${lines[j].trim().slice(0, 300)}`);
    }
  }
  if (out.length) console.log(out.join('\n'));
}
