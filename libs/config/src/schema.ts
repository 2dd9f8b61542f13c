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
});

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
  endpoints: z.array(z.strictObject({ provider: z.string().min(1), model: z.string().min(1) })).min(1),
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
    /** Addition: generated media. */
    media: z
      .strictObject({
        /** How long a /v1/files reference (and bytes the gateway stored for it) lives. */
        file_ttl: z.string().regex(DURATION, 'must be a duration such as "15m"').default('15m'),
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
      // The listings promise an integer context length for every text model; no default would be true of all of them.
      if (m.category === 'text' && !m.context_length)
        ctx.addIssue({ code: 'custom', path: ['models', i, 'context_length'], message: 'required for text models (the model listings report it)' });
    });
  });

export type GatewayConfig = z.infer<typeof configSchema>;
export type ModelConfig = GatewayConfig['models'][number];
export type ProviderConfig = GatewayConfig['providers'][number];
export type Pricing = ModelConfig['pricing'];
