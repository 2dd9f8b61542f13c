import { responsesBody, type ResponsesBody } from './schema';
import { echoOf, toChatBody } from './translate-request';

const body = (b: Record<string, unknown>): ResponsesBody => responsesBody.parse({ model: 'm', input: 'hi', ...b });

describe('toChatBody', () => {
  it('sends a string input as one user turn and instructions as their own system turn before it', () => {
    expect(toChatBody(body({ instructions: 'Be brief.' })).messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hi' },
    ]);
  });

  it('maps the sampling fields and never forwards metadata, store or dropped fields', () => {
    const out = toChatBody(
      body({ max_output_tokens: 50, temperature: 0, top_p: 0.5, user: 'u1', metadata: { a: '1' }, store: true, include: ['x'] }),
    );
    expect(out).toEqual({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 50, temperature: 0, top_p: 0.5, user: 'u1' });
  });

  it('translates message items: parts, images, developer turns, and replayed assistant output', () => {
    const out = toChatBody(
      body({
        input: [
          { role: 'developer', content: 'rules' },
          {
            type: 'message',
            role: 'user',
            content: [
              { type: 'input_text', text: 'look' },
              { type: 'input_image', image_url: 'https://x/i.png', detail: 'low' },
            ],
          },
          {
            type: 'message',
            role: 'assistant',
            id: 'msg_1',
            status: 'completed',
            content: [{ type: 'output_text', text: 'a cat', annotations: [] }],
          },
          { role: 'user', content: [{ type: 'input_text', text: 'and?' }] },
        ],
      }),
    );
    expect(out.messages).toEqual([
      { role: 'system', content: 'rules' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'https://x/i.png', detail: 'low' } },
        ],
      },
      { role: 'assistant', content: 'a cat' },
      { role: 'user', content: 'and?' },
    ]);
  });

  it('turns function_call items into one assistant turn with tool_calls and outputs into tool turns', () => {
    const out = toChatBody(
      body({
        input: [
          { role: 'user', content: 'weather in Paris and Rome?' },
          { type: 'function_call', id: 'fc_1', call_id: 'c1', name: 'weather', arguments: '{"city":"Paris"}', status: 'completed' },
          { type: 'function_call', call_id: 'c2', name: 'weather', arguments: '{"city":"Rome"}' },
          { type: 'function_call_output', call_id: 'c1', output: '20C' },
          {
            type: 'function_call_output',
            call_id: 'c2',
            output: [
              { type: 'input_text', text: '2' },
              { type: 'input_text', text: '5C' },
            ],
          },
        ],
      }),
    );
    expect(out.messages).toEqual([
      { role: 'user', content: 'weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
          { id: 'c2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: '20C' },
      { role: 'tool', tool_call_id: 'c2', content: '25C' },
    ]);
  });

  it('attaches a function call to the assistant text just before it', () => {
    const out = toChatBody(
      body({
        input: [
          { role: 'assistant', content: 'checking' },
          { type: 'function_call', call_id: 'c1', name: 'f', arguments: '{}' },
        ],
      }),
    );
    expect(out.messages).toEqual([
      { role: 'assistant', content: 'checking', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    ]);
  });

  it('sends tools in the chat shape, whichever shape came in, with their settings', () => {
    const out = toChatBody(
      body({
        tools: [
          { type: 'function', name: 'a', description: 'A', parameters: { type: 'object' }, strict: null },
          { type: 'function', function: { name: 'b', parameters: { type: 'object' }, strict: true } },
        ],
        tool_choice: { type: 'function', name: 'b' },
        parallel_tool_calls: false,
      }),
    );
    expect(out.tools).toEqual([
      { type: 'function', function: { name: 'a', description: 'A', parameters: { type: 'object' } } },
      { type: 'function', function: { name: 'b', parameters: { type: 'object' }, strict: true } },
    ]);
    expect(out.tool_choice).toEqual({ type: 'function', function: { name: 'b' } });
    expect(out.parallel_tool_calls).toBe(false);
  });

  it('leaves tool settings out when there are no tools (chat upstreams refuse them alone)', () => {
    const out = toChatBody(body({ tool_choice: 'none', parallel_tool_calls: true }));
    expect(out.tool_choice).toBeUndefined();
    expect(out.parallel_tool_calls).toBeUndefined();
  });

  it('maps text.format onto response_format', () => {
    expect(toChatBody(body({ text: { format: { type: 'text' } } })).response_format).toBeUndefined();
    expect(toChatBody(body({ text: { format: { type: 'json_object' } } })).response_format).toEqual({ type: 'json_object' });
    expect(
      toChatBody(body({ text: { format: { type: 'json_schema', name: 's', schema: { type: 'object' }, strict: true } } })).response_format,
    ).toEqual({ type: 'json_schema', json_schema: { name: 's', schema: { type: 'object' }, strict: true } });
  });
});

describe('echoOf', () => {
  it('repeats the settings, with defaults where absent', () => {
    expect(echoOf(body({}))).toEqual({
      instructions: null,
      max_output_tokens: null,
      temperature: null,
      top_p: null,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [],
      metadata: {},
    });
  });

  it('normalises tools and a named tool_choice to the responses shapes', () => {
    const e = echoOf(
      body({
        instructions: 'x',
        max_output_tokens: 9,
        temperature: 1,
        top_p: 0.9,
        parallel_tool_calls: false,
        metadata: { k: 'v' },
        tools: [{ type: 'function', function: { name: 'b', description: 'B', parameters: { type: 'object' } } }],
        tool_choice: { type: 'function', function: { name: 'b' } },
      }),
    );
    expect(e).toEqual({
      instructions: 'x',
      max_output_tokens: 9,
      temperature: 1,
      top_p: 0.9,
      parallel_tool_calls: false,
      metadata: { k: 'v' },
      tools: [{ type: 'function', name: 'b', description: 'B', parameters: { type: 'object' }, strict: null }],
      tool_choice: { type: 'function', name: 'b' },
    });
  });
});
