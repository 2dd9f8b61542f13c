import { OpenHolds } from './open-holds';
import { PaidCall, type SpendDeps } from './paid-call';
import { failingPublish, spendFixture, testContext, type SpendFixture } from './testing';

describe('OpenHolds', () => {
  it('settles at once when nothing is open, when the last hold closes, or at the deadline with what is left', async () => {
    const open = new OpenHolds();
    await expect(open.settled(10_000)).resolves.toBe(0);

    open.add('hold_a');
    open.add('hold_b');
    const waiting = open.settled(10_000);
    open.delete('hold_a');
    open.delete('hold_unknown');
    open.delete('hold_b');
    await expect(waiting).resolves.toBe(0);

    open.add('hold_c');
    await expect(open.settled(20)).resolves.toBe(1);
  });
});

describe('the holds a process has open', () => {
  let fx: SpendFixture;
  let deps: SpendDeps;
  let open: OpenHolds;
  beforeEach(async () => {
    fx = await spendFixture([{ id: 'acme/chat', endpoints: ['p1/chat'] }]);
    open = new OpenHolds();
    deps = { ...fx.deps, openHolds: open };
  });
  afterEach(() => fx.close());

  const begin = (d: SpendDeps = deps) =>
    PaidCall.begin(d, { ctx: testContext(), category: 'text', slugs: ['acme/chat'], streamed: true, worstCase: () => 1_000n });
  const usage = { chargeNano: 10n, tokensPrompt: 1, tokensCompletion: 1, finishReason: 'stop' };

  it('counts a hold from its placing until its close is published: settled, partly settled or released', async () => {
    const a = await begin();
    const b = await begin();
    const c = await begin();
    expect(open.size).toBe(3);
    await a.settle(usage);
    await b.settlePartial(usage, 'upstream_unavailable');
    expect(open.size).toBe(1);
    await c.release('client_closed');
    expect(open.size).toBe(0);
  });

  it('a hold handed to a job is no longer waited for, and neither is one whose close the bus refused', async () => {
    const job = await begin();
    job.handOff();
    expect(open.size).toBe(0);

    const refused = await begin({ ...deps, bus: failingPublish(fx.bus) });
    expect(open.size).toBe(1);
    await refused.settle(usage);
    // Its close is retried in the background until the hold expires; a drain cannot do better by waiting.
    expect(open.size).toBe(0);
  });
});
