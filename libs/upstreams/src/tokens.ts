import type { Tiktoken } from 'js-tiktoken';

let encoder: Tiktoken | undefined;

/**
 * Counts tokens the way OpenAI-family models do (o200k_base). Loaded lazily: only a broken stream,
 * where the upstream never reported usage, needs an exact count of what was delivered.
 */
export function countTokens(text: string): number {
  if (!text) return 0;
  if (!encoder) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { getEncoding } = require('js-tiktoken') as typeof import('js-tiktoken');
    encoder = getEncoding('o200k_base');
  }
  return encoder.encode(text).length;
}

/** An upper bound on the tokens of any byte-level BPE tokenizer: a token covers at least one byte. */
export function maxTokensOf(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
