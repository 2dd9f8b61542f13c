import { creditsBody, createAccountBody, createKeyBody, listAccountsQuery } from './schemas';

/** Issue 32: 1e-10 USD once became 0 and 1.5e-9 became 2 nano-USD. Admin amounts are exact or refused. */
describe('admin money amounts', () => {
  it('reads numbers and strings alike, exactly, in plain and exponent notation', () => {
    expect(creditsBody.parse({ amount: 0.1 }).amount).toBe(100_000_000n);
    expect(creditsBody.parse({ amount: '0.1' }).amount).toBe(100_000_000n);
    expect(creditsBody.parse({ amount: 1.5e-7 }).amount).toBe(150n);
    expect(creditsBody.parse({ amount: '1.5e-7' }).amount).toBe(150n);
    expect(creditsBody.parse({ amount: -2 }).amount).toBe(-2_000_000_000n);
  });

  it('refuses what is finer than a nano-dollar, as a number or a string, instead of rounding it', () => {
    for (const amount of [1e-10, '1e-10', 1.5e-9, '1.5e-9', '0.0000000001', 'ten', '']) {
      expect(creditsBody.safeParse({ amount }).success).toBe(false);
    }
  });

  it('refuses negative credits and key limits by their exact value', () => {
    expect(createAccountBody.safeParse({ credits: '-0.000000001' }).success).toBe(false);
    expect(createKeyBody.safeParse({ limit: -1e-9 }).success).toBe(false);
    expect(createKeyBody.parse({ limit: null }).limit).toBeNull();
    expect(createAccountBody.parse({ credits: 0 }).credits).toBe(0n);
  });
});

describe('the account list query', () => {
  it('takes an empty or blank search as none, and trims one', () => {
    expect(listAccountsQuery.parse({ search: '' })).toEqual({ limit: 50 });
    expect(listAccountsQuery.parse({ search: '   ' }).search).toBeUndefined();
    expect(listAccountsQuery.parse({ search: ' acct_ab ', limit: '5' })).toEqual({ search: 'acct_ab', limit: 5 });
  });

  it('refuses a search too long, a limit out of range and a cursor it did not give', () => {
    for (const bad of [{ search: 'x'.repeat(201) }, { search: ['a', 'b'] }, { limit: '0' }, { limit: '201' }, { cursor: 'abc' }])
      expect({ bad, ok: listAccountsQuery.safeParse(bad).success }).toEqual({ bad, ok: false });
  });
});
