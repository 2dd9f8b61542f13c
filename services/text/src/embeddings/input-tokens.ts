import { countTokens, maxTokensOf } from '@gateway/upstreams';

/** The hold's bound: a byte-level tokenizer needs at least one byte per token; a token array is its own count. */
export function maxInputTokens(inputs: string[] | number[][]): number {
  let n = 0;
  for (const input of inputs) n += typeof input === 'string' ? maxTokensOf(input) : input.length;
  return n;
}

/**
 * When the upstream reports no usage: strings counted with the o200k_base tokenizer (in its worker thread, see
 * countTokens), token arrays by length.
 */
export async function countedInputTokens(inputs: string[] | number[][]): Promise<number> {
  const counts = await Promise.all(inputs.map((input) => (typeof input === 'string' ? countTokens(input) : input.length)));
  return counts.reduce((n, c) => n + c, 0);
}
