import { modelOf } from '../testing/models';
import { capabilitiesOf, supportsReasoning } from './capabilities';

describe('capabilities', () => {
  it.each([
    ['embedding', {}, ['embeddings']],
    ['rerank', {}, ['rerank']],
    ['image', { image: '0.02' }, ['image_generation']],
    ['video', { second: '0.1' }, ['video_generation']],
    ['audio', { character: '0.000015' }, ['speech']],
    ['audio', { second: '0.0001' }, ['transcription']],
    ['audio', { character: '0.000015', second: '0.0001' }, ['speech', 'transcription']],
    ['text', {}, ['chat']],
  ] as const)('a %s model priced %j opens its route family: %j', (category, pricing, expected) => {
    expect(capabilitiesOf(modelOf({ id: 'a/m', category, pricing }))).toEqual(expected);
  });

  it('a text model adds tools, structured outputs and reasoning from any spelling of their parameters', () => {
    const m = modelOf({ id: 'a/m', category: 'text', supported_parameters: ['tool_choice', 'response_format', 'reasoning_effort', 'temperature'] });
    expect(capabilitiesOf(m)).toEqual(['chat', 'tools', 'structured_outputs', 'reasoning']);
  });

  it('a text model that reads images is listed with vision', () => {
    expect(capabilitiesOf(modelOf({ id: 'a/m', category: 'text', input_modalities: ['text', 'image'] }))).toEqual(['chat', 'vision']);
  });

  it('the config list replaces the derivation, so an operator can also drop a derived capability', () => {
    const m = modelOf({ id: 'a/m', category: 'text', supported_parameters: ['tools'], capabilities: ['chat', 'pdf'] });
    expect(capabilitiesOf(m)).toEqual(['chat', 'pdf']);
  });

  it('reasoning is supported exactly when the capabilities list it, derived or given', () => {
    expect(supportsReasoning(modelOf({ id: 'a/m', category: 'text', supported_parameters: ['include_reasoning'] }))).toBe(true);
    expect(supportsReasoning(modelOf({ id: 'a/m', category: 'text', capabilities: ['chat', 'reasoning'] }))).toBe(true);
    expect(supportsReasoning(modelOf({ id: 'a/m', category: 'text', supported_parameters: ['reasoning'], capabilities: ['chat'] }))).toBe(false);
    expect(supportsReasoning(modelOf({ id: 'a/m', category: 'text' }))).toBe(false);
  });
});
