import type { BusEvent, EventBus } from '@gateway/bus';
import { EVENT_TYPES, TOPICS, type HoldCheckpoint, type HoldClose, type UsageRecord } from '@gateway/events';
import { formatUsd } from '@gateway/money';
import type { Logger, Metrics } from '@gateway/service-kit';
import { count } from './counters';
import type { HoldRecord } from './hold-record';
import type { OpenHolds } from './open-holds';

/** What closing a hold needs: the bus to billing, and somewhere to say it could not. Nothing request-bound. */
export interface CloseDeps {
  bus: EventBus;
  logger: Logger;
  /** Prometheus counters of closes and charges; absent in unit tests. */
  metrics?: Metrics;
  /** The process's holds not yet closed, which a drain waits for: each close takes its hold off once published. */
  openHolds?: OpenHolds;
}

export interface Usage {
  /** What the caller is charged, before the cap at the hold. */
  chargeNano: bigint;
  tokensPrompt: number;
  tokensCompletion: number;
  finishReason: string | null;
  /** Media items the answer made (images returned): the record's num_media_completion. */
  mediaCompletion?: number;
  /** The quantity charged is the gateway's own measure, the upstream reported none: the record says so. */
  estimated?: boolean;
  /** Text: of tokensPrompt, those read from the upstream's prompt cache; of tokensCompletion, reasoning. */
  tokensCached?: number;
  tokensReasoning?: number;
  /** Text: what the cache rates changed against the prompt rate (negative when cache writes cost more). */
  cacheDiscountNano?: bigint;
}

/**
 * How the call went, as far as the closing process knows: PaidCall knows all of it; a process that has only the
 * record passes what it has, and the usage record says no more than that.
 */
export interface CallFacts {
  /** The model that answered (perhaps a fallback); the record's model otherwise. */
  model?: string;
  /** Upstream attempts made, across every call of the request (a prompt batch makes one call per prompt). */
  attempts?: number;
  /** Whether some call was answered by other than the first endpoint it tried; without it, more than one attempt. */
  fallbackUsed?: boolean;
  /** epoch ms of the upstream's first byte; without it latency is the whole generation time. */
  firstByteAt?: number;
  /** The provider id of the endpoint that answered. */
  provider?: string;
}

type RecordFields = Pick<UsageRecord, 'status' | 'error_code' | 'finish_reason' | 'tokens_prompt' | 'tokens_completion' | 'capped_from_nano'> &
  Partial<Pick<UsageRecord, 'usage_estimated' | 'num_media_completion' | 'tokens_cached' | 'tokens_reasoning' | 'cache_discount_nano'>>;

/**
 * The one way a hold leaves open: one `hold.close.v1` event, built from the record alone, so PaidCall and any
 * later process settle the same way. One closer closes its hold at most once; across processes, billing's
 * close_hold applies the first close of a hold and ignores the rest.
 */
export class HoldCloser {
  private done = false;

  constructor(
    private readonly deps: CloseDeps,
    readonly record: HoldRecord,
    /**
     * `republish`: a close the bus refused (Redis away for a moment) is published again in the background until it
     * goes through or the hold expires, so an answered call is still charged once the bus is back. Not for a bus
     * that writes to a transaction's outbox, whose failure ends that transaction.
     */
    private readonly opts: { republish?: boolean } = {},
  ) {}

  /** Whether this closer has already closed (or tried to close) its hold. */
  get closed(): boolean {
    return this.done;
  }

  /** Settles at the actual charge, capped at the hold; returns the exact charge as the string clients see. */
  settle(usage: Usage, facts: CallFacts = {}): Promise<string> {
    return this.settleAs(usage, 'succeeded', null, usage.finishReason, facts);
  }

  /**
   * Settles as `settle` does, but the charge comes back at once (a resolved promise: no turn of the event loop
   * passes) and the close is published on setImmediate, after the caller has written its answer in this turn: the
   * answer does not wait for the bus's acknowledgement (at one connection a round trip to Redis or Kafka, two
   * process wake-ups). Nothing else changes: the closer is closed from now on, the hold stays in `openHolds` until
   * the publish (a drain waits for it), and a refused publish is published again as `settle`'s is. Only a kill
   * between the answer's write and the next turn loses the close, and the hold then expires uncharged: never a
   * double charge. While MAX_UNACKED_CLOSES of these publishes are unanswered (a bus that hangs, as kafkajs does
   * while it retries a dead broker), the caller waits for its own publish as `settle`'s does, so answers cannot
   * outrun the bus without bound.
   */
  settleAfterAnswer(usage: Usage, facts: CallFacts = {}): Promise<string> {
    const { charge, rec } = this.settlement(usage, 'succeeded', null, usage.finishReason);
    const cost = formatUsd(charge);
    const event = this.closeEvent('settle', charge, rec, facts);
    if (!event) return Promise.resolve(cost);
    if (unackedCloses >= MAX_UNACKED_CLOSES) return this.publish(event).then(() => cost);
    unackedCloses++;
    setImmediate(() => {
      void this.publish(event).finally(() => unackedCloses--);
    });
    return Promise.resolve(cost);
  }

