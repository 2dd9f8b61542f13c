import type { ResolvedModel } from '@gateway/config';
import { charge } from '@gateway/money';

/**
 * Characters are Unicode code points: what a reader counts, so an emoji is one character, not the two UTF-16
 * units JavaScript's `length` sees. The speech route's bound on `input` and the bill count the same way.
 */
export function characterCount(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Speech: the input's characters at the character rate. The worst case is the charge: the input is all that is billed. */
export function speechCharge(model: ResolvedModel, input: string): bigint {
  return charge([[characterCount(input), model.rates.character]]);
}

/**
 * Seconds billed for a duration: per started second, so 1.2 s bills 2. The tolerance keeps float noise in a
 * figure (3.0000000000000004) from billing a second nobody heard.
 */
export function billedSeconds(seconds: number): number {
  return Math.max(1, Math.ceil(seconds - 1e-6));
}

/**
 * Transcription: billed seconds at the second rate. The hold is this on the duration the gateway measured; the
 * charge on the duration the upstream reports, else the measured one.
 */
export function transcriptionCharge(model: ResolvedModel, seconds: number): bigint {
  return charge([[billedSeconds(seconds), model.rates.second]]);
}
