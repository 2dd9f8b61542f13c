/**
 * Token figures no ledger may take, as an upstream could send them in JSON: each must be dropped and reported at
 * the protocol boundary (the route then bills the gateway's own count), never passed on. NaN and the infinities
 * cannot travel in JSON; 1e300 is what they become.
 */
export const MALFORMED_COUNTS: Array<[string, unknown]> = [
  ['fractional', 10.5],
  ['a string', '010'],
  ['negative', -990],
  ['huge', 1e300],
  ['past the ledger column', 2 ** 31],
  ['an object', { value: 3 }],
];
