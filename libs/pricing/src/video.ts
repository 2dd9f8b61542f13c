import type { ResolvedModel } from '@gateway/config';
import { charge } from '@gateway/money';

/** When a submit names no duration and the model no default_duration. */
export const FALLBACK_DURATION_SECONDS = 10;

const MILLIS_PER_SECOND = 1000n;

/** Seconds to hold a job for: the submit's duration, else the model's default. */
export function heldSeconds(model: ResolvedModel, duration: number | undefined): number {
  return duration ?? model.config.default_duration ?? FALLBACK_DURATION_SECONDS;
}

/**
 * The charge of `milliseconds` of video across all of a job's outputs at the model's per-second rate, plus its flat
 * per-request rate: billed to the millisecond, rounded half up once, to nano-USD.
 */
export function videoCharge(model: ResolvedModel, milliseconds: bigint): bigint {
  return charge([
    [milliseconds, model.rates.second, MILLIS_PER_SECOND],
    [1, model.rates.request],
  ]);
}

/** The hold of a submit: duration × n at the second rate (the worst case the contract names), plus the flat rate. */
export function videoWorstCase(model: ResolvedModel, n: number, duration: number | undefined): bigint {
  return videoCharge(model, secondsToMillis(heldSeconds(model, duration)) * BigInt(n));
}

/** A seconds figure (perhaps fractional, from JSON) as integer milliseconds, rounded up: a hold never falls short. */
export function secondsToMillis(seconds: number): bigint {
  return BigInt(Math.ceil(Math.round(seconds * 1e6) / 1e3));
}

/** Milliseconds back to the decimal seconds string the result's `usage.video_seconds` shows ("5", "5.5"). */
export function millisToSeconds(ms: bigint): string {
  const whole = ms / MILLIS_PER_SECOND;
  const frac = (ms % MILLIS_PER_SECOND).toString().padStart(3, '0').replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : `${whole}`;
}
