import type { ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import type { ChatChunk } from '@gateway/upstreams';
import { messagesStreamSink } from './stream-sink';

const model = { config: { id: 'acme/chat' } } as ResolvedModel;
const usage = { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12, cost: '0.015' };
const chunk = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}): ChatChunk => ({
  id: 'up',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'upstream',
  choices: [{ index: 0, delta, finish_reason: finish, ...extra }],
});

function record() {
  const events: Array<{ event: string; data: Record<string, any> }> = [];
  const sink = messagesStreamSink((event, data) => events.push({ event, data }));
  return { sink, events, names: () => events.map((e) => e.event) };
}

describe('messages stream sink', () => {
  it('frames a text answer from message_start to message_stop', () => {
    const { sink, events, names } = record();
    sink.start(model, 'req_1');
    sink.chunk(chunk({ role: 'assistant', content: '' }));
    sink.chunk(chunk({ content: 'po' }));
    sink.chunk(chunk({ content: 'ng' }));
    sink.chunk(chunk({}, 'stop'));
    sink.finish(usage, 'stop');
    expect(names()).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[0].data).toEqual({
      type: 'message_start',
      message: {
        id: 'msg_req_1',
        type: 'message',
        role: 'assistant',
        model: 'acme/chat',
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 0, output_tokens: 0 },
      },
    });
    expect(events[2].data).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(events[3].data).toEqual({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'po' } });
    expect(events[5].data).toEqual({ type: 'content_block_stop', index: 0 });
    expect(events[6].data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 9, output_tokens: 3, cost: '0.015' },
    });
    expect(events[7].data).toEqual({ type: 'message_stop' });
  });

  it('opens a tool_use block per tool call and streams its arguments as input_json_delta', () => {
    const { sink, events } = record();
    sink.start(model, 'req_2');
    sink.chunk(chunk({ content: 'Checking.' }));
    sink.chunk(chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '' } }] }));
    sink.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }));
    sink.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }));
    sink.chunk(chunk({ tool_calls: [{ index: 1, function: { name: 'time', arguments: '{}' } }] }));
    sink.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: 'late' } }] }));
    sink.finish(usage, 'tool_calls');
    const body = events.slice(2).map((e) => e.data);
    expect(body).toEqual([
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking.' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_1', name: 'weather', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'content_block_start', index: 2, content_block: { type: 'tool_use', id: 'toolu_req_2_1', name: 'time', input: {} } },
      { type: 'content_block_delta', index: 2, delta: { type: 'input_json_delta', partial_json: '{}' } },
      { type: 'content_block_stop', index: 2 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 9, output_tokens: 3, cost: '0.015' } },
      { type: 'message_stop' },
    ]);
  });

  it('reports the stop sequence the upstream named', () => {
    const { sink, events } = record();
    sink.start(model, 'req_3');
    sink.chunk(chunk({ content: 'a' }));
    sink.chunk(chunk({}, 'stop', { stop_sequence: 'END' }));
    sink.finish(usage, 'stop');
    expect(events.find((e) => e.event === 'message_delta')!.data.delta).toEqual({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
  });

  it('gives an empty answer its one empty text block', () => {
    const { sink, names } = record();
    sink.start(model, 'req_4');
    sink.finish(usage, 'stop');
    expect(names()).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_stop', 'message_delta', 'message_stop']);
  });

  it('ends a broken stream with an error event in the message API shape', () => {
    const { sink, events } = record();
    sink.start(model, 'req_5');
    sink.chunk(chunk({ content: 'part' }));
    sink.fail(new GatewayError('upstream_unavailable', 'The upstream stream broke'));
    expect(events[events.length - 1]).toEqual({
      event: 'error',
      data: { type: 'error', error: { type: 'api_error', message: 'The upstream stream broke' }, request_id: 'req_5' },
    });
    expect(events.map((e) => e.event)).not.toContain('message_stop');
  });
});
