import type { BusEvent } from './port';

export interface HeldEntry {
  id: string;
  event: BusEvent;
}

/** A key whose run stopped at a failed event: it and every later event of the key wait here, pending, in stream order. */
export interface ParkedKey {
  stream: string;
  topic: string;
  key: string;
  entries: HeldEntry[];
  /** Failed rounds of the head (each round is `maxAttempts` handler calls). */
  failures: number;
  dueAt: number;
}

/**
 * The keys of one subscription that wait on a failed event. Handling a key's later events while its failed one
 * waits for the claim loop reordered them (`hold_1:2`, `hold_1:3`, then `hold_1:1` after claimIdleMs); only that key
 * waits, so one failing hold cannot hold up the others.
 */
export class ParkedKeys {
  private readonly byKey = new Map<string, ParkedKey>();

  get size(): number {
    return this.byKey.size;
  }

  has(stream: string, key: string): boolean {
    return this.byKey.has(slot(stream, key));
  }

  /** Parks a key at its first failure, or adds events read or claimed later to a key already parked. */
  hold(stream: string, topic: string, key: string, entries: HeldEntry[], dueAt: number): ParkedKey {
    const at = slot(stream, key);
    let p = this.byKey.get(at);
    if (!p) {
      p = { stream, topic, key, entries: [], failures: 0, dueAt };
      this.byKey.set(at, p);
    }
    for (const e of entries) {
      if (p.entries.some((x) => x.id === e.id)) continue;
      // Claimed from another consumer, an event may be older than those already waiting: stream order decides.
      const after = p.entries.findIndex((x) => olderId(e.id, x.id));
      if (after === -1) p.entries.push(e);
      else p.entries.splice(after, 0, e);
    }
    return p;
  }

  due(now: number): ParkedKey[] {
    return [...this.byKey.values()].filter((p) => p.dueAt <= now);
  }

  nextDueAt(): number | undefined {
    let next: number | undefined;
    for (const p of this.byKey.values()) if (next === undefined || p.dueAt < next) next = p.dueAt;
    return next;
  }

  /** Once its last event is handled, the key runs freely again. */
  release(p: ParkedKey): void {
    if (p.entries.length === 0 && this.byKey.get(slot(p.stream, p.key)) === p) this.byKey.delete(slot(p.stream, p.key));
  }

  idsOf(stream: string): string[] {
    return [...this.byKey.values()].filter((p) => p.stream === stream).flatMap((p) => p.entries.map((e) => e.id));
  }

  /** Forgets the events of `stream` this consumer no longer owns (acknowledged elsewhere, or taken by another consumer). */
  keepOnly(stream: string, owned: Set<string>): void {
    for (const p of this.byKey.values()) {
      if (p.stream !== stream) continue;
      p.entries = p.entries.filter((e) => owned.has(e.id));
      this.release(p);
    }
  }
}

function slot(stream: string, key: string): string {
  return `${stream}\n${key}`;
}

/** Stream ids are `<ms>-<seq>`, both decimal: compared as numbers, not strings ("9-0" is older than "10-0"). */
export function olderId(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(BigInt);
  const [bm, bs] = b.split('-').map(BigInt);
  return am < bm || (am === bm && as < bs);
}
