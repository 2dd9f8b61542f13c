import { buildRegistry, parseConfig } from '@gateway/config';
import { refuseUnpricedAudio } from './audio-models';

describe('audio models a route accepts', () => {
  const model = (id: string, category: string, pricing: Record<string, string>) => ({
    id,
    name: id,
    category,
    status: 'available',
    context_length: 1000,
    max_output_tokens: 10,
    pricing,
    endpoints: [{ provider: 'sim', model: 'm' }],
  });
  const registry = buildRegistry(
    parseConfig({
      providers: [{ id: 'sim', kind: 'simulated' }],
      models: [
        model('acme/tts', 'audio', { character: '0.000015' }),
        model('acme/stt', 'audio', { second: '0.0001' }),
        model('acme/free-tts', 'audio', { character: '0' }),
        model('acme/chat', 'text', { prompt: '0.001' }),
      ],
    }),
  );

  it('accepts an audio model priced on the route axis, a price of 0 included', () => {
    expect(() => refuseUnpricedAudio(registry, 'acme/tts', 'character', '/v1/audio/speech')).not.toThrow();
    expect(() => refuseUnpricedAudio(registry, 'acme/free-tts', 'character', '/v1/audio/speech')).not.toThrow();
    expect(() => refuseUnpricedAudio(registry, 'acme/stt', 'second', '/v1/audio/transcriptions')).not.toThrow();
  });

  it('refuses a model of another category with 400, naming it', () => {
    expect(() => refuseUnpricedAudio(registry, 'acme/chat', 'character', '/v1/audio/speech')).toThrow(
      expect.objectContaining({ code: 'invalid_request', message: 'Model acme/chat is a text model; /v1/audio/speech serves audio models only' }),
    );
  });

  it('refuses an audio model without the route price with 400, saying which price', () => {
    expect(() => refuseUnpricedAudio(registry, 'acme/stt', 'character', '/v1/audio/speech')).toThrow(
      expect.objectContaining({ code: 'invalid_request', message: expect.stringMatching(/^Model acme\/stt has no pricing\.character;/) }),
    );
    expect(() => refuseUnpricedAudio(registry, 'acme/tts', 'second', '/v1/audio/transcriptions')).toThrow(/no pricing\.second/);
  });

  it('leaves an unknown slug to the money flow (409)', () => {
    expect(() => refuseUnpricedAudio(registry, 'nobody/nothing', 'character', '/v1/audio/speech')).not.toThrow();
  });
});
