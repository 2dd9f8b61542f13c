import { z } from 'zod';

/** How far an upstream's reason is quoted: a client fault's message reaches the client, and no upstream fills a log. */
const MAX_REASON = 500;

/**
 * The error bodies of the HTTP protocols, most specific first: the message API says its kind beside the reason
 * (`{type: 'error', error: {type, message}}`), OpenAI nests the reason (`{error: {message}}`), Cohere does not
 * (`{message}`), and some OpenAI-compatible servers answer `{error: '...'}`.
 */
const errorBody = z.union([
  z.looseObject({ type: z.literal('error'), error: z.looseObject({ type: z.string(), message: z.string() }) }),
  z.looseObject({ error: z.looseObject({ message: z.string() }) }),
  z.looseObject({ message: z.string() }),
  z.looseObject({ error: z.string() }),
]);

/** The upstream's own reason from an error body; the body's text itself when no known shape holds one. */
export function errorMessageOf(text: string): string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return text.slice(0, MAX_REASON);
  }
  const r = errorBody.safeParse(json);
  if (!r.success) return text.slice(0, MAX_REASON);
  const b = r.data as { type?: string; error?: string | { type?: string; message: string }; message?: string };
  if (typeof b.error === 'string') return b.error.slice(0, MAX_REASON);
  if (b.error) return (b.type === 'error' && b.error.type ? `${b.error.type}: ${b.error.message}` : b.error.message).slice(0, MAX_REASON);
  return (b.message ?? '').slice(0, MAX_REASON);
}
