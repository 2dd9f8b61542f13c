import type { ResolvedModel } from '@gateway/config';
import { headlineOf } from './headline';

/** The comparison price in the headline unit; without one the model is its own reference (no discount shown). */
export function referenceOf(m: ResolvedModel): number {
  return m.config.reference_price ?? headlineOf(m).price;
}

/**
 * The fraction (0 to 1, four decimals) the headline price lies below the reference. Never negative: a price above
 * the reference is a markup, which a field named discount cannot express, so it reads 0; a free reference too.
 */
export function discountOf(m: ResolvedModel): number {
  const reference = referenceOf(m);
  const { price } = headlineOf(m);
  if (reference <= 0 || price >= reference) return 0;
  return Math.round(((reference - price) / reference) * 10_000) / 10_000;
}
