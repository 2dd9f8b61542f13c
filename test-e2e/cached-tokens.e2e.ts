import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from './support/fake-anthropic';
import { startFakeOpenAI } from './support/fake-openai';
import { nano } from './support/money';
import { EVENTS_FLEET, generationOf, settled, type Mode, type TestGateway, useGatewaySuite } from './support/harness';

const KEY_ENV = 'GW_E2E_CACHE_ANTHROPIC_KEY';

/** Priced like Claude Sonnet ($3 / $15 per million, cache reads a tenth, cache writes 1.25×), and the same without cache rates. */
const PRICE = { prompt: '0.000003', completion: '0.000015' };
const CACHE_PRICE = { ...PRICE, input_cache_read: '0.0000003', input_cache_write: '0.00000375' };

function cacheConfig(anthropicUrl: string, openaiUrl: string) {
  const text = (id: string, provider: string, model: string, pricing: object) => ({
    id,
    name: id,
    category: 'text',
    status: 'available',
    context_length: 200_000,
    max_output_tokens: 1000,
    pricing,
    endpoints: [{ provider, model }],
  });
  return {
    providers: [
      { id: 'anth', kind: 'anthropic', base_url: anthropicUrl, api_key_env: KEY_ENV, timeout_ms: 10_000 },
      { id: 'oai', kind: 'openai', base_url: openaiUrl, timeout_ms: 10_000 },
    ],
    models: [
      text('cache/claude', 'anth', 'cached', CACHE_PRICE),
      text('cache/claude-flat', 'anth', 'cached', PRICE),
      text('cache/claude-echo', 'anth', 'echo', CACHE_PRICE),
      text('cache/gpt', 'oai', 'cached', CACHE_PRICE),
      text('cache/gpt-flat', 'oai', 'cached', PRICE),
    ],
    stats: { cache_ttl: '1s' },
  };
}

/*
 * The bills, worked by hand from the prices above (never with the gateway's money code):
 *
 * Message-API upstream "cached": 1000 input, 500 written to the cache, 2000 read from it, 300 output.
 *   1000 × 0.000003 = 0.003; 500 × 0.00000375 = 0.001875; 2000 × 0.0000003 = 0.0006; 300 × 0.000015 = 0.0045
 *   charge 0.009975. Every prompt token at the prompt rate: 3500 × 0.000003 + 0.0045 = 0.015, so the cache saved
 *   0.005025 (reads saved 0.0054, writes cost 0.000375 more).
 * OpenAI upstream "cached": 3000 prompt of which 2000 cached; 300 completion of which 250 reasoning.
 *   1000 × 0.000003 = 0.003; 2000 × 0.0000003 = 0.0006; 300 × 0.000015 = 0.0045 (reasoning is in the 300, once)
 *   charge 0.0081. Uncached: 3000 × 0.000003 + 0.0045 = 0.0135, so the cache saved 0.0054.
 */
/**
 * The fakes report 3000 or 3500 prompt tokens whatever they are sent; a prompt of as many bytes makes the hold (one
 * token a byte) cover them, so the charge is the upstream's figure and not the hold it would be capped at.
 */
const BOOK = 'x'.repeat(4000);
const CLAUDE = { charge: '0.009975', discount: '0.005025', flat: '0.015' };
const GPT = { charge: '0.0081', discount: '0.0054', flat: '0.0135' };

/** Half up to the cent, as the account routes show money, worked on the exact nano figure. */
const cents = (usd: string) => Number((nano(usd) + 5_000_000n) / 10_000_000n) / 100;

