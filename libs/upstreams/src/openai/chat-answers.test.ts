import type http from 'node:http';
import type { ResolvedEndpoint } from '@gateway/config';
import { createOpenAIProtocol } from '.';
import type { ChatChunk } from '../types';
import { MALFORMED_COUNTS } from '../testing/malformed-usage';
import { FAKE_ENV, callOptions, endpointAt, json, startFakeUpstream, type FakeUpstream } from '../testing/fake-upstream';

const MALFORMED_USAGE: Array<[string, Record<string, unknown>]> = [
  ...MALFORMED_COUNTS.map(([name, n]): [string, Record<string, unknown>] => [`${name} prompt tokens`, { prompt_tokens: n, completion_tokens: 2 }]),
  ...MALFORMED_COUNTS.map(([name, n]): [string, Record<string, unknown>] => [
    `${name} completion tokens`,
    { prompt_tokens: 3, completion_tokens: n },
  ]),
  ['a missing figure', { prompt_tokens: 3 }],
  ['a malformed total', { prompt_tokens: 3, completion_tokens: 2, total_tokens: '5' }],
];

const sse = (res: http.ServerResponse, frames: unknown[]) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const f of frames) res.write(`data: ${typeof f === 'string' ? f : JSON.stringify(f)}\n\n`);
  res.end();
};

const base = { id: 'chatcmpl-1', created: 1_700_000_000, model: 'up-model' };
const chunkOf = (delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}) => ({
  ...base,
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason: finish }],
  ...extra,
});

describe('openai chat answers at the protocol boundary', () => {
  let fake: FakeUpstream;
  let respond: (res: http.ServerResponse) => void;
  const reports: Array<{ ep: ResolvedEndpoint; issue: string }> = [];
  const protocol = createOpenAIProtocol(FAKE_ENV, (ep, issue) => reports.push({ ep, issue }));
  beforeAll(async () => {
    fake = await startFakeUpstream((_hit, res) => respond(res));
  });
  afterAll(() => fake.close());
  beforeEach(() => {
    reports.length = 0;
  });

  const chat = () => protocol.chat(endpointAt(fake.baseUrl), { messages: [{ role: 'user', content: 'hi' }] }, callOptions());
  const stream = async () => {
    const chunks: ChatChunk[] = [];
    for await (const c of await protocol.chatStream(endpointAt(fake.baseUrl), { messages: [{ role: 'user', content: 'hi' }] }, callOptions()))
      chunks.push(c);
    return chunks;
  };
  const completion = (usage: unknown) => ({
    ...base,
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content: 'pong' }, finish_reason: 'stop' }],
    usage,
  });

  it('keeps well-formed usage as it is', async () => {
    respond = (res) => json(res, 200, completion({ prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 }));
    expect((await chat()).usage).toEqual({ prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 });
    expect(reports).toEqual([]);
  });

  it.each(MALFORMED_USAGE)('drops %s usage from a whole answer and reports it with the endpoint', async (_name, usage) => {
    respond = (res) => json(res, 200, completion(usage));
    const answer = await chat();
    expect(answer.usage).toBeUndefined();
    expect(answer.choices[0].message.content).toBe('pong');
    expect(reports).toEqual([{ ep: expect.objectContaining({ key: 'fake/up-model' }), issue: expect.any(String) }]);
  });

  it.each(MALFORMED_USAGE)('drops %s usage from the usage chunk and from a content chunk, reporting each', async (_name, usage) => {
    respond = (res) =>
      sse(res, [
        chunkOf({ role: 'assistant', content: '' }),
        chunkOf({ content: 'pong' }, null, { usage }),
        chunkOf({}, 'stop'),
        { ...base, object: 'chat.completion.chunk', choices: [], usage },
        '[DONE]',
      ]);
    const chunks = await stream();
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? null)).toEqual(['', 'pong', null, null]);
    expect(chunks.filter((c) => 'usage' in c)).toEqual([]);
    expect(reports).toHaveLength(2);
  });

  it('treats null usage on a chunk as none, not as malformed', async () => {
    respond = (res) =>
      sse(res, [
        chunkOf({ content: 'pong' }, null, { usage: null }),
        { ...base, choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } },
        '[DONE]',
      ]);
    const chunks = await stream();
    expect(chunks[1].usage).toEqual({ prompt_tokens: 3, completion_tokens: 1 });
    expect(reports).toEqual([]);
  });

  it.each([
    ['no choices', { ...base, object: 'chat.completion' }],
    ['choices that are not a list', { ...base, choices: 'pong' }],
    ['content that is not text', { ...base, choices: [{ index: 0, message: { role: 'assistant', content: 42 }, finish_reason: 'stop' }] }],
    ['a tool call without arguments', { ...base, choices: [{ index: 0, message: { tool_calls: [{ id: 'c', function: { name: 'f' } }] } }] }],
    ['an answer that is not an object', ['pong']],
  ])('fails over on a whole answer with %s (a protocol failure, not the client fault)', async (_name, body) => {
    respond = (res) => json(res, 200, body);
    await expect(chat()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'protocol', clientFault: false });
  });

  it.each([
    ['content that is not text', chunkOf({ content: { text: 'pong' } })],
    ['no choices', { ...base, object: 'chat.completion.chunk' }],
    ['a tool call delta without an index', chunkOf({ tool_calls: [{ function: { arguments: '{' } }] })],
  ])('breaks a stream on a chunk with %s', async (_name, frame) => {
    respond = (res) => sse(res, [chunkOf({ role: 'assistant', content: '' }), frame, '[DONE]']);
    await expect(stream()).rejects.toMatchObject({ name: 'UpstreamError', kind: 'protocol' });
  });

  it.each([
    ['an object', { error: { message: 'overloaded' } }, 'overloaded'],
    ['a string', { error: 'overloaded' }, 'overloaded'],
    ['no words', { error: { code: 500 } }, 'unknown'],
  ])('breaks a stream on an error frame holding %s, quoting at most 500 characters', async (_name, frame, said) => {
    respond = (res) => sse(res, [chunkOf({ content: 'po' }), frame]);
    const err = await stream().then(
      () => undefined,
      (e) => e,
    );
    expect(err).toMatchObject({ kind: 'broken_stream', message: `upstream stream error: ${said}` });
  });

  it('quotes a long stream error only in part', async () => {
    respond = (res) => sse(res, [{ error: { message: 'x'.repeat(10_000) } }]);
    await expect(stream()).rejects.toMatchObject({ message: `upstream stream error: ${'x'.repeat(500)}` });
  });
});
