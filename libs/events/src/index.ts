import { z } from 'zod';

/**
 * Versioned event schemas shared by producers and consumers. A consumer parses with these, so a
 * malformed or unknown event is rejected at the boundary instead of half-applied to the ledger.
 */
export const TOPICS = {
  holds: 'billing.holds',
  /** Billing's account of every closed hold (`usage.recorded.v1`, keyed by account): settled amounts and usage totals. */
  usage: 'billing.usage',
  /** Accounts opened (`account.opened.v1`, keyed by account), for counts that must not read billing's tables. */
  accounts: 'billing.accounts',
  /** Every job state change (`job.state.v1`, keyed by job), published from the jobs service's outbox. */
  jobs: 'jobs.state',
  /** Each spending process's periodic summary of its upstream endpoints (`endpoint.health.v1`, keyed by process), for the status monitor. */
  endpointHealth: 'spend.endpoint_health',
} as const;

/**
 * Every consumer group and the topics it reads (billing's closes, jobs' settled costs, catalogue's stats and health
 * reports, MCP's job notifications). Redis and Kafka keep a group's events while none of its members runs; the
 * in-memory bus does so only for groups declared to it, which the embedded gateway does with this table, so events
 * published before a consumer starts (usage announced while billing starts, before jobs subscribes) are kept.
 */
export const CONSUMER_GROUPS = {
  billing: [TOPICS.holds],
  catalogue: [TOPICS.accounts, TOPICS.usage, TOPICS.endpointHealth],
  jobs: [TOPICS.usage],
  mcp: [TOPICS.jobs],
} as const satisfies Record<string, readonly string[]>;

/**
 * How late the groups nobody waits on (catalogue's stats, jobs' settled costs) may see an event
 * (SubscribeOptions.gatherMs): under load each of their reads carries up to a second of usage instead of a few
 * events, each read a wake-up of the process and of the bus, on the cores that serve the calls. A second, not less:
 * on Kafka it is also how often an idle consumer's fetch comes back empty, as the bus's default fetch wait is.
 */
export const UNHURRIED_GATHER_MS = 1_000;

const nanoString = z.string().regex(/^\d+$/, 'nano-USD as a non-negative integer string');

/** What one request did, written as its usage record when its hold closes. */
export const usageRecordSchema = z.object({
  model: z.string(),
  streamed: z.boolean(),
  status: z.enum(['succeeded', 'failed', 'canceled']),
  error_code: z.string().nullable(),
  finish_reason: z.string().nullable(),
  tokens_prompt: z.number().int().nonnegative(),
  tokens_completion: z.number().int().nonnegative(),
  native_tokens_prompt: z.number().int().nonnegative(),
  native_tokens_completion: z.number().int().nonnegative(),
  num_media_prompt: z.number().int().nonnegative().default(0),
  num_media_completion: z.number().int().nonnegative().default(0),
  /** ms from request start to the first byte from the upstream. */
  latency: z.number().int().nonnegative(),
  /** ms from request start to the end of the answer. */
  generation_time: z.number().int().nonnegative(),
  attempts: z.number().int().nonnegative(),
  fallback_used: z.boolean(),
  /** The provider id of the endpoint that answered; absent when none did (or from a process older than it). */
  provider: z.string().min(1).nullable().optional(),
  origin: z.string().default(''),
  /** The request finished at this time (ISO). */
  finished_at: z.string(),
  /** Worst case held vs. the upstream's report: set when the charge was capped at the hold. */
  capped_from_nano: nanoString.optional(),
  /** The charge rests on the gateway's own measure, not the upstream's report (a transcription with no duration). */
  usage_estimated: z.boolean().default(false),
  /** Of tokens_prompt: read from the upstream's prompt cache. Absent (events from before it existed, media): none. */
  tokens_cached: z.number().int().nonnegative().optional(),
  /** Of tokens_completion: the model's reasoning. */
  tokens_reasoning: z.number().int().nonnegative().optional(),
  /** What the cache rates changed against the prompt rate, nano-USD; negative when cache writes cost more. */
  cache_discount_nano: z
    .string()
    .regex(/^-?\d+$/, 'nano-USD as an integer string')
    .optional(),
});
export type UsageRecord = z.infer<typeof usageRecordSchema>;

export const holdCloseSchema = z.object({
  hold_id: z.string(),
  account_id: z.string(),
  /**
   * The hold's key. Billing on PostgreSQL commits the closes of one key together (the key's and the account's rows
   * are locked once per batch, not once per call); an event without it (published before it existed) closes alone.
   */
  key_id: z.string().min(1).optional(),
  request_id: z.string(),
  /** settle charges `charge_nano` (may be 0); release charges nothing. */
  outcome: z.enum(['settle', 'release']),
  charge_nano: nanoString,
  record: usageRecordSchema,
});
export type HoldClose = z.infer<typeof holdCloseSchema>;

/**
 * `hold.checkpoint.v1`, on the holds topic and keyed by hold like its close: what a stream has delivered so far, as
 * the partial settle that would charge it (outcome `settle`, a failed record). Billing keeps the highest for each
 * open hold and applies it, as a late settle, if the hold expires unclosed: a process killed mid-stream (no close
 * ever comes) still charges what it delivered up to its last checkpoint. Ignored once the hold has closed.
 */
