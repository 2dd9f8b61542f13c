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
 * Worst case: every prompt byte a token, plus the most the model may write in each choice (the cap the upstream is
 * sent, see outputCap), plus the flat request price.
 */
export function textWorstCase(model: ResolvedModel, prompt: string, messageCount: number, requested: number | undefined, choices = 1): bigint {
  const output = outputCap(model, requested) * choices;
  const input = maxTokensOf(prompt) + FRAMING_TOKENS_PER_MESSAGE * messageCount;
  return textCharge(model, input, output);
}

/** The charge: prompt and completion tokens at their rates, plus the flat request price. */
export function textCharge(model: ResolvedModel, promptTokens: number, completionTokens: number): bigint {
  return charge([
    [promptTokens, model.rates.prompt],
    [completionTokens, model.rates.completion],
    [1, model.rates.request],
  ]);
}
