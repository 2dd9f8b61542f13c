import { Router } from 'express';
import { INTERNAL, createLogger, createMetrics, createServiceApp, finishApp, jsonBody, serve } from '@gateway/service-kit';
import { OpenHolds, closeHoldsBeforeBus } from '@gateway/spend';
import { spendFixture, type FakeBilling, type SpendFixture } from '@gateway/spend/testing';
import { fakeTextProtocol } from '@gateway/upstreams/testing';
import { promptText } from '@gateway/pricing';
import { claimTokenWorker, countTokens } from '@gateway/upstreams';
import { mountChatCompletions } from '../chat-completions/handler';

/**
 * A stopping process cuts the streams still open at its drain deadline. Each cut stream is charged what it
 * delivered, and that close must reach billing before the process closes its bus: the drain keeps the end of its
 * grace period for those closes (drainReserveMs) and waits for the process's open holds (OpenHolds) first.
 */
describe('a stream still open when the drain runs out', () => {
  let fx: SpendFixture;
  afterEach(() => fx?.close());
  // As a server holds it: the counting thread ends with the suite, not left to the jest worker's exit.
  afterAll(claimTokenWorker());

  it('is charged what it delivered, and the close is on the bus before the bus closes', async () => {
    fx = await spendFixture([{ id: 'acme/chat', endpoints: ['p1/chat'] }]);
    // Counting the cut stream's tokens must fit in the drain's reserve: the counter warm, as servers have it from boot.
    await countTokens('warm');
    const openHolds = new OpenHolds();
    const logger = createLogger('test', 'silent');
    const router = Router();
    router.use(jsonBody('1mb'));
    // Says "Hello", then stays open; once cut, it takes 100 ms to notice.
    const upstream = fakeTextProtocol({ 'p1/chat': () => ({ pieces: ['Hello'], openUntilAbortedMs: 100 }) });
    mountChatCompletions(router, { ...fx.deps, openHolds, protocolOf: () => upstream.protocol });
    const app = createServiceApp();
    app.use(router);
    finishApp(app, logger);

    let closesWhenTheBusClosed: FakeBilling['closes'] | undefined;
    const served = await serve(app, {
      service: 'text',
      port: 0,
      host: '127.0.0.1',
      metricsPort: 0,
      logger,
      metrics: createMetrics(),
      ready: async () => {},
      drainReserveMs: 1_000,
      // As every spending process stops: its open holds first, then the bus.
      onDrained: async () => {
        await closeHoldsBeforeBus(openHolds, logger, 1_000);
        await fx.billing.delivered();
        closesWhenTheBusClosed = [...fx.billing.closes];
        await fx.bus.close();
      },
    });

    const messages = [{ role: 'user', content: 'Hi' }];
    const res = await fetch(`http://127.0.0.1:${served.port}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [INTERNAL.accountId]: 'acct_test',
        [INTERNAL.keyId]: 'key_test',
        [INTERNAL.requestId]: 'req_drain',
      },
      body: JSON.stringify({ model: 'acme/chat', messages, stream: true }),
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('Hello')) seen += new TextDecoder().decode((await reader.read()).value);
    expect(openHolds.size).toBe(1);

    // 3.2 s of grace, the last second kept for the holds and the 2 s before it for closing the bus: cut after 0.2 s.
    await served.shutdown(3_200);
    await expect(reader.read()).rejects.toThrow();

    expect(closesWhenTheBusClosed).toMatchObject([
      {
        request_id: 'req_drain',
        outcome: 'settle',
        record: { status: 'failed', tokens_prompt: await countTokens(promptText({ messages })), tokens_completion: await countTokens('Hello') },
      },
    ]);
    expect(openHolds.size).toBe(0);
  });
});
