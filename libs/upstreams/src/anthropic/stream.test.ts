import type { ChatChunk } from '../types';
import { UpstreamError } from '../upstream-error';
import { toChatChunks } from './stream';

async function* payloads(events: unknown[]) {
  for (const e of events) yield JSON.stringify(e);
}

async function collect(events: unknown[]): Promise<{ chunks: ChatChunk[]; error?: unknown; issues: string[] }> {
  const chunks: ChatChunk[] = [];
  const issues: string[] = [];
  try {
    for await (const c of toChatChunks(payloads(events), (issue) => issues.push(issue))) chunks.push(c);
    return { chunks, issues };
  } catch (error) {
    return { chunks, error, issues };
  }
}

const start = {
  type: 'message_start',
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    content: [],
    model: 'claude-x',
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 9, output_tokens: 1 },
  },
};

describe('message-API stream → chat chunks', () => {
  it('translates text, tool use, the finish and the usage', async () => {
    const { chunks, error } = await collect([
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'ping' },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city":' } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '"Paris"}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 12 } },
      { type: 'message_stop' },
    ]);
    expect(error).toBeUndefined();
    expect(chunks.map((c) => c.choices[0]?.delta ?? null)).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Hi' },
      { tool_calls: [{ index: 0, id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] },
      {},
      null,
    ]);
    expect(chunks[5].choices[0].finish_reason).toBe('tool_calls');
    expect(chunks[6]).toMatchObject({
      id: 'msg_1',
      model: 'claude-x',
      choices: [],
      usage: { prompt_tokens: 9, completion_tokens: 12, total_tokens: 21 },
    });
  });

  it('reports which stop sequence ended the answer', async () => {
    const { chunks } = await collect([
      start,
      { type: 'message_delta', delta: { stop_reason: 'stop_sequence', stop_sequence: 'END' }, usage: { output_tokens: 1 } },
      { type: 'message_stop' },
    ]);
    expect(chunks[1].choices[0]).toMatchObject({ finish_reason: 'stop', stop_sequence: 'END' });
  });

  it('passes thinking on as reasoning_content, the billed output a stream cut before its usage is charged for', async () => {
    const { chunks } = await collect([
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'thinking', thinking: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'hmm' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'signature_delta', signature: 'sig' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } },
      { type: 'message_stop' },
    ]);
    expect(chunks.map((c) => c.choices[0]?.delta)).toEqual([{ role: 'assistant', content: '' }, { reasoning_content: 'hmm' }, {}, undefined]);
  });

  it('ignores blocks it does not translate', async () => {
    const { chunks } = await collect([
      start,
      { type: 'content_block_start', index: 0, content_block: { type: 'redacted_thinking', data: 'opaque' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } },
      { type: 'message_stop' },
    ]);
    expect(chunks).toHaveLength(3);
  });

  it('breaks on an error event', async () => {
    const { chunks, error } = await collect([start, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }]);
    expect(chunks).toHaveLength(1);
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).kind).toBe('broken_stream');
    expect((error as Error).message).toContain('overloaded_error');
  });

  it('breaks when the stream ends before message_stop', async () => {
    const { error } = await collect([start, { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hi' } }]);
    expect((error as UpstreamError).kind).toBe('broken_stream');
  });
});
