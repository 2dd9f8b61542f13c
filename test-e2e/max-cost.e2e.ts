import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { TEXT_PRICE } from './support/config';
import { nano, textCost } from './support/money';
import { EVENTS_FLEET, type Mode, type TestGateway, closedHold, generationOf, holdCount, usageRecord, useGatewaySuite } from './support/harness';

/*
 * Issue 38: `max_cost` (USD), a hard cap on what one call may cost. Every expected figure below is worked by hand
 * from the prices in the config, never with the gateway's money code.
 *
 * The gateway reckons a capped chat's prompt as its tokens (o200k: "ping" is 1) plus 8 framing tokens per message,
 * at the prompt rate: 9 × 0.001 = 0.009. Under a cap of 0.03 that leaves 0.021 for output, which at 0.002 a token
 * is 10 tokens (10.5, floored). The least such a call can cost is the prompt and one output token: 0.011.
 */
const PROMPT = 'ping';
const CAP = '0.03';
const AFFORDED = 10;
const LEAST = '0.011';
/** The dearer model's prices: its least is 9 × 0.01 + 0.02 = 0.11, above the cap, so it is never tried. */
const DEAR_PRICE = { prompt: '0.01', completion: '0.02' };
/** The flaky model's: 0.03 - 0.009 = 0.021 at 0.001 a token affords it 21 tokens (its own price, its own limit). */
const FLAKY_PRICE = { prompt: '0.001', completion: '0.001' };
const FLAKY_AFFORDED = 21;
const IMAGE_PRICE = '0.04';
const VIDEO_RATE = '0.01';

