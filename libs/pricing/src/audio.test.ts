import { buildRegistry, parseConfig } from '@gateway/config';
import { billedSeconds, characterCount, speechCharge, transcriptionCharge } from './audio';

const model = buildRegistry(
  parseConfig({
    providers: [{ id: 'sim', kind: 'simulated' }],
    models: [
      {
        id: 't/audio',
        name: 'a',
        category: 'audio',
        status: 'available',
        pricing: { character: '0.000015', second: '0.0001' },
        endpoints: [{ provider: 'sim', model: 'a' }],
      },
    ],
  }),
).get('t/audio')!;

describe('audio pricing', () => {
  it('counts characters as code points: an emoji is one, though JavaScript sees two units', () => {
    expect(characterCount('🎙🎙')).toBe(2);
    expect('🎙🎙'.length).toBe(4);
    expect(speechCharge(model, 'Hi 🎙')).toBe(60_000n); // 4 × 15,000 nano
  });

  it.each([
    [0.2, 1],
    [1, 1],
    [1.0001, 2],
    [1.656, 2],
    [3.0000000000000004, 3],
    [59.5, 60],
  ])('bills %s s as %i: per started second', (seconds, billed) => {
    expect(billedSeconds(seconds)).toBe(billed);
  });

  it('charges transcription per started second at the second rate', () => {
    expect(transcriptionCharge(model, 1.2)).toBe(200_000n); // 2 × 100,000 nano
  });
});
