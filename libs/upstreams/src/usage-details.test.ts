import type { ResolvedEndpoint } from '@gateway/config';
import { createAnthropicProtocol } from './anthropic';
import { createOpenAIProtocol } from './openai';
import { type Cassette, FAKE_ENV, type FakeUpstream, callOptions, cassette, editJson, editSse, endpointAt, play, startFakeUpstream } from './testing';
import type { ChatChunk, ChatUsage } from './types';

/**
 * Cached, cache-written and reasoning tokens, read from recorded answers (testing/fixtures/<provider>/README.md says
 * which documented example each follows), whole and streamed: every protocol names them in the chat shape's
 * prompt_tokens_details / completion_tokens_details, where the pricing reads them.
 */
const reported: string[] = [];
const report = (_ep: ResolvedEndpoint, issue: string) => void reported.push(issue);
const openai = createOpenAIProtocol(FAKE_ENV, report);
const anthropic = createAnthropicProtocol(FAKE_ENV, report);
const chat = { messages: [{ role: 'user', content: 'Hello!' }] };

let fake: FakeUpstream;
let answer: Cassette;
beforeAll(async () => {
  fake = await startFakeUpstream((_hit, res) => play(res, answer));
});
afterAll(() => fake.close());
beforeEach(() => {
  reported.length = 0;
});

const ep = (kind: 'openai' | 'anthropic') => endpointAt(fake.baseUrl, { id: kind, kind });

async function streamedUsage(stream: AsyncIterable<ChatChunk>): Promise<ChatUsage | undefined> {
  let usage: ChatUsage | undefined;
  for await (const c of stream) usage = c.usage ?? usage;
  return usage;
}

describe('OpenAI chat usage details', () => {
  it('reads cached prompt tokens (the prompt caching guide’s figures)', async () => {
    answer = cassette('openai', 'chat-completion-cached');
    const c = await openai.chat(ep('openai'), chat, callOptions());
    expect(c.usage).toMatchObject({ prompt_tokens: 2006, completion_tokens: 300, prompt_tokens_details: { cached_tokens: 1920 } });
    expect(c.usage?.completion_tokens_details).toMatchObject({ reasoning_tokens: 0, accepted_prediction_tokens: 0 });
  });

  it('reads reasoning tokens from the streamed usage chunk (the reasoning guide’s figures)', async () => {
    answer = cassette('openai', 'chat-completion-reasoning-stream');
    const usage = await streamedUsage(await openai.chatStream(ep('openai'), chat, callOptions()));
    expect(usage).toMatchObject({ prompt_tokens: 75, completion_tokens: 1186, completion_tokens_details: { reasoning_tokens: 1024 } });
  });

  it.each([
    ['cached tokens above the prompt tokens', (u: Record<string, any>) => void (u.prompt_tokens_details.cached_tokens = 2007)],
    ['cached tokens not a count', (u: Record<string, any>) => void (u.prompt_tokens_details.cached_tokens = '1920')],
    ['reasoning tokens above the completion tokens', (u: Record<string, any>) => void (u.completion_tokens_details.reasoning_tokens = 301)],
  ])('drops and reports usage with %s, as any malformed usage', async (_name, edit) => {
    answer = editJson(cassette('openai', 'chat-completion-cached'), (j) => edit(j.usage));
    const c = await openai.chat(ep('openai'), chat, callOptions());
    expect(c.usage).toBeUndefined();
    expect(reported).toHaveLength(1);
  });

  it('drops and reports a streamed usage whose reasoning tokens exceed its completion tokens', async () => {
    answer = editSse(cassette('openai', 'chat-completion-reasoning-stream'), (d) =>
      d?.usage ? { ...d, usage: { ...d.usage, completion_tokens_details: { reasoning_tokens: 2000 } } } : d,
    );
    expect(await streamedUsage(await openai.chatStream(ep('openai'), chat, callOptions()))).toBeUndefined();
    expect(reported).toHaveLength(1);
  });
});

describe('message API cache usage, in the chat shape', () => {
  it('counts cache writes in the prompt and names them (the prompt caching guide’s first call)', async () => {
    answer = cassette('anthropic', 'message-cached');
    const c = await anthropic.chat(ep('anthropic'), chat, callOptions());
    // 21 + 188086 written + 0 read
    expect(c.usage).toEqual({
      prompt_tokens: 188107,
      completion_tokens: 393,
      total_tokens: 188500,
      prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 188086 },
    });
  });

  it('counts cache reads from message_start in the streamed usage (its second call)', async () => {
    answer = cassette('anthropic', 'message-stream-cached');
    const usage = await streamedUsage(await anthropic.chatStream(ep('anthropic'), chat, callOptions()));
    expect(usage).toEqual({
      prompt_tokens: 188107,
      completion_tokens: 393,
      total_tokens: 188500,
      prompt_tokens_details: { cached_tokens: 188086, cache_write_tokens: 0 },
    });
  });

  it('an answer without cache figures has no details, as before', async () => {
    answer = cassette('anthropic', 'message');
    const c = await anthropic.chat(ep('anthropic'), chat, callOptions());
    expect(c.usage).toEqual({ prompt_tokens: 2095, completion_tokens: 503, total_tokens: 2598 });
  });

  it('drops and reports a cache figure that is not a count', async () => {
    answer = editJson(cassette('anthropic', 'message-cached'), (j) => void (j.usage.cache_read_input_tokens = -1));
    const c = await anthropic.chat(ep('anthropic'), chat, callOptions());
    expect(c.usage).toBeUndefined();
    expect(reported).toHaveLength(1);
  });
});
