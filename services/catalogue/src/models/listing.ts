import type { ResolvedModel } from '@gateway/config';
import { formatRate, headline, parseRate } from '@gateway/money';

const MODALITY: Record<string, { input: string[]; output: string[] }> = {
  text: { input: ['text'], output: ['text'] },
  image: { input: ['text', 'image'], output: ['image'] },
  video: { input: ['text', 'image'], output: ['video'] },
  audio: { input: ['text', 'audio'], output: ['audio', 'text'] },
  embedding: { input: ['text'], output: ['embedding'] },
  rerank: { input: ['text'], output: ['text'] },
};

/**
 * The headline unit and price when the config gives none: per 1M input tokens for token-priced models,
 * per image, per second of video, per 1M characters or per minute of audio.
 */
function headlineOf(m: ResolvedModel): { unit: string; price: number } {
  const c = m.config;
  if (c.unit !== undefined && c.price !== undefined) return { unit: c.unit, price: c.price };
  const derived = (() => {
    switch (c.category) {
      case 'image':
        return { unit: 'image', price: headline(m.rates.image, 1n) };
      case 'video':
        return { unit: 'second', price: headline(m.rates.second, 1n) };
      case 'audio':
        return m.rates.character > 0n
          ? { unit: '1M characters', price: headline(m.rates.character, 1_000_000n) }
          : { unit: 'minute', price: headline(m.rates.second, 60n) };
      default:
        return { unit: '1M tokens', price: headline(m.rates.prompt, 1_000_000n) };
    }
  })();
  return { unit: c.unit ?? derived.unit, price: c.price ?? derived.price };
}

/** Rates are shown as the config wrote them, normalised ("0.0000010" → "0.000001"). */
const rate = (s: string | undefined) => (s === undefined ? null : formatRate(parseRate(s)));

export function listingItem(m: ResolvedModel) {
  const c = m.config;
  return {
    id: c.id,
    canonical_slug: c.id,
    name: c.name,
    description: c.description ?? '',
    category: c.category,
    status: c.status,
    ...headlineOf(m),
    ...(c.category === 'text' ? { context_length: c.context_length ?? null } : {}),
    pricing: {
      prompt: rate(c.pricing.prompt),
      completion: rate(c.pricing.completion),
      request: rate(c.pricing.request),
      image: rate(c.pricing.image),
    },
    supported_parameters: c.supported_parameters ?? [],
  };
}

/** Narrowed listings (per-category routes) omit canonical_slug and context_length. */
export function narrowedItem(m: ResolvedModel) {
  const { canonical_slug: _slug, context_length: _ctx, ...rest } = listingItem(m) as ReturnType<typeof listingItem> & { context_length?: number };
  return rest;
}

export function modelRecord(m: ResolvedModel) {
  const c = m.config;
  const mod = MODALITY[c.category];
  return {
    ...listingItem(m),
    max_output_tokens: c.max_output_tokens ?? null,
    architecture: {
      modality: `${mod.input.join('+')}->${mod.output.join('+')}`,
      input_modalities: mod.input,
      output_modalities: mod.output,
      tokenizer: c.category === 'text' || c.category === 'embedding' || c.category === 'rerank' ? 'o200k_base' : null,
      instruct_type: null,
    },
    alias_target: null,
    reasoning: { supported: (c.supported_parameters ?? []).includes('reasoning') },
    discount: 0,
  };
}
