import { errorMessageOf } from './error-body';

describe('upstream error bodies', () => {
  it.each([
    ['the message API', { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'overloaded_error: Overloaded'],
    ['OpenAI', { error: { message: 'Rate limit reached', type: 'requests' } }, 'Rate limit reached'],
    ['Cohere', { message: 'invalid request: query is empty' }, 'invalid request: query is empty'],
    ['a bare error string', { error: 'model not found' }, 'model not found'],
  ])('reads the reason %s gives', (_name, body, said) => {
    expect(errorMessageOf(JSON.stringify(body))).toBe(said);
  });

  it.each([
    ['a reason that is not text', { error: { message: { nested: true } } }],
    ['an unknown shape', { detail: 'nope' }],
    ['a list', ['x']],
  ])('quotes the body itself for %s', (_name, body) => {
    expect(errorMessageOf(JSON.stringify(body))).toBe(JSON.stringify(body));
  });

  it('quotes at most 500 characters, whatever the shape', () => {
    expect(errorMessageOf(JSON.stringify({ error: { message: 'x'.repeat(5000) } }))).toBe('x'.repeat(500));
    expect(errorMessageOf('y'.repeat(5000))).toBe('y'.repeat(500));
  });
});
