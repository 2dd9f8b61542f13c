import type { RerankRequest, RerankResult } from '../types';
import { UpstreamError } from '../upstream-error';

/**
 * The Cohere rerank body. Documents are never asked back: the gateway holds them already and attaches them itself
 * when the client wants them, so the answer stays small.
 */
export function cohereRerankBody(body: RerankRequest): Record<string, unknown> {
  return { query: body.query, documents: body.documents, top_n: body.top_n ?? body.documents.length, return_documents: false };
}

interface CohereAnswer {
  results?: unknown;
  meta?: { billed_units?: { search_units?: unknown }; tokens?: { input_tokens?: unknown } };
  usage?: { total_tokens?: unknown };
}

/**
 * Checks the answer before anyone is charged for it: every index a position in the request, each once, every score
 * a finite number. Cohere bills search units, not tokens; Cohere-compatible servers (Jina, vLLM) report
 * `usage.total_tokens`, and newer Cohere answers `meta.tokens.input_tokens`; either is the reported token figure.
 */
export function readCohereRerank(json: unknown, documents: number): RerankResult {
  const answer = (json ?? {}) as CohereAnswer;
  if (!Array.isArray(answer.results)) throw new UpstreamError('protocol', 'upstream rerank answer has no results');
  const seen = new Set<number>();
  const results = (answer.results as Array<{ index?: unknown; relevance_score?: unknown }>).map((r) => {
    const index = r?.index;
    const score = r?.relevance_score;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= documents || seen.has(index)) {
      throw new UpstreamError('protocol', `upstream rerank answer has a bad index: ${JSON.stringify(index)}`);
    }
    if (typeof score !== 'number' || !Number.isFinite(score))
      throw new UpstreamError('protocol', `upstream rerank answer has a bad score at index ${index}`);
    seen.add(index);
    return { index, relevance_score: score };
  });
  const tokens = count(answer.usage?.total_tokens) ?? count(answer.meta?.tokens?.input_tokens);
  const searchUnits = count(answer.meta?.billed_units?.search_units);
  const usage = { ...(tokens !== undefined ? { total_tokens: tokens } : {}), ...(searchUnits !== undefined ? { search_units: searchUnits } : {}) };
  return { results, ...(Object.keys(usage).length ? { usage } : {}) };
}

function count(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}
