import { z } from 'zod';
import { parsed, tokenCount, usageOrNone } from '../answer-schema';
import type { RerankResult } from '../types';

/**
 * The Cohere rerank answer as the gateway reads it, checked where it arrives; loose, so fields added later pass.
 * Each billed figure is checked on its own: a malformed one is dropped and counted instead (usageOrNone), and the
 * route falls back to the gateway's own count as when none is reported.
 */
const answer = z.looseObject({
  results: z.array(z.looseObject({ index: z.number().int().nonnegative(), relevance_score: z.number() })),
  meta: z.unknown().optional(),
  usage: z.unknown().optional(),
});

type Figures = { usage?: { total_tokens?: unknown }; meta?: { billed_units?: { search_units?: unknown }; tokens?: { input_tokens?: unknown } } };

/** A figure's container may be anything; only a figure that is there is judged. */
const at = (v: unknown) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : {});

export function readRerankAnswer(json: unknown, onMalformedUsage: (issue: string) => void): Pick<RerankResult, 'results' | 'usage'> {
  const a = parsed(answer, json, 'rerank answer');
  const { usage, meta } = a as Figures;
  const figure = (raw: unknown, name: string) => usageOrNone(tokenCount, raw, (issue) => onMalformedUsage(`${name}: ${issue}`));
  // Cohere-compatible servers (Jina, vLLM) report usage.total_tokens, newer Cohere answers meta.tokens.input_tokens.
  const tokens = figure(at(usage).total_tokens, 'usage.total_tokens') ?? figure(at(at(meta).tokens).input_tokens, 'meta.tokens.input_tokens');
  const searchUnits = figure(at(at(meta).billed_units).search_units, 'meta.billed_units.search_units');
  const reported = { ...(tokens !== undefined ? { total_tokens: tokens } : {}), ...(searchUnits !== undefined ? { search_units: searchUnits } : {}) };
  return {
    results: a.results.map((r) => ({ index: r.index, relevance_score: r.relevance_score })),
    ...(Object.keys(reported).length ? { usage: reported } : {}),
  };
}
