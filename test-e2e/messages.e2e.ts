import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { FAKE_ANTHROPIC_KEY, startFakeAnthropic } from './support/fake-anthropic';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { TEXT_PRICE } from './support/config';
import { nano } from './support/money';
import {
  expectChargedForDelivered,
  expectLedgerInvariants,
  settled,
  type Mode,
  type TestGateway,
  usageRecord,
  useGatewaySuite,
} from './support/harness';

const KEY_ENV = 'GW_E2E_ANTHROPIC_KEY';

/** One model per upstream behaviour; every failing behaviour on its own endpoint, so no circuit is shared. */
function messagesConfig(anthropicUrl: string, openaiUrl: string) {
  const text = (id: string, endpoints: Array<[string, string]>) => ({
    id,
    name: id,
    category: 'text',
    status: 'available',
    context_length: 4096,
    max_output_tokens: 100,
    pricing: TEXT_PRICE,
    endpoints: endpoints.map(([provider, model]) => ({ provider, model })),
  });
  return {
    providers: [
      { id: 'anth', kind: 'anthropic', base_url: anthropicUrl, api_key_env: KEY_ENV, timeout_ms: 10_000 },
      { id: 'oai', kind: 'openai', base_url: openaiUrl, timeout_ms: 10_000 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      text('msg/claude', [['anth', 'ok']]),
      text('msg/claude-tools', [['anth', 'tool-use']]),
      text('msg/claude-stop', [['anth', 'stop']]),
      text('msg/claude-echo', [['anth', 'echo']]),
      text('msg/claude-529', [
        ['anth', 'status-529'],
        ['anth', 'ok'],
      ]),
      text('msg/claude-500', [
        ['anth', 'status-500'],
        ['anth', 'ok'],
      ]),
      text('msg/claude-400', [
        ['anth', 'status-400'],
        ['anth', 'ok'],
      ]),
      text('msg/claude-break', [['anth', 'break-3']]),
      text('msg/claude-error', [['anth', 'error-3']]),
      text('msg/gpt', [['oai', 'ok']]),
      text('msg/gpt-tools', [['oai', 'tool-call']]),
      text('msg/gpt-echo', [['oai', 'echo']]),
      text('msg/gpt-break', [['oai', 'break-3']]),
      text('msg/sim', [['sim', 'sim-1']]),
    ],
  };
}

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather',
  input_schema: { type: 'object' as const, properties: { city: { type: 'string' } }, required: ['city'] },
};

/** Raw SSE frames of a streamed call, for checking the framing the SDK hides. */
function framesOf(text: string): Array<{ event: string; data: any }> {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((f) => {
      const event = /^event: (.*)$/m.exec(f)?.[1] ?? '';
      const data = /^data: (.*)$/m.exec(f)?.[1] ?? '';
      return { event, data: JSON.parse(data) };
    });
}

