import { submitBody, submitQuery, upstreamInput } from './schema';

describe('submit body: the contract bounds, and everything else passed through', () => {
  const ok = (v: unknown) => submitBody.safeParse(v).success;

  it('n is 1 to 10, duration 1 to 600 seconds, prompt at most 32,000 characters', () => {
    expect(ok({ n: 1 })).toBe(true);
    expect(ok({ n: 10 })).toBe(true);
    expect(ok({ n: 0 })).toBe(false);
    expect(ok({ n: 11 })).toBe(false);
    expect(ok({ n: 1.5 })).toBe(false);
    expect(ok({ duration: 1 })).toBe(true);
    expect(ok({ duration: 600 })).toBe(true);
    expect(ok({ duration: 0.5 })).toBe(false);
    expect(ok({ duration: -5 })).toBe(false);
    expect(ok({ duration: 601 })).toBe(false);
    expect(ok({ prompt: 'x'.repeat(32_000) })).toBe(true);
    expect(ok({ prompt: 'x'.repeat(32_001) })).toBe(false);
  });

  it('a webhook must be an https URL, in the body or as partner_webhook', () => {
    expect(ok({ webhook_url: 'https://hooks.example.com/x' })).toBe(true);
    expect(ok({ webhook_url: 'http://hooks.example.com/x' })).toBe(false);
    expect(ok({ webhook_url: 'not a url' })).toBe(false);
    expect(submitQuery.safeParse({ partner_webhook: 'https://hooks.example.com/x?a=1' }).success).toBe(true);
    expect(submitQuery.safeParse({ partner_webhook: 'ftp://hooks.example.com/x' }).success).toBe(false);
  });

  it("the upstream gets the model's own input: unknown fields kept, model and webhook_url dropped", () => {
    const body = submitBody.parse({ model: 'a/b', webhook_url: 'https://h.example/x', prompt: 'p', seed: 7, camera: { pan: 'left' } });
    expect(upstreamInput(body)).toEqual({ prompt: 'p', n: 1, seed: 7, camera: { pan: 'left' } });
  });
});
