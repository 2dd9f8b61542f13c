import type { InputTexts } from '@gateway/pricing';
import { countTokens } from '@gateway/upstreams';

/**
 * When the upstream reports no usage, and for a `max_cost` before the call: strings counted with the o200k_base tokenizer (in its worker thread, see
 * countTokens), token arrays by length.
 */
export async function countedInputTokens(inputs: InputTexts): Promise<number> {
  const counts = await Promise.all(inputs.map((input) => (typeof input === 'string' ? countTokens(input) : input.length)));
  return counts.reduce((n, c) => n + c, 0);
}
