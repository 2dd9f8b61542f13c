import type { ModelConfig, ResolvedModel } from '@gateway/config';

/** What each category reads when the config does not say, and what it writes (which the routes fix). */
const BY_CATEGORY: Record<ModelConfig['category'], { input: string[]; output: string[] }> = {
  text: { input: ['text'], output: ['text'] },
  image: { input: ['text', 'image'], output: ['image'] },
  video: { input: ['text', 'image'], output: ['video'] },
  audio: { input: ['text', 'audio'], output: ['audio', 'text'] },
  embedding: { input: ['text'], output: ['embedding'] },
  rerank: { input: ['text'], output: ['text'] },
};

/**
 * An audio model's direction follows its pricing, the axis the audio routes accept: per character is speech
 * (text in, audio out), per second is transcription (audio in, text out); both, or neither yet, is either way.
 */
function audioDirection(m: ResolvedModel): { input: string[]; output: string[] } {
  const { character, second } = m.config.pricing;
  if (character !== undefined && second === undefined) return { input: ['text'], output: ['audio'] };
  if (second !== undefined && character === undefined) return { input: ['audio'], output: ['text'] };
  return BY_CATEGORY.audio;
}

const defaults = (m: ResolvedModel) => (m.config.category === 'audio' ? audioDirection(m) : BY_CATEGORY[m.config.category]);

export const inputModalitiesOf = (m: ResolvedModel): string[] => [...(m.config.input_modalities ?? defaults(m).input)];

/** The tokenizer the gateway counts with (a broken stream's delivered tokens), for the models it bills by token. */
const TOKEN_PRICED = new Set<ModelConfig['category']>(['text', 'embedding', 'rerank']);

export function architectureOf(m: ResolvedModel) {
  const input = inputModalitiesOf(m);
  const output = [...defaults(m).output];
  return {
    modality: `${input.join('+')}->${output.join('+')}`,
    input_modalities: input,
    output_modalities: output,
    tokenizer: TOKEN_PRICED.has(m.config.category) ? 'o200k_base' : null,
    instruct_type: null,
  };
}
