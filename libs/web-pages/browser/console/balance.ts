/// <reference lib="dom" />
import * as z from 'zod/mini';
import { call } from '../lib/api';
import { byId, fill, h } from '../lib/dom';
import { int, usd } from '../lib/format';

const credits = z.object({
  total_credits: z.number(),
  total_usage: z.number(),
  balance: z.number(),
  held: z.number(),
  available: z.number(),
  currency: z.optional(z.string()),
});
const keyRecord = z.object({
  label: z.string(),
  limit: z.nullable(z.number()),
  usage: z.number(),
  limit_remaining: z.nullable(z.number()),
  rate_limit: z.object({ requests: z.number(), interval: z.string() }),
  account_id: z.string(),
  expires_at: z.nullable(z.string()),
});

const item = (name: string, value: string | Node, id: string) => [h('dt', {}, name), h('dd', { 'data-figure': id }, value)];

/** Credits, usage, held and available (GET /v1/credits), and the key's cap and what is left of it (GET /v1/key). */
export async function loadBalance(key: string): Promise<void> {
  const [c, k] = await Promise.all([
    call(key, 'GET', '/v1/credits', z.object({ data: credits })),
    call(key, 'GET', '/v1/key', z.object({ data: keyRecord })),
  ]);
  const cr = c.data;
  const kr = k.data;
  fill(
    byId('balance'),
    ...item('Credits', usd(cr.total_credits), 'total_credits'),
    ...item('Usage', usd(cr.total_usage), 'total_usage'),
    ...item('Balance', usd(cr.balance), 'balance'),
    ...item('Held', usd(cr.held), 'held'),
    ...item('Available', usd(cr.available), 'available'),
    ...item('Key', kr.label || '(no label)', 'label'),
    ...item('Key limit', kr.limit === null ? 'none' : usd(kr.limit), 'limit'),
    ...item('Key limit left', kr.limit_remaining === null ? '—' : usd(kr.limit_remaining), 'limit_remaining'),
    ...item('Rate limit', `${int(kr.rate_limit.requests)} per ${kr.rate_limit.interval}`, 'rate_limit'),
    ...item('Account', h('code', {}, kr.account_id), 'account_id'),
  );
}
