/** Reads a process's /metrics (Prometheus text format) and picks series out of it. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

export class Scrape {
  constructor(readonly samples: Sample[]) {}

  /** The sum of every series of `name` whose labels include `labels` (0 when there is none). */
  sum(name: string, labels: Record<string, string> = {}): number {
    return this.series(name, labels).reduce((a, s) => a + s.value, 0);
  }

  series(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  }

  has(name: string): boolean {
    return this.samples.some((s) => s.name === name);
  }
}

/** GETs each URL's /metrics; one Scrape of them all (sums add across processes). */
export async function scrape(urls: string | string[]): Promise<Scrape> {
  const samples: Sample[] = [];
  for (const url of typeof urls === 'string' ? [urls] : urls) {
    const r = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
    if (!r.headers.get('content-type')?.startsWith('text/plain; version=0.0.4')) throw new Error(`${url}: content type ${r.headers.get('content-type')}`);
    samples.push(...parseMetrics(await r.text()));
  }
  return new Scrape(samples);
}
