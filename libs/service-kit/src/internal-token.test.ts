import crypto from 'node:crypto';
import type { Request } from 'express';
import { GatewayError } from '@gateway/errors';
import { INTERNAL } from './context';
import { requireInternalToken } from './internal-token';

const TOKEN = 'fleet-secret-0123456789abcdef';

/** What the middleware does with a request carrying these headers: passes it on, or the status it refuses with. */
function outcome(token: string | undefined, headers: Record<string, unknown>, accepted?: string): 'passed' | number {
  let result: 'passed' | number | undefined;
  requireInternalToken(token, accepted)({ headers } as unknown as Request, {} as never, (err?: unknown) => {
    result = err === undefined ? 'passed' : err instanceof GatewayError ? err.status : -1;
  });
  if (result === undefined) throw new Error('the middleware neither passed nor refused');
  return result;
}

describe('requireInternalToken', () => {
  afterEach(() => jest.restoreAllMocks());

  it('passes the configured token and refuses (401) a request without it, with a wrong value, or with a prefix or extension of it', () => {
    const cases = {
      right: TOKEN,
      missing: undefined,
      empty: '',
      'same length, wrong value': `${TOKEN.slice(0, -1)}x`,
      prefix: TOKEN.slice(0, 16),
      longer: `${TOKEN}0`,
      'sent twice': [TOKEN, TOKEN],
    };
    const seen = Object.fromEntries(Object.entries(cases).map(([name, value]) => [name, outcome(TOKEN, { [INTERNAL.token]: value })]));
    expect(seen).toEqual({
      right: 'passed',
      missing: 401,
      empty: 401,
      'same length, wrong value': 401,
      prefix: 401,
      longer: 401,
      'sent twice': 401,
    });
  });

  it('with no token configured, refuses everyone (it used to let every request through)', () => {
    for (const token of [undefined, '']) {
      expect([outcome(token, {}), outcome(token, { [INTERNAL.token]: '' }), outcome(token, { [INTERNAL.token]: TOKEN })]).toEqual([401, 401, 401]);
    }
  });

  it('compares in constant time: every check goes through timingSafeEqual on two digests of one length, whatever length was sent', () => {
    const compare = jest.spyOn(crypto, 'timingSafeEqual');
    const sent = ['', 'x', TOKEN.slice(0, -1), `${TOKEN.slice(0, -1)}x`, TOKEN, `${TOKEN}0`, 'y'.repeat(4096)];
    const seen = sent.map((value) => outcome(TOKEN, { [INTERNAL.token]: value }));
    expect(seen).toEqual([401, 401, 401, 401, 'passed', 401, 401]);
    expect(compare).toHaveBeenCalledTimes(sent.length);
    for (const [a, b] of compare.mock.calls) expect([(a as Buffer).length, (b as Buffer).length]).toEqual([32, 32]);
  });

  it('while the token rotates, passes the accepted one too, still in constant time, and never without a current token', () => {
    const NEXT = 'next-fleet-secret-0123456789';
    const compare = jest.spyOn(crypto, 'timingSafeEqual');
    const seen = [TOKEN, NEXT, 'neither-of-the-two-tokens', undefined].map((value) => outcome(TOKEN, { [INTERNAL.token]: value }, NEXT));
    expect(seen).toEqual(['passed', 'passed', 401, 401]);
    // Both digests are compared for every request, whichever matched: the time says nothing about which one.
    expect(compare).toHaveBeenCalledTimes(6);
    expect(outcome(undefined, { [INTERNAL.token]: NEXT }, NEXT)).toBe(401);
  });
});
