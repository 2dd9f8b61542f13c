import { responsesBody } from './schema';

const ok = (extra: Record<string, unknown>) => responsesBody.safeParse({ model: 'm', input: 'hi', ...extra });
const problems = (extra: Record<string, unknown>) => {
  const r = ok(extra);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('responses body', () => {
  it('accepts the minimal body and nulls for every optional field', () => {
    expect(ok({}).success).toBe(true);
    const nulls = Object.fromEntries(
      [
        'instructions',
        'max_output_tokens',
        'stream',
        'tools',
        'tool_choice',
        'parallel_tool_calls',
        'temperature',
        'top_p',
        'metadata',
        'store',
        'user',
        'text',
        'previous_response_id',
        'conversation',
        'prompt',
        'background',
      ].map((k) => [k, null]),
    );
    expect(ok(nulls).success).toBe(true);
  });

  it('drops fields outside the contract instead of refusing them', () => {
    const r = ok({ include: ['x'], truncation: 'auto', reasoning: { effort: 'low' }, service_tier: 'auto' });
    expect(r.success && Object.keys(r.data)).toEqual(['model', 'input']);
  });

  it.each([
    [{ temperature: 3 }, 'temperature'],
    [{ temperature: -0.1 }, 'temperature'],
    [{ top_p: 1.5 }, 'top_p'],
    [{ max_output_tokens: 0 }, 'max_output_tokens'],
    [{ max_output_tokens: 1.5 }, 'max_output_tokens'],
    [{ stream: 'yes' }, 'stream'],
    [{ metadata: ['a'] }, 'metadata'],
    [{ input: '' }, 'input'],
    [{ input: [] }, 'input'],
    [{ input: 42 }, 'input'],
    [{ model: '' }, 'model'],
    [{ previous_response_id: 'resp_1' }, 'previous_response_id'],
    [{ conversation: 'conv_1' }, 'conversation'],
    [{ prompt: { id: 'pmpt_1' } }, 'prompt'],
    [{ background: true }, 'background'],
    [{ tools: [{ type: 'web_search' }] }, 'tools.0'],
    [{ tools: [{ type: 'function' }] }, 'tools.0'],
    [{ tool_choice: 'sometimes' }, 'tool_choice'],
    [{ tool_choice: 'required' }, 'tool_choice'],
    [{ tools: [{ type: 'function', name: 'a' }], tool_choice: { type: 'function', name: 'b' } }, 'tool_choice'],
    [{ text: { format: { type: 'xml' } } }, 'text.format.type'],
    [{ input: [{ type: 'item_reference', id: 'x' }] }, 'input.0.type'],
    [{ input: [{ role: 'wizard', content: 'x' }] }, 'input.0.role'],
    [{ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }] }, 'input.0.content.0.type'],
    [{ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'f' }] }] }, 'input.0.content.0.image_url'],
    [{ input: [{ role: 'system', content: [{ type: 'input_image', image_url: 'https://x/y.png' }] }] }, 'input.0.content'],
    [{ input: [{ type: 'function_call', call_id: 'c', name: 'f' }] }, 'input.0.arguments'],
  ])('refuses %j at %s', (extra, path) => {
    expect(problems(extra).some((p) => p.startsWith(`${path}:`))).toBe(true);
  });

  it('says why stateful fields are refused', () => {
    expect(problems({ previous_response_id: 'resp_1' })[0]).toMatch(/stores no responses or conversations/);
  });

  it('accepts both tool shapes and both named tool_choice shapes', () => {
    const tools = [
      { type: 'function', name: 'a', parameters: { type: 'object' }, strict: true },
      { type: 'function', function: { name: 'b' } },
    ];
    expect(ok({ tools, tool_choice: { type: 'function', name: 'b' } }).success).toBe(true);
    expect(ok({ tools, tool_choice: { type: 'function', function: { name: 'a' } } }).success).toBe(true);
    expect(ok({ tools, tool_choice: 'required', parallel_tool_calls: false }).success).toBe(true);
  });

  it('reads an item without type as a message', () => {
    const r = ok({ input: [{ role: 'user', content: [{ type: 'input_text', text: 'a' }] }] });
    expect(r.success && r.data.input).toEqual([{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'a' }] }]);
  });
});
