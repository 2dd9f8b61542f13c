import { UpstreamError } from '../upstream-error';
import { DEFAULT_OUTPUT_CAP } from '@gateway/pricing';
import { toMessagesRequest } from './request';

describe('chat body → message-API request', () => {
  it('lifts system turns into `system`, keeps plain turns as strings and sets the upstream model', () => {
    const out = toMessagesRequest(
      {
        model: 'gateway/slug',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'developer', content: [{ type: 'text', text: 'No emoji.' }] },
          { role: 'user', content: 'Hi' },
        ],
        max_tokens: 50,
      },
      'claude-x',
    );
    expect(out).toEqual({
      model: 'claude-x',
      system: 'Be brief.\nNo emoji.',
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 50,
      stream: false,
    });
  });

  it('fills the required max_tokens and accepts max_completion_tokens', () => {
    expect(toMessagesRequest({ messages: [{ role: 'user', content: 'x' }] }, 'm').max_tokens).toBe(DEFAULT_OUTPUT_CAP);
    expect(toMessagesRequest({ messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 7 }, 'm').max_tokens).toBe(7);
  });

  it("sends the tightest limit, never above the model's", () => {
    const ask = (limits: Record<string, number>) => toMessagesRequest({ messages: [{ role: 'user', content: 'x' }], ...limits }, 'm', 100).max_tokens;
    expect(ask({})).toBe(100);
    expect(ask({ max_tokens: 5000 })).toBe(100);
    expect(ask({ max_tokens: 10, max_completion_tokens: 3000 })).toBe(10);
    expect(ask({ max_tokens: 3000, max_completion_tokens: 10 })).toBe(10);
  });

  it('carries sampling, stop and user; drops fields the message API would refuse', () => {
    const out = toMessagesRequest(
      {
        messages: [{ role: 'user', content: 'x' }],
        max_tokens: 5,
        stop: 'END',
        temperature: 0.2,
        top_p: 0.9,
        top_k: 40,
        user: 'u-1',
        seed: 42,
        logit_bias: {},
        stream_options: { include_usage: true },
        n: 1,
      },
      'm',
    );
    expect(out).toEqual({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 5,
      stop_sequences: ['END'],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: 'u-1' },
      stream: false,
    });
  });

  it('translates tools, tool_calls and tool answers, merging the answers into one user turn', () => {
    const out = toMessagesRequest(
      {
        messages: [
          { role: 'user', content: 'Weather in Paris and Rome?' },
          {
            role: 'assistant',
            content: 'Checking.',
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
              { id: 'call_2', type: 'function', function: { name: 'weather', arguments: 'not json' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
          { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'rain' }] },
          { role: 'user', content: 'Thanks' },
        ],
        tools: [
          {
            type: 'function',
            function: { name: 'weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
          },
        ],
        tool_choice: { type: 'function', function: { name: 'weather' } },
        parallel_tool_calls: false,
      },
      'm',
    );
    expect(out.messages).toEqual([
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Checking.' },
          { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'weather', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: 'sunny' },
          { type: 'tool_result', tool_use_id: 'call_2', content: 'rain' },
          { type: 'text', text: 'Thanks' },
        ],
      },
    ]);
    expect(out.tools).toEqual([
      { name: 'weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
    ]);
    expect(out.tool_choice).toEqual({ type: 'tool', name: 'weather', disable_parallel_tool_use: true });
  });

  it.each([
    ['auto', undefined, { type: 'auto' }],
    ['required', undefined, { type: 'any' }],
    ['none', undefined, { type: 'none' }],
    [undefined, false, { type: 'auto', disable_parallel_tool_use: true }],
    [undefined, undefined, undefined],
  ])('tool_choice %p (parallel %p) → %p', (choice, parallel, expected) => {
    const out = toMessagesRequest(
      {
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ type: 'function', function: { name: 'f' } }],
        tool_choice: choice,
        parallel_tool_calls: parallel,
      },
      'm',
    );
    expect(out.tool_choice).toEqual(expected);
    expect(out.tools).toEqual([{ name: 'f', input_schema: { type: 'object', properties: {} } }]);
  });

  it('sends no tool_choice without tools', () => {
    expect(toMessagesRequest({ messages: [{ role: 'user', content: 'x' }], tool_choice: 'required' }, 'm').tool_choice).toBeUndefined();
  });

  it('turns image parts into image blocks, base64 or url', () => {
    const out = toMessagesRequest(
      {
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
            ],
          },
        ],
      },
      'm',
    );
    expect(out.messages[0].content).toEqual([
      { type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
    ]);
  });

  it("refuses content it cannot express as the client's fault (no failover)", () => {
    let err: unknown;
    try {
      toMessagesRequest({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] }, 'm');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as UpstreamError).clientFault).toBe(true);
  });
});

describe('prompt-caching breakpoints (cache_control) reach the message API unchanged', () => {
  const ephemeral = { type: 'ephemeral', ttl: '1h' };

  it('on system parts, user text and image parts, and tools', () => {
    const out = toMessagesRequest(
      {
        messages: [
          {
            role: 'system',
            content: [
              { type: 'text', text: 'Long rules', cache_control: ephemeral },
              { type: 'text', text: 'Tail' },
            ],
          },
          { role: 'user', content: [{ type: 'text', text: 'Book text', cache_control: { type: 'ephemeral' } }] },
          { role: 'assistant', content: 'Read.' },
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/a.png' }, cache_control: { type: 'ephemeral' } }] },
        ],
        tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } }, cache_control: { type: 'ephemeral' } }],
        max_tokens: 5,
      },
      'claude-x',
    );
    expect(out.system).toEqual([
      { type: 'text', text: 'Long rules', cache_control: ephemeral },
      { type: 'text', text: 'Tail' },
    ]);
    expect(out.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Book text', cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: 'Read.' },
      { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' }, cache_control: { type: 'ephemeral' } }] },
    ]);
    expect(out.tools).toEqual([{ name: 'f', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } }]);
  });

  it('without any, the system prompt stays one string, as before', () => {
    const out = toMessagesRequest(
      {
        messages: [
          { role: 'system', content: [{ type: 'text', text: 'A' }] },
          { role: 'user', content: 'B' },
        ],
      },
      'm',
    );
    expect(out.system).toBe('A');
  });
});
