import type { BillingPort, Hold } from '@gateway/billing-client';
import type { EventBus } from '@gateway/bus';
import type { ModelConfig, ModelRegistry, ResolvedEndpoint, ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import { EVENT_TYPES, TOPICS, type HoldClose, type UsageRecord } from '@gateway/events';
import { formatUsd } from '@gateway/money';
import type { Logger, Metrics, RequestContext } from '@gateway/service-kit';
import { UpstreamError, classify } from '@gateway/upstreams';
import type { Circuits } from './circuits';

export interface SpendDeps {
  registry: ModelRegistry;
  billing: BillingPort;
  bus: EventBus;
  circuits: Circuits;
  logger: Logger;
  /** Prometheus counters of attempts, closes and charges; absent in unit tests. */
  metrics?: Metrics;
  /** How long a synchronous hold may stay open before the sweeper releases it. */
  holdTtlMs?: number;
}

export interface PaidCallSpec {
  ctx: RequestContext;
  category: ModelConfig['category'];
  /** The requested model, then the `models` fallbacks, in order. */
  slugs: string[];
  streamed: boolean;
  /** Worst-case charge of this request on one model, in nano-USD. */
  worstCase(model: ResolvedModel): bigint;
}

export interface Usage {
  /** What the caller is charged, before the cap at the hold. */
  chargeNano: bigint;
  tokensPrompt: number;
  tokensCompletion: number;
  finishReason: string | null;
}

export interface Answer<T> {
  result: T;
  model: ResolvedModel;
  endpoint: ResolvedEndpoint;
}

/**
 * The one money flow of every spending route: resolve → hold worst case → call with failover → settle or release.
 * Routes differ only in how they validate, estimate, call and shape the answer; they never touch the ledger themselves.
 */
export class PaidCall {
  private attempts = 0;
  private firstByteAt: number | undefined;
  private closed = false;
  private answeredBy: ResolvedModel | undefined;

  private constructor(
    private readonly deps: SpendDeps,
    private readonly spec: PaidCallSpec,
    readonly candidates: ResolvedModel[],
    readonly hold: Hold,
  ) {}

  /** Resolves the models and places the hold; throws 409 model_unavailable or 402 before anything is routed. */
  static async begin(deps: SpendDeps, spec: PaidCallSpec): Promise<PaidCall> {
    const candidates = resolveCandidates(deps, spec);
    const amount = candidates.reduce((max, m) => {
      const w = spec.worstCase(m);
      return w > max ? w : max;
    }, 0n);
    const hold = await deps.billing.placeHold({
      accountId: spec.ctx.accountId,
      keyId: spec.ctx.keyId,
      requestId: spec.ctx.requestId,
      idempotencyKey: spec.ctx.idempotencyKey,
      amountNano: amount,
      model: candidates[0].config.id,
      ttlMs: deps.holdTtlMs ?? 15 * 60_000,
    });
    return new PaidCall(deps, spec, candidates, hold);
  }

  /**
   * Tries each candidate's endpoints in order. An endpoint that fails before answering (connect error, timeout,
   * 429, 5xx) hands over to the next; the client's own 4xx stops the search. On total failure the hold is released.
   */
  async call<T>(attempt: (model: ResolvedModel, endpoint: ResolvedEndpoint) => Promise<T>, clientSignal?: AbortSignal): Promise<Answer<T>> {
    let last: UpstreamError | undefined;
    for (const model of this.candidates) {
      for (const endpoint of model.endpoints) {
        if (!this.deps.circuits.allow(endpoint.key)) continue;
        this.attempts += 1;
        try {
          const result = await attempt(model, endpoint);
          if (clientSignal?.aborted) throw clientSignal.reason;
          this.firstByteAt = Date.now();
          this.deps.circuits.success(endpoint.key);
          this.count('attempt', { endpoint: endpoint.key, outcome: 'ok' });
          this.answeredBy = model;
          return { result, model, endpoint };
        } catch (e) {
          if (clientSignal?.aborted) {
            // The client hung up: not the endpoint's fault, so no circuit counts it and no other endpoint is tried.
            this.deps.circuits.abandon(endpoint.key);
            await this.release('client_closed');
            throw new GatewayError('upstream_unavailable', 'The client closed the request before the answer began');
          }
          const err = classify(e);
          this.count('attempt', { endpoint: endpoint.key, outcome: err.clientFault ? 'client_error' : err.kind });
          if (err.clientFault) {
            await this.release('invalid_request');
            throw new GatewayError('invalid_request', `The model refused the request: ${err.message}`);
          }
          this.deps.circuits.failure(endpoint.key);
          this.deps.logger.warn({ requestId: this.spec.ctx.requestId, endpoint: endpoint.key, kind: err.kind, status: err.status }, 'upstream attempt failed');
          last = err;
        }
      }
    }
    await this.release('upstream_unavailable');
    throw new GatewayError(
      'upstream_unavailable',
      last ? `Every upstream for this model failed (${this.attempts} attempt${this.attempts === 1 ? '' : 's'}); nothing was charged` : 'No upstream is healthy for this model right now; nothing was charged',
    );
  }

  private count(name: keyof typeof COUNTERS, labels: Record<string, string>, by = 1): void {
    const m = this.deps.metrics;
    if (!m) return;
    const [metric, help, labelNames] = COUNTERS[name];
    m.counter(metric, help, [...labelNames]).inc(labels, by);
  }

  /** Marks the first byte of a stream, for the latency figure. */
  markFirstByte(): void {
    this.firstByteAt ??= Date.now();
  }

  /** Settles at the actual charge, capped at the hold; returns the exact charge as the string clients see. */
  settle(usage: Usage): Promise<string> {
    return this.settleAs(usage, 'succeeded', null, usage.finishReason);
  }

  /** Releases the hold: nothing is charged, the usage record carries the error code. */
  async release(errorCode: string, partial?: Pick<Usage, 'tokensPrompt' | 'tokensCompletion'>): Promise<void> {
    await this.close('release', 0n, {
      status: 'failed',
      error_code: errorCode,
      finish_reason: 'error',
      tokens_prompt: partial?.tokensPrompt ?? 0,
      tokens_completion: partial?.tokensCompletion ?? 0,
    });
  }

  /** A stream that broke after delivering some answer: charged for what was delivered, recorded as failed. */
  settlePartial(usage: Usage, errorCode: string): Promise<string> {
    return this.settleAs(usage, 'failed', errorCode, 'error');
  }

  /** A charge above the hold is capped at it, and the upstream's figure kept on the record, never silently. */
  private async settleAs(usage: Usage, status: UsageRecord['status'], errorCode: string | null, finishReason: string | null): Promise<string> {
    const capped = usage.chargeNano > this.hold.amountNano;
    const charge = capped ? this.hold.amountNano : usage.chargeNano;
    await this.close('settle', charge, {
      status,
      error_code: errorCode,
      finish_reason: finishReason,
      tokens_prompt: usage.tokensPrompt,
      tokens_completion: usage.tokensCompletion,
      capped_from_nano: capped ? usage.chargeNano.toString() : undefined,
    });
    return formatUsd(charge);
  }

  private async close(
    outcome: HoldClose['outcome'],
    charge: bigint,
    rec: Pick<UsageRecord, 'status' | 'error_code' | 'finish_reason' | 'tokens_prompt' | 'tokens_completion' | 'capped_from_nano'>,
  ): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.count('close', { outcome, status: rec.status });
    if (charge > 0n) this.count('charge', { model: (this.answeredBy ?? this.candidates[0]).config.id }, Number(charge) / 1e9);
    const now = Date.now();
    const started = this.spec.ctx.startedAt;
    const record: UsageRecord = {
      model: (this.answeredBy ?? this.candidates[0]).config.id,
      streamed: this.spec.streamed,
      native_tokens_prompt: rec.tokens_prompt,
      native_tokens_completion: rec.tokens_completion,
      num_media_prompt: 0,
      num_media_completion: 0,
      latency: Math.max(0, (this.firstByteAt ?? now) - started),
      generation_time: Math.max(0, now - started),
      attempts: this.attempts,
      fallback_used: this.attempts > 1,
      origin: '',
      finished_at: new Date(now).toISOString(),
      ...rec,
    };
    const data: HoldClose = {
      hold_id: this.hold.holdId,
      account_id: this.spec.ctx.accountId,
      request_id: this.spec.ctx.requestId,
      outcome,
      charge_nano: charge.toString(),
      record,
    };
    try {
      // Keyed by hold, not account: closes of different holds commute (each applies once, to its own hold), so
      // ordering them per account would only serialise a busy account's settles.
      await this.deps.bus.publish(TOPICS.holds, { id: `${this.hold.holdId}:close`, type: EVENT_TYPES.holdClose, key: this.hold.holdId, data });
    } catch (err) {
      // The hold stays open and the sweeper releases it at expiry: the client is never charged twice, at worst not at all.
      this.deps.logger.error({ err, holdId: this.hold.holdId, requestId: this.spec.ctx.requestId }, 'could not publish hold close; it will expire');
    }
  }
}

