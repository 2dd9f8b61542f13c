import type { ProviderPreferences } from '@gateway/config';
import { transcriptionCharge } from '@gateway/pricing';
import type { RequestContext } from '@gateway/service-kit';
import { PaidCall, guarded } from '@gateway/spend';
import type { TranscriptionProtocol, TranscriptionRequest, TranscriptionResult } from '@gateway/upstreams';
import { type AudioDeps, protocolAt } from '../audio-models';

export interface TranscriptionCall {
  slug: string;
  /** The client's provider preferences. */
  provider?: ProviderPreferences;
  /** The client's `max_cost` in nano-USD: the measured charge above it is refused (402); the charge never passes it. */
  maxCost?: bigint;
  request: TranscriptionRequest;
  /** The upload's duration as the gateway measured it, before the call. */
  measuredSeconds: number;
}

export interface TranscriptionOutcome {
  result: TranscriptionResult;
  /** The exact charge, a decimal string. */
  cost: string;
}

/**
 * Transcription: hold the measured seconds × the second rate, call with failover, settle on the seconds the
 * upstream reports (capped at the hold by the closer, the upstream's figure kept on the record), or on the
 * measured seconds when it reports none, and then the record says the figure is the gateway's estimate.
 */
export async function runTranscription(
  ctx: RequestContext,
  deps: AudioDeps<TranscriptionProtocol>,
  call: TranscriptionCall,
): Promise<TranscriptionOutcome> {
  const paid = await PaidCall.begin(deps, {
    ctx,
    category: 'audio',
    slugs: [call.slug],
    provider: call.provider,
    maxCostNano: call.maxCost,
    streamed: false,
    worstCase: (m) => transcriptionCharge(m, call.measuredSeconds),
  });
  return guarded(paid, async () => {
    const { result, model } = await paid.call((_m, ep) =>
      protocolAt(deps, ep, 'transcriptions').transcribe(ep, call.request, { requestId: ctx.requestId }),
    );
    // 0 s for a recording that measured longer means "not counted", not "free".
    const reported = result.durationSeconds !== undefined && result.durationSeconds > 0 ? result.durationSeconds : undefined;
    const cost = await paid.settle({
      chargeNano: transcriptionCharge(model, reported ?? call.measuredSeconds),
      tokensPrompt: 0,
      tokensCompletion: 0,
      finishReason: null,
      estimated: reported === undefined,
    });
    return { result, cost };
  });
}
