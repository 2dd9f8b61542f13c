import { sseData } from './sse';

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
});
