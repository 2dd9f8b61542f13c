import type { EventBus } from '@gateway/bus';
import { waitFor } from '@gateway/testing';
import { HoldCloser, MAX_UNACKED_CLOSES } from './hold-closer';
import { holdRecordFromJSON, holdRecordToJSON } from './hold-record';
import { OpenHolds } from './open-holds';
import { PaidCall } from './paid-call';
import { answers, fakeTextProtocol } from '@gateway/upstreams/testing';
import { recordingLogger, spendFixture, testContext, type SpendFixture } from './testing';

describe('HoldCloser', () => {
  let fx: SpendFixture;
  beforeEach(async () => (fx = await spendFixture([{ id: 'acme/a', endpoints: ['p1/a'] }])));
  afterEach(() => fx.close());

  /** A hold placed and answered by a PaidCall, as the first process would leave it. */
  async function placedAndAnswered() {
    const paid = await PaidCall.begin(fx.deps, { ctx: testContext(), category: 'text', slugs: ['acme/a'], streamed: true, worstCase: () => 5_000n });
    const upstream = fakeTextProtocol({ 'p1/a': answers('ok') });
    await paid.call((_m, ep) => upstream.protocol.chat(ep, {}, { signal: new AbortController().signal, requestId: paid.record.requestId }));
    return paid;
  }

  it('a hold placed by one process is settled by another that has only its JSON record', async () => {
    const paid = await placedAndAnswered();
    const stored = JSON.stringify(holdRecordToJSON(paid.record)); // e.g. a job row; the first process then dies

    // The second process shares nothing with the first but the bus.
    const other = new HoldCloser({ bus: fx.bus, logger: recordingLogger([]) }, holdRecordFromJSON(JSON.parse(stored)));
    expect(await other.settle({ chargeNano: 1_234n, tokensPrompt: 7, tokensCompletion: 9, finishReason: 'stop' }, { attempts: 1 })).toBe(
      '0.000001234',
    );
    await other.settle({ chargeNano: 9n, tokensPrompt: 0, tokensCompletion: 0, finishReason: null }); // a retry of the job: no second event

    await fx.billing.delivered();
    expect(fx.billing.closes).toEqual([
      {
        hold_id: paid.record.holdId,
        account_id: 'acct_test',
        key_id: 'key_test',
        request_id: paid.record.requestId,
        outcome: 'settle',
        charge_nano: '1234',
        record: expect.objectContaining({
          model: 'acme/a',
          streamed: true,
          status: 'succeeded',
          error_code: null,
          finish_reason: 'stop',
          tokens_prompt: 7,
          tokens_completion: 9,
          attempts: 1,
          fallback_used: false,
        }),
      },
    ]);
    expect(fx.billing.closes[0].record.capped_from_nano).toBeUndefined();
  });

  it('records the media items a settle was charged for, and none on a release', async () => {
    const paid = await placedAndAnswered();
    await paid.settle({ chargeNano: 2n, tokensPrompt: 0, tokensCompletion: 0, finishReason: null, mediaCompletion: 3 });
    const released = await placedAndAnswered();
    await released.release('upstream_unavailable');
    await fx.billing.delivered();
    expect(fx.billing.closes.map((c) => [c.outcome, c.record.num_media_completion])).toEqual([
      ['settle', 3],
      ['release', 0],
    ]);
  });

  it('the JSON form carries the amount as a decimal string and reads back to the same record', async () => {
    const paid = await placedAndAnswered();
    const json = JSON.parse(JSON.stringify(holdRecordToJSON(paid.record)));
    expect(json.amount_nano).toBe('5000');
    expect(holdRecordFromJSON(json)).toEqual(paid.record);
  });

  it('refuses a stored record that is not a hold record, naming the field', async () => {
    const json = holdRecordToJSON((await placedAndAnswered()).record);
    expect(() => holdRecordFromJSON({ ...json, amount_nano: '-5' })).toThrow(/amount_nano/);
    expect(() => holdRecordFromJSON({ ...json, started_at: 'yesterday' })).toThrow(/started_at/);
  });

  it('caps a charge from the record alone at the amount held', async () => {
    const paid = await placedAndAnswered();
    const closer = new HoldCloser({ bus: fx.bus, logger: recordingLogger([]) }, paid.record);
    expect(await closer.settle({ chargeNano: 8_000n, tokensPrompt: 1, tokensCompletion: 1, finishReason: 'stop' })).toBe('0.000005');
    await fx.billing.delivered();
    expect(fx.billing.closes).toMatchObject([{ charge_nano: '5000', record: { capped_from_nano: '8000' } }]);
  });
  it('settleAfterAnswer: the charge at once, the close published once on the next turn, held open for a drain until then', async () => {
    const paid = await placedAndAnswered();
    const published: string[] = [];
    const bus: EventBus = {
      ...fx.bus,
      publish: async (topic, event) => {
        published.push(event.id);
        await fx.bus.publish(topic, event);
      },
    };
    const openHolds = new OpenHolds();
    openHolds.add(paid.record.holdId);
    const closer = new HoldCloser({ bus, logger: recordingLogger([]), openHolds }, paid.record);
    expect(await closer.settleAfterAnswer({ chargeNano: 8_000n, tokensPrompt: 1, tokensCompletion: 1, finishReason: 'stop' })).toBe('0.000005');
    // Nothing on the bus in this turn, where the caller writes its answer; the hold is closed for this closer already.
    expect(published).toEqual([]);
    expect(closer.closed).toBe(true);
    expect(openHolds.size).toBe(1);
    await closer.release('upstream_unavailable'); // a late failure after the answer: no second close
    expect(await openHolds.settled(5_000)).toBe(0);
    await fx.billing.delivered();
    expect(published).toEqual([`${paid.record.holdId}:close`]);
    expect(fx.billing.closes).toMatchObject([
      { hold_id: paid.record.holdId, outcome: 'settle', charge_nano: '5000', record: { capped_from_nano: '8000' } },
    ]);
  });
  it('settleAfterAnswer: past MAX_UNACKED_CLOSES publishes unanswered (a hanging bus), the caller waits for its own', async () => {
    const paid = await placedAndAnswered();
    const hanging: (() => void)[] = [];
    const bus: EventBus = { ...fx.bus, publish: () => new Promise<void>((resolve) => hanging.push(resolve)) };
    const usage = { chargeNano: 1n, tokensPrompt: 1, tokensCompletion: 1, finishReason: 'stop' };
    const closer = () => new HoldCloser({ bus, logger: recordingLogger([]) }, paid.record);
    const first = await Promise.all(Array.from({ length: MAX_UNACKED_CLOSES }, () => closer().settleAfterAnswer(usage)));
    expect(first).toHaveLength(MAX_UNACKED_CLOSES);
    await new Promise((r) => setImmediate(r));
    expect(hanging).toHaveLength(MAX_UNACKED_CLOSES);
    let answered = false;
    const over = closer()
      .settleAfterAnswer(usage)
      .then((c) => {
        answered = true;
        return c;
      });
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    expect(hanging).toHaveLength(MAX_UNACKED_CLOSES + 1);
    for (const resolve of hanging.splice(0)) resolve();
    expect(await over).toBe('0.000000001');
    // The backlog is back to nothing: the next close goes after its answer again.
    await new Promise((r) => setImmediate(r));
    const after = closer().settleAfterAnswer(usage);
    expect(hanging).toHaveLength(0);
    await after;
    await new Promise((r) => setImmediate(r));
    expect(hanging).toHaveLength(1);
    hanging[0]();
  });
  it('republish: a close the bus refused is published again in the background once the bus takes it; without it, it is left to expire', async () => {
    const paid = await placedAndAnswered();
    let refusals = 2;
    const flaky: EventBus = {
      ...fx.bus,
      publish: async (topic, event) => {
        if (refusals-- > 0) throw new Error('broker unreachable');
        await fx.bus.publish(topic, event);
      },
    };
    const log: Parameters<typeof recordingLogger>[0] = [];
    const closer = new HoldCloser({ bus: flaky, logger: recordingLogger(log) }, paid.record, { republish: true });
    // The caller gets its charge at once, while the bus still refuses.
    expect(await closer.settle({ chargeNano: 1_000n, tokensPrompt: 1, tokensCompletion: 1, finishReason: 'stop' })).toBe('0.000001');
    await waitFor(async () => (await fx.billing.delivered(), fx.billing.closes.length === 1), 'the close to be published again');
    expect(fx.billing.closes).toMatchObject([{ hold_id: paid.record.holdId, outcome: 'settle', charge_nano: '1000' }]);
    expect(log.map((l) => l.msg)).toEqual([
      'could not publish hold close; publishing it again until the hold expires',
      'hold close published after the bus came back',
    ]);

    const other = await placedAndAnswered();
    refusals = 1;
    await new HoldCloser({ bus: flaky, logger: recordingLogger([]) }, other.record).release('upstream_unavailable');
    await fx.billing.delivered();
    expect(fx.billing.open()).toEqual([other.record.holdId]);
  });
});
