import type { GatewayError } from '@gateway/errors';
import { formatUsd } from '@gateway/money';
import { failingPublish, spendFixture, testContext, type SpendFixture, type TestModel } from '@gateway/spend/testing';
import { answers, fails, fakeTextProtocol, stopTokenWorker, tokenWorkerRunning, type Behaviour } from '@gateway/upstreams/testing';
import { promptText, textCharge, textWorstCase } from '@gateway/pricing';
import { UpstreamError, claimTokenWorker, countTokens } from '@gateway/upstreams';
import { completeChat, completeChats, runChatStream, type ChatCall, type ChatUsageFigures, type StreamSink, type TextDeps } from './run-chat';
import type { StreamClient } from './stream-client';

const body = (text: string, maxTokens?: number): ChatCall['body'] => ({
  messages: [{ role: 'user', content: text }],
  ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
});
const chat = (slugs: string[], text = 'Hi', maxTokens?: number): ChatCall => ({ slugs, body: body(text, maxTokens), stream: false });

describe('chat flow', () => {
  let fx: SpendFixture;
  afterEach(() => fx?.close());
  // As a server holds it: the counting thread ends with the suite, not left to the jest worker's exit.
  afterAll(claimTokenWorker());

  /** The flow's deps over the fixture, with every provider kind served by one fake upstream. */
  async function world(models: TestModel[], behaviours: Record<string, Behaviour>) {
    fx = await spendFixture(models);
    const upstream = fakeTextProtocol(behaviours);
    const deps: TextDeps = { ...fx.deps, protocolOf: () => upstream.protocol };
    return { deps, upstream, model: (id: string) => fx.deps.registry.get(id)! };
  }

  describe('not streamed', () => {
    it("settles at the upstream's reported usage, priced by the model that answered", async () => {
      const { deps, model } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': answers('Hello', { prompt_tokens: 10, completion_tokens: 5 }),
      });
      const outcome = await completeChat(testContext(), deps, chat(['acme/chat']));
      const charge = textCharge(model('acme/chat'), 10, 5);
      expect(outcome.usage).toEqual({
        prompt_tokens: 10,
        completion_tokens: 5,
        total_tokens: 15,
        prompt_tokens_details: { cached_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0 },
        cost: formatUsd(charge),
      });
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([
        { outcome: 'settle', charge_nano: charge.toString(), record: { model: 'acme/chat', tokens_prompt: 10, tokens_completion: 5 } },
      ]);
    });

    it('sizes the hold as the maximum worst case across the requested model and its fallbacks', async () => {
      const { deps, model } = await world(
        [
          { id: 'acme/cheap', endpoints: ['p1/cheap'], completion: '0.000001' },
          { id: 'acme/dear', endpoints: ['p1/dear'], completion: '0.00001' },
        ],
        { 'p1/cheap': answers('ok') },
      );
      await completeChat(testContext(), deps, chat(['acme/cheap', 'acme/dear'], 'Hi', 50));
      const dear = textWorstCase(model('acme/dear'), 'Hi', 1, 50);
      expect(dear).toBeGreaterThan(textWorstCase(model('acme/cheap'), 'Hi', 1, 50));
      expect(fx.billing.requests.map((r) => r.amountNano)).toEqual([dear]);
    });

    it("sends each model the cap its hold was sized from: the client's tightest limit, never above the model's", async () => {
      const { deps, upstream, model } = await world(
        [
          { id: 'acme/small', endpoints: ['p1/small'], maxOutputTokens: 10 },
          { id: 'acme/big', endpoints: ['p1/big'], maxOutputTokens: 200 },
        ],
        { 'p1/small': fails(503), 'p1/big': answers('ok') },
      );
      const call = chat(['acme/small', 'acme/big']);
      call.body.max_completion_tokens = 3000;
      call.body.max_tokens = 150;
      await completeChat(testContext(), deps, call);
      expect(upstream.calls.map((c) => [c.endpoint, c.body.max_tokens, c.body.max_completion_tokens])).toEqual([
        ['p1/small', 10, 10],
        ['p1/big', 150, 150],
      ]);
      expect(fx.billing.requests.map((r) => r.amountNano)).toEqual([textWorstCase(model('acme/big'), 'Hi', 1, 150)]);
    });

    it("holds a prompt batch at the sum of its prompts' worst cases and settles it once", async () => {
      const { deps, model } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': answers('ok', { prompt_tokens: 2, completion_tokens: 1 }),
      });
      const { outcomes, total } = await completeChats(testContext(), deps, ['acme/chat'], [body('first', 20), body('second prompt', 20)]);
      const m = model('acme/chat');
      expect(fx.billing.requests.map((r) => r.amountNano)).toEqual([textWorstCase(m, 'first', 1, 20) + textWorstCase(m, 'second prompt', 1, 20)]);
      expect(outcomes).toHaveLength(2);
      expect(total.cost).toBe(formatUsd(2n * textCharge(m, 2, 1)));
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([{ outcome: 'settle', charge_nano: (2n * textCharge(m, 2, 1)).toString() }]);
    });

    it('records no fallback for a prompt batch whose prompts each answered at their first endpoint', async () => {
      const { deps } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': answers('ok', { prompt_tokens: 2, completion_tokens: 1 }),
      });
      await completeChats(testContext(), deps, ['acme/chat'], [body('a'), body('b'), body('c')]);
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([{ record: { attempts: 3, fallback_used: false } }]);
    });

    it('releases the whole hold of a prompt batch when a later prompt fails after earlier ones answered', async () => {
      let answered = 0;
      const firstOnly: Behaviour = (call) => (answered++ === 0 ? answers('ok', { prompt_tokens: 2, completion_tokens: 1 })(call) : fails(503)(call));
      const { deps, upstream } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], { 'p1/chat': firstOnly });
      await expect(completeChats(testContext(), deps, ['acme/chat'], [body('first'), body('second')])).rejects.toMatchObject({
        code: 'upstream_unavailable',
      });
      expect(upstream.calls).toHaveLength(2);
      // The client got an error and no answer, so nothing is charged for the prompt that did answer.
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([
        { outcome: 'release', charge_nano: '0', record: { status: 'failed', error_code: 'upstream_unavailable' } },
      ]);
    });

    it('a hold-close publish that fails leaves the hold open and is logged, and the caller still gets its answer', async () => {
      const { deps } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': answers('Hello', { prompt_tokens: 1, completion_tokens: 1 }),
      });
      const outcome = await completeChat(testContext(), { ...deps, bus: failingPublish(fx.bus) }, chat(['acme/chat']));
      expect(outcome.completion.choices[0].message.content).toBe('Hello');
      await fx.billing.delivered();
      expect(fx.billing.closes).toEqual([]);
      expect(fx.billing.open()).toHaveLength(1);
      expect(fx.log).toContainEqual(expect.objectContaining({ level: 'error', msg: expect.stringMatching(/could not publish hold close/) }));
    });
  });

  describe('streamed', () => {
    /** A client that records what the sink was told, and can hang up. */
    function client() {
      const connection = new AbortController();
      const seen = {
        opened: false,
        ended: false,
        chunks: [] as string[],
        finished: undefined as ChatUsageFigures | undefined,
        failed: undefined as GatewayError | undefined,
      };
      const c: StreamClient = {
        signal: connection.signal,
        open: () => void (seen.opened = true),
        writable: () => !seen.ended && !connection.signal.aborted,
        end: () => void (seen.ended = true),
      };
      const sink: StreamSink = {
        start() {},
        chunk: (ch) => void seen.chunks.push(String(ch.choices[0]?.delta?.content ?? '')),
        finish: (usage) => void (seen.finished = usage),
        fail: (error) => void (seen.failed = error),
      };
      return { client: c, sink, seen, leave: () => connection.abort() };
    }

    const stream = (text = 'Hi', maxTokens?: number): ChatCall => ({ ...chat(['acme/chat'], text, maxTokens), stream: true });
    const broken = () => new UpstreamError('broken_stream', 'upstream connection broke');

    it('settles a finished stream at the reported usage and tells the sink the cost', async () => {
      const { deps, model } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': () => ({ pieces: ['Hel', 'lo'], usage: { prompt_tokens: 4, completion_tokens: 2 } }),
      });
      const c = client();
      await runChatStream(testContext(), c.client, deps, stream(), c.sink);
      const charge = textCharge(model('acme/chat'), 4, 2);
      expect(c.seen).toMatchObject({
        opened: true,
        ended: true,
        chunks: ['', 'Hel', 'lo', ''],
        finished: { prompt_tokens: 4, completion_tokens: 2, cost: formatUsd(charge) },
      });
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([
        { outcome: 'settle', charge_nano: charge.toString(), record: { streamed: true, status: 'succeeded' } },
      ]);
    });

    it('a client that leaves after the first byte is charged for the delivered tokens only', async () => {
      const { deps, model } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': () => ({ pieces: ['Hello', ' there', ' friend'] }),
      });
      const c = client();
      const leaveAfterHello: StreamSink = { ...c.sink, chunk: (ch) => (c.sink.chunk(ch), ch.choices[0]?.delta?.content === 'Hello' && c.leave()) };
      await runChatStream(testContext(), c.client, deps, stream('Hi'), leaveAfterHello);
      expect(c.seen.chunks).toEqual(['', 'Hello']);
      const prompt = await countTokens(promptText(body('Hi')));
      const hello = await countTokens('Hello');
      const charge = textCharge(model('acme/chat'), prompt, hello);
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([
        {
          outcome: 'settle',
          charge_nano: charge.toString(),
          record: { status: 'failed', tokens_prompt: prompt, tokens_completion: hello },
        },
      ]);
      expect(c.seen.failed).toBeUndefined(); // nobody is left to read an error frame
    });

    it('tells billing what a long stream has delivered as it goes, each checkpoint before the close and none after', async () => {
      const words = Array.from({ length: 12 }, (_, i) => ` word${i}`);
      const { deps, model } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': () => ({ pieces: words, gapMs: 15, usage: { prompt_tokens: 4, completion_tokens: 12 } }),
      });
      const c = client();
      await runChatStream(testContext(), c.client, { ...deps, checkpointEveryMs: 40 }, stream(), c.sink);
      await fx.billing.delivered();
      const { checkpoints, closes, arrivals } = fx.billing;
      // 12 words 15 ms apart and a checkpoint every 40 ms at the most: a few, never one per chunk.
      expect(checkpoints.length).toBeGreaterThanOrEqual(1);
      expect(checkpoints.length).toBeLessThan(words.length);
      expect(arrivals.at(-1)).toBe('hold.close.v1');
      expect(arrivals.filter((a) => a === 'hold.close.v1')).toHaveLength(1);
      const prompt = await countTokens(promptText(body('Hi')));
      let before = -1n;
      for (const cp of checkpoints) {
        const delivered = cp.record.tokens_completion;
        // Charged as a stream broken at that point would be, and recorded as what it will be if ever applied.
        expect(cp).toMatchObject({ outcome: 'settle', charge_nano: textCharge(model('acme/chat'), prompt, delivered).toString() });
        expect(cp.record).toMatchObject({ status: 'failed', error_code: 'hold_expired', tokens_prompt: prompt, streamed: true });
        expect(BigInt(cp.charge_nano)).toBeGreaterThan(before);
        before = BigInt(cp.charge_nano);
      }
      expect(closes).toMatchObject([{ outcome: 'settle', record: { status: 'succeeded' } }]);
    });

    it('a short stream publishes no checkpoint', async () => {
      const { deps } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], { 'p1/chat': () => ({ pieces: ['Hel', 'lo'] }) });
      const c = client();
      await runChatStream(testContext(), c.client, deps, stream(), c.sink);
      await fx.billing.delivered();
      expect(fx.billing.arrivals).toEqual(['hold.close.v1']);
    });

    it("a stream that ends before its first checkpoint with the upstream's usage never loads the token counter", async () => {
      await stopTokenWorker();
      const { deps } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': () => ({ pieces: ['Hel', 'lo'], gapMs: 20, usage: { prompt_tokens: 4, completion_tokens: 2 } }),
      });
      const c = client();
      await runChatStream(testContext(), c.client, deps, stream(), c.sink);
      await new Promise((r) => setTimeout(r, 50));
      expect(tokenWorkerRunning()).toBe(false);
    });

    it('a stream that runs towards its first checkpoint starts loading the token counter before it is due', async () => {
      await stopTokenWorker();
      const words = Array.from({ length: 8 }, (_, i) => ` word${i}`);
      const { deps } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': () => ({ pieces: words, gapMs: 25, usage: { prompt_tokens: 4, completion_tokens: 8 } }),
      });
      const c = client();
      // First checkpoint due after 2.6 s: the load starts 2.5 s before it, at 0.1 s, while the stream still runs.
      const running = runChatStream(testContext(), c.client, { ...deps, checkpointEveryMs: 2_600 }, stream(), c.sink);
      await new Promise((r) => setTimeout(r, 150));
      expect(tokenWorkerRunning()).toBe(true);
      await running;
    });

    it('releases a stream that breaks before delivering any token, and tells the client', async () => {
      const { deps } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], { 'p1/chat': () => ({ pieces: [], breakWith: broken() }) });
      const c = client();
      await runChatStream(testContext(), c.client, deps, stream(), c.sink);
      expect(c.seen).toMatchObject({ opened: true, ended: true, failed: { code: 'upstream_unavailable' } });
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([{ outcome: 'release', charge_nano: '0', record: { error_code: 'upstream_unavailable' } }]);
    });

    it('caps a partial charge at the hold', async () => {
      const words = Array.from({ length: 30 }, () => ' word');
      const { deps, model } = await world([{ id: 'acme/chat', endpoints: ['p1/chat'] }], {
        'p1/chat': () => ({ pieces: words, breakWith: broken() }),
      });
      const c = client();
      // max_tokens 1 keeps the hold far below what 30 delivered words cost.
      await runChatStream(testContext(), c.client, deps, stream('Hi', 1), c.sink);
      const held = textWorstCase(model('acme/chat'), 'Hi', 1, 1);
      const delivered = textCharge(model('acme/chat'), await countTokens(promptText(body('Hi'))), await countTokens(words.join('')));
      expect(delivered).toBeGreaterThan(held);
      expect(fx.billing.requests.map((r) => r.amountNano)).toEqual([held]);
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([
        { outcome: 'settle', charge_nano: held.toString(), record: { status: 'failed', capped_from_nano: delivered.toString() } },
      ]);
      expect(c.seen.failed).toMatchObject({ code: 'upstream_unavailable' });
    });

    it('a client that leaves before the first byte is refused and its hold released', async () => {
      const c = client();
      const { deps } = await world([{ id: 'acme/chat', endpoints: ['p1/chat', 'p2/chat'] }], {
        'p1/chat': ({ signal }) => {
          c.leave();
          throw signal?.reason ?? new Error('the call carried no signal');
        },
        'p2/chat': answers('never asked'),
      });
      await expect(runChatStream(testContext(), c.client, deps, stream(), c.sink)).rejects.toMatchObject({ code: 'upstream_unavailable' });
      expect(c.seen.opened).toBe(false);
      expect(fx.circuits.snapshot()).toEqual([]);
      await fx.billing.delivered();
      expect(fx.billing.closes).toMatchObject([{ outcome: 'release', record: { error_code: 'client_closed' } }]);
    });
  });
});
