import { type HoldFacts, type LedgerRecord, toBatch } from './records';

const facts = (id: string, amount: string, key = 'k1', account = 'a1'): HoldFacts => ({
  id,
  account,
  key,
  request: `req_${id}`,
  model: 'm/x',
  amount,
  created_ms: 1_000,
});
const rec = {} as Extract<LedgerRecord, { t: 'close' }>['rec'];

describe('toBatch: the write-behind folds records into set-based writes', () => {
  it('inserts a hold placed and settled in one batch already settled, with one net change per key and account', () => {
    const h = facts('h1', '500');
    const b = toBatch(10, [
      { seq: 11, t: 'place', h, idem: null, expires_ms: 9_000 },
      { seq: 12, t: 'close', h, state: 'settled', charge: '200', late: false, rec },
    ]);
    expect(b).toMatchObject({ from: 10, to: 12 });
    expect(b.body.inserts).toEqual([expect.objectContaining({ id: 'h1', state: 'settled', charge: '200', closed: true })]);
    expect(b.body.updates).toEqual([]);
    expect(b.body.keys).toEqual([{ id: 'k1', held: '0', usage: '200', used: true }]);
    expect(b.body.accounts).toEqual([{ id: 'a1', held: '0', usage: '200' }]);
    expect(b.body.records).toEqual([expect.objectContaining({ hold: 'h1', charge: '200' })]);
  });

  it('updates holds of earlier batches, and a late settle moves usage only: the expiry already gave the amount back', () => {
    const h = facts('h2', '500');
    const b = toBatch(0, [
      { seq: 1, t: 'expire', h },
      { seq: 2, t: 'close', h, state: 'expired', charge: '100', late: true, rec },
    ]);
    expect(b.body.inserts).toEqual([]);
    expect(b.body.updates).toEqual([{ id: 'h2', state: 'expired', charge: '100', closed: true }]);
    expect(b.body.accounts).toEqual([{ id: 'a1', held: '-500', usage: '100' }]);
    expect(b.body.expired).toHaveLength(1);
    expect(b.body.records).toHaveLength(1);
  });

  it("keeps the last checkpoint of a hold still open at the batch's end, and none of a hold that closed in it", () => {
    const open = facts('h4', '500');
    const closed = facts('h5', '500');
    const b = toBatch(0, [
      { seq: 1, t: 'checkpoint', h: open, charge: '100', rec },
      { seq: 2, t: 'checkpoint', h: closed, charge: '100', rec },
      { seq: 3, t: 'checkpoint', h: open, charge: '300', rec },
      { seq: 4, t: 'close', h: closed, state: 'settled', charge: '200', late: false, rec },
    ]);
    expect(b.body.checkpoints).toEqual([{ hold: 'h4', charge: '300', rec }]);
    // A checkpoint moves no money: only the close does.
    expect(b.body.accounts).toEqual([{ id: 'a1', held: '-500', usage: '200' }]);
  });

  it('refuses records that are not contiguous: a gap would skip decisions', () => {
    const h = facts('h3', '1');
    expect(() => toBatch(5, [{ seq: 7, t: 'place', h, idem: null, expires_ms: 0 }])).toThrow(/record 7 follows 5/);
  });
});
