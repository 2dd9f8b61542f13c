import { resolutionKey, type ResolvedModel } from '@gateway/config';
import { charge } from '@gateway/money';

/** Per image, in atto-USD: the rate of the resolution asked for where the model lists one, else `pricing.image`. */
export function imageRate(model: ResolvedModel, resolution: string | undefined): bigint {
  const keyed = resolution === undefined ? undefined : model.rates.imageByResolution.get(resolutionKey(resolution));
  return keyed ?? model.rates.image;
}

/**
 * The hold (MONEY.md: n × image rate, per resolution where given). With no resolution asked for, the model's
 * default may be any of them, so the dearest rate it has.
 */
export function imageWorstCase(model: ResolvedModel, n: number, resolution: string | undefined): bigint {
  let rate = imageRate(model, resolution);
  if (resolution === undefined) for (const r of model.rates.imageByResolution.values()) if (r > rate) rate = r;
  return charge([[n, rate]]);
}

/** The charge: the images actually returned (an upstream may make fewer than n) at the rate of what was asked. */
export function imageCharge(model: ResolvedModel, images: number, resolution: string | undefined): bigint {
  return charge([[images, imageRate(model, resolution)]]);
}
