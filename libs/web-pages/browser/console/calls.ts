/// <reference lib="dom" />
import * as z from 'zod/mini';
import { call, describe } from '../lib/api';
import { byId, fill, h, table } from '../lib/dom';
import { int, usd, when } from '../lib/format';
import type { Guard } from '../lib/gate';

const generation = z.object({
  id: z.string(),
  model: z.string(),
  status: z.string(),
  created_at: z.string(),
  tokens_prompt: z.number(),
  tokens_completion: z.number(),
  total_cost: z.number(),
  cost: z.optional(z.string()),
  latency: z.number(),
  provider: z.optional(z.nullable(z.string())),
});
type Generation = z.infer<typeof generation>;
const page = z.object({ data: z.array(generation), next_cursor: z.optional(z.nullable(z.string())) });

let rows: Generation[] = [];
let cursor: string | null = null;

function draw(key: string): void {
  fill(
    byId('calls'),
    table(
      'Recent calls, newest first',
      ['Time', 'Model', 'Status', 'Tokens', 'Cost', 'Latency', 'Provider', ''],
      rows.map((g) => [
        when(g.created_at),
        g.model,
        g.status,
        `${int(g.tokens_prompt)} + ${int(g.tokens_completion)}`,
        h('span', { 'data-cost': g.id }, usd(g.cost ?? g.total_cost)),
        `${int(g.latency)} ms`,
        g.provider ?? '—',
        h('button', { type: 'button', class: 'link', 'data-generation': g.id, onclick: () => void openRecord(key, g.id) }, 'Record'),
      ]),
      'No calls yet.',
    ),
  );
  byId('calls-more').hidden = !cursor;
}

/** The account's newest generation records (GET /v1/generations), a page at a time. */
export async function loadCalls(key: string, more = false): Promise<void> {
  const q = new URLSearchParams({ limit: '20' });
  if (more && cursor) q.set('cursor', cursor);
  const answer = await call(key, 'GET', `/v1/generations?${q}`, page);
  rows = more ? [...rows, ...answer.data] : answer.data;
  cursor = answer.next_cursor ?? null;
  draw(key);
}

/** One call's whole generation record (GET /v1/generation), every field as the API gives it. */
async function openRecord(key: string, id: string): Promise<void> {
  const dialog = byId<HTMLDialogElement>('generation');
  const body = byId('generation-body');
  try {
    const record = (await call(key, 'GET', `/v1/generation?id=${encodeURIComponent(id)}`, z.object({ data: z.record(z.string(), z.unknown()) })))
      .data;
    fill(
      body,
      ...Object.entries(record).flatMap(([k, v]) => [
        h('dt', {}, k),
        h('dd', { 'data-field': k }, v === null ? 'null' : typeof v === 'object' ? JSON.stringify(v) : String(v)),
      ]),
    );
  } catch (err) {
    fill(body, h('p', { class: 'error', role: 'alert' }, describe(err)));
  }
  if (!dialog.open) dialog.showModal();
}

export function wireCalls(key: () => string | undefined, guard: Guard): void {
  byId('calls-more').addEventListener('click', () => {
    const k = key();
    if (k) void guard('calls-error', () => loadCalls(k, true));
  });
}