describe.each(['embedded', EVENTS_FLEET] as Mode[])('cached and reasoning tokens, priced exactly, through the %s gateway', (mode) => {
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let openai: OpenAI;
  let anthropic: Anthropic;

  const upstreams = async () => {
    process.env[KEY_ENV] = FAKE_ANTHROPIC_KEY;
    return Promise.all([startFakeAnthropic(), startFakeOpenAI()]);
  };
  useGatewaySuite(mode, { upstreams, config: ([a, o]) => cacheConfig(a.url, o.url), credits: 10 }, (s) => {
    ({ gw, acct } = s);
    openai = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    anthropic = new Anthropic({ apiKey: acct.key, baseURL: gw.url, maxRetries: 0 });
  });
  afterAll(() => {
    delete process.env[KEY_ENV];
  });

  /** The account's exact total usage, in nano-USD, from the ledger. */
  const totalUsage = async () => BigInt((await gw.ledger(`SELECT total_usage::text AS u FROM accounts WHERE id = $1`, [acct.accountId]))[0].u);

  /** Checks the generation record, the ledger and /v1/credits for one settled call of `expected` USD. */
  async function expectBilled(requestId: string, before: bigint, expected: { charge: string; discount: string }, tokens: object) {
    await settled(gw, acct.accountId);
    const gen = await generationOf(gw, acct.key, requestId);
    expect(gen).toMatchObject({
      cost: expected.charge,
      total_cost: cents(expected.charge),
      cache_discount: cents(expected.discount),
      cache_discount_exact: expected.discount,
      ...tokens,
    });
    expect((await totalUsage()) - before).toBe(nano(expected.charge));
    const credits = await (await fetch(`${gw.url}/v1/credits`, { headers: { authorization: `Bearer ${acct.key}` } })).json();
    const usage = await totalUsage();
    expect(credits.data.total_usage).toBe(Number((usage + 5_000_000n) / 10_000_000n) / 100);
  }

  // First, so no earlier call of this suite is still on its way to the stats.
  it('/v1/stats counts input plus output without the cached input and the reasoning', async () => {
    const stats = async () => (await (await fetch(`${gw.url}/v1/stats`)).json()).tokens as number;
    const before = await stats();
    await openai.chat.completions.create({ model: 'cache/gpt', messages: [{ role: 'user', content: BOOK }] });
    // 3000 − 2000 cached + 300 − 250 reasoning = 1050.
    let after = before;
    for (let tries = 0; after < before + 1050 && tries < 80; tries++) {
      await new Promise((r) => setTimeout(r, 250));
      after = await stats();
    }
    expect(after).toBe(before + 1050);
  }, 60_000);

  it('messages (the anthropic client): cache reads and writes at their rates, the counts in the message API’s usage', async () => {
    const before = await totalUsage();
    const { data, response } = await anthropic.messages
      .create({ model: 'cache/claude', max_tokens: 500, messages: [{ role: 'user', content: BOOK }] })
      .withResponse();
    expect(data.usage).toMatchObject({ input_tokens: 1000, cache_creation_input_tokens: 500, cache_read_input_tokens: 2000, output_tokens: 300 });
    expect((data.usage as unknown as { cost: string }).cost).toBe(CLAUDE.charge);
    const requestId = response.headers.get('x-gateway-request-id')!;
    await expectBilled(requestId, before, CLAUDE, { tokens_prompt: 3500, tokens_completion: 300, tokens_cached: 2000, tokens_reasoning: 0 });
  });

  it('messages streamed: the cache figures of message_start are billed the same', async () => {
    const before = await totalUsage();
    const { data: stream, response } = await anthropic.messages
      .create({ model: 'cache/claude', max_tokens: 500, messages: [{ role: 'user', content: BOOK }], stream: true })
      .withResponse();
    let usage: unknown;
    for await (const event of stream) if (event.type === 'message_delta') usage = event.usage;
    expect(usage).toMatchObject({ input_tokens: 1000, cache_creation_input_tokens: 500, cache_read_input_tokens: 2000, output_tokens: 300 });
    await expectBilled(response.headers.get('x-gateway-request-id')!, before, CLAUDE, { streamed: true, tokens_cached: 2000 });
  });

  it('a model without cache rates bills every prompt token at the prompt rate, as before; no discount', async () => {
    const before = await totalUsage();
    const { data, response } = await anthropic.messages
      .create({ model: 'cache/claude-flat', max_tokens: 500, messages: [{ role: 'user', content: BOOK }] })
      .withResponse();
    expect((data.usage as unknown as { cost: string }).cost).toBe(CLAUDE.flat);
    await expectBilled(response.headers.get('x-gateway-request-id')!, before, { charge: CLAUDE.flat, discount: '0' }, { tokens_cached: 2000 });
  });

  it('chat (the openai client): cached tokens at the read rate, reasoning once, the details in the usage', async () => {
    const before = await totalUsage();
    const { data, response } = await openai.chat.completions
      .create({ model: 'cache/gpt', messages: [{ role: 'user', content: BOOK }] })
      .withResponse();
    expect(data.usage).toMatchObject({
      prompt_tokens: 3000,
      completion_tokens: 300,
      prompt_tokens_details: { cached_tokens: 2000, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 250, audio_tokens: 0 },
    });
    expect((data.usage as unknown as { cost: string }).cost).toBe(GPT.charge);
    const requestId = response.headers.get('x-gateway-request-id')!;
    await expectBilled(requestId, before, GPT, { tokens_prompt: 3000, tokens_completion: 300, tokens_cached: 2000, tokens_reasoning: 250 });
  });

  it('chat streamed: the usage chunk carries the details and bills the same', async () => {
    const before = await totalUsage();
    const { data: stream, response } = await openai.chat.completions
      .create({ model: 'cache/gpt', messages: [{ role: 'user', content: BOOK }], stream: true })
      .withResponse();
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) usage = chunk.usage ?? usage;
    expect(usage).toMatchObject({ prompt_tokens_details: { cached_tokens: 2000 }, completion_tokens_details: { reasoning_tokens: 250 } });
    await expectBilled(response.headers.get('x-gateway-request-id')!, before, GPT, { streamed: true, tokens_reasoning: 250 });
  });

  it('chat without cache rates: cached tokens at the prompt rate', async () => {
    const before = await totalUsage();
    const { response } = await openai.chat.completions
      .create({ model: 'cache/gpt-flat', messages: [{ role: 'user', content: BOOK }] })
      .withResponse();
    await expectBilled(response.headers.get('x-gateway-request-id')!, before, { charge: GPT.flat, discount: '0' }, { tokens_cached: 2000 });
  });

  it('responses (the openai client): input_tokens_details and output_tokens_details carry the counts', async () => {
    const before = await totalUsage();
    const { data, response } = await openai.responses.create({ model: 'cache/gpt', input: BOOK }).withResponse();
    expect(data.usage).toMatchObject({
      input_tokens: 3000,
      output_tokens: 300,
      input_tokens_details: { cached_tokens: 2000 },
      output_tokens_details: { reasoning_tokens: 250 },
    });
    await expectBilled(response.headers.get('x-gateway-request-id')!, before, GPT, { tokens_cached: 2000 });
  });

  it('the hold covers the dearest case: every prompt token at the cache write rate', async () => {
    const { response } = await anthropic.messages
      .create({ model: 'cache/claude', max_tokens: 500, messages: [{ role: 'user', content: 'ping' }] })
      .withResponse();
    await settled(gw, acct.accountId);
    const [hold] = await gw.ledger(`SELECT amount::text AS amount FROM holds WHERE request_id = $1`, [response.headers.get('x-gateway-request-id')]);
    // "ping" is 4 bytes + 8 framing tokens = 12 prompt tokens × 0.00000375 = 0.000045; 500 × 0.000015 = 0.0075.
    expect(BigInt(hold.amount)).toBe(nano('0.007545'));
  });

  it('cache_control reaches the message-API upstream unchanged', async () => {
    const reply = await anthropic.messages.create({
      model: 'cache/claude-echo',
      max_tokens: 100,
      system: [{ type: 'text', text: 'Long rules', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Book', cache_control: { type: 'ephemeral', ttl: '1h' } }] }],
      tools: [{ name: 'f', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } }],
    });
    const block = reply.content[0];
    const sent = JSON.parse(block.type === 'text' ? block.text : '{}');
    expect(sent.system).toEqual([{ type: 'text', text: 'Long rules', cache_control: { type: 'ephemeral' } }]);
    expect(sent.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Book', cache_control: { type: 'ephemeral', ttl: '1h' } }] }]);
    expect(sent.tools).toEqual([{ name: 'f', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } }]);
  });
});
