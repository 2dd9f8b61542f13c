import type { BillingPort, KeyIdentity } from '@gateway/billing-client';

interface Entry {
  identity: KeyIdentity | undefined;
  expiresAt: number;
  pending?: Promise<KeyIdentity | undefined>;
}

/**
 * Key verifications cached for at most `ttlMs` (5 s): a revoked key stops within seconds in the fleet,
 * and at once in the embedded gateway, which evicts on revoke. Unknown keys are cached too, so a flood
 * of bad keys costs billing one lookup per key per TTL. Concurrent misses share one lookup.
 */
export class KeyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly billing: BillingPort,
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 100_000,
  ) {}

  async verify(rawKey: string): Promise<KeyIdentity | undefined> {
    const now = Date.now();
    const hit = this.entries.get(rawKey);
    if (hit && hit.expiresAt > now) return hit.pending ?? hit.identity;
    const pending = this.billing.verifyKey(rawKey);
    const entry: Entry = { identity: undefined, expiresAt: now + this.ttlMs, pending };
    this.entries.set(rawKey, entry);
    try {
      entry.identity = await pending;
      entry.expiresAt = Date.now() + this.ttlMs;
      return entry.identity;
    } catch (e) {
      this.entries.delete(rawKey); // billing unreachable: never cache the failure
      throw e;
    } finally {
      entry.pending = undefined;
      if (this.entries.size > this.maxEntries) this.prune();
    }
  }

  evictKeyId(keyId: string): void {
    for (const [raw, e] of this.entries) if (e.identity?.keyId === keyId) this.entries.delete(raw);
  }

  private prune(): void {
    const now = Date.now();
    for (const [raw, e] of this.entries) if (e.expiresAt <= now) this.entries.delete(raw);
  }
}