  /** A stream that broke after delivering some answer: charged for what was delivered, recorded as failed. */
  settlePartial(usage: Usage, errorCode: string, facts: CallFacts = {}): Promise<string> {
    return this.settleAs(usage, 'failed', errorCode, 'error', facts);
  }

  /** Releases the hold: nothing is charged, the usage record carries the error code. */
  async release(errorCode: string, partial?: Pick<Usage, 'tokensPrompt' | 'tokensCompletion'>, facts: CallFacts = {}): Promise<void> {
    await this.close(
      'release',
      0n,
      {
        status: 'failed',
        error_code: errorCode,
        finish_reason: 'error',
        tokens_prompt: partial?.tokensPrompt ?? 0,
        tokens_completion: partial?.tokensCompletion ?? 0,
      },
      facts,
    );
  }

  private async settleAs(
    usage: Usage,
    status: UsageRecord['status'],
    errorCode: string | null,
    finishReason: string | null,
    facts: CallFacts,
  ): Promise<string> {
    const { charge, rec } = this.settlement(usage, status, errorCode, finishReason);
    await this.close('settle', charge, rec, facts);
    return formatUsd(charge);
  }

  /**
   * What a stream has delivered so far (`hold.checkpoint.v1`), for billing to charge as a late settle if this hold
   * expires unclosed: the process died mid-stream and its close never came. Settled as a broken stream is, recorded as
   * what it will be if it is ever applied (the hold expired with nobody to close it). Only while this closer has not
   * closed; a checkpoint the bus refuses is logged and left to the next one.
   */
  async checkpoint(usage: Usage, facts: CallFacts = {}): Promise<void> {
    if (this.done) return;
    const hold = this.record;
    const { charge, rec } = this.settlement(usage, 'failed', 'hold_expired', 'error');
    const data: HoldCheckpoint = { ...this.ids(), outcome: 'settle', charge_nano: charge.toString(), record: this.usageRecord(rec, facts) };
    const event: BusEvent<HoldCheckpoint> = { id: `${hold.holdId}:checkpoint:${charge}`, type: EVENT_TYPES.holdCheckpoint, key: hold.holdId, data };
    await this.deps.bus.publish(TOPICS.holds, event).catch((err: unknown) => {
      this.deps.logger.warn({ err, holdId: hold.holdId, requestId: hold.requestId }, 'could not publish hold checkpoint');
    });
  }

  /** A charge above the hold is capped at it, and the upstream's figure kept on the record, never silently. */
  private settlement(
    usage: Usage,
    status: UsageRecord['status'],
    errorCode: string | null,
    finishReason: string | null,
  ): { charge: bigint; rec: RecordFields } {
    const capped = usage.chargeNano > this.record.amountNano;
    return {
      charge: capped ? this.record.amountNano : usage.chargeNano,
      rec: {
        status,
        error_code: errorCode,
        finish_reason: finishReason,
        tokens_prompt: usage.tokensPrompt,
        tokens_completion: usage.tokensCompletion,
        capped_from_nano: capped ? usage.chargeNano.toString() : undefined,
        usage_estimated: usage.estimated ?? false,
        num_media_completion: usage.mediaCompletion ?? 0,
        tokens_cached: usage.tokensCached ?? 0,
        tokens_reasoning: usage.tokensReasoning ?? 0,
        cache_discount_nano: (usage.cacheDiscountNano ?? 0n).toString(),
      },
    };
  }

  private ids(): Pick<HoldClose, 'hold_id' | 'account_id' | 'key_id' | 'request_id'> {
    const hold = this.record;
    return { hold_id: hold.holdId, account_id: hold.accountId, key_id: hold.keyId, request_id: hold.requestId };
  }

