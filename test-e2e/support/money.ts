/**
 * Expected charges, worked out here from the catalogue's decimal prices rather than with the product's money
 * library, so a test compares the ledger with an independent figure.
 */
const NANO_DIGITS = 9;

/** A decimal USD string ("0.005") in nano-USD, exactly; refuses what the ledger's unit cannot hold. */
export function nano(usd: string): bigint {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(usd);
  if (!m || (m[2] ?? '').length > NANO_DIGITS) throw new RangeError(`not a nano-exact USD amount: ${usd}`);
  return BigInt(m[1]) * 10n ** BigInt(NANO_DIGITS) + BigInt((m[2] ?? '').padEnd(NANO_DIGITS, '0'));
}

/** A text model's per-token prices, as the config writes them. */
export interface TextPrice {
  prompt: string;
  completion: string;
}

/** What `promptTokens` in and `completionTokens` out cost at `price`, in nano-USD. */
export function textCost(price: TextPrice, promptTokens: number, completionTokens: number): bigint {
  return BigInt(promptTokens) * nano(price.prompt) + BigInt(completionTokens) * nano(price.completion);
}
