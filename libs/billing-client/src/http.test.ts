import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayError } from '@gateway/errors';
import { createBillingHttpClient } from './http';
import type { HoldRequest } from './port';

type Reply = { status: number; body: string };

/**
 * A stand-in for billing that answers every request with one canned reply (or the reply `route` picks for a path)
 * and keeps the bodies it was sent and their paths.
 */
async function cannedBilling(status: number, body: string, route?: (path: string) => Reply) {
  const received: unknown[] = [];
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      received.push(JSON.parse(raw));
      paths.push(req.url ?? '');
      const reply = route?.(req.url ?? '') ?? { status, body };
      res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = createBillingHttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return {
    client,
    received,
    paths,
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
      // Two in one turn travel as a batch, which fails for both alike.
      await expect(Promise.all([client.placeHold(request), client.placeHold(request)])).rejects.toMatchObject(unavailable);
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

  it('a billing without the batch route (a rolling deploy) is asked one hold at a time, and not asked again for a while', async () => {
    const placedJson = JSON.stringify({ data: { holdId: 'hold_1', amountNano: '123000000000', expiresAt: '2030-01-01T00:00:00.000Z' } });
    const notFound = JSON.stringify({ error: { code: 'not_found', message: 'No route POST /internal/holds/batch', request_id: '' } });
    billing = await cannedBilling(201, placedJson, (path) =>
      path.endsWith('/batch') ? { status: 404, body: notFound } : { status: 201, body: placedJson },
    );
    const two = () => Promise.all([billing!.client.placeHold(request), billing!.client.placeHold({ ...request, requestId: 'req_2' })]);
    expect(await two()).toEqual([expect.objectContaining({ holdId: 'hold_1' }), expect.objectContaining({ holdId: 'hold_1' })]);
    expect(await two()).toHaveLength(2);
    expect(billing.paths).toEqual(['/internal/holds/batch', '/internal/holds', '/internal/holds', '/internal/holds', '/internal/holds']);
  });

  it.each([
    ['with fewer outcomes than holds', JSON.stringify({ data: [{ status: 201, data: { holdId: 'h', amountNano: '1', expiresAt: '' } }] })],
    [
      'with an outcome outside the contract',
      JSON.stringify({
        data: [
          { status: 201, data: {} },
          { status: 201, data: {} },
        ],
      }),
    ],
    ['that is not JSON', '<html>bad gateway</html>'],
  ])('a batch answer %s is a 503 for every hold in it', async (_what, body) => {
    billing = await cannedBilling(200, body);
    const outcomes = await Promise.all([billing.client.placeHold(request), billing.client.placeHold(request)].map((p) => p.catch((e: unknown) => e)));
    expect(outcomes).toEqual([expect.objectContaining(unavailable), expect.objectContaining(unavailable)]);
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
