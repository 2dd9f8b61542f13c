import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from './support/fake-anthropic';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { TEXT_PRICE } from './support/config';
import { textCost } from './support/money';
import { closedHold, expectChargedForDelivered, type Mode, type TestGateway, usageRecord, useGatewaySuite } from './support/harness';

/*
 * Issue 31, item 4: the charge is capped at the hold, so an upstream that writes past the hold hands the customer
 * tokens nobody pays for. The gateway sends the one cap its hold is sized from, in every limit field the client
 * used (max_tokens when none), on every text route, and a stream cut before its usage is charged for every kind
 * of delta delivered, reasoning included.
 */

const KEY_ENV = 'GW_E2E_ANTHROPIC_KEY';

function capConfig(anthropicUrl: string, openaiUrl: string) {
  const text = (id: string, [provider, model]: [string, string], maxOutput: number) => ({
    id,
    name: id,
    category: 'text',
    status: 'available',
    context_length: 8192,
    max_output_tokens: maxOutput,
    pricing: TEXT_PRICE,
    endpoints: [{ provider, model }],
  });
  return {
    providers: [
      { id: 'oai', kind: 'openai', base_url: openaiUrl, timeout_ms: 10_000 },
      { id: 'anth', kind: 'anthropic', base_url: anthropicUrl, api_key_env: KEY_ENV, timeout_ms: 10_000 },
    ],
    models: [
      // An upstream that would write 3,000 tokens, under a model cap above that: only the client's limit bounds it.
      text('cap/long', ['oai', 'words-3000'], 4000),
      // An upstream that would write 300 tokens, under a model cap of 100.
      text('cap/words', ['oai', 'words-300'], 100),
      text('cap/claude', ['anth', 'ok'], 100),
      text('cap/reason', ['oai', 'reason-20'], 1000),
    ],
  };
}

