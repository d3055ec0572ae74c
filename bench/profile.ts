/**
 * Summarizes a V8 CPU profile: `node --import tsx bench/profile.ts FILE.cpuprofile [--top N]`.
 * `npm run bench -- --profile` writes the server's profile under .parley/bench/prof/.
 */
import { parseArgs } from 'node:util';
import { formatProfile, summarizeProfile } from './lib/cpuprofile.ts';
import { REPO } from './lib/server.ts';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '15' } } });
if (!positionals.length) {
  process.stderr.write('usage: node --import tsx bench/profile.ts FILE.cpuprofile [--top N]\n');
  process.exit(2);
}
for (const f of positionals) process.stdout.write(`${formatProfile(summarizeProfile(f, REPO, Number(values.top)))}\n`);
