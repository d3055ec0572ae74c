/**
 * The realm actor's layers (docs/architecture.md, "The realm's layers"), checked on the source:
 * - `state/` (the realm's records, their load and indexes) imports nothing else of the realm;
 * - `rules/` (access, names, formatting rules) imports only `state/` and `rules/`;
 * - `actions/<area>/` import `state/`, `rules/` and their own area; an import of another area's action
 *   module is counted, and the count may only fall (CROSS_AREA_LIMIT: lower it when you remove some);
 * - the realm's folder itself holds only the actor's wiring (actor.ts, handlers.ts) and its address (ref.ts),
 *   which actions may import to call the realm back (follow-ups).
 * Usage: node --import tsx scripts/check-layers.ts [--list]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const CROSS_AREA_LIMIT = 66;
const ROOT_FILES = new Set(['actor.ts', 'handlers.ts', 'ref.ts']);

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const realm = join(repo, 'actors', 'realm');

type Layer = 'wiring' | 'state' | 'rules' | `actions/${string}` | 'outside';

function layerOf(path: string): Layer {
  const rel = relative(realm, path);
  if (rel.startsWith('..')) return 'outside';
  const [top, area] = rel.split('/');
  if (top === 'state' || top === 'rules') return top;
  if (top === 'actions' && area !== undefined) return `actions/${area}`;
  return 'wiring';
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

function importsOf(path: string): string[] {
  const text = readFileSync(path, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.\.?\/[^']+)'/g)].map((m) => normalize(join(dirname(path), m[1]!)));
}

const problems: string[] = [];
const crossArea: string[] = [];
for (const file of sources(realm)) {
  const from = layerOf(file);
  const name = relative(realm, file);
  if (from === 'wiring' && !ROOT_FILES.has(name)) problems.push(`${name}: the realm's folder holds only ${[...ROOT_FILES].join(', ')}; put it in state/, rules/ or actions/<area>/`);
  for (const target of importsOf(file)) {
    const to = layerOf(target);
    if (to === 'outside' || to === from) continue;
    const edge = `${name} -> ${relative(realm, target)}`;
    if (from === 'state') problems.push(`${edge}: state/ imports nothing else of the realm`);
    else if (from === 'rules' && to !== 'state') problems.push(`${edge}: rules/ imports only state/ and rules/`);
    else if (from.startsWith('actions/') && to.startsWith('actions/')) crossArea.push(edge);
    else if (from.startsWith('actions/') && to === 'wiring' && relative(realm, target) !== 'ref.ts') problems.push(`${edge}: actions import the realm's address (ref.ts), not its wiring`);
  }
}
if (process.argv.includes('--list')) for (const edge of crossArea) console.log(edge);
if (crossArea.length > CROSS_AREA_LIMIT) problems.push(`${crossArea.length} imports between action areas, more than the ${CROSS_AREA_LIMIT} allowed (--list shows them): move what two areas share into rules/ or state/`);
for (const p of problems) console.error(p);
console.log(`realm layers: ${problems.length} problems, ${crossArea.length} imports between action areas (limit ${CROSS_AREA_LIMIT})`);
process.exit(problems.length === 0 ? 0 : 1);
