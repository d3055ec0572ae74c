#!/usr/bin/env node
// Counts test cases in the raw TAP of one `tap --reporter=tap` run.
//
//   node test/count.mjs <tap log | -> [expected test files...]
//
// A case is a subtest directly inside a test file (the first level of
// subtests under a file). A file without subtests counts as one case: it
// passes if the file passed. Also counted as failed cases:
//   - a case that started but never reported (the process died in it),
//   - a failing assertion at the top level of a file that has subtests,
//   - a file that failed outside its cases (a crash, a timeout, a non-zero
//     exit after every case passed) when nothing else in it failed,
//   - an expected file that produced no result at all.
// Skipped and todo cases are neither passes nor failures.
//
// Prints one line per failed, skipped or todo case, then a last line
//   cases: pass N, fail N, skip N, todo N
// (worded so it never looks like test/run.sh's final "N passed, N failed").
// Exits 1 when something failed.
import { readFileSync } from 'node:fs';
import { normalize } from 'node:path';
import { Parser } from 'tap-parser';

const [logPath, ...expected] = process.argv.slice(2);
if (!logPath) {
  console.error('usage: node test/count.mjs <tap log | -> [expected test files...]');
  process.exit(2);
}
const text = readFileSync(logPath === '-' ? 0 : logPath, 'utf8');

/** @typedef {{ name: string, status: 'pass' | 'fail' | 'skip' | 'todo', why?: string }} Case */
/** @type {{ name: string, point: import('tap-parser').Result | null, cases: Case[], loose: import('tap-parser').Result[] }[]} */
const files = [];

const statusOf = (res) => (res.skip ? 'skip' : res.todo ? 'todo' : res.ok ? 'pass' : 'fail');
const reasonOf = (res) => (typeof res.skip === 'string' ? res.skip : typeof res.todo === 'string' ? res.todo : undefined);

const root = new Parser();
let openFile = null;
root.on('child', (fileParser) => {
  const file = { name: fileParser.name, point: null, cases: [], loose: [] };
  files.push(file);
  openFile = file;
  // A subtest's closing test point is the next one after its `# Subtest:`.
  let openCase = null;
  const unfinished = () => {
    if (openCase !== null) file.cases.push({ name: openCase, status: 'fail', why: 'started but never reported a result' });
    openCase = null;
  };
  fileParser.on('child', (caseParser) => {
    unfinished();
    openCase = caseParser.name;
  });
  fileParser.on('assert', (res) => {
    if (openCase !== null) {
      file.cases.push({ name: res.name || openCase, status: statusOf(res), why: reasonOf(res) });
      openCase = null;
    } else if (res.skip || res.todo) {
      // A skipped or todo subtest that did not run has no body, only its point.
      file.cases.push({ name: res.name, status: statusOf(res), why: reasonOf(res) });
    } else {
      file.loose.push(res);
    }
  });
  fileParser.on('complete', unfinished);
});
root.on('assert', (res) => {
  if (openFile) openFile.point = res;
  else files.push({ name: res.name, point: res, cases: [], loose: [] });
  openFile = null;
});
root.end(text);

const counts = { pass: 0, fail: 0, skip: 0, todo: 0 };
const lines = [];
const add = (file, c) => {
  counts[c.status]++;
  if (c.status === 'pass') return;
  const label = c.status === 'fail' ? 'not ok' : c.status;
  lines.push(`${label} - ${c.name === file ? file : `${file} > ${c.name}`}${c.why ? ` # ${c.why}` : ''}`);
};

for (const file of files) {
  const point = file.point;
  const outside = !point
    ? 'produced no result (crashed or was cut off)'
    : !point.ok && !point.todo && !point.skip
      ? `failed${point.name && normalize(point.name) !== normalize(file.name) ? ` (${point.name})` : ''}` +
        `${point.diag?.exitCode != null ? ` with exit code ${point.diag.exitCode}` : ''}${point.diag?.signal ? ` on ${point.diag.signal}` : ''}`
      : null;
  if (file.cases.length === 0) {
    const failing = file.loose.filter((r) => statusOf(r) === 'fail').map((r) => JSON.stringify(r.name));
    if (failing.length) add(file.name, { name: file.name, status: 'fail', why: `failed: ${failing.join(', ')}` });
    else if (outside) add(file.name, { name: file.name, status: 'fail', why: outside });
    else add(file.name, { name: file.name, status: statusOf(point), why: reasonOf(point) });
    continue;
  }
  for (const c of file.cases) add(file.name, c);
  for (const res of file.loose) {
    if (statusOf(res) === 'fail') add(file.name, { name: res.name || '(unnamed assertion)', status: 'fail', why: 'top-level assertion' });
  }
  if (outside && !file.cases.some((c) => c.status === 'fail') && !file.loose.some((r) => statusOf(r) === 'fail')) {
    add(file.name, { name: file.name, status: 'fail', why: outside });
  }
}

const seen = new Set(files.map((f) => normalize(f.name)));
for (const name of expected) {
  if (!seen.has(normalize(name))) add(name, { name, status: 'fail', why: 'produced no result (crashed or never ran)' });
}
if (files.length === 0 && expected.length === 0) {
  add('(tap)', { name: '(tap)', status: 'fail', why: 'no test file reported anything' });
}

for (const line of lines) console.log(line);
console.log(`cases: pass ${counts.pass}, fail ${counts.fail}, skip ${counts.skip}, todo ${counts.todo}`);
process.exit(counts.fail ? 1 : 0);
