import type { z } from 'zod';
import { GatewayError } from '@gateway/errors';

/** Parses a request part with its zod schema, once, at the boundary; the message names every bad field. */
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const detail = r.error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : 'body'}: ${i.message}`)
    .join('; ');
  throw new GatewayError('invalid_request', `Invalid request: ${detail}`);
}
