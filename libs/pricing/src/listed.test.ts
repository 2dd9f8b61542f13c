import { buildRegistry, parseConfig } from '@gateway/config';
import { listedRates } from './listed';

const modelOf = (category: string, pricing: Record<string, string>) => {
  const config = parseConfig({
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [{ id: 'a/m', name: 'm', category, status: 'available', pricing, endpoints: [{ provider: 'sim', model: 'x' }] }],
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
    });
  });

  it('a video model its per-second and per-request rates; a transcription model its per-second rate', () => {
    expect(listedRates(modelOf('video', { second: '0.05', request: '0.010' }))).toMatchObject({ second: '0.05', request: '0.01', character: null });
    expect(listedRates(modelOf('audio', { second: '0.000100' }))).toMatchObject({ second: '0.0001', character: null });
  });

  it('a price set to zero is "0", not null: free is not the same as not priced that way', () => {
    expect(listedRates(modelOf('audio', { character: '0', second: '0.0006' }))).toMatchObject({ character: '0', second: '0.0006' });
  });
});
