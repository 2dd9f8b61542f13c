import { countTokens } from '@gateway/upstreams';

/**
 * When the upstream reports no usage: strings counted with the o200k_base tokenizer (in its worker thread, see
 * countTokens), token arrays by length.
 */
export async function countedInputTokens(inputs: string[] | number[][]): Promise<number> {
  const counts = await Promise.all(inputs.map((input) => (typeof input === 'string' ? countTokens(input) : input.length)));
  return counts.reduce((n, c) => n + c, 0);
}
