import type { ResolvedModel } from '@gateway/config';

/**
 * The output cap of a text model that names no max_output_tokens (the config schema refuses such text models, so
 * only a model built by hand or a call without a model reaches it). The one default: the hold is sized from it and
 * the message API, which insists on a limit, is sent it.
 */
export const DEFAULT_OUTPUT_CAP = 4096;

/** The most `model` may write per choice: what the client asked for, never above the model's own limit. */
export function outputCap(model: ResolvedModel, requested: number | undefined): number {
  const modelCap = model.config.max_output_tokens ?? DEFAULT_OUTPUT_CAP;
  return requested === undefined ? modelCap : Math.min(requested, modelCap);
}
