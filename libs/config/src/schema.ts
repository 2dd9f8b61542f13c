import { z } from 'zod';

const DURATION = /^(\d+)(ms|s|m|h)$/;

/** "60s", "5m", "1h", "500ms" to milliseconds. */
export function parseDuration(value: string): number {
  const m = DURATION.exec(value);
  if (!m) throw new RangeError(`not a duration: ${value}`);
  const n = Number(m[1]);
  return n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
}

/** How a resolution is compared, in the config's keys and in requests alike: "2k" is "2K", "1024 x 1024" is "1024X1024". */
export function resolutionKey(resolution: string): string {
  return resolution.replace(/\s+/g, '').toUpperCase();
}

const bodySize = z.string().regex(/^\d+(b|kb|mb)$/i, 'must be a size such as "8mb", "512kb" or "65536b"');

const usd = z.string().regex(/^\d+(\.\d{1,18})?$/, 'must be a decimal string in USD, e.g. "0.000002"');

export const rateLimitSchema = z.strictObject({
  requests: z.number().int().positive(),
  interval: z
    .string()
    .regex(DURATION, 'must be a duration such as "60s"')
    .refine((v) => !DURATION.test(v) || parseDuration(v) >= 1000, 'must be at least 1s'),
});

const pricingSchema = z.strictObject({
  prompt: usd.optional(),
  completion: usd.optional(),
  request: usd.optional(),
  image: usd.optional(),
  /** Addition: per image by the request's resolution ("1K", "2K", "1024x1024"); `image` prices every other one. */
  image_by_resolution: z.record(z.string().min(1).max(32), usd).optional(),
  character: usd.optional(),
  second: usd.optional(),
  /** Addition: per prompt token read from the upstream's prompt cache; absent, such tokens cost `prompt`. */
  input_cache_read: usd.optional(),
  /** Addition: per prompt token written to the upstream's prompt cache; absent, such tokens cost `prompt`. */
  input_cache_write: usd.optional(),
});

/** How a model's endpoints are ordered for each call (model `routing`). */
export const ROUTING_STRATEGIES = ['in_order', 'lowest_latency', 'weighted'] as const;

/** What a model may read (`input_modalities`); what it writes follows from its category. */
export const MODALITIES = ['text', 'image', 'audio', 'video', 'file'] as const;

const providerSchema = z.strictObject({
  id: z.string().min(1),
  kind: z.enum(['openai', 'anthropic', 'cohere', 'fal', 'simulated']),
  base_url: z.url().optional(),
  api_key_env: z.string().min(1).optional(),
  timeout_ms: z.number().int().positive().optional(),
});

const modelSchema = z.strictObject({
  id: z.string().regex(/^[a-z0-9][\w.-]*\/[\w.:-]+$/i, 'must be "<author>/<slug>"'),
  name: z.string().min(1),
  description: z.string().optional(),
  category: z.enum(['text', 'image', 'video', 'audio', 'embedding', 'rerank']),
  status: z.enum(['available', 'coming_soon']),
  context_length: z.number().int().positive().optional(),
  max_output_tokens: z.number().int().positive().optional(),
  pricing: pricingSchema,
  unit: z.string().min(1).optional(),
  price: z.number().nonnegative().optional(),
  featured: z.boolean().optional(),
  supported_parameters: z.array(z.string()).optional(),
  /** Addition (catalogue `reference`): a comparison price in the headline unit, e.g. the provider's list price; default: `price`. */
  reference_price: z.number().nonnegative().optional(),
  /** Addition (catalogue `speed`): a short label of the operator's choosing ("fast", "~120 tokens/s"); default "". */
  speed: z.string().min(1).max(64).optional(),
  /** Addition (catalogue `capabilities`): replaces the list derived from category, pricing and parameters. */
  capabilities: z.array(z.string().min(1).max(64)).optional(),
  /** Addition (catalogue `addedAt`): a date or an ISO timestamp with its offset; default: none (null). */
  added_at: z.union([z.iso.date(), z.iso.datetime({ offset: true })]).optional(),
  /** Addition (single-model `alias_target`): the model this id is another name for; informative, it keeps its own endpoints. */
  alias_target: z.string().min(1).optional(),
  /** Addition (single-model `architecture.input_modalities`): what the model reads; default: by category. */
  input_modalities: z.array(z.enum(MODALITIES)).min(1).optional(),
  /** Addition (video): seconds a job is held for when its submit names no `duration`; default 10. */
  default_duration: z.number().min(1).max(600).optional(),
  /**
   * Addition: how the endpoints are tried. `in_order` (default): as listed. `lowest_latency`: the fastest to answer
   * first, by this process's recent calls (an endpoint not yet measured goes first, so it gets measured).
   * `weighted`: a random order drawn by each endpoint's `weight`, so traffic splits in those proportions.
   */
  routing: z.enum(ROUTING_STRATEGIES).optional(),
  endpoints: z
    .array(
      z.strictObject({
        provider: z.string().min(1),
        model: z.string().min(1),
        /** Addition: this endpoint's share under `routing: weighted`; default 1. */
        weight: z.number().int().positive().max(1_000_000).optional(),
      }),
    )
    .min(1),
});

