import { buildRegistry, parseConfig } from '@gateway/config';
import { listedRates } from './listed';

const modelOf = (category: string, pricing: Record<string, string>) => {
  const config = parseConfig({
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [
      {
        id: 'a/m',
        name: 'm',
        category,
        status: 'available',
        pricing,
        endpoints: [{ provider: 'sim', model: 'x' }],
        ...(category === 'text' ? { context_length: 1000, max_output_tokens: 100 } : {}),
      },
    ],
  });
  return buildRegistry(config).get('a/m')!;
};

describe('listedRates: what a listing publishes is what the bill charges', () => {
  it('a speech model shows its per-character rate, exactly, and null for every rate it has not', () => {
    expect(listedRates(modelOf('audio', { character: '0.000015123456789012' }))).toEqual({
      prompt: null,
      completion: null,
      request: null,
      image: null,
      character: '0.000015123456789012',
      second: null,
      input_cache_read: null,
      input_cache_write: null,
    });
  });

  it('a text model its cache rates, when the config sets them', () => {
    const rates = listedRates(modelOf('text', { prompt: '0.000003', input_cache_read: '0.00000030', input_cache_write: '0.00000375' }));
    expect(rates).toMatchObject({ prompt: '0.000003', input_cache_read: '0.0000003', input_cache_write: '0.00000375' });
    expect(listedRates(modelOf('text', { prompt: '0.000003' }))).toMatchObject({ input_cache_read: null, input_cache_write: null });
  });

  it('a video model its per-second and per-request rates; a transcription model its per-second rate', () => {
    expect(listedRates(modelOf('video', { second: '0.05', request: '0.010' }))).toMatchObject({ second: '0.05', request: '0.01', character: null });
    expect(listedRates(modelOf('audio', { second: '0.000100' }))).toMatchObject({ second: '0.0001', character: null });
  });

  it('a price set to zero is "0", not null: free is not the same as not priced that way', () => {
    expect(listedRates(modelOf('audio', { character: '0', second: '0.0006' }))).toMatchObject({ character: '0', second: '0.0006' });
  });
});
