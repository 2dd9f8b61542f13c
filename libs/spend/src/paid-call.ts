import type { BillingPort } from '@gateway/billing-client';
import type { ModelConfig, ModelRegistry, ProviderPreferences, ResolvedEndpoint, ResolvedModel } from '@gateway/config';
import { GatewayError } from '@gateway/errors';
import type { RequestContext } from '@gateway/service-kit';
import { type UpstreamError, classify } from '@gateway/upstreams';
import type { Circuits } from './circuits';
import { refuseOtherCategory } from './category';
import { count } from './counters';
import { HoldCloser, type CallFacts, type CloseDeps, type Usage } from './hold-closer';
import type { HoldRecord } from './hold-record';
import { affordablePlan } from './cost-cap';
import { type PlannedModel, planRoute } from './route-plan';

export interface SpendDeps extends CloseDeps {
  registry: ModelRegistry;
  billing: BillingPort;
  circuits: Circuits;
  /** How long a synchronous hold may stay open before the sweeper releases it (limits.hold_ttl; 15 minutes). */
  holdTtlMs?: number;
  /** How often a stream tells billing what it has delivered so far (PaidCall.progress); 5 seconds. */
  checkpointEveryMs?: number;
  /** Draws `routing: weighted` orders; Math.random unless a test pins it. */
  random?: () => number;
}

const CHECKPOINT_EVERY_MS = 5_000;

/** How long a stream runs before its first checkpoint (PaidCall.progress), and between checkpoints. */
export const checkpointEveryMs = (deps: Pick<SpendDeps, 'checkpointEveryMs'>): number => deps.checkpointEveryMs ?? CHECKPOINT_EVERY_MS;

export interface PaidCallSpec {
  ctx: RequestContext;
  category: ModelConfig['category'];
  /** The requested model, then the `models` fallbacks, in order. */
  slugs: string[];
  streamed: boolean;
  /** The client's `provider` preferences, validated at the route (providerPreferencesSchema). */
  provider?: ProviderPreferences;
  /** Worst-case charge of this request on one model, in nano-USD. */
  worstCase(model: ResolvedModel): bigint;
  /** The client's `max_cost` in nano-USD (maxCostSchema): the hold never passes it (cost-cap.ts). */
  maxCostNano?: bigint;
  /**
   * The least this request can cost on one model, in nano-USD: a model where it passes `maxCostNano` is not tried.
   * Absent, the worst case: a fixed-price call (speech, transcription, video) costs what it holds.
   */
  leastCost?(model: ResolvedModel): bigint;
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
  /** Some call of this request was answered by other than its first endpoint tried (a batch makes several calls). */
  private fallbackUsed = false;
  private firstByteAt: number | undefined;
  private answeredBy: ResolvedModel | undefined;
  private answeredAt: { endpoint: ResolvedEndpoint; startedAt: number } | undefined;
  private answers = 0;
  private readonly closer: HoldCloser;
  private nextCheckpointAt = 0;
  private checkpointing = false;

  private constructor(
    private readonly deps: SpendDeps,
    private readonly spec: PaidCallSpec,
    /** The models and endpoints this request may try, in order (route-plan.ts). */
    private readonly plan: PlannedModel[],
    /** The hold as plain data: hand it to another process (holdRecordToJSON) and a HoldCloser there can close it. */
    readonly record: HoldRecord,
  ) {
    // A close the bus refuses is published again until the hold expires: the caller may already have its answer.
    this.closer = new HoldCloser(deps, record, { republish: true });
  }

  /** The models that may answer, in the order they are tried. */
  get candidates(): ResolvedModel[] {
    return this.plan.map((p) => p.model);
  }

