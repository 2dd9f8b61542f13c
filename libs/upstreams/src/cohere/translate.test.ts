import { cohereRerankBody, readCohereRerank } from './translate';
import { MALFORMED_COUNTS } from '../testing/malformed-usage';

const noIssue = (issue: string) => {
  throw new Error(`unexpected usage issue: ${issue}`);
};

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
    expect(readCohereRerank(answer, 2, noIssue)).toEqual({ results: answer.results, usage: { search_units: 1 } });
  });

  it('takes a reported token figure from usage.total_tokens or meta.tokens.input_tokens', () => {
    expect(readCohereRerank({ results: [], usage: { total_tokens: 42 } }, 1, noIssue).usage).toEqual({ total_tokens: 42 });
    expect(readCohereRerank({ results: [], meta: { tokens: { input_tokens: 7 } } }, 1, noIssue).usage).toEqual({ total_tokens: 7 });
    expect(readCohereRerank({ results: [] }, 1, noIssue).usage).toBeUndefined();
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
    expect(() => readCohereRerank(answer, 2, noIssue)).toThrow(expect.objectContaining({ kind: 'protocol', clientFault: false }));
  });

  describe.each(MALFORMED_COUNTS)('with %s figures', (_name, n) => {
    const results = [{ index: 0, relevance_score: 0.5 }];
    const read = (answer: Record<string, unknown>) => {
      const issues: string[] = [];
      return { out: readCohereRerank({ results, ...answer }, 1, (i) => issues.push(i)), issues };
    };

    it('drops a malformed meta.billed_units.search_units and reports it, keeping the results', () => {
      expect(read({ meta: { billed_units: { search_units: n } } })).toEqual({ out: { results }, issues: [expect.stringContaining('search_units')] });
    });

    it('drops a malformed token figure and reports it, falling back to the other one when it is well formed', () => {
      expect(read({ usage: { total_tokens: n } })).toEqual({ out: { results }, issues: [expect.stringContaining('usage.total_tokens')] });
      expect(read({ meta: { tokens: { input_tokens: n } } })).toEqual({ out: { results }, issues: [expect.stringContaining('input_tokens')] });
      expect(read({ usage: { total_tokens: n }, meta: { tokens: { input_tokens: 7 } } })).toMatchObject({
        out: { usage: { total_tokens: 7 } },
        issues: [expect.any(String)],
      });
    });
  });
});
