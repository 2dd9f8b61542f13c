import type http from 'node:http';
import type { ResolvedEndpoint } from '@gateway/config';
import { createAnthropicProtocol } from '.';
import type { ChatChunk } from '../types';
import { MALFORMED_COUNTS } from '../testing/malformed-usage';
import { FAKE_ENV, callOptions, endpointAt, json, startFakeUpstream, type FakeUpstream } from '../testing/fake-upstream';

const MALFORMED_USAGE: Array<[string, Record<string, unknown>]> = [
  ...MALFORMED_COUNTS.map(([name, n]): [string, Record<string, unknown>] => [`${name} input tokens`, { input_tokens: n, output_tokens: 2 }]),
  ...MALFORMED_COUNTS.map(([name, n]): [string, Record<string, unknown>] => [`${name} output tokens`, { input_tokens: 3, output_tokens: n }]),
  ...MALFORMED_COUNTS.map(([name, n]): [string, Record<string, unknown>] => [
    `${name} cache-read tokens`,
    { input_tokens: 3, output_tokens: 2, cache_read_input_tokens: n },
  ]),
  ['cached tokens that add up past the ledger', { input_tokens: 2 ** 30, output_tokens: 2, cache_read_input_tokens: 2 ** 30 }],
  ['no output figure', { input_tokens: 3 }],
];

const message = (usage: unknown, extra: Record<string, unknown> = {}) => ({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'up-model',
  content: [{ type: 'text', text: 'pong' }],
  stop_reason: 'end_turn',
  stop_sequence: null,
  usage,
  ...extra,
});

const events = (res: http.ServerResponse, list: unknown[]) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const e of list) res.write(`event: ${(e as { type: string }).type}\ndata: ${JSON.stringify(e)}\n\n`);
  res.end();
};

/** A whole stream whose usage is `start` in message_start and `delta` in message_delta. */
const streamed = (start: unknown, delta: unknown) => [
  { type: 'message_start', message: { ...message(start), content: [], stop_reason: null } },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'pong' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: delta },
  { type: 'message_stop' },
];

describe('message-API answers at the protocol boundary', () => {
  let fake: FakeUpstream;
  let respond: (res: http.ServerResponse) => void;
  const reports: Array<{ ep: ResolvedEndpoint; issue: string }> = [];
  const protocol = createAnthropicProtocol(FAKE_ENV, (ep, issue) => reports.push({ ep, issue }));
  const ep = () => endpointAt(fake.baseUrl, { id: 'anth', kind: 'anthropic' });
  beforeAll(async () => {
    fake = await startFakeUpstream((_hit, res) => respond(res));
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    reports.length = 0;
  });

  const chat = () => protocol.chat(ep(), { messages: [{ role: 'user', content: 'hi' }] }, callOptions());
  const stream = async () => {
    const chunks: ChatChunk[] = [];
    for await (const c of await protocol.chatStream(ep(), { messages: [{ role: 'user', content: 'hi' }] }, callOptions())) chunks.push(c);
    return chunks;
  };

  it('maps well-formed usage, cached prompt tokens included, whole and streamed', async () => {
    respond = (res) => json(res, 200, message({ input_tokens: 3, output_tokens: 1, cache_read_input_tokens: 2, cache_creation_input_tokens: null }));
    expect((await chat()).usage).toEqual({
      prompt_tokens: 5,
      completion_tokens: 1,
      total_tokens: 6,
      prompt_tokens_details: { cached_tokens: 2, cache_write_tokens: 0 },
    });
    respond = (res) => events(res, streamed({ input_tokens: 3, output_tokens: 1 }, { output_tokens: 4 }));
    expect((await stream()).at(-1)?.usage).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    expect(reports).toEqual([]);
  });

  it.each(MALFORMED_USAGE)('drops %s from a whole answer and reports it with the endpoint', async (_name, usage) => {
    respond = (res) => json(res, 200, message(usage));
    const answer = await chat();
    expect(answer.usage).toBeUndefined();
    expect(answer.choices[0].message.content).toBe('pong');
    expect(reports).toEqual([{ ep: expect.objectContaining({ key: 'fake/up-model' }), issue: expect.any(String) }]);
  });

  it.each(MALFORMED_USAGE)('ends a stream with %s in message_start without usage, and reports it', async (_name, usage) => {
    respond = (res) => events(res, streamed(usage, {}));
    const chunks = await stream();
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? null)).toEqual(['', 'pong', null, null]);
    expect(chunks.filter((c) => 'usage' in c)).toEqual([]);
    expect(reports).toHaveLength(1);
  });

  it.each(MALFORMED_COUNTS)('ends a stream whose message_delta says %s output tokens without usage, and reports it', async (_name, n) => {
    respond = (res) => events(res, streamed({ input_tokens: 3, output_tokens: 1 }, { output_tokens: n }));
    expect((await stream()).filter((c) => 'usage' in c)).toEqual([]);
    expect(reports).toHaveLength(1);
  });

  it('leaves usage out, reporting nothing, when the upstream sent none', async () => {
    respond = (res) => json(res, 200, message(undefined));
    expect((await chat()).usage).toBeUndefined();
    expect(reports).toEqual([]);
  });

  it.each([
    ['no content', message({ input_tokens: 1, output_tokens: 1 }, { content: undefined })],
    ['another type', message({ input_tokens: 1, output_tokens: 1 }, { type: 'completion' })],
    ['a text block without text', message({ input_tokens: 1, output_tokens: 1 }, { content: [{ type: 'text', text: 5 }] })],
    ['a tool_use block without a name', message({ input_tokens: 1, output_tokens: 1 }, { content: [{ type: 'tool_use', id: 't', input: {} }] })],
    ['a stop reason that is not text', message({ input_tokens: 1, output_tokens: 1 }, { stop_reason: 7 })],
  ])('fails over on an answer with %s (a protocol failure, not the client fault)', async (_name, body) => {
    respond = (res) => json(res, 200, body);
    await expect(chat()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'protocol', clientFault: false });
  });

  it.each([
    ['a text delta that is not text', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 42 } }],
    ['a delta without an index', { type: 'content_block_delta', delta: { type: 'text_delta', text: 'x' } }],
    ['a tool_use block without an id', { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', name: 'f', input: {} } }],
    ['an event without a type', { delta: { text: 'x' } }],
  ])('breaks a stream on %s', async (_name, bad) => {
    const list = streamed({ input_tokens: 3, output_tokens: 1 }, { output_tokens: 1 });
    list.splice(2, 0, bad as (typeof list)[number]);
    respond = (res) => events(res, list);
    await expect(stream()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'protocol' });
  });

  it('breaks a stream on an error event whatever its shape, quoting only words', async () => {
    respond = (res) =>
      events(res, [streamed({ input_tokens: 3, output_tokens: 1 }, {})[0], { type: 'error', error: { type: 5, message: 'x'.repeat(900) } }]);
    await expect(stream()).rejects.toMatchObject({ kind: 'broken_stream', message: `upstream stream error: error: ${'x'.repeat(500)}` });
  });
});
