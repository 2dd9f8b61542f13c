import { chatCallOf } from './chat-call';

const body = { messages: [{ role: 'user', content: 'hi' }] };

describe('the chat call of a route request', () => {
  it('tries the requested model first, then its fallbacks in order, and carries the spend controls', () => {
    const provider = { order: ['sim'], allow_fallbacks: false };
    expect(chatCallOf({ model: 'a/x', stream: true, provider, max_cost: 5n }, body, ['b/y', 'c/z'])).toEqual({
      slugs: ['a/x', 'b/y', 'c/z'],
      body,
      stream: true,
      provider,
      maxCost: 5n,
    });
  });

  it('takes no fallbacks from the request itself: a models field a schema let through is not a fallback list', () => {
    const request = { model: 'a/x', models: ['b/y'] };
    expect(chatCallOf(request, body).slugs).toEqual(['a/x']);
  });

  it('streams only when stream is true: absent or null (the responses API allows null) answers as one body', () => {
    expect(chatCallOf({ model: 'a/x' }, body)).toMatchObject({ slugs: ['a/x'], stream: false, provider: undefined, maxCost: undefined });
    expect(chatCallOf({ model: 'a/x', stream: null }, body).stream).toBe(false);
  });
});
