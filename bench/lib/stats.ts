/** Percentiles and summaries of latency samples (milliseconds). */

export interface Summary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Nearest-rank percentile of an ascending array (`p` in 0..100). */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarize(samples: ArrayLike<number>): Summary {
  const sorted = Float64Array.from(samples).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    mean: sorted.length ? sum / sorted.length : NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : NaN,
  };
}

/**
 * The p99 of each `windowMs` slice of a run (samples placed by when they were
 * sent), and the median and worst of those: one run's p99 is set by its worst
 * stall, so on a noisy machine the median window says more about a build.
 */
export function windowedP99(samples: ArrayLike<number>, sentAt: ArrayLike<number>, windowMs = 1000): { median: number; worst: number; windows: number } {
  const byWindow = new Map<number, number[]>();
  for (let i = 0; i < samples.length; i++) {
    const w = Math.floor(sentAt[i]! / windowMs);
    let list = byWindow.get(w);
    if (!list) byWindow.set(w, (list = []));
    list.push(samples[i]!);
  }
  const p99s = [...byWindow.values()].filter((l) => l.length >= 100).map((l) => percentile(Float64Array.from(l).sort(), 99)).sort((a, b) => a - b);
  return { median: p99s.length ? p99s[Math.floor(p99s.length / 2)]! : NaN, worst: p99s.length ? p99s[p99s.length - 1]! : NaN, windows: p99s.length };
}

/** Rounds for display: 3 significant digits below 100, integers above. */
export function fmt(v: number, unit = ''): string {
  if (!Number.isFinite(v)) return `n/a`;
  const s = Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : Number(v.toPrecision(3)).toString();
  return unit ? `${s} ${unit}` : s;
}

/** Milliseconds since the epoch with sub-millisecond precision (one clock for sender and receiver). */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}