export const configSchema = z
  .strictObject({
    providers: z.array(providerSchema).min(1),
    models: z.array(modelSchema),
    webhooks: z
      .strictObject({
        max_retries: z.number().int().min(0).default(5),
        initial_backoff_ms: z.number().int().positive().default(30_000),
        allow_private_addresses: z.boolean().default(false),
      })
      .prefault({}),
    /** Addition: the job queue's worker. */
    jobs: z
      .strictObject({
        /** First wait between polls of a job's upstream; each later one is 1.5× longer, up to 15s. */
        poll_interval: z.string().regex(DURATION, 'must be a duration such as "1s"').default('1s'),
        /** How long a worker holds a job it drives; a worker that dies lets it lapse and another takes the job over. */
        lease: z.string().regex(DURATION, 'must be a duration such as "60s"').default('60s'),
        /** A job unfinished after this fails (503) and its hold is released. */
        timeout: z.string().regex(DURATION, 'must be a duration such as "6h"').default('6h'),
      })
      .prefault({}),
    /** Addition: generated media. */
    media: z
      .strictObject({
        /** How long a /v1/files reference (and bytes the gateway stored for it) lives. */
        file_ttl: z.string().regex(DURATION, 'must be a duration such as "15m"').default('15m'),
      })
      .prefault({}),
    /** Addition: GET /v1/stats. */
    stats: z
      .strictObject({
        /** How long one computed answer is served; the contract says five minutes. */
        cache_ttl: z.string().regex(DURATION, 'must be a duration such as "5m"').default('5m'),
      })
      .prefault({}),
    /** Addition: the MCP endpoint's sessions and streams (/v1/mcp), bounded so free calls cannot fill the disk or the loop. */
    mcp: z
      .strictObject({
        /** A session unused this long (no call, no open stream) ends; its client's next call answers 404 and initializes again. */
        session_idle_ttl: z
          .string()
          .regex(DURATION, 'must be a duration such as "30m"')
          .refine((v) => !DURATION.test(v) || parseDuration(v) >= 60_000, 'must be at least 1m')
          .default('30m'),
        /** Live sessions an account may hold at once; initialize past it answers 429. */
        sessions_per_account: z.number().int().positive().default(100),
        /** Open GET streams an account may hold on one mcp process; another answers 429. */
        streams_per_account: z.number().int().positive().default(20),
      })
      .prefault({}),
    /** Addition: the status monitor behind GET /v1/status. */
    status: z
      .strictObject({
        /** false: nothing is sampled and GET /v1/status answers UNCONFIGURED with monitored false. */
        enabled: z.boolean().default(true),
        /** How often each component (api, providers, storage, payments) is measured. */
        sample_interval: z
          .string()
          .regex(DURATION, 'must be a duration such as "60s"')
          .refine((v) => !/^0+\D/.test(v), 'must be more than zero')
          .default('60s'),
      })
      .prefault({}),
    limits: z
      .strictObject({
        rate_limit: rateLimitSchema.default({ requests: 600, interval: '60s' }),
        /** Addition: public routes (no key) are metered per client address. */
        public_rate_limit: rateLimitSchema.default({ requests: 1200, interval: '60s' }),
        job_concurrency: z.number().int().positive().default(10),
        /** Addition: the largest request body a route accepts (transcriptions: max_audio_body); larger ones answer 413. */
        max_request_body: bodySize.default('8mb'),
        /** Addition: the largest POST /v1/audio/transcriptions body; 35mb carries OpenAI's 25 MB audio limit in base64. */
        max_audio_body: bodySize.default('35mb'),
        /**
         * Addition: how long a synchronous request's hold may stay open. The sweeper releases it after that: the money
         * a crashed process left held is the account's again then. Keep it above the longest request you serve: a
         * request that outlives its hold is charged only what still fits the account.
         */
        hold_ttl: z
          .string()
          .regex(DURATION, 'must be a duration such as "15m"')
          .refine((v) => !DURATION.test(v) || parseDuration(v) >= 60_000, 'must be at least 1m')
          .default('15m'),
      })
      .prefault({}),
  })
  .superRefine((cfg, ctx) => {
    const providers = new Map(cfg.providers.map((p) => [p.id, p]));
    cfg.providers.forEach((p, i) => {
      if (cfg.providers.findIndex((q) => q.id === p.id) !== i)
        ctx.addIssue({ code: 'custom', path: ['providers', i, 'id'], message: `duplicate provider id "${p.id}"` });
      if (p.kind !== 'simulated' && !p.base_url)
        ctx.addIssue({ code: 'custom', path: ['providers', i, 'base_url'], message: `required for kind "${p.kind}"` });
    });
    cfg.models.forEach((m, i) => {
      if (cfg.models.findIndex((n) => n.id === m.id) !== i)
        ctx.addIssue({ code: 'custom', path: ['models', i, 'id'], message: `duplicate model id "${m.id}"` });
      m.endpoints.forEach((e, j) => {
        if (!providers.has(e.provider))
          ctx.addIssue({ code: 'custom', path: ['models', i, 'endpoints', j, 'provider'], message: `unknown provider "${e.provider}"` });
      });
      // A weight anywhere else would be silently ignored: the operator meant `routing: weighted`.
      if (m.routing !== 'weighted')
        m.endpoints.forEach((e, j) => {
          if (e.weight !== undefined)
            ctx.addIssue({ code: 'custom', path: ['models', i, 'endpoints', j, 'weight'], message: 'only with routing: weighted' });
        });
      if (m.category === 'text' && !m.max_output_tokens)
        ctx.addIssue({ code: 'custom', path: ['models', i, 'max_output_tokens'], message: 'required for text models (it bounds the hold)' });
      const byResolution = Object.keys(m.pricing.image_by_resolution ?? {});
      // Without `image`, a resolution the operator did not list would be free.
      if (byResolution.length && m.pricing.image === undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['models', i, 'pricing', 'image'],
          message: 'required with image_by_resolution (it prices every other resolution)',
        });
      byResolution.forEach((k, j) => {
        if (byResolution.findIndex((o) => resolutionKey(o) === resolutionKey(k)) !== j)
          ctx.addIssue({ code: 'custom', path: ['models', i, 'pricing', 'image_by_resolution', k], message: 'the same resolution as another key' });
      });
      refuseBadAlias(cfg.models, i, ctx);
      refuseRepeats(m.capabilities, ['models', i, 'capabilities'], ctx);
      refuseRepeats(m.input_modalities, ['models', i, 'input_modalities'], ctx);
      // The listings promise an integer context length for every text model; no default would be true of all of them.
      if (m.category === 'text' && !m.context_length)
        ctx.addIssue({ code: 'custom', path: ['models', i, 'context_length'], message: 'required for text models (the model listings report it)' });
    });
  });

