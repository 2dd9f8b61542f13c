/**
 * The status page's HTML from a GET /v1/status body. Pure string work, no DOM and no Node: the catalogue renders the
 * whole page with it (so the page is useful without JavaScript) and the page's script renders the same main part
 * from a fresh /v1/status when it refreshes, so both always look alike.
 */

export interface StatusDay {
  date: string;
  state: string;
  uptime: number | null;
  sampleCount: number;
}

export interface StatusComponent {
  key: string;
  name: string;
  description: string;
  status: string;
  uptime: number | null;
  latencyMs: number;
  latencyMeaning: string;
  sampleCount: number;
  checkedAt: string | null;
  history: StatusDay[];
}

export interface StatusPageData {
  overall: string;
  monitored: boolean;
  windowDays: number;
  generatedAt: string;
  components: StatusComponent[];
}

/**
 * Each status and day state with its words and a symbol, so colour is never the only cue. The two vocabularies are
 * separate tables, as in the catalogue (the contract forbids mapping one onto the other by case).
 */
const STATUS_LABEL: Record<string, { text: string; overall: string; symbol: string; css: string }> = {
  OPERATIONAL: { text: 'Operational', overall: 'All systems operational', symbol: '✓', css: 'ok' },
  DEGRADED: { text: 'Degraded', overall: 'Some systems degraded', symbol: '!', css: 'degraded' },
  DOWN: { text: 'Down', overall: 'Major outage', symbol: '✕', css: 'down' },
  UNCONFIGURED: { text: 'Not monitored', overall: 'Not monitored', symbol: '?', css: 'none' },
};
const DAY_LABEL: Record<string, { text: string; css: string }> = {
  operational: { text: 'operational', css: 'ok' },
  degraded: { text: 'degraded', css: 'degraded' },
  down: { text: 'down', css: 'down' },
  none: { text: 'no data', css: 'none' },
};
const UNKNOWN_STATUS = { text: 'Unknown', overall: 'Unknown', symbol: '?', css: 'none' };
const UNKNOWN_DAY = { text: 'unknown', css: 'none' };

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** Every text and attribute value goes through here: nothing of the body is ever markup. */
export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);

/** A fraction 0..1 as a percentage with up to two decimals ("99.95%"); null is "no data". */
export function percent(uptime: number | null): string {
  if (uptime === null) return 'no data';
  return `${Number((uptime * 100).toFixed(2))}%`;
}

/** An ISO timestamp as "2026-11-28 01:02:03 UTC": the server cannot know the reader's zone. */
export function utc(iso: string | null): string {
  if (!iso) return 'never';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return 'unknown';
  return `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function statusBadge(status: string): string {
  const s = STATUS_LABEL[status] ?? UNKNOWN_STATUS;
  return `<span class="status s-${s.css}"><span class="symbol" aria-hidden="true">${s.symbol}</span> ${s.text}</span>`;
}

function dayBar(c: StatusComponent, d: StatusDay): string {
  const s = DAY_LABEL[d.state] ?? UNKNOWN_DAY;
  const samples = d.sampleCount === 1 ? '1 sample' : `${d.sampleCount} samples`;
  const tip = `${d.date}: ${s.text}, ${percent(d.uptime)} uptime (${samples})`;
  // The tooltip is the title (pointer), the aria-label (screen readers) and the title again in a CSS box shown on
  // hover and on focus (keyboard), so it needs no script.
  return `<li class="day d-${s.css}" tabindex="0" title="${esc(tip)}" aria-label="${esc(`${c.name}, ${tip}`)}"></li>`;
}

function component(c: StatusComponent): string {
  const id = `c-${esc(c.key)}`;
  return `<article class="component" aria-labelledby="${id}">
<div class="component-head"><h2 id="${id}">${esc(c.name)}</h2>${statusBadge(c.status)}</div>
<p class="description">${esc(c.description)}</p>
<p class="figures">Uptime over the window: <strong>${percent(c.uptime)}</strong> · latency <span title="${esc(c.latencyMeaning)}">${c.latencyMs} ms</span> · checked <time datetime="${esc(c.checkedAt ?? '')}">${utc(c.checkedAt)}</time></p>
<ol class="days" aria-label="${esc(c.name)}: one bar per day, oldest first">${c.history.map((d) => dayBar(c, d)).join('')}</ol>
<div class="axis" aria-hidden="true"><span>${c.history.length} days ago</span><span>today</span></div>
</article>`;
}

/** The legend: each day state's shape and words beside its colour. */
function legend(): string {
  const items = ['operational', 'degraded', 'down', 'none'].map((k) => {
    const s = DAY_LABEL[k] as { text: string; css: string };
    return `<li><span class="day-sample d-${s.css}" aria-hidden="true"></span> ${s.text}</li>`;
  });
  return `<ul class="legend" aria-label="What the bars mean">${items.join('')}</ul>`;
}

/** The part the page's script replaces on each refresh. */
export function statusMain(body: StatusPageData): string {
  const overall = STATUS_LABEL[body.overall] ?? UNKNOWN_STATUS;
  return `<section class="overall s-${overall.css}" aria-live="polite"><span class="symbol" aria-hidden="true">${overall.symbol}</span> <span class="overall-text">${overall.overall}</span></section>
<p class="checked">Last checked <time datetime="${esc(body.generatedAt)}">${utc(body.generatedAt)}</time>${body.monitored ? '' : ' · the monitor is switched off'}</p>
${legend()}
${body.components.map(component).join('\n')}`;
}

/** The whole page, as the server sends it. */
export function statusPage(body: StatusPageData): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Status · model gateway</title>
<link rel="stylesheet" href="/pages/pages.css">
<script type="module" src="/pages/status.js"></script>
</head>
<body class="status-page">
<header class="top"><h1>Gateway status</h1><nav aria-label="Pages"><a href="/console">Account console</a> <a href="/admin">Operator console</a></nav></header>
<main id="status">
${statusMain(body)}
</main>
<footer><p id="refresh-note">Over the last ${body.windowDays} days. This page shows what it had when it was sent; reload it for news.</p><p>The same data as JSON: <a href="/v1/status">/v1/status</a>.</p></footer>
</body>
</html>
`;
}
