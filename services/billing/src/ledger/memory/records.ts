import type { HoldClose } from '@gateway/events';

/**
 * What the in-memory ledger decided, one record per decision, in the order it decided them. The same records go
 * to the journal (durability) and, batched, to ledger_write (the tables): they carry outcomes, never requests, so
 * applying them needs no rule of the ledger's and cannot decide differently the second time.
 */
export interface HoldFacts {
  id: string;
  account: string;
  key: string;
  request: string;
  model: string;
  /** nano-USD, decimal: JSON has no bigint. */
  amount: string;
  created_ms: number;
}

export type LedgerRecord =
  | { seq: number; t: 'place'; h: HoldFacts; idem: string | null; expires_ms: number }
  | {
      seq: number;
      t: 'close';
      h: HoldFacts;
      /** The hold's state after the close ('expired' when a late settle met an expired hold). */
      state: 'settled' | 'released' | 'expired';
      charge: string;
      /** The hold had expired: its amount was already given back, so only the charge moves. */
      late: boolean;
      rec: HoldClose['record'];
    }
  | { seq: number; t: 'expire'; h: HoldFacts }
  /** A streaming hold's latest checkpoint, kept for the tables so that a later start can still charge it. */
  | { seq: number; t: 'checkpoint'; h: HoldFacts; charge: string; rec: HoldClose['record'] };

interface HoldRow {
  id: string;
  state: string;
  charge: string;
  closed: boolean;
}

/** One ledger_write call's argument: the records (from, to] folded into set-based writes. */
export interface Batch {
  from: number;
  to: number;
  body: {
    inserts: (HoldRow & Omit<HoldFacts, 'id'> & { idem: string | null; expires_ms: number })[];
    updates: HoldRow[];
    keys: { id: string; held: string; usage: string; used: boolean }[];
    accounts: { id: string; held: string; usage: string }[];
    expired: { hold: string; request: string; account: string; key: string; model: string; created_ms: number }[];
    records: { hold: string; request: string; account: string; key: string; charge: string; created_ms: number; rec: HoldClose['record'] }[];
    /** Checkpoints of holds still open at the batch's end. */
    checkpoints: { hold: string; charge: string; rec: HoldClose['record'] }[];
  };
}

/** The map's entry for `key`, made and added first if there is none. */
function entry<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

/**
 * Folds consecutive records into one batch: a hold placed and closed within it is inserted closed, held and usage
 * become one net change per key and per account. Records must be contiguous and in order (`from` is the seq
 * before the first).
 */
export function toBatch(from: number, records: LedgerRecord[]): Batch {
  const inserts = new Map<string, Batch['body']['inserts'][number]>();
  const updates = new Map<string, HoldRow>();
  const keys = new Map<string, { held: bigint; usage: bigint; used: boolean }>();
  const accounts = new Map<string, { held: bigint; usage: bigint }>();
  const expired: Batch['body']['expired'] = [];
  const out: Batch['body']['records'] = [];
  const checkpoints = new Map<string, Batch['body']['checkpoints'][number]>();
  const keyDelta = (id: string) => entry(keys, id, () => ({ held: 0n, usage: 0n, used: false }));
  const accountDelta = (id: string) => entry(accounts, id, () => ({ held: 0n, usage: 0n }));
  const row = (id: string): HoldRow => inserts.get(id) ?? entry(updates, id, () => ({ id, state: 'open', charge: '0', closed: false }));
  const move = (h: HoldFacts, held: bigint, usage: bigint) => {
    const k = keyDelta(h.key);
    const a = accountDelta(h.account);
    k.held += held;
    k.usage += usage;
    a.held += held;
    a.usage += usage;
  };

  let expect = from;
  for (const r of records) {
    if (r.seq !== expect + 1) throw new Error(`ledger batch: record ${r.seq} follows ${expect}`);
    expect = r.seq;
    const { h } = r;
    if (r.t === 'checkpoint') {
      checkpoints.set(h.id, { hold: h.id, charge: r.charge, rec: r.rec });
      continue;
    }
    // A hold that closes or expires has spent its checkpoint (an expiry applies it as a close of its own).
    checkpoints.delete(h.id);
    const amount = BigInt(h.amount);
    if (r.t === 'place') {
      const { id, ...facts } = h;
      inserts.set(id, { id, ...facts, idem: r.idem, expires_ms: r.expires_ms, state: 'open', charge: '0', closed: false });
      move(h, amount, 0n);
      keyDelta(h.key).used = true;
    } else if (r.t === 'close') {
      Object.assign(row(h.id), { state: r.state, charge: r.charge, closed: true });
      move(h, r.late ? 0n : -amount, BigInt(r.charge));
      out.push({ hold: h.id, request: h.request, account: h.account, key: h.key, charge: r.charge, created_ms: h.created_ms, rec: r.rec });
    } else {
      Object.assign(row(h.id), { state: 'expired', charge: '0', closed: false });
      move(h, -amount, 0n);
      expired.push({ hold: h.id, request: h.request, account: h.account, key: h.key, model: h.model, created_ms: h.created_ms });
    }
  }
  return {
    from,
    to: expect,
    body: {
      inserts: [...inserts.values()],
      updates: [...updates.values()],
      keys: [...keys].map(([id, d]) => ({ id, held: d.held.toString(), usage: d.usage.toString(), used: d.used })),
      accounts: [...accounts].map(([id, d]) => ({ id, held: d.held.toString(), usage: d.usage.toString() })),
      expired,
      records: out,
      checkpoints: [...checkpoints.values()],
    },
  };
}

/** A record before the ledger numbers it. */
export type UnnumberedRecord = LedgerRecord extends infer R ? (R extends LedgerRecord ? Omit<R, 'seq'> : never) : never;
