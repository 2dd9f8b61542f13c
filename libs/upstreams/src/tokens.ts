import type { Tiktoken } from 'js-tiktoken';

let encoder: Tiktoken | undefined;

function loadEncoder(): Tiktoken {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { getEncoding } = require('js-tiktoken') as typeof import('js-tiktoken');
  return getEncoding('o200k_base');
}

/**
 * Counts tokens the way OpenAI-family models do (o200k_base): for a broken stream, where the upstream never
 * reported usage, and for upstreams that report none (rerank).
 */
export function countTokens(text: string): number {
  if (!text) return 0;
  encoder ??= loadEncoder();
  return encoder.encode(text).length;
}

/**
 * Loading the encoder takes over a second of CPU; servers do it before they listen so no request waits for it.
 * Tests and scripts skip it and load on first use.
 */
export function warmTokenizer(): void {
  encoder ??= loadEncoder();
}

/** An upper bound on the tokens of any byte-level BPE tokenizer: a token covers at least one byte. */
export function maxTokensOf(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
