import { createProtocols, protocolsOf, type CapabilityTable } from './protocols';
import { createSimulatedProtocol } from './simulated';

describe('createProtocols', () => {
  const protocols = createProtocols({});
  const capabilities = ['text', 'embedding', 'rerank', 'image', 'speech', 'transcription', 'queue'] as const;
  const served = (kind: Parameters<typeof protocols.text>[0]) => capabilities.filter((c) => protocols[c](kind) !== undefined);

  it('serves media from the openai and simulated kinds, and from no kind that lacks it (anthropic, cohere, fal)', () => {
    expect(served('openai')).toEqual(['text', 'embedding', 'image', 'speech', 'transcription']);
    expect(served('simulated')).toEqual(capabilities);
    expect(served('anthropic')).toEqual(['text']);
    expect(served('cohere')).toEqual(['rerank']);
    expect(served('fal')).toEqual(['queue']);
  });

  it('answers undefined, not null, where a kind serves none, and what the table holds where it does', () => {
    const sim = createSimulatedProtocol();
    const row = { text: null, embedding: null, rerank: null, image: null, speech: null, transcription: null, queue: null };
    const table: CapabilityTable = { openai: row, anthropic: row, cohere: row, fal: row, simulated: { ...row, rerank: sim } };
    const p = protocolsOf(table);
    expect(p.rerank('simulated')).toBe(sim);
    expect(p.rerank('openai')).toBeUndefined();
    expect(p.text('simulated')).toBeUndefined();
  });
});
