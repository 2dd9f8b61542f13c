/**
 * TRUST_PROXY as Express's `trust proxy` setting. Express reads a string as a list of addresses, so the documented
 * "1" (one proxy hop: the ingress controller) would trust the address "1", which no proxy has, and every anonymous
 * client would still share the ingress pod's budget. A whole number is a hop count, "true"/"false" a boolean;
 * anything else (CIDRs, "loopback", "uniquelocal", comma lists) is Express's address list.
 */
export function trustProxySetting(value: string): number | boolean | string {
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  if (v === 'true' || v === 'false') return v === 'true';
  return v;
}
