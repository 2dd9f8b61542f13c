import type { ResolvedModel } from '@gateway/config';
import { charge } from '@gateway/money';
import { outputCap } from './output-cap';
import { maxTokensOf } from './token-bound';

/**
 * Everything the upstream reads as prompt: each message's content and earlier tool calls, and the tool
 * definitions, which models are billed for as input too. Leaving tools out would let a large schema slip past the hold.
 */
export function promptText(body: { messages: Array<{ content?: unknown; tool_calls?: unknown }>; tools?: unknown }): string {
  let text = '';
  for (const m of body.messages) {
    text += typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
    if (m.tool_calls) text += JSON.stringify(m.tool_calls);
  }
  if (body.tools) text += JSON.stringify(body.tools);
  return text;
}

/** Per message, chat formats add a few framing tokens; 8 bounds every tokenizer we price against. */
export const FRAMING_TOKENS_PER_MESSAGE = 8;

/**
 * The prompt tokens the upstream served from its prompt cache (`read`) and wrote to it (`write`), both part of the
 * prompt count. Absent, none: the whole prompt is priced at the prompt rate, as before caching was priced.
 */
export interface PromptCache {
  read?: number;
  write?: number;
}

/** A cached prompt token's rate: the model's cache rate when the config sets one, else the prompt rate. */
const cacheReadRate = (model: ResolvedModel) => model.rates.inputCacheRead ?? model.rates.prompt;
const cacheWriteRate = (model: ResolvedModel) => model.rates.inputCacheWrite ?? model.rates.prompt;

/**
 * The dearest a prompt token can be: the hold cannot know which tokens the upstream will read from or write to its
 * cache, and a cache write is usually dearer than the prompt rate.
 */
export function dearestPromptRate(model: ResolvedModel): bigint {
  let dearest = model.rates.prompt;
  // A loop, not Math.max: the rates are bigints.
  for (const rate of [cacheReadRate(model), cacheWriteRate(model)]) if (rate > dearest) dearest = rate;
  return dearest;
}

/**
 * Worst case: every prompt byte a token at the dearest prompt rate (see dearestPromptRate), plus the most the model
 * may write in each choice (the cap the upstream is sent, see outputCap), plus the flat request price.
 */
export function textWorstCase(model: ResolvedModel, prompt: string, messageCount: number, requested: number | undefined, choices = 1): bigint {
  const output = outputCap(model, requested) * choices;
  const input = maxTokensOf(prompt) + FRAMING_TOKENS_PER_MESSAGE * messageCount;
  return charge([
    [input, dearestPromptRate(model)],
    [output, model.rates.completion],
    [1, model.rates.request],
  ]);
}

/**
 * The charge: prompt tokens at their rates (those the cache served or took at the cache rates, the rest at the prompt
 * rate), completion tokens at the completion rate, plus the flat request price. Reasoning tokens are completion
 * tokens (every protocol counts them in its output figure), so they are never added again.
 * `cache.read + cache.write` never exceeds `promptTokens` for usage the upstream schemas accept.
 */
export function textCharge(model: ResolvedModel, promptTokens: number, completionTokens: number, cache: PromptCache = {}): bigint {
  const read = cache.read ?? 0;
  const write = cache.write ?? 0;
  return charge([
    [Math.max(0, promptTokens - read - write), model.rates.prompt],
    [read, cacheReadRate(model)],
    [write, cacheWriteRate(model)],
    [completionTokens, model.rates.completion],
    [1, model.rates.request],
  ]);
}

/**
 * What the cache pricing changed against every prompt token at the prompt rate, in nano-USD: the charge without
 * cache rates minus the charge with them (each rounded once, so `charge + discount` is the uncached charge to the
 * nano). Positive when cache reads saved more than cache writes cost extra; negative when writes cost more.
 */
export function cacheDiscount(model: ResolvedModel, promptTokens: number, completionTokens: number, cache: PromptCache = {}): bigint {
  return textCharge(model, promptTokens, completionTokens) - textCharge(model, promptTokens, completionTokens, cache);
}
