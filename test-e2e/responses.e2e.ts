import OpenAI from 'openai';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { TEXT_PRICE } from './support/config';
import { expectChargedForDelivered, settled, type Mode, type TestGateway, useGatewaySuite } from './support/harness';

/** This file's own catalogue: one model per behaviour, so a failing endpoint here opens no circuit elsewhere. */
function config(fakeUrl: string) {
  const text = (id: string, provider: string, model: string) => ({
    id,
    name: id,
    category: 'text',
    status: 'available',
    context_length: 4096,
    max_output_tokens: 100,
    pricing: TEXT_PRICE,
    endpoints: [{ provider, model }],
  });
  return {
    providers: [
      { id: 'fake', kind: 'openai', base_url: fakeUrl, timeout_ms: 5_000 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      text('resp/ok', 'fake', 'ok'),
      text('resp/echo', 'fake', 'echo'),
      text('resp/tools', 'fake', 'tool-call'),
      text('resp/words', 'fake', 'words-20'),
      text('resp/break', 'fake', 'break-3'),
      text('resp/sim', 'sim', 'sim-1'),
      text('resp/down', 'fake', 'status-503'),
    ],
  };
}

// A shared 2-core machine: generous per-test time, never tight timings.
jest.setTimeout(20_000);

const weather = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

describe.each(['embedded', 'fleet'] as Mode[])('POST /v1/responses through the %s gateway', (mode) => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string; keyId: string };
  let client: OpenAI;

  useGatewaySuite(mode, { upstreams: startFakeOpenAI, config: (f) => config(f.url), credits: 50 }, (s) => {
    ({ upstreams: fake, gw, acct } = s);
    client = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });

  const post = (body: unknown) =>
    fetch(`${gw.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const lastUpstream = () => fake.requests[fake.requests.length - 1].body;
  const generation = async (id: string) =>
    (await (await fetch(`${gw.url}/v1/generation?id=${id}`, { headers: { authorization: `Bearer ${acct.key}` } })).json()).data;

  it('answers a string input in the Responses shape and charges exactly', async () => {
    const { data, response } = await client.responses.create({ model: 'resp/ok', input: 'ping' }).withResponse();
    const id = response.headers.get('x-gateway-request-id')!;
    expect(data).toMatchObject({
      id,
      object: 'response',
      status: 'completed',
      error: null,
      incomplete_details: null,
      model: 'resp/ok',
      output_text: 'pong',
      instructions: null,
      max_output_tokens: null,
      temperature: null,
      top_p: null,
      parallel_tool_calls: true,
      tool_choice: 'auto',
      tools: [],
      metadata: {},
      usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4, cost: '0.005' },
    });
    expect(data.output).toEqual([
      {
        type: 'message',
        id: id.replace(/^req_/, 'msg_'),
        status: 'completed',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'pong', annotations: [] }],
      },
    ]);
    expect(Math.abs(data.created_at - Date.now() / 1000)).toBeLessThan(60);
    expect(lastUpstream().messages).toEqual([{ role: 'user', content: 'ping' }]);
    await settled(gw, acct.accountId);
    expect(await generation(id)).toMatchObject({
      model: 'resp/ok',
      streamed: false,
      status: 'succeeded',
      tokens_prompt: 3,
      tokens_completion: 1,
      cost: '0.005',
    });
  });

  it('sends instructions as their own system turn, maps the settings, echoes metadata and never forwards it', async () => {
    const data = await client.responses.create({
      model: 'resp/echo',
      instructions: 'Answer in French.',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look at this' },
            { type: 'input_image', image_url: 'https://example.com/cat.png', detail: 'low' },
          ],
        },
        {
          type: 'message',
          id: 'msg_earlier',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'A cat.', annotations: [] }],
        },
        { role: 'user', content: 'Its name?' },
      ],
      metadata: { run: 'r-42' },
      store: true,
      user: 'end-user-1',
      temperature: 0.5,
      top_p: 0.9,
      max_output_tokens: 50,
    });
    const sent = lastUpstream();
    expect(Object.keys(sent).sort()).toEqual(['max_tokens', 'messages', 'model', 'stream', 'temperature', 'top_p', 'user']);
    expect(sent).toMatchObject({ model: 'echo', max_tokens: 50, temperature: 0.5, top_p: 0.9, user: 'end-user-1' });
    const messages = [
      { role: 'system', content: 'Answer in French.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look at this' },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.png', detail: 'low' } },
        ],
      },
      { role: 'assistant', content: 'A cat.' },
      { role: 'user', content: 'Its name?' },
    ];
    expect(sent.messages).toEqual(messages);
    expect(JSON.parse(data.output_text)).toEqual(messages);
    expect(data).toMatchObject({ metadata: { run: 'r-42' }, instructions: 'Answer in French.', temperature: 0.5, top_p: 0.9, max_output_tokens: 50 });
  });

  it('prices and holds the same with or without metadata', async () => {
    const holdOf = async (metadata?: Record<string, string>) => {
      const { data, response } = await client.responses.create({ model: 'resp/ok', input: 'ping', metadata }).withResponse();
      const [hold] = await gw.ledger(`SELECT amount::text AS a FROM holds WHERE request_id = $1`, [response.headers.get('x-gateway-request-id')]);
      return { hold: hold.a, cost: (data.usage as unknown as { cost: string }).cost };
    };
    const big = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, 'v'.repeat(512)]));
    expect(await holdOf(big)).toEqual(await holdOf());
  });

  it('answers a tool call and takes the follow-up with function_call_output', async () => {
    const first = await client.responses.create({
      model: 'resp/tools',
      input: 'Weather in Paris?',
      tools: [weather],
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
    expect(lastUpstream()).toMatchObject({
      tools: [
        { type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: weather.parameters, strict: false } },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
    });
    expect(first.status).toBe('completed');
    expect(first.output).toEqual([
      {
        type: 'function_call',
        id: `${first.id.replace(/^req_/, 'fc_')}_0`,
        call_id: 'call_fake1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        status: 'completed',
      },
    ]);
    expect(first.tools).toEqual([weather]);
    expect(first.usage).toMatchObject({ input_tokens: 10, output_tokens: 7, total_tokens: 17 });

    const follow = await client.responses.create({
      model: 'resp/echo',
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: 'call_fake1', output: '{"temp_c":21}' },
      ],
      tools: [weather],
    });
    expect(JSON.parse(follow.output_text)).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_fake1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_fake1', content: '{"temp_c":21}' },
    ]);
  });

  it('accepts tools and a named tool_choice in the chat shape, and echoes them in the responses shape', async () => {
    const r = await post({
      model: 'resp/tools',
      input: 'Weather?',
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'lookup' } },
    });
    expect(r.status).toBe(200);
    const body = await r.json();
    expect(lastUpstream()).toMatchObject({
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
      tool_choice: { type: 'function', function: { name: 'lookup' } },
    });
    expect(body.tools).toEqual([{ type: 'function', name: 'lookup', description: null, parameters: { type: 'object' }, strict: null }]);
    expect(body.tool_choice).toEqual({ type: 'function', name: 'lookup' });
    expect(body.output[0]).toMatchObject({ type: 'function_call', name: 'lookup' });
  });

  it('streams text through responses.stream() in the documented order; finalResponse() has the whole answer', async () => {
    const stream = client.responses.stream({ model: 'resp/words', input: 'count' });
    const types: string[] = [];
    const deltas: string[] = [];
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') deltas.push(event.delta);
    }
    const final = await stream.finalResponse();
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array(20).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(deltas.join('')).toBe(Array.from({ length: 20 }, (_, i) => `w${i + 1}`).join(' '));
    expect(final).toMatchObject({
      status: 'completed',
      model: 'resp/words',
      output_text: deltas.join(''),
      usage: { input_tokens: 5, output_tokens: 20, cost: '0.045' },
    });
    await settled(gw, acct.accountId);
    expect(await generation(final.id)).toMatchObject({ streamed: true, status: 'succeeded', tokens_completion: 20, cost: '0.045' });
  });

  it('frames every event as `event: <type>` + `data: {type, sequence_number, ...}` on the wire', async () => {
    const r = await post({ model: 'resp/ok', input: 'ping', stream: true });
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = (await r.text())
      .split('\n\n')
      .filter(Boolean)
      .map((f) => /^event: (\S+)\ndata: (.*)$/s.exec(f)!);
    expect(frames.every(Boolean)).toBe(true);
    for (const [i, [, type, data]] of frames.entries()) expect(JSON.parse(data)).toMatchObject({ type, sequence_number: i });
    expect(JSON.parse(frames[frames.length - 1][2]).response).toMatchObject({
      id: r.headers.get('x-gateway-request-id'),
      status: 'completed',
      output_text: 'pong',
    });
  });

  it('streams a tool call as a function_call item with argument deltas (responses.create stream: true)', async () => {
    const stream = await client.responses.create({ model: 'resp/tools', input: 'Weather in Paris?', tools: [weather], stream: true });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
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
    const done = events[5] as OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent;
    expect(done).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    const completed = events[7] as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.output).toEqual([
      expect.objectContaining({
        type: 'function_call',
        call_id: 'call_fake1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        status: 'completed',
      }),
    ]);
  });

  it('is incomplete with reason max_output_tokens when the model stops on length, streamed or not', async () => {
    const plain = await client.responses.create({ model: 'resp/sim', input: 'tell me a story', max_output_tokens: 3 });
    expect(plain).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, usage: { output_tokens: 3 } });
    const stream = client.responses.stream({ model: 'resp/sim', input: 'tell me a story', max_output_tokens: 3 });
    const types: string[] = [];
    for await (const e of stream) types.push(e.type);
    expect(types[types.length - 1]).toBe('response.incomplete');
    expect(await stream.finalResponse()).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
      output_text: plain.output_text,
    });
  });

  it('ends a stream broken mid-way with response.failed and charges only the delivered tokens', async () => {
    const stream = client.responses.stream({ model: 'resp/break', input: 'ping' });
    const types: string[] = [];
    let text = '';
    for await (const e of stream) {
      types.push(e.type);
      if (e.type === 'response.output_text.delta') text += e.delta;
    }
    const final = await stream.finalResponse();
    expect(text).toBe('part0 part1 part2 ');
    expect(types[types.length - 1]).toBe('response.failed');
    expect(final).toMatchObject({ status: 'failed', error: { code: 'upstream_unavailable' }, output_text: text, usage: null });
    await expectChargedForDelivered(gw, acct.accountId, final.id, { prompt: 'ping', delivered: text, price: TEXT_PRICE });
  });

  it('answers a stream that fails before its first byte with a JSON error and a real status, holding nothing', async () => {
    const r = await post({ model: 'resp/down', input: 'ping', stream: true });
    expect(r.status).toBe(503);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const { error } = await r.json();
    expect(error.code).toBe('upstream_unavailable');
    await settled(gw, acct.accountId);
    const [rec] = await gw.ledger(`SELECT status, total_cost::text AS c FROM usage_records WHERE request_id = $1`, [error.request_id]);
    expect(rec).toEqual({ status: 'failed', c: '0' });
  });

  it('refuses previous_response_id through the openai client with 400 invalid_request', async () => {
    const err = await client.responses.create({ model: 'resp/ok', input: 'ping', previous_response_id: 'resp_123' }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.status).toBe(400);
    expect(err.code).toBe('invalid_request');
    expect(err.message).toMatch(/previous_response_id/);
  });

  describe('bad input changes nothing', () => {
    const input = 'ping';
    it.each([
      ['temperature 3', 400, 'invalid_request', { model: 'resp/ok', input, temperature: 3 }],
      ['top_p 1.5', 400, 'invalid_request', { model: 'resp/ok', input, top_p: 1.5 }],
      ['previous_response_id', 400, 'invalid_request', { model: 'resp/ok', input, previous_response_id: 'resp_1' }],
      ['no input', 400, 'invalid_request', { model: 'resp/ok' }],
      ['empty input', 400, 'invalid_request', { model: 'resp/ok', input: [] }],
      ['no model', 400, 'invalid_request', { input }],
      ['a numeric input', 400, 'invalid_request', { model: 'resp/ok', input: 42 }],
      ['a numeric model', 400, 'invalid_request', { model: 7, input }],
      ['stream as a string', 400, 'invalid_request', { model: 'resp/ok', input, stream: 'yes' }],
      ['metadata as an array', 400, 'invalid_request', { model: 'resp/ok', input, metadata: ['a'] }],
      ['a fractional max_output_tokens', 400, 'invalid_request', { model: 'resp/ok', input, max_output_tokens: 1.5 }],
      ['tools as a string', 400, 'invalid_request', { model: 'resp/ok', input, tools: 'get_weather' }],
      ['a hosted tool', 400, 'invalid_request', { model: 'resp/ok', input, tools: [{ type: 'web_search' }] }],
      [
        'tool_choice naming an undeclared tool',
        400,
        'invalid_request',
        { model: 'resp/ok', input, tools: [weather], tool_choice: { type: 'function', name: 'other' } },
      ],
      ['an unknown item type', 400, 'invalid_request', { model: 'resp/ok', input: [{ type: 'item_reference', id: 'msg_1' }] }],
      ['an unknown role', 400, 'invalid_request', { model: 'resp/ok', input: [{ role: 'wizard', content: 'x' }] }],
      ['an unknown model', 409, 'model_unavailable', { model: 'nobody/nothing', input }],
    ])('%s → %i %s', async (_name, status, code, body) => {
      const count = `SELECT count(*)::int AS n FROM holds WHERE account_id = $1`;
      const before = await gw.ledger(count, [acct.accountId]);
      const n = fake.requests.length;
      const r = await post(body);
      expect(r.status).toBe(status);
      expect((await r.json()).error).toMatchObject({ code, request_id: expect.stringMatching(/^req_/) });
      expect(await gw.ledger(count, [acct.accountId])).toEqual(before);
      expect(fake.requests.length).toBe(n);
    });
  });
});
