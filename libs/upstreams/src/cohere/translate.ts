import type { RerankRequest, RerankResult } from '../types';
import { UpstreamError } from '../upstream-error';
import { readRerankAnswer } from './schema';

/**
 * The Cohere rerank body. Documents are never asked back: the gateway holds them already and attaches them itself
 * when the client wants them, so the answer stays small.
 */
export function cohereRerankBody(body: RerankRequest): Record<string, unknown> {
  return { query: body.query, documents: body.documents, top_n: body.top_n ?? body.documents.length, return_documents: false };
}

/**
 * Checks the answer before anyone is charged for it (cohere/schema.ts), then that every index is a position in the
 * request, each once. Cohere bills search units, not tokens; the reported token figure is what schema.ts finds.
 */
export function readCohereRerank(json: unknown, documents: number, onMalformedUsage: (issue: string) => void): RerankResult {
  const answer = readRerankAnswer(json, onMalformedUsage);
  const seen = new Set<number>();
  for (const { index } of answer.results) {
    if (index >= documents || seen.has(index)) throw new UpstreamError('protocol', `upstream rerank answer has a bad index: ${index}`);
    seen.add(index);
  }
  return answer;
}