const COUNTERS = {
  attempt: ['gateway_upstream_attempts_total', 'Upstream attempts by endpoint and outcome', ['endpoint', 'outcome']],
  close: ['gateway_holds_closed_total', 'Holds settled or released, by outcome and request status', ['outcome', 'status']],
  // A float is fine for a dashboard; the ledger itself never sees this figure.
  charge: ['gateway_charged_usd_total', 'USD charged, by model (for dashboards; the ledger is the record)', ['model']],
} as const;

function resolveCandidates(deps: SpendDeps, spec: PaidCallSpec): ResolvedModel[] {
  const seen = new Set<string>();
  const servable: ResolvedModel[] = [];
  let reason = '';
  for (const slug of spec.slugs) {
    if (seen.has(slug)) continue;
    seen.add(slug);
    const m = deps.registry.get(slug);
    if (!m) reason ||= `Model ${slug} does not exist`;
    else if (m.config.category !== spec.category) reason ||= `Model ${slug} is a ${m.config.category} model and cannot serve this route`;
    else if (m.config.status !== 'available') reason ||= `Model ${slug} is coming soon and cannot be served yet`;
    else if (!m.endpoints.some((e) => deps.circuits.isAvailable(e.key))) reason ||= `Model ${slug} has no healthy upstream right now`;
    else servable.push(m);
  }
  if (servable.length === 0) throw new GatewayError('model_unavailable', reason || 'No model was requested');
  return servable;
}
