import { finishReasonOf, toChatCompletion } from './response';

describe('message-API answer → chat completion', () => {
  it('joins text, turns tool_use into tool_calls and maps usage', () => {
    const out = toChatCompletion({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-x',
      content: [
        { type: 'thinking', thinking: 'hmm', signature: 's' },
        { type: 'text', text: 'Let me ' },
        { type: 'text', text: 'check.' },
        { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2, cache_creation_input_tokens: null },
    });
    expect(out).toMatchObject({
      id: 'msg_1',
      object: 'chat.completion',
      model: 'claude-x',
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          message: {
            role: 'assistant',
            content: 'Let me check.',
            tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
          },
        },
      ],
      usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
    });
    expect(out.choices[0].stop_sequence).toBeUndefined();
  });

  it('answers null content for a tool-only answer and reports the stop sequence', () => {
    const toolOnly = toChatCompletion({
      id: 'm',
      type: 'message',
      role: 'assistant',
      model: 'x',
      content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    expect(toolOnly.choices[0].message.content).toBeNull();
    const stopped = toChatCompletion({
      id: 'm',
      type: 'message',
      role: 'assistant',
      model: 'x',
      content: [{ type: 'text', text: 'a' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'END',
      usage: { input_tokens: 1, output_tokens: 1 },
    });
    expect(stopped.choices[0]).toMatchObject({ finish_reason: 'stop', stop_sequence: 'END' });
  });

  it.each([
    ['end_turn', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['stop_sequence', 'stop'],
    ['refusal', 'content_filter'],
    ['something_new', 'stop'],
    [null, null],
  ])('stop_reason %p → finish_reason %p', (stop, finish) => {
    expect(finishReasonOf(stop)).toBe(finish);
  });
});
