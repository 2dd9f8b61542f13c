import type { ResolvedModel } from '@gateway/config';
import { headline } from '@gateway/money';

/**
 * The headline unit and price. What the config gives wins; what it leaves out is derived: per 1M input tokens for
 * token-priced models, per image, per second of video, per 1M characters (speech) or per minute (transcription).
 */
export function headlineOf(m: ResolvedModel): { unit: string; price: number } {
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
