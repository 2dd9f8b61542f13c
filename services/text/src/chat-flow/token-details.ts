import type { ResolvedModel } from '@gateway/config';
import { cacheDiscount, type PromptCache, textCharge } from '@gateway/pricing';
import type { ChatUsage } from '@gateway/upstreams';

/** One answer's token figures as billed: the totals and the parts the pricing and the record treat apart. */
export interface TokenFigures {
  prompt: number;
  completion: number;
  /** Of `prompt`: read from the upstream's prompt cache, and written to it. */
  cacheRead: number;
  cacheWrite: number;
  /** Of `completion`: the model's reasoning. */
  reasoning: number;
  /** The upstream's own detail objects, passed through to a chat client beside the gateway's figures. */
  promptDetails?: Record<string, unknown>;
  completionDetails?: Record<string, unknown>;
}

/** The upstream's usage (its schema has checked that the parts fit the totals). */
export function figuresOf(u: ChatUsage): TokenFigures {
  const p = u.prompt_tokens_details ?? undefined;
  const c = u.completion_tokens_details ?? undefined;
  return {
    prompt: u.prompt_tokens,
    completion: u.completion_tokens,
    cacheRead: p?.cached_tokens ?? 0,
    cacheWrite: p?.cache_write_tokens ?? 0,
    reasoning: c?.reasoning_tokens ?? 0,
    ...(p ? { promptDetails: p } : {}),
    ...(c ? { completionDetails: c } : {}),
  };
}

/** Counted by the gateway (no usage reported): nothing is known to have come from a cache or been reasoning. */
export function countedFigures(prompt: number, completion: number): TokenFigures {
  return { prompt, completion, cacheRead: 0, cacheWrite: 0, reasoning: 0 };
}

/** Several answers of one request, summed; the upstream's own detail objects belong to one answer, so none ride along. */
export function sumFigures(all: TokenFigures[]): TokenFigures {
  const sum = (f: (t: TokenFigures) => number) => all.reduce((n, t) => n + f(t), 0);
  return {
    prompt: sum((t) => t.prompt),
    completion: sum((t) => t.completion),
    cacheRead: sum((t) => t.cacheRead),
    cacheWrite: sum((t) => t.cacheWrite),
    reasoning: sum((t) => t.reasoning),
  };
}

const cacheOf = (t: TokenFigures): PromptCache => ({ read: t.cacheRead, write: t.cacheWrite });

/** The charge of one answer, cache rates applied. */
export function chargeOf(model: ResolvedModel, t: TokenFigures): bigint {
  return textCharge(model, t.prompt, t.completion, cacheOf(t));
}

/** What the cache rates changed on one answer (see cacheDiscount in @gateway/pricing). */
export function discountOf(model: ResolvedModel, t: TokenFigures): bigint {
  return cacheDiscount(model, t.prompt, t.completion, cacheOf(t));
}
