import type { ResolvedModel } from '@gateway/config';
import { charge } from '@gateway/money';
import { maxTokensOf } from './token-bound';

/** What an embedding or rerank call sends as input: strings, or token arrays (their own count). */
export type InputTexts = readonly string[] | readonly (readonly number[])[];

/** The hold's bound on the input's tokens: a byte-level tokenizer needs at least one byte per token. */
export function maxInputTokens(inputs: InputTexts): number {
  let n = 0;
  for (const input of inputs) n += typeof input === 'string' ? maxTokensOf(input) : input.length;
  return n;
}

/** Embeddings and rerank bill their input only (MONEY.md): the hold is the bound of `inputs` at the prompt price. */
export function inputWorstCase(model: ResolvedModel, inputs: InputTexts): bigint {
  return inputCharge(model, maxInputTokens(inputs));
}

/** The charge: the tokens counted (or reported) at the prompt price. */
export function inputCharge(model: ResolvedModel, inputTokens: number): bigint {
  return charge([[inputTokens, model.rates.prompt]]);
}
