import { SseSplitter } from './sse';

function split(parts: Array<string | Buffer>): string[] {
  const splitter = new SseSplitter();
  const out: string[] = [];
  const emit = (d: string) => out.push(d);
  for (const p of parts) splitter.write(p, emit);
  splitter.end(emit);
  return out;
}

describe('SseSplitter', () => {
  it('splits frames on LF and CRLF blank lines alike', () => {
    expect(split(['data: a\n\ndata: b\r\n\r\ndata: c\n\n'])).toEqual(['a', 'b', 'c']);
  });

  it('keeps every character of the next frame after a separator of mixed line endings', () => {
    expect(split(['data: a\n\r\ndata: b\r\n\ndata: c\n\n'])).toEqual(['a', 'b', 'c']);
  });

  it('joins a frame split across chunks, and its multi-line data, and skips comments', () => {
    expect(split(['da', 'ta: one\ndata: two\n', '\n: comment\n\ndata: [DONE]\n\n'])).toEqual(['one\ntwo', '[DONE]']);
  });

  it('hands over a last frame the upstream ended without its blank line', () => {
    expect(split(['data: a\n\ndata: tail'])).toEqual(['a', 'tail']);
  });

  it('decodes a multi-byte character split across chunks once whole', () => {
    const bytes = Buffer.from('data: ночь 🌙\n\n');
    const cut = bytes.indexOf(Buffer.from('🌙')) + 2;
    expect(split([bytes.subarray(0, 9), bytes.subarray(9, cut), bytes.subarray(cut)])).toEqual(['ночь 🌙']);
  });

  it('hands each payload over as soon as its frame is complete', () => {
    const splitter = new SseSplitter();
    const out: string[] = [];
    splitter.write('data: a\n\ndata: b', (d) => out.push(d));
    expect(out).toEqual(['a']);
  });
});
