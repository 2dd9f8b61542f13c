import { validate } from '@gateway/service-kit';
import { ranked } from './ranking';
import { documentTexts, rerankBody, MAX_DOCUMENTS } from './schema';

const parse = (body: unknown) => validate(rerankBody, { model: 'm', query: 'q', documents: ['d'], ...(body as object) });

describe('rerank input', () => {
  it('takes strings and {text} objects alike', () => {
    expect(documentTexts(parse({ documents: ['a', { text: 'b', id: 7 }] }).documents)).toEqual(['a', 'b']);
    expect(parse({}).return_documents).toBe(false);
  });

  it.each([
    ['no documents', { documents: [] }],
    ['too many documents', { documents: Array.from({ length: MAX_DOCUMENTS + 1 }, () => 'd') }],
    ['an empty query', { query: '' }],
    ['a document without text', { documents: [{ title: 'x' }] }],
    ['top_n 0', { top_n: 0 }],
    ['a fractional top_n', { top_n: 1.5 }],
  ])('refuses %s with 400', (_name, body) => {
    expect(() => parse(body)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });

  it(`accepts exactly ${MAX_DOCUMENTS} documents`, () => {
    expect(parse({ documents: Array.from({ length: MAX_DOCUMENTS }, () => 'd') }).documents).toHaveLength(MAX_DOCUMENTS);
  });
});

describe('ranked', () => {
  const results = [
    { index: 0, relevance_score: 0.1 },
    { index: 1, relevance_score: 0.9 },
    { index: 2, relevance_score: 0.5 },
    { index: 3, relevance_score: 0.5 },
  ];

  it('orders by relevance, best first, equal scores in request order, and keeps top_n', () => {
    expect(ranked(results, 4, 4).map((r) => r.index)).toEqual([1, 2, 3, 0]);
    expect(ranked([...results].reverse(), 4, 2).map((r) => r.index)).toEqual([1, 2]);
  });

  it('refuses an index that was not sent, as the upstream fault it is', () => {
    expect(() => ranked([{ index: 4, relevance_score: 1 }], 4, 1)).toThrow(expect.objectContaining({ name: 'UpstreamError', kind: 'protocol' }));
  });
});