  /**
   * Resolves the models, plans the route and places the hold; throws 400 invalid_request (a model of another
   * category, provider preferences that exclude everything or a model above provider.max_price),
   * 409 model_unavailable or 402 (the balance, or a `max_cost` below the least the call can cost) before anything
   * is held or routed.
   */
  static async begin(deps: SpendDeps, spec: PaidCallSpec): Promise<PaidCall> {
    // Every named model, fallbacks too: one of another category can never serve this route, so it is the client's
    // mistake (400) whatever else is servable, the same answer on every route (category.ts).
    for (const slug of spec.slugs) refuseOtherCategory(deps.registry, slug, spec.category, spec.ctx.route ?? 'this route');
    const plan = affordablePlan(planOf(deps, spec), spec);
    const candidates = plan.map((p) => p.model);
    // Any candidate may end up answering, so the hold must cover the dearest of them (a loop: Math.max refuses bigints).
    let amount = 0n;
    for (const m of candidates) {
      const w = spec.worstCase(m);
      if (w > amount) amount = w;
    }
    // The cap is the most the call may cost, so the most it holds: every charge is clamped to the hold at the close.
    if (spec.maxCostNano !== undefined && spec.maxCostNano < amount) amount = spec.maxCostNano;
    const { ctx } = spec;
    const model = candidates[0].config.id;
    const hold = await deps.billing.placeHold({
      accountId: ctx.accountId,
      keyId: ctx.keyId,
      requestId: ctx.requestId,
      idempotencyKey: ctx.idempotencyKey,
      amountNano: amount,
      model,
      ttlMs: deps.holdTtlMs ?? 15 * 60_000,
    });
    deps.openHolds?.add(hold.holdId);
    return new PaidCall(deps, spec, plan, {
      holdId: hold.holdId,
      accountId: ctx.accountId,
      keyId: ctx.keyId,
      requestId: ctx.requestId,
      // Billing's figure, not ours: an idempotent retry gets the hold the first request placed.
      amountNano: hold.amountNano,
      expiresAt: hold.expiresAt,
      model,
      streamed: spec.streamed,
      startedAt: ctx.startedAt,
      ...(spec.provider ? { provider: spec.provider } : {}),
    });
  }

  /**
   * The call of a hold another process placed, from its record (a job's worker, perhaps after a restart): the same
   * failover and the same closing, without placing anything. Throws 409 model_unavailable while nothing can serve.
   */
  static resume(deps: SpendDeps, spec: Omit<PaidCallSpec, 'worstCase'>, record: HoldRecord): PaidCall {
    // The preferences travel with the hold: the process that placed it validated them against the client's request.
    const routed = { ...spec, provider: spec.provider ?? record.provider };
    return new PaidCall(deps, { ...routed, worstCase: () => record.amountNano }, planOf(deps, routed), record);
  }

  /**
   * Tries the planned endpoints in order (route-plan.ts). An endpoint that fails before answering (connect error, timeout,
   * 429, 5xx) hands over to the next; the client's own 4xx stops the search. On total failure the hold is released.
   */
  async call<T>(attempt: (model: ResolvedModel, endpoint: ResolvedEndpoint) => Promise<T>, clientSignal?: AbortSignal): Promise<Answer<T>> {
    let last: UpstreamError | undefined;
    let tried = 0;
    for (const { model, endpoints } of this.plan) {
      for (const endpoint of endpoints) {
        if (!this.deps.circuits.allow(endpoint.key)) continue;
        this.attempts += 1;
        tried += 1;
        const attemptStart = Date.now();
        try {
          const result = await attempt(model, endpoint);
          if (clientSignal?.aborted) throw clientSignal.reason;
          this.firstByteAt = Date.now();
          this.deps.circuits.success(endpoint.key, this.firstByteAt - attemptStart);
          count(this.deps.metrics, 'attempt', { endpoint: endpoint.key, outcome: 'ok' });
          this.answeredBy = model;
          this.answeredAt = { endpoint, startedAt: attemptStart };
          this.answers += 1;
          if (tried > 1) this.fallbackUsed = true;
          return { result, model, endpoint };
        } catch (e) {
          if (clientSignal?.aborted) {
            // The client hung up: not the endpoint's fault, so no circuit counts it and no other endpoint is tried.
            this.deps.circuits.abandon(endpoint.key);
            await this.release('client_closed');
            throw new GatewayError('upstream_unavailable', 'The client closed the request before the answer began');
          }
          const err = classify(e);
          count(this.deps.metrics, 'attempt', { endpoint: endpoint.key, outcome: err.clientFault ? 'client_error' : err.kind });
          if (err.clientFault) {
            await this.release('invalid_request');
            throw new GatewayError('invalid_request', `The model refused the request: ${err.message}`);
          }
          this.deps.circuits.failure(endpoint.key);
          this.deps.logger.warn(
            { requestId: this.spec.ctx.requestId, endpoint: endpoint.key, kind: err.kind, status: err.status },
            'upstream attempt failed',
          );
          last = err;
        }
      }
    }
    await this.release('upstream_unavailable');
    throw new GatewayError(
      'upstream_unavailable',
      last
        ? `Every upstream for this model failed (${this.attempts} attempt${this.attempts === 1 ? '' : 's'}); nothing was charged`
        : 'No upstream is healthy for this model right now; nothing was charged',
    );
  }

