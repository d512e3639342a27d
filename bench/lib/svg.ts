/**
 * Line charts as standalone SVG files, with no dependency: linear or log x axis, min–max error
 * bars, a legend and optional point labels. Enough for the benchmark report, nothing more.
 */
import type { ChartSpec } from './results.js';

const W = 640;
const H = 360;
const M = { left: 64, right: 56, top: 40, bottom: 72 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Round tick values covering [lo, hi] on a linear axis. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const out: number[] = [];
  // The last tick is at or above `hi`, so the axis always holds every point.
  const end = Math.ceil(hi / step - 1e-9) * step;
  for (let v = Math.ceil(lo / step) * step; v <= end + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

/** Powers of ten from the one at or below `lo` to the one at or above `hi`. */
function decades(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(10 ** e);
  return out.length > 1 ? out : [out[0], out[0] * 10];
}

function fmt(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toPrecision(3)}k`;
  return `${+v.toPrecision(3)}`;
}

/** The SVG text of a line chart. */
export function lineChart(spec: ChartSpec): string {
  const pts = spec.series.flatMap((s) => s.points);
  const xs = pts.map((p) => p.x);
  const ys = pts.flatMap((p) => [p.y, p.hi ?? p.y, p.lo ?? p.y]);
  const xLog = spec.xLog === true;
  const tx = (v: number) => (xLog ? Math.log10(v) : v);
  let x0 = Math.min(...xs.map(tx));
  let x1 = Math.max(...xs.map(tx));
  if (x0 === x1) {
    x0 -= 1;
    x1 += 1;
  }
  const padX = (x1 - x0) * 0.06;
  x0 -= padX;
  x1 += padX;
  const yLog = spec.yLog === true;
  // A log y axis spans whole decades around the data; a linear one starts at 0.
  const yTicks = yLog
    ? decades(Math.min(...ys.filter((y) => y > 0)), Math.max(...ys))
    : niceTicks(0, Math.max(...ys) * 1.05);
  const y0 = yLog ? Math.log10(yTicks[0]) : 0;
  const y1 = yLog ? Math.log10(yTicks[yTicks.length - 1]) : yTicks[yTicks.length - 1] || 1;
  const ty = (v: number) => (yLog ? Math.log10(Math.max(v, yTicks[0])) : v);
  const px = (v: number) => M.left + ((tx(v) - x0) / (x1 - x0)) * (W - M.left - M.right);
  const py = (v: number) => H - M.bottom - ((ty(v) - y0) / (y1 - y0)) * (H - M.top - M.bottom);
  const xTicks = xLog ? [...new Set(xs)].sort((a, b) => a - b) : niceTicks(Math.min(...xs), Math.max(...xs));
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="600">${esc(spec.title)}</text>`);
  for (const t of yTicks) {
    out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${py(t)}" y2="${py(t)}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${M.left - 6}" y="${py(t) + 4}" text-anchor="end" fill="#444">${fmt(t)}</text>`);
  }
  for (const t of xTicks) {
    out.push(`<line x1="${px(t)}" x2="${px(t)}" y1="${H - M.bottom}" y2="${H - M.bottom + 5}" stroke="#444"/>`);
    out.push(`<text x="${px(t)}" y="${H - M.bottom + 18}" text-anchor="middle" fill="#444">${fmt(t)}</text>`);
  }
  out.push(`<line x1="${M.left}" x2="${W - M.right}" y1="${H - M.bottom}" y2="${H - M.bottom}" stroke="#444"/>`);
  out.push(`<line x1="${M.left}" x2="${M.left}" y1="${M.top}" y2="${H - M.bottom}" stroke="#444"/>`);
  out.push(
    `<text x="${(M.left + W - M.right) / 2}" y="${H - M.bottom + 36}" text-anchor="middle">${esc(spec.xLabel)}${xLog ? ' (log scale)' : ''}</text>`,
  );
  out.push(
    `<text transform="translate(16 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yLabel)}${yLog ? ' (log scale)' : ''}</text>`,
  );
  spec.series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const sorted = [...s.points].sort((a, b) => a.x - b.x);
    if (sorted.length > 1)
      out.push(
        `<polyline fill="none" stroke="${c}" stroke-width="2" points="${sorted.map((p) => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`).join(' ')}"/>`,
      );
    // A series with labelled points names only those; otherwise every point shows its value.
    const labelledOnly = sorted.some((p) => p.label !== undefined);
    for (const p of sorted) {
      if (p.lo !== undefined && p.hi !== undefined) {
        out.push(
          `<line x1="${px(p.x)}" x2="${px(p.x)}" y1="${py(p.lo)}" y2="${py(p.hi)}" stroke="${c}" stroke-width="1.5"/>`,
        );
        for (const v of [p.lo, p.hi])
          out.push(
            `<line x1="${px(p.x) - 4}" x2="${px(p.x) + 4}" y1="${py(v)}" y2="${py(v)}" stroke="${c}" stroke-width="1.5"/>`,
          );
      }
      out.push(`<circle cx="${px(p.x)}" cy="${py(p.y)}" r="4" fill="${c}"/>`);
      if (labelledOnly && p.label === undefined) continue;
      const text = p.label ? `${p.label} ${fmt(p.y)}` : fmt(p.y);
      // Later series label below their points, so labels of coinciding points do not overlap.
      out.push(
        `<text x="${px(p.x) + 7}" y="${py(p.y) + (i % 2 === 0 ? -7 : 15)}" fill="${c}" font-size="11">${esc(text)}</text>`,
      );
    }
    const ly = H - 18;
    const lx = M.left + i * 250;
    out.push(`<rect x="${lx}" y="${ly - 9}" width="12" height="12" fill="${c}"/>`);
    out.push(`<text x="${lx + 18}" y="${ly + 1}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
