import type { ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import type { ChatChunk } from '@gateway/upstreams';
import { ResponseStream } from 'openai/lib/responses/ResponseStream';
import { responsesSink } from './stream-sink';
import type { ResponseEcho } from './translate-request';

const echo: ResponseEcho = {
  instructions: null,
  max_output_tokens: null,
  temperature: null,
  top_p: null,
  parallel_tool_calls: true,
  tool_choice: 'auto',
  tools: [],
  metadata: { m: '1' },
};
const model = { config: { id: 'test/m' } } as unknown as ResolvedModel;
const usage = { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7, cost: '0.01' };

const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null): ChatChunk => ({
  id: 'x',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'upstream',
  choices: [{ index: 0, delta, finish_reason }],
});

function run(chunks: ChatChunk[], end: { finish: string | null } | { fail: GatewayError }) {
  const events: Array<Record<string, any>> = [];
  const sink = responsesSink(
    (type, payload) => {
      expect(payload.type).toBe(type);
      events.push(JSON.parse(JSON.stringify(payload)));
    },
    1_700_000_000,
    echo,
  );
  sink.start(model, 'req_abc');
  for (const c of chunks) sink.chunk(c);
  if ('fail' in end) sink.fail(end.fail);
  else sink.finish(usage, end.finish);
  return events;
}

/** Replays the events through the openai package's own ResponseStream, the code that validates and accumulates them. */
async function clientView(events: Array<Record<string, unknown>>) {
  const body = new ReadableStream({
    start(c) {
      for (const e of events) c.enqueue(new TextEncoder().encode(`${JSON.stringify(e)}\n`));
      c.close();
    },
  });
  const stream = ResponseStream.fromReadableStream(body);
  const deltas: string[] = [];
  stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
  return { final: await stream.finalResponse(), deltas };
}

describe('responses stream sink', () => {
  it('frames a text answer in the documented order, numbered from 0, ending with the full Response', async () => {
    const events = run([chunk({ role: 'assistant', content: '' }), chunk({ content: 'po' }), chunk({ content: 'ng' }), chunk({}, 'stop')], {
      finish: 'stop',
    });
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[0].response).toMatchObject({
      id: 'req_abc',
      object: 'response',
      status: 'in_progress',
      model: 'test/m',
      output: [],
      usage: null,
      metadata: { m: '1' },
    });
    expect(events[2]).toMatchObject({
      output_index: 0,
      item: { type: 'message', id: 'msg_abc', status: 'in_progress', role: 'assistant', content: [] },
    });
    expect(events[4]).toMatchObject({ item_id: 'msg_abc', output_index: 0, content_index: 0, delta: 'po', logprobs: [] });
    expect(events[6]).toMatchObject({ text: 'pong' });
    expect(events[8].item).toMatchObject({ status: 'completed', content: [{ type: 'output_text', text: 'pong', annotations: [] }] });
    expect(events[9].response).toMatchObject({
      status: 'completed',
      output_text: 'pong',
      usage: { input_tokens: 4, output_tokens: 3, total_tokens: 7, cost: '0.01' },
    });

    const { final, deltas } = await clientView(events);
    expect(deltas).toEqual(['po', 'ng']);
    expect(final).toMatchObject({ id: 'req_abc', status: 'completed', output_text: 'pong', model: 'test/m' });
  });

  it('streams a tool call as a function_call item with argument deltas', async () => {
    const events = run(
      [
        chunk({
          role: 'assistant',
          content: null,
          tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '' } }],
        }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }),
        chunk({}, 'tool_calls'),
      ],
      { finish: 'tool_calls' },
    );
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[2].item).toEqual({
      type: 'function_call',
      id: 'fc_abc_0',
      call_id: 'call_1',
      name: 'weather',
      arguments: '',
      status: 'in_progress',
    });
    expect(events[5]).toMatchObject({ item_id: 'fc_abc_0', output_index: 0, name: 'weather', arguments: '{"city":"Paris"}' });

    const { final } = await clientView(events);
    expect(final.output).toEqual([
      expect.objectContaining({ type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}', status: 'completed' }),
    ]);
  });

  it('closes the text before the first call, and numbers parallel calls in order', async () => {
    const events = run(
      [
        chunk({ content: 'checking' }),
        chunk({ tool_calls: [{ index: 0, id: 'c0', function: { name: 'a', arguments: '{}' } }] }),
        chunk({ tool_calls: [{ index: 1, id: 'c1', function: { name: 'b', arguments: '{}' } }] }),
      ],
      { finish: 'tool_calls' },
    );
    const types = events.map((e) => e.type);
    expect(types.indexOf('response.output_item.done')).toBeLessThan(types.lastIndexOf('response.output_item.added'));
    const { final } = await clientView(events);
    expect(final.output.map((i) => [i.type, i.id])).toEqual([
      ['message', 'msg_abc'],
      ['function_call', 'fc_abc_0'],
      ['function_call', 'fc_abc_1'],
    ]);
    expect(final.output_text).toBe('checking');
  });

  it('ends a cut-off answer with response.incomplete', async () => {
    const events = run([chunk({ content: 'one two' }, 'length')], { finish: 'length' });
    expect(events[events.length - 1]).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
    });
    expect((await clientView(events)).final.status).toBe('incomplete');
  });

  it('still ends an empty answer with one empty message', async () => {
    const events = run([chunk({ role: 'assistant', content: '' })], { finish: 'stop' });
    expect((await clientView(events)).final.output).toEqual([
      expect.objectContaining({ type: 'message', content: [expect.objectContaining({ text: '' })] }),
    ]);
  });

  it('streams a refusal as a refusal part', async () => {
    const events = run([chunk({ refusal: 'No' }), chunk({ refusal: '.' })], { finish: 'stop' });
    expect(events.map((e) => e.type)).toContain('response.refusal.done');
    expect((await clientView(events)).final.output[0]).toMatchObject({ content: [{ type: 'refusal', refusal: 'No.' }] });
  });

  it('ends a broken stream with response.failed carrying the error and what was delivered', async () => {
    const events = run([chunk({ content: 'part0 ' }), chunk({ content: 'part1 ' })], {
      fail: new GatewayError('upstream_unavailable', 'The upstream stream broke'),
    });
    const last = events[events.length - 1];
    expect(last).toMatchObject({
      type: 'response.failed',
      response: {
        status: 'failed',
        error: { code: 'upstream_unavailable', message: 'The upstream stream broke' },
        usage: null,
        output: [{ status: 'incomplete' }],
      },
    });
    const { final } = await clientView(events);
    expect(final).toMatchObject({ status: 'failed', output_text: 'part0 part1 ', error: { code: 'upstream_unavailable' } });
  });
});
