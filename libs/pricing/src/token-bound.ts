/**
 * An upper bound on the tokens of any byte-level BPE tokenizer: a token covers at least one byte. Holds are sized
 * from it, so no hold waits for a tokenizer.
 */
export function maxTokensOf(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
