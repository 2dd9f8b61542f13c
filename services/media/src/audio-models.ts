import type { ModelRegistry, ProviderConfig, ResolvedEndpoint } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { refuseOtherCategory, type SpendDeps } from '@gateway/spend';

/** What the audio routes need beyond the money flow: the capability they call, by provider kind. */
export interface AudioDeps<P> extends SpendDeps {
  /** Undefined where the provider kind lacks the capability. */
  protocolOf(kind: ProviderConfig['kind']): P | undefined;
}

/** The two audio billing axes: speech per input character, transcription per second of audio. */
export type AudioRate = 'character' | 'second';

const UNIT: Record<AudioRate, string> = { character: 'input character', second: 'second of audio' };

/**
 * 400 before any hold unless `slug` is an audio model priced on the route's axis: `audio` covers speech and
 * transcription models alike, and a model without the route's price could only be served free. A slug that does
 * not exist is left to PaidCall (409, as on every synchronous route).
 */
export function refuseUnpricedAudio(registry: ModelRegistry, slug: string, rate: AudioRate, route: string): void {
  const model = refuseOtherCategory(registry, slug, 'audio', route);
  if (model && model.config.pricing[rate] === undefined) {
    throw new GatewayError(
      'invalid_request',
      `Model ${slug} has no pricing.${rate}; ${route} bills per ${UNIT[rate]}, so it serves only models priced that way`,
    );
  }
}

/** The endpoint's protocol; a provider kind without the capability fails over like any broken endpoint. */
export function protocolAt<P>(deps: AudioDeps<P>, endpoint: ResolvedEndpoint, capability: string): P {
  const p = deps.protocolOf(endpoint.provider.kind);
  if (!p) throw new Error(`provider kind ${endpoint.provider.kind} cannot serve ${capability}`);
  return p;
}
