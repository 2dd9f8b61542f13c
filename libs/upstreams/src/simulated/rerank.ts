import type { RerankProtocol } from '../types';

const terms = (text: string) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);

/** Cosine of the two word sets: 1 for the same words, 0 for none shared. Cheap, deterministic, and it ranks sensibly. */
export function overlapScore(query: string, document: string): number {
  const q = terms(query);
  const d = terms(document);
  if (q.size === 0 || d.size === 0) return 0;
  let shared = 0;
  for (const t of q) if (d.has(t)) shared++;
  return shared / Math.sqrt(q.size * d.size);
}

/** Reports no usage, as Cohere reports none in tokens: the gateway counts query and documents itself. */
export const simulatedRerank: RerankProtocol['rerank'] = async (_ep, body) => {
  const scored = body.documents.map((doc, index) => ({ index, relevance_score: overlapScore(body.query, doc) }));
  scored.sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index);
  return { results: scored.slice(0, body.top_n ?? scored.length) };
};
