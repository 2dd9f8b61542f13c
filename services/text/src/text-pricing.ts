import type { ResolvedModel } from '@gateway/config';
import { charge } from '@gateway/money';
import { maxTokensOf } from '@gateway/upstreams';

/** Text shared by every text route's estimate: all the prompt's content, whatever its shape. */
export function promptText(messages: Array<{ content?: unknown }>): string {
  let text = '';
  for (const m of messages) text += typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
  return text;
}

/** Per message, chat formats add a few framing tokens; 8 bounds every tokenizer we price against. */
const FRAMING_TOKENS_PER_MESSAGE = 8;

/** Worst case: every prompt byte a token, plus the most the model may write, plus the flat request price. */
export function textWorstCase(model: ResolvedModel, prompt: string, messageCount: number, maxTokens: number | undefined): bigint {
  const cap = model.config.max_output_tokens ?? 4096;
  const output = maxTokens === undefined ? cap : Math.min(maxTokens, cap);
  const input = maxTokensOf(prompt) + FRAMING_TOKENS_PER_MESSAGE * messageCount;
  return textCharge(model, input, output);
}

export function textCharge(model: ResolvedModel, promptTokens: number, completionTokens: number): bigint {
  return charge([
    [promptTokens, model.rates.prompt],
    [completionTokens, model.rates.completion],
    [1, model.rates.request],
  ]);
}
