import type { ModelConfig, ProviderConfig, ProviderPreferences, ResolvedEndpoint, ResolvedModel } from '@gateway/config';
import { inputCharge, inputWorstCase, type InputTexts } from '@gateway/pricing';
import type { RequestContext } from '@gateway/service-kit';
import { PaidCall, guarded, refuseOtherCategory, type SpendDeps } from '@gateway/spend';
import type { CallOptions } from '@gateway/upstreams';
import { countedInputTokens } from './input-tokens';

export interface InputBilledDeps<P> extends SpendDeps {
  /** The capability this route needs, by provider kind; undefined where the kind lacks it. */
  protocolOf(kind: ProviderConfig['kind']): P | undefined;
}

export interface InputBilledCall<P, T> {
  category: Extract<ModelConfig['category'], 'embedding' | 'rerank'>;
  slug: string;
  /** For messages: `/v1/embeddings`. */
  route: string;
  /** What the upstream reads as input: the hold bounds its tokens from bytes and lengths, with no tokenizer. */
  inputs: InputTexts;
  /** The client's provider preferences. */
  provider?: ProviderPreferences;
  /** The client's `max_cost` in nano-USD: a model whose counted input passes it is not tried; the hold never does. */
  maxCost?: bigint;
  /**
   * One attempt on one endpoint, including whatever checks the answer: a throw here fails over and charges nothing,
   * so nothing that could throw after the settle is left for later.
   */
  attempt(protocol: P, endpoint: ResolvedEndpoint, opts: CallOptions): Promise<T>;
  /** The tokens charged for this answer: the upstream's own figure where it gives one, else counted. */
  inputTokens(result: T): number | Promise<number>;
}

export interface InputBilledOutcome<T> {
  result: T;
  model: ResolvedModel;
  tokens: number;
  /** The exact charge, a decimal string. */
  cost: string;
  requestId: string;
}

/**
 * The flow shared by the routes billed on their input alone (embeddings, rerank): hold on an upper bound of the
 * input tokens, call with failover, settle on the tokens actually counted.
 */
export async function runInputBilled<P, T>(
  ctx: RequestContext,
  deps: InputBilledDeps<P>,
  call: InputBilledCall<P, T>,
): Promise<InputBilledOutcome<T>> {
  refuseOtherCategory(deps.registry, call.slug, call.category, call.route);
  // Under a cap, the least the call can cost is its input as counted: the byte bound of the hold would refuse calls that fit.
  const counted = call.maxCost === undefined ? undefined : await countedInputTokens(call.inputs);
  const paid = await PaidCall.begin(deps, {
    ctx,
    category: call.category,
    slugs: [call.slug],
    streamed: false,
    provider: call.provider,
    worstCase: (m) => inputWorstCase(m, call.inputs),
    maxCostNano: call.maxCost,
    leastCost: counted === undefined ? undefined : (m) => inputCharge(m, counted),
  });
  return guarded(paid, async () => {
    const { result, model } = await paid.call(async (_m, ep) => {
      const protocol = deps.protocolOf(ep.provider.kind);
      // A provider kind without this capability fails over like any broken endpoint.
      if (!protocol) throw new Error(`provider kind ${ep.provider.kind} cannot serve ${call.category} models`);
      return call.attempt(protocol, ep, { requestId: ctx.requestId });
    });
    const tokens = await call.inputTokens(result);
    const cost = await paid.settle({ chargeNano: inputCharge(model, tokens), tokensPrompt: tokens, tokensCompletion: 0, finishReason: null });
    return { result, model, tokens, cost, requestId: ctx.requestId };
  });
}

/** An upstream's token figure, when it gave a usable one: 0 for a non-empty input means "not counted", not "free". */
export function reportedTokens(n: number | undefined): number | undefined {
  return n !== undefined && Number.isInteger(n) && n > 0 ? n : undefined;
}
