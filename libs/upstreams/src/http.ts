import { Agent, request, type Dispatcher } from 'undici';
import type { ResolvedEndpoint } from '@gateway/config';
import type { CallOptions } from './types';
import { UpstreamError, classify } from './upstream-error';

const DEFAULT_TIMEOUT_MS = 60_000;

/** Sends `payload` as is: the caller has already put the upstream model (and anything else) in it. */
export type JsonPost = (ep: ResolvedEndpoint, path: string, payload: Record<string, unknown>, opts: CallOptions) => Promise<Dispatcher.ResponseData>;

export interface JsonPostOptions {
  /** How the protocol presents the key from `api_key_env`; Bearer unless said otherwise. */
  auth?: (apiKey: string) => Record<string, string>;
  /** Headers every call of the protocol carries (e.g. an API version). */
  headers?: Record<string, string>;
}

/**
 * POST a JSON body to `{base_url}{path}` with the key from `api_key_env`. Shared by every HTTP protocol
 * (openai/, anthropic/, cohere/), so they pool connections and classify failures alike. `timeout_ms` bounds the
 * time to the response head, which is when failover is still possible.
 */
export function createJsonPost(options: JsonPostOptions = {}, env: NodeJS.ProcessEnv = process.env): JsonPost {
  const agent = new Agent({ connections: 256, keepAliveTimeout: 30_000, connect: { timeout: 10_000 } });
  const auth = options.auth ?? ((key: string) => ({ authorization: `Bearer ${key}` }));

  return async (ep, path, payload, opts) => {
    const timeout = ep.provider.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    const apiKey = ep.provider.api_key_env ? env[ep.provider.api_key_env] : undefined;
    // The config schema requires base_url for every HTTP kind; should one slip through, fail over like a dead host.
    if (!ep.provider.base_url) throw new UpstreamError('connect', `provider ${ep.provider.id} has no base_url`);
    const url = `${ep.provider.base_url.replace(/\/$/, '')}${path}`;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: 'POST',
        dispatcher: agent,
        headers: {
          'content-type': 'application/json',
          accept: payload.stream ? 'text/event-stream' : 'application/json',
          ...options.headers,
          ...(apiKey ? auth(apiKey) : {}),
          'x-request-id': opts.requestId,
        },
        body: JSON.stringify(payload),
        headersTimeout: timeout,
        // Between body chunks; a stalled stream breaks instead of hanging forever.
        bodyTimeout: Math.max(timeout, 30_000),
        signal: opts.signal,
      });
    } catch (e) {
      throw classify(e);
    }
    if (res.statusCode >= 400) {
      const text = await res.body.text().catch(() => '');
      throw new UpstreamError('status', `upstream answered ${res.statusCode}: ${errorMessageOf(text)}`, res.statusCode);
    }
    return res;
  };
}

/** The whole answer as JSON; an answer that is not JSON is the upstream's fault, so the next endpoint may take over. */
export async function readJson(res: Dispatcher.ResponseData): Promise<unknown> {
  let text: string;
  try {
    text = await res.body.text();
  } catch (e) {
    throw classify(e);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError('protocol', 'upstream answer is not JSON');
  }
}

/** OpenAI and Anthropic put the reason in `error.message` (Anthropic its kind in `error.type`), Cohere in `message`. */
function errorMessageOf(text: string): string {
  try {
    const json = JSON.parse(text);
    const m = json?.error?.message ?? json?.message ?? json?.error;
    if (typeof m === 'string') return typeof json?.error?.type === 'string' && json.type === 'error' ? `${json.error.type}: ${m}` : m;
  } catch {
    /* not JSON: keep the text */
  }
  return text.slice(0, 500);
}
