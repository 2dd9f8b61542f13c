import type { ProviderPreferences } from '@gateway/config';
import { formatUsd } from '@gateway/money';
import { speechCharge } from '@gateway/pricing';
import type { RequestContext } from '@gateway/service-kit';
import { PaidCall, guarded, type Usage } from '@gateway/spend';
import { UpstreamError, type SpeechProtocol, type SpeechRequest } from '@gateway/upstreams';
import { type AudioDeps, protocolAt } from '../audio-models';
import type { AudioClient } from './audio-client';

export interface SpeechCall {
  slug: string;
  /** The client's provider preferences. */
  provider?: ProviderPreferences;
  /** The client's `max_cost` in nano-USD: the charge is known before the call, so one above it is refused (402). */
  maxCost?: bigint;
  request: SpeechRequest;
}

/**
 * Speech, streamed: hold the input's characters × the character rate (the worst case is the actual charge, so the
 * exact charge goes out as X-Gateway-Cost before the first byte), call with failover, relay the audio as it
 * arrives, settle when it ends. The first chunk is pulled inside the failover loop, so an upstream that accepts and
 * dies before any audio still hands over to the next endpoint, and the client gets a JSON error with a real status
 * if all fail. After the first byte:
 * - the upstream breaks: the hold is released (the client holds a truncated file, not usable audio) and the
 *   connection is cut, so the truncation shows as an error, not as a short file; the cost header already sent is void;
 * - the client leaves: charged as announced, recorded as failed with `client_closed`. The upstream has read the
 *   whole input by then, and the input is all that is billed (as a text stream's prompt is, whenever it breaks).
 */
export async function runSpeech(ctx: RequestContext, deps: AudioDeps<SpeechProtocol>, call: SpeechCall, client: AudioClient): Promise<void> {
  const paid = await PaidCall.begin(deps, {
    ctx,
    category: 'audio',
    slugs: [call.slug],
    provider: call.provider,
    maxCostNano: call.maxCost,
    streamed: true,
    worstCase: (m) => speechCharge(m, call.request.input),
  });
  const { result, model } = await guarded(paid, () =>
    paid.call(async (_m, ep) => {
      const audio = await protocolAt(deps, ep, 'speech').speech(ep, call.request, { signal: client.signal, requestId: ctx.requestId });
      const iterator = audio.body[Symbol.asyncIterator]();
      const first = await iterator.next();
      // A 2xx without a byte of audio is no answer: the next endpoint may take over.
      if (first.done) throw new UpstreamError('protocol', 'upstream answered no audio');
      return { contentType: audio.contentType, iterator, first: first.value };
    }, client.signal),
  );
  const chargeNano = speechCharge(model, call.request.input);
  const usage: Usage = { chargeNano, tokensPrompt: 0, tokensCompletion: 0, finishReason: null };
  paid.markFirstByte();
  try {
    client.open({ contentType: result.contentType, cost: formatUsd(chargeNano) });
    await client.write(result.first);
    for (let step = await result.iterator.next(); !step.done; step = await result.iterator.next()) await client.write(step.value);
  } catch (err) {
    if (client.signal.aborted) {
      await paid.settlePartial(usage, 'client_closed');
      return;
    }
    deps.logger.warn({ err, requestId: ctx.requestId }, 'speech stream broke after its first byte; hold released');
    await paid.release('upstream_unavailable');
    client.cut();
    return;
  }
  await paid.settle(usage);
  client.end();
}
