import { UpstreamError, type RerankResult } from '@gateway/upstreams';

/**
 * Relevance order, best first, at most `topN`, whatever order and length the upstream answered in: the contract
 * promises the order, and not every upstream honours `top_n`. Equal scores keep the request's order. An index
 * outside the request is the upstream's fault; this runs inside the attempt, so it fails over before any charge.
 */
export function ranked(results: RerankResult['results'], documents: number, topN: number): RerankResult['results'] {
  for (const r of results) {
    if (!Number.isInteger(r.index) || r.index < 0 || r.index >= documents)
      throw new UpstreamError('protocol', `upstream ranked a document that was not sent: ${r.index}`);
  }
  return [...results].sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index).slice(0, topN);
}
