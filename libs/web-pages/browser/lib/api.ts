/// <reference lib="dom" />
import * as z from 'zod/mini';

/** A refusal, with the error envelope's message and code (or what went wrong when there was no envelope). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
  }
}

const envelope = z.object({ error: z.object({ code: z.string(), message: z.string(), request_id: z.optional(z.string()) }) });

/**
 * Calls the gateway with the credential as the Authorization header, its only way out of the tab: no cookie goes
 * (credentials omitted), no Referer, nothing in the URL. The answer is checked against `schema` (the page's boundary).
 */
export async function call<T>(token: string, method: string, path: string, schema: z.ZodMiniType<T>, body?: unknown): Promise<T> {
  const json = await send(token, method, path, body);
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new ApiError(`The answer of ${method} ${path.split('?')[0]} is not in the expected shape.`, 200, 'shape');
  return parsed.data;
}

/** The same call for an action whose answer the page does not read; resolves to the parsed JSON, if any. */
export async function send(token: string, method: string, path: string, body?: unknown): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer',
    });
  } catch {
    throw new ApiError('The gateway could not be reached.', 0, 'network');
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const env = envelope.safeParse(json);
    if (env.success) throw new ApiError(env.data.error.message, res.status, env.data.error.code);
    throw new ApiError(`The gateway answered ${res.status} without an error body.`, res.status, 'unknown');
  }
  return json;
}

/** Fetches a binary answer (a video) with the credential and gives it back as a blob. */
export async function callBlob(token: string, path: string): Promise<Blob> {
  const res = await fetch(path, {
    headers: { authorization: `Bearer ${token}` },
    credentials: 'omit',
    cache: 'no-store',
    referrerPolicy: 'no-referrer',
  });
  if (!res.ok) {
    const env = envelope.safeParse(await res.json().catch(() => undefined));
    throw new ApiError(
      env.success ? env.data.error.message : `The gateway answered ${res.status}.`,
      res.status,
      env.success ? env.data.error.code : 'unknown',
    );
  }
  return res.blob();
}

/** A message for any failure, shown to the user: the envelope's message, with its code. */
export function describe(err: unknown): string {
  if (err instanceof ApiError) return err.code && err.code !== 'unknown' ? `${err.message} (${err.code})` : err.message;
  return err instanceof Error ? err.message : String(err);
}
