import type { ChatCompletion } from '@gateway/upstreams';
import { endingOf, fromCompletion, itemIds, type ResponseShell } from './translate-response';
import type { ResponseEcho } from './translate-request';

const echo: ResponseEcho = {
  instructions: 'be brief',
  max_output_tokens: 20,
  temperature: null,
  top_p: null,
  parallel_tool_calls: true,
  tool_choice: 'auto',
  tools: [],
  metadata: { run: '7' },
};
const shell: ResponseShell = { id: 'req_abc', createdAt: 1_700_000_000, model: 'test/m', echo };
const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, cost: '0.007' };

const completion = (message: Record<string, unknown>, finish_reason: string | null = 'stop'): ChatCompletion => ({
  id: 'chatcmpl-x',
  object: 'chat.completion',
  created: 1,
  model: 'upstream-name',
  choices: [{ index: 0, message: { role: 'assistant', content: null, ...message }, finish_reason }],
});

describe('fromCompletion', () => {
  it('shapes a text answer as the contract Response, with the gateway slug and the echoed settings', () => {
    expect(fromCompletion(shell, completion({ content: 'pong' }), usage)).toEqual({
      id: 'req_abc',
      object: 'response',
      created_at: 1_700_000_000,
      status: 'completed',
      error: null,
      incomplete_details: null,
      model: 'test/m',
      output: [
        { type: 'message', id: 'msg_abc', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'pong', annotations: [] }] },
      ],
      output_text: 'pong',
      instructions: 'be brief',
      max_output_tokens: 20,
      temperature: null,
      top_p: null,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [],
      metadata: { run: '7' },
      usage: {
        input_tokens: 3,
        output_tokens: 2,
        total_tokens: 5,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
        cost: '0.007',
      },
    });
  });

  it('turns tool calls into function_call items, after any text', () => {
    const r = fromCompletion(
      shell,
      completion(
        {
          content: 'let me check',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            { type: 'function', function: { name: 'time', arguments: '{}' } },
          ],
        },
        'tool_calls',
      ),
      usage,
    );
    expect(r.status).toBe('completed');
    expect(r.output).toEqual([
      {
        type: 'message',
        id: 'msg_abc',
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'let me check', annotations: [] }],
      },
      { type: 'function_call', id: 'fc_abc_0', call_id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}', status: 'completed' },
      { type: 'function_call', id: 'fc_abc_1', call_id: 'call_abc_1', name: 'time', arguments: '{}', status: 'completed' },
    ]);
    expect(r.output_text).toBe('let me check');
  });

  it('has no message item when the answer is only tool calls', () => {
    const r = fromCompletion(shell, completion({ tool_calls: [{ id: 'c', function: { name: 'f', arguments: '{}' } }] }, 'tool_calls'), usage);
    expect(r.output.map((i) => i.type)).toEqual(['function_call']);
    expect(r.output_text).toBe('');
  });

  it('still answers one empty message when the model said nothing', () => {
    const r = fromCompletion(shell, completion({ content: '' }), usage);
    expect(r.output).toEqual([
      { type: 'message', id: 'msg_abc', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: '', annotations: [] }] },
    ]);
  });

  it('keeps a refusal as a refusal part', () => {
    const r = fromCompletion(shell, completion({ refusal: 'I cannot help with that.' }), usage);
    expect(r.output[0]).toMatchObject({ type: 'message', content: [{ type: 'refusal', refusal: 'I cannot help with that.' }] });
    expect(r.output_text).toBe('');
  });

  it('is incomplete with reason max_output_tokens when the model stopped on length', () => {
    const r = fromCompletion(shell, completion({ content: 'one two' }, 'length'), usage);
    expect(r).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, output: [{ status: 'incomplete' }] });
  });
});

describe('endingOf and itemIds', () => {
  it.each([
    ['stop', 'completed', null],
    ['tool_calls', 'completed', null],
    [null, 'completed', null],
    ['length', 'incomplete', { reason: 'max_output_tokens' }],
    ['content_filter', 'incomplete', { reason: 'content_filter' }],
  ])('%s → %s', (finish, status, incomplete) => {
    expect(endingOf(finish)).toMatchObject({ status, incomplete });
  });

  it('derives item ids from the request id', () => {
    const ids = itemIds('req_xyz');
    expect([ids.message(0), ids.message(1), ids.call(0), ids.callId(2)]).toEqual(['msg_xyz', 'msg_xyz_1', 'fc_xyz_0', 'call_xyz_2']);
  });
});
