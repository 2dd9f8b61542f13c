/// <reference lib="dom" />
/**
 * A stacked bar chart in SVG, one bar per day and one colour per series (model). About 1 KB gzipped: uPlot
 * (about 22 KB gzipped) draws lines and plain bars on a canvas, and stacking bars there takes its bands workaround,
 * while SVG rects give each segment a <title> (its figure on hover) for free. The figures are also in a table
 * beside the chart, so the chart is never the only way to read them.
 */

const SVG = 'http://www.w3.org/2000/svg';
/** Distinct colours, each at least 3:1 against the white background (WCAG's non-text contrast). */
export const SERIES_COLOURS = ['#0b5cad', '#b35900', '#1a7f37', '#8250df', '#cf222e', '#0a7a8a', '#6e5494', '#57606a'];

export interface Series {
  name: string;
  values: number[];
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number>): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** A "nice" top for the axis: 1, 2 or 5 times a power of ten, at or above `max`. */
export function niceMax(max: number): number {
  if (max <= 0) return 1;
  const p = 10 ** Math.floor(Math.log10(max));
  for (const m of [1, 2, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

export function stackedBars(labels: string[], series: Series[], format: (v: number) => string, title: string): SVGSVGElement {
  const W = 600;
  const H = 200;
  const left = 56;
  const bottom = 22;
  const plotW = W - left - 4;
  const plotH = H - bottom - 8;
  const totals = labels.map((_, i) => series.reduce((s, x) => s + (x.values[i] ?? 0), 0));
  const top = niceMax(Math.max(0, ...totals));
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': title });
  for (const f of [0, 0.5, 1]) {
    const y = 8 + plotH * (1 - f);
    root.append(svg('line', { x1: left, x2: W - 4, y1: y, y2: y, class: 'grid' }));
    const t = svg('text', { x: left - 6, y: y + 4, 'text-anchor': 'end', class: 'tick' });
    t.textContent = format(top * f);
    root.append(t);
  }
  const slot = plotW / Math.max(1, labels.length);
  labels.forEach((label, i) => {
    let y = 8 + plotH;
    series.forEach((s, k) => {
      const v = s.values[i] ?? 0;
      if (v <= 0) return;
      const hgt = (v / top) * plotH;
      y -= hgt;
      const r = svg('rect', {
        x: left + i * slot + slot * 0.15,
        y,
        width: slot * 0.7,
        height: Math.max(hgt, 0.5),
        fill: SERIES_COLOURS[k % SERIES_COLOURS.length] as string,
      });
      const tip = svg('title', {});
      tip.textContent = `${label} · ${s.name}: ${format(v)}`;
      r.append(tip);
      root.append(r);
    });
    // A label each week and on the last day, none so close to the last that the two overlap.
    const last = labels.length - 1;
    if (i === last || (i % 7 === 0 && last - i >= 4)) {
      const t = svg('text', { x: left + i * slot + slot / 2, y: H - 6, 'text-anchor': 'middle', class: 'tick' });
      t.textContent = label.slice(5);
      root.append(t);
    }
  });
  return root;
}