type Issues = z.core.$RefinementCtx;

/**
 * An alias names another model of the same category that is no alias itself, so `alias_target` always leads to a
 * concrete model in one step and a client following it lands on a model that answers the same routes.
 */
function refuseBadAlias(models: z.infer<typeof modelSchema>[], i: number, ctx: Issues): void {
  const target = models[i].alias_target;
  if (target === undefined) return;
  const path = ['models', i, 'alias_target'];
  const found = models.find((n) => n.id === target);
  if (target === models[i].id) ctx.addIssue({ code: 'custom', path, message: 'a model cannot be an alias of itself' });
  else if (!found) ctx.addIssue({ code: 'custom', path, message: `unknown model "${target}"` });
  else if (found.alias_target !== undefined) ctx.addIssue({ code: 'custom', path, message: `"${target}" is itself an alias; name its target` });
  else if (found.category !== models[i].category)
    ctx.addIssue({ code: 'custom', path, message: `"${target}" is a ${found.category} model, not ${models[i].category}` });
}

function refuseRepeats(list: readonly string[] | undefined, path: (string | number)[], ctx: Issues): void {
  list?.forEach((v, j) => {
    if (list.indexOf(v) !== j) ctx.addIssue({ code: 'custom', path: [...path, j], message: `"${v}" is listed twice` });
  });
}

export type GatewayConfig = z.infer<typeof configSchema>;
export type ModelConfig = GatewayConfig['models'][number];
export type ProviderConfig = GatewayConfig['providers'][number];
export type Pricing = ModelConfig['pricing'];
