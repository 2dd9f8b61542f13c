import type { ResolvedModel } from '@gateway/config';
import { parseRate } from '@gateway/money';

const ATTO_PER_NANO = 10n ** 9n;
/** When a submit names no duration and the model no default_duration. */
export const FALLBACK_DURATION_SECONDS = 10;

/** Seconds to hold a job for: the submit's duration, else the model's default. */
export function heldSeconds(model: ResolvedModel, duration: number | undefined): number {
  return duration ?? model.config.default_duration ?? FALLBACK_DURATION_SECONDS;
}

/**
 * The charge of `milliseconds` of video across all of a job's outputs at the model's per-second rate, plus its flat
 * per-request rate: exact integer arithmetic on atto-USD, rounded half up once, to nano-USD.
 */
export function videoCharge(model: ResolvedModel, milliseconds: bigint): bigint {
  const perSecond = parseRate(model.config.pricing.second ?? '0');
  const flat = parseRate(model.config.pricing.request ?? '0');
  // ms × rate / 1000 drops less than one atto-USD (1e-18), far below the nano the rounding below decides on.
  const atto = (milliseconds * perSecond) / 1000n + flat;
  return (atto + ATTO_PER_NANO / 2n) / ATTO_PER_NANO;
}

/** The hold of a submit: duration × n at the second rate (the worst case the contract names), plus the flat rate. */
export function jobWorstCase(model: ResolvedModel, n: number, duration: number | undefined): bigint {
  return videoCharge(model, secondsToMillis(heldSeconds(model, duration)) * BigInt(n));
}

/** A seconds figure (perhaps fractional, from JSON) as integer milliseconds, rounded up: a hold never falls short. */
export function secondsToMillis(seconds: number): bigint {
  return BigInt(Math.ceil(Math.round(seconds * 1e6) / 1e3));
}

/** Milliseconds back to the decimal seconds string the result's `usage.video_seconds` shows ("5", "5.5"). */
export function millisToSeconds(ms: bigint): string {
  const whole = ms / 1000n;
  const frac = (ms % 1000n).toString().padStart(3, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : `${whole}`;
}