describe.each(['embedded', 'fleet'] as Mode[])('output caps and holds through the %s gateway', (mode) => {
  let anth: FakeUpstream;
  let oai: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string };

  const upstreams = async () => {
    process.env[KEY_ENV] = FAKE_ANTHROPIC_KEY;
    return Promise.all([startFakeAnthropic(), startFakeOpenAI()]);
  };
  useGatewaySuite(mode, { upstreams, config: ([a, o]) => capConfig(a.url, o.url), credits: 50 }, (s) => {
    ({
      upstreams: [anth, oai],
      gw,
      acct,
    } = s);
  });

  const post = (path: string, body: unknown, signal?: AbortSignal) =>
    fetch(`${gw.url}${path}`, {
      method: 'POST',
      signal,
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  /** The upstream request whose prompt carries `tag`: each test sends a prompt of its own. */
  const sentWith = (upstream: FakeUpstream, tag: string) =>
    upstream.received((r) => JSON.stringify(r.body.messages).includes(tag), `the call tagged ${tag}`);
  const words = (text: string) => text.split(' ').filter(Boolean).length;

  /** The settled charge of a request that answered: exactly the usage the upstream reported, and inside its hold. */
  async function expectCharged(requestId: string | null, prompt: number, completion: number) {
    const charge = textCost(TEXT_PRICE, prompt, completion).toString();
    expect(await usageRecord(gw, acct.accountId, requestId)).toMatchObject({
      status: 'succeeded',
      tokens_prompt: prompt,
      tokens_completion: completion,
      cost: charge,
    });
    const hold = await closedHold(gw, acct.accountId, requestId);
    expect(hold).toMatchObject({ state: 'settled', charge });
    expect(BigInt(hold.charge)).toBeLessThan(BigInt(hold.amount));
  }

  it.each([false, true])(
    'max_tokens 10 with max_completion_tokens 3000 sends 10 in both fields, so 10 tokens are delivered and all are charged (stream: %s)',
    async (stream) => {
      const tag = `both-limits-${stream}`;
      const r = await post('/v1/chat/completions', {
        model: 'cap/long',
        messages: [{ role: 'user', content: tag }],
        max_tokens: 10,
        max_completion_tokens: 3000,
        stream,
      });
      expect(r.status).toBe(200);
      const requestId = r.headers.get('x-gateway-request-id');
      const text = await r.text();
      const sent = await sentWith(oai, tag);
      expect(sent.body).toMatchObject({ max_tokens: 10, max_completion_tokens: 10 });
      // The fake reads max_completion_tokens first, as OpenAI does: before the fix it wrote 3,000 words for a hold of 10.
      const answer = stream
        ? text
            .split('\n\n')
            .filter((f) => f.startsWith('data: {'))
            .map((f) => JSON.parse(f.slice(6)).choices[0]?.delta?.content ?? '')
            .join('')
        : JSON.parse(text).choices[0].message.content;
      expect(words(answer)).toBe(10);
      await expectCharged(requestId, 5, 10);
    },
  );

  it("sends the model's max_output_tokens upstream when the client sets no limit, or one above the model's", async () => {
    const none = await post('/v1/chat/completions', { model: 'cap/words', messages: [{ role: 'user', content: 'no-limit' }] });
    expect(none.status).toBe(200);
    const sentNone = (await sentWith(oai, 'no-limit')).body;
    expect(sentNone.max_completion_tokens).toBe(100);
    expect(sentNone.max_tokens).toBeUndefined();
    expect(words((await none.json()).choices[0].message.content)).toBe(100);
    await expectCharged(none.headers.get('x-gateway-request-id'), 5, 100);

    const above = await post('/v1/chat/completions', {
      model: 'cap/words',
      messages: [{ role: 'user', content: 'above-limit' }],
      max_completion_tokens: 5000,
    });
    expect(above.status).toBe(200);
    const sent = (await sentWith(oai, 'above-limit')).body;
    expect(sent.max_completion_tokens).toBe(100);
    expect(sent.max_tokens).toBeUndefined();
    await expectCharged(above.headers.get('x-gateway-request-id'), 5, 100);
  });

  it.each([
    ['/v1/completions', (tag: string) => ({ model: 'cap/words', prompt: tag, max_tokens: 5000 })],
    ['/v1/responses', (tag: string) => ({ model: 'cap/words', input: tag, max_output_tokens: 5000 })],
    ['/v1/messages', (tag: string) => ({ model: 'cap/words', messages: [{ role: 'user', content: tag }], max_tokens: 5000 })],
  ])('%s sends min(client limit, model cap) to a chat upstream as max_tokens', async (path, body) => {
    const tag = `route${path.replaceAll('/', '-')}`;
    const r = await post(path, body(tag));
    expect(r.status).toBe(200);
    const sent = (await sentWith(oai, tag)).body;
    expect(sent.max_tokens).toBe(100);
    expect(sent.max_completion_tokens).toBeUndefined();
    await expectCharged(r.headers.get('x-gateway-request-id'), 5, 100);
  });

  it('the message API route sends min(client max_tokens, model cap) to a message-API upstream, never the client value as is', async () => {
    const above = await post('/v1/messages', { model: 'cap/claude', messages: [{ role: 'user', content: 'claude-above' }], max_tokens: 5000 });
    expect(above.status).toBe(200);
    expect((await sentWith(anth, 'claude-above')).body.max_tokens).toBe(100);
    const below = await post('/v1/messages', { model: 'cap/claude', messages: [{ role: 'user', content: 'claude-below' }], max_tokens: 7 });
    expect(below.status).toBe(200);
    expect((await sentWith(anth, 'claude-below')).body.max_tokens).toBe(7);
  });

  it('charges a client that leaves after the last content chunk, before the usage, for the reasoning it was sent too', async () => {
    const controller = new AbortController();
    const prompt = 'think first';
    const r = await post(
      '/v1/chat/completions',
      { model: 'cap/reason', messages: [{ role: 'user', content: prompt }], stream: true },
      controller.signal,
    );
    expect(r.status).toBe(200);
    const requestId = r.headers.get('x-gateway-request-id');
    // Read up to the answer's one content chunk; the upstream then waits, sending neither finish nor usage.
    const reader = r.body!.getReader();
    const decoder = new TextDecoder();
    let received = '';
    while (!received.includes('"content":" done"')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before its answer: ${received}`);
      received += decoder.decode(value, { stream: true });
    }
    controller.abort();
    await reader.cancel().catch(() => undefined);
    const deltas = received
      .split('\n\n')
      .filter((f) => f.startsWith('data: {'))
      .map((f) => JSON.parse(f.slice(6)).choices[0]?.delta ?? {});
    const reasoning = deltas.map((d) => d.reasoning_content ?? '').join('');
    expect(reasoning).toMatch(/^thought1 .* thought20$/);
    // Before the fix only " done" was counted: 0.000011-style charges for an answer that cost a hundred times more.
    const delivered = deltas.map((d) => (d.reasoning_content ?? '') + (d.content ?? '')).join('');
    await expectChargedForDelivered(gw, acct.accountId, requestId, { prompt, delivered, price: TEXT_PRICE });
  });
});
