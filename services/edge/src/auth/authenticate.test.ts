import express from 'express';
import request from 'supertest';
import { GatewayError, errorHandler } from '@gateway/errors';
import type { BillingPort } from '@gateway/billing-client';
import type { RateMeter } from '@gateway/ratelimit';
import { authenticate } from './authenticate';
import { extractKey } from './extract-key';
import { KeyCache } from './key-cache';

const identity = { accountId: 'acct_1', keyId: 'k1', rateLimit: { requests: 10, intervalMs: 60_000 } };
const meter: RateMeter = {
  hit: async (_a, limit) => ({ allowed: true, limit, remaining: limit - 1, resetAt: 2e9, retryAfter: 60 }),
  close: async () => {},
};

function app(billing: BillingPort, ttlMs = 5_000) {
  const a = express();
  const keys = new KeyCache(billing, ttlMs);
  a.use(authenticate(keys, meter, undefined));
  a.get('/x', (req, res) => void res.json({ account: req.headers['x-gateway-account-id'] }));
  a.use(errorHandler(() => 'req_test'));
  return { a, keys };
}

describe('extractKey', () => {
  it.each([
    [{ authorization: 'Bearer sk_live_a' }, 'sk_live_a'],
    [{ authorization: 'bearer   sk_live_a ' }, 'sk_live_a'],
    [{ authorization: 'sk_live_a' }, 'sk_live_a'],
    [{ 'x-api-key': 'sk_live_a' }, 'sk_live_a'],
    [{}, undefined],
  ])('%j → %s', (headers, key) => expect(extractKey(headers)).toBe(key));
});

describe('authenticate', () => {
  it('answers 503, never 401, when the key service is unreachable, and does not cache the failure', async () => {
    let calls = 0;
    const billing: BillingPort = {
      verifyKey: async () => {
        calls += 1;
        if (calls === 1) throw new GatewayError('upstream_unavailable', 'billing down');
        return identity;
      },
      placeHold: async () => {
        throw new Error('unused');
      },
      ping: async () => {},
    };
    const { a } = app(billing);
    const down = await request(a).get('/x').set('authorization', 'Bearer sk_live_abc');
    expect(down.status).toBe(503);
    expect(down.body.error).toEqual({ code: 'upstream_unavailable', message: 'billing down', request_id: 'req_test' });
    const up = await request(a).get('/x').set('authorization', 'Bearer sk_live_abc');
    expect(up.status).toBe(200);
    expect(up.body.account).toBe('acct_1');
  });

  it('fails closed when the meter cannot answer (Redis away): 503 upstream_unavailable with Retry-After, the request not passed on', async () => {
    const billing: BillingPort = {
      verifyKey: async () => identity,
      placeHold: async () => {
        throw new Error('unused');
      },
      ping: async () => {},
    };
    const down: RateMeter = {
      hit: async () => {
        throw new Error('Reached the max retries per request limit');
      },
      close: async () => {},
    };
    const a = express();
    a.use(authenticate(new KeyCache(billing, 5_000), down, undefined));
    a.get('/x', (_req, res) => void res.json({ passed: true }));
    a.use(errorHandler(() => 'req_test'));
    const r = await request(a).get('/x').set('authorization', 'Bearer sk_live_abc');
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('1');
    expect(r.body.error).toEqual({
      code: 'upstream_unavailable',
      message: 'The rate meter is unreachable; try again shortly',
      request_id: 'req_test',
    });
  });

  it('shares one billing lookup between concurrent requests for a key', async () => {
    let calls = 0;
    let answer!: () => void;
    const answered = new Promise<void>((r) => (answer = r));
    const billing: BillingPort = {
      verifyKey: async () => {
        calls += 1;
        await answered;
        return identity;
      },
      placeHold: async () => {
        throw new Error('unused');
      },
      ping: async () => {},
    };
    const { a, keys } = app(billing);
    // Billing answers only once all five requests are in the cache, so the five lookups truly overlap.
    let arrived = 0;
    let allArrived!: () => void;
    const five = new Promise<void>((r) => (allArrived = r));
    const verify = keys.verify.bind(keys);
    jest.spyOn(keys, 'verify').mockImplementation((raw) => {
      if (++arrived === 5) allArrived();
      return verify(raw);
    });
    const sent = Array.from({ length: 5 }, () =>
      request(a)
        .get('/x')
        .set('x-api-key', 'sk_live_abc')
        .then((r) => r.status),
    );
    await five;
    answer();
    expect(await Promise.all(sent)).toEqual([200, 200, 200, 200, 200]);
    expect(calls).toBe(1);
  });

  describe('with the clock under the test’s control', () => {
    let now: number;
    beforeEach(() => {
      now = Date.UTC(2026, 0, 5);
      jest.spyOn(Date, 'now').mockImplementation(() => now);
    });
    afterEach(() => jest.restoreAllMocks());

    it('answers from cache until the TTL has passed, then asks billing again', async () => {
      let calls = 0;
      const billing: BillingPort = {
        verifyKey: async () => {
          calls += 1;
          return identity;
        },
        placeHold: async () => {
          throw new Error('unused');
        },
        ping: async () => {},
      };
      const { a } = app(billing, 5_000);
      const get = async () => (await request(a).get('/x').set('x-api-key', 'sk_live_abc')).status;
      expect(await get()).toBe(200);
      now += 4_999;
      expect(await get()).toBe(200);
      expect(calls).toBe(1);
      now += 1;
      expect(await get()).toBe(200);
      expect(calls).toBe(2);
    });
  });

  it('refuses malformed keys without asking billing', async () => {
    const billing: BillingPort = {
      verifyKey: async () => {
        throw new Error('must not be called');
      },
      placeHold: async () => {
        throw new Error('unused');
      },
      ping: async () => {},
    };
    const r = await request(app(billing).a).get('/x').set('authorization', 'Bearer pk_test_123');
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('invalid_api_key');
  });

  it('evicts a revoked key at once when told', async () => {
    let revoked = false;
    const billing: BillingPort = {
      verifyKey: async () => (revoked ? undefined : identity),
      placeHold: async () => {
        throw new Error('unused');
      },
      ping: async () => {},
    };
    const { a, keys } = app(billing);
    expect((await request(a).get('/x').set('x-api-key', 'sk_live_abc')).status).toBe(200);
    revoked = true;
    keys.evictKeyId('k1');
    expect((await request(a).get('/x').set('x-api-key', 'sk_live_abc')).status).toBe(401);
  });
});
