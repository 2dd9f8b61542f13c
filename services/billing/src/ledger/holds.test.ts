import type { Db, Row } from '@gateway/db';
import { parseUsd } from '@gateway/money';
import { closeEvent } from '../testing/ledger-fixtures';
import { createLedger } from './holds';

type Answer = Row & { i: number };
type Mangle = (rows: Answer[]) => Answer[];

/**
 * A single-connection Db (PGlite's kind, so the ledger batches) that answers place_hold and close_hold like the
 * SQL would, echoing each call's own arguments so a caller can tell its answer from another's. `mangle` breaks the
 * batch answers; `calls` says which statements ran.
 */
function fakeLedgerDb(mangle: Mangle) {
  const calls: ('many' | 'one')[] = [];
  const place = (id: string, amount: string) => ({
    outcome: 'placed',
    hold_id: id,
    amount,
    expires_at: '2030-01-01T00:00:00.000Z',
    balance: null,
    held: null,
    key_room: null,
  });
  const close = (charge: string) => ({ result: 'settled', charged: charge });
  const db = {
    kind: 'pglite',
    async query(sql: string, params: unknown[] = []) {
      if (sql.includes('_holds(')) {
        calls.push('many');
        const items = JSON.parse(params[0] as string) as { i: number; id: string; amount: string; charge: string }[];
        return mangle(items.map((b) => ({ i: b.i, ...(sql.includes('place_hold') ? place(b.id, b.amount) : close(b.charge)) })));
      }
      calls.push('one');
      return [sql.includes('place_hold') ? place(params[0] as string, params[6] as string) : close(params[2] as string)];
    },
  } as unknown as Db;
  return { db, calls };
}

const request = (n: number) => ({
  accountId: 'acct',
  keyId: 'key',
  requestId: `req_${n}`,
  amountNano: parseUsd(`0.${n}`),
  model: 'm/x',
  ttlMs: 60_000,
});

describe('ledger batches on a single-connection database', () => {
  it('a well-formed batch answer is used as it is: one statement for all', async () => {
    const { db, calls } = fakeLedgerDb((rows) => rows);
    const ledger = createLedger(db);
    const holds = await Promise.all([1, 2, 3].map((n) => ledger.placeHold(request(n))));
    expect(holds.map((h) => h.amountNano)).toEqual([parseUsd('0.1'), parseUsd('0.2'), parseUsd('0.3')]);
    expect(calls).toEqual(['many']);
  });

  it.each<[string, Mangle]>([
    ['an answer is missing', (rows) => rows.filter((r) => r.i !== 1)],
    ['two answers carry one index', (rows) => rows.map((r) => (r.i === 1 ? { ...r, i: 0 } : r))],
    ['there is an answer too many', (rows) => [...rows, { ...rows[0], i: rows.length }]],
  ])('when %s, each placed hold falls back to its own single call and gets its own answer', async (_what, mangle) => {
    const { db, calls } = fakeLedgerDb(mangle);
    const ledger = createLedger(db);
    const holds = await Promise.all([1, 2, 3].map((n) => ledger.placeHold(request(n))));
    expect(holds.map((h) => h.amountNano)).toEqual([parseUsd('0.1'), parseUsd('0.2'), parseUsd('0.3')]);
    expect(new Set(holds.map((h) => h.holdId)).size).toBe(3);
    expect(calls).toEqual(['many', 'one', 'one', 'one']);
  });

  it('when a close batch answer is missing an index, each close falls back to its own single call', async () => {
    const { db, calls } = fakeLedgerDb((rows) => rows.slice(1));
    const ledger = createLedger(db);
    const who = { accountId: 'acct', keyId: 'key' };
    const closes = await Promise.all(
      ['0.1', '0.2', '0.3'].map((charge, n) =>
        ledger.closeHold(closeEvent({ holdId: `hold_${n}`, requestId: `req_${n}`, amountNano: 0n, expiresAt: '' }, who, 'settle', charge)),
      ),
    );
    expect(closes).toEqual([parseUsd('0.1'), parseUsd('0.2'), parseUsd('0.3')].map((charged) => ({ result: 'settled', charged })));
    expect(calls).toEqual(['many', 'one', 'one', 'one']);
  });
});
