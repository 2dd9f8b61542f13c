import type { ResolvedEndpoint } from '@gateway/config';
import { malformedUsageReport, tokenCount } from './answer-schema';
import { MALFORMED_COUNTS } from './testing/malformed-usage';

describe('token counts', () => {
  it.each([0, 1, 4096, 2 ** 31 - 1])('takes %p', (n) => {
    expect(tokenCount.safeParse(n).success).toBe(true);
  });

  it.each([...MALFORMED_COUNTS, ['NaN', Number.NaN], ['infinite', Number.POSITIVE_INFINITY], ['absent', undefined]])('refuses %s', (_name, n) => {
    expect(tokenCount.safeParse(n).success).toBe(false);
  });
});

describe('malformed usage report', () => {
  const ep: ResolvedEndpoint = { key: 'p1/up-model', provider: { id: 'p1', kind: 'openai', base_url: 'http://x/v1' }, upstreamModel: 'up-model' };

  // The e2e suite reads the counter off a running gateway's /metrics; here, what is asked of the metrics kit.
  it('warns with the provider and model and counts per endpoint', () => {
    const counted: Array<[string, string[], Record<string, string>]> = [];
    const metrics = {
      counter: (name: string, _help: string, labelNames: string[]) => ({
        inc: (labels: Record<string, string>) => counted.push([name, labelNames, labels]),
      }),
    };
    const warned: Array<[object, string]> = [];
    const report = malformedUsageReport({ logger: { warn: (obj, msg) => warned.push([obj, msg]) }, metrics });
    report(ep, 'prompt_tokens: expected number');
    report(ep, 'completion_tokens: too small');

    expect(warned).toEqual([
      [
        { endpoint: 'p1/up-model', provider: 'p1', model: 'up-model', issue: 'prompt_tokens: expected number' },
        expect.stringContaining('malformed usage'),
      ],
      [expect.objectContaining({ issue: 'completion_tokens: too small' }), expect.any(String)],
    ]);
    expect(counted).toEqual([
      ['gateway_upstream_malformed_usage_total', ['endpoint'], { endpoint: 'p1/up-model' }],
      ['gateway_upstream_malformed_usage_total', ['endpoint'], { endpoint: 'p1/up-model' }],
    ]);
  });

  it('reports to nobody without a logger or metrics', () => {
    expect(() => malformedUsageReport({})(ep, 'x')).not.toThrow();
  });
});