describe.each(['embedded', 'fleet'] as Mode[])('POST /v1/messages through the %s gateway', (mode) => {
  let anth: FakeUpstream;
  let oai: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string };
  let client: Anthropic;

  const upstreams = async () => {
    process.env[KEY_ENV] = FAKE_ANTHROPIC_KEY;
    return Promise.all([startFakeAnthropic(), startFakeOpenAI()]);
  };
  useGatewaySuite(mode, { upstreams, config: ([a, o]) => messagesConfig(a.url, o.url), credits: 50 }, (s) => {
    ({
      upstreams: [anth, oai],
      gw,
      acct,
    } = s);
    client = new Anthropic({ apiKey: acct.key, baseURL: gw.url, maxRetries: 0 });
  });

  // The SDK sends its key as a Bearer token; raw calls use the message API's own header, x-api-key.
  const post = (body: unknown) =>
    fetch(`${gw.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': acct.key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const record = (requestId: string) => usageRecord(gw, acct.accountId, requestId);
  const ask = { max_tokens: 50, messages: [{ role: 'user' as const, content: 'ping' }] };

  it('answers messages.create from a message-API upstream, with the native headers upstream and the exact charge', async () => {
    const { data, response } = await client.messages.create({ model: 'msg/claude', ...ask }).withResponse();
    const requestId = response.headers.get('x-gateway-request-id')!;
    expect(data).toEqual({
      id: `msg_${requestId}`,
      type: 'message',
      role: 'assistant',
      model: 'msg/claude',
      content: [{ type: 'text', text: 'pong' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 1, cost: '0.005' },
    });
    const sent = anth.requests[anth.requests.length - 1];
    expect(sent.headers).toMatchObject({ 'x-api-key': FAKE_ANTHROPIC_KEY, 'anthropic-version': '2023-06-01' });
    expect(sent.body).toEqual({ model: 'ok', max_tokens: 50, messages: [{ role: 'user', content: 'ping' }], stream: false });
    await settled(gw, acct.accountId);
    expect(await record(requestId)).toMatchObject({ status: 'succeeded', tokens_prompt: 3, tokens_completion: 1, cost: '5000000' });
  });

  it('streams from a message-API upstream with the full event framing', async () => {
    const stream = client.messages.stream({ model: 'msg/claude', ...ask });
    let text = '';
    stream.on('text', (t) => (text += t));
    const final = await stream.finalMessage();
    expect(text).toBe('pong');
    expect(final).toMatchObject({
      model: 'msg/claude',
      id: expect.stringMatching(/^msg_req_/),
      content: [{ type: 'text', text: 'pong' }],
      stop_reason: 'end_turn',
      usage: { input_tokens: 3, output_tokens: 1 },
    });

    const r = await post({ model: 'msg/claude', ...ask, stream: true });
    expect(r.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const frames = framesOf(await r.text());
    expect(frames.map((f) => f.event)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const f of frames) expect(f.data.type).toBe(f.event);
    expect(frames[0].data.message).toMatchObject({ id: `msg_${r.headers.get('x-gateway-request-id')}`, model: 'msg/claude', content: [] });
    expect(frames[6].data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { input_tokens: 3, output_tokens: 1, cost: '0.005' },
    });
  });

  it.each([
    ['an OpenAI-compatible', 'msg/gpt', /^pong$/],
    ['the simulated', 'msg/sim', /^This is a simulated reply from sim-1 \(\w+\)\. You said: ping$/],
  ])('answers create and stream from %s upstream in the message shape', async (_kind, model, expected) => {
    const made = await client.messages.create({ model, ...ask });
    expect(made).toMatchObject({
      model,
      type: 'message',
      stop_reason: 'end_turn',
      content: [{ type: 'text', text: expect.stringMatching(expected) }],
    });
    const stream = client.messages.stream({ model, ...ask });
    let text = '';
    stream.on('text', (t) => (text += t));
    const final = await stream.finalMessage();
    expect(text).toBe((made.content[0] as Anthropic.TextBlock).text);
    expect(final).toMatchObject({
      model,
      content: made.content,
      stop_reason: 'end_turn',
      usage: { input_tokens: made.usage.input_tokens, output_tokens: made.usage.output_tokens },
    });
  });

  it.each([
    ['a message-API', 'msg/claude-tools'],
    ['an OpenAI-compatible', 'msg/gpt-tools'],
  ])('returns tool_use from %s upstream, created and streamed', async (_kind, model) => {
    const req = { model, ...ask, tools: [weatherTool], tool_choice: { type: 'auto' as const } };
    const made = await client.messages.create(req);
    expect(made.stop_reason).toBe('tool_use');
    const use = made.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    expect(use).toMatchObject({ name: 'get_weather', input: { city: 'Paris' }, id: expect.any(String) });
    const final = await client.messages.stream(req).finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual(made.content);
  });

  it('completes a tool round trip: tool_use answer, then tool_result follow-up', async () => {
    const first = await client.messages.create({ model: 'msg/claude-tools', ...ask, tools: [weatherTool] });
    const use = first.content.find((b) => b.type === 'tool_use') as Anthropic.ToolUseBlock;
    const followUp = {
      model: 'msg/claude-tools',
      max_tokens: 50,
      tools: [weatherTool],
      messages: [
        { role: 'user' as const, content: 'Weather in Paris?' },
        { role: 'assistant' as const, content: first.content },
        { role: 'user' as const, content: [{ type: 'tool_result' as const, tool_use_id: use.id, content: 'sunny, 21C' }] },
      ],
    };
    const second = await client.messages.create(followUp);
    expect(second).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'The tool said: sunny, 21C' }] });
    expect(anth.requests[anth.requests.length - 1].body.messages).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'toolu_fake1', name: 'get_weather', input: { city: 'Paris' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_fake1', content: 'sunny, 21C' }] },
    ]);

    // The same conversation to a chat upstream arrives as tool_calls and a tool turn.
    const echoed = await client.messages.create({ ...followUp, model: 'msg/gpt-echo' });
    expect(JSON.parse((echoed.content[0] as Anthropic.TextBlock).text)).toEqual([
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [{ id: 'toolu_fake1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'toolu_fake1', content: 'sunny, 21C' },
    ]);
  });

  it('translates system, stop_sequences, sampling, metadata, tools and tool_choice to either upstream', async () => {
    const req = {
      max_tokens: 20,
      system: 'Be brief.',
      stop_sequences: ['END'],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: 'user-7' },
      tools: [weatherTool],
      tool_choice: { type: 'tool' as const, name: 'get_weather', disable_parallel_tool_use: true },
      messages: [{ role: 'user' as const, content: 'hi' }],
    };
    await client.messages.create({ ...req, model: 'msg/claude-echo' });
    expect(anth.requests[anth.requests.length - 1].body).toEqual({
      model: 'echo',
      max_tokens: 20,
      system: 'Be brief.',
      stop_sequences: ['END'],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: 'user-7' },
      tools: [weatherTool],
      tool_choice: { type: 'tool', name: 'get_weather', disable_parallel_tool_use: true },
      messages: [{ role: 'user', content: 'hi' }],
      stream: false,
    });
    await client.messages.create({ ...req, model: 'msg/gpt-echo' });
    expect(oai.requests[oai.requests.length - 1].body).toEqual({
      model: 'echo',
      max_tokens: 20,
      stop: ['END'],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      user: 'user-7',
      stream: false,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hi' },
      ],
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'Current weather', parameters: weatherTool.input_schema } }],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
    });
  });

  it('serves message-API models on /v1/chat/completions too (the protocol is chat in, chat out)', async () => {
    const openai = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: weatherTool.input_schema } }];
    const made = await openai.chat.completions.create({ model: 'msg/claude-tools', messages: [{ role: 'user', content: 'Weather?' }], tools });
    expect(made.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        content: 'Let me check.',
        tool_calls: [{ id: 'toolu_fake1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
    });
    expect(made.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 7 });
    let text = '';
    let args = '';
    let usage: unknown;
    for await (const chunk of await openai.chat.completions.create({
      model: 'msg/claude-tools',
      messages: [{ role: 'user', content: 'Weather?' }],
      tools,
      stream: true,
    })) {
      text += chunk.choices[0]?.delta?.content ?? '';
      args += chunk.choices[0]?.delta?.tool_calls?.[0]?.function?.arguments ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect({ text, args: JSON.parse(args) }).toEqual({ text: 'Let me check.', args: { city: 'Paris' } });
    expect(usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 7 });
    // Chat-only fields (stream_options) never reach the message API, which would refuse them; its required
    // max_tokens gets the model's max_output_tokens (what the hold reserved) when the chat call has none.
    expect(anth.requests[anth.requests.length - 1].body).toMatchObject({
      model: 'tool-use',
      max_tokens: 100,
      stream: true,
      tools: [{ name: 'get_weather' }],
    });
    expect(anth.requests[anth.requests.length - 1].body.stream_options).toBeUndefined();
  });

  it('reports which stop sequence ended the answer, created and streamed', async () => {
    const req = { model: 'msg/claude-stop', ...ask, stop_sequences: ['END'] };
    expect(await client.messages.create(req)).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
    expect(await client.messages.stream(req).finalMessage()).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'END' });
  });

  it.each([
    ['an overloaded (529)', 'msg/claude-529'],
    ['a failing (500)', 'msg/claude-500'],
  ])('fails over from %s message-API endpoint', async (_why, model) => {
    const { data, response } = await client.messages.create({ model, ...ask }).withResponse();
    expect(data.content).toEqual([{ type: 'text', text: 'pong' }]);
    const final = await client.messages.stream({ model, ...ask }).finalMessage();
    expect(final.content).toEqual([{ type: 'text', text: 'pong' }]);
    await settled(gw, acct.accountId);
    expect(await record(response.headers.get('x-gateway-request-id')!)).toMatchObject({ status: 'succeeded', attempts: 2, fallback_used: true });
  });

  it("refuses with 400 on the upstream's 400, without failing over or charging", async () => {
    const n = anth.requests.length;
    const r = await post({ model: 'msg/claude-400', ...ask });
    expect(r.status).toBe(400);
    const { error } = await r.json();
    expect(error).toMatchObject({ code: 'invalid_request', request_id: expect.stringMatching(/^req_/) });
    expect(anth.requests.length - n).toBe(1);
    await settled(gw, acct.accountId);
    expect(await record(error.request_id)).toMatchObject({ status: 'failed', cost: '0' });
  });

  it.each([
    ['a cut connection (message-API)', 'msg/claude-break'],
    ['an error event (message-API)', 'msg/claude-error'],
    ['a cut connection (OpenAI-compatible)', 'msg/gpt-break'],
  ])('ends a stream broken by %s with an error event, charging only the delivered tokens', async (_why, model) => {
    const stream = client.messages.stream({ model, ...ask });
    let text = '';
    stream.on('text', (t) => (text += t));
    await expect(stream.finalMessage()).rejects.toMatchObject({ error: { type: 'error', error: { type: 'api_error' } } });
    expect(text).toBe('part0 part1 part2 ');

    const r = await post({ model, ...ask, stream: true });
    expect(r.status).toBe(200);
    const frames = framesOf(await r.text());
    const last = frames[frames.length - 1];
    const requestId = r.headers.get('x-gateway-request-id')!;
    expect(last).toEqual({
      event: 'error',
      data: { type: 'error', error: { type: 'api_error', message: expect.any(String) }, request_id: requestId },
    });
    expect(frames.map((f) => f.event)).not.toContain('message_stop');
    const delivered = frames
      .filter((f) => f.data.delta?.type === 'text_delta')
      .map((f) => f.data.delta.text)
      .join('');
    expect(delivered).toBe('part0 part1 part2 ');
    await expectChargedForDelivered(gw, acct.accountId, requestId, { prompt: 'ping', delivered, price: TEXT_PRICE });
  });

  describe('bad input changes nothing', () => {
    const msgs = [{ role: 'user', content: 'x' }];
    it.each([
      ['no max_tokens', 400, 'invalid_request', { model: 'msg/claude', messages: msgs }],
      ['max_tokens 0', 400, 'invalid_request', { model: 'msg/claude', messages: msgs, max_tokens: 0 }],
      ['max_tokens as a string', 400, 'invalid_request', { model: 'msg/claude', messages: msgs, max_tokens: '10' }],
      [
        'a system role in messages',
        400,
        'invalid_request',
        { model: 'msg/claude', messages: [{ role: 'system', content: 'x' }, ...msgs], max_tokens: 10 },
      ],
      ['empty messages', 400, 'invalid_request', { model: 'msg/claude', messages: [], max_tokens: 10 }],
      ['messages as a string', 400, 'invalid_request', { model: 'msg/claude', messages: 'x', max_tokens: 10 }],
      ['system as a number', 400, 'invalid_request', { model: 'msg/claude', messages: msgs, max_tokens: 10, system: 5 }],
      ['stream as a string', 400, 'invalid_request', { model: 'msg/claude', messages: msgs, max_tokens: 10, stream: 'yes' }],
      ['temperature above 1', 400, 'invalid_request', { model: 'msg/claude', messages: msgs, max_tokens: 10, temperature: 1.5 }],
      ['a tool without input_schema', 400, 'invalid_request', { model: 'msg/claude', messages: msgs, max_tokens: 10, tools: [{ name: 'f' }] }],
      ['no model', 400, 'invalid_request', { messages: msgs, max_tokens: 10 }],
      ['an unknown model', 409, 'model_unavailable', { model: 'nobody/nothing', messages: msgs, max_tokens: 10 }],
    ])('%s → %i %s', async (_name, status, code, body) => {
      const before = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]);
      const r = await post(body);
      expect(r.status).toBe(status);
      expect((await r.json()).error).toMatchObject({ code, request_id: expect.stringMatching(/^req_/) });
      const after = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]);
      expect(after).toEqual(before);
    });

    it('reaches the SDK as its typed 400 error', async () => {
      await expect(client.messages.create({ model: 'msg/claude', messages: [{ role: 'user', content: 'x' }] } as never)).rejects.toBeInstanceOf(
        Anthropic.BadRequestError,
      );
    });
  });

  it('charges add up: what the answers report is what the ledger took', async () => {
    const fresh = await gw.account(5);
    const c = new Anthropic({ apiKey: fresh.key, baseURL: gw.url, maxRetries: 0 });
    const costs: string[] = [];
    for (const model of ['msg/claude', 'msg/gpt', 'msg/sim'])
      costs.push(((await c.messages.create({ model, ...ask })).usage as unknown as { cost: string }).cost);
    for (const model of ['msg/claude-tools', 'msg/sim']) {
      const stream = c.messages.stream({ model, ...ask, tools: [weatherTool] });
      stream.on('streamEvent', (e) => {
        if (e.type === 'message_delta') costs.push((e.usage as unknown as { cost: string }).cost);
      });
      await stream.finalMessage();
    }
    expect(costs).toHaveLength(5);
    await settled(gw, fresh.accountId);
    const [a] = await gw.ledger(`SELECT total_usage::text AS u, held::text AS h FROM accounts WHERE id = $1`, [fresh.accountId]);
    expect(a).toEqual({ u: costs.reduce((s, x) => s + nano(x), 0n).toString(), h: '0' });
    const [recs] = await gw.ledger(`SELECT count(*)::int AS n, sum(total_cost)::text AS s FROM usage_records WHERE account_id = $1`, [
      fresh.accountId,
    ]);
    expect(recs).toEqual({ n: 5, s: a.u });
    await expectLedgerInvariants(gw);
  });
});
