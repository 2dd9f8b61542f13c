import type { Db } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { formatUsd, toCents2 } from '@gateway/money';
import { type PagePosition, positionSql } from '../paging';

/** The spec's Generation record. Another account's id answers exactly like an unknown one. */
export async function generationRecord(db: Db, accountId: string, requestId: string) {
  const [r] = await db.query('SELECT * FROM usage_records WHERE request_id = $1 AND account_id = $2', [requestId, accountId]);
  if (!r) throw GatewayError.notFound(`Generation ${requestId}`);
  return generationView(r);
}

export interface GenerationFilter {
  accountId: string;
  model?: string;
  /** The page continues strictly after this row (newer rows come first). */
  after?: PagePosition;
  limit: number;
}

/**
 * The account's records, newest first, each with its page position. Served by the index on (account_id,
 * created_at), read backwards: a page costs its own rows, however many the account has.
 */
export async function listGenerations(db: Db, f: GenerationFilter): Promise<Array<Record<string, unknown> & { position: PagePosition }>> {
  const where = ['account_id = $1'];
  const params: unknown[] = [f.accountId];
  if (f.model !== undefined) {
    params.push(f.model);
    where.push(`model = $${params.length}`);
  }
  if (f.after) {
    params.push(f.after.createdAt, f.after.id);
    where.push(`(created_at, request_id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  params.push(f.limit);
  const rows = await db.query(
    `SELECT *, ${positionSql('created_at')} AS page_at FROM usage_records WHERE ${where.join(' AND ')}
      ORDER BY created_at DESC, request_id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map((r) => ({ ...r, position: { createdAt: r.page_at as string, id: r.request_id as string } }));
}

/** A usage_records row as the Generation record. */
export function generationView(r: Record<string, unknown>) {
  const cost = BigInt(r.total_cost as string);
  return {
    id: r.request_id as string,
    model: r.model as string,
    streamed: r.streamed,
    generation_time: r.generation_time,
    created_at: new Date(r.created_at as string).toISOString(),
    tokens_prompt: r.tokens_prompt,
    tokens_completion: r.tokens_completion,
    native_tokens_prompt: r.native_tokens_prompt,
    native_tokens_completion: r.native_tokens_completion,
    num_media_prompt: r.num_media_prompt,
    num_media_completion: r.num_media_completion,
    origin: r.origin,
    usage: toCents2(cost),
    total_cost: toCents2(cost),
    // Addition: the exact charge, as on usage.cost, since two decimals hide most text charges.
    cost: formatUsd(cost),
    // Addition: true when the charge rests on the gateway's own measure because the upstream reported no usage.
    usage_estimated: r.usage_estimated === true,
    // What the cache rates changed against the prompt rate, in USD: positive saved, negative (cache writes) cost more.
    cache_discount: toCents2(BigInt((r.cache_discount as string | number | null) ?? 0)),
    // Addition: the same, exactly, as `cost` is for total_cost.
    cache_discount_exact: formatUsd(BigInt((r.cache_discount as string | number | null) ?? 0)),
    // Addition: of tokens_prompt, those read from the upstream's prompt cache; of tokens_completion, the reasoning.
    tokens_cached: r.tokens_cached ?? 0,
    tokens_reasoning: r.tokens_reasoning ?? 0,
    finish_reason: r.finish_reason ?? (r.status === 'succeeded' ? 'stop' : 'error'),
    latency: r.latency,
    moderation_latency: 0,
    request_id: r.request_id,
    status: r.status,
    error_code: r.error_code ?? null,
    attempts: r.attempts,
    fallback_used: r.fallback_used,
    // Addition: the provider id of the endpoint that served the call; null when none did or the record predates it.
    provider: r.provider ?? null,
  };
}
