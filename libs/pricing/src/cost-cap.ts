import type { ResolvedModel } from '@gateway/config';
import { type ChargeTerm, charge, mostUnits } from '@gateway/money';
import { imageRate } from './image';
import { dearestPromptRate } from './text';

/**
 * What a text request under a `max_cost` is reckoned to spend before it writes anything: its prompt tokens as the
 * gateway counts them (framing included), the choices each call asks for, and the calls it makes (a prompt batch
 * makes one per prompt, each with its request fee).
 */
export interface TextLoad {
  promptTokens: number;
  choices: number;
  calls: number;
}

/** The prompt at the dearest prompt rate (as the hold prices it: the cache may read or write any of it), and the fees. */
function promptTerms(model: ResolvedModel, load: TextLoad): ChargeTerm[] {
  return [
    [load.promptTokens, dearestPromptRate(model)],
    [load.calls, model.rates.request],
  ];
}

/** The least a capped text request can cost: its prompt, its request fees, and one output token per choice. */
export function textLeastCost(model: ResolvedModel, load: TextLoad): bigint {
  return charge([...promptTerms(model, load), [load.choices, model.rates.completion]]);
}

/**
 * The output tokens per choice the cap affords beside the prompt, so the charge of the prompt and every choice at
 * that limit stays within `maxCostNano`; undefined when output is free (the cap bounds nothing). Below 1 means not
 * even one token fits, which textLeastCost reports as a least cost above the cap.
 */
export function affordableOutput(model: ResolvedModel, load: TextLoad, maxCostNano: bigint): number | undefined {
  const units = mostUnits(maxCostNano, promptTerms(model, load), model.rates.completion * BigInt(load.choices));
  if (units === undefined) return undefined;
  // Past 2^31 tokens no model writes anything anyway; a number keeps the callers' arithmetic plain.
  return units > 2_147_483_647n ? 2_147_483_647 : Number(units);
}

/** How many images, at most, the cap affords at the rate the charge uses; undefined when they are free. */
export function affordableImages(model: ResolvedModel, resolution: string | undefined, maxCostNano: bigint): number | undefined {
  const units = mostUnits(maxCostNano, [], imageRate(model, resolution));
  if (units === undefined) return undefined;
  return units > 1_000_000n ? 1_000_000 : Number(units);
}
