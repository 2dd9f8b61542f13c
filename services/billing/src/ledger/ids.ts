import crypto from 'node:crypto';
import { newRequestId } from '@gateway/service-kit';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function base62(n: number): string {
  // 62 * 4 = 248 < 256: rejecting bytes >= 248 keeps every character equally likely.
  let out = '';
  while (out.length < n) {
    for (const b of crypto.randomBytes(n * 2)) {
      if (b < 248 && out.length < n) out += BASE62[b % 62];
    }
  }
  return out;
}

export const newAccountId = () => newRequestId('acct');
export const newHoldId = () => newRequestId('hold');
/** Unprefixed, as the spec's key record says. */
export const newKeyId = () => base62(20);
export const newApiKey = () => `sk_live_${base62(48)}`;
export const newSecret = () => `whsec_${base62(40)}`;
export const newAdminToken = () => `gwadm_${base62(40)}`;

/** Keys are stored as SHA-256: high-entropy secrets need no slow hash, and lookup stays one index probe. */
export function hashSecret(raw: string): string {
  return crypto.createHash('sha256').update(raw).digest('hex');
}
