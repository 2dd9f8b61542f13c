import type { ResolvedModel } from '@gateway/config';
import { inputModalitiesOf } from './architecture';

/** Parameters whose presence in `supported_parameters` means the capability; several spellings exist upstream. */
const BY_PARAMETER: Record<string, readonly string[]> = {
  tools: ['tools', 'tool_choice'],
  structured_outputs: ['response_format', 'structured_outputs'],
  reasoning: ['reasoning', 'include_reasoning', 'reasoning_effort'],
};

/**
 * What the model does, as the catalogue lists it. The config's `capabilities` replace the derivation entirely (so
 * an operator can also drop a derived one). Derived: the route family the category opens (`chat`, `embeddings`,
 * `rerank`, `image_generation`, `video_generation`; an audio model `speech` when priced per character and
 * `transcription` when priced per second, the axes the audio routes accept), then for text models `vision` when it
 * reads images and `tools`, `structured_outputs`, `reasoning` from its supported parameters.
 */
export function capabilitiesOf(m: ResolvedModel): string[] {
  const c = m.config;
  if (c.capabilities) return [...c.capabilities];
  switch (c.category) {
    case 'embedding':
      return ['embeddings'];
    case 'rerank':
      return ['rerank'];
    case 'image':
      return ['image_generation'];
    case 'video':
      return ['video_generation'];
    case 'audio':
      return [...(c.pricing.character !== undefined ? ['speech'] : []), ...(c.pricing.second !== undefined ? ['transcription'] : [])];
    case 'text': {
      const params = new Set(c.supported_parameters ?? []);
      const fromParams = Object.entries(BY_PARAMETER)
        .filter(([, names]) => names.some((n) => params.has(n)))
        .map(([capability]) => capability);
      return ['chat', ...(inputModalitiesOf(m).includes('image') ? ['vision'] : []), ...fromParams];
    }
  }
}

/** The single-model route's `reasoning.supported` reads the same list, so it never contradicts the catalogue. */
export const supportsReasoning = (m: ResolvedModel): boolean => capabilitiesOf(m).includes('reasoning');