  /**
   * The hold now belongs to something that outlives this request and closes it later (a job's row): a drain of this
   * process no longer waits for it.
   */
  handOff(): void {
    this.deps.openHolds?.delete(this.record.holdId);
  }

  /** Marks the first byte of a stream, for the latency figure. */
  markFirstByte(): void {
    this.firstByteAt ??= Date.now();
  }

  /**
   * Called as a stream delivers. Every `checkpointEveryMs` (5 s, counted from the first call) it measures what has
   * been delivered and publishes it as the hold's checkpoint, which billing charges if this process dies before the
   * close. One at a time and off the stream's path: the stream never waits for a count or the bus.
   */
  progress(measure: () => Promise<Usage>): void {
    const now = Date.now();
    const every = checkpointEveryMs(this.deps);
    if (this.nextCheckpointAt === 0) this.nextCheckpointAt = now + every;
    if (now < this.nextCheckpointAt || this.checkpointing || this.closer.closed) return;
    this.nextCheckpointAt = now + every;
    this.checkpointing = true;
    measure()
      .then((usage) => this.closer.checkpoint(usage, this.facts()))
      .catch((err: unknown) => this.deps.logger.warn({ err, requestId: this.record.requestId }, 'could not measure a stream for its checkpoint'))
      .finally(() => {
        this.checkpointing = false;
      });
  }

  /** Settles at the actual charge, capped at the hold; returns the exact charge as the string clients see. */
  settle(usage: Usage): Promise<string> {
    this.noteSpeed(usage);
    return this.closer.settle(usage, this.facts());
  }

  /**
   * The same settle, for a caller that writes its whole answer in this turn of the event loop: the charge at once,
   * the close published on the next turn, after the answer's last byte (HoldCloser.settleAfterAnswer).
   */
  settleAfterAnswer(usage: Usage): Promise<string> {
    this.noteSpeed(usage);
    return this.closer.settleAfterAnswer(usage, this.facts());
  }

  private noteSpeed(usage: Usage): void {
    // A batch's tokens came from several calls, perhaps on several endpoints: no one endpoint's speed.
    if (this.answeredAt && this.answers === 1) {
      const { endpoint, startedAt } = this.answeredAt;
      this.deps.circuits.speed.throughput(endpoint.key, usage.tokensCompletion, Date.now() - startedAt);
    }
  }

  /** Releases the hold: nothing is charged, the usage record carries the error code. */
  release(errorCode: string, partial?: Pick<Usage, 'tokensPrompt' | 'tokensCompletion'>): Promise<void> {
    return this.closer.release(errorCode, partial, this.facts());
  }

  /** A stream that broke after delivering some answer: charged for what was delivered, recorded as failed. */
  settlePartial(usage: Usage, errorCode: string): Promise<string> {
    return this.closer.settlePartial(usage, errorCode, this.facts());
  }

  private facts(): CallFacts {
    return {
      model: this.answeredBy?.config.id,
      attempts: this.attempts,
      fallbackUsed: this.fallbackUsed,
      firstByteAt: this.firstByteAt,
      provider: this.answeredAt?.endpoint.provider.id,
    };
  }
}

/** The servable models, then the client's provider preferences and the circuits over their endpoints. */
function planOf(deps: SpendDeps, spec: Pick<PaidCallSpec, 'slugs' | 'category' | 'provider'>): PlannedModel[] {
  const { circuits } = deps;
  return planRoute({
    models: resolveCandidates(deps, spec),
    prefs: spec.provider,
    healthy: (key) => circuits.isAvailable(key),
    speed: (key) => circuits.speed.of(key),
    random: deps.random ?? Math.random,
  });
}

function resolveCandidates(deps: SpendDeps, spec: Pick<PaidCallSpec, 'slugs' | 'category'>): ResolvedModel[] {
  const seen = new Set<string>();
  const servable: ResolvedModel[] = [];
  let reason = '';
  for (const slug of spec.slugs) {
    if (seen.has(slug)) continue;
    seen.add(slug);
    const m = deps.registry.get(slug);
    if (!m) reason ||= `Model ${slug} does not exist`;
    // begin() refused this already; a job resumed after the operator recategorised its model lands here.
    else if (m.config.category !== spec.category) reason ||= `Model ${slug} is a ${m.config.category} model and cannot serve this route`;
    else if (m.config.status !== 'available') reason ||= `Model ${slug} is coming soon and cannot be served yet`;
    else servable.push(m);
  }
  if (servable.length === 0) throw new GatewayError('model_unavailable', reason || 'No model was requested');
  return servable;
}
