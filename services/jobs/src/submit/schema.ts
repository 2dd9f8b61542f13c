import { spendControlFields } from '@gateway/config';
import { z } from 'zod';

const httpsUrl = z
  .string()
  .max(2048)
  .refine((s) => URL.canParse(s), 'must be a URL')
  .refine((s) => !URL.canParse(s) || new URL(s).protocol === 'https:', 'must use https');

/**
 * The fields the gateway reads of a queue or video submit. Everything else is the model's own input and passes
 * through to the upstream untouched (`passthrough`); the named fields are checked here, once.
 */
export const submitBody = z
  .object({
    /** Video routes only: the queue route takes the model from its path. */
    model: z.string().min(1).max(200).optional(),
    webhook_url: httpsUrl.optional(),
    prompt: z.string().max(32_000, 'at most 32,000 characters').optional(),
    n: z.number().int().min(1).max(10).default(1),
    size: z.string().max(64).optional(),
    duration: z.number().min(1, 'at least 1 second').max(600, 'at most 600 seconds').optional(),
    /** The gateway's routing preferences (OpenRouter's `provider`), kept with the hold for the worker, and cost cap (`max_cost`); never forwarded. */
    ...spendControlFields,
  })
  .passthrough();
export type SubmitBody = z.infer<typeof submitBody>;

/** `?partner_webhook=` is an alias of `webhook_url` (percent-encoded); the body's field wins when both are sent. */
export const submitQuery = z.object({ partner_webhook: httpsUrl.optional() }).passthrough();

/** What the upstream receives: the client's body without the fields only the gateway reads. */
export function upstreamInput(body: SubmitBody): Record<string, unknown> {
  const { model: _model, webhook_url: _webhook, provider: _provider, max_cost: _maxCost, ...input } = body;
  return input;
}
