import { GatewayError } from '@gateway/errors';
import { holdRecordFromJSON, holdRecordToJSON } from './hold-record';
import { PaidCall } from './paid-call';
import { answers, fails, fakeTextProtocol, type Behaviour } from '@gateway/upstreams/testing';
import { failingPublish, spendFixture, testContext, type SpendFixture, type TestModel } from './testing';

const usage = (chargeNano: bigint) => ({ chargeNano, tokensPrompt: 3, tokensCompletion: 4, finishReason: 'stop' });

describe('PaidCall', () => {
  let fx: SpendFixture;
  const world = async (models: TestModel[]) => (fx = await spendFixture(models));
  afterEach(() => fx?.close());

  /** Begins a text call on `slugs` holding `worstCase` nano-USD, and runs it against `behaviours`. */
  async function run(slugs: string[], behaviours: Record<string, Behaviour>, opts: { worstCase?: bigint; signal?: AbortSignal } = {}) {
    const upstream = fakeTextProtocol(behaviours);
    const paid = await PaidCall.begin(fx.deps, {
      ctx: testContext(),
      category: 'text',
      slugs,
      streamed: false,
      worstCase: () => opts.worstCase ?? 1_000_000n,
    });
    const answer = paid.call(
      (_m, ep) =>
        upstream.protocol.chat(ep, { messages: [] }, { signal: opts.signal ?? new AbortController().signal, requestId: paid.record.requestId }),
      opts.signal,
    );
    return { paid, answer, upstream, tried: () => upstream.calls.map((c) => c.endpoint) };
  }

  it('sizes the hold as the maximum worst case across the candidate models', async () => {
    await world([
      { id: 'acme/a', endpoints: ['p/a'] },
      { id: 'acme/b', endpoints: ['p/b'] },
      { id: 'acme/c', endpoints: ['p/c'] },
    ]);
    const worst: Record<string, bigint> = { 'acme/a': 10n, 'acme/b': 30n, 'acme/c': 20n };
    const paid = await PaidCall.begin(fx.deps, {
      ctx: testContext(),
      category: 'text',
      slugs: ['acme/a', 'acme/b', 'acme/c'],
      streamed: false,
      worstCase: (m) => worst[m.config.id],
    });
    expect(fx.billing.requests.map((r) => [r.amountNano, r.model])).toEqual([[30n, 'acme/a']]);
    expect(paid.record.amountNano).toBe(30n);
  });

  it("fails over through the requested model's endpoints in order, then the next model's, skipping an open circuit", async () => {
    await world([
      { id: 'acme/a', endpoints: ['p1/a', 'p2/a', 'p3/a'] },
      { id: 'acme/b', endpoints: ['p1/b'] },
    ]);
    fx.circuits.failure('p2/a');
    const { paid, answer, tried } = await run(['acme/a', 'acme/b'], {
      'p1/a': fails(503),
      'p2/a': answers('never asked'),
      'p3/a': fails(429),
      'p1/b': answers('from b'),
    });
    const { model, result } = await answer;
    expect(tried()).toEqual(['p1/a', 'p3/a', 'p1/b']);
    expect(model.config.id).toBe('acme/b');
    expect(result.choices[0].message.content).toBe('from b');

    await paid.settle(usage(100n));
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([
      { outcome: 'settle', charge_nano: '100', record: { model: 'acme/b', attempts: 3, fallback_used: true, provider: 'p1' } },
    ]);
  });

  it('releases the hold when every upstream failed', async () => {
    await world([{ id: 'acme/a', endpoints: ['p1/a', 'p2/a'] }]);
    const { answer, paid } = await run(['acme/a'], { 'p1/a': fails(503), 'p2/a': fails(502) });
    await expect(answer).rejects.toThrow(/Every upstream for this model failed \(2 attempts\); nothing was charged/);
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([
      {
        hold_id: paid.record.holdId,
        outcome: 'release',
        charge_nano: '0',
        record: { status: 'failed', error_code: 'upstream_unavailable', attempts: 2 },
      },
    ]);
  });

  it('releases the hold when no upstream is healthy by the time the call runs', async () => {
    await world([{ id: 'acme/a', endpoints: ['p1/a'] }]);
    const upstream = fakeTextProtocol({ 'p1/a': answers('never asked') });
    const paid = await PaidCall.begin(fx.deps, { ctx: testContext(), category: 'text', slugs: ['acme/a'], streamed: false, worstCase: () => 1000n });
    fx.circuits.failure('p1/a'); // another request opened the circuit after our hold was placed
    await expect(paid.call((_m, ep) => upstream.protocol.chat(ep, {}, { signal: new AbortController().signal, requestId: 'r' }))).rejects.toThrow(
      /No upstream is healthy for this model right now; nothing was charged/,
    );
    expect(upstream.calls).toEqual([]);
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ outcome: 'release', charge_nano: '0', record: { error_code: 'upstream_unavailable', attempts: 0 } }]);
  });

  it("stops at the client's own 4xx without failing over or opening a circuit, and releases", async () => {
    await world([{ id: 'acme/a', endpoints: ['p1/a', 'p2/a'] }]);
    const { answer, tried } = await run(['acme/a'], { 'p1/a': fails(400), 'p2/a': answers('never asked') });
    await expect(answer).rejects.toMatchObject({ code: 'invalid_request' });
    expect(tried()).toEqual(['p1/a']);
    expect(fx.circuits.snapshot()).toEqual([]);
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ outcome: 'release', record: { error_code: 'invalid_request' } }]);
  });

  it('a client that leaves before the first byte opens no circuit, tries no other endpoint, and releases', async () => {
    await world([{ id: 'acme/a', endpoints: ['p1/a', 'p2/a'] }]);
    const client = new AbortController();
    const hangUp: Behaviour = ({ signal }) => {
      client.abort();
      throw signal?.reason ?? new Error('the call carried no signal');
    };
    const { answer, tried } = await run(['acme/a'], { 'p1/a': hangUp, 'p2/a': answers('never asked') }, { signal: client.signal });
    await expect(answer).rejects.toThrow(/client closed the request/);
    expect(tried()).toEqual(['p1/a']);
    expect(fx.circuits.snapshot()).toEqual([]);
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ outcome: 'release', charge_nano: '0', record: { error_code: 'client_closed' } }]);
  });

  it("caps a charge above the hold at the hold and keeps the upstream's figure", async () => {
    await world([{ id: 'acme/a', endpoints: ['p1/a'] }]);
    const { paid, answer } = await run(['acme/a'], { 'p1/a': answers('ok') }, { worstCase: 1_000n });
    await answer;
    expect(await paid.settle(usage(1_500n))).toBe('0.000001');
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ outcome: 'settle', charge_nano: '1000', record: { status: 'succeeded', capped_from_nano: '1500' } }]);
  });

  it('charges a charge within the hold exactly, with no cap on the record', async () => {
    await world([{ id: 'acme/a', endpoints: ['p1/a'] }]);
    const { paid, answer } = await run(['acme/a'], { 'p1/a': answers('ok') }, { worstCase: 1_000n });
    await answer;
    expect(await paid.settle(usage(999n))).toBe('0.000000999');
    await fx.billing.delivered();
    expect(fx.billing.closes).toHaveLength(1);
    expect(fx.billing.closes[0].charge_nano).toBe('999');
    expect(fx.billing.closes[0].record.capped_from_nano).toBeUndefined();
  });

  it('publishes one close per hold: settling twice, or settling then releasing, publishes only the first', async () => {
    await world([{ id: 'acme/a', endpoints: ['p1/a'] }]);
    const twice = await run(['acme/a'], { 'p1/a': answers('ok') });
    await twice.answer;
    await twice.paid.settle(usage(10n));
    await twice.paid.settle(usage(20n));
    const thenRelease = await run(['acme/a'], { 'p1/a': answers('ok') });
    await thenRelease.answer;
    await thenRelease.paid.settle(usage(30n));
    await thenRelease.paid.release('upstream_unavailable');

    await fx.billing.delivered();
    expect(fx.billing.closes.map((c) => [c.hold_id, c.outcome, c.charge_nano])).toEqual([
      [twice.paid.record.holdId, 'settle', '10'],
      [thenRelease.paid.record.holdId, 'settle', '30'],
    ]);
  });

  it('a hold-close publish that fails leaves the hold open for the sweeper and is logged; the caller still gets its charge', async () => {
    await world([{ id: 'acme/a', endpoints: ['p1/a'] }]);
    fx.deps = { ...fx.deps, bus: failingPublish(fx.bus) };
    const { paid, answer } = await run(['acme/a'], { 'p1/a': answers('ok') });
    await answer;
    expect(await paid.settle(usage(10n))).toBe('0.00000001');
    await fx.billing.delivered();
    expect(fx.billing.closes).toEqual([]);
    expect(fx.billing.open()).toEqual([paid.record.holdId]);
    expect(fx.log).toContainEqual(
      expect.objectContaining({
        level: 'error',
        msg: expect.stringMatching(/could not publish hold close/),
        fields: expect.objectContaining({ holdId: paid.record.holdId }),
      }),
    );
  });

  it('refuses a named model of another category with 400, fallbacks too, before any hold', async () => {
    await world([
      { id: 'acme/a', endpoints: ['p1/a'] },
      { id: 'acme/e', endpoints: ['p1/e'], category: 'embedding' },
    ]);
    const ctx = { ...testContext(), route: '/v1/chat/completions' };
    const begun = PaidCall.begin(fx.deps, { ctx, category: 'text', slugs: ['acme/a', 'acme/e'], streamed: false, worstCase: () => 1n });
    await expect(begun).rejects.toMatchObject({
      code: 'invalid_request',
      message: 'Model acme/e is an embedding model; /v1/chat/completions serves text models only',
    });
    expect(fx.billing.requests).toEqual([]);
  });

  it('refuses before any hold when no candidate is servable', async () => {
    await world([{ id: 'acme/a', endpoints: ['p1/a'] }]);
    const begun = PaidCall.begin(fx.deps, { ctx: testContext(), category: 'text', slugs: ['acme/missing'], streamed: false, worstCase: () => 1n });
    await expect(begun).rejects.toBeInstanceOf(GatewayError);
    await expect(begun).rejects.toMatchObject({ code: 'model_unavailable' });
    expect(fx.billing.requests).toEqual([]);
  });

  describe('with provider preferences', () => {
    const begin = (slugs: string[], provider: Parameters<typeof PaidCall.begin>[1]['provider'], worst: Record<string, bigint> = {}) =>
      PaidCall.begin(fx.deps, {
        ctx: testContext(),
        category: 'text',
        slugs,
        streamed: false,
        provider,
        worstCase: (m) => worst[m.config.id] ?? 10n,
      });

    it('holds for the models the preferences leave, and tries only their allowed endpoints', async () => {
      await world([
        { id: 'acme/dear', endpoints: ['p1/dear'], prompt: '0.00001' },
        { id: 'acme/a', endpoints: ['p1/a', 'p2/a', 'p3/a'] },
      ]);
      const paid = await begin(['acme/dear', 'acme/a'], { max_price: { prompt: '0.000001' }, ignore: ['p1'], order: ['p3'] }, { 'acme/dear': 99n });
      expect(fx.billing.requests.map((r) => [r.amountNano, r.model])).toEqual([[10n, 'acme/a']]);
      const upstream = fakeTextProtocol({ 'p3/a': fails(503), 'p2/a': answers('from p2') });
      await paid.call((_m, ep) => upstream.protocol.chat(ep, { messages: [] }, { signal: new AbortController().signal, requestId: 'r' }));
      expect(upstream.calls.map((c) => c.endpoint)).toEqual(['p3/a', 'p2/a']);
      await paid.settle(usage(5n));
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([{ outcome: 'settle', record: { provider: 'p2', attempts: 2, fallback_used: true } }]);
    });

    it('refuses before any hold when nothing is left', async () => {
      await world([{ id: 'acme/a', endpoints: ['p1/a'], prompt: '0.00001' }]);
      await expect(begin(['acme/a'], { only: ['p9'] })).rejects.toMatchObject({ code: 'invalid_request' });
      await expect(begin(['acme/a'], { max_price: { prompt: 0.000001 } })).rejects.toMatchObject({ code: 'invalid_request' });
      expect(fx.billing.requests).toEqual([]);
    });

    it('keeps the preferences with the hold record, so a resumed call routes as the client asked', async () => {
      await world([{ id: 'acme/a', endpoints: ['p1/a', 'p2/a'] }]);
      const paid = await begin(['acme/a'], { only: ['p2'] });
      const record = holdRecordFromJSON(JSON.parse(JSON.stringify(holdRecordToJSON(paid.record))));
      expect(record.provider).toEqual({ only: ['p2'] });
      const resumed = PaidCall.resume(fx.deps, { ctx: testContext(), category: 'text', slugs: ['acme/a'], streamed: false }, record);
      const upstream = fakeTextProtocol({ 'p1/a': answers('from p1'), 'p2/a': answers('from p2') });
      await resumed.call((_m, ep) => upstream.protocol.chat(ep, { messages: [] }, { signal: new AbortController().signal, requestId: 'r' }));
      expect(upstream.calls.map((c) => c.endpoint)).toEqual(['p2/a']);
      await resumed.release('test');
      await paid.release('test');
    });
  });

  describe('with max_cost', () => {
    const begin = (slugs: string[], maxCostNano: bigint, worst: Record<string, bigint>, least: Record<string, bigint>) =>
      PaidCall.begin(fx.deps, {
        ctx: testContext(),
        category: 'text',
        slugs,
        streamed: false,
        worstCase: (m) => worst[m.config.id],
        leastCost: (m) => least[m.config.id],
        maxCostNano,
      });

    it('holds the cap when it is below the worst case, and the worst case when it is above: a cap above changes nothing', async () => {
      await world([{ id: 'acme/a', endpoints: ['p1/a'] }]);
      const capped = await begin(['acme/a'], 500n, { 'acme/a': 900n }, { 'acme/a': 100n });
      const loose = await begin(['acme/a'], 5_000n, { 'acme/a': 900n }, { 'acme/a': 100n });
      expect(fx.billing.requests.map((r) => r.amountNano)).toEqual([500n, 900n]);
      // A charge past the cap (an upstream that ignored the limit it was sent) is clamped to it, the figure kept.
      await capped.settle(usage(700n));
      await loose.release('test');
      await fx.billing.delivered();
      expect(fx.billing.closes[0]).toMatchObject({ outcome: 'settle', charge_nano: '500', record: { capped_from_nano: '700' } });
    });

    it('skips a model whose least charge passes the cap and tries the next, holding for the models left', async () => {
      await world([
        { id: 'acme/dear', endpoints: ['p1/dear'] },
        { id: 'acme/cheap', endpoints: ['p1/cheap'] },
      ]);
      const paid = await begin(
        ['acme/dear', 'acme/cheap'],
        300n,
        { 'acme/dear': 2_000n, 'acme/cheap': 250n },
        { 'acme/dear': 301n, 'acme/cheap': 50n },
      );
      expect(paid.candidates.map((m) => m.config.id)).toEqual(['acme/cheap']);
      expect(fx.billing.requests.map((r) => [r.amountNano, r.model])).toEqual([[250n, 'acme/cheap']]);
      await paid.release('test');
    });

    it('refuses with 402 naming the cap and the least the call can cost, before any hold', async () => {
      await world([
        { id: 'acme/a', endpoints: ['p1/a'] },
        { id: 'acme/b', endpoints: ['p1/b'] },
      ]);
      const begun = begin(['acme/a', 'acme/b'], 1_000n, { 'acme/a': 9_000n, 'acme/b': 9_000n }, { 'acme/a': 3_500n, 'acme/b': 1_001n });
      await expect(begun).rejects.toMatchObject({
        code: 'insufficient_credits',
        status: 402,
        message: 'max_cost is 0.000001 USD, below the least this call can cost: 0.000001001 USD on acme/b; nothing was held or charged',
      });
      expect(fx.billing.requests).toEqual([]);
    });

    it('takes the worst case as the least cost of a fixed-price call', async () => {
      await world([{ id: 'acme/a', endpoints: ['p1/a'] }]);
      const begun = PaidCall.begin(fx.deps, {
        ctx: testContext(),
        category: 'text',
        slugs: ['acme/a'],
        streamed: false,
        worstCase: () => 40_000_000n,
        maxCostNano: 39_999_999n,
      });
      await expect(begun).rejects.toMatchObject({ code: 'insufficient_credits', message: expect.stringContaining('0.04 USD on acme/a') });
      expect(fx.billing.requests).toEqual([]);
    });
  });
});
