/**
 * A small hand-written SVG line chart (no plotting dependency): latency
 * against offered load, log-scaled latency axis, optional target line.
 */

export interface Series {
  label: string;
  color: string;
  points: Array<[number, number]>;
  dashed?: boolean;
}

export interface Chart {
  title: string;
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  /** Horizontal reference lines (e.g. a latency target). */
  hLines?: Array<{ y: number; label: string; color: string }>;
  /** Vertical reference lines (e.g. half the maximum rate). */
  vLines?: Array<{ x: number; label: string; color: string }>;
}

/** White outline behind text so it stays readable over lines. */
const HALO = ' stroke="white" stroke-width="4" paint-order="stroke"';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceTicks(max: number, n = 6): number[] {
  const raw = max / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let v = 0; ; v += step) {
    ticks.push(Number(v.toPrecision(12)));
    if (v >= max - step * 1e-9) return ticks;
  }
}

export function lineChart(c: Chart): string {
  const W = 760;
  const H = 460;
  const m = { l: 70, r: 190, t: 60, b: 55 };
  const pw = W - m.l - m.r;
  const ph = H - m.t - m.b;
  const all = c.series.flatMap((s) => s.points).filter(([, y]) => y > 0 && Number.isFinite(y));
  const xMaxData = Math.max(1, ...all.map(([x]) => x), ...(c.vLines ?? []).map((v) => v.x));
  const xTicks = niceTicks(xMaxData);
  const xMax = xTicks[xTicks.length - 1]!;
  const ys = [...all.map(([, y]) => y), ...(c.hLines ?? []).map((h) => h.y)];
  const yLo = 10 ** Math.floor(Math.log10(Math.max(0.01, Math.min(...ys))));
  const yHi = 10 ** Math.ceil(Math.log10(Math.max(...ys, yLo * 10)));
  const X = (x: number) => m.l + (x / xMax) * pw;
  const Y = (y: number) => m.t + ph - ((Math.log10(Math.max(y, yLo)) - Math.log10(yLo)) / (Math.log10(yHi) - Math.log10(yLo))) * ph;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${m.l}" y="24" font-size="16" font-weight="bold">${esc(c.title)}</text>`);
  if (c.subtitle) out.push(`<text x="${m.l}" y="42" fill="#555">${esc(c.subtitle)}</text>`);
  // Grid and axes.
  for (const t of xTicks) {
    out.push(`<line x1="${X(t)}" y1="${m.t}" x2="${X(t)}" y2="${m.t + ph}" stroke="#eee"/>`);
    out.push(`<text x="${X(t)}" y="${m.t + ph + 18}" text-anchor="middle">${t.toLocaleString('en-US')}</text>`);
  }
  for (let d = yLo; d <= yHi * 1.0001; d *= 10) {
    for (const k of [1, 2, 5]) {
      const v = d * k;
      if (v > yHi * 1.0001) break;
      out.push(`<line x1="${m.l}" y1="${Y(v)}" x2="${m.l + pw}" y2="${Y(v)}" stroke="${k === 1 ? '#ddd' : '#f3f3f3'}"/>`);
      out.push(`<text x="${m.l - 8}" y="${Y(v) + 4}" text-anchor="end" fill="${k === 1 ? '#000' : '#888'}">${Number(v.toPrecision(3))}</text>`);
    }
  }
  out.push(`<rect x="${m.l}" y="${m.t}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  out.push(`<text x="${m.l + pw / 2}" y="${H - 12}" text-anchor="middle">${esc(c.xLabel)}</text>`);
  out.push(`<text transform="translate(18 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle">${esc(c.yLabel)}</text>`);
  const refsFrom = out.length;
  for (const h of c.hLines ?? []) {
    out.push(`<line x1="${m.l}" y1="${Y(h.y)}" x2="${m.l + pw}" y2="${Y(h.y)}" stroke="${h.color}" stroke-dasharray="6 4"/>`);
    out.push(`<text x="${m.l + 6}" y="${Y(h.y) - 5}" fill="${h.color}"${HALO}>${esc(h.label)}</text>`);
  }
  for (const v of c.vLines ?? []) {
    out.push(`<line x1="${X(v.x)}" y1="${m.t}" x2="${X(v.x)}" y2="${m.t + ph}" stroke="${v.color}" stroke-dasharray="3 3"/>`);
    out.push(`<text x="${X(v.x) + 4}" y="${m.t + 14}" fill="${v.color}"${HALO}>${esc(v.label)}</text>`);
  }
  // Series and legend, then the reference lines on top so no series hides their labels.
  const refs = out.splice(refsFrom);
  c.series.forEach((s, i) => {
    const pts = s.points.filter(([, y]) => y > 0 && Number.isFinite(y)).sort((a, b) => a[0] - b[0]);
    if (pts.length) {
      out.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ''} points="${pts.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ')}"/>`);
      for (const [x, y] of pts) out.push(`<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="3.5" fill="${s.color}"><title>${esc(`${s.label}: ${Number(y.toPrecision(3))} ms at ${Math.round(x)}`)}</title></circle>`);
    }
    const ly = m.t + 10 + i * 22;
    out.push(`<line x1="${m.l + pw + 14}" y1="${ly}" x2="${m.l + pw + 38}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`);
    out.push(`<text x="${m.l + pw + 44}" y="${ly + 4}">${esc(s.label)}</text>`);
  });
  out.push(...refs, '</svg>');
  return `${out.join('\n')}\n`;
}
