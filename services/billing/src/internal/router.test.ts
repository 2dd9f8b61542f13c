import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import {
  createBillingHttpClient,
  type BillingPort,
  type JobSettingsPort,
  type Hold,
  type HoldRequest,
  type KeyIdentity,
} from '@gateway/billing-client';
import { GatewayError, errorHandler } from '@gateway/errors';
import { internalRouter } from './router';

const identity: KeyIdentity = { accountId: 'acct_1', keyId: 'key_1', rateLimit: { requests: 60, intervalMs: 60_000 } };
const placed: Hold = { holdId: 'hold_1', amountNano: 9_007_199_254_740_993n, expiresAt: '2030-01-01T00:00:00.000Z' }; // above 2^53: exact or broken
const request: HoldRequest = {
  accountId: 'acct_1',
  keyId: 'key_1',
  requestId: 'req_1',
  amountNano: 9_007_199_254_740_993n,
  model: 'm/x',
  idempotencyKey: 'idem',
  ttlMs: 60_000,
};

/** Billing's internal router over a recording port, and the fleet's client pointed at it: both ends of one contract. */
describe('internal API: server and client on one contract', () => {
  const seen: HoldRequest[] = [];
  const port: BillingPort & JobSettingsPort = {
    verifyKey: async (raw) => (raw === 'sk_live_known' ? identity : undefined),
    jobSettings: async (accountId) => {
      if (accountId !== 'acct_known') throw GatewayError.notFound(`Account ${accountId}`);
      return { jobConcurrency: 3, webhookSecret: 'whsec_known' };
    },
    placeHold: async (req) => {
      seen.push(req);
      if (req.requestId === 'req_poor') throw new GatewayError('insufficient_credits', 'Insufficient credits');
      return placed;
    },
    ping: async () => undefined,
  };
  let server: http.Server;
  let url: string;
  let client: ReturnType<typeof createBillingHttpClient>;

  beforeAll(async () => {
    const app = express()
      .use(internalRouter(port, 'a-token-of-sixteen-chars'))
      .use(errorHandler(() => ''));
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    client = createBillingHttpClient(url, 'a-token-of-sixteen-chars');
  });
  afterAll(async () => {
    await client.close();
    await new Promise((r) => server.close(r));
  });

  it('a verified key crosses the wire unchanged, an unknown one as undefined', async () => {
    expect(await client.verifyKey('sk_live_known')).toEqual(identity);
    expect(await client.verifyKey('sk_live_unknown')).toBeUndefined();
  });

  it("an account's job settings cross the wire, and an unknown account is the same 404 on both sides", async () => {
    expect(await client.jobSettings('acct_known')).toEqual({ jobConcurrency: 3, webhookSecret: 'whsec_known' });
    await expect(client.jobSettings('acct_nobody')).rejects.toMatchObject({ code: 'model_unavailable', status: 404 });
  });

  it('a hold and its request cross the wire with exact bigint amounts', async () => {
    seen.length = 0;
    expect(await client.placeHold(request)).toEqual(placed);
    expect(seen).toEqual([request]);
  });

  it("the port's refusal reaches the client with its status and code", async () => {
    await expect(client.placeHold({ ...request, requestId: 'req_poor' })).rejects.toMatchObject({ code: 'insufficient_credits', status: 402 });
  });

  it('a request outside the contract is a 400 naming the field, and never reaches the port', async () => {
    seen.length = 0;
    const res = await fetch(`${url}/internal/holds`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-internal-token': 'a-token-of-sixteen-chars' },
      body: JSON.stringify({ ...request, amountNano: '1e9' }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('amountNano') } });
    expect(seen).toEqual([]);
  });
});
