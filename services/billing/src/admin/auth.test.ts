import crypto from 'node:crypto';
import type { Request, Response } from 'express';
import { GatewayError } from '@gateway/errors';
import { hashSecret, newAdminToken, newApiKey } from '../ledger/ids';
import { requireAdmin } from './auth';

/** The admin API's guard (spec/operations.md): the admin token, and nothing else, opens /admin/v1. */
describe('requireAdmin', () => {
  const token = newAdminToken();
  const guard = requireAdmin(hashSecret(token));
  /** What the guard passes to next(): nothing to go on, or the error the envelope answers. */
  const judge = (headers: Record<string, string>) => {
    let passed: unknown = 'next() never called';
    guard({ headers } as Request, {} as Response, (e?: unknown) => {
      passed = e;
    });
    return passed;
  };
  afterEach(() => jest.restoreAllMocks());

  it('lets the admin token in', () => {
    expect(judge({ authorization: `Bearer ${token}` })).toBeUndefined();
  });

  it.each([
    ['an API key', { authorization: `Bearer ${newApiKey()}` }],
    ['another admin token', { authorization: `Bearer ${newAdminToken()}` }],
    ['the token less its last character', { authorization: `Bearer ${token.slice(0, -1)}` }],
    ['the token and one more character', { authorization: `Bearer ${token}x` }],
    ['the token without "Bearer"', { authorization: token }],
    ['the token in x-api-key, where API keys may go', { 'x-api-key': token }],
    ['nothing', {}],
  ])('refuses %s with 401 invalid_api_key', (_what, headers) => {
    const e = judge(headers);
    expect(e).toBeInstanceOf(GatewayError);
    expect(e).toMatchObject({ code: 'invalid_api_key', status: 401, message: 'Admin API: missing or wrong admin token' });
  });

  it('compares in constant time: every presented token, right or wrong and of any length, is one timingSafeEqual of two SHA-256 digests', () => {
    const compare = jest.spyOn(crypto, 'timingSafeEqual');
    for (const given of [token, token.slice(0, 3), `${token}${token}`, newAdminToken(), newApiKey()]) {
      compare.mockClear();
      judge({ authorization: `Bearer ${given}` });
      expect(compare).toHaveBeenCalledTimes(1);
      const [a, b] = compare.mock.calls[0] as [Buffer, Buffer];
      expect([a.length, b.length]).toEqual([32, 32]);
      expect(a.equals(crypto.createHash('sha256').update(given).digest())).toBe(true);
    }
  });
});
