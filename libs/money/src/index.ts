/**
 * Money is integer nano-USD (1e-9 USD) in a bigint, everywhere: in the ledger, on the bus, in holds.
 * Prices keep more precision (atto-USD, 1e-18) so a per-token rate like "0.0000000015" stays exact;
 * a charge is summed in atto and rounded once, at the end, to nano.
 */
export type Nano = bigint;

const NANO_DIGITS = 9;
const ATTO_DIGITS = 18;
const ATTO_PER_NANO = 10n ** BigInt(ATTO_DIGITS - NANO_DIGITS);

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

function parseScaled(value: string, digits: number): bigint {
  const m = DECIMAL.exec(value.trim());
  if (!m) throw new RangeError(`not a decimal number: ${JSON.stringify(value)}`);
  const [, sign, whole, frac = ''] = m;
  if (frac.length > digits) {
    if (/[^0]/.test(frac.slice(digits))) throw new RangeError(`more than ${digits} decimals: ${value}`);
  }
  const scaled = BigInt(whole) * 10n ** BigInt(digits) + BigInt((frac.slice(0, digits) || '0').padEnd(digits, '0'));
  return sign ? -scaled : scaled;
}

/**
 * A decimal string ("0.000002") to an exact per-unit rate in atto-USD; a JSON number is read by its shortest
 * decimal form ("2e-6" is 0.000002), never by its binary value.
 */
export function parseRate(value: string | number): bigint {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError('rate must be finite');
    return parseScaled(withoutExponent(String(value)), ATTO_DIGITS);
  }
  return parseScaled(value, ATTO_DIGITS);
}

const EXPONENT = /^(-)?(\d+)(?:\.(\d+))?e([+-]?\d+)$/i;
/** Past this an exponent names no amount anyone means, and its digits would only cost memory. */
const MAX_EXPONENT = 30;

/**
 * "1.5e-9" as the plain decimal "0.0000000015", digit for digit: never through a binary value or toFixed, which
 * rounded 1e-10 to 0 and 1.5e-9 to 2 nano. Anything else is returned as it is.
 */
function withoutExponent(value: string): string {
  const m = EXPONENT.exec(value.trim());
  if (!m) return value;
  const [, sign = '', whole, frac = '', exp] = m;
  const shift = Number(exp);
  if (Math.abs(shift) > MAX_EXPONENT) throw new RangeError(`exponent out of range: ${value}`);
  const digits = `${whole}${frac}`;
  const point = whole.length + shift;
  const plain =
    point <= 0
      ? `0.${'0'.repeat(-point)}${digits}`
      : point >= digits.length
        ? digits.padEnd(point, '0')
        : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return `${sign}${plain}`;
}

/**
 * A USD amount to nano-USD, exactly or not at all: decimal strings and JSON numbers alike (a number read by its
 * shortest decimal form, never by its binary value), in plain or exponent notation. An amount finer than a nano-USD
 * is refused (RangeError), never rounded.
 */
export function parseUsd(value: string | number): Nano {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new RangeError('amount must be finite');
  // String(0.1) is "0.1" and String(1e-10) is "1e-10": what the client typed, not the double's binary expansion.
  return parseScaled(withoutExponent(String(value)), NANO_DIGITS);
}

/**
 * A priced quantity: `quantity` × `rateAtto`. A quantity counted in a finer unit than its rate's (milliseconds of a
 * per-second rate) names how many make one unit: `per` (1000).
 */
export type ChargeTerm = [quantity: bigint | number, rateAtto: bigint, per?: bigint];

const HALF_NANO = ATTO_PER_NANO / 2n;
const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));

/**
 * Sum of quantity × rate terms (rates in atto), rounded half up once to nano. The sum is exact even where a term's
 * `per` makes it a fraction of an atto: every term is brought to one common denominator before the one rounding.
 */
export function charge(terms: ChargeTerm[]): Nano {
  let denominator = 1n;
  for (const [, , per = 1n] of terms) {
    // Whole-unit terms (every text term) leave the denominator alone: no gcd, whose bigints each call would allocate.
    if (per === 1n) continue;
    if (per <= 0n) throw new RangeError(`per must be positive: ${per}`);
    denominator = (denominator / gcd(denominator, per)) * per;
  }
  let scaled = 0n;
  if (denominator === 1n) {
    for (const [q, rate] of terms) scaled += BigInt(q) * rate;
    return (scaled + HALF_NANO) / ATTO_PER_NANO;
  }
  for (const [q, rate, per = 1n] of terms) scaled += BigInt(q) * rate * (denominator / per);
  const unit = ATTO_PER_NANO * denominator;
  return (scaled + unit / 2n) / unit;
}

/**
 * The most units `k` at `unitRateAtto` each that fit beside `spent` within `budget`: the largest `k` for which
 * `charge([...spent, [k, unitRateAtto]]) <= budget`, with charge's own rounding, so a cost cap derived from it holds
 * to the nano. Negative (-1) when `spent` alone is over the budget; undefined when the unit is free (no bound).
 * `spent` takes whole-unit terms only (no `per`): what a cost cap reckons before the call.
 */
export function mostUnits(budget: Nano, spent: ChargeTerm[], unitRateAtto: bigint): bigint | undefined {
  if (unitRateAtto <= 0n) return undefined;
  let spentAtto = 0n;
  for (const [q, rate, per = 1n] of spent) {
    if (per !== 1n) throw new RangeError('mostUnits takes whole-unit terms only');
    spentAtto += BigInt(q) * rate;
  }
  // charge() rounds (atto + half) / unit down, so it stays within budget while atto + half < (budget + 1) × unit.
  const room = (budget + 1n) * ATTO_PER_NANO - ATTO_PER_NANO / 2n - 1n - spentAtto;
  return room < 0n ? -1n : room / unitRateAtto;
}

/** Exact decimal string of a nano amount, without trailing zeros ("0.005", "12", "0"). */
export function formatUsd(nano: Nano): string {
  const neg = nano < 0n;
  const abs = neg ? -nano : nano;
  const whole = abs / 10n ** BigInt(NANO_DIGITS);
  const frac = (abs % 10n ** BigInt(NANO_DIGITS)).toString().padStart(NANO_DIGITS, '0').replace(/0+$/, '');
  return `${neg ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/** The two-decimal JSON number account routes show, rounded half away from zero in integer arithmetic. */
export function toCents2(nano: Nano): number {
  const unit = 10n ** BigInt(NANO_DIGITS - 2);
  const neg = nano < 0n;
  const abs = neg ? -nano : nano;
  const cents = (abs + unit / 2n) / unit;
  const n = Number(cents) / 100; // cents fit exactly in a double; dividing by 100 yields the nearest 2-decimal number
  return neg ? -n : n;
}

/** Headline price per unit count (e.g. 1M tokens), as the listing's JSON number. */
export function headline(rateAtto: bigint, per: bigint): number {
  const nano = (rateAtto * per + ATTO_PER_NANO / 2n) / ATTO_PER_NANO;
  return Number(formatUsd(nano));
}

/** Atto rate back to the decimal string the config used ("0.000001"). */
export function formatRate(rateAtto: bigint): string {
  const whole = rateAtto / 10n ** BigInt(ATTO_DIGITS);
  const frac = (rateAtto % 10n ** BigInt(ATTO_DIGITS)).toString().padStart(ATTO_DIGITS, '0').replace(/0+$/, '');
  return `${whole}${frac ? `.${frac}` : ''}`;
}
