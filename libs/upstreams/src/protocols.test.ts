import { createProtocols } from '.';

describe('createProtocols', () => {
  const protocols = createProtocols({});
  const capabilities = ['text', 'embedding', 'rerank', 'image', 'speech', 'transcription'] as const;
  const served = (kind: Parameters<typeof protocols.text>[0]) => capabilities.filter((c) => protocols[c](kind) !== undefined);

  it('serves media from the openai and simulated kinds, and from no kind that lacks it (anthropic, cohere, fal)', () => {
    expect(served('openai')).toEqual(['text', 'embedding', 'image', 'speech', 'transcription']);
    expect(served('simulated')).toEqual(capabilities);
    expect(served('anthropic')).toEqual(['text']);
    expect(served('cohere')).toEqual(['rerank']);
    expect(served('fal')).toEqual([]);
  });
});
