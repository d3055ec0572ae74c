/**
 * Reads a V8 .cpuprofile (written by `node --cpu-prof`) and ranks where the
 * time went: by function (self and inclusive) and by source area (a package
 * under node_modules, a project folder, Node internals, GC).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface Frame {
  name: string;
  /** Share of all samples, 0..1. */
  self: number;
  total: number;
}

export interface ProfileSummary {
  file: string;
  durationSecs: number;
  /** Share of samples not idle. */
  busy: number;
  topSelf: Frame[];
  topTotal: Frame[];
  areas: Array<{ area: string; self: number }>;
}

/**
 * tsx runs TypeScript minified to one line per file, so profile positions are
 * columns of that line. Its cache (<tmpdir>/tsx-<uid>/) keeps each compiled
 * file with its source map; this maps a position back to the source line.
 */
class TsxSourceMaps {
  private bySource: Map<string, string> | null = null;
  private decoded = new Map<string, Array<Array<[number, number]>> | null>();

  private index(): Map<string, string> {
    if (this.bySource) return this.bySource;
    this.bySource = new Map();
    const dir = join(tmpdir(), `tsx-${process.getuid?.() ?? 0}`);
    let files: string[] = [];
    try {
      files = readdirSync(dir).map((f) => join(dir, f)).sort((a, b) => statSync(a).mtimeMs - statSync(b).mtimeMs);
    } catch {
      return this.bySource;
    }
    for (const f of files) {
      try {
        const text = readFileSync(f, 'utf8');
        const m = /"sources":\["([^"]+)"\]/.exec(text.slice(-4096));
        if (m) this.bySource.set(m[1]!, f); // newest compile of a source wins
      } catch {
        // not a cache entry
      }
    }
    return this.bySource;
  }

  /** Per generated line: [generated column, original line] pairs. */
  private lines(source: string): Array<Array<[number, number]>> | null {
    if (this.decoded.has(source)) return this.decoded.get(source)!;
    let out: Array<Array<[number, number]>> | null = null;
    const file = this.index().get(source);
    if (file) {
      try {
        const { map } = JSON.parse(readFileSync(file, 'utf8')) as { map: { mappings: string } };
        out = decodeMappings(map.mappings);
      } catch {
        out = null;
      }
    }
    this.decoded.set(source, out);
    return out;
  }

  originalLine(source: string, line: number, column: number): number | null {
    const segs = this.lines(source)?.[line];
    if (!segs?.length) return null;
    let best: number | null = null;
    for (const [col, orig] of segs) {
      if (col > column) break;
      best = orig;
    }
    return best === null ? null : best + 1;
  }
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

function decodeMappings(mappings: string): Array<Array<[number, number]>> {
  const lines: Array<Array<[number, number]>> = [];
  let srcLine = 0;
  for (const lineText of mappings.split(';')) {
    const segs: Array<[number, number]> = [];
    let col = 0;
    for (const seg of lineText.split(',')) {
      if (!seg) continue;
      const fields: number[] = [];
      let value = 0;
      let shift = 0;
      for (const ch of seg) {
        const digit = B64.indexOf(ch);
        value += (digit & 31) << shift;
        if (digit & 32) shift += 5;
        else {
          fields.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = 0;
          shift = 0;
        }
      }
      col += fields[0] ?? 0;
      if (fields.length >= 4) {
        srcLine += fields[2]!;
        segs.push([col, srcLine]);
      }
    }
    lines.push(segs);
  }
  return lines;
}

const maps = new TsxSourceMaps();

function label(n: ProfileNode, root: string): string {
  const { functionName, url, lineNumber, columnNumber } = n.callFrame;
  const path = url.replace(/^file:\/\//, '');
  const line = path.startsWith(root) && !path.includes('/node_modules/') ? (maps.originalLine(path, lineNumber, columnNumber) ?? lineNumber + 1) : lineNumber + 1;
  const where = url ? `${path.replace(root, '')}:${line}` : '';
  return `${functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
}

function area(n: ProfileNode, root: string): string {
  const url = n.callFrame.url.replace(/^file:\/\//, '');
  if (!url) return n.callFrame.functionName.startsWith('(') ? n.callFrame.functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return `node_modules/${nm[1]}`;
  if (url.startsWith(root)) return url.slice(root.length).split('/').slice(0, 2).join('/');
  return url;
}

export function summarizeProfile(file: string, root: string, top = 15): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const rootPrefix = root.endsWith('/') ? root : `${root}/`;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = new Map<number, number>();
  for (const s of p.samples) hits.set(s, (hits.get(s) ?? 0) + 1);
  const total = p.samples.length || 1;
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const areas = new Map<string, number>();
  let idle = 0;
  for (const [id, h] of hits) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(idle)') idle += h;
    const key = label(n, rootPrefix);
    self.set(key, (self.get(key) ?? 0) + h);
    const a = area(n, rootPrefix);
    areas.set(a, (areas.get(a) ?? 0) + h);
    // Inclusive: every distinct function on the stack once.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = label(byId.get(cur)!, rootPrefix);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + h);
    }
  }
  const rank = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  const skip = (k: string) => k.startsWith('(root)') || k.startsWith('(program)') || k.startsWith('(idle)');
  return {
    file,
    durationSecs: (p.endTime - p.startTime) / 1e6,
    busy: 1 - idle / total,
    topSelf: rank(self).slice(0, top).map(([name, h]) => ({ name, self: h / total, total: (incl.get(name) ?? h) / total })),
    topTotal: rank(incl).filter(([k]) => !skip(k)).slice(0, top).map(([name, h]) => ({ name, self: (self.get(name) ?? 0) / total, total: h / total })),
    areas: rank(areas).slice(0, top).map(([a, h]) => ({ area: a, self: h / total })),
  };
}

export function formatProfile(s: ProfileSummary): string {
  const pct = (v: number) => `${(v * 100).toFixed(1).padStart(5)}%`;
  const lines = [`profile ${s.file}: ${s.durationSecs.toFixed(1)} s, busy ${pct(s.busy).trim()}`, '  top self time:'];
  for (const f of s.topSelf) lines.push(`    ${pct(f.self)} self ${pct(f.total)} total  ${f.name}`);
  lines.push('  top inclusive time:');
  for (const f of s.topTotal) lines.push(`    ${pct(f.total)} total ${pct(f.self)} self  ${f.name}`);
  lines.push('  self time by area:');
  for (const a of s.areas) lines.push(`    ${pct(a.self)}  ${a.area}`);
  return lines.join('\n');
}
