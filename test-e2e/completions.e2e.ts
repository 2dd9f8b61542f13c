import OpenAI from 'openai';
import { startFakeOpenAI, type FakeUpstream } from './support/fake-openai';
import { TEXT_PRICE } from './support/config';
import { textCost } from './support/money';
import { closedHold, expectChargedForDelivered, settled, usageRecord, type Mode, type TestGateway, useGatewaySuite } from './support/harness';

const modes: Mode[] = ['embedded', 'fleet'];

function config(fakeUrl: string) {
  const text = (id: string, endpoints: Array<[string, string]>) => ({
    id,
    name: id,
    category: 'text',
    status: 'available',
    context_length: 4096,
    max_output_tokens: 50,
    pricing: TEXT_PRICE,
    endpoints: endpoints.map(([provider, model]) => ({ provider, model })),
  });
  return {
    // Nothing here tests a timeout: a loaded machine must never time out an ordinary answer.
    providers: [
      { id: 'fake', kind: 'openai', base_url: fakeUrl, timeout_ms: 10_000 },
      { id: 'sim', kind: 'simulated' },
    ],
    models: [
      text('c/ok', [['fake', 'ok']]),
      text('c/echo', [['fake', 'echo']]),
      text('c/words', [['fake', 'words-6']]),
      text('c/failover', [
        ['fake', 'status-502'],
        ['fake', 'echo'],
      ]),
      text('c/break', [['fake', 'break-2']]),
      text('c/sim', [['sim', 's']]),
    ],
  };
}

describe.each(modes)('POST /v1/completions through the %s gateway', (mode) => {
  let fake: FakeUpstream;
  let gw: TestGateway;
  let acct: { accountId: string; key: string };
  let client: OpenAI;

  useGatewaySuite(mode, { upstreams: startFakeOpenAI, config: (f) => config(f.url), credits: 20 }, (s) => {
    ({ upstreams: fake, gw, acct } = s);
    client = new OpenAI({ apiKey: acct.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });

  it('wraps the prompt as one user message and unwraps the reply to text', async () => {
    const res = await client.completions.create({ model: 'c/echo', prompt: 'Say hi', max_tokens: 20, stop: ['\n'] });
    expect(res.object).toBe('text_completion');
    expect(res.model).toBe('c/echo');
    expect(JSON.parse(res.choices[0].text)).toEqual([{ role: 'user', content: 'Say hi' }]);
    const sent = fake.requests[fake.requests.length - 1].body;
    expect(sent).toMatchObject({ max_tokens: 20, stop: ['\n'] });
    expect(sent.prompt).toBeUndefined();
    expect((res.usage as any).cost).toBe('0.005');
  });

  it('answers one choice per prompt, in order, billed once for the whole batch', async () => {
    const r = await fetch(`${gw.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'c/echo', prompt: ['first', 'second', 'third'] }),
    });
    const body = await r.json();
    expect(body.choices.map((c: any) => [c.index, JSON.parse(c.text)[0].content])).toEqual([
      [0, 'first'],
      [1, 'second'],
      [2, 'third'],
    ]);
    expect(body.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 3, cost: '0.015' });
    await settled(gw, acct.accountId);
    const recs = await gw.ledger(`SELECT total_cost::text AS c, tokens_prompt FROM usage_records WHERE request_id = $1`, [
      r.headers.get('x-gateway-request-id'),
    ]);
    expect(recs).toEqual([{ c: '15000000', tokens_prompt: 9 }]);
  });

  it('fails over per prompt: each prompt of a batch gets its own failover and its own answer', async () => {
    const prompts = ['first', 'second', 'third'];
    const sent = fake.requests.length;
    const { data, response } = await client.completions.create({ model: 'c/failover', prompt: prompts }).withResponse();
    // The echo endpoint answers with the messages it got, so each choice shows which prompt it answers.
    expect(data.choices.map((c) => [c.index, JSON.parse(c.text)])).toEqual(prompts.map((p, i) => [i, [{ role: 'user', content: p }]]));
    expect(fake.requests.slice(sent).map((q) => [q.model, q.body.messages[0].content])).toEqual(
      prompts.flatMap((p) => [
        ['status-502', p],
        ['echo', p],
      ]),
    );
    const requestId = response.headers.get('x-gateway-request-id');
    // Only the answering calls are charged: 3 prompt and 1 completion tokens each.
    const charge = textCost(TEXT_PRICE, 3 * prompts.length, prompts.length).toString();
    expect(await closedHold(gw, acct.accountId, requestId)).toMatchObject({ state: 'settled', charge });
    expect(await usageRecord(gw, acct.accountId, requestId)).toMatchObject({
      status: 'succeeded',
      attempts: 2 * prompts.length,
      fallback_used: true,
      cost: charge,
    });
  });

  it('streams text chunks the openai client reads, ending with usage, and settles that usage', async () => {
    const { data: stream, response } = await client.completions.create({ model: 'c/words', prompt: 'count', stream: true }).withResponse();
    let text = '';
    let usage: any;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.text ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('w1 w2 w3 w4 w5 w6');
    expect(usage).toMatchObject({ completion_tokens: 6, cost: '0.017' });
    const requestId = response.headers.get('x-gateway-request-id');
    const charge = textCost(TEXT_PRICE, 5, 6).toString(); // what the upstream reported: 5 prompt, 6 completion tokens
    expect(await closedHold(gw, acct.accountId, requestId)).toMatchObject({ state: 'settled', charge });
    expect(await usageRecord(gw, acct.accountId, requestId)).toMatchObject({
      status: 'succeeded',
      tokens_prompt: 5,
      tokens_completion: 6,
      cost: charge,
    });
  });

  it('ends a broken stream with an error frame and [DONE], charging the prompt and the delivered tokens only', async () => {
    const r = await fetch(`${gw.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'c/break', prompt: 'x', stream: true }),
    });
    expect(r.status).toBe(200);
    const frames = (await r.text()).split('\n\n').filter(Boolean);
    expect(frames[frames.length - 1]).toBe('data: [DONE]');
    expect(JSON.parse(frames[frames.length - 2].slice(6)).error.code).toBe('upstream_unavailable');
    const delivered = frames
      .slice(0, -2)
      .map((f) => JSON.parse(f.slice(6)).choices[0]?.text ?? '')
      .join('');
    expect(delivered).toBe('part0 part1 ');
    await expectChargedForDelivered(gw, acct.accountId, r.headers.get('x-gateway-request-id'), { prompt: 'x', delivered, price: TEXT_PRICE });
  });

  it('answers the simulated upstream offline', async () => {
    const res = await client.completions.create({ model: 'c/sim', prompt: 'hello' });
    expect(res.choices[0].text).toMatch(/simulated reply/);
  });

  it.each([
    ['no prompt', { model: 'c/ok' }],
    ['an empty prompt array', { model: 'c/ok', prompt: [] }],
    ['a number prompt', { model: 'c/ok', prompt: 5 }],
    ['echo, which chat cannot do', { model: 'c/ok', prompt: 'x', echo: true }],
    ['a stream of several prompts', { model: 'c/ok', prompt: ['a', 'b'], stream: true }],
    ['max_tokens 0', { model: 'c/ok', prompt: 'x', max_tokens: 0 }],
  ])('refuses %s with 400 and holds nothing', async (_n, body) => {
    const before = await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId]);
    const r = await fetch(`${gw.url}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(r.status).toBe(400);
    expect((await r.json()).error.code).toBe('invalid_request');
    expect(await gw.ledger(`SELECT count(*)::int AS n FROM holds WHERE account_id = $1`, [acct.accountId])).toEqual(before);
  });
});