export const holdCheckpointSchema = holdCloseSchema.extend({ outcome: z.literal('settle') });
export type HoldCheckpoint = z.infer<typeof holdCheckpointSchema>;

/**
 * A hold as stored outside the process that placed it (a job's row, a queue message): everything a later
 * `hold.close.v1` needs, so any process can settle or release it, e.g. a worker after a restart. Money as a
 * decimal string of nano-USD (JSON has no bigint), times as ISO 8601.
 */
export const holdRecordSchema = z.object({
  hold_id: z.string().min(1),
  account_id: z.string().min(1),
  key_id: z.string().min(1),
  request_id: z.string().min(1),
  /** What was reserved: the most the hold can be settled at. */
  amount_nano: nanoString,
  /** The sweeper releases the hold after this; a later close still applies, by the ledger's late rules. */
  expires_at: z.string(),
  /** The model the hold was placed for; the usage record names it unless the closer knows which model answered. */
  model: z.string().min(1),
  streamed: z.boolean(),
  /** When the request began, for the latency figures. */
  started_at: z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'an ISO 8601 time'),
  /**
   * The client's provider preferences, so a process that makes the call later (a job's worker) routes as the client
   * asked; checked again by @gateway/spend when read back (providerPreferencesSchema in @gateway/config).
   */
  provider: z.record(z.string(), z.unknown()).optional(),
});
export type HoldRecordJson = z.infer<typeof holdRecordSchema>;

/**
 * A hold billing has closed, as it applied it (published after the ledger commit; redelivery repeats the same
 * event id, `<hold_id>:usage`). Consumers: jobs (a job's `cost` once settled), catalogue (stats).
 */
export const usageRecordedSchema = z.object({
  hold_id: z.string(),
  account_id: z.string(),
  request_id: z.string(),
  model: z.string(),
  /** What the ledger did: `settle` charged `charge_nano` (perhaps 0), `release` charged nothing. */
  outcome: z.enum(['settle', 'release']),
  charge_nano: nanoString,
  status: z.enum(['succeeded', 'failed', 'canceled']),
  tokens_prompt: z.number().int().nonnegative(),
  tokens_completion: z.number().int().nonnegative(),
  /** Of the above, cached input and reasoning: the stats leave them out. Absent in older events: none. */
  tokens_cached: z.number().int().nonnegative().optional(),
  tokens_reasoning: z.number().int().nonnegative().optional(),
  finished_at: z.string(),
});
export type UsageRecorded = z.infer<typeof usageRecordedSchema>;

export const accountOpenedSchema = z.object({ account_id: z.string(), opened_at: z.string() });
export type AccountOpened = z.infer<typeof accountOpenedSchema>;

import { JOB_STATUSES } from './job-status';
export {
  JOB_STATUSES,
  JOB_STATUS_FILTERS,
  WIRE_JOB_STATUSES,
  storedStatusesOf,
  wireJobStatus,
  type JobStatus,
  type JobStatusFilter,
  type WireJobStatus,
} from './job-status';

/** One job state change. Written to the jobs outbox in the transaction that made the change, then relayed. */
export const jobStateSchema = z.object({
  job_id: z.string(),
  account_id: z.string(),
  model: z.string(),
  category: z.string(),
  status: z.enum(JOB_STATUSES),
  /** The usage record of the submit (`req_<id>`). */
  gateway_request_id: z.string(),
  error_code: z.string().nullable(),
  at: z.string(),
});
export type JobState = z.infer<typeof jobStateSchema>;

/**
 * One spending process's view of its upstream endpoints over one window: the attempts real traffic made and the
 * circuit state at the window's end. Event id `<source>:<window_end>`; a consumer keeps the newest per endpoint.
 */
export const endpointHealthSchema = z.object({
  /** The reporting process (service name and instance), so several replicas' reports stay apart. */
  source: z.string().min(1),
  window_start: z.string(),
  window_end: z.string(),
  endpoints: z.array(
    z.object({
      /** `<provider>/<upstream model>`, the circuit's key. */
      endpoint: z.string().min(1),
      provider: z.string().min(1),
      /** Attempts that reached an answer or an upstream failure; client faults and clients that left are not counted. */
      attempts: z.number().int().nonnegative(),
      failures: z.number().int().nonnegative(),
      /** Mean ms to the upstream's answer (its first byte) over the window's successful attempts; null without one. */
      latency_ms: z.number().int().nonnegative().nullable(),
      circuit: z.enum(['closed', 'open', 'half_open']),
    }),
  ),
});
export type EndpointHealth = z.infer<typeof endpointHealthSchema>;

export const EVENT_TYPES = {
  holdClose: 'hold.close.v1',
  holdCheckpoint: 'hold.checkpoint.v1',
  usageRecorded: 'usage.recorded.v1',
  accountOpened: 'account.opened.v1',
  jobState: 'job.state.v1',
  endpointHealth: 'endpoint.health.v1',
} as const;
