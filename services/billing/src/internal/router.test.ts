import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import express from 'express';
import {
  createBillingHttpClient,
  internalApi,
  type BillingPort,
  type JobSettingsPort,
  type Hold,
  type HoldRequest,
  type KeyIdentity,
  type ReplayFinish,
  type ReplayPort,
} from '@gateway/billing-client';
import { useInMemoryTracing } from '@gateway/bus/testing';
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
  const finished: ReplayFinish[] = [];
  const port: BillingPort & JobSettingsPort & ReplayPort = {
    claimReplay: async (req) => {
      if (req.idempotencyKey === 'idem-other') throw new GatewayError('duplicate_request', 'used with a different request');
      if (req.idempotencyKey === 'idem-streamed') return { kind: 'finished', requestId: 'req_first', streamed: true };
      return { kind: 'replay', requestId: 'req_first', answer: { status: 200, headers: { 'x-gateway-cost': '0.01' }, body: '{"a":1}' } };
    },
    finishReplay: async (req) => void finished.push(req),
    dropReplay: async () => undefined,
    verifyKey: async (raw) => (raw === 'sk_live_known' ? identity : undefined),
    jobSettings: async (accountId) => {
      if (accountId !== 'acct_known') throw GatewayError.notFound(`Account ${accountId}`);
      return { jobConcurrency: 3, webhookSecret: 'whsec_known' };
    },
    placeHold: async (req) => {
      seen.push(req);
      if (req.requestId === 'req_poor') throw new GatewayError('insufficient_credits', 'Insufficient credits');
      if (req.requestId === 'req_broken') throw new Error('connection lost');
      return placed;
    },
    ping: async () => undefined,
  };
  let server: http.Server;
  let url: string;
  let client: ReturnType<typeof createBillingHttpClient>;
  const paths: string[] = [];
  const unexpected: unknown[] = [];

  beforeAll(async () => {
    const app = express()
      .use((req, _res, next) => {
        paths.push(req.path);
        next();
      })
      .use(internalRouter(port, 'a-token-of-sixteen-chars', undefined, (err) => unexpected.push(err)))
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

  it('a replay claim, its refusal and a recorded answer cross the wire unchanged', async () => {
    const claim = { accountId: 'acct_1', idempotencyKey: 'idem', fingerprint: 'a'.repeat(64), requestId: 'req_2', leaseMs: 60_000 };
    expect(await client.claimReplay(claim)).toEqual({
      kind: 'replay',
      requestId: 'req_first',
      answer: { status: 200, headers: { 'x-gateway-cost': '0.01' }, body: '{"a":1}' },
    });
    expect(await client.claimReplay({ ...claim, idempotencyKey: 'idem-streamed' })).toEqual({
      kind: 'finished',
      requestId: 'req_first',
      streamed: true,
    });
    await expect(client.claimReplay({ ...claim, idempotencyKey: 'idem-other' })).rejects.toMatchObject({ code: 'duplicate_request', status: 409 });
    // Larger than the 16 KB of the other routes: an answer worth keeping is often bigger than its request.
    const body = 'x'.repeat(100_000);
    await client.finishReplay({ ...claim, streamed: false, answer: { status: 200, headers: {}, body } });
    expect(finished.at(-1)?.answer?.body).toBe(body);
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

  it('holds asked for in one turn share one request, and each caller gets its own outcome', async () => {
    seen.length = 0;
    paths.length = 0;
    const asks = ['req_a', 'req_poor', 'req_b'].map((requestId) => client.placeHold({ ...request, requestId }).catch((e: unknown) => e));
    const [a, poor, b] = await Promise.all(asks);
    expect(a).toEqual(placed);
    expect(b).toEqual(placed);
    expect(poor).toBeInstanceOf(GatewayError);
    expect(poor).toMatchObject({ code: 'insufficient_credits', status: 402, message: 'Insufficient credits' });
    expect(paths).toEqual(['/internal/holds/batch']);
    expect(seen.map((r) => r.requestId)).toEqual(['req_a', 'req_poor', 'req_b']);
    expect(seen[0]).toEqual({ ...request, requestId: 'req_a' });
  });

  it('a lone hold takes the single route', async () => {
    paths.length = 0;
    await client.placeHold(request);
    expect(paths).toEqual(['/internal/holds']);
  });

  it('a turn with more holds than a batch carries is split into batches', async () => {
    paths.length = 0;
    const n = internalApi.MAX_HOLDS_PER_BATCH + 1;
    const holds = await Promise.all(Array.from({ length: n }, (_, i) => client.placeHold({ ...request, requestId: `req_${i}` })));
    expect(holds).toHaveLength(n);
    expect(holds.every((h) => h.amountNano === placed.amountNano)).toBe(true);
    // The remainder of one is a lone hold again.
    expect(paths).toEqual(['/internal/holds/batch', '/internal/holds']);
  });

  it('holds that each fit the single route also fit a full batch together', async () => {
    paths.length = 0;
    const big = { ...request, model: `m/${'x'.repeat(15_000)}` };
    const holds = await Promise.all(
      Array.from({ length: internalApi.MAX_HOLDS_PER_BATCH }, (_, i) => client.placeHold({ ...big, requestId: `req_big_${i}` })),
    );
    expect(holds).toHaveLength(internalApi.MAX_HOLDS_PER_BATCH);
    expect(paths).toEqual(['/internal/holds/batch']);
  });

  it("a batched hold that fails unexpectedly is that hold's 503 alone, and is reported", async () => {
    unexpected.length = 0;
    const [ok, broken] = await Promise.all([
      client.placeHold(request),
      client.placeHold({ ...request, requestId: 'req_broken' }).catch((e: unknown) => e),
    ]);
    expect(ok).toEqual(placed);
    expect(broken).toMatchObject({ code: 'upstream_unavailable', status: 503 });
    expect(unexpected).toEqual([expect.objectContaining({ message: 'connection lost' })]);
  });

  it('a batch outside the contract is a 400 naming the field, and none of it reaches the port', async () => {
    seen.length = 0;
    const res = await fetch(`${url}/internal/holds/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-internal-token': 'a-token-of-sixteen-chars' },
      body: JSON.stringify({
        data: [
          { ...request, amountNano: '1000' },
          { ...request, amountNano: -1 },
        ],
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 'invalid_request', message: expect.stringContaining('amountNano') } });
    expect(seen).toEqual([]);
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

describe('internal API: a batched hold in its own request trace', () => {
  const exporter = useInMemoryTracing();

  it("billing's span for each hold of a batch belongs to the trace of the request that asked for it", async () => {
    const port: BillingPort & JobSettingsPort & ReplayPort = {
      claimReplay: async () => ({ kind: 'run' }),
      finishReplay: async () => undefined,
      dropReplay: async () => undefined,
      verifyKey: async () => undefined,
      jobSettings: async () => ({ jobConcurrency: null, webhookSecret: 'whsec_x' }),
      placeHold: async () => placed,
      ping: async () => undefined,
    };
    const paths: string[] = [];
    const app = express()
      .use((req, _res, next) => {
        paths.push(req.path);
        next();
      })
      .use(internalRouter(port, 'a-token-of-sixteen-chars', undefined))
      .use(errorHandler(() => ''));
    const server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = createBillingHttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'a-token-of-sixteen-chars');
    try {
      const tracer = trace.getTracer('test');
      const requests = ['req_a', 'req_b', 'req_c'].map((requestId) =>
        tracer.startActiveSpan(requestId, async (span) => {
          await client.placeHold({ ...request, requestId });
          span.end();
          return span.spanContext().traceId;
        }),
      );
      const traceIds = await Promise.all(requests);
      expect(paths).toEqual(['/internal/holds/batch']);
      const holdSpans = exporter.getFinishedSpans().filter((s) => s.name === 'billing.hold');
      expect(holdSpans.map((s) => s.spanContext().traceId).sort()).toEqual([...traceIds].sort());
      expect(new Set(traceIds).size).toBe(3);
    } finally {
      await client.close();
      await new Promise((r) => server.close(r));
    }
  });
});