  private usageRecord(rec: RecordFields, facts: CallFacts): UsageRecord {
    const hold = this.record;
    const attempts = facts.attempts ?? 0;
    const now = Date.now();
    return {
      model: facts.model ?? hold.model,
      streamed: hold.streamed,
      native_tokens_prompt: rec.tokens_prompt,
      native_tokens_completion: rec.tokens_completion,
      num_media_prompt: 0,
      num_media_completion: 0,
      latency: Math.max(0, (facts.firstByteAt ?? now) - hold.startedAt),
      generation_time: Math.max(0, now - hold.startedAt),
      attempts,
      fallback_used: facts.fallbackUsed ?? attempts > 1,
      provider: facts.provider ?? null,
      origin: '',
      finished_at: new Date(now).toISOString(),
      usage_estimated: false,
      ...rec,
    };
  }

  private async close(outcome: HoldClose['outcome'], charge: bigint, rec: RecordFields, facts: CallFacts): Promise<void> {
    const event = this.closeEvent(outcome, charge, rec, facts);
    if (event) await this.publish(event);
  }

  /** The close's event, counted; undefined when this closer has already closed. */
  private closeEvent(outcome: HoldClose['outcome'], charge: bigint, rec: RecordFields, facts: CallFacts): BusEvent<HoldClose> | undefined {
    if (this.done) return undefined;
    // Set before publishing: a failed publish is not retried here, so the hold can never be closed twice by us.
    this.done = true;
    const hold = this.record;
    const model = facts.model ?? hold.model;
    count(this.deps.metrics, 'close', { outcome, status: rec.status });
    if (charge > 0n) count(this.deps.metrics, 'charge', { model }, Number(charge) / 1e9);
    const data: HoldClose = { ...this.ids(), outcome, charge_nano: charge.toString(), record: this.usageRecord(rec, facts) };
    // Keyed by hold, not account: closes of different holds commute (each applies once, to its own hold), so
    // ordering them per account would only serialise a busy account's settles.
    return { id: `${hold.holdId}:close`, type: EVENT_TYPES.holdClose, key: hold.holdId, data };
  }

  private async publish(event: BusEvent<HoldClose>): Promise<void> {
    const hold = this.record;
    try {
      await this.deps.bus.publish(TOPICS.holds, event);
    } catch (err) {
      // The hold stays open and the sweeper releases it at expiry: the client is never charged twice, at worst not at all.
      const about = { err, holdId: hold.holdId, requestId: hold.requestId };
      if (!this.opts.republish) return void this.deps.logger.error(about, 'could not publish hold close; it will expire');
      // The caller is not kept waiting for the bus: its answer stands, and the close follows once the bus takes it.
      this.deps.logger.error(about, 'could not publish hold close; publishing it again until the hold expires');
      this.publishLater(event);
    } finally {
      // Published, or left to the retries or the sweeper: nothing more for a drain to wait for here.
      this.deps.openHolds?.delete(hold.holdId);
    }
  }

  /** Tries the publish again, waiting longer each time (up to 5 s), until it succeeds or the hold has expired. */
  private publishLater(event: BusEvent<HoldClose>): void {
    const hold = this.record;
    const expiresAt = Date.parse(hold.expiresAt);
    let wait = REPUBLISH_FIRST_WAIT_MS;
    const attempt = () => {
      this.deps.bus.publish(TOPICS.holds, event).then(
        () => this.deps.logger.warn({ holdId: hold.holdId, requestId: hold.requestId }, 'hold close published after the bus came back'),
        (err) => {
          wait = Math.min(wait * 2, REPUBLISH_MAX_WAIT_MS);
          if (!(Date.now() + wait < expiresAt)) {
            this.deps.logger.error({ err, holdId: hold.holdId, requestId: hold.requestId }, 'gave up publishing hold close; it will expire');
            return;
          }
          // unref: a retry never holds a stopping process open (its bus is closed then, and the hold expires).
          setTimeout(attempt, wait).unref();
        },
      );
    };
    setTimeout(attempt, wait).unref();
  }
}

/** Closes published after their answer (settleAfterAnswer) whose publish has not yet answered, in this process. */
let unackedCloses = 0;
/** Past this many, settleAfterAnswer waits for its publish: the backlog a hanging bus can build stays bounded. */
export const MAX_UNACKED_CLOSES = 1_000;

/** The first wait before a refused hold close is published again; it doubles up to REPUBLISH_MAX_WAIT_MS. */
const REPUBLISH_FIRST_WAIT_MS = 250;
const REPUBLISH_MAX_WAIT_MS = 5_000;
