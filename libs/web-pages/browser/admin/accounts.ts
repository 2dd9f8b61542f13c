/// <reference lib="dom" />
import * as z from 'zod/mini';
import { call } from '../lib/api';
import { byId, fill, h, table } from '../lib/dom';
import { usd, when } from '../lib/format';

const money = z.union([z.number(), z.string()]);
export const accountSummary = z.object({
  account_id: z.string(),
  created_at: z.string(),
  suspended: z.boolean(),
  credits: money,
  usage: money,
  held: money,
  available: money,
  // The exact figures beside the two-decimal ones, which a correction needs.
  credits_exact: z.optional(z.string()),
  usage_exact: z.optional(z.string()),
  held_exact: z.optional(z.string()),
  available_exact: z.optional(z.string()),
  rate_limit: z.optional(z.nullable(z.object({ requests: z.number(), interval: z.string() }))),
  job_concurrency: z.optional(z.nullable(z.number())),
});
const page = z.object({ data: z.array(accountSummary), next_cursor: z.optional(z.nullable(z.string())) });

let cursor: string | null = null;

/** A page of accounts (GET /admin/v1/accounts), filtered by `search`; `more` appends the next page. */
export async function loadAccounts(token: string, search: string, open: (id: string) => void, more = false): Promise<void> {
  const q = new URLSearchParams({ limit: '20' });
  if (search) q.set('search', search);
  if (more && cursor) q.set('cursor', cursor);
  const answer = await call(token, 'GET', `/admin/v1/accounts?${q}`, page);
  cursor = answer.next_cursor ?? null;
  const rows = answer.data.map((a) => [
    h('code', {}, a.account_id),
    when(a.created_at),
    a.suspended ? 'suspended' : 'active',
    usd(a.credits),
    usd(a.usage),
    usd(a.available),
    h('button', { type: 'button', class: 'link', 'data-open': a.account_id, onclick: () => open(a.account_id) }, 'Open'),
  ]);
  const list = byId('accounts');
  const t = table(
    'Accounts',
    ['Account', 'Created', 'State', 'Credits', 'Usage', 'Available', ''],
    rows,
    search ? 'No account matches.' : 'No accounts yet.',
  );
  const body = more ? list.querySelector('tbody') : null;
  if (body) body.append(...(t.tBodies[0]?.rows ?? []));
  else fill(list, t);
  byId('accounts-more').hidden = !cursor;
}
