import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayError } from '@gateway/errors';
import { createBillingHttpClient } from './http';
import type { HoldRequest } from './port';

/** A stand-in for billing that answers every request with one canned reply and keeps the bodies it was sent. */
async function cannedBilling(status: number, body: string) {
  const received: unknown[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      received.push(JSON.parse(raw));
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = createBillingHttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return {
    client,
    received,
    async close() {
      await client.close();
      await new Promise((r) => server.close(r));
    },
  };
}

const request: HoldRequest = { accountId: 'acct_1', keyId: 'key_1', requestId: 'req_1', amountNano: 123_000_000_000n, model: 'm/x', ttlMs: 60_000 };
const unavailable = { code: 'upstream_unavailable', status: 503 };

describe('billing HTTP client', () => {
  let billing: Awaited<ReturnType<typeof cannedBilling>> | undefined;
  afterEach(async () => {
    await billing?.close();
    billing = undefined;
  });

  it.each([
    ['without its amount', 201, JSON.stringify({ data: { holdId: 'hold_1', expiresAt: '2030-01-01T00:00:00.000Z' } })],
    ['with an amount that is not nano-USD', 201, JSON.stringify({ data: { holdId: 'hold_1', amountNano: '1.5', expiresAt: '' } })],
    ['without its data', 201, JSON.stringify({ hold: {} })],
    ['that is not JSON', 201, '<html>bad gateway</html>'],
    ['that is an error without an envelope', 500, 'oops'],
  ])('a hold answer %s is a 503, not a crash', async (_what, status, body) => {
    billing = await cannedBilling(status, body);
    await expect(billing.client.placeHold(request)).rejects.toMatchObject(unavailable);
  });

  it.each([
    ['without its identity', 200, JSON.stringify({ data: { accountId: 'acct_1' } })],
    [
      'with a rate limit that is not a number',
      200,
      JSON.stringify({ data: { accountId: 'a', keyId: 'k', rateLimit: { requests: '10', intervalMs: 1000 } } }),
    ],
    ["that is a 404 without billing's unknown-key envelope", 404, 'Cannot POST /internal/keys/verify'],
  ])('a key answer %s is a 503, not a crash or a 401', async (_what, status, body) => {
    billing = await cannedBilling(status, body);
    await expect(billing.client.verifyKey('sk_live_x')).rejects.toMatchObject(unavailable);
  });

  it('an unreachable billing is a 503', async () => {
    const client = createBillingHttpClient('http://127.0.0.1:1'); // nothing listens on port 1
    try {
      await expect(client.placeHold(request)).rejects.toMatchObject(unavailable);
      await expect(client.verifyKey('sk_live_x')).rejects.toMatchObject(unavailable);
    } finally {
      await client.close();
    }
  });

  it("a refusal crosses as billing's own error, status and code kept", async () => {
    billing = await cannedBilling(
      402,
      JSON.stringify({ error: { code: 'insufficient_credits', message: 'Insufficient credits: ...', request_id: '' } }),
    );
    const err = await billing.client.placeHold(request).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ code: 'insufficient_credits', status: 402, message: 'Insufficient credits: ...' });
  });

  it('sends the hold request as the contract encodes it, the amount as an exact string', async () => {
    billing = await cannedBilling(
      201,
      JSON.stringify({ data: { holdId: 'hold_1', amountNano: '123000000000', expiresAt: '2030-01-01T00:00:00.000Z' } }),
    );
    expect(await billing.client.placeHold(request)).toEqual({
      holdId: 'hold_1',
      amountNano: 123_000_000_000n,
      expiresAt: '2030-01-01T00:00:00.000Z',
    });
    expect(billing.received).toEqual([{ ...request, amountNano: '123000000000' }]);
  });

  it('a hold request outside the contract is refused before it is sent', async () => {
    billing = await cannedBilling(201, '');
    await expect(billing.client.placeHold({ ...request, idempotencyKey: 'k'.repeat(256) })).rejects.toMatchObject({
      code: 'invalid_request',
      status: 400,
    });
    expect(billing.received).toEqual([]);
  });

  it('a key that cannot be one billing issued is unknown without asking billing', async () => {
    billing = await cannedBilling(200, '');
    expect(await billing.client.verifyKey('k'.repeat(600))).toBeUndefined();
    expect(billing.received).toEqual([]);
  });
});
