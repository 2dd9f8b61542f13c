import { readEmbeddings } from './embed';
import { MALFORMED_COUNTS } from '../testing/malformed-usage';

const noIssue = (issue: string) => {
  throw new Error(`unexpected usage issue: ${issue}`);
};

describe('openai embeddings answer', () => {
  it('orders vectors by index and keeps the reported prompt tokens', () => {
    const json = {
      data: [
        { index: 1, embedding: [0.5] },
        { index: 0, embedding: [0.25] },
      ],
      usage: { prompt_tokens: 4 },
    };
    expect(readEmbeddings(json, 2, noIssue)).toEqual({
      data: [
        { index: 0, embedding: [0.25] },
        { index: 1, embedding: [0.5] },
      ],
      usage: { prompt_tokens: 4 },
    });
  });

  it('decodes a base64 answer (little-endian float32) and leaves usage out when none was reported', () => {
    const buf = Buffer.alloc(8);
    buf.writeFloatLE(0.5, 0);
    buf.writeFloatLE(-2, 4);
    expect(readEmbeddings({ data: [{ index: 0, embedding: buf.toString('base64') }] }, 1, noIssue)).toEqual({
      data: [{ index: 0, embedding: [0.5, -2] }],
    });
  });

  it.each([
    ['too few vectors', { data: [{ index: 0, embedding: [1] }] }],
    ['no data', {}],
    [
      'a repeated index',
      {
        data: [
          { index: 0, embedding: [1] },
          { index: 0, embedding: [1] },
        ],
      },
    ],
    [
      'a non-numeric component',
      {
        data: [
          { index: 0, embedding: [1] },
          { index: 1, embedding: ['x'] },
        ],
      },
    ],
    [
      'an empty vector',
      {
        data: [
          { index: 0, embedding: [1] },
          { index: 1, embedding: [] },
        ],
      },
    ],
  ])('treats %s as a protocol failure (fails over)', (_name, json) => {
    expect(() => readEmbeddings(json, 2, noIssue)).toThrow(expect.objectContaining({ kind: 'protocol', clientFault: false }));
  });

  it.each(MALFORMED_COUNTS)('drops %s prompt tokens and reports them, keeping the vectors', (_name, n) => {
    const issues: string[] = [];
    const out = readEmbeddings({ data: [{ index: 0, embedding: [0.5] }], usage: { prompt_tokens: n, total_tokens: n } }, 1, (i) => issues.push(i));
    expect(out).toEqual({ data: [{ index: 0, embedding: [0.5] }] });
    expect(issues).toEqual([expect.stringContaining('prompt_tokens')]);
  });
});
