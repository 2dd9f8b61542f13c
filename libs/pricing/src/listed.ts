import type { ResolvedModel } from '@gateway/config';
import { formatRate } from '@gateway/money';

/**
 * The per-unit rates a model listing publishes: the very rates the charge functions bill (the registry's exact
 * atto-USD integers), as decimal strings, so what a client reads is what it pays to the last digit. Null where the
 * config sets no price of that kind (absent prices bill 0, but "free" and "not priced that way" differ for a reader).
 * `character` (speech) and `second` (transcription, video) are the audio and video axes; `input_cache_read` and
 * `input_cache_write` the text models' prompt-cache rates (null: such tokens cost `prompt`).
 */
export function listedRates(model: ResolvedModel) {
  const set = model.config.pricing;
  const r = model.rates;
  const show = (given: string | undefined, atto: bigint) => (given === undefined ? null : formatRate(atto));
  return {
    prompt: show(set.prompt, r.prompt),
    completion: show(set.completion, r.completion),
    request: show(set.request, r.request),
    image: show(set.image, r.image),
    character: show(set.character, r.character),
    second: show(set.second, r.second),
    input_cache_read: show(set.input_cache_read, r.inputCacheRead ?? 0n),
    input_cache_write: show(set.input_cache_write, r.inputCacheWrite ?? 0n),
  };
}
