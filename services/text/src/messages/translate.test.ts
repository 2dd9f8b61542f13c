import type { ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { validate } from '@gateway/service-kit';
import type { ChatOutcome } from '../chat-flow/run-chat';
import { messagesBody } from './schema';
import { errorTypeOf, messageId, stopReasonOf, toChatBody, toMessage } from './translate';

const model = { config: { id: 'acme/chat' } } as ResolvedModel;
const outcome = (message: Record<string, unknown>, finish: string | null, extra: Record<string, unknown> = {}): ChatOutcome => ({
  completion: {
    id: 'up-1',
    object: 'chat.completion',
    created: 0,
    model: 'upstream-model',
    choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason: finish, ...extra }],
  },
  model,
  requestId: 'req_abc',
  usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15, cost: '0.019' },
});

describe('messages body validation', () => {
  const ok = { model: 'acme/chat', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };

  it('accepts the documented fields and drops unknown top-level ones', () => {
    const body = validate(messagesBody, {
      ...ok,
      system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }],
      stop_sequences: ['END'],
      stream: true,
      temperature: 0.5,
      top_p: 0.9,
      top_k: 5,
      metadata: { user_id: 'u' },
      tools: [{ name: 'f', input_schema: { type: 'object', properties: {} } }],
      tool_choice: { type: 'any' },
      thinking: { type: 'enabled' },
    });
    expect(body).not.toHaveProperty('thinking');
    expect(body.tools?.[0].name).toBe('f');
  });

  it.each([
    ['no max_tokens', { model: 'a/b', messages: ok.messages }, 'max_tokens'],
    ['max_tokens 0', { ...ok, max_tokens: 0 }, 'max_tokens'],
    ['empty messages', { ...ok, messages: [] }, 'messages'],
    ['a system role', { ...ok, messages: [{ role: 'system', content: 'x' }] }, 'top-level "system"'],
    [
      'a tool_use block from the user',
      { ...ok, messages: [{ role: 'user', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] }] },
      'messages.0.content',
    ],
    ['temperature above 1', { ...ok, temperature: 1.5 }, 'temperature'],
    ['a string max_tokens', { ...ok, max_tokens: '10' }, 'max_tokens'],
    ['unknown metadata', { ...ok, metadata: { team: 'x' } }, 'metadata'],
    ['a tool without input_schema', { ...ok, tools: [{ name: 'f' }] }, 'tools.0.input_schema'],
  ])('refuses %s with 400 naming the field', (_why, body, field) => {
    let err: unknown;
    try {
      validate(messagesBody, body);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(400);
    expect((err as Error).message).toContain(field);
  });
});

describe('messages → chat body', () => {
  it('puts the system first, carries sampling, stops, user and max_tokens', () => {
    const chat = toChatBody(
      validate(messagesBody, {
        model: 'acme/chat',
        max_tokens: 20,
        system: [
          { type: 'text', text: 'One' },
          { type: 'text', text: 'Two' },
        ],
        messages: [{ role: 'user', content: 'hi' }],
        stop_sequences: ['END'],
        temperature: 0.3,
        top_p: 0.8,
        top_k: 7,
        metadata: { user_id: 'u-9' },
      }),
    );
    expect(chat).toEqual({
      messages: [
        { role: 'system', content: 'One\nTwo' },
        { role: 'user', content: 'hi' },
      ],
      max_tokens: 20,
      stop: ['END'],
      temperature: 0.3,
      top_p: 0.8,
      top_k: 7,
      user: 'u-9',
    });
  });

  it('translates tools, tool_use and tool_result both ways round a conversation', () => {
    const chat = toChatBody(
      validate(messagesBody, {
        model: 'acme/chat',
        max_tokens: 20,
        tools: [{ name: 'weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        tool_choice: { type: 'tool', name: 'weather', disable_parallel_tool_use: true },
        messages: [
          { role: 'user', content: 'Weather?' },
          {
            role: 'assistant',
            content: [
              { type: 'text', text: 'Checking.' },
              { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
            ],
          },
          {
            role: 'user',
            content: [
              { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'sunny' }] },
              { type: 'text', text: 'And tomorrow?' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            ],
          },
        ],
      }),
    );
    expect(chat.messages).toEqual([
      { role: 'user', content: 'Weather?' },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'And tomorrow?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
    ]);
    expect(chat.tools).toEqual([
      {
        type: 'function',
        function: { name: 'weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      },
    ]);
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'weather' } });
    expect(chat.parallel_tool_calls).toBe(false);
  });

  it.each([
    [{ type: 'auto' }, 'auto'],
    [{ type: 'any' }, 'required'],
    [{ type: 'none' }, 'none'],
  ])('tool_choice %p → %p', (choice, expected) => {
    const chat = toChatBody(
      validate(messagesBody, {
        model: 'a/b',
        max_tokens: 1,
        messages: [{ role: 'user', content: 'x' }],
        tools: [{ name: 'f', input_schema: { type: 'object' } }],
        tool_choice: choice,
      }),
    );
    expect(chat.tool_choice).toBe(expected);
  });

  it('sends no tool_choice without tools, and a tool-only assistant turn with null content', () => {
    const chat = toChatBody(
      validate(messagesBody, {
        model: 'a/b',
        max_tokens: 1,
        tool_choice: { type: 'any' },
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] },
        ],
      }),
    );
    expect(chat.tool_choice).toBeUndefined();
    expect(chat.messages[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }],
    });
  });
});

describe('chat outcome → message', () => {
  it('answers text under the gateway id and slug, with usage and cost', () => {
    expect(toMessage(outcome({ content: 'pong' }, 'stop'))).toEqual({
      id: 'msg_req_abc',
      type: 'message',
      role: 'assistant',
      model: 'acme/chat',
      content: [{ type: 'text', text: 'pong' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 11, output_tokens: 4, cost: '0.019' },
    });
    expect(messageId('req_abc')).toBe('msg_req_abc');
  });

  it('turns tool_calls into tool_use blocks, with ids for upstreams that give none and {} for junk arguments', () => {
    const m = toMessage(
      outcome(
        {
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            { type: 'function', function: { name: 'weather', arguments: '{"city":' } },
          ],
        },
        'tool_calls',
      ),
    );
    expect(m.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } },
      { type: 'tool_use', id: 'toolu_req_abc_1', name: 'weather', input: {} },
    ]);
    expect(m.stop_reason).toBe('tool_use');
  });

  it('reports the stop sequence when the upstream names it', () => {
    const m = toMessage(outcome({ content: 'a' }, 'stop', { stop_sequence: 'END' }));
    expect(m).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
  });

  it.each([
    ['stop', undefined, 'end_turn'],
    ['length', undefined, 'max_tokens'],
    ['tool_calls', undefined, 'tool_use'],
    ['content_filter', undefined, 'refusal'],
    [null, undefined, 'end_turn'],
    ['stop', 'END', 'stop_sequence'],
    ['length', 'END', 'max_tokens'],
  ])('finish_reason %p (stop sequence %p) → %p', (finish, seq, stop) => {
    expect(stopReasonOf(finish, seq)).toBe(stop);
  });

  it('names the message API error types', () => {
    expect(errorTypeOf('upstream_unavailable')).toBe('api_error');
    expect(errorTypeOf('invalid_request')).toBe('invalid_request_error');
    expect(errorTypeOf('rate_limited')).toBe('rate_limit_error');
  });
});
