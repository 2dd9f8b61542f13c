import { cohereRerankBody, readCohereRerank } from './translate';

describe('cohere rerank translation', () => {
  it('asks for every document unless told, never for the documents back', () => {
    expect(cohereRerankBody({ query: 'q', documents: ['a', 'b', 'c'] })).toEqual({
      query: 'q',
      documents: ['a', 'b', 'c'],
      top_n: 3,
      return_documents: false,
    });
    expect(cohereRerankBody({ query: 'q', documents: ['a', 'b'], top_n: 1 })).toMatchObject({ top_n: 1 });
  });

  it('reads results and search units; no token figure when Cohere gives none', () => {
    const answer = {
      id: 'x',
      results: [
        { index: 1, relevance_score: 0.8 },
        { index: 0, relevance_score: 0.2 },
      ],
      meta: { billed_units: { search_units: 1 } },
    };
    expect(readCohereRerank(answer, 2)).toEqual({ results: answer.results, usage: { search_units: 1 } });
  });

  it('takes a reported token figure from usage.total_tokens or meta.tokens.input_tokens', () => {
    expect(readCohereRerank({ results: [], usage: { total_tokens: 42 } }, 1).usage).toEqual({ total_tokens: 42 });
    expect(readCohereRerank({ results: [], meta: { tokens: { input_tokens: 7 } } }, 1).usage).toEqual({ total_tokens: 7 });
    expect(readCohereRerank({ results: [] }, 1).usage).toBeUndefined();
  });

  it.each([
    ['no results', {}],
    ['an index past the documents', { results: [{ index: 2, relevance_score: 1 }] }],
    [
      'a repeated index',
      {
        results: [
          { index: 0, relevance_score: 1 },
          { index: 0, relevance_score: 0.5 },
        ],
      },
    ],
    ['a score that is not a number', { results: [{ index: 0, relevance_score: '1' }] }],
    ['a fractional index', { results: [{ index: 0.5, relevance_score: 1 }] }],
  ])('treats %s as a protocol failure (fails over)', (_name, answer) => {
    expect(() => readCohereRerank(answer, 2)).toThrow(expect.objectContaining({ kind: 'protocol', clientFault: false }));
  });
});