function capConfig(openaiUrl: string) {
  const text = (id: string, model: string, pricing = TEXT_PRICE) => ({
    id,
    name: id,
    category: 'text',
    status: 'available',
    context_length: 4096,
    max_output_tokens: 100,
    pricing,
    endpoints: [{ provider: 'oai', model }],
  });
  return {
    providers: [
      { id: 'oai', kind: 'openai', base_url: openaiUrl, timeout_ms: 10_000 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      // Writes 100 words of "hello" (one token each) unless told fewer, as a well-behaved upstream does.
      text('mc/chat', 'hello-100'),
      // Writes 100 whatever it is told.
      text('mc/deaf', 'deaf-100'),
      text('mc/dear', 'hello-99', DEAR_PRICE),
      text('mc/flaky', 'status-503', FLAKY_PRICE),
      {
        id: 'mc/image',
        name: 'image',
        category: 'image',
        status: 'available',
        pricing: { image: IMAGE_PRICE },
        endpoints: [{ provider: 'oai', model: 'images-b64' }],
      },
      {
        id: 'mc/video',
        name: 'video',
        category: 'video',
        status: 'available',
        pricing: { second: VIDEO_RATE },
        endpoints: [{ provider: 'sim', model: 'sim-video' }],
      },
    ],
  };
}

describe.each(['embedded', EVENTS_FLEET] as Mode[])('max_cost through the %s gateway', (mode) => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let openai: OpenAI;
  let anthropic: Anthropic;

  useGatewaySuite(mode, { upstreams: () => startFakeOpenAI(), config: (f) => capConfig(f.url), credits: 20 }, (s) => {
    ({ upstreams: fake, gw, acct } = s);
    openai = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    anthropic = new Anthropic({ apiKey: acct.key, baseURL: gw.url, maxRetries: 0 });
  });

  /** `max_cost` is no field of the clients' types: it travels as an extra body field, which both send unmodified. */
  const chat = (model: string, extra: Record<string, unknown>) =>
    openai.chat.completions
      .create({ model, messages: [{ role: 'user', content: PROMPT }], ...extra } as OpenAI.ChatCompletionCreateParamsNonStreaming)
      .withResponse();
  const ledgerFigures = async () => {
    const [a] = await gw.ledger(`SELECT held::text AS held, total_usage::text AS usage FROM accounts WHERE id = $1`, [acct.accountId]);
    return { ...a, holds: await holdCount(gw, acct.accountId), upstreamCalls: fake.requests.length };
  };
  const expectSettled = async (requestId: string | null, hold: string, charge: bigint) => {
    expect(await closedHold(gw, acct.accountId, requestId)).toEqual({ state: 'settled', amount: nano(hold).toString(), charge: charge.toString() });
  };

  it('non-streamed: the output limit sent upstream is what the cap affords, and the charge stays under it', async () => {
    const { data, response } = await chat('mc/chat', { max_cost: Number(CAP) });
    expect(fake.requests.at(-1)!.body).toMatchObject({ max_completion_tokens: AFFORDED });
    expect(fake.requests.at(-1)!.body.max_cost).toBeUndefined();
    expect(data.choices[0].finish_reason).toBe('length');
    expect(data.choices[0].message.content).toBe(Array(AFFORDED).fill('hello').join(' '));
    // The upstream's usage: 5 prompt, 10 completion: 0.005 + 0.020 = 0.025, held at the cap (0.03).
    const charge = textCost(TEXT_PRICE, 5, AFFORDED);
    expect(charge).toBe(nano('0.025'));
    expect((data.usage as unknown as { cost: string }).cost).toBe('0.025');
    await expectSettled(response.headers.get('x-gateway-request-id'), CAP, charge);
  });

  it('streamed, from an upstream that ignores the limit: the gateway ends the stream at the cap with finish_reason length', async () => {
    const { data: stream, response } = await openai.chat.completions
      .create({
        model: 'mc/deaf',
        messages: [{ role: 'user', content: PROMPT }],
        stream: true,
        max_cost: CAP,
      } as OpenAI.ChatCompletionCreateParamsStreaming)
      .withResponse();
    let text = '';
    const finishes: Array<string | null> = [];
    let cost: string | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason);
      if (chunk.usage) cost = (chunk.usage as unknown as { cost: string }).cost;
    }
    expect(fake.requests.at(-1)!.body).toMatchObject({ max_completion_tokens: AFFORDED });
    expect(text).toBe(Array(AFFORDED).fill('hello').join(' '));
    expect(finishes).toEqual(['length']);
    // Cut by the gateway, the usage never came: what it delivered is counted, "ping" 1 token and 10 "hello"s.
    // 0.001 + 0.020 = 0.021.
    const charge = textCost(TEXT_PRICE, 1, AFFORDED);
    expect(cost).toBe('0.021');
    const requestId = response.headers.get('x-gateway-request-id');
    await expectSettled(requestId, CAP, charge);
    expect(await usageRecord(gw, acct.accountId, requestId)).toMatchObject({ status: 'succeeded', tokens_completion: AFFORDED });
  });

  it('the message API streamed through the Anthropic client stops at the cap with stop_reason max_tokens', async () => {
    const stream = anthropic.messages.stream({
      model: 'mc/deaf',
      max_tokens: 1000,
      messages: [{ role: 'user', content: PROMPT }],
      max_cost: CAP,
    } as Anthropic.MessageStreamParams);
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.content.map((b) => (b.type === 'text' ? b.text : b.type))).toEqual([Array(AFFORDED).fill('hello').join(' ')]);
    expect(fake.requests.at(-1)!.body).toMatchObject({ max_tokens: AFFORDED });
    await expectSettled(message.id.replace(/^msg_/, ''), CAP, textCost(TEXT_PRICE, 1, AFFORDED));
  });

  it.each([
    ['/v1/completions', { prompt: PROMPT }, (events: any[]) => events.find((e) => e.choices?.[0]?.finish_reason)?.choices[0].finish_reason],
    ['/v1/responses', { input: PROMPT }, (events: any[]) => events.find((e) => e.type === 'response.incomplete')?.response.incomplete_details.reason],
  ])('%s streamed ends at the cap as its API ends at a limit', async (route, body, ending) => {
    const r = await fetch(`${gw.url}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'mc/deaf', stream: true, max_cost: CAP, ...body }),
    });
    expect(r.status).toBe(200);
    const events = (await r.text())
      .split('\n\n')
      .map((f) => f.split('\n').find((l) => l.startsWith('data: {')))
      .filter((l): l is string => l !== undefined)
      .map((l) => JSON.parse(l.slice(6)));
    expect(ending(events)).toBe(route === '/v1/responses' ? 'max_output_tokens' : 'length');
    // The prompt is one user message either way: the same 10 tokens afforded, the same 0.021 charged.
    await expectSettled(r.headers.get('x-gateway-request-id'), CAP, textCost(TEXT_PRICE, 1, AFFORDED));
  });

  it('non-streamed, from an upstream that ignores the limit: the charge is clamped to the cap, the gateway absorbs the rest', async () => {
    const { data, response } = await chat('mc/deaf', { max_cost: CAP });
    // 5 × 0.001 + 100 × 0.002 = 0.205 reported; 0.03 charged.
    expect(data.usage!.completion_tokens).toBe(100);
    expect((data.usage as unknown as { cost: string }).cost).toBe(CAP);
    await expectSettled(response.headers.get('x-gateway-request-id'), CAP, nano(CAP));
  });

  it('failover: a model whose least passes the cap is skipped, and each model tried gets the limit its own price affords', async () => {
    const before = fake.requests.length;
    const { data, response } = await chat('mc/dear', { models: ['mc/flaky', 'mc/chat'], max_cost: CAP });
    const sent = fake.requests.slice(before).map((r) => [r.body.model, r.body.max_completion_tokens]);
    expect(sent).toEqual([
      ['status-503', FLAKY_AFFORDED],
      ['hello-100', AFFORDED],
    ]);
    expect(data.model).toBe('mc/chat');
    const requestId = response.headers.get('x-gateway-request-id');
    await expectSettled(requestId, CAP, textCost(TEXT_PRICE, 5, AFFORDED));
    expect(await generationOf(gw, acct.key, requestId)).toMatchObject({ model: 'mc/chat', provider: 'oai', attempts: 2 });
  });

  it('a prompt whose least cost passes the cap is refused with 402 naming both figures: nothing held, charged or sent', async () => {
    const before = await ledgerFigures();
    const err = await chat('mc/chat', { max_cost: '0.01' }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err.status).toBe(402);
    expect(err.error).toMatchObject({
      code: 'insufficient_credits',
      message: `max_cost is 0.01 USD, below the least this call can cost: ${LEAST} USD on mc/chat; nothing was held or charged`,
    });
    const anthropicErr = await anthropic.messages
      .create({
        model: 'mc/chat',
        max_tokens: 50,
        messages: [{ role: 'user', content: PROMPT }],
        max_cost: 0.0109,
      } as Anthropic.MessageCreateParamsNonStreaming)
      .catch((e) => e);
    expect(anthropicErr.status).toBe(402);
    expect(await ledgerFigures()).toEqual(before);
  });

  it('an image or a queue submit whose fixed price passes the cap is refused with 402 before any hold', async () => {
    const before = await ledgerFigures();
    const image = await openai.images
      .generate({ model: 'mc/image', prompt: 'a cat', max_cost: '0.039999999' } as OpenAI.ImageGenerateParamsNonStreaming)
      .catch((e) => e);
    expect(image.status).toBe(402);
    expect(image.error.message).toBe(
      `max_cost is 0.039999999 USD, below the least this call can cost: ${IMAGE_PRICE} USD on mc/image; nothing was held or charged`,
    );
    // 5 seconds at 0.01 a second: 0.05.
    const video = await fetch(`${gw.url}/v1/queue/mc/video`, {
      method: 'POST',
      // With an Idempotency-Key the submit fingerprints its validated body, max_cost (a bigint by then) included.
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json', 'idempotency-key': `video-${mode}` },
      body: JSON.stringify({ prompt: 'a lighthouse', duration: 5, max_cost: 0.04 }),
    });
    expect(video.status).toBe(402);
    expect((await video.json()).error).toMatchObject({
      code: 'insufficient_credits',
      message: 'max_cost is 0.04 USD, below the least this call can cost: 0.05 USD on mc/video; nothing was held or charged',
    });
    expect(await ledgerFigures()).toEqual(before);
  });

  it('images: the cap bounds how many are made; a cap above the worst case changes nothing', async () => {
    // 0.1 affords 2 images at 0.04 (0.08) of the 3 asked; held at 0.1.
    const { data, response } = await openai.images
      .generate({ model: 'mc/image', prompt: 'three cats', n: 3, max_cost: 0.1 } as OpenAI.ImageGenerateParamsNonStreaming)
      .withResponse();
    expect(data.data).toHaveLength(2);
    expect(fake.requests.at(-1)!.body).toMatchObject({ n: 2 });
    await expectSettled(response.headers.get('x-gateway-request-id'), '0.1', nano('0.08'));

    // Worst case: (4 prompt bytes + 8) × 0.001 + 100 × 0.002 = 0.212, under a cap of 5: the same hold and limit as uncapped.
    const capped = await chat('mc/chat', { max_cost: 5 });
    const cappedBody = fake.requests.at(-1)!.body;
    const plain = await chat('mc/chat', {});
    expect(cappedBody).toEqual(fake.requests.at(-1)!.body);
    expect(cappedBody.max_completion_tokens).toBe(100);
    const charge = textCost(TEXT_PRICE, 5, 100);
    await expectSettled(capped.response.headers.get('x-gateway-request-id'), '0.212', charge);
    await expectSettled(plain.response.headers.get('x-gateway-request-id'), '0.212', charge);
  });

  it.each([
    ['zero', 0, 'max_cost: must be above 0'],
    ['a negative amount', -1, 'max_cost: must be above 0'],
    ['words', 'a dollar', 'max_cost: must be a positive USD amount'],
    ['a fraction of a nano-USD', 1e-10, 'max_cost: must be a USD amount with at most 9 decimals'],
    ['an absurd amount', 1e300, 'max_cost: must be at most 1000000 USD'],
  ])('refuses %s with 400 invalid_request, holding nothing', async (_name, value, message) => {
    const holds = await holdCount(gw, acct.accountId);
    const err = await chat('mc/chat', { max_cost: value }).catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error).toMatchObject({ code: 'invalid_request', message: expect.stringContaining(`Invalid request: ${message}`) });
    expect(await holdCount(gw, acct.accountId)).toBe(holds);
  });
});
