import { PassThrough } from 'node:stream';
import { sseData, type SseBody } from './sse';

async function* arriving(chunks: string[]): AsyncGenerator<string> {
  yield* chunks;
}

async function collect(chunks: string[]): Promise<string[]> {
  const out: string[] = [];
  for await (const d of sseData(arriving(chunks))) out.push(d);
  return out;
}

describe('sseData', () => {
  it('splits frames on LF and CRLF blank lines alike', async () => {
    expect(await collect(['data: a\n\ndata: b\r\n\r\ndata: c\n\n'])).toEqual(['a', 'b', 'c']);
  });

  it('keeps every character of the next frame after a separator of mixed line endings', async () => {
    expect(await collect(['data: a\n\r\ndata: b\r\n\ndata: c\n\n'])).toEqual(['a', 'b', 'c']);
  });

  it('joins a frame split across chunks, and its multi-line data', async () => {
    expect(await collect(['da', 'ta: one\ndata: two\n', '\n: comment\n\ndata: [DONE]\n\n'])).toEqual(['one\ntwo', '[DONE]']);
  });

  it('yields a last frame the upstream ended without its blank line', async () => {
    expect(await collect(['data: a\n\ndata: tail'])).toEqual(['a', 'tail']);
  });

  it('decodes a multi-byte character split across chunks once whole', async () => {
    const bytes = Buffer.from('data: ночь 🌙\n\n');
    const cut = bytes.indexOf(Buffer.from('🌙')) + 2;
    const parts = async function* () {
      yield bytes.subarray(0, 9);
      yield bytes.subarray(9, cut);
      yield bytes.subarray(cut);
    };
    const out: string[] = [];
    for await (const d of sseData(parts())) out.push(d);
    expect(out).toEqual(['ночь 🌙']);
  });

  it('a consumer that stops at [DONE] leaves the body to be read to its end, never destroyed (the connection is reused)', async () => {
    const body = new PassThrough() as PassThrough & SseBody;
    const dumped = jest.fn(async () => {
      body.resume();
      return null;
    });
    body.dump = dumped;
    body.write('data: {"a":1}\n\ndata: [DONE]\n\n');
    const seen: string[] = [];
    for await (const d of sseData(body)) {
      if (d === '[DONE]') break;
      seen.push(d);
    }
    expect(seen).toEqual(['{"a":1}']);
    expect(body.destroyed).toBe(false);
    expect(dumped).toHaveBeenCalledTimes(1);
    body.end();
  });

  it('a body read to its end is not dumped', async () => {
    const body = new PassThrough() as PassThrough & SseBody;
    body.dump = jest.fn(async () => null);
    body.end('data: a\n\n');
    const out: string[] = [];
    for await (const d of sseData(body)) out.push(d);
    expect(out).toEqual(['a']);
    expect(body.dump).not.toHaveBeenCalled();
  });
});
