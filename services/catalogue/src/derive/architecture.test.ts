import { modelOf } from '../testing/models';
import { architectureOf } from './architecture';

describe('architecture', () => {
  it('a text model reads and writes text, counted with o200k_base', () => {
    expect(architectureOf(modelOf({ id: 'a/m', category: 'text' }))).toEqual({
      modality: 'text->text',
      input_modalities: ['text'],
      output_modalities: ['text'],
      tokenizer: 'o200k_base',
      instruct_type: null,
    });
  });

  it('input_modalities from the config replace the category default; the output stays the category`s', () => {
    const a = architectureOf(modelOf({ id: 'a/m', category: 'text', input_modalities: ['text', 'image', 'file'] }));
    expect(a).toMatchObject({ modality: 'text+image+file->text', input_modalities: ['text', 'image', 'file'], output_modalities: ['text'] });
  });

  it.each([
    [{ character: '0.000015' }, 'text->audio'],
    [{ second: '0.0001' }, 'audio->text'],
    [{ character: '0.000015', second: '0.0001' }, 'text+audio->audio+text'],
  ])('an audio model priced %j runs %s', (pricing, modality) => {
    expect(architectureOf(modelOf({ id: 'a/m', category: 'audio', pricing })).modality).toBe(modality);
  });

  it('models not billed by token name no tokenizer', () => {
    expect(architectureOf(modelOf({ id: 'a/m', category: 'image', pricing: { image: '0.02' } })).tokenizer).toBeNull();
    expect(architectureOf(modelOf({ id: 'a/m', category: 'embedding' })).tokenizer).toBe('o200k_base');
  });
});
