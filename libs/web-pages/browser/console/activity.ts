/// <reference lib="dom" />
import * as z from 'zod/mini';
import { call } from '../lib/api';
import { SERIES_COLOURS, stackedBars } from '../lib/chart';
import { byId, fill, h, table } from '../lib/dom';
import { int } from '../lib/format';

const row = z.object({
  date: z.string(),
  model: z.string(),
  requests: z.number(),
  usage: z.number(),
  usage_exact: z.optional(z.string()),
  tokens_prompt: z.number(),
  tokens_completion: z.number(),
  tokens_reasoning: z.optional(z.number()),
  tokens_cached: z.optional(z.number()),
});
type Row = z.infer<typeof row>;
const DAYS = 30;

/** The last `n` UTC dates, oldest first, today last (as the activity route counts days). */
export function lastDays(n: number, now = new Date()): string[] {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return Array.from({ length: n }, (_, i) => new Date(today - (n - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

let rows: Row[] = [];

function draw(): void {
  const metric = byId<HTMLSelectElement>('activity-metric').value === 'tokens' ? 'tokens' : 'usage';
  const days = lastDays(DAYS);
  const models = [...new Set(rows.map((r) => r.model))].sort();
  const value = (r: Row) =>
    metric === 'usage' ? (r.usage_exact !== undefined ? Number(r.usage_exact) : r.usage) : r.tokens_prompt + r.tokens_completion;
  const series = models.map((m) => ({
    name: m,
    values: days.map((d) => rows.filter((r) => r.date === d && r.model === m).reduce((s, r) => s + value(r), 0)),
  }));
  const format = metric === 'usage' ? (v: number) => `$${v < 0.01 && v > 0 ? v.toPrecision(2) : v.toFixed(2)}` : (v: number) => int(Math.round(v));
  const title = metric === 'usage' ? 'Spending per day by model, last 30 days' : 'Tokens per day by model, last 30 days';
  const sorted = [...rows].sort((a, b) => (a.date === b.date ? a.model.localeCompare(b.model) : b.date.localeCompare(a.date)));
  fill(
    byId('activity'),
    rows.length ? stackedBars(days, series, format, title) : h('p', { class: 'empty' }, 'No calls in the last 30 days.'),
    models.length
      ? h(
          'ul',
          { class: 'series-legend', 'aria-label': 'Models' },
          ...models.map((m, i) => h('li', {}, h('span', { class: `swatch sw-${i % SERIES_COLOURS.length}`, 'aria-hidden': 'true' }), m)),
        )
      : null,
    h(
      'details',
      {},
      h('summary', {}, 'The figures as a table'),
      table(
        'Activity per day and model',
        ['Date', 'Model', 'Requests', 'Spent (USD)', 'Prompt tokens', 'Completion tokens', 'Reasoning', 'Cached'],
        sorted.map((r) => [
          r.date,
          r.model,
          int(r.requests),
          r.usage_exact ?? r.usage.toFixed(2),
          int(r.tokens_prompt),
          int(r.tokens_completion),
          int(r.tokens_reasoning),
          int(r.tokens_cached),
        ]),
        'No calls in the last 30 days.',
      ),
    ),
  );
}

/** Spending and tokens per day and model over 30 days (GET /v1/activity). */
export async function loadActivity(key: string): Promise<void> {
  rows = (await call(key, 'GET', `/v1/activity?days=${DAYS}`, z.object({ data: z.array(row) }))).data;
  draw();
}

export function wireActivity(): void {
  byId('activity-metric').addEventListener('change', draw);
}
